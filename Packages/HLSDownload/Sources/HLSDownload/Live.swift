import FileRange
import HLSPlaylist
import HTTPClient

/// Where the recording of a live playlist stands; kept in the task store so that a paused or interrupted
/// recording goes on where it stopped.
struct LiveState: Codable, Hashable, Sendable {
    /// The media sequence number of the next segment wanted; nil before the first poll.
    var nextSequence: UInt64?
    /// The local playlist's lines after its header, without line endings.
    var entries: [String] = []
    /// Seconds of media recorded.
    var duration: Double = 0
    /// Bytes recorded.
    var bytes: UInt64 = 0
    var segments = 0
    var targetDuration: UInt64 = 1
    var version: UInt64 = 3
    var independentSegments = false
    /// Local file names of keys and initialization sections, by URL (and byte range).
    var keyNames: [String: String] = [:]
    var mapNames: [String: String] = [:]
    /// The EXT-X-KEY and EXT-X-MAP lines in effect at the end of `entries`.
    var currentKey: String?
    var currentMap: String?
    /// Whether the next recorded segment follows a gap (segments missed or skipped).
    var pendingDiscontinuity = false

    /// The local playlist: an EVENT playlist while recording, a VOD playlist once finished.
    func playlist(finished: Bool) -> [UInt8] {
        var text = "#EXTM3U\n#EXT-X-VERSION:\(version)\n#EXT-X-TARGETDURATION:\(targetDuration)\n"
        text += "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:\(finished ? "VOD" : "EVENT")\n"
        if independentSegments { text += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        for entry in entries { text += entry + "\n" }
        if finished { text += "#EXT-X-ENDLIST\n" }
        return Array(text.utf8)
    }
}

/// One line rendered by the playlist writer, without its line ending.
private func render(_ tag: Tag) -> String {
    var text = String(decoding: Playlist(lines: [PlaylistLine(tag: tag)]).write(), as: UTF8.self)
    while text.last == "\n" || text.last == "\r" { text.removeLast() }
    return text
}

extension DownloadManager {
    /// Whether a task's variant playlist is live (no EXT-X-ENDLIST, not a VOD playlist).
    nonisolated static func isLive(_ sources: Sources) throws(DownloadError) -> Bool {
        guard let source = sources.media.first else { return false }
        let playlist = try Planner.parse(source)
        guard playlist.kind != .multivariant else { return false }
        let media = playlist.media(url: source.url)
        return !media.endList && media.playlistType != "VOD"
    }

    /// Records a live media playlist: polls it every target duration (half of it when nothing was new, RFC 8216bis
    /// §6.3.4), fetches new segments by media sequence number, rewrites `index.m3u8` as a growing EVENT playlist,
    /// and finishes it as a VOD playlist when EXT-X-ENDLIST appears or a limit of the task's options is reached.
    /// Segments that answer 404/410 (they left the window) are skipped and the gap is marked with a
    /// discontinuity, as are segments that left the window between two polls.
    nonisolated static func recordLive(
        manager: DownloadManager, record: TaskRecord, generation: Int, counters: TaskCounters, fetcher: Fetcher,
        folder: String, concurrency: Int, sources: Sources, lock: FileLock
    ) async throws {
        guard sources.media.count == 1, let source = sources.media.first else {
            throw DownloadError(
                .unsupported, "live recording of alternate renditions is not supported", url: record.url)
        }
        let id = record.id
        var state = record.live ?? LiveState()
        let maxDuration = record.options.maxDuration
        let maxBytes = record.options.maxBytes
        // Every write reserves its bytes against the budget first (one account for the segments in flight), so the
        // recording's files never pass it; a segment that would is not kept, and the recording ends before it.
        let fetcher = fetcher.budgeted(maxBytes)
        // Under a byte budget one resource at a time, in order: the first that would pass it is the one refused, and
        // nothing after it is fetched.
        let concurrency = maxBytes == nil ? concurrency : 1
        var text = source.text
        var fresh = record.live == nil
        var jobIndex = 0
        counters.values.withLock {
            $0.bytesDone = state.bytes
            $0.jobsDone = state.segments
            $0.jobsTotal = state.segments
        }
        guard await manager.setDownloading(id, generation: generation, jobs: state.segments) else { return }
        let gate = RequestGate(permits: concurrency)
        let report: @Sendable () async -> Void = { await manager.report(id, generation: generation, force: false) }
        while true {
            if !fresh { text = try await fetcher.fetchPlaylist(source.url) }
            fresh = false
            let playlist = try Planner.parse(SourcePlaylist(url: source.url, text: text, folder: ""))
            guard playlist.kind != .multivariant else {
                throw DownloadError(.invalidPlaylist, "expected a media playlist", url: source.url)
            }
            let media = playlist.media(url: source.url)
            // The next segment to fetch is one after the last recorded: sequence numbers must not reach 2^64 - 1
            // (the parser's wrap past it, or the addition, would trap).
            if let last = media.segments.last, last.mediaSequence < media.mediaSequence || last.mediaSequence == .max {
                throw DownloadError(
                    .invalidPlaylist, "media sequence numbers run past \(UInt64.max - 1)", url: source.url)
            }
            state.targetDuration = max(state.targetDuration, media.targetDuration ?? 1)
            state.version = max(state.version, media.version ?? 3)
            state.independentSegments = state.independentSegments || media.independentSegments
            var wanted = media.segments.filter { $0.mediaSequence >= (state.nextSequence ?? 0) }
            if let next = state.nextSequence, let first = wanted.first, first.mediaSequence > next {
                // Segments left the window before they were seen.
                state.pendingDiscontinuity = true
            }
            // Within the limits: the segment that reaches a limit is the last one.
            var planned = state
            var cut = wanted.count
            for (k, segment) in wanted.enumerated() {
                planned.duration += segment.duration
                if let maxDuration, planned.duration >= maxDuration {
                    cut = k + 1
                    break
                }
            }
            wanted = Array(wanted.prefix(cut))

            // Jobs: new keys and maps, then the segments, each into its own file named by sequence number.
            var jobs: [Job] = []
            var segmentJobs: [Int?] = []
            // How many jobs a segment needs done (its keys and map come before it): `jobsThrough[k]`.
            var jobsThrough: [Int] = []
            for segment in wanted {
                defer { jobsThrough.append(jobs.count) }
                for key in segment.keys where key.method != "NONE" {
                    guard key.keyFormat == "identity" else {
                        throw DownloadError(.unsupported, "key format '\(key.keyFormat)' cannot be recorded")
                    }
                    guard let url = key.uri, Self.isHTTP(url) else {
                        throw DownloadError(.keyUnavailable, "the key is not at an http(s) URL", url: key.uri)
                    }
                    if state.keyNames[url] == nil {
                        let name = "key\(state.keyNames.count).key"
                        state.keyNames[url] = name
                        jobs.append(Job(kind: .key, url: url, path: name, expectTS: false, mayStrip: false))
                    }
                }
                if let map = segment.map {
                    let mapKey = Self.mapKey(map)
                    if state.mapNames[mapKey] == nil {
                        var ext = Planner.pathExtension(map.uri)
                        if ext.isEmpty { ext = "mp4" }
                        let name = "init\(state.mapNames.count).\(ext)"
                        state.mapNames[mapKey] = name
                        jobs.append(
                            Job(
                                kind: .map, url: map.uri, rangeOffset: map.byteRange?.offset,
                                rangeLength: map.byteRange?.length, path: name, expectTS: false, mayStrip: false))
                    }
                }
                if segment.gap {
                    segmentJobs.append(nil)
                    continue
                }
                var ext = Planner.pathExtension(segment.uri)
                if ext.isEmpty { ext = "ts" }
                let expectTS =
                    segment.keys.allSatisfy { $0.method == "NONE" } && segment.map == nil
                    && !Planner.nonTSExtensions.contains(ext)
                segmentJobs.append(jobs.count)
                jobs.append(
                    Job(
                        kind: .segment, url: segment.uri, rangeOffset: segment.byteRange?.offset,
                        rangeLength: segment.byteRange?.length,
                        path: "seg" + Self.sequenceName(segment.mediaSequence)
                            + "." + ext, expectTS: expectTS && segment.byteRange == nil,
                        mayStrip: segment.byteRange == nil))
            }
            counters.values.withLock { $0.jobsTotal += jobs.count }
            let base = jobIndex
            jobIndex += jobs.count
            let (missing, overBudget) = try await Self.fetchAll(
                jobs, base: base, folder: folder, fetcher: fetcher, counters: counters, gate: gate,
                concurrency: concurrency, lock: lock, report: report)

            // The local playlist grows by the segments fetched, in order, up to the byte limit (files fetched
            // past it are removed).
            var overLimit = false
            let firstOver = overBudget.min()
            for (k, segment) in wanted.enumerated() {
                let unaffordable = firstOver.map { $0 < jobsThrough[k] } ?? false
                if !overLimit, unaffordable || (maxBytes.map { state.bytes >= $0 } ?? false) {
                    overLimit = true
                    cut = k
                }
                if overLimit {
                    if let j = segmentJobs[k], let size = Files.size(folder + "/" + jobs[j].path), lock.isHeld {
                        counters.add(-Int64(size))
                        Files.remove(folder + "/" + jobs[j].path)
                    }
                    continue
                }
                guard let j = segmentJobs[k] else {
                    state.pendingDiscontinuity = true
                    continue
                }
                if missing.contains(j) {
                    state.pendingDiscontinuity = true
                    continue
                }
                try Self.append(segment, job: jobs[j], folder: folder, to: &state)
            }
            if let last = wanted.prefix(cut).last {
                state.nextSequence = last.mediaSequence + 1
            } else if state.nextSequence == nil {
                state.nextSequence = media.mediaSequence
            }
            let reachedLimit =
                (maxDuration.map { state.duration >= $0 } ?? false) || (maxBytes.map { state.bytes >= $0 } ?? false)
            let ended = reachedLimit || overLimit || (media.endList && cut == wanted.count)
            if ended {
                let bytes = state.playlist(finished: true)
                try await BlockingPool.shared.run { () throws(DownloadError) -> Void in
                    try lock.ensureHeld()
                    try Files.writeAtomically(bytes, to: folder + "/index.m3u8")
                }
                _ = await manager.setLive(id, generation: generation, state)
                await manager.finish(id, generation: generation, error: nil, playlist: "index.m3u8")
                return
            }
            if !wanted.isEmpty {
                let bytes = state.playlist(finished: false)
                try await BlockingPool.shared.run { () throws(DownloadError) -> Void in
                    try lock.ensureHeld()
                    try Files.writeAtomically(bytes, to: folder + "/index.m3u8")
                }
            }
            guard await manager.setLive(id, generation: generation, state) else { return }
            await manager.report(id, generation: generation, force: true)
            let wait = Double(state.targetDuration) * (wanted.isEmpty ? 0.5 : 1)
            try await fetcher.clock.sleep(seconds: wait)
        }
    }

    /// Appends a fetched segment to the local playlist, with the tags that changed since the previous one.
    private nonisolated static func append(
        _ segment: MediaSegment, job: Job, folder: String, to state: inout LiveState
    ) throws(DownloadError) {
        if segment.discontinuity || state.pendingDiscontinuity, !state.entries.isEmpty {
            state.entries.append("#EXT-X-DISCONTINUITY")
        }
        let startsRun = state.entries.isEmpty || segment.discontinuity || state.pendingDiscontinuity
        state.pendingDiscontinuity = false
        var keyLine = "#EXT-X-KEY:METHOD=NONE"
        if let key = segment.keys.first(where: { $0.method != "NONE" }), let url = key.uri,
            let name = state.keyNames[url]
        {
            var attributes = key.attributes
            attributes.setQuoted("URI", name)
            keyLine = render(.attributes(.key, attributes))
        }
        if keyLine != (state.currentKey ?? "#EXT-X-KEY:METHOD=NONE") {
            state.entries.append(keyLine)
        }
        state.currentKey = keyLine
        if let map = segment.map, let name = state.mapNames[Self.mapKey(map)] {
            var attributes = AttributeList()
            attributes.setQuoted("URI", name)
            let mapLine = render(.attributes(.map, attributes))
            if mapLine != state.currentMap || startsRun {
                state.entries.append(mapLine)
                state.currentMap = mapLine
            }
        }
        if startsRun, let date = segment.programDateTime {
            state.entries.append("#EXT-X-PROGRAM-DATE-TIME:\(date.text)")
        }
        let title = segment.title.utf8.allSatisfy { $0 != 0x0A && $0 != 0x0D } ? segment.title : ""
        state.entries.append("#EXTINF:\(Self.formatDuration(segment.duration)),\(title)")
        state.entries.append(job.path)
        let size = Files.size(folder + "/" + job.path) ?? 0
        state.bytes += size
        state.duration += segment.duration
        state.segments += 1
        // An EXTINF may say anything (10^40 s, or infinity): one past whole seconds in a UInt64 leaves the target.
        let needed = segment.duration.rounded()
        if needed > Double(state.targetDuration), let seconds = UInt64(exactly: needed) {
            state.targetDuration = seconds
        }
    }

    /// Fetches `jobs` with bounded concurrency (files already in place are kept); returns the indices of segments
    /// that answered 404/410.
    private nonisolated static func fetchAll(
        _ jobs: [Job], base: Int, folder: String, fetcher: Fetcher, counters: TaskCounters, gate: RequestGate,
        concurrency: Int, lock: FileLock, report: @escaping @Sendable () async -> Void
    ) async throws -> (missing: Set<Int>, overBudget: Set<Int>) {
        var missing: Set<Int> = []
        var overBudget: Set<Int> = []
        var pending: [Int] = []
        for (k, job) in jobs.enumerated() {
            if let size = Files.size(folder + "/" + job.path) {
                counters.values.withLock {
                    $0.bytesDone += size
                    $0.knownSizes[base + k] = size
                    $0.jobsDone += 1
                }
            } else {
                pending.append(k)
            }
        }
        // One at a time stays in order (a queue of tasks would race for the one request slot).
        let limit = concurrency <= 1 ? 1 : concurrency * 3
        /// How a job ended: fetched, gone from the origin (404/410), or refused by the task's byte budget.
        enum Ending: Sendable { case fetched, gone, overBudget }
        try await withThrowingTaskGroup(of: (Int, Ending).self) { group in
            var next = 0
            func add() {
                // Past the budget nothing more is started: the recording ends before the first refused job.
                guard next < pending.count, overBudget.isEmpty else { return }
                let k = pending[next]
                next += 1
                let job = jobs[k]
                group.addTask {
                    do {
                        _ = try await fetcher.fetch(
                            job, index: base + k, folder: folder, counters: counters, gate: gate, lock: lock,
                            report: report)
                        return (k, .fetched)
                    } catch let error as DownloadError where error.code == .notFound && job.kind == .segment {
                        return (k, .gone)
                    } catch let error as DownloadError where error.code == .overBudget {
                        // Its partial file is already removed; the recording ends before it.
                        return (k, .overBudget)
                    }
                }
            }
            for _ in 0..<limit { add() }
            while let (k, ending) = try await group.next() {
                counters.values.withLock { $0.jobsDone += 1 }
                if ending == .gone { missing.insert(k) }
                if ending == .overBudget { overBudget.insert(k) }
                await report()
                add()
            }
        }
        return (missing, overBudget)
    }

    private nonisolated static func isHTTP(_ url: String) -> Bool {
        let scheme = URIReference(url).scheme?.lowercased()
        return scheme == "http" || scheme == "https"
    }

    private nonisolated static func mapKey(_ map: MediaInitialization) -> String {
        map.uri + (map.byteRange.map { "#\($0.offset)-\($0.length)" } ?? "")
    }

    /// A media sequence number as a file-name part: at least 5 digits.
    nonisolated static func sequenceName(_ sequence: UInt64) -> String {
        let text = String(sequence)
        return text.count >= 5 ? text : String(repeating: "0", count: 5 - text.count) + text
    }

    /// A duration for EXTINF: up to 6 decimals, trailing zeros dropped.
    nonisolated static func formatDuration(_ seconds: Double) -> String {
        let micro = (max(0, seconds) * 1_000_000).rounded()
        guard micro < 1e15 else { return "0" }
        let whole = UInt64(micro) / 1_000_000
        var fraction = String(UInt64(micro) % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole).0" : "\(whole).\(fraction)"
    }
}
