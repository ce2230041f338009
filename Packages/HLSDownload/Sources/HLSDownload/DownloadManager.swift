// Long file: the manager is one actor (queue, store, locks, control and runners); its parts share its state.
import FileRange
import Foundation
import HLSPlaylist
public import HTTPClient

/// Downloads HLS streams for offline playback: a queue of tasks with bounded concurrency, a persistent task store,
/// resumable and verified transfers.
///
/// The store is one JSON file (`tasks.json`) in the store root, replaced atomically on every change; each task's
/// files live in a folder named after its id beside it. Tasks that were running when the process ended come back
/// `paused` (or `ready` when ``DownloadManagerConfiguration/resumeInterruptedTasks`` is set), and resuming fetches
/// only what is missing.
///
/// Several processes may share a store. A task has one writer: the process that queues or runs it holds an advisory
/// lock on `.lock` in the task's folder (the kernel drops it when the process ends, so a crash never leaves it stale).
/// Another process's ``resume(_:)`` or ``createTask(id:url:metadata:options:start:)`` of that task throws
/// ``DownloadError/Code/locked`` naming the holder's PID and writes nothing; its ``pause(_:)`` and ``delete(_:)``
/// ask the holder through a control file (`.control`) and return once the holder has done it; its task infos carry
/// the holder's live progress, read from the status file (`.status.json`) the holder writes about once a second.
/// Changes to `tasks.json` are read-modify-write under a short lock on `.tasks.lock`, each process writing only the
/// tasks it holds.
public actor DownloadManager {
    /// The folder that holds the task store and the task folders.
    public nonisolated let storeRoot: String
    /// Task-info updates: every state change, and progress at most every
    /// ``DownloadManagerConfiguration/eventInterval`` per task.
    public nonisolated let events: AsyncStream<DownloadTaskInfo>

    private let configuration: DownloadManagerConfiguration
    private let transport: any HTTPTransport
    private let clock: any RetryClock
    private let eventContinuation: AsyncStream<DownloadTaskInfo>.Continuation
    private var records: [String: TaskRecord] = [:]
    private var nextOrder = 0
    private var running: [String: (generation: Int, task: Task<Void, Never>, counters: TaskCounters)] = [:]
    private var generation = 0
    private var samples: [String: [(time: Double, bytes: UInt64)]] = [:]
    private var lastEvent: [String: Double] = [:]
    private var waiters: [String: [CheckedContinuation<DownloadTaskInfo, Never>]] = [:]
    /// The locks of the tasks this process queues or runs.
    private var locks: [String: FileLock] = [:]
    /// Watches the control files of the tasks in `locks` and writes their status files, while there are any.
    private var watcher: Task<Void, Never>?

    static let storeName = "tasks.json"
    /// The store file's permissions: it holds the tasks' headers, credentials among them.
    static let storeFileMode: UInt16 = 0o600
    /// The permissions of a store root this creates.
    static let storeFolderMode: UInt16 = 0o700
    /// A small file kept beside the store so that a pause on a full disk can still be recorded.
    static let reserveName = ".reserve"
    /// The lock that makes a read-modify-write of the store safe between processes.
    static let storeLockName = ".tasks.lock"
    /// In a task's folder: the lock its runner holds, with the runner's PID.
    static let lockName = ".lock"
    /// In a task's folder: a request (`pause` or `delete`) from another process to the runner.
    static let controlName = ".control"
    /// In a task's folder: the runner's progress (``TaskStatus``).
    static let statusName = ".status.json"
    /// How long ``pause(_:)`` and ``delete(_:)`` wait for another process to carry out the request.
    static let answerTimeout: Duration = .seconds(5)

    /// Creates the reserve file when it is missing (best effort).
    private static func ensureReserve(_ root: String) {
        let path = root + "/" + reserveName
        guard !Files.exists(path) else { return }
        try? Files.writeAtomically([UInt8](repeating: 0, count: 256 << 10), to: path)
    }

    /// The default transport: the toolkit's client with the configuration's stall timeout (as its idle and
    /// connect timeouts), redirects, and enough https connections per host for every task's requests.
    static func client(_ configuration: DownloadManagerConfiguration) -> HTTPClient {
        var settings = HTTPClientConfiguration()
        settings.idleTimeout = configuration.stallTimeout
        settings.connectTimeout = configuration.stallTimeout
        settings.maxRedirects = configuration.maxRedirects
        settings.retry = configuration.retry
        settings.maxConnectionsPerHost = max(
            16, configuration.maxConcurrentRequests * configuration.maxConcurrentTasks)
        return HTTPClient(configuration: settings)
    }

    /// Opens (creating) the store in `storeRoot` and loads its tasks. Nothing starts until a task is created or
    /// resumed, or ``startQueue()`` is called.
    public init(
        storeRoot: String, configuration: DownloadManagerConfiguration = DownloadManagerConfiguration(),
        transport: (any HTTPTransport)? = nil, clock: any RetryClock = SystemRetryClock()
    ) throws(DownloadError) {
        var root = storeRoot
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        self.storeRoot = root
        self.configuration = configuration
        self.transport = transport ?? Self.client(configuration)
        self.clock = clock
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        // The store holds the tasks' request headers (bearer tokens, cookies): a root this creates is the user's
        // alone (0700), and the store file is 0600, also when an older version left it readable by others.
        try Files.makeDirectories(root, mode: Self.storeFolderMode)
        let storePath = root + "/" + Self.storeName
        if let mode = FileSystem.permissions(storePath), mode & 0o077 != 0 {
            try? FileSystem.setPermissions(storePath, Self.storeFileMode)
        }
        removeAtomicWriteLeftovers(in: root)
        Self.ensureReserve(root)
        if let document = try Self.readStore(root) {
            nextOrder = document.nextOrder
            for record in document.tasks {
                records[record.id] = Self.adopt(record, root: root, resume: configuration.resumeInterruptedTasks)
            }
        }
    }

    /// The store's document, or nil when there is none yet.
    private static func readStore(_ root: String) throws(DownloadError) -> StoreDocument? {
        let path = root + "/" + storeName
        guard Files.exists(path) else { return nil }
        let bytes = try Files.read(path)
        do {
            return try JSONDecoder().decode(StoreDocument.self, from: Data(bytes))
        } catch {
            throw DownloadError(
                .fileSystem,
                "the task store cannot be read (\(Self.describe(decoding: error))); repair it, or move it away to "
                    + "start an empty store", path: path)
        }
    }

    /// A JSON decoding failure in words, naming the field (`tasks[0].url is missing`), never the decoder's own text.
    static func describe(decoding error: any Error) -> String {
        guard let error = error as? DecodingError else { return "it is not a task store" }
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "it is not valid JSON" : "\(path(context.codingPath)) is not valid"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .typeMismatch(_, let context):
            return "\(path(context.codingPath)) has the wrong type"
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)) is null"
        @unknown default:
            return "it is not a task store"
        }
    }

    /// A stored record as this process sees it: one stored as running whose lock nobody else holds was interrupted
    /// (`heldHere`: this process holds it, so nobody else runs it).
    private static func adopt(_ stored: TaskRecord, root: String, resume: Bool, heldHere: Bool = false) -> TaskRecord {
        var record = stored
        if record.state.isRunning, heldHere || FileLock.holder(root + "/" + record.folder + "/" + lockName) == nil {
            record.state = resume ? .ready : .paused
        }
        return record
    }

    // MARK: Tasks

    /// Creates a task, or returns the existing one with that id. Without an id, one is derived from the URL and
    /// the selection, so the same request finds the same task. With `start`, the task is queued at once.
    ///
    /// Throws ``DownloadError/Code/locked`` when another process holds the lock of a task with that id.
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
        // Another process may have created it since this one read the store: its lock and the store decide.
        try acquire(taskID)
        if try refresh(taskID) {
            releaseLock(taskID)
            return info(records[taskID] ?? Self.placeholder(taskID))
        }
        let record = TaskRecord(
            id: taskID, url: url, order: nextOrder, createdAt: Date().timeIntervalSince1970, metadata: metadata,
            options: options, folder: taskID, state: start ? .ready : .notReady, error: nil, sources: nil,
            skipped: [], bytesDone: 0, bytesTotal: nil, filesDone: 0, filesTotal: 0, playlist: nil, live: nil)
        nextOrder += 1
        records[taskID] = record
        BackupExclusion.exclude(storeRoot + "/" + taskID)
        do {
            try save(taskID)
        } catch {
            records[taskID] = nil
            releaseLock(taskID)
            throw error
        }
        if !start { releaseLock(taskID) }
        emit(records[taskID] ?? record, force: true)
        schedule()
        return info(records[taskID] ?? record)
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
    ///
    /// Throws ``DownloadError/Code/locked`` naming the process when another process runs (or queues) the task.
    public func resume(_ id: String) throws(DownloadError) {
        guard records[id] != nil else { throw Self.noSuchTask(id) }
        let held = locks[id]?.isHeld == true
        if !held {
            try acquire(id)
            guard try refresh(id) else {
                releaseLock(id)
                throw Self.noSuchTask(id)
            }
        }
        guard var record = records[id] else { throw Self.noSuchTask(id) }
        switch record.state {
        case .notReady, .paused, .stopped:
            record.state = .ready
            record.error = nil
            records[id] = record
            do {
                try save(id)
            } catch {
                if !held { releaseLock(id) }
                throw error
            }
            emit(record, force: true)
            schedule()
        case .ready:
            // Queued (perhaps by a process that ended before starting it): start it when a slot is free.
            schedule()
        default:
            // Completed, or running here already.
            if !held { releaseLock(id) }
        }
    }

    /// Pauses a task: a running one is interrupted (what is written stays), a queued one leaves the queue.
    ///
    /// When another process runs the task, it is asked to pause it (through the task's control file), and this
    /// returns once it has, with the store showing the pause; it throws ``DownloadError/Code/locked`` when that
    /// process does not answer within 5 seconds.
    public func pause(_ id: String) async throws(DownloadError) {
        guard records[id] != nil else { throw Self.noSuchTask(id) }
        if locks[id]?.isHeld == true {
            defer { releaseLock(id) }
            try applyPause(id)
            return
        }
        if let run = running.removeValue(forKey: id) {
            // Running here without the lock (it was lost): stop it, write nothing.
            run.task.cancel()
            locks[id] = nil
            if var record = records[id] {
                record.state = .paused
                records[id] = record
                resumeWaiters(record)
            }
            return
        }
        if let pid = holder(id) {
            try await ask(id, "pause", holder: pid)
            return
        }
        try acquire(id)
        defer { releaseLock(id) }
        guard try refresh(id) else { throw Self.noSuchTask(id) }
        try applyPause(id)
    }

    /// Pauses a task this process holds.
    private func applyPause(_ id: String) throws(DownloadError) {
        guard var record = records[id] else { return }
        switch record.state {
        case .ready, .starting, .downloading, .notReady:
            if let run = running.removeValue(forKey: id) {
                run.task.cancel()
                record.bytesDone = run.counters.values.withLock { $0.bytesDone }
            }
            record.state = .paused
            records[id] = record
            try save(id)
            writeStatus(id)
            emit(record, force: true)
            resumeWaiters(record)
            schedule()
        default:
            return
        }
    }

    /// Pauses every task this process runs or queues (for a clean shutdown).
    public func pauseAll() async throws(DownloadError) {
        for id in records.keys.sorted() where locks[id] != nil || running[id] != nil {
            try await pause(id)
        }
    }

    /// Deletes a task and its files.
    ///
    /// When another process runs the task, it is asked to stop and delete it, and this returns once it has; it
    /// throws ``DownloadError/Code/locked`` when that process does not answer within 5 seconds.
    public func delete(_ id: String) async throws(DownloadError) {
        guard records[id] != nil else { throw Self.noSuchTask(id) }
        if locks[id]?.isHeld != true {
            if let run = running.removeValue(forKey: id) { run.task.cancel() }
            if let pid = holder(id) {
                try await ask(id, "delete", holder: pid)
                return
            }
            try acquire(id)
            guard try refresh(id) else {
                releaseLock(id)
                throw Self.noSuchTask(id)
            }
        }
        try applyDelete(id)
    }

    /// Deletes a task this process holds, and lets its lock go.
    private func applyDelete(_ id: String) throws(DownloadError) {
        guard let record = records.removeValue(forKey: id) else { return }
        if let run = running.removeValue(forKey: id) { run.task.cancel() }
        do {
            try save(id)
        } catch {
            records[id] = record
            releaseLock(id)
            throw error
        }
        // The runner's writes stop before its files go; the kernel lock goes with the folder.
        locks[id]?.revoke()
        Files.removeTree(storeRoot + "/" + record.folder)
        releaseLock(id)
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

    /// Test support: lets every task lock go without writing anything, as the kernel does when a process dies.
    package func abandonLocks() {
        for lock in locks.values { lock.release() }
        locks = [:]
    }

    // MARK: Locks and requests between processes

    private func lockPath(_ id: String) -> String {
        storeRoot + "/" + (records[id]?.folder ?? id) + "/" + Self.lockName
    }

    /// The PID of the process that holds the task's lock (0 when it cannot be read), or nil when nobody does.
    private func holder(_ id: String) -> Int32? {
        FileLock.holder(lockPath(id))
    }

    private static func busy(_ id: String, pid: Int32?) -> DownloadError {
        let who = pid.flatMap { $0 > 0 ? "process \($0)" : nil } ?? "another process"
        return DownloadError(
            .locked, "task \(id) is being downloaded by \(who); stop it or wait for it to finish",
            pid: pid.flatMap { $0 > 0 ? $0 : nil })
    }

    /// Takes the task's lock for this process (creating its folder), or throws ``DownloadError/Code/locked``.
    private func acquire(_ id: String, patient: Bool = true) throws(DownloadError) {
        if locks[id]?.isHeld == true { return }
        let folder = storeRoot + "/" + (records[id]?.folder ?? id)
        try Files.makeDirectories(folder)
        switch try FileLock.tryAcquireTask(folder + "/" + Self.lockName, patient: patient) {
        case .acquired(let lock):
            locks[id] = lock
            // A request left for a runner that ended before reading it is stale, and so are the temporary files
            // of writers that died.
            Files.remove(folder + "/" + Self.controlName)
            removeAtomicWriteLeftovers(in: folder)
            startWatching()
        case .held(let pid):
            throw Self.busy(id, pid: pid)
        }
    }

    private func releaseLock(_ id: String) {
        locks.removeValue(forKey: id)?.release()
    }

    /// Reloads one task's record from the store (after taking its lock, or once its runner let it go); false when
    /// the store no longer has it.
    private func refresh(_ id: String) throws(DownloadError) -> Bool {
        guard let document = try Self.readStore(storeRoot) else { return records[id] != nil }
        nextOrder = max(nextOrder, document.nextOrder)
        guard let stored = document.tasks.first(where: { $0.id == id }) else {
            records[id] = nil
            return false
        }
        records[id] = Self.adopt(
            stored, root: storeRoot, resume: configuration.resumeInterruptedTasks, heldHere: locks[id]?.isHeld == true)
        return true
    }

    /// Asks the process that holds a task's lock to `command` (pause or delete) it, and waits until it has let the
    /// lock go. A runner that ended without reading the request leaves it to this process.
    private func ask(_ id: String, _ command: String, holder pid: Int32) async throws(DownloadError) {
        let folder = storeRoot + "/" + (records[id]?.folder ?? id)
        let control = folder + "/" + Self.controlName
        try Files.writeQuickly(Array((command + "\n").utf8), to: control)
        let start = ContinuousClock.now
        while holder(id) != nil {
            if ContinuousClock.now - start > Self.answerTimeout {
                Files.remove(control)
                var error = Self.busy(id, pid: pid)
                error.message += " (it did not answer the \(command) request within 5 seconds)"
                throw error
            }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        let unanswered = Files.exists(control)
        if unanswered { Files.remove(control) }
        // The store says what the runner did; a runner that deleted the task took its record with it.
        let stillThere = try refresh(id)
        if stillThere, let record = records[id] {
            if unanswered {
                try acquire(id)
                defer { releaseLock(id) }
                guard try refresh(id) else { return }
                if command == "pause" { try applyPause(id) } else { try applyDelete(id) }
                return
            }
            emit(record, force: true)
            resumeWaiters(record)
        } else {
            resumeWaiters(Self.placeholder(id))
        }
    }

    /// Starts the loop that serves control requests and writes status files, when it is not running.
    private func startWatching() {
        guard watcher == nil else { return }
        watcher = Task { [weak self] in
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 200_000_000)
                guard let self, await self.watch(tick: tick) else { return }
                tick += 1
            }
        }
    }

    /// One round of the watcher: serves the requests of other processes, and every fifth round (about once a
    /// second) rewrites the status files of running tasks. False when it has nothing left to watch.
    private func watch(tick: Int) async -> Bool {
        guard !locks.isEmpty else {
            watcher = nil
            return false
        }
        for id in locks.keys.sorted() {
            let path = storeRoot + "/" + (records[id]?.folder ?? id) + "/" + Self.controlName
            guard let bytes = try? Files.read(path, limit: 64) else { continue }
            Files.remove(path)
            switch String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).first {
            case "pause": try? await pause(id)
            case "delete": try? await delete(id)
            default: continue
            }
        }
        if tick % 5 == 4 {
            for id in running.keys.sorted() { writeStatus(id) }
        }
        return true
    }

    /// Writes the status file of a task this process holds (best effort: it is a hint for other processes).
    private func writeStatus(_ id: String) {
        guard let lock = locks[id], lock.isHeld, let record = records[id] else { return }
        let snapshot = info(record)
        let status = TaskStatus(
            pid: FileLock.processID, state: record.state, bytesDone: snapshot.bytesDone,
            bytesTotal: snapshot.bytesTotal, totalIsEstimate: snapshot.totalIsEstimate,
            filesDone: snapshot.filesDone, filesTotal: snapshot.filesTotal, speed: snapshot.speed,
            updatedAt: Date().timeIntervalSince1970)
        guard let data = try? JSONEncoder().encode(status) else { return }
        try? Files.writeQuickly([UInt8](data), to: storeRoot + "/" + record.folder + "/" + Self.statusName)
    }

    /// The status another process wrote for a task, if readable.
    private func readStatus(_ record: TaskRecord) -> TaskStatus? {
        let path = storeRoot + "/" + record.folder + "/" + Self.statusName
        guard let bytes = try? Files.read(path, limit: 1 << 16) else { return nil }
        return try? JSONDecoder().decode(TaskStatus.self, from: Data(bytes))
    }

    private static func placeholder(_ id: String) -> TaskRecord {
        TaskRecord(
            id: id, url: "", order: 0, createdAt: 0, metadata: [:], options: DownloadOptions(), folder: id,
            state: .stopped, error: DownloadError(.fileSystem, "deleted"), sources: nil, skipped: [], bytesDone: 0,
            bytesTotal: nil, filesDone: 0, filesTotal: 0, playlist: nil, live: nil)
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

    /// Concatenates a completed, unencrypted, TS-only task into one `.ts` file at `destination`, through FileRange's
    /// durable writer (a crash leaves whatever was at `destination` before, or the whole export). The segments are
    /// streamed a megabyte at a time off the actor, on the file threads.
    public func export(_ id: String, to destination: String) async throws(DownloadError) {
        guard let record = records[id] else { throw Self.noSuchTask(id) }
        guard record.state == .completed, let sources = record.sources, let variant = sources.media.first else {
            throw DownloadError(
                .unsupported, "only completed tasks can be exported; this one is \(record.state.rawValue)")
        }
        let folder = storeRoot + "/" + record.folder
        try await Blocking.run { () throws(DownloadError) -> Void in
            try Self.export(folder: folder, variantFolder: variant.folder, to: destination)
        }
    }

    /// The body of ``export(_:to:)``, on a file thread: reads the task's playlist, then appends each segment.
    private nonisolated static func export(
        folder: String, variantFolder: String, to destination: String
    ) throws(DownloadError) {
        let playlist = try Planner.parse(
            SourcePlaylist(
                url: "file:///local/index.m3u8",
                text: String(decoding: try Files.read(folder + "/index.m3u8"), as: UTF8.self),
                folder: variantFolder))
        let media = playlist.media(url: "file:///local/index.m3u8")
        guard media.segments.allSatisfy({ $0.keys.isEmpty && $0.map == nil }) else {
            throw DownloadError(.unsupported, "only unencrypted TS tasks can be exported")
        }
        let writer = try DurableWriter(replacing: destination)
        for segment in media.segments where !segment.gap {
            let name = String(segment.uri.dropFirst("file:///local/".count))
            let range = segment.byteRange.map { (offset: $0.offset, length: $0.length) }
            try Fetcher.append(folder + "/" + name, range: range, to: writer)
        }
        try writer.commit()
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
            if start(record.id) { slots -= 1 }
        }
    }

    /// Starts a queued task, taking its lock first when this process does not hold it yet; false when another
    /// process holds it (it is not this one's to run) or it is no longer queued.
    private func start(_ id: String) -> Bool {
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
    private nonisolated static func execute(
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
            for assembly in plan.assemblies {
                try lock.ensureHeld()
                try Fetcher.assemble(assembly, folder: folder)
            }
            let final = try Planner.plan(sources, skipped: skipped)
            for playlist in final.playlists {
                try lock.ensureHeld()
                try Files.writeAtomically(playlist.bytes, to: folder + "/" + playlist.path)
            }
            try lock.ensureHeld()
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

    private func isCurrent(_ id: String, _ generation: Int) -> Bool {
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
        var result = DownloadTaskInfo(
            id: record.id, url: record.url, state: record.state, error: record.error, progress: progress,
            bytesDone: record.bytesDone, bytesTotal: total, totalIsEstimate: estimate, speed: speed, eta: eta,
            filesDone: record.filesDone, filesTotal: record.filesTotal, folder: storeRoot + "/" + record.folder,
            playlistPath: record.playlist.map { storeRoot + "/" + record.folder + "/" + $0 },
            metadata: record.metadata, createdAt: record.createdAt, runnerPID: nil)
        if locks[record.id] == nil, running[record.id] == nil, let pid = holder(record.id) {
            // Another process runs it: its status file has the live figures.
            result.runnerPID = pid > 0 ? pid : nil
            if let status = readStatus(record), status.pid == pid || pid == 0 {
                result.runnerPID = status.pid
                result.state = status.state
                result.bytesDone = status.bytesDone
                result.bytesTotal = status.bytesTotal
                result.totalIsEstimate = status.totalIsEstimate
                result.filesDone = status.filesDone
                result.filesTotal = status.filesTotal
                result.speed = status.speed
                result.error = nil
                result.playlistPath = nil
                if let total = status.bytesTotal, total > 0 {
                    result.progress = min(1, Double(status.bytesDone) / Double(total))
                }
                result.eta = nil
                if let total = status.bytesTotal, status.speed > 0, total >= status.bytesDone {
                    result.eta = Double(total - status.bytesDone) / status.speed
                }
            }
        }
        return result
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

    /// Records the change of one task (its record, or its removal) in the store: under the store's lock, reads
    /// the store, replaces that task's record, writes it atomically (temporary file, fsync, rename, fsync the
    /// folder), and takes the other processes' changes to the tasks this one does not hold. Only the holder of the
    /// task's lock may call it.
    private func save(_ id: String) throws(DownloadError) {
        guard let lock = locks[id] else {
            throw DownloadError(.locked, "this process does not hold the lock of task \(id)", path: lockPath(id))
        }
        try lock.ensureHeld()
        try FileLock.withExclusiveLock(storeRoot + "/" + Self.storeLockName) { () throws(DownloadError) -> Void in
            let document = merge(try Self.readStore(storeRoot), changed: id)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data: Data
            do {
                data = try encoder.encode(document)
            } catch {
                throw DownloadError(.fileSystem, "cannot encode the task store: \(error)")
            }
            try Files.writeAtomically([UInt8](data), to: storeRoot + "/" + Self.storeName, mode: Self.storeFileMode)
        }
    }

    /// The store with this process's record of `id` in place of the stored one; this process's view of the tasks
    /// it does not hold becomes the stored one.
    private func merge(_ stored: StoreDocument?, changed id: String) -> StoreDocument {
        var byID: [String: TaskRecord] = [:]
        for task in stored?.tasks ?? [] { byID[task.id] = task }
        let storedNext = stored?.nextOrder ?? 0
        nextOrder = max(nextOrder, storedNext)
        if var ours = records[id] {
            if byID[id] == nil, ours.order < storedNext {
                // Another process created a task meanwhile: this one goes after it.
                ours.order = nextOrder
                nextOrder += 1
                records[id] = ours
            }
            byID[id] = ours
        } else {
            byID[id] = nil
        }
        func isOurs(_ key: String) -> Bool { key == id || locks[key] != nil || running[key] != nil }
        for (key, task) in byID where !isOurs(key) {
            records[key] = Self.adopt(task, root: storeRoot, resume: configuration.resumeInterruptedTasks)
        }
        for key in Array(records.keys) where byID[key] == nil && !isOurs(key) {
            records[key] = nil
        }
        return StoreDocument(
            version: 1, nextOrder: nextOrder,
            tasks: byID.values.sorted { ($0.order, $0.id) < ($1.order, $1.id) })
    }
}
