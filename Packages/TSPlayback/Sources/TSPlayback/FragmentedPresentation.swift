import FileRange
import FragmentedMP4
import HLSPlaylist
import LoopbackHTTP
import MPEGTS

/// How a ``TSPlaybackSession`` serves its file.
public enum PlaybackContainer: String, Sendable, Hashable, CaseIterable {
    /// Fragmented MP4 when the file has HEVC or more than one audio track (what AVPlayer plays only from
    /// fragmented MP4, or offers as a choice only as renditions); TS byte ranges otherwise.
    case auto
    /// TS byte ranges of the file, whatever it holds.
    case ts
    /// Fragmented MP4 segments made from the file's byte ranges, when its streams can be carried.
    case fmp4
}

/// The fragmented MP4 presentation of a session's file: the tracks the bridge found in the file's head, the
/// playlists (a video media playlist, one audio rendition per audio PID, an I-frame playlist) and segments made on
/// request from the same keyframe-aligned byte ranges as the TS playlist, kept in a small bounded memory cache.
///
/// Each range between time stamp resets takes its tracks' sample entries from its own first bytes (a
/// concatenation may join two encodings): a track whose configuration differs from every earlier range's gets
/// another init segment (`video-init-1.mp4`, ...), and the playlists name it from that range on. A joined
/// recording's later parts on other PIDs are read on the first part's (`MPEGTS.PartReader`), so each part is such a
/// range.
final class FragmentedPresentation: Sendable {
    let layout: TSProgramLayout
    let file: FileStreamer
    let video: TSTrackInfo?
    let audio: [TSTrackInfo]
    let initSegments: [UInt16: [UInt8]]
    let cache = SegmentCache(limit: segmentCacheLimit)
    /// The segments being made now, and the answers waiting for them.
    let making = SegmentsInMaking()
    /// How many bytes of made segments the presentation keeps in memory at most.
    static let segmentCacheLimit = 48 << 20
    /// By reset offset: the tracks' sample entry values read from that range's first bytes, and the file size they
    /// were read at while they may still change (a track showed none, and the file had fewer than
    /// ``rangeHeadBytes`` after the reset: it may be growing), nil once settled.
    private let rangeCodecs = LockedValue<[UInt64: (codecs: [UInt16: TrackCodec], unsettledAt: UInt64?)]>([:])
    /// The last ``configurations(resets:)`` answer, by the resets it was made for (and the file size, while a
    /// range's values are unsettled).
    private let lastConfigurations = LockedValue<
        (resets: [UInt64], unsettledAt: UInt64?, value: Configurations)?
    >(nil)
    /// How many bytes of a range's start are read at most for its parameter sets and audio configuration.
    static let rangeHeadBytes = 4 << 20

    /// How far past a range's end bytes are read to complete the PES packets that start inside it.
    static let lookahead: UInt64 = 16 << 20

    init(layout: TSProgramLayout, file: FileStreamer) throws(FragmentedMP4Error) {
        self.layout = layout
        self.file = file
        video = layout.tracks.first(where: \.isVideo)
        audio = layout.tracks.filter { !$0.isVideo }
        var inits: [UInt16: [UInt8]] = [:]
        for track in layout.tracks {
            inits[track.pid] = try layout.initSegment(pids: [track.pid]).serialized()
        }
        initSegments = inits
    }

    /// The PID whose playlist is the variant's: the video, or the first audio track without video.
    var mainPID: UInt16? { video?.pid ?? audio.first?.pid }

    func playlistName(_ track: TSTrackInfo) -> String { track.isVideo ? "video" : "audio-\(track.pid)" }

    /// The name of init segment `number` of `track`: the first range's is `<name>-init.mp4`, later ones
    /// `<name>-init-<number>.mp4`.
    func initName(_ track: TSTrackInfo, number: Int) -> String {
        playlistName(track) + (number == 0 ? "-init.mp4" : "-init-\(number).mp4")
    }

    // MARK: Configurations by range

    /// The tracks' sample entry values range by range: range 0 is the file's head's, range k starts at the k-th
    /// reset. `distinct[pid][n]` is the configuration of init segment n; `ranges[k][pid]` the init segment range k
    /// uses (a range equal to an earlier one shares its init segment).
    struct Configurations: Sendable {
        var distinct: [UInt16: [TrackCodec]]
        var ranges: [[UInt16: Int]]

        /// The range that holds byte `offset`, for `resets` in order.
        static func range(of offset: UInt64, resets: [UInt64]) -> Int {
            var low = 0
            var high = resets.count
            while low < high {
                let middle = (low + high) / 2
                if resets[middle] <= offset { low = middle + 1 } else { high = middle }
            }
            return low
        }

        /// The configuration of each track in range `range`.
        func codecs(range: Int) -> [UInt16: TrackCodec] {
            guard range < ranges.count else { return [:] }
            var result: [UInt16: TrackCodec] = [:]
            for (pid, number) in ranges[range] {
                if let list = distinct[pid], number < list.count { result[pid] = list[number] }
            }
            return result
        }
    }

    /// The configurations of the ranges that `resets` (sorted byte offsets of the keyframes after time stamp
    /// resets) cut the file into. A range's own values are read once from its first bytes; a track that shows
    /// none there keeps the range before's.
    func configurations(resets: [UInt64]) -> Configurations {
        if let last = lastConfigurations.withLock({ $0 }), last.resets == resets,
            last.unsettledAt == nil || last.unsettledAt == (try? file.size())
        {
            return last.value
        }
        var distinct = layout.codecs.mapValues { [$0] }
        var ranges: [[UInt16: Int]] = [layout.codecs.mapValues { _ in 0 }]
        var unsettledAt: UInt64?
        for reset in resets {
            let (found, unsettled) = codecs(atReset: reset)
            unsettledAt = unsettledAt ?? unsettled
            var row = ranges[ranges.count - 1]
            for track in layout.tracks {
                guard let codec = found[track.pid], let known = distinct[track.pid] else { continue }
                if let number = known.firstIndex(where: { $0.hasSameConfiguration(as: codec) }) {
                    row[track.pid] = number
                } else {
                    distinct[track.pid, default: []].append(codec)
                    row[track.pid] = known.count
                }
            }
            ranges.append(row)
        }
        let value = Configurations(distinct: distinct, ranges: ranges)
        lastConfigurations.withLock { $0 = (resets, unsettledAt, value) }
        return value
    }

    /// The sample entry values the tracks show in the first bytes of the range that starts at `offset`, and the
    /// file size they were read at while they are unsettled: a track showed none in fewer than ``rangeHeadBytes``
    /// (a recording still being written may not have them yet), so they are read again once the file has grown.
    func codecs(atReset offset: UInt64) -> (codecs: [UInt16: TrackCodec], unsettledAt: UInt64?) {
        let known = rangeCodecs.withLock { $0[offset] }
        if let known, known.unsettledAt == nil { return known }
        // Unreadable, or not there yet: nothing known, asked again next time.
        guard let size = try? file.size(), offset < size else { return ([:], 0) }
        if let known, known.unsettledAt == size { return known }
        let limit = Int(min(UInt64(Self.rangeHeadBytes), size - offset))
        guard
            let found = try? layout.codecs(
                limit: limit, read: { start, length in try read(at: offset + UInt64(start), length: length) })
        else { return ([:], size) }
        let settled = limit == Self.rangeHeadBytes || layout.tracks.allSatisfy { found[$0.pid] != nil }
        let result = (codecs: found, unsettledAt: settled ? nil : size)
        rangeCodecs.withLock { $0[offset] = result }
        return result
    }

    /// The bytes of init segment `number` of `track`, or nil when there is no such init segment.
    func initSegment(_ track: TSTrackInfo, number: Int, configurations: Configurations) -> [UInt8]? {
        if number == 0 { return initSegments[track.pid] }
        guard let list = configurations.distinct[track.pid], number < list.count else { return nil }
        let codec = list[number]
        return try? InitSegment(tracks: [
            Track(trackID: track.trackID, timescale: codec.timescale, language: track.language ?? "und", codec: codec)
        ]).serialized()
    }

    // MARK: Playlists

    /// The media playlist of `track`; the segments that start at one of `discontinuities` (time stamp resets)
    /// follow an `EXT-X-DISCONTINUITY` (their decode times still follow on from the segment before).
    /// Each segment's `EXT-X-MAP` is its range's init segment, so a new one follows the discontinuity where the
    /// configuration changes.
    func mediaPlaylist(
        for track: TSTrackInfo, segments: [PlannedSegment], complete: Bool, discontinuities: Set<UInt64> = []
    ) -> String {
        var builder = MediaPlaylistBuilder(kind: complete ? .vod : .event(ended: false))
        builder.independentSegments = true
        let name = playlistName(track)
        let resets = discontinuities.sorted()
        let configurations = configurations(resets: resets)
        builder.segments = segments.enumerated().map { number, segment in
            let range = Configurations.range(of: segment.offset, resets: resets)
            return MediaPlaylistBuilder.Segment(
                uri: "\(name)/\(number).m4s", duration: segment.duration,
                discontinuity: discontinuities.contains(segment.offset),
                mapURI: initName(track, number: configurations.ranges[range][track.pid] ?? 0))
        }
        return builder.build().text
    }

    func iFramePlaylist(frames: [PlannedSegment], discontinuities: Set<UInt64> = []) -> String? {
        guard let video, !frames.isEmpty else { return nil }
        var builder = MediaPlaylistBuilder(kind: .vod)
        builder.iFramesOnly = true
        builder.independentSegments = true
        let resets = discontinuities.sorted()
        let configurations = configurations(resets: resets)
        var previousRange = 0
        builder.segments = frames.enumerated().map { number, frame in
            // The first I-frame of each range follows the discontinuity, also where the range starts before it (at a
            // joined recording's tables).
            let range = Configurations.range(of: frame.offset, resets: resets)
            defer { previousRange = range }
            return MediaPlaylistBuilder.Segment(
                uri: "iframe/\(number).m4s", duration: frame.duration,
                discontinuity: number > 0 && range != previousRange,
                mapURI: initName(video, number: configurations.ranges[range][video.pid] ?? 0))
        }
        return builder.build().text
    }

    /// The variant's `CODECS` lists every range's codec strings and `RESOLUTION` is the largest range's (RFC 8216bis:
    /// CODECS names every format in any segment of the variant).
    func multivariantPlaylist(
        segments: [PlannedSegment], iFrames: [PlannedSegment]?, details: [CodecDetails], fallbackBandwidth: Double,
        discontinuities: Set<UInt64> = []
    ) -> String {
        let distinct = configurations(resets: discontinuities.sorted()).distinct
        var builder = MultivariantPlaylistBuilder()
        builder.independentSegments = true
        let peak = segments.map { $0.duration > 0 ? Double($0.length * 8) / $0.duration : 0 }.max() ?? 0
        let totalDuration = segments.reduce(0) { $0 + $1.duration }
        let totalBytes = segments.reduce(UInt64(0)) { $0 + $1.length }
        let average = totalDuration > 0 ? Double(totalBytes * 8) / totalDuration : 0
        let bandwidth = UInt64(max(peak, fallbackBandwidth, 1).rounded(.up))
        var videoCodecs: [String] = []
        for codec in video.flatMap({ distinct[$0.pid] }) ?? [] {
            if let string = codec.codecString, !videoCodecs.contains(string) { videoCodecs.append(string) }
        }
        let videoCodec = videoCodecs.isEmpty ? nil : videoCodecs.joined(separator: ",")
        var audioCodecs: [String] = []
        for track in audio {
            for codec in distinct[track.pid] ?? [] {
                if let string = codec.codecString, !audioCodecs.contains(string) { audioCodecs.append(string) }
            }
        }
        let videoDetails = details.first { $0.width != nil }
        var size = (width: videoDetails?.width ?? 0, height: videoDetails?.height ?? 0)
        for codec in video.flatMap({ distinct[$0.pid] }) ?? [] {
            switch codec {
            case .avc(_, _, let width, let height), .hevc(_, _, _, let width, let height):
                if Int(width) * Int(height) > size.width * size.height { size = (Int(width), Int(height)) }
            default: break
            }
        }
        var resolution: Resolution?
        if size.width > 0, size.height > 0 {
            resolution = Resolution(width: UInt64(size.width), height: UInt64(size.height))
        }
        var names: [String] = []
        for (number, track) in audio.enumerated() {
            let language = track.language.flatMap(LanguageNames.tag(for:))
            var name = track.language.flatMap(LanguageNames.name(for:)) ?? "Audio \(number + 1)"
            if names.contains(name) { name += " (\(number + 1))" }
            names.append(name)
            var extra: [Attribute] = []
            if let channels = (distinct[track.pid] ?? []).compactMap(\.channelCount).max(), channels > 0 {
                extra.append(Attribute(name: "CHANNELS", rawValue: "\"\(channels)\""))
            }
            // Without video the variant's own playlist is the first audio track: its rendition has no URI.
            let uri = video == nil && number == 0 ? nil : "\(playlistName(track)).m3u8"
            builder.renditions.append(
                MultivariantPlaylistBuilder.Rendition(
                    type: "AUDIO", groupID: "audio", name: name, uri: uri, language: language, isDefault: number == 0,
                    autoselect: true, extra: extra))
        }
        var closedCaptions: String?
        if video != nil {
            // CEA-608 is CC1 (its first channel), CEA-708 SERVICE1 (its first service). Both have no language to
            // tell them apart, so only the first (the default) is AUTOSELECT=YES: two AUTOSELECT renditions of a group
            // with the same LANGUAGE, ASSOC-LANGUAGE, FORCED and CHARACTERISTICS are ones a client cannot choose
            // between (RFC 8216bis 4.4.6.1.1).
            let services = [(CaptionServices.cea608, "CC1"), (.cea708, "SERVICE1")].filter {
                layout.captions.contains($0.0)
            }
            for (number, (_, id)) in services.enumerated() {
                builder.renditions.append(
                    MultivariantPlaylistBuilder.Rendition(
                        type: "CLOSED-CAPTIONS", groupID: "cc", name: id, isDefault: number == 0,
                        autoselect: number == 0,
                        extra: [Attribute(name: "INSTREAM-ID", rawValue: "\"\(id)\"")]))
            }
            if !services.isEmpty {
                closedCaptions = "cc"
            } else {
                closedCaptions = "NONE"
            }
        }
        guard let main = layout.tracks.first(where: { $0.pid == mainPID }) else { return builder.build().text }
        let codecs = ([videoCodec].compactMap { $0 } + audioCodecs).joined(separator: ",")
        builder.variants = [
            MultivariantPlaylistBuilder.Variant(
                uri: "\(playlistName(main)).m3u8", bandwidth: bandwidth,
                averageBandwidth: average > 0 ? UInt64(average.rounded(.up)) : nil,
                codecs: codecs.isEmpty ? nil : codecs, resolution: resolution,
                frameRate: videoDetails?.frameRate.map { ($0 * 1000).rounded() / 1000 },
                audio: audio.isEmpty ? nil : "audio", closedCaptions: closedCaptions)
        ]
        if let iFrames, !iFrames.isEmpty, video != nil {
            let peakIFrame = iFrames.map { Double($0.length * 8) / $0.duration }.max() ?? 1
            let bits = iFrames.reduce(0) { $0 + Double($1.length * 8) }
            let seconds = iFrames.reduce(0) { $0 + $1.duration }
            builder.iFrameVariants = [
                MultivariantPlaylistBuilder.Variant(
                    uri: "iframes.m3u8", bandwidth: UInt64(max(1, peakIFrame).rounded(.up)),
                    averageBandwidth: seconds > 0 ? UInt64((bits / seconds).rounded(.up)) : nil, codecs: videoCodec,
                    resolution: resolution)
            ]
        }
        return builder.build().text
    }

    // MARK: Segments

    /// The fragments of the byte range `segment` for every track (by PID), from `timeline`, with each track's
    /// decode times moved by `shifts` (by PID, in the track's timescale). With `only`, just that track (for
    /// I-frames). A track with no sample in the range gets an empty fragment at the range's start.
    func makeFragments(
        _ segment: PlannedSegment, timeline: TSTimeline, fileSize: UInt64, only: UInt16? = nil,
        shifts: [UInt16: Int64] = [:], codecs: [UInt16: TrackCodec] = [:]
    ) throws -> [UInt16: TrackFragment] {
        var fragmenter = try layout.fragmenter(pids: only.map { [$0] })
        for (pid, codec) in codecs { fragmenter.configure(pid: pid, codec: codec) }
        let start = segment.offset
        let end = segment.offset + segment.length
        fragmenter.beginRange(start: Int64(start), end: Int64(end))
        let chunk = 1 << 20
        var offset = start
        let limit = min(fileSize, end + Self.lookahead)
        while offset < end || (fragmenter.needsMoreBytes && offset < limit) {
            let length = Int(min(UInt64(chunk), limit - offset))
            guard length > 0 else { break }
            let bytes = try read(at: offset, length: length)
            guard !bytes.isEmpty else { break }
            fragmenter.feed(bytes)
            offset += UInt64(bytes.count)
        }
        if fragmenter.needsMoreBytes || offset >= fileSize { fragmenter.finish() }
        let fragments = fragmenter.takeFragments(timeline: timeline)
        let dropped = fragmenter.otherConfigurationFrames
        if !dropped.isEmpty { leftOut.withLock { $0[segment.offset] = dropped } }
        var result: [UInt16: TrackFragment] = [:]
        for (track, builderTimescale) in zip(fragmenter.tracks, fragmenter.timescales) {
            var fragment =
                fragments[track.pid]
                ?? TrackFragment(
                    trackID: track.trackID,
                    baseMediaDecodeTime: timeline.time(timeline.anchor, timescale: builderTimescale), samples: [])
            if let shift = shifts[track.pid], shift != 0 {
                fragment.baseMediaDecodeTime = UInt64(max(0, Int64(clamping: fragment.baseMediaDecodeTime) + shift))
            }
            result[track.pid] = fragment
        }
        return result
    }

    /// One segment's bytes for `pid`, from the cache or made now (with every other track's, which are cached), with
    /// the sample entries of its range (`codecs`).
    func segment(
        number: Int, pid: UInt16, planned: PlannedSegment, timeline: TSTimeline, fileSize: UInt64, iFrame: Bool,
        shifts: [UInt16: Int64] = [:], codecs: [UInt16: TrackCodec] = [:]
    ) throws -> MadeSegment? {
        let key = SegmentCache.Key(number: number, pid: pid, iFrame: iFrame)
        if let made = cache.get(key) { return made }
        let fragments = try makeFragments(
            planned, timeline: timeline, fileSize: fileSize, only: iFrame ? pid : nil, shifts: shifts, codecs: codecs)
        var made: [UInt16: MadeSegment] = [:]
        for (otherPID, fragment) in fragments {
            let bytes = try MediaSegment(
                sequenceNumber: UInt32(truncatingIfNeeded: number + 1), tracks: [fragment],
                segmentType: MediaSegment.defaultSegmentType
            ).serialized()
            let segment = MadeSegment(bytes: bytes, entityTag: HTTPApplication.contentEntityTag(bytes))
            made[otherPID] = segment
            cache.put(SegmentCache.Key(number: number, pid: otherPID, iFrame: iFrame), segment)
        }
        return made[pid]
    }

    /// The track whose segment the route names, if any.
    func track(of segment: FragmentedSegmentRoute) -> TSTrackInfo? {
        segment.iFrame ? video : layout.tracks.first(where: { playlistName($0) == segment.playlist })
    }

    /// The answer for the route's segment when it is in the cache, nil otherwise: found without reading the file or
    /// hashing the bytes, so that the event loop answers it at once.
    func madeResponse(_ segment: FragmentedSegmentRoute) -> HTTPResponse? {
        guard let track = track(of: segment),
            let made = cache.get(SegmentCache.Key(number: segment.number, pid: track.pid, iFrame: segment.iFrame))
        else { return nil }
        return response(made, track)
    }

    /// The answer with a made segment of `track`: its bytes and the ETag computed where they were made.
    func response(_ made: MadeSegment, _ track: TSTrackInfo) -> HTTPResponse {
        var response = HTTPResponse.bytes(made.bytes, contentType: track.isVideo ? "video/mp4" : "audio/mp4")
        response.headers.add(name: "ETag", value: made.entityTag)
        return response
    }

    /// Audio frames left out of the segments made so far because their configuration is not their range's (by
    /// PID), by the segment's byte offset.
    let leftOut = LockedValue<[UInt64: [UInt16: Int]]>([:])

    /// The tracks' decode time shifts found so far, by the byte offset of the reset that starts their range.
    let shifts = LockedValue<[UInt64: [UInt16: Int64]]>([:])

    /// The parts of a joined recording followed so far (``follow(parts:packetSize:)``), and the reader of those on
    /// other PIDs, nil when there is none.
    let knownParts = LockedValue<[RecordingPart]>([])
    let partReader = LockedValue<PartReader?>(nil)

    /// Drops every value read from the file's bytes after its head: ranges' configurations, shifts, made segments.
    func forgetMadeValues() {
        rangeCodecs.withLock { $0 = [:] }
        lastConfigurations.withLock { $0 = nil }
        shifts.withLock { $0 = [:] }
        leftOut.withLock { $0 = [:] }
        cache.removeAll()
    }
}

extension TSFragmenter {
    /// The timescale of each track, in `FragmentedMP4.TSFragmenter.tracks` order.
    var timescales: [UInt32] {
        zip(tracks, codecs).map { track, codec in codec?.timescale ?? (track.isVideo ? 90_000 : 48_000) }
    }
}

/// A segment's bytes as made, with their ETag (``LoopbackHTTP/HTTPApplication/contentEntityTag(_:)``), computed
/// once where they were made, not for each answer.
struct MadeSegment: Sendable, Equatable {
    var bytes: [UInt8]
    var entityTag: String
}

/// The most recently used segments, up to a byte limit.
final class SegmentCache: Sendable {
    struct Key: Hashable, Sendable {
        var number: Int
        var pid: UInt16
        var iFrame: Bool
    }

    private struct State {
        var entries: [Key: MadeSegment] = [:]
        var order: [Key] = []
        var bytes = 0
    }

    let limit: Int
    private let state = LockedValue(State())

    init(limit: Int) { self.limit = limit }

    func get(_ key: Key) -> MadeSegment? {
        state.withLock { state in
            guard let made = state.entries[key] else { return nil }
            if let index = state.order.firstIndex(of: key) {
                state.order.remove(at: index)
                state.order.append(key)
            }
            return made
        }
    }

    func put(_ key: Key, _ made: MadeSegment) {
        guard made.bytes.count <= limit else { return }
        state.withLock { state in
            if let old = state.entries[key] {
                state.bytes -= old.bytes.count
                state.order.removeAll { $0 == key }
            }
            state.entries[key] = made
            state.order.append(key)
            state.bytes += made.bytes.count
            while state.bytes > limit, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.entries.removeValue(forKey: oldest)?.bytes.count ?? 0
            }
        }
    }

    /// Forgets every segment.
    func removeAll() {
        state.withLock { $0 = State() }
    }

    /// The bytes held.
    var byteCount: Int { state.withLock { $0.bytes } }
}

/// RFC 5646 tags and English names for the ISO 639-2 codes broadcast recordings carry most.
enum LanguageNames {
    static let table: [String: (tag: String, name: String)] = [
        "eng": ("en", "English"), "fra": ("fr", "French"), "fre": ("fr", "French"), "deu": ("de", "German"),
        "ger": ("de", "German"), "spa": ("es", "Spanish"), "ita": ("it", "Italian"), "por": ("pt", "Portuguese"),
        "nld": ("nl", "Dutch"), "dut": ("nl", "Dutch"), "rus": ("ru", "Russian"), "jpn": ("ja", "Japanese"),
        "zho": ("zh", "Chinese"), "chi": ("zh", "Chinese"), "kor": ("ko", "Korean"), "ara": ("ar", "Arabic"),
        "swe": ("sv", "Swedish"), "nor": ("no", "Norwegian"), "dan": ("da", "Danish"), "fin": ("fi", "Finnish"),
        "pol": ("pl", "Polish"), "tur": ("tr", "Turkish"), "ell": ("el", "Greek"), "gre": ("el", "Greek"),
        "heb": ("he", "Hebrew"), "hin": ("hi", "Hindi"), "ces": ("cs", "Czech"), "cze": ("cs", "Czech"),
        "hun": ("hu", "Hungarian"), "cat": ("ca", "Catalan"), "ukr": ("uk", "Ukrainian"),
    ]

    /// The language's RFC 5646 tag: its two-letter code when it has one here, else the three-letter code; nil for
    /// "und", "mul", "zxx" and the reserved local-use codes.
    static func tag(for code: String) -> String? {
        if ["und", "mul", "zxx", "mis"].contains(code) || code.hasPrefix("qa") { return nil }
        return table[code]?.tag ?? code
    }

    /// The language's English name, or the code itself.
    static func name(for code: String) -> String? {
        guard tag(for: code) != nil else { return nil }
        return table[code]?.name ?? code
    }
}
