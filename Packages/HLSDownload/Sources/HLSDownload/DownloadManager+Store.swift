// DownloadManager's store: `tasks.json` read, merged and written (under `.tasks.lock`, through FileRange's durable
// writer), the reserve file kept beside it, and stored records adopted.
import FileRange
import Foundation

extension DownloadManager {
    /// Creates the reserve file when it is missing (best effort).
    static func ensureReserve(_ root: String) {
        let path = root + "/" + reserveName
        guard !Files.exists(path) else { return }
        try? Files.writeAtomically([UInt8](repeating: 0, count: 256 << 10), to: path)
    }

    /// The store's document, or nil when there is none yet.
    static func readStore(_ root: String) throws(DownloadError) -> StoreDocument? {
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
    static func adopt(_ stored: TaskRecord, root: String, resume: Bool, heldHere: Bool = false) -> TaskRecord {
        var record = stored
        if record.state.isRunning, heldHere || FileLock.holder(root + "/" + record.folder + "/" + lockName) == nil {
            record.state = resume ? .ready : .paused
        }
        return record
    }

    /// Records the change of one task (its record, or its removal) in the store: under the store's lock, reads
    /// the store, replaces that task's record, writes it atomically (temporary file, fsync, rename, fsync the
    /// folder), and takes the other processes' changes to the tasks this one does not hold. Only the holder of the
    /// task's lock may call it.
    func save(_ id: String) throws(DownloadError) {
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
    func merge(_ stored: StoreDocument?, changed id: String) -> StoreDocument {
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
