import Dispatch
import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(Glibc)
    private let posixRead = Glibc.read
    private let posixWrite = Glibc.write
    private let posixClose = Glibc.close
    private let posixRename = Glibc.rename
#elseif canImport(Musl)
    private let posixRead = Musl.read
    private let posixWrite = Musl.write
    private let posixClose = Musl.close
    private let posixRename = Musl.rename
#elseif canImport(Darwin)
    private let posixRead = Darwin.read
    private let posixWrite = Darwin.write
    private let posixClose = Darwin.close
    private let posixRename = Darwin.rename
#endif

/// `flock(2)`, the same call on Glibc, Musl and Darwin (`int flock(int fd, int operation)`); unqualified, since the
/// module-qualified name means the `struct flock` of `fcntl(2)`.
private func posixFlock(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}

/// Small POSIX file helpers with typed errno: appending writes, flushes to storage (FileRange's `syncToStorage`:
/// `F_FULLFSYNC` on Darwin), atomic replace, directory flush.
enum Files {
    /// The error for a failed call on `path`: disk full and quota become ``DownloadError/Code/diskFull``.
    static func error(_ errno: Errno, _ what: String, path: String) -> DownloadError {
        if errno == .noSpace || errno == .diskQuotaExceeded {
            return DownloadError(.diskFull, "no space left while \(what)", path: path, errno: errno.rawValue)
        }
        return DownloadError(.fileSystem, "\(what) failed: \(errno)", path: path, errno: errno.rawValue)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The size of a regular file, or nil when it does not exist.
    static func size(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(clamping: info.st_size)
    }

    static func makeDirectories(_ path: String) throws(DownloadError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 {
                let e = Errno.current
                if e != .fileExists { throw error(e, "creating the folder", path: current) }
            }
        }
    }

    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// Removes what fetching `final` leaves beside it until it is in place: the partial file, the resume validator
    /// and the validator's temporary file (a process killed between two of these steps leaves some behind).
    static func removeLeftovers(of final: String) {
        for suffix in [".part", ".validator", ".validator.tmp"] { remove(final + suffix) }
    }

    /// Removes a folder and everything in it (no symlinks are followed).
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            if let dir = opendir(path) {
                var names: [String] = []
                while let entry = readdir(dir) {
                    let name = withUnsafePointer(to: entry.pointee.d_name) {
                        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                    }
                    if name != "." && name != ".." { names.append(name) }
                }
                closedir(dir)
                for name in names { removeTree(path + "/" + name) }
            }
            _ = rmdir(path)
        } else {
            _ = unlink(path)
        }
    }

    /// Flushes a file's data to the disk.
    static func sync(_ path: String) throws(DownloadError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error(.current, "opening to flush", path: path) }
        defer { _ = posixClose(fd) }
        do {
            try syncToStorage(fd)
        } catch {
            throw Self.error(error, "flushing", path: path)
        }
    }

    /// Flushes a folder's entries (after a rename into it).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { return }
        _ = try? syncToStorage(fd)
        _ = posixClose(fd)
    }

    static func rename(_ from: String, _ to: String) throws(DownloadError) {
        do {
            _ = try retryingOnInterrupt { posixRename(from, to) }
        } catch {
            throw Self.error(error, "renaming into place", path: to)
        }
    }

    /// Writes `bytes` to `path` atomically: a temporary file beside it, fsync, rename, fsync the folder.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(DownloadError) {
        let temporary = path + ".tmp"
        let writer = try FileWriter(path: temporary, truncate: true)
        do {
            try writer.write(bytes[...])
            try writer.sync()
            writer.close()
        } catch {
            writer.close()
            remove(temporary)
            throw error
        }
        try rename(temporary, path)
        syncDirectory(parent(of: path))
    }

    /// Replaces `path` with `bytes` without flushing (for hints such as a resume validator, whose loss or damage
    /// only costs a refetch).
    static func writeQuickly(_ bytes: [UInt8], to path: String) throws(DownloadError) {
        let temporary = path + ".tmp"
        let writer = try FileWriter(path: temporary, truncate: true)
        do {
            try writer.write(bytes[...])
            writer.close()
        } catch {
            writer.close()
            remove(temporary)
            throw error
        }
        try rename(temporary, path)
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Reads a whole (small) file.
    static func read(_ path: String, limit: Int = 64 << 20) throws(DownloadError) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw error(.current, "opening", path: path) }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw Self.error(e, "reading", path: path)
            }
            if count == 0 { return result }
            result.append(contentsOf: buffer[0..<count])
            if result.count > limit { throw DownloadError(.fileSystem, "file larger than \(limit) bytes", path: path) }
        }
    }
}

/// An open file that is written sequentially.
final class FileWriter {
    let path: String
    private var fd: Int32

    /// Opens (creating) `path` for writing at its end, or truncated when `truncate`.
    init(path: String, truncate: Bool) throws(DownloadError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw Files.error(.current, "opening for writing", path: path) }
        self.fd = fd
    }

    func write(_ bytes: ArraySlice<UInt8>) throws(DownloadError) {
        var remaining = bytes
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { posixWrite(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw Files.error(e, "writing", path: path)
            }
            remaining = remaining.dropFirst(written)
        }
    }

    func truncate(to size: UInt64) throws(DownloadError) {
        guard ftruncate(fd, off_t(clamping: size)) == 0 else { throw Files.error(.current, "truncating", path: path) }
    }

    func sync() throws(DownloadError) {
        do {
            try syncToStorage(fd)
        } catch {
            throw Files.error(error, "flushing", path: path)
        }
    }

    func close() {
        if fd >= 0 {
            _ = posixClose(fd)
            fd = -1
        }
    }

    deinit { close() }
}

/// Runs blocking file work (fsync, integrity reads, renames) on a dispatch queue, so that slow disks never stall
/// Swift's cooperative thread pool.
enum Blocking {
    private static let queue = DispatchQueue(label: "HLSDownload.files", attributes: .concurrent)

    static func run<T: Sendable>(
        _ work: @escaping @Sendable () throws(DownloadError) -> T
    ) async throws(DownloadError) -> T {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, DownloadError>, Never>) in
            queue.async {
                do throws(DownloadError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}

/// An advisory lock on a file, held by this process until ``release()`` (or until the process ends: the kernel drops
/// it then, so a crash never leaves a stale lock).
///
/// It is a `flock(2)` lock, which belongs to the open file description. That is the semantics a task lock needs:
/// a second ``tryAcquire(_:)`` refuses even in the same process (two managers on one store), and opening and closing
/// the file elsewhere in the process (``holder(_:)`` reading the PID, a backup tool) never drops it. A POSIX
/// `fcntl(F_SETLK)` lock would do neither: it belongs to the process, so the same process could take it twice, and
/// closing *any* descriptor of the file releases it.
///
/// The holder writes its PID (a decimal line) into the file, so that the process refused can say who holds it.
package final class FileLock: Sendable {
    /// What ``tryAcquire(_:)`` found.
    package enum Attempt {
        case acquired(FileLock)
        /// Another open file description holds it; `pid` is what the holder wrote, when it could be read.
        case held(pid: Int32?)
    }

    package let path: String
    /// The descriptor holding the lock (-1 once released), and whether writes under it are still allowed.
    private let state: LockedValue<(fd: Int32, writable: Bool)>

    private init(path: String, fd: Int32) {
        self.path = path
        state = LockedValue((fd, true))
    }

    /// Whether this object still holds the lock, and writes under it are allowed.
    package var isHeld: Bool { state.withLock { $0.fd >= 0 && $0.writable } }

    /// Keeps the lock but refuses writes from now on (``isHeld`` is false): for the moment between stopping a
    /// task's writers and removing its files.
    package func revoke() {
        state.withLock { $0.writable = false }
    }

    /// The PID of this process.
    package static var processID: Int32 { getpid() }

    /// Takes the lock on `path` (created when missing) without waiting, and records this process's PID in it.
    ///
    /// When `patient`, a lock that someone else only probes (``holder(_:)`` holds a shared lock for a moment) is
    /// retried for about 100 ms before the attempt counts as refused.
    package static func tryAcquire(_ path: String, patient: Bool = true) throws(DownloadError) -> Attempt {
        let tries = patient ? 6 : 2
        for attempt in 0..<tries {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Files.error(.current, "opening the lock file", path: path) }
            let result = posixFlock(fd, LOCK_EX | LOCK_NB)
            if result != 0 {
                let e = Errno.current
                _ = posixClose(fd)
                if e == .interrupted { continue }
                guard e == .wouldBlock else { throw Files.error(e, "locking", path: path) }
                if attempt < tries - 1 {
                    if patient { usleep(20_000) }
                    continue
                }
                return .held(pid: readPID(path))
            }
            // The file may have been removed (a deleted task) between open and flock: a lock on an unlinked file
            // protects nothing, so try again on whatever the path names now.
            var opened = stat()
            var named = stat()
            guard fstat(fd, &opened) == 0, stat(path, &named) == 0, opened.st_ino == named.st_ino,
                opened.st_dev == named.st_dev
            else {
                _ = posixClose(fd)
                continue
            }
            let line = Array("\(getpid())\n".utf8)
            let written = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            if written != line.count || ftruncate(fd, off_t(line.count)) != 0 {
                let e = Errno.current
                _ = posixClose(fd)
                throw Files.error(e, "recording the PID in the lock file", path: path)
            }
            return .acquired(FileLock(path: path, fd: fd))
        }
        return .held(pid: readPID(path))
    }

    /// The PID recorded by the process that holds the lock on `path`, nil when nobody holds it (or the file is
    /// missing), or 0 when it is held but the PID cannot be read.
    package static func holder(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = posixClose(fd) }
        var result: Int32 = -1
        repeat { result = posixFlock(fd, LOCK_SH | LOCK_NB) } while result != 0 && Errno.current == .interrupted
        if result == 0 {
            _ = posixFlock(fd, LOCK_UN)
            return nil
        }
        return readPID(path) ?? 0
    }

    /// Runs `body` holding an exclusive lock on `path` (created when missing), waiting for it as long as it takes:
    /// for short read-modify-write sections shared between processes.
    static func withExclusiveLock<T>(
        _ path: String, _ body: () throws(DownloadError) -> T
    ) throws(DownloadError) -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Files.error(.current, "opening the lock file", path: path) }
        defer { _ = posixClose(fd) }
        while posixFlock(fd, LOCK_EX) != 0 {
            let e = Errno.current
            if e != .interrupted { throw Files.error(e, "locking", path: path) }
        }
        return try body()
    }

    private static func readPID(_ path: String) -> Int32? {
        guard let bytes = try? Files.read(path, limit: 64) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first ?? ""
        return Int32(text).flatMap { $0 > 0 ? $0 : nil }
    }

    /// Releases the lock (closing its descriptor); later calls do nothing.
    package func release() {
        let fd = state.withLock { s -> Int32 in
            defer { s.fd = -1 }
            return s.fd
        }
        if fd >= 0 { _ = posixClose(fd) }
    }

    deinit { release() }
}

extension FileLock {
    /// Throws unless this object still holds the lock: every write of a task's runner checks it first.
    package func ensureHeld() throws(DownloadError) {
        guard isHeld else {
            throw DownloadError(.locked, "this process no longer holds the task's lock", path: path)
        }
    }
}
