import FileRange
import FragmentedMP4
import HLSPlaylist
import LoopbackHTTP
import MPEGTS

// The container choice and the fragmented MP4 routes of a TSPlaybackSession.
extension TSPlaybackSession {
    /// The first bytes read to find the tracks and their parameter sets.
    static let layoutHeadBytes = 8 << 20

    /// Chooses how to serve the file: TS byte ranges, or a fragmented MP4 presentation; and says why.
    static func chooseContainer(
        _ requested: PlaybackContainer, file: FileStreamer, probe: TSProbe, present: Set<UInt16>? = nil,
        program: UInt16? = nil
    ) -> (presentation: FragmentedPresentation?, diagnostics: [String]) {
        var notes: [String] = []
        // In a file of several programs only the chosen one counts; TS byte ranges would carry every program (RFC
        // 8216 wants one a segment), so it is served as fMP4 when that is possible.
        let programs = probe.programs.filter { table in program.map { $0 == table.programNumber } ?? true }
        if let program {
            notes.append("program \(program) of \(probe.programs.count) is played")
        }
        // An audio or video PID a program map table lists but the file's first 2 MiB never carry (a ghost) counts
        // for nothing: it is named, and left out of the choice and of fragmented MP4.
        let listed = programs.flatMap(\.streams)
        let ghosts = listed.filter { stream in
            (stream.codec.kind == .audio || stream.codec.kind == .video)
                && present.map { !$0.contains(stream.pid) } ?? false
        }
        for ghost in ghosts {
            notes.append(
                "PID \(ghost.pid): \(ghost.codec.name), listed in the program map table but not found in the file's "
                    + "first 2 MiB, is left out")
        }
        let ghostPIDs = Set(ghosts.map(\.pid))
        let streams = listed.filter { !ghostPIDs.contains($0.pid) }
        for stream in streams {
            let codec = stream.codec
            if [Codec.mpeg1Video, .mpeg2Video, .mpeg4Video].contains(codec) {
                notes.append("PID \(stream.pid): \(codec.name) video, which AVPlayer cannot decode in any container")
            } else if stream.descriptors.contains(where: { $0.tag == 0x59 }) {
                notes.append("PID \(stream.pid): DVB bitmap subtitles, which AVPlayer cannot show")
            } else if stream.descriptors.contains(where: { $0.tag == 0x56 }) {
                notes.append("PID \(stream.pid): DVB teletext, which AVPlayer cannot show")
            }
        }
        let undecodableVideo = streams.contains { [Codec.mpeg1Video, .mpeg2Video, .mpeg4Video].contains($0.codec) }
        let hasHEVC = streams.contains { $0.codec == .hevc }
        // AVPlayer cannot decode LATM from TS; its AAC goes in fMP4 as plain `mp4a` samples.
        let hasLATM = streams.contains { $0.codec == .aacLATM }
        let audioCount = streams.filter { $0.codec.kind == .audio }.count
        let noStream =
            "no audio or video stream: no program association and map table names one in the \(probe.bytesRead) "
            + "bytes read at the file's start and end, so there is nothing to play yet"
        switch requested {
        case .ts:
            return (nil, ["served as TS: asked for"] + notes)
        case .auto:
            if !streams.contains(where: { $0.codec.kind == .audio || $0.codec.kind == .video }) {
                return (nil, ["served as TS: " + noStream] + notes)
            }
            if undecodableVideo {
                return (
                    nil, ["served as TS for players other than AVPlayer: the video cannot be decoded by it"] + notes
                )
            }
            if !hasHEVC && !hasLATM && audioCount <= 1 && program == nil {
                return (nil, ["served as TS: H.264 and one audio track play from TS byte ranges"] + notes)
            }
        case .fmp4:
            break
        }
        do {
            let size = try file.size()
            let head = try file.read(at: 0, length: Int(min(UInt64(layoutHeadBytes), size)))
            let layout = try TSProgramLayout(head: head, leavingOut: ghostPIDs, program: program)
            let presentation = try FragmentedPresentation(layout: layout, file: file)
            var why: [String] = []
            if hasHEVC { why.append("HEVC goes in fMP4 as hvc1") }
            if hasLATM { why.append("LATM AAC becomes AAC in fMP4 (TS byte ranges cannot carry it to AVPlayer)") }
            if audioCount > 1 { why.append("\(audioCount) audio tracks become renditions") }
            if program != nil && requested == .auto {
                why.append("TS byte ranges would carry every program")
            }
            if requested == .fmp4 { why.append("asked for") }
            let left = layout.skipped.map { "PID \($0.pid) left out: \($0.reason)" }
            return (presentation, ["served as fragmented MP4: " + why.joined(separator: ", ")] + left + notes)
        } catch {
            let reason = (error as? FragmentedMP4Error)?.detail ?? "\(error)"
            return (nil, ["served as TS: fragmented MP4 is not possible (\(reason))"] + notes)
        }
    }

    /// The timeline of a segment that starts at `offset`: anchored at the keyframe there (its PTS and its time
    /// from the index), so decode times run on through PTS wraps in a file of any length.
    func timeline(at offset: UInt64) -> TSTimeline? {
        if givenSegments != nil { return givenTimelines[offset] }
        guard let index, let first = index.firstPTS else { return nil }
        let base = TSTimeline(firstTimestamp: first)
        guard offset > 0 else { return base }
        let keyframes = index.keyframes
        var low = 0
        var high = keyframes.count
        while low < high {
            let middle = (low + high) / 2
            if UInt64(clamping: keyframes[middle].offset) < offset { low = middle + 1 } else { high = middle }
        }
        guard low < keyframes.count, UInt64(clamping: keyframes[low].offset) == offset else { return base }
        return TSTimeline(anchor: keyframes[low].pts, anchorTime: base.anchorTime + keyframes[low].ticks)
    }

    static let playlistType = "application/vnd.apple.mpegurl"

    /// Why given segments cannot be served as fragmented MP4.
    struct GivenSegmentProblem: Error {
        var detail: String
    }

    /// The timeline of each given segment (by offset), anchored at its first PES on the main track (the video, or
    /// the first audio track): the first segment's from the file's first time stamp, each later one's on from the
    /// one before by the time stamps, or by the segment's given duration where they reset (those offsets are
    /// returned too). Fails naming the first segment whose first video PES is not a keyframe, or that holds none.
    static func givenSegmentTimelines(
        _ segments: [PlannedSegment], presentation: FragmentedPresentation, file: FileStreamer, probe: TSProbe
    ) -> Result<(timelines: [UInt64: TSTimeline], resets: Set<UInt64>), GivenSegmentProblem> {
        guard let pid = presentation.mainPID else { return .failure(GivenSegmentProblem(detail: "no track")) }
        let layout = presentation.layout
        var timelines: [UInt64: TSTimeline] = [:]
        var resets: Set<UInt64> = []
        var base: TSTimeline?
        var previous: (pts: Timestamp, ticks: Int64, duration: Double)?
        for (number, segment) in segments.enumerated() {
            var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true))
            demuxer.prime(programAssociation: layout.programAssociation, programMaps: [layout.programMap])
            var first: PESInfo?
            var offset = segment.offset
            let end = segment.offset + min(segment.length, 4 << 20)
            while first == nil, offset < end {
                guard let bytes = try? file.read(at: offset, length: Int(min(64 << 10, end - offset))), !bytes.isEmpty
                else { break }
                bytes.withUnsafeBytes { raw in
                    demuxer.feed(raw) { event in
                        if first == nil, case .pes(let info) = event, info.pid == pid, info.pts != nil { first = info }
                    }
                }
                offset += UInt64(bytes.count)
            }
            guard let first, let pts = first.pts else {
                return .failure(
                    GivenSegmentProblem(
                        detail: "segment \(number) (offset \(segment.offset)) has no time-stamped PES on PID \(pid) "
                            + "in its first \(end - segment.offset) bytes"))
            }
            guard first.isKeyframe else {
                return .failure(
                    GivenSegmentProblem(
                        detail: "segment \(number) (offset \(segment.offset)) does not start with a keyframe on PID "
                            + "\(pid): fragmented MP4 needs every segment to start on one; serve the file as TS"))
            }
            let timeline: TSTimeline
            let ticks: Int64
            if let previous, let base {
                let step = previous.pts.distance(to: pts)
                if step > 0, !StreamSummary.isReset(step) {
                    ticks = previous.ticks + step
                } else {
                    ticks = previous.ticks + Int64((previous.duration * 90_000).rounded())
                    resets.insert(segment.offset)
                }
                timeline = TSTimeline(anchor: pts, anchorTime: base.anchorTime + ticks)
            } else {
                let start = probe.firstPTS ?? pts
                let made = TSTimeline(firstTimestamp: start)
                base = made
                ticks = start.distance(to: pts)
                timeline = TSTimeline(anchor: pts, anchorTime: made.anchorTime + ticks)
            }
            timelines[segment.offset] = timeline
            previous = (pts, ticks, segment.duration)
        }
        return .success((timelines, resets))
    }

    /// How far each track's decode times move in the range (between time stamp resets) of segment `number`, by
    /// PID, so that each track's first sample after a reset starts where its last sample before it ended (the
    /// index's reckoning of the video, or given durations, are close but not exact, and the audio of the two sides
    /// overlaps or leaves a gap). Found once per range by making the two segments either side of the reset.
    func trackShifts(
        number: Int, segments list: [PlannedSegment], _ presentation: FragmentedPresentation, fileSize: UInt64
    ) throws -> [UInt16: Int64] {
        let resets = discontinuities
        guard !resets.isEmpty, number < list.count else { return [:] }
        var first = number
        while first > 0, !resets.contains(list[first].offset) { first -= 1 }
        guard first > 0 else { return [:] }
        let reset = list[first].offset
        if let known = presentation.shifts.withLock({ $0[reset] }) { return known }
        let before = try trackShifts(number: first - 1, segments: list, presentation, fileSize: fileSize)
        guard let previousTimeline = timeline(at: list[first - 1].offset), let timeline = timeline(at: reset) else {
            return [:]
        }
        let resetList = resets.sorted()
        let configurations = presentation.configurations(resets: resetList)
        let range = FragmentedPresentation.Configurations.range(of: reset, resets: resetList)
        let previousCodecs = configurations.codecs(range: range - 1)
        let codecs = configurations.codecs(range: range)
        let previous = try presentation.makeFragments(
            list[first - 1], timeline: previousTimeline, fileSize: fileSize, shifts: before, codecs: previousCodecs)
        let current = try presentation.makeFragments(
            list[first], timeline: timeline, fileSize: fileSize, codecs: codecs)
        var shifts: [UInt16: Int64] = [:]
        for track in presentation.layout.tracks {
            guard let ended = previous[track.pid], let starts = current[track.pid], !ended.samples.isEmpty else {
                continue
            }
            var end = ended.samples.reduce(Int64(clamping: ended.baseMediaDecodeTime)) { $0 + Int64($1.duration) }
            // An audio track whose sample rate changes at the reset changes timescale with it.
            if let from = previousCodecs[track.pid]?.timescale, let to = codecs[track.pid]?.timescale, from != to,
                from > 0
            {
                end = end * Int64(to) / Int64(from)
            }
            shifts[track.pid] = end - Int64(clamping: starts.baseMediaDecodeTime)
        }
        presentation.shifts.withLock { $0[reset] = shifts }
        return shifts
    }

    /// The video's shift for an I-frame: that of the media segment that holds it, so that after a time stamp reset
    /// the I-frame's decode time is the one the same frame has in the video playlist.
    func iFrameShifts(
        _ frame: PlannedSegment, pid: UInt16, _ presentation: FragmentedPresentation, fileSize: UInt64
    ) throws -> [UInt16: Int64] {
        guard !discontinuities.isEmpty else { return [:] }
        let media = segments
        var low = 0
        var high = media.count
        while low < high {
            let middle = (low + high) / 2
            if media[middle].offset <= frame.offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return [:] }
        let shifts = try trackShifts(number: low - 1, segments: media, presentation, fileSize: fileSize)
        return shifts[pid].map { [pid: $0] } ?? [:]
    }

    /// The number in an init segment's name after `<name>-init`: 0 for nothing, n for `-n` (n ≥ 1, no leading zero).
    static func initNumber(_ suffix: Substring) -> Int? {
        if suffix.isEmpty { return 0 }
        guard suffix.first == "-", let number = Int(suffix.dropFirst()), number > 0, "-\(number)" == suffix else {
            return nil
        }
        return number
    }

    /// Answers the fragmented MP4 routes; nil for any other route.
    func respondFragmented(_ route: [String], _ presentation: FragmentedPresentation) -> HTTPResponse? {
        let complete = isIndexed || givenSegments != nil
        followParts(presentation)
        if route.count == 1 {
            let name = route[0]
            if name == "master.m3u8" {
                let fallback = probe.duration.map { $0 > 0 ? Double(probe.fileSize * 8) / $0 : 0 } ?? 0
                let text = presentation.multivariantPlaylist(
                    segments: segments, iFrames: iFrameSegments, details: codecDetails, fallbackBandwidth: fallback,
                    discontinuities: discontinuities)
                return .bytes(Array(text.utf8), contentType: Self.playlistType)
            }
            if name == "iframes.m3u8" {
                guard let frames = iFrameSegments,
                    let text = presentation.iFramePlaylist(frames: frames, discontinuities: discontinuities)
                else {
                    return .error(.notFound)
                }
                return .bytes(Array(text.utf8), contentType: Self.playlistType)
            }
            for track in presentation.layout.tracks {
                let base = presentation.playlistName(track)
                if name == base + ".m3u8" {
                    let text = presentation.mediaPlaylist(
                        for: track, segments: segments, complete: complete, discontinuities: discontinuities)
                    return .bytes(Array(text.utf8), contentType: Self.playlistType)
                }
                if name.hasPrefix(base + "-init"), name.hasSuffix(".mp4"),
                    let number = Self.initNumber(name.dropFirst(base.count + 5).dropLast(4))
                {
                    let configurations = presentation.configurations(resets: discontinuities.sorted())
                    guard let bytes = presentation.initSegment(track, number: number, configurations: configurations)
                    else { return .error(.notFound) }
                    return .bytes(bytes, contentType: track.isVideo ? "video/mp4" : "audio/mp4")
                }
            }
            return nil
        }
        guard let segment = FragmentedSegmentRoute(route) else { return nil }
        let (number, iFrame) = (segment.number, segment.iFrame)
        guard let track = presentation.track(of: segment) else { return nil }
        let list = iFrame ? (iFrameSegments ?? []) : segments
        guard number < list.count else { return .error(.notFound) }
        let planned = list[number]
        guard let timeline = timeline(at: planned.offset), let size = try? file.size() else {
            return .error(.notFound)
        }
        do {
            let shifts =
                iFrame
                ? try iFrameShifts(planned, pid: track.pid, presentation, fileSize: size)
                : try trackShifts(number: number, segments: list, presentation, fileSize: size)
            let resets = discontinuities.sorted()
            let codecs = presentation.configurations(resets: resets).codecs(
                range: FragmentedPresentation.Configurations.range(of: planned.offset, resets: resets))
            guard
                let made = try presentation.segment(
                    number: number, pid: track.pid, planned: planned, timeline: timeline, fileSize: size,
                    iFrame: iFrame, shifts: shifts, codecs: codecs)
            else { return .error(.notFound) }
            return presentation.response(made, track)
        } catch {
            return .error(.internalServerError)
        }
    }

    /// Answers a request for a fragmented MP4 segment: at once when it is in the cache (made ahead, or with the
    /// other tracks'); otherwise on `pool`, making it once however many ask for it at the same time, then making
    /// the next one there (a player asks for the segments in order).
    func answerSegment(
        _ segment: FragmentedSegmentRoute, _ presentation: FragmentedPresentation, on pool: BlockingPool,
        _ responder: HTTPResponder, _ answer: @escaping @Sendable () -> Void
    ) {
        // Parts found since the segment was made drop it (and what it was made with) first.
        followParts(presentation)
        if let made = presentation.madeResponse(segment) { return responder.respond(made) }
        guard presentation.making.start(segment.making, orWait: answer) else { return }
        pool.submit { [self] in
            answer()
            for waiter in presentation.making.finish(segment.making) { waiter() }
            makeAhead(after: segment, presentation)
        }
    }

    /// Makes every track's segment after `segment` into the presentation's cache, unless it is there, being made, or
    /// not listed yet: its request, which usually comes as soon as `segment` has arrived, then finds it made (or
    /// waits for this making) instead of waiting for all of it. Not for I-frame segments, which scrubbing asks for
    /// in any order.
    func makeAhead(after segment: FragmentedSegmentRoute, _ presentation: FragmentedPresentation) {
        guard !segment.iFrame else { return }
        let next = FragmentedSegmentRoute(playlist: segment.playlist, number: segment.number + 1)
        guard next.number < segments.count, presentation.making.start(next.making, orWait: nil) else { return }
        _ = respondFragmented(next.wildcardSegments, presentation)
        for waiter in presentation.making.finish(next.making) { waiter() }
    }

    /// A joined recording's later parts on other PIDs are read on the first part's: the presentation follows the
    /// parts the index has found so far (a change drops what was made with the parts known before).
    func followParts(_ presentation: FragmentedPresentation) {
        if givenSegments == nil, let index { presentation.follow(parts: index.parts, packetSize: index.packetSize) }
    }
}
