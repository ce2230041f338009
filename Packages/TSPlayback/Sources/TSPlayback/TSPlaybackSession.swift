import FileRange
import FragmentedMP4
import HLSPlaylist
public import LoopbackHTTP
public import MPEGTS

/// Plays one `.ts` file through the loopback server: the file is indexed (in the background, or at once from its
/// sidecar index) and described as HLS, a VOD media playlist of keyframe-aligned byte-range segments with true
/// durations; the raw file is served as well, for players that read MPEG-TS directly.
///
/// Routes, under the session's token: `master.m3u8` (multivariant), `index.m3u8` (media), `media.ts` (the file,
/// with Range). While the index is being built the media playlist is an EVENT playlist that grows; once it is
/// complete it ends with `EXT-X-ENDLIST`, and on later opens it is a VOD playlist from the first request.
///
/// In fragmented MP4 mode (``container``; chosen by ``Options/container``) `master.m3u8` lists `video.m3u8`, one
/// `audio-<PID>.m3u8` rendition per audio track and `iframes.m3u8`; their segments (`video/<n>.m4s`,
/// `audio-<PID>/<n>.m4s`, `iframe/<n>.m4s`, with `video-init.mp4` and `audio-<PID>-init.mp4`, and
/// `video-init-<n>.mp4` ... for a later range whose parameter sets or audio configuration differ) are made on
/// request from the same byte ranges as the TS playlist's. `index.m3u8` and `media.ts` stay for players that read TS.
public final class TSPlaybackSession: PlaybackSource {
    /// Settings of a session.
    public struct Options: Sendable, Hashable {
        /// The duration segments are cut at, at the next keyframe; about 6 s by default.
        public var segmentDuration: Double = 6
        /// Whether to write the index to a sidecar file next to the input, so the next open is instant.
        public var writesSidecar: Bool = true
        /// TS byte ranges, fragmented MP4 segments, or the one AVPlayer needs (the default).
        public var container: PlaybackContainer = .auto
        /// The program to play in a file of several (the PAT's program_number); nil: the first program with video,
        /// else the first with audio. A number the file does not have fails with
        /// `LoopbackHTTP.PlaybackError.Code.unknownProgram`.
        public var program: UInt16?

        /// Default options.
        public init(
            segmentDuration: Double = 6, writesSidecar: Bool = true, container: PlaybackContainer = .auto,
            program: UInt16? = nil
        ) {
            self.segmentDuration = segmentDuration
            self.writesSidecar = writesSidecar
            self.container = container
            self.program = program
        }
    }

    /// The file's path.
    public let path: String
    /// The session's settings.
    public let options: Options
    /// The token the session's routes sit under.
    public let token: SessionToken
    /// The quick head-and-tail probe, available as soon as the session is open.
    public let probe: TSProbe
    /// What the streams' own headers say (CODECS strings, picture size, frame rate), read from the file's start (the
    /// multivariant playlist adds each later part's, read where the part begins once the index has found it).
    public let codecDetails: [CodecDetails]
    /// How the file is served: ``PlaybackContainer/ts`` or ``PlaybackContainer/fmp4`` (never `auto`).
    public let container: PlaybackContainer
    /// Why the container was chosen, and streams that AVPlayer cannot play or that are left out.
    public let diagnostics: [String]
    /// The program played, in a file of several programs (nil when the file has one).
    public let program: UInt16?

    let file: FileStreamer
    /// Where the file's first packet starts (0 unless the file begins in the middle of a packet).
    let firstPacketOffset: UInt64
    /// Whether `media.ts` is the file's own bytes (188-byte packets from byte 0, sent zero-copy); otherwise it is
    /// the file's packets as plain 188-byte TS, made on the fly (see ``servedLayout()``).
    let servesFileAsIs: Bool
    let presentation: FragmentedPresentation?
    /// Segments the caller gave (a file of concatenated segments); nil when the file is indexed instead.
    let givenSegments: [PlannedSegment]?
    /// For given segments served as fragmented MP4: each segment's timeline (by offset) and the offsets where the
    /// time stamps reset.
    let givenTimelines: [UInt64: TSTimeline]
    let givenResets: Set<UInt64>
    /// The index the scan has reached (internal: tests stand in for the scan of a file that grows).
    let indexState: LockedValue<TSIndex?>
    /// Byte ranges of the keyframes' I-frames (offset, length, duration), measured once the index is complete, and,
    /// where each is served filtered (``filtersProgram``), the length of each as served.
    let iFrames = LockedValue<(frames: [PlannedSegment], servedLengths: [UInt64]?)?>(nil)
    /// The indexing task, which waits for the scan on a `FileRange.BlockingPool` thread.
    private let indexing = LockedValue<Task<Void, Never>?>(nil)
    /// Set when the session goes: the scan, which runs on a pool thread with no task to cancel, stops at its next
    /// chunk.
    private let indexingCancelled = LockedValue(false)
    /// Codec details of each later part of a joined recording (`MPEGTS.TSIndex.parts`), by the part's offset:
    /// what the first 2 MiB from where the part begins show (``readPartHeads(_:)``).
    let partCodecDetails = LockedValue<[Int64: [CodecDetails]]>([:])
    /// The last plan of ``segments``, by the index it was made from (which grows while the file is indexed).
    private let lastPlan = LockedValue<(key: PlanKey, segments: [PlannedSegment], resets: Set<UInt64>)?>(nil)

    /// What a segment plan depends on: the index's extent and keyframes.
    private struct PlanKey: Equatable {
        var bytesIndexed: UInt64
        var keyframes: Int
        var complete: Bool
    }

    /// What a failed probe says, for a person: the problem and where (the error's code and the path, which the
    /// `LoopbackHTTP.PlaybackError` gives in words already, left out).
    static func probeProblem(_ error: any Error) -> String {
        guard let error = error as? TSFileError else { return "\(error)" }
        return error.detail + (error.offset.map { $0 > 0 ? " at byte offset \($0)" : "" } ?? "")
    }

    /// Opens `path`. Reads only both ends of the file (the probe) and, when present and current, its sidecar index.
    public init(tsFile path: String, options: Options = Options()) throws(PlaybackError) {
        self.path = path
        self.options = options
        self.token = SessionToken.random()
        do {
            file = try FileStreamer(path: path)
        } catch {
            throw PlaybackError(.cannotOpen, path: path, detail: "\(error)")
        }
        do {
            probe = try TSProbe.probe(file)
        } catch {
            throw PlaybackError(.notTransportStream, path: path, detail: Self.probeProblem(error))
        }
        let chosen = try Self.chooseProgram(options.program, probe: probe, path: path)
        program = chosen
        // A sidecar made for another program's keyframes is not this one's.
        let programPIDs = Set(probe.programs.first { $0.programNumber == chosen }?.streams.map(\.pid) ?? [])
        indexState = LockedValue(
            TSIndex.loadSidecar(for: path).flatMap { index in
                guard chosen != nil, let pid = index.keyframePID else { return index }
                return programPIDs.contains(pid) ? index : nil
            })
        let first = Self.firstPacket(file)
        firstPacketOffset = first.offset
        servesFileAsIs = first.size == .standard && first.offset == 0
        givenSegments = nil
        givenTimelines = [:]
        givenResets = []
        let head = Self.readHead(file, program: chosen.map { _ in programPIDs })
        codecDetails = head.details
        let choice = Self.chooseContainer(
            options.container, file: file, probe: probe, present: head.present, program: chosen)
        container = choice.presentation == nil ? .ts : .fmp4
        presentation = choice.presentation
        var notes = choice.diagnostics
        if let chosen, choice.presentation == nil {
            notes.append(
                "TS segments carry program \(chosen) alone, filtered as they are served")
        }
        if first.size != .standard {
            notes.append("the file's \(first.size.length)-byte packets are served as 188-byte TS packets")
        }
        if first.offset > 0 {
            notes.append("the \(first.offset) bytes before the file's first whole packet are left out")
        }
        diagnostics = notes
    }

    /// Opens a file of concatenated TS segments whose byte ranges and durations the caller knows; nothing is
    /// indexed. The segments must be non-empty, inside the file, not overlapping, and last from one 90 kHz tick to
    /// less than 2^33 ticks (the time stamp circle, about 26.5 hours); they are served in the order of their offsets.
    ///
    /// The container is chosen as for an indexed file. Fragmented MP4 needs every segment to start with a keyframe
    /// (its first video PES, read at open): with ``PlaybackContainer/fmp4`` a segment that does not throws
    /// `LoopbackHTTP.PlaybackError.Code.invalidSegment` naming it; with ``PlaybackContainer/auto`` the file is served
    /// as TS and ``diagnostics`` names the segment. Where a segment's first time stamp does not follow on from the
    /// segment before (a reset), its playlist entry follows an `EXT-X-DISCONTINUITY`.
    public init(tsFile path: String, segments: [SegmentInfo], options: Options = Options()) throws(PlaybackError) {
        self.path = path
        self.options = options
        self.token = SessionToken.random()
        guard !segments.isEmpty else { throw PlaybackError(.emptySegments, path: path, detail: "no segments given") }
        do {
            file = try FileStreamer(path: path)
        } catch {
            throw PlaybackError(.cannotOpen, path: path, detail: "\(error)")
        }
        let size: UInt64
        do {
            size = try file.size()
            probe = try TSProbe.probe(file)
        } catch {
            throw PlaybackError(.notTransportStream, path: path, detail: Self.probeProblem(error))
        }
        let given = try SegmentInfo.validated(segments, fileSize: size, path: path)
        givenSegments = given
        // Given segments are byte ranges of the file as it is.
        firstPacketOffset = 0
        servesFileAsIs = true
        program = nil
        indexState = LockedValue(nil)
        let head = Self.readHead(file)
        codecDetails = head.details
        var choice = Self.chooseContainer(options.container, file: file, probe: probe, present: head.present)
        var timelines: [UInt64: TSTimeline] = [:]
        var resets: Set<UInt64> = []
        if let presentation = choice.presentation {
            switch Self.givenSegmentTimelines(given, presentation: presentation, file: file, probe: probe) {
            case .success(let found):
                timelines = found.timelines
                resets = found.resets
            case .failure(let reason):
                guard options.container != .fmp4 else {
                    throw PlaybackError(.invalidSegment, path: path, detail: reason.detail)
                }
                choice = (nil, ["served as TS: fragmented MP4 is not possible (\(reason.detail))"])
            }
        }
        givenTimelines = timelines
        givenResets = resets
        container = choice.presentation == nil ? .ts : .fmp4
        presentation = choice.presentation
        diagnostics = ["the segments are given, not indexed"] + choice.diagnostics
    }

    deinit {
        stopIndexing()
    }

    private func stopIndexing() {
        indexingCancelled.withLock { $0 = true }
        indexing.withLock { $0?.cancel() }
    }

    /// What serving has left out so far, one line per segment: audio frames whose configuration is another range's
    /// (frames of the next encoding muxed before the first keyframe after a time stamp reset), which the segment's
    /// init segment would decode wrongly. Grows as segments are made; empty in TS mode.
    public var servingDiagnostics: [String] {
        guard let presentation else { return [] }
        return presentation.leftOut.withLock { $0 }.sorted { $0.key < $1.key }.flatMap { offset, frames in
            frames.sorted { $0.key < $1.key }.map { pid, count in
                "PID \(pid): \(count) audio frame\(count == 1 ? "" : "s") in the segment at byte offset \(offset) "
                    + "left out: their configuration is not their range's (muxed before the next range's keyframe)"
            }
        }
    }

    /// The current index: complete once indexing finished, else what was scanned so far; nil before the first part.
    public var index: TSIndex? {
        indexState.withLock { $0 }
    }

    /// Whether the whole file has been indexed.
    public var isIndexed: Bool {
        index?.isComplete ?? false
    }

    /// Starts indexing (``startIndexing()``) when the server adds the session.
    public func prepare() {
        startIndexing()
    }

    /// Starts indexing in the background unless the index is already complete or the segments were given. Safe to
    /// call more than once.
    public func startIndexing() {
        guard givenSegments == nil else { return }
        if let index, index.isComplete {
            // Opened from the sidecar: only the I-frame ranges remain to be measured.
            indexing.withLock { task in
                guard task == nil else { return }
                task = Task.detached(priority: .utility) { [self] in
                    await BlockingPool.shared.run {
                        self.readPartHeads(index)
                        self.measureIFrames(index)
                    }
                }
            }
            return
        }
        indexing.withLock { task in
            guard task == nil else { return }
            // The scan reads the whole file: it runs on a pool thread, never on Swift's cooperative pool.
            task = Task.detached(priority: .utility) { [self] in
                await BlockingPool.shared.run { self.buildIndex() }
            }
        }
    }

    /// Waits for indexing to finish.
    public func waitUntilIndexed() async {
        startIndexing()
        let task = indexing.withLock { $0 }
        await task?.value
    }

    private func buildIndex() {
        var indexer = TSIndexer(program: program)
        do {
            let size = try file.size()
            let modified = try file.modificationTime()
            var published: UInt64 = 0
            // Two threads share the reading (see FileStreamer.readAhead); the chunks come here in order.
            try file.readAhead(length: size) { chunk in
                indexer.consume(chunk)
                // Publish the growing index every 32 MiB, so the playlist grows while the scan goes on.
                if indexer.bytesIndexed - published >= 32 << 20 {
                    published = indexer.bytesIndexed
                    let snapshot = indexer.index(fileSize: size, modificationTime: modified)
                    readPartHeads(snapshot)
                    indexState.withLock { $0 = snapshot }
                }
                return !indexingCancelled.withLock({ $0 })
            }
            guard !indexingCancelled.withLock({ $0 }) else { return }
            indexer.finish()
            // The last audio PES's frames are counted (a few KiB near the end), so an audio-only file's duration is
            // exact rather than a PES step long.
            indexer.measureLastAudioPES(in: file)
            let complete = indexer.index(fileSize: size, modificationTime: modified)
            readPartHeads(complete)
            indexState.withLock { $0 = complete }
            if options.writesSidecar {
                try? complete.saveSidecar(for: path)
            }
            measureIFrames(complete)
        } catch {
            // The file became unreadable: keep serving what was indexed; the playlist stays an EVENT playlist.
        }
    }

    /// Measures each keyframe's I-frame: from the packet that starts its PES to the next PES start on the same PID
    /// (capped at 8 MiB), reading only those bytes. Its duration runs to the next keyframe; the first one's from the
    /// presentation's start.
    private func measureIFrames(_ index: TSIndex) {
        guard index.keyframePID != nil, !index.keyframes.isEmpty else { return }
        let packetSize = index.packetSize
        let chunk = 64 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk + 256, alignment: 64)
        defer { buffer.deallocate() }
        var result: [PlannedSegment] = []
        let end = Self.presentationEndTicks(index) ?? 0
        for (number, keyframe) in index.keyframes.enumerated() {
            guard !indexingCancelled.withLock({ $0 }), let start = UInt64(exactly: keyframe.offset),
                let pid = index.keyframePID(at: keyframe.offset)
            else { return }
            let nextTicks = number + 1 < index.keyframes.count ? index.keyframes[number + 1].ticks : end
            // The first runs from the presentation's start, as the first media segment does, so that the two
            // playlists' times agree (at a reset, too).
            let duration = Double(nextTicks - (result.isEmpty ? 0 : keyframe.ticks)) / 90_000
            guard duration > 0,
                let length = Self.pesLength(file, from: start, pid: pid, packetSize: packetSize, buffer: buffer)
            else { continue }
            result.append(PlannedSegment(offset: start, length: length, duration: duration))
        }
        // Served one resource each (`program-iframe/<n>.ts`), filtered: their lengths as served, for BANDWIDTH.
        var lengths: [UInt64]?
        if filtersProgram {
            var scratch: [UInt8] = []
            lengths = result.map { frame in
                servedIFrameLength(frame, layout: index.layout, scratch: &scratch)
                    ?? Self.served(frame, layout: index.layout).length + 2 * 188
            }
        }
        iFrames.withLock { $0 = (result, lengths) }
    }

    /// The I-frame playlist's segments, once measured.
    public var iFrameSegments: [PlannedSegment]? {
        iFrames.withLock { $0?.frames }
    }

    /// The segments: as given, or as planned from the current index. Where the time stamps reset (a
    /// concatenation), a segment starts at the first keyframe after the reset (see ``discontinuities``).
    public var segments: [PlannedSegment] {
        if let givenSegments { return givenSegments }
        return currentPlan()?.segments ?? []
    }

    /// The segments and resets of the current index, planned again only when the index has changed.
    private func currentPlan() -> (segments: [PlannedSegment], resets: Set<UInt64>)? {
        guard let index else { return nil }
        let key = PlanKey(
            bytesIndexed: index.bytesIndexed, keyframes: index.keyframes.count, complete: index.isComplete)
        if let known = lastPlan.withLock({ $0 }), known.key == key { return (known.segments, known.resets) }
        let planned = Self.planSegments(index, targetDuration: options.segmentDuration)
        let resets = Set(Self.resetOffsets(index))
        lastPlan.withLock { $0 = (key, planned, resets) }
        return (planned, resets)
    }

    /// Plans the segments of `index`: each range between resets on its own, from its first keyframe.
    static func planSegments(_ index: TSIndex, targetDuration: Double) -> [PlannedSegment] {
        let cuts = index.keyframes.compactMap { keyframe -> SegmentPlanner.Cut? in
            guard let offset = UInt64(exactly: keyframe.offset) else { return nil }
            return SegmentPlanner.Cut(offset: offset, ticks: keyframe.ticks)
        }
        let resets = Set(Self.resetOffsets(index))
        let starts = Self.partStarts(index)
        let size = index.isComplete ? index.fileSize : index.bytesIndexed
        // Each range between resets is planned on its own, from its first keyframe.
        var result: [PlannedSegment] = []
        var start = SegmentPlanner.Cut(offset: 0, ticks: 0)
        var inside: [SegmentPlanner.Cut] = []
        func plan(to end: UInt64, endTicks: Int64?) {
            let planned = SegmentPlanner.plan(
                keyframes: inside.map { .init(offset: $0.offset - start.offset, ticks: $0.ticks - start.ticks) },
                fileSize: end - start.offset, endTicks: endTicks.map { $0 - start.ticks },
                targetDuration: targetDuration)
            result += planned.map { .init(offset: $0.offset + start.offset, length: $0.length, duration: $0.duration) }
        }
        for cut in cuts where cut.offset < size {
            // A range after a change of streams starts at the tables that announce them (its PAT and PMT).
            let rangeStart = starts[cut.offset] ?? cut.offset
            if resets.contains(rangeStart), rangeStart > start.offset, cut.ticks > start.ticks {
                plan(to: rangeStart, endTicks: cut.ticks)
                start = SegmentPlanner.Cut(offset: rangeStart, ticks: cut.ticks)
                inside = rangeStart < cut.offset ? [cut] : []
            } else {
                inside.append(cut)
            }
        }
        plan(to: size, endTicks: index.isComplete ? Self.presentationEndTicks(index) : nil)
        return result
    }

    /// The byte offsets of the keyframes where the file's time stamps reset (jump back, or forward by more than
    /// 30 s): the index closes such a jump up, so its ticks and the PTS disagree there. The segment that starts at
    /// one follows an `EXT-X-DISCONTINUITY`.
    public var discontinuities: Set<UInt64> {
        if givenSegments != nil { return givenResets }
        return currentPlan()?.resets ?? []
    }

    /// Where the presentation ends, in ticks from its start. With video, the video's end (its latest PTS plus one
    /// frame) is exact; an audio PES often carries several frames, so its last step overstates the audio's end.
    /// Without video, the index's own end.
    static func presentationEndTicks(_ index: TSIndex) -> Int64? {
        // A file of several recordings ends where its last part does (the parts tile the timeline).
        if index.parts.count > 1, let last = index.parts.last { return last.endTicks }
        let keyframeVideo = index.streams.first { $0.pid == index.keyframePID && $0.codec.kind == .video }
        guard let start = index.firstPTS,
            let video = keyframeVideo.flatMap({ $0.durationTicks == nil ? nil : $0 })
                ?? index.streams.first(where: { $0.codec.kind == .video && $0.durationTicks != nil }),
            let videoFirst = video.firstPTS, let videoDuration = video.durationTicks
        else { return index.durationTicks }
        return start.distance(to: videoFirst) + videoDuration
    }

    /// The media playlist's text.
    public func mediaPlaylist() -> String {
        let complete = isIndexed || givenSegments != nil
        var builder = MediaPlaylistBuilder(kind: complete ? .vod : .event(ended: false))
        builder.independentSegments = true
        let resets = discontinuities
        let entry = playlistEntry(resource: "program")
        builder.segments = segments.enumerated().map { number, segment in
            entry(number, segment, resets.contains(segment.offset))
        }
        return builder.build().text
    }

    /// What makes a planned segment a playlist entry: when TS segments are filtered (one program of several, or
    /// parts remapped), each is its own resource, `<resource>/<n>.ts`; else its served byte range of `media.ts`.
    func playlistEntry(resource: String) -> (Int, PlannedSegment, Bool) -> MediaPlaylistBuilder.Segment {
        let layout = servesFileAsIs ? nil : index?.layout
        let filters = filtersProgram
        return { number, segment, discontinuity in
            if filters {
                return MediaPlaylistBuilder.Segment(
                    uri: "\(resource)/\(number).ts", duration: segment.duration, discontinuity: discontinuity)
            }
            let served = Self.served(segment, layout: layout)
            return MediaPlaylistBuilder.Segment(
                uri: "media.ts", duration: segment.duration,
                byteRange: HLSPlaylist.ByteRange(length: served.length, offset: served.offset),
                discontinuity: discontinuity)
        }
    }

    /// The multivariant playlist's text: one variant, with the bandwidth measured from the file.
    public func multivariantPlaylist() -> String {
        var builder = MultivariantPlaylistBuilder()
        builder.independentSegments = true
        let (planned, filtered) = servedSegmentSizes()
        let peak = planned.map { $0.duration > 0 ? Double($0.length * 8) / $0.duration : 0 }.max() ?? 0
        let totalDuration = planned.reduce(0) { $0 + $1.duration }
        let totalBytes = planned.reduce(UInt64(0)) { $0 + $1.length }
        let average = totalDuration > 0 ? Double(totalBytes * 8) / totalDuration : 0
        // The whole file's rate, before any segment is known; a program's filtered sizes are the measure.
        let fallback = filtered ? 0 : probe.duration.map { $0 > 0 ? Double(probe.fileSize * 8) / $0 : 0 } ?? 0
        let bandwidth = UInt64(max(peak, fallback, 1).rounded(.up))
        // Each codec once, of every part of a file of several recordings (which may repeat them), the largest picture.
        let details = allCodecDetails
        var codecs: [String] = []
        for codec in details.compactMap(\.codecString) where !codecs.contains(codec) { codecs.append(codec) }
        var videoCodecs: [String] = []
        for codec in details.filter({ $0.width != nil }).compactMap(\.codecString) where !videoCodecs.contains(codec) {
            videoCodecs.append(codec)
        }
        let video = details.filter { $0.width != nil }.max {
            ($0.width ?? 0) * ($0.height ?? 0) < ($1.width ?? 0) * ($1.height ?? 0)
        }
        var resolution: Resolution?
        if let width = video?.width, let height = video?.height, width > 0, height > 0 {
            resolution = Resolution(width: UInt64(width), height: UInt64(height))
        }
        builder.variants = [
            MultivariantPlaylistBuilder.Variant(
                uri: "index.m3u8", bandwidth: bandwidth,
                averageBandwidth: average > 0 ? UInt64(average.rounded(.up)) : nil,
                codecs: codecs.isEmpty ? nil : codecs.joined(separator: ","), resolution: resolution,
                frameRate: video?.frameRate.map { ($0 * 1000).rounded() / 1000 })
        ]
        if let frames = servedIFrames(), !frames.isEmpty {
            let peakIFrame = frames.map { Double($0.length * 8) / $0.duration }.max() ?? 1
            let iFrameBits = frames.reduce(0) { $0 + Double($1.length * 8) }
            let iFrameDuration = frames.reduce(0) { $0 + $1.duration }
            builder.iFrameVariants = [
                MultivariantPlaylistBuilder.Variant(
                    uri: "iframes.m3u8", bandwidth: UInt64(max(1, peakIFrame).rounded(.up)),
                    averageBandwidth: iFrameDuration > 0 ? UInt64((iFrameBits / iFrameDuration).rounded(.up)) : nil,
                    codecs: videoCodecs.isEmpty ? nil : videoCodecs.joined(separator: ","), resolution: resolution)
            ]
        }
        return builder.build().text
    }

    /// Where the server's requests are answered, but for `media.ts` sent from the file: FileRange's shared blocking
    /// pool (a test gives a pool of its own).
    let answeringPool = LockedValue<BlockingPool>(.shared)

    /// The server calls ``answer(_:_:)``.
    public var answersLater: Bool { true }

    /// Answers a request from the server. Fragmented MP4 segments, filtered or converted TS segments and playlists
    /// read the file and build bytes: they are made on the blocking pool, so that a slow disk or a large segment never
    /// holds the server's event loop, where every other player's requests wait. `media.ts` sent from the file
    /// (the event loop's zero-copy path) is answered at once, and so is a fragmented MP4 segment already made; one
    /// to make is made once however many ask for it, and the next is made ahead (``answerSegment(_:_:on:_:_:)``).
    public func answer(_ request: HTTPRequest, _ responder: HTTPResponder) {
        if servesFileAsIs, request.wildcardSegments == ["media.ts"] {
            return responder.respond(respond(to: request))
        }
        let pool = answeringPool.withLock { $0 }
        let answer: @Sendable () -> Void = { [self] in responder.respond(respond(to: request)) }
        if let presentation, let segment = FragmentedSegmentRoute(request.wildcardSegments) {
            return answerSegment(segment, presentation, on: pool, responder, answer)
        }
        pool.submit(answer)
    }

    /// Answers a request for one of the session's routes (`master.m3u8`, `index.m3u8`, `media.ts`).
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let route = request.wildcardSegments
        if let presentation, let response = respondFragmented(route, presentation) { return response }
        if route.count == 2, route[0] == "program" || route[0] == "program-iframe", filtersProgram {
            return programSegmentResponse(route[1], iFrame: route[0] == "program-iframe", request: request)
        }
        guard route.count == 1 else { return .error(.notFound) }
        switch route[0] {
        case "master.m3u8":
            return .bytes(Array(multivariantPlaylist().utf8), contentType: "application/vnd.apple.mpegurl")
        case "index.m3u8":
            return .bytes(Array(mediaPlaylist().utf8), contentType: "application/vnd.apple.mpegurl")
        case "iframes.m3u8":
            guard let text = iFramePlaylist() else { return .error(.notFound) }
            return .bytes(Array(text.utf8), contentType: "application/vnd.apple.mpegurl")
        case "media.ts":
            guard servesFileAsIs else { return servedPacketsResponse(request) }
            do {
                return try .file(file, contentType: "video/mp2t")
            } catch {
                return .error(.internalServerError)
            }
        default:
            return .error(.notFound)
        }
    }

    /// Closes the file and stops indexing.
    public func close() {
        stopIndexing()
        file.close()
    }
}
