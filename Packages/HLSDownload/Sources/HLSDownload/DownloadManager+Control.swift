// DownloadManager's cross-process control: the per-task locks, the control file another process writes to ask the
// runner to pause or delete, and the status file the runner writes.
import FileRange
import Foundation

extension DownloadManager {
    func lockPath(_ id: String) -> String {
        storeRoot + "/" + (records[id]?.folder ?? id) + "/" + Self.lockName
    }

    /// The PID of the process that holds the task's lock (0 when it cannot be read), or nil when nobody does.
    func holder(_ id: String) -> Int32? {
        FileLock.holder(lockPath(id))
    }

    static func busy(_ id: String, pid: Int32?) -> DownloadError {
        let who = pid.flatMap { $0 > 0 ? "process \($0)" : nil } ?? "another process"
        return DownloadError(
            .locked, "task \(id) is being downloaded by \(who); stop it or wait for it to finish",
            pid: pid.flatMap { $0 > 0 ? $0 : nil })
    }

    /// Takes the task's lock for this process (creating its folder), or throws ``DownloadError/Code/locked``.
    func acquire(_ id: String, patient: Bool = true) throws(DownloadError) {
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

    func releaseLock(_ id: String) {
        locks.removeValue(forKey: id)?.release()
    }

    /// Reloads one task's record from the store (after taking its lock, or once its runner let it go); false when
    /// the store no longer has it.
    func refresh(_ id: String) throws(DownloadError) -> Bool {
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
    func ask(_ id: String, _ command: String, holder pid: Int32) async throws(DownloadError) {
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
    func startWatching() {
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
    func watch(tick: Int) async -> Bool {
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
    func writeStatus(_ id: String) {
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
    func readStatus(_ record: TaskRecord) -> TaskStatus? {
        let path = storeRoot + "/" + record.folder + "/" + Self.statusName
        guard let bytes = try? Files.read(path, limit: 1 << 16) else { return nil }
        return try? JSONDecoder().decode(TaskStatus.self, from: Data(bytes))
    }
}
