// The bridge from MPEG-TS to fragmented MP4 (the TS*.swift files are the only ones in this package that import MPEGTS):
// a byte range of a transport stream becomes one fragment per track.
public import MPEGTS

/// One track of the fragmented presentation made from a program: its PID, track ID and language.
public struct TSTrackInfo: Hashable, Sendable {
    public var pid: UInt16
    public var trackID: UInt32
    public var codec: Codec
    /// The ISO 639-2 code from the PMT's language descriptor, lowercased; nil when the PMT gives none.
    public var language: String?
    public var isVideo: Bool { codec.kind == .video }
}

/// Turns byte ranges of one MPEG-TS program into fragments: one video track (the program's first H.264 or HEVC
/// stream) and every audio stream it can carry, each with its own track ID (video 1, audio 2, 3, … in PMT order).
///
/// A range's fragment holds the PES packets that *start* inside it; those still open at its end are completed
/// from the bytes after it (``needsMoreBytes``), and the time stamp of each track's next PES sets its last
/// sample's duration. Ranges cut at keyframes therefore give fragments that follow each other exactly.
public struct TSFragmenter: Sendable {
    public let programAssociation: ProgramAssociationTable
    public let programMap: ProgramMapTable
    /// The tracks, video first.
    public let tracks: [TSTrackInfo]
    /// Audio and video streams of the program that no track carries, with the reason.
    public let skipped: [(pid: UInt16, reason: String)]

    var builders: [TSTrackBuilder]
    var demuxer: Demuxer
    /// Bytes fed since the first range began, and that range's file offset: the demuxer counts offsets from it.
    var fed: Int64 = 0
    var baseOffset: Int64?
    var endOffset: Int64 = .max
    /// Per track: whether a PES started in the range, and the time stamp of the first PES after it.
    var started: [Bool]
    var next: [Timestamp?]
    var finished = false
    /// PES packets that start after the range's end, kept for the next range.
    var held: [PESPacket] = []
    /// The first presentation time stamp of any track's PES, in the order fed.
    public private(set) var firstTimestamp: Timestamp?

    /// A fragmenter for `programMap` (whose PMT PID the PAT names). With `pids`, only those streams become tracks.
    /// Throws ``FragmentedMP4Error/Code/unsupportedCodec`` when the program has no stream it can carry, naming
    /// the PIDs it has.
    public init(
        programAssociation: ProgramAssociationTable, programMap: ProgramMapTable, pids: Set<UInt16>? = nil
    ) throws(FragmentedMP4Error) {
        self.programAssociation = programAssociation
        self.programMap = programMap
        var tracks: [TSTrackInfo] = []
        var skipped: [(UInt16, String)] = []
        var builders: [TSTrackBuilder] = []
        let media = programMap.streams.filter { $0.codec.kind == .video || $0.codec.kind == .audio }
        let ordered = media.filter { $0.codec.kind == .video } + media.filter { $0.codec.kind == .audio }
        // Track IDs count every stream the program could carry, so that a subset keeps the IDs of the whole.
        var trackCount: UInt32 = 0
        var sawVideo = false
        for stream in ordered {
            let codec = stream.codec
            guard TSTrackBuilder.carries(codec) else {
                if pids?.contains(stream.pid) ?? true {
                    skipped.append((stream.pid, "\(codec.name) cannot be carried in fragmented MP4"))
                }
                continue
            }
            if codec.kind == .video, sawVideo {
                if pids?.contains(stream.pid) ?? true { skipped.append((stream.pid, "a second video stream")) }
                continue
            }
            sawVideo = sawVideo || codec.kind == .video
            trackCount += 1
            guard pids?.contains(stream.pid) ?? true else { continue }
            let builder = try TSTrackBuilder(pid: stream.pid, codec: codec)
            let language = stream.languages.first.map { $0.lowercased() }.flatMap { $0.count == 3 ? $0 : nil }
            tracks.append(TSTrackInfo(pid: stream.pid, trackID: trackCount, codec: codec, language: language))
            builders.append(builder)
        }
        guard !tracks.isEmpty else {
            let listed = media.map { "PID \($0.pid) (\($0.codec.name))" }.joined(separator: ", ")
            throw FragmentedMP4Error(
                .unsupportedCodec,
                "program \(programMap.programNumber) has no H.264, HEVC, AAC, AC-3, E-AC-3 or MPEG audio stream"
                    + (listed.isEmpty ? "" : ": \(listed)"))
        }
        self.tracks = tracks
        self.skipped = skipped
        self.builders = builders
        started = Array(repeating: false, count: tracks.count)
        next = Array(repeating: nil, count: tracks.count)
        demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
        demuxer.prime(programAssociation: programAssociation, programMaps: [programMap])
    }

    /// Sets the sample entry values of the track on `pid` (known from an earlier pass), so that the timescale is
    /// right even when the range starts with a frame that cannot be read; the pictures are then not searched for
    /// captions again (``captions`` stays what this fragmenter saw itself).
    public mutating func configure(pid: UInt16, codec: TrackCodec) {
        guard let index = tracks.firstIndex(where: { $0.pid == pid }) else { return }
        builders[index].codec = codec
        builders[index].searchesCaptions = false
    }

    /// Starts a range that ends at file offset `end`: PES packets starting at or after it belong to the next range.
    /// The first call also says where the bytes fed start (`start`, a packet boundary); later ranges follow on from
    /// the bytes already fed (``position``).
    public mutating func beginRange(start: Int64, end: Int64) {
        if baseOffset == nil { baseOffset = start }
        endOffset = end
        let replay = held
        held = []
        for packet in replay { handle(.pesPacket(packet)) }
    }

    /// Feeds the next bytes of the file.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        fed += Int64(bytes.count)
        var events: [DemuxEvent] = []
        demuxer.feed(bytes) { events.append($0) }
        for event in events { handle(event) }
    }

    /// Feeds bytes from an array.
    public mutating func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Ends the input (at the end of the file): PES packets still open are completed.
    public mutating func finish() {
        guard !finished else { return }
        var events: [DemuxEvent] = []
        demuxer.finish { events.append($0) }
        for event in events { handle(event) }
        finished = true
    }

    /// Whether a track whose PES started in the range has not yet seen the PES after it.
    public var needsMoreBytes: Bool {
        !finished && zip(started, next).contains { $0 && $1 == nil }
    }

    /// The byte offset of the next byte to feed.
    public var position: Int64 { (baseOffset ?? 0) + fed }

    /// What the demuxer counted in the bytes fed so far: packets, sync losses and the bytes skipped, the bytes of a
    /// last packet cut short (after ``finish()``), continuity and PES errors.
    public var statistics: DemuxStatistics { demuxer.statistics }

    mutating func handle(_ event: DemuxEvent) {
        switch event {
        case .pesPacket(let packet):
            guard let index = tracks.firstIndex(where: { $0.pid == packet.info.pid }) else { return }
            if firstTimestamp == nil { firstTimestamp = packet.info.pts }
            if (baseOffset ?? 0) + packet.info.offset < endOffset {
                started[index] = true
                builders[index].append(packet)
            } else {
                if next[index] == nil { next[index] = packet.info.dts ?? packet.info.pts }
                held.append(packet)
            }
        case .pes(let info):
            guard (baseOffset ?? 0) + info.offset >= endOffset,
                let index = tracks.firstIndex(where: { $0.pid == info.pid }), next[index] == nil
            else { return }
            next[index] = info.dts ?? info.pts
        default:
            break
        }
    }

    /// The stream's own sample entry values for each track seen so far (nil for a track that showed none).
    public var codecs: [TrackCodec?] { builders.map(\.codec) }

    /// The caption services (CEA-608, CEA-708) video SEI carried.
    public var captions: CaptionServices { builders.reduce([]) { $0.union($1.captions) } }

    /// Whether HEVC parameter sets and audio frame headers are compared with the tracks' sample entries
    /// (``configurationChange``); off by default.
    public var detectsConfigurationChanges: Bool {
        get { builders.contains(where: \.detectsConfigurationChanges) }
        set {
            for index in builders.indices { builders[index].detectsConfigurationChanges = newValue }
        }
    }

    /// With ``detectsConfigurationChanges``: the track whose parameter sets or audio configuration first differ
    /// from its sample entry's, and the file offset of the PES that shows it (the earliest over the tracks).
    public var configurationChange: (pid: UInt16, codec: Codec, offset: Int64)? {
        zip(tracks, builders).compactMap { track, builder in
            builder.configurationChange.map { (track.pid, track.codec, (baseOffset ?? 0) + $0) }
        }.min { $0.offset < $1.offset }
    }

    /// Audio frames left out, by PID, because their configuration differs from their track's sample entry.
    public var otherConfigurationFrames: [UInt16: Int] {
        Dictionary(
            uniqueKeysWithValues: zip(tracks, builders).filter { $0.1.otherConfigurationFrames > 0 }.map {
                ($0.0.pid, $0.1.otherConfigurationFrames)
            })
    }

    /// Whether every track has its sample entry values.
    public var isConfigured: Bool { builders.allSatisfy { $0.codec != nil } }

    /// The init segment of the tracks with `pids` (every track when nil). Throws
    /// ``FragmentedMP4Error/Code/missingConfiguration`` naming the PID of a track that showed no parameter sets or
    /// frame header.
    public func initSegment(pids: Set<UInt16>? = nil) throws(FragmentedMP4Error) -> InitSegment {
        var result: [Track] = []
        for (info, builder) in zip(tracks, builders) where pids?.contains(info.pid) ?? true {
            guard let codec = builder.codec else {
                throw FragmentedMP4Error(
                    .missingConfiguration,
                    "PID \(info.pid) (\(info.codec.name)): no parameter sets or frame header found")
            }
            result.append(
                Track(
                    trackID: info.trackID, timescale: builder.timescale, language: info.language ?? "und",
                    codec: codec))
        }
        return InitSegment(tracks: result)
    }

    /// The fragments of the range fed so far, one per track with samples (limited to `pids` when given), and
    /// clears them. Decode times come from `timeline`.
    public mutating func takeFragments(timeline: TSTimeline, pids: Set<UInt16>? = nil) -> [UInt16: TrackFragment] {
        var result: [UInt16: TrackFragment] = [:]
        for index in tracks.indices {
            let info = tracks[index]
            guard pids?.contains(info.pid) ?? true else { continue }
            if let fragment = builders[index].takeFragment(
                trackID: info.trackID, timeline: timeline, nextTimestamp: next[index])
            {
                result[info.pid] = fragment
            }
        }
        started = Array(repeating: false, count: tracks.count)
        next = Array(repeating: nil, count: tracks.count)
        return result
    }
}
