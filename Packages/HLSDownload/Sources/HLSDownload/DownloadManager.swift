import FileRange
import Foundation
import HLSPlaylist

/// Downloads HLS streams for offline playback: a queue of tasks with bounded concurrency, a persistent task store,
/// resumable and verified transfers.
///
/// The store is one JSON file (`tasks.json`) in the store root, replaced atomically on every change; each task's
/// files live in a folder named after its id beside it. Tasks that were running when the process ended come back
/// `paused` (or `ready` when ``DownloadManagerConfiguration/resumeInterruptedTasks`` is set), and resuming fetches
/// only what is missing.
public actor DownloadManager {
    /// The folder that holds the task store and the task folders.
    public nonisolated let storeRoot: String
    /// Task-info updates: every state change, and progress at most every
    /// ``DownloadManagerConfiguration/eventInterval`` per task.
    public nonisolated let events: AsyncStream<DownloadTaskInfo>

    private let configuration: DownloadManagerConfiguration
    private let transport: any DownloadTransport
    private let clock: any DownloadClock
    private let eventContinuation: AsyncStream<DownloadTaskInfo>.Continuation
    private var records: [String: TaskRecord] = [:]
    private var nextOrder = 0
    private var running: [String: (generation: Int, task: Task<Void, Never>, counters: TaskCounters)] = [:]
    private var generation = 0
    private var samples: [String: [(time: Double, bytes: UInt64)]] = [:]
    private var lastEvent: [String: Double] = [:]
    private var waiters: [String: [CheckedContinuation<DownloadTaskInfo, Never>]] = [:]

    static let storeName = "tasks.json"
    /// A small file kept beside the store so that a pause on a full disk can still be recorded.
    static let reserveName = ".reserve"

    /// Creates the reserve file when it is missing (best effort).
    private static func ensureReserve(_ root: String) {
        let path = root + "/" + reserveName
        guard !Files.exists(path) else { return }
        try? Files.writeAtomically([UInt8](repeating: 0, count: 256 << 10), to: path)
    }

    /// Opens (creating) the store in `storeRoot` and loads its tasks. Nothing starts until a task is created or
    /// resumed, or ``startQueue()`` is called.
    public init(
        storeRoot: String, configuration: DownloadManagerConfiguration = DownloadManagerConfiguration(),
        transport: (any DownloadTransport)? = nil, clock: any DownloadClock = SystemDownloadClock()
    ) throws(DownloadError) {
        var root = storeRoot
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        self.storeRoot = root
        self.configuration = configuration
        self.transport =
            transport
            ?? SocketTransport(
                stallTimeout: configuration.stallTimeout, maxRedirects: configuration.maxRedirects,
                fallback: URLSessionTransport(
                    stallTimeout: configuration.stallTimeout, maxRedirects: configuration.maxRedirects,
                    maxConnectionsPerHost: max(
                        16, configuration.maxConcurrentRequests * configuration.maxConcurrentTasks)))
        self.clock = clock
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        try Files.makeDirectories(root)
        Self.ensureReserve(root)
        let path = root + "/" + Self.storeName
        if Files.exists(path) {
            let bytes = try Files.read(path)
            let document: StoreDocument
            do {
                document = try JSONDecoder().decode(StoreDocument.self, from: Data(bytes))
            } catch {
                throw DownloadError(.fileSystem, "the task store cannot be read: \(error)", path: path)
            }
            nextOrder = document.nextOrder
            for var record in document.tasks {
                if record.state.isRunning {
                    record.state = configuration.resumeInterruptedTasks ? .ready : .paused
                }
                records[record.id] = record
            }
        }
    }

    // MARK: Tasks

    /// Creates a task, or returns the existing one with that id. Without an id, one is derived from the URL and
    /// the selection, so the same request finds the same task. With `start`, the task is queued at once.
    @discardableResult
    public func createTask(
        id: String? = nil, url: String, metadata: [String: String] = [:],
        options: DownloadOptions = DownloadOptions(), start: Bool = true
    ) throws(DownloadError) -> DownloadTaskInfo {
        let reference = URIReference(url)
        guard let scheme = reference.scheme?.lowercased(), scheme == "http" || scheme == "https",
            reference.authority?.isEmpty == false
        else {
            throw DownloadError(.invalidURL, "not an absolute http(s) URL", url: url)
        }
        let taskID = id ?? Self.stableID(url: url, options: options)
        guard Self.isValidID(taskID) else {
            throw DownloadError(
                .invalidURL, "a task id is 1-64 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        if let existing = records[taskID] { return info(existing) }
        let record = TaskRecord(
            id: taskID, url: url, order: nextOrder, createdAt: Date().timeIntervalSince1970, metadata: metadata,
            options: options, folder: taskID, state: start ? .ready : .notReady, error: nil, sources: nil,
            skipped: [], bytesDone: 0, bytesTotal: nil, filesDone: 0, filesTotal: 0, playlist: nil, live: nil)
        nextOrder += 1
        records[taskID] = record
        try Files.makeDirectories(storeRoot + "/" + taskID)
        BackupExclusion.exclude(storeRoot + "/" + taskID)
        try save()
        emit(record, force: true)
        schedule()
        return info(record)
    }

    /// The id a task gets when none is given: a hash of the URL and the selection.
    public static func stableID(url: String, options: DownloadOptions) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (url + "\n" + options.selectionKey).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func isValidID(_ id: String) -> Bool {
        guard (1...64).contains(id.utf8.count), id.first != "." else { return false }
        return id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E
                || b == 0x5F || b == 0x2D
        }
    }

    /// Queues a paused, stopped or not-ready task, and starts a queued one when a slot is free (a completed task
    /// stays completed).
    public func resume(_ id: String) throws(DownloadError) {
        guard var record = records[id] else { throw Self.noSuchTask(id) }
        switch record.state {
        case .notReady, .paused, .stopped:
            record.state = .ready
            record.error = nil
            records[id] = record
            try save()
            emit(record, force: true)
            schedule()
        case .ready:
            // Queued (perhaps by a process that ended before starting it): start it when a slot is free.
            schedule()
        default:
            return
        }
    }

    /// Pauses a task: a running one is interrupted (what is written stays), a queued one leaves the queue.
    public func pause(_ id: String) throws(DownloadError) {
        guard var record = records[id] else { throw Self.noSuchTask(id) }
        switch record.state {
        case .ready, .starting, .downloading, .notReady:
            if let run = running.removeValue(forKey: id) {
                run.task.cancel()
                record.bytesDone = run.counters.values.withLock { $0.bytesDone }
            }
            record.state = .paused
            records[id] = record
            try save()
            emit(record, force: true)
            resumeWaiters(record)
            schedule()
        default:
            return
        }
    }

    /// Pauses every running or queued task (for a clean shutdown).
    public func pauseAll() throws(DownloadError) {
        for id in records.keys.sorted() where records[id]?.state != .completed && records[id]?.state != .stopped {
            try pause(id)
        }
    }

    /// Deletes a task and its files.
    public func delete(_ id: String) throws(DownloadError) {
        guard let record = records.removeValue(forKey: id) else { throw Self.noSuchTask(id) }
        if let run = running.removeValue(forKey: id) { run.task.cancel() }
        Files.removeTree(storeRoot + "/" + record.folder)
        try save()
        var gone = record
        gone.state = .stopped
        gone.error = DownloadError(.fileSystem, "deleted")
        resumeWaiters(gone)
        schedule()
    }

    /// Starts queued (`ready`) tasks while slots are free.
    public func startQueue() {
        schedule()
    }

    /// One task's info.
    public func task(_ id: String) -> DownloadTaskInfo? {
        records[id].map(info)
    }

    /// Every task, in creation order.
    public func allTasks() -> [DownloadTaskInfo] {
        records.values.sorted { $0.order < $1.order }.map(info)
    }

    /// The running tasks, in creation order.
    public func downloadingTasks() -> [DownloadTaskInfo] {
        allTasks().filter { $0.state.isRunning }
    }

    /// The completed tasks, in creation order.
    public func completedTasks() -> [DownloadTaskInfo] {
        allTasks().filter { $0.state == .completed }
    }

    /// Waits until the task is completed, stopped, paused or deleted, and returns its info then.
    public func waitUntilSettled(_ id: String) async -> DownloadTaskInfo? {
        guard let record = records[id] else { return nil }
        if Self.isSettled(record.state) { return info(record) }
        return await withCheckedContinuation { continuation in
            waiters[id, default: []].append(continuation)
        }
    }

    /// The task's output folder (absolute).
    public nonisolated func folder(forTask id: String) -> String { storeRoot + "/" + id }

    /// The local playlist of a completed task (absolute path), for a player or a loopback server.
    public func playlistPath(forTask id: String) -> String? {
        guard let record = records[id], record.state == .completed, let playlist = record.playlist else { return nil }
        return storeRoot + "/" + record.folder + "/" + playlist
    }

    /// Concatenates a completed, unencrypted, TS-only task into one `.ts` file at `destination`.
    public func export(_ id: String, to destination: String) throws(DownloadError) {
        guard let record = records[id] else { throw Self.noSuchTask(id) }
        guard record.state == .completed, let sources = record.sources, let variant = sources.media.first else {
            throw DownloadError(.unsupported, "only completed tasks can be exported")
        }
        let playlist = try Planner.parse(
            SourcePlaylist(
                url: "file:///local/index.m3u8",
                text: String(decoding: try Files.read(storeRoot + "/" + record.folder + "/index.m3u8"), as: UTF8.self),
                folder: variant.folder))
        let media = playlist.media(url: "file:///local/index.m3u8")
        let writer = try FileWriter(path: destination + ".part", truncate: true)
        defer { writer.close() }
        for segment in media.segments {
            guard segment.keys.isEmpty, segment.map == nil else {
                throw DownloadError(.unsupported, "only unencrypted TS tasks can be exported")
            }
            if segment.gap { continue }
            let name = String(segment.uri.dropFirst("file:///local/".count))
            let path = storeRoot + "/" + record.folder + "/" + name
            let bytes: [UInt8]
            if let range = segment.byteRange {
                let streamer: FileStreamer
                do {
                    streamer = try FileStreamer(path: path)
                    defer { streamer.close() }
                    bytes = try streamer.read(at: range.offset, length: Int(clamping: range.length))
                } catch {
                    throw DownloadError(.fileSystem, "cannot read: \(error)", path: path)
                }
            } else {
                bytes = try Files.read(path, limit: 1 << 30)
            }
            try writer.write(bytes[...])
        }
        try writer.sync()
        writer.close()
        try Files.rename(destination + ".part", destination)
    }

    // MARK: Running

    private static func isSettled(_ state: DownloadState) -> Bool {
        state == .completed || state == .stopped || state == .paused || state == .notReady
    }

    private static func noSuchTask(_ id: String) -> DownloadError {
        DownloadError(.invalidURL, "no task with id '\(id)'")
    }

    private func schedule() {
        var slots = configuration.maxConcurrentTasks - running.count
        guard slots > 0 else { return }
        for record in records.values.sorted(by: { $0.order < $1.order }) where record.state == .ready {
            guard slots > 0 else { break }
            start(record)
            slots -= 1
        }
    }

    private func start(_ record: TaskRecord) {
        Self.ensureReserve(storeRoot)
        generation += 1
        let generation = generation
        var record = record
        record.state = .starting
        records[record.id] = record
        try? save()
        emit(record, force: true)
        let counters = TaskCounters()
        counters.values.withLock { $0.bytesDone = 0 }
        let fetcher = Fetcher(
            options: record.options, configuration: configuration, transport: transport, clock: clock)
        let folder = storeRoot + "/" + record.folder
        let concurrency = max(1, record.options.maxConcurrentRequests ?? configuration.maxConcurrentRequests)
        let skipMissing = record.options.skipMissingSegments
        let id = record.id
        let task = Task {
            await Self.execute(
                manager: self, record: record, generation: generation, counters: counters, fetcher: fetcher,
                folder: folder, concurrency: concurrency, skipMissing: skipMissing)
        }
        running[id] = (generation, task, counters)
    }

    /// The body of a running task, off the actor: prepare, fetch every missing file, assemble, write playlists.
    private nonisolated static func execute(
        manager: DownloadManager, record: TaskRecord, generation: Int, counters: TaskCounters, fetcher: Fetcher,
        folder: String, concurrency: Int, skipMissing: Bool
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
                    folder: folder, concurrency: concurrency, sources: sources)
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
                    Files.removeLeftovers(of: path)  // a run killed right after the rename leaves them
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
                                job, index: index, folder: folder, counters: counters, gate: gate, report: report)
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
            for assembly in plan.assemblies { try Fetcher.assemble(assembly, folder: folder) }
            let final = try Planner.plan(sources, skipped: skipped)
            for playlist in final.playlists {
                try Files.writeAtomically(playlist.bytes, to: folder + "/" + playlist.path)
            }
            Files.removeTree(folder + "/.pieces")
            Files.syncDirectory(folder)
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
        let top = try await fetcher.fetchPlaylist(record.url)
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

    private func isCurrent(_ id: String, _ generation: Int) -> Bool {
        running[id]?.generation == generation
    }

    func setSources(_ id: String, generation: Int, _ sources: Sources) -> Bool {
        guard isCurrent(id, generation), var record = records[id] else { return false }
        record.sources = sources
        records[id] = record
        do {
            try save()
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
        try? save()
        emit(record, force: true)
        return true
    }

    /// Records the progress of a live recording.
    func setLive(_ id: String, generation: Int, _ state: LiveState) -> Bool {
        guard isCurrent(id, generation), var record = records[id] else { return false }
        record.live = state
        records[id] = record
        try? save()
        return true
    }

    func addSkipped(_ id: String, generation: Int, _ key: String) {
        guard isCurrent(id, generation), var record = records[id] else { return }
        record.skipped.append(key)
        records[id] = record
        try? save()
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
            try save()
        } catch  where error.code == .diskFull {
            // Make room for the store: drop the partial files (finished files stay), then record the pause.
            Self.removePartials(storeRoot + "/" + record.folder)
            do {
                try save()
            } catch {
                // Still no room: give up the space reserved for this moment.
                Files.remove(storeRoot + "/" + Self.reserveName)
                try? save()
            }
        } catch {}
        emit(record, force: true)
        resumeWaiters(record)
        schedule()
    }

    private func resumeWaiters(_ record: TaskRecord) {
        guard let list = waiters.removeValue(forKey: record.id) else { return }
        let snapshot = info(record)
        for waiter in list { waiter.resume(returning: snapshot) }
    }

    private func emit(_ record: TaskRecord, force: Bool) {
        let now = clock.now()
        if !force, let last = lastEvent[record.id], now - last < configuration.eventInterval { return }
        lastEvent[record.id] = now
        eventContinuation.yield(info(record))
    }

    private func info(_ record: TaskRecord) -> DownloadTaskInfo {
        var speed = 0.0
        if let list = samples[record.id], let first = list.first, let last = list.last, last.time > first.time {
            speed = Double(last.bytes &- min(first.bytes, last.bytes)) / (last.time - first.time)
        }
        let total = record.bytesTotal
        var progress = 0.0
        if record.state == .completed {
            progress = 1
        } else if let total, total > 0 {
            progress = min(1, Double(record.bytesDone) / Double(total))
        }
        var eta: Double?
        if let total, speed > 0, total >= record.bytesDone, record.state.isRunning {
            eta = Double(total - record.bytesDone) / speed
        }
        let estimate = record.state != .completed && record.filesDone < record.filesTotal
        return DownloadTaskInfo(
            id: record.id, url: record.url, state: record.state, error: record.error, progress: progress,
            bytesDone: record.bytesDone, bytesTotal: total, totalIsEstimate: estimate, speed: speed, eta: eta,
            filesDone: record.filesDone, filesTotal: record.filesTotal, folder: storeRoot + "/" + record.folder,
            playlistPath: record.playlist.map { storeRoot + "/" + record.folder + "/" + $0 },
            metadata: record.metadata, createdAt: record.createdAt)
    }

    /// Removes the `.part` files (and their validators) under a task folder.
    private static func removePartials(_ folder: String) {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return }
        var doomed: [String] = []
        while let name = walker.nextObject() as? String {
            if name.hasSuffix(".part") || name.hasSuffix(".validator") { doomed.append(folder + "/" + name) }
        }
        for path in doomed { Files.remove(path) }
    }

    /// Writes the store atomically: temporary file, fsync, rename, fsync the folder.
    private func save() throws(DownloadError) {
        let document = StoreDocument(
            version: 1, nextOrder: nextOrder, tasks: records.values.sorted { $0.order < $1.order })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(document)
        } catch {
            throw DownloadError(.fileSystem, "cannot encode the task store: \(error)")
        }
        try Files.writeAtomically([UInt8](data), to: storeRoot + "/" + Self.storeName)
    }
}
