// DownloadManager's queries: task infos (with another runner's live figures), waiting for a task, its paths, and the
// events stream.
import FileRange
import HTTPClient

extension DownloadManager {
    static func placeholder(_ id: String) -> TaskRecord {
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

    static func isSettled(_ state: DownloadState) -> Bool {
        state == .completed || state == .stopped || state == .paused || state == .notReady
    }

    func resumeWaiters(_ record: TaskRecord) {
        guard let list = waiters.removeValue(forKey: record.id) else { return }
        let snapshot = info(record)
        for waiter in list { waiter.resume(returning: snapshot) }
    }

    func emit(_ record: TaskRecord, force: Bool) {
        let now = clock.now()
        if !force, let last = lastEvent[record.id], now - last < configuration.eventInterval { return }
        lastEvent[record.id] = now
        eventContinuation.yield(info(record))
    }

    func info(_ record: TaskRecord) -> DownloadTaskInfo {
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
}
