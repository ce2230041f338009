import FileRange

/// The downloader's file work, on FileRange's file-system layer (which makes every system call): its errors become
/// ``DownloadError``s, disk full and quota as ``DownloadError/Code/diskFull``.
enum Files {
    /// The error for a failed call on `path`.
    static func error(_ errno: Errno, _ what: String, path: String) -> DownloadError {
        if errno == .noSpace || errno == .diskQuotaExceeded {
            return DownloadError(.diskFull, "no space left while \(what)", path: path, errno: errno.rawValue)
        }
        return DownloadError(.fileSystem, "\(what) failed: \(errno.message)", path: path, errno: errno.rawValue)
    }

    static func error(_ failure: FileSystemError, _ what: String) -> DownloadError {
        error(failure.errno, what, path: failure.path)
    }

    /// The error for a failed step of FileRange's durable writer, naming the step and the file being replaced.
    static func error(_ failure: DurableFileError) -> DownloadError {
        error(failure.errno, failure.step.description, path: failure.path)
    }

    static func exists(_ path: String) -> Bool { FileSystem.exists(path) }

    /// The size of a regular file, or nil when it does not exist.
    static func size(_ path: String) -> UInt64? { FileSystem.regularFileSize(path) }

    /// Creates `path` and the folders above it, each with `mode` (less the umask); existing ones keep theirs.
    static func makeDirectories(_ path: String, mode: UInt16 = 0o755) throws(DownloadError) {
        do {
            try FileSystem.createFolders(path, mode: mode)
        } catch {
            throw Self.error(error, "creating the folder")
        }
    }

    static func remove(_ path: String) { FileSystem.removeFile(path) }

    /// Removes what fetching `final` leaves beside it until it is in place: the partial file and the resume
    /// validator (a process killed between two of these steps leaves some behind; temporary files of writers that
    /// died go with `FileRange.removeAtomicWriteLeftovers(in:)` when a task starts).
    static func removeLeftovers(of final: String) {
        for suffix in [".part", ".validator"] { remove(final + suffix) }
    }

    /// Removes a folder and everything in it (no symlinks are followed).
    static func removeTree(_ path: String) { FileSystem.removeTree(path) }

    /// Flushes a folder's entries (after a rename into it), best effort.
    static func syncDirectory(_ path: String) {
        try? FileSystem.sync(path)
    }

    /// Flushes `staged` (a resumable partial file, which keeps a fixed name so that a later run finds it), renames
    /// it over `path` and flushes the folder: FileRange's durable writer's last steps.
    static func install(_ staged: String, as path: String) throws(DownloadError) {
        do {
            try DurableFile.install(staged, as: path)
        } catch {
            throw Self.error(error)
        }
    }

    /// Writes `bytes` to `path` atomically and durably (FileRange's one durable writer), as a file with `mode`.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt16 = 0o644) throws(DownloadError) {
        let writer = try DurableWriter(replacing: path, mode: mode)
        try writer.write(bytes[...])
        try writer.commit()
    }

    /// Replaces `path` with `bytes` without flushing (for hints such as a resume validator, whose loss or damage
    /// only costs a refetch).
    static func writeQuickly(_ bytes: [UInt8], to path: String) throws(DownloadError) {
        let writer = try DurableWriter(replacing: path, durable: false)
        try writer.write(bytes[...])
        try writer.commit()
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Reads a whole (small) file.
    static func read(_ path: String, limit: Int = 64 << 20) throws(DownloadError) -> [UInt8] {
        do {
            return try FileSystem.readFile(path, limit: limit)
        } catch  where error.errno == .fileTooLarge {
            throw DownloadError(.fileSystem, "file larger than \(limit) bytes", path: path)
        } catch {
            throw Self.error(error, "reading")
        }
    }
}

/// An open file that is written sequentially (FileRange's `SequentialFileWriter`, with the downloader's errors).
final class FileWriter {
    private let file: SequentialFileWriter
    var path: String { file.path }

    /// Opens (creating) `path` for writing at its end, or truncated when `truncate`, with permissions `mode`.
    init(path: String, truncate: Bool, mode: UInt16 = 0o644) throws(DownloadError) {
        do {
            file = try SequentialFileWriter(path: path, truncate: truncate, mode: mode)
        } catch {
            throw Files.error(error, "opening for writing")
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) throws(DownloadError) {
        do { try file.write(bytes) } catch { throw Files.error(error, "writing") }
    }

    func truncate(to size: UInt64) throws(DownloadError) {
        do { try file.truncate(to: size) } catch { throw Files.error(error, "truncating") }
    }

    func sync() throws(DownloadError) {
        do { try file.sync() } catch { throw Files.error(error, "flushing") }
    }

    func close() { file.close() }
}

/// A file replaced in chunks: FileRange's `DurableFile` (a uniquely named temporary file beside the target,
/// flushed, renamed over it, the folder flushed), with the downloader's errors. An uncommitted writer leaves the
/// target as it was and no temporary file.
final class DurableWriter {
    private let file: DurableFile
    var path: String { file.path }

    init(replacing path: String, durable: Bool = true, mode: UInt16 = 0o644) throws(DownloadError) {
        do {
            file = try DurableFile(replacing: path, durable: durable, mode: mode)
        } catch {
            throw Files.error(error)
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) throws(DownloadError) {
        do { try file.write(bytes) } catch { throw Files.error(error) }
    }

    func commit() throws(DownloadError) {
        do { try file.commit() } catch { throw Files.error(error) }
    }

    func discard() { file.discard() }
}

extension FileLock {
    /// Takes the lock on `path` without waiting (FileRange's `FileLock.tryAcquire(_:patient:)`), with the
    /// downloader's errors.
    static func tryAcquireTask(_ path: String, patient: Bool = true) throws(DownloadError) -> Attempt {
        do {
            return try tryAcquire(path, patient: patient)
        } catch {
            throw Files.error(error, "locking")
        }
    }

    /// Runs `body` holding an exclusive lock on `path`, waiting for it as long as it takes.
    static func withExclusiveLock<T>(
        _ path: String, _ body: () throws(DownloadError) -> T
    ) throws(DownloadError) -> T {
        try withExclusiveLock(path, lockFailure: { Files.error($0, "locking") }, body)
    }

    /// The PID of this process.
    static var processID: Int32 { FileSystem.processID }

    /// Throws unless this object still holds the lock: every write of a task's runner checks it first.
    package func ensureHeld() throws(DownloadError) {
        guard isHeld else {
            throw DownloadError(.locked, "this process no longer holds the task's lock", path: path)
        }
    }
}
