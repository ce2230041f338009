// DownloadManager's task API: create, resume, pause, delete.
import FileRange
import Foundation
import HLSPlaylist

extension DownloadManager {
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
    func applyPause(_ id: String) throws(DownloadError) {
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
    func applyDelete(_ id: String) throws(DownloadError) {
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

    static func noSuchTask(_ id: String) -> DownloadError {
        DownloadError(.invalidURL, "no task with id '\(id)'")
    }
}
