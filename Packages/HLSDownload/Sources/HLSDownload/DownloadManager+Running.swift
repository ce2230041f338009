// DownloadManager's runner lifecycle: the queue, a task's run off the actor (prepare, fetch, assemble, playlists),
// and the actor-side records of its progress and end.
import FileRange
import Foundation
import HLSPlaylist
import HTTPClient

extension DownloadManager {
    func schedule() {
        var slots = configuration.maxConcurrentTasks - running.count
        guard slots > 0 else { return }
        for record in records.values.sorted(by: { $0.order < $1.order }) where record.state == .ready {
            guard slots > 0 else { break }
            if start(record.id) { slots -= 1 }
        }
    }

    /// Starts a queued task, taking its lock first when this process does not hold it yet; false when another
    /// process holds it (it is not this one's to run) or it is no longer queued.
    func start(_ id: String) -> Bool {
        if locks[id]?.isHeld != true {
            do {
                try acquire(id, patient: false)
                guard try refresh(id), records[id]?.state == .ready else {
                    releaseLock(id)
                    return false
                }
            } catch {
                releaseLock(id)
                return false
            }
        }
        guard let lock = locks[id], var record = records[id] else { return false }
        Self.ensureReserve(storeRoot)
        generation += 1
        let generation = generation
        record.state = .starting
        records[record.id] = record
        try? save(id)
        writeStatus(id)
        emit(record, force: true)
        let counters = TaskCounters()
        counters.values.withLock { $0.bytesDone = 0 }
        let fetcher = Fetcher(
            url: record.url, options: record.options, configuration: configuration, transport: transport,
            clock: clock)
        let folder = storeRoot + "/" + record.folder
        let concurrency = max(1, record.options.maxConcurrentRequests ?? configuration.maxConcurrentRequests)
        let skipMissing = record.options.skipMissingSegments
        let id = record.id
        let task = Task {
            await Self.execute(
                manager: self, record: record, generation: generation, counters: counters, fetcher: fetcher,
                folder: folder, concurrency: concurrency, skipMissing: skipMissing, lock: lock)
        }
        running[id] = (generation, task, counters)
        return true
    }

    /// The body of a running task, off the actor: prepare, fetch every missing file, assemble, write playlists.
    nonisolated static func execute(
        manager: DownloadManager, record: TaskRecord, generation: Int, counters: TaskCounters, fetcher: Fetcher,
        folder: String, concurrency: Int, skipMissing: Bool, lock: FileLock
    ) async {
        let id = record.id
        do {
            var sources = record.sources
            if sources == nil {
                let prepared = try await Self.prepare(record, fetcher: fetcher)
                sources = prepared
                guard await manager.setSources(id, generation: generation, prepared) else { return }
            }
            guard let sources else { return }
            if try Self.isLive(sources) {
                try await Self.recordLive(
                    manager: manager, record: record, generation: generation, counters: counters, fetcher: fetcher,
                    folder: folder, concurrency: concurrency, sources: sources, lock: lock)
                return
            }
            var skipped = Set(record.skipped)
            let plan = try Planner.plan(sources, skipped: skipped)
            guard await manager.setDownloading(id, generation: generation, jobs: plan.jobs.count) else { return }
            // What is already on disk counts as done.
            var pending: [Int] = []
            let assembled = Set(plan.assemblies.filter { Files.exists(folder + "/" + $0.path) }.flatMap(\.pieces))
            for (index, job) in plan.jobs.enumerated() {
                let path = folder + "/" + job.path
                if let size = Files.size(path) {
                    // A run killed right after the rename leaves them.
                    if lock.isHeld { Files.removeLeftovers(of: path) }
                    counters.values.withLock {
                        $0.bytesDone += size
                        $0.knownSizes[index] = size
                        $0.jobsDone += 1
                    }
                } else if assembled.contains(job.path) {
                    let size = job.rangeLength ?? 0
                    counters.values.withLock {
                        $0.bytesDone += size
                        $0.knownSizes[index] = size
                        $0.jobsDone += 1
                    }
                } else if skipped.contains(Self.skipKey(job)) {
                    counters.values.withLock {
                        $0.knownSizes[index] = 0
                        $0.jobsDone += 1
                    }
                } else {
                    if let partial = Files.size(path + ".part") {
                        counters.values.withLock { $0.bytesDone += partial }
                    }
                    if let length = job.rangeLength {
                        counters.values.withLock { $0.knownSizes[index] = length }
                    }
                    pending.append(index)
                }
            }
            counters.values.withLock { $0.jobsTotal = plan.jobs.count }
            await manager.report(id, generation: generation, force: true)
            let gate = RequestGate(permits: concurrency)
            let report: @Sendable () async -> Void = { await manager.report(id, generation: generation, force: false) }
            // A VOD download holds to the task's byte budget on every write.
            let fetcher = fetcher.budgeted(record.options.maxBytes)
            try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                var next = 0
                func add() {
                    guard next < pending.count else { return }
                    let index = pending[next]
                    next += 1
                    let job = plan.jobs[index]
                    group.addTask {
                        do {
                            _ = try await fetcher.fetch(
                                job, index: index, folder: folder, counters: counters, gate: gate, lock: lock,
                                report: report)
                            return (index, false)
                        } catch let error as DownloadError
                            where error.code == .notFound && skipMissing && job.kind == .segment
                        {
                            return (index, true)
                        }
                    }
                }
                // More jobs than request slots: the extra ones flush and check finished files meanwhile.
                for _ in 0..<(concurrency + max(16, 2 * concurrency)) { add() }
                while let (index, wasSkipped) = try await group.next() {
                    counters.values.withLock { $0.jobsDone += 1 }
                    if wasSkipped {
                        skipped.insert(Self.skipKey(plan.jobs[index]))
                        await manager.addSkipped(id, generation: generation, Self.skipKey(plan.jobs[index]))
                    }
                    await report()
                    add()
                }
            }
            let final = try Planner.plan(sources, skipped: skipped)
            // Assembling, writing the playlists and flushing block: FileRange's pool, off the cooperative threads.
            try await BlockingPool.shared.run { [assemblies = plan.assemblies] () throws(DownloadError) -> Void in
                for assembly in assemblies {
                    try lock.ensureHeld()
                    try Fetcher.assemble(assembly, folder: folder)
                }
                for playlist in final.playlists {
                    try lock.ensureHeld()
                    try Files.writeAtomically(playlist.bytes, to: folder + "/" + playlist.path)
                }
                try lock.ensureHeld()
                Files.removeTree(folder + "/.pieces")
                Files.syncDirectory(folder)
            }
            let main = final.playlists.contains { $0.path == "master.m3u8" } ? "master.m3u8" : "index.m3u8"
            await manager.finish(id, generation: generation, error: nil, playlist: main)
        } catch is CancellationError {
            return
        } catch let error as DownloadError {
            await manager.finish(id, generation: generation, error: error, playlist: nil)
        } catch {
            if Task.isCancelled { return }
            await manager.finish(
                id, generation: generation, error: DownloadError(.transport, "\(error)"), playlist: nil)
        }
    }

    static func skipKey(_ job: Job) -> String {
        job.rangeOffset.map { job.url + "#" + String($0) } ?? job.url
    }

    /// Fetches the playlists of a task and chooses its variant and renditions.
    static func prepare(_ record: TaskRecord, fetcher: Fetcher) async throws -> Sources {
        let top = try await fetcher.fetchFirstPlaylist(record.url)
        let topSource = SourcePlaylist(url: record.url, text: top, folder: "")
        let playlist = try Planner.parse(topSource)
        guard playlist.kind == .multivariant else {
            return Sources(multivariant: nil, variantLine: nil, media: [topSource], renditionLines: [])
        }
        let info = playlist.multivariant(url: record.url)
        guard let index = Selection.variantIndex(info.variants, policy: record.options.variant) else {
            throw DownloadError(.noVariant, "no variant matches '\(record.options.variant)'", url: record.url)
        }
        let variant = info.variants[index]
        let variantText = try await fetcher.fetchPlaylist(variant.uri)
        var media = [SourcePlaylist(url: variant.uri, text: variantText, folder: "")]
        var lines: [Int] = []
        let chosen =
            Selection.renditionIndices(
                info.renditions, type: "AUDIO", groupID: variant.audio, policy: record.options.audio)
            + Selection.renditionIndices(
                info.renditions, type: "SUBTITLES", groupID: variant.subtitles, policy: record.options.subtitles)
        for (n, r) in chosen.enumerated() {
            let rendition = info.renditions[r]
            guard let uri = rendition.uri else { continue }
            let text = try await fetcher.fetchPlaylist(uri)
            media.append(SourcePlaylist(url: uri, text: text, folder: rendition.type.lowercased() + String(n)))
            lines.append(rendition.lineIndex)
        }
        return Sources(multivariant: topSource, variantLine: variant.lineIndex, media: media, renditionLines: lines)
    }

    func isCurrent(_ id: String, _ generation: Int) -> Bool {
        running[id]?.generation == generation
    }

    func setSources(_ id: String, generation: Int, _ sources: Sources) -> Bool {
        guard isCurrent(id, generation), var record = records[id] else { return false }
        record.sources = sources
        records[id] = record
        do {
            try save(id)
        } catch {
            finish(id, generation: generation, error: error, playlist: nil)
            return false
        }
        return true
    }

    func setDownloading(_ id: String, generation: Int, jobs: Int) -> Bool {
        guard isCurrent(id, generation), var record = records[id] else { return false }
        record.state = .downloading
        record.filesTotal = jobs
        records[id] = record
        try? save(id)
        writeStatus(id)
        emit(record, force: true)
        return true
    }

    /// Records the progress of a live recording.
    func setLive(_ id: String, generation: Int, _ state: LiveState) -> Bool {
        guard isCurrent(id, generation), var record = records[id] else { return false }
        record.live = state
        records[id] = record
        try? save(id)
        return true
    }

    func addSkipped(_ id: String, generation: Int, _ key: String) {
        guard isCurrent(id, generation), var record = records[id] else { return }
        record.skipped.append(key)
        records[id] = record
        try? save(id)
    }

    func report(_ id: String, generation: Int, force: Bool) {
        guard let run = running[id], run.generation == generation, var record = records[id] else { return }
        let values = run.counters.values.withLock { $0 }
        record.bytesDone = values.bytesDone
        record.filesDone = values.jobsDone
        record.filesTotal = values.jobsTotal
        let estimate = run.counters.estimate
        record.bytesTotal = estimate.total
        records[id] = record
        let now = clock.now()
        var list = samples[id] ?? []
        list.append((now, values.bytesDone))
        while let first = list.first, now - first.time > 3, list.count > 2 { list.removeFirst() }
        samples[id] = list
        emit(record, force: force)
    }

    func finish(_ id: String, generation: Int, error: DownloadError?, playlist: String?) {
        guard let run = running[id], run.generation == generation, var record = records[id] else { return }
        running.removeValue(forKey: id)
        let values = run.counters.values.withLock { $0 }
        record.bytesDone = values.bytesDone
        record.filesDone = values.jobsDone
        if let error {
            record.error = error
            record.state = error.code == .diskFull ? .paused : .stopped
        } else {
            record.state = .completed
            record.error = nil
            record.playlist = playlist
            record.bytesTotal = values.bytesDone
        }
        records[id] = record
        samples[id] = nil
        do {
            try save(id)
        } catch  where error.code == .diskFull {
            // Make room for the store: drop the partial files (finished files stay), then record the pause.
            if locks[id]?.isHeld == true { Self.removePartials(storeRoot + "/" + record.folder) }
            do {
                try save(id)
            } catch {
                // Still no room: give up the space reserved for this moment.
                Files.remove(storeRoot + "/" + Self.reserveName)
                try? save(id)
            }
        } catch {}
        writeStatus(id)
        releaseLock(id)
        emit(record, force: true)
        resumeWaiters(record)
        schedule()
    }

    /// Removes the `.part` files (and their validators) under a task folder.
    static func removePartials(_ folder: String) {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return }
        var doomed: [String] = []
        while let name = walker.nextObject() as? String {
            if name.hasSuffix(".part") || name.hasSuffix(".validator") { doomed.append(folder + "/" + name) }
        }
        for path in doomed { Files.remove(path) }
    }
}
