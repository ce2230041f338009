// The bridge from MPEG-TS to fragmented MP4 (the TS*.swift files are the only ones in this package that import MPEGTS):
// the program's tables and sample entries from the head of a file, and a whole file remuxed to one fragmented MP4.
public import MPEGTS

/// What the head of a transport stream says about its first program with audio or video: its tables, the
/// tracks a fragmenter makes of it, their sample entry values and whether the video carries captions.
public struct TSProgramLayout: Sendable {
    public var programAssociation: ProgramAssociationTable
    public var programMap: ProgramMapTable
    public var tracks: [TSTrackInfo]
    /// By PID: the sample entry values each track showed in the head.
    public var codecs: [UInt16: TrackCodec]
    /// Audio and video streams no track carries, with the reason.
    public var skipped: [(pid: UInt16, reason: String)]
    /// The caption services (CEA-608, CEA-708) the video's SEI carried in the head.
    public var captions: CaptionServices
    /// Whether the video's SEI carried CEA-608/708 captions in the head.
    public var hasCaptions: Bool { !captions.isEmpty }

    /// The layout from the first bytes of a file (a few MiB are enough for parameter sets and a first frame of
    /// each stream). Throws ``FragmentedMP4Error/Code/unsupportedCodec`` when no program has a stream the
    /// bridge can carry, and ``FragmentedMP4Error/Code/missingConfiguration`` naming the PID of a track that
    /// showed no parameter sets or frame header. The streams of `leavingOut` (PIDs a PMT lists that never carry a
    /// packet) are taken out of the program map table, as if it did not list them. With `program`, that program is
    /// the one carried.
    public init(head: [UInt8], pids: Set<UInt16>? = nil, leavingOut: Set<UInt16> = [], program: UInt16? = nil)
        throws(FragmentedMP4Error)
    {
        // A head that holds the start of a second recording joined on (a file smaller than the head read) is cut
        // there: the layout is the first recording's, whose tables the demuxer would otherwise have replaced. When
        // the bytes before the cut do not make a layout (tables that change before the first keyframe), all of them.
        let cut = Self.firstRecordingLength(head)
        if cut < head.count,
            let layout = try? TSProgramLayout(
                whole: Array(head.prefix(cut)), pids: pids, leavingOut: leavingOut, program: program)
        {
            self = layout
            return
        }
        try self.init(whole: head, pids: pids, leavingOut: leavingOut, program: program)
    }

    private init(whole head: [UInt8], pids: Set<UInt16>?, leavingOut: Set<UInt16>, program: UInt16?)
        throws(FragmentedMP4Error)
    {
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: false))
        head.withUnsafeBytes { demuxer.feed($0) { _ in } }
        demuxer.finish { _ in }
        guard let pat = demuxer.programAssociation else {
            throw FragmentedMP4Error(.invalidValue, offset: 0, "no program association table in the first bytes")
        }
        let maps = pat.programs.compactMap { number -> ProgramMapTable? in
            guard program.map({ $0 == number.programNumber }) ?? true,
                var map = demuxer.programMaps[number.programNumber]
            else { return nil }
            map.streams.removeAll { leavingOut.contains($0.pid) }
            return map
        }
        guard
            let map = maps.first(where: { table in
                table.streams.contains { TSTrackBuilder.carries($0.codec) && (pids?.contains($0.pid) ?? true) }
            }) ?? maps.first
        else {
            throw FragmentedMP4Error(.invalidValue, offset: 0, "no program map table in the first bytes")
        }
        func read(_ pids: Set<UInt16>?) throws(FragmentedMP4Error) -> TSFragmenter {
            var fragmenter = try TSFragmenter(programAssociation: pat, programMap: map, pids: pids)
            fragmenter.beginRange(start: 0, end: .max)
            fragmenter.feed(head)
            fragmenter.finish()
            return fragmenter
        }
        var fragmenter = try read(pids)
        // A stream whose frames were found but none read (a LATM configuration the bridge cannot carry) is left
        // out with the reason, when other tracks remain.
        let unreadable = zip(fragmenter.tracks, fragmenter.builders).compactMap { track, builder in
            builder.codec == nil ? builder.frameError.map { (pid: track.pid, codec: track.codec, error: $0) } : nil
        }
        var left: [(pid: UInt16, reason: String)] = []
        if !unreadable.isEmpty, unreadable.count < fragmenter.tracks.count {
            let kept = Set(fragmenter.tracks.map(\.pid)).subtracting(unreadable.map(\.pid))
            fragmenter = try read(kept)
            left = unreadable.map { ($0.pid, "\($0.codec.name) that cannot be read: \($0.error.detail)") }
        }
        programAssociation = pat
        programMap = map
        tracks = fragmenter.tracks
        skipped = fragmenter.skipped + left
        captions = fragmenter.captions
        var codecs: [UInt16: TrackCodec] = [:]
        for (track, builder) in zip(fragmenter.tracks, fragmenter.builders) {
            guard let codec = builder.codec else {
                let why = builder.frameError.map { "; its frames do not read (\($0.detail))" } ?? ""
                throw FragmentedMP4Error(
                    .missingConfiguration,
                    "PID \(track.pid) (\(track.codec.name)): no parameter sets or frame header in the first "
                        + "\(head.count) bytes" + why)
            }
            codecs[track.pid] = codec
        }
        self.codecs = codecs
    }

    /// How many bytes of `head` are its first recording's: up to a PAT whose programs (numbers and PMT PIDs) differ
    /// from the first PAT's, or a PMT of a program already seen whose streams' PIDs or types change (where the index
    /// cuts a joined recording into parts); all of it when there is none.
    static func firstRecordingLength(_ head: [UInt8]) -> Int {
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: false))
        var programs: [[UInt16]]?
        var maps: [UInt16: [[UInt16]]] = [:]
        var cut: Int64?
        var packets: (size: Int64, start: Int64) = (188, 0)
        head.withUnsafeBytes { raw in
            demuxer.feed(raw) { event in
                guard cut == nil else { return }
                switch event {
                case .synchronized(let size, let offset):
                    packets = (Int64(size.length), offset)
                case .programAssociation(let table, let offset):
                    let seen = table.programs.map { [$0.programNumber, $0.pmtPID] }
                    if let programs, programs != seen { cut = offset } else { programs = seen }
                case .programMap(let table, _, let offset):
                    let seen = table.streams.map { [$0.pid, UInt16($0.streamType.rawValue)] }
                    if let known = maps[table.programNumber], known != seen { cut = offset }
                    maps[table.programNumber] = seen
                default: break
                }
            }
        }
        // The table's offset is its section's: the cut is at the start of the packet that holds it.
        guard let cut, cut >= packets.start, packets.size > 0,
            let length = Int(exactly: packets.start + (cut - packets.start) / packets.size * packets.size), length > 0
        else { return head.count }
        return min(length, head.count)
    }

    /// The sample entry values each track shows in a later part of a file (from a packet boundary, such as the
    /// keyframe after a time stamp reset), read with this layout's tables: `read(offset, length)` gives the bytes
    /// at `offset` from that part's start (empty at the end), asked for in 256 KiB steps until every track showed
    /// its values or `limit` bytes were read. A track that shows none is left out.
    public func codecs(
        limit: Int, read: (_ offset: Int, _ length: Int) throws -> [UInt8]
    ) rethrows -> [UInt16: TrackCodec] {
        guard
            var fragmenter = try? TSFragmenter(
                programAssociation: programAssociation, programMap: programMap, pids: Set(tracks.map(\.pid)))
        else { return [:] }
        fragmenter.beginRange(start: 0, end: .max)
        var offset = 0
        while offset < limit, !fragmenter.isConfigured {
            let bytes = try read(offset, min(256 << 10, limit - offset))
            guard !bytes.isEmpty else { break }
            fragmenter.feed(bytes)
            offset += bytes.count
        }
        fragmenter.finish()
        var found: [UInt16: TrackCodec] = [:]
        for (track, codec) in zip(fragmenter.tracks, fragmenter.codecs) { found[track.pid] = codec }
        return found
    }

    /// A fragmenter for the layout's tracks (limited to `pids`), with their sample entries set.
    public func fragmenter(pids: Set<UInt16>? = nil) throws(FragmentedMP4Error) -> TSFragmenter {
        var fragmenter = try TSFragmenter(
            programAssociation: programAssociation, programMap: programMap,
            pids: pids ?? Set(tracks.map(\.pid)))
        for (pid, codec) in codecs { fragmenter.configure(pid: pid, codec: codec) }
        return fragmenter
    }

    /// The init segment of the tracks with `pids` (every track when nil).
    public func initSegment(pids: Set<UInt16>? = nil) throws(FragmentedMP4Error) -> InitSegment {
        try fragmenter(pids: pids).initSegment(pids: pids)
    }
}

/// Remuxes a whole transport stream to one fragmented MP4 (init segment, then a fragment of every track per
/// range of about `fragmentBytes` of input).
public struct TSRemuxer: Sendable {
    public var layout: TSProgramLayout
    public var pids: Set<UInt16>?
    public var fragmentBytes: Int64

    public init(layout: TSProgramLayout, pids: Set<UInt16>? = nil, fragmentBytes: Int64 = 8 << 20) {
        self.layout = layout
        self.pids = pids
        self.fragmentBytes = max(1 << 16, fragmentBytes)
    }

    /// Reads the file through `read` (bytes at an offset, empty at the end) and hands the output to `write` in
    /// order; `progress` gets the bytes read so far. The first time stamp seen anchors the timeline.
    ///
    /// Each track has the one sample entry of the file's head. Where a track's parameter sets or audio
    /// configuration change (two encodings joined), throws ``FragmentedMP4Error/Code/configurationChange`` naming
    /// the PID and the byte offset, before writing the fragment that would hold it: ISO/IEC 14496-12 lets a track
    /// list several sample entries and pick one per fragment (`tfhd` sample_description_index), but ffmpeg's MP4
    /// reader decodes every fragment with the first entry's configuration.
    ///
    /// Returns what the demuxer counted in the whole file, so a caller can say what was skipped (bytes without
    /// sync, a last packet cut short).
    @discardableResult
    public func remux(
        fileSize: Int64, read: (Int64, Int) throws -> [UInt8], write: ([UInt8]) throws -> Void,
        progress: (Int64) -> Void = { _ in }
    ) throws -> DemuxStatistics {
        var fragmenter = try layout.fragmenter(pids: pids)
        fragmenter.detectsConfigurationChanges = true
        try write(try fragmenter.initSegment(pids: pids).serialized())
        var timeline: TSTimeline?
        var sequence: UInt32 = 1
        var offset: Int64 = 0
        let chunk = 1 << 20
        while offset < fileSize {
            let end = min(fileSize, offset + fragmentBytes)
            fragmenter.beginRange(start: offset, end: end)
            while fragmenter.position < end || fragmenter.needsMoreBytes {
                let bytes = try read(fragmenter.position, chunk)
                if bytes.isEmpty {
                    fragmenter.finish()
                    break
                }
                fragmenter.feed(bytes)
                progress(fragmenter.position)
            }
            if fragmenter.position >= fileSize { fragmenter.finish() }
            offset = end
            if timeline == nil, let first = fragmenter.firstTimestamp { timeline = TSTimeline(firstTimestamp: first) }
            guard let timeline else { continue }
            let fragments = fragmenter.takeFragments(timeline: timeline, pids: pids)
            if let change = fragmenter.configurationChange {
                throw FragmentedMP4Error(
                    .configurationChange, offset: Int(exactly: change.offset),
                    "PID \(change.pid) (\(change.codec.name)): "
                        + (change.codec.kind == .video
                            ? "the parameter sets change" : "the audio configuration changes")
                        + " at byte offset \(change.offset) (two encodings joined?); one MP4 file keeps one sample "
                        + "entry per track here, so it cannot hold both: serve the file as HLS (an init segment per "
                        + "part) or cut it at that offset")
            }
            let ordered = fragmenter.tracks.compactMap { fragments[$0.pid] }
            guard !ordered.isEmpty else { continue }
            try write(try MediaSegment(sequenceNumber: sequence, tracks: ordered).serialized())
            sequence += 1
        }
        fragmenter.finish()
        return fragmenter.statistics
    }
}
