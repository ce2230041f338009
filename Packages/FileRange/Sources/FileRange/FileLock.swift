#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An advisory lock on a file, held by this process until ``release()`` (or until the process ends: the kernel drops
/// it then, so a crash never leaves a stale lock).
///
/// It is a `flock(2)` lock, which belongs to the open file description. That is the semantics a task lock needs:
/// a second ``tryAcquire(_:patient:)`` refuses even in the same process (two managers on one store), and opening and
/// closing the file elsewhere in the process (``holder(_:)`` reading the PID, a backup tool) never drops it. A POSIX
/// `fcntl(F_SETLK)` lock would do neither: it belongs to the process, so the same process could take it twice, and
/// closing *any* descriptor of the file releases it.
///
/// The holder writes its PID (a decimal line) into the file, so that the process refused can say who holds it.
public final class FileLock: Sendable {
    /// What ``tryAcquire(_:patient:)`` found.
    public enum Attempt: Sendable {
        case acquired(FileLock)
        /// Another open file description holds it; `pid` is what the holder wrote, when it could be read.
        case held(pid: Int32?)
    }

    public let path: String
    /// The descriptor holding the lock (-1 once released), and whether writes under it are still allowed.
    private let state: LockedValue<(fd: Int32, writable: Bool)>

    private init(path: String, fd: Int32) {
        self.path = path
        state = LockedValue((fd, true))
    }

    /// Whether this object still holds the lock, and writes under it are allowed.
    public var isHeld: Bool { state.withLock { $0.fd >= 0 && $0.writable } }

    /// The descriptor holding the lock, -1 once released (for tests).
    var descriptor: Int32 { state.withLock { $0.fd } }

    /// Keeps the lock but refuses writes from now on (``isHeld`` is false): for the moment between stopping the
    /// writers a lock protects and removing their files.
    public func revoke() {
        state.withLock { $0.writable = false }
    }

    /// Takes the lock on `path` (created when missing) without waiting, and records this process's PID in it.
    ///
    /// When `patient`, a lock that someone else only probes (``holder(_:)`` holds a shared lock for a moment) is
    /// retried for about 100 ms before the attempt counts as refused.
    public static func tryAcquire(_ path: String, patient: Bool = true) throws(FileSystemError) -> Attempt {
        let tries = patient ? 6 : 2
        for attempt in 0..<tries {
            let fd: Int32
            do {
                fd = try retryingOnInterrupt { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644) }
            } catch {
                throw FileSystemError(error, path: path)
            }
            if systemFlock(fd, LOCK_EX | LOCK_NB) != 0 {
                let error = Errno.current
                _ = systemClose(fd)
                if error == .interrupted { continue }
                guard error == .wouldBlock else { throw FileSystemError(error, path: path) }
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
                _ = systemClose(fd)
                continue
            }
            let line = Array("\(getpid())\n".utf8)
            let written = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            if written != line.count || ftruncate(fd, off_t(line.count)) != 0 {
                let error = Errno.current
                _ = systemClose(fd)
                throw FileSystemError(error, path: path)
            }
            return .acquired(FileLock(path: path, fd: fd))
        }
        return .held(pid: readPID(path))
    }

    /// The PID recorded by the process that holds the lock on `path`, nil when nobody holds it (or the file is
    /// missing), or 0 when it is held but the PID cannot be read.
    public static func holder(_ path: String) -> Int32? {
        guard let fd = try? retryingOnInterrupt({ open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        defer { _ = systemClose(fd) }
        var result: Int32 = -1
        repeat { result = systemFlock(fd, LOCK_SH | LOCK_NB) } while result != 0 && Errno.current == .interrupted
        if result == 0 {
            _ = systemFlock(fd, LOCK_UN)
            return nil
        }
        return readPID(path) ?? 0
    }

    /// Runs `body` holding an exclusive lock on `path` (created when missing), waiting for it as long as it takes:
    /// for short read-modify-write sections shared between processes. A failure to take the lock is `lockFailure`.
    public static func withExclusiveLock<T, E: Error>(
        _ path: String, lockFailure: (FileSystemError) -> E, _ body: () throws(E) -> T
    ) throws(E) -> T {
        let fd: Int32
        do {
            fd = try retryingOnInterrupt { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644) }
        } catch {
            throw lockFailure(FileSystemError(error, path: path))
        }
        defer { unlockAndClose(fd) }
        do {
            _ = try retryingOnInterrupt { systemFlock(fd, LOCK_EX) }
        } catch {
            throw lockFailure(FileSystemError(error, path: path))
        }
        return try body()
    }

    private static func readPID(_ path: String) -> Int32? {
        guard let bytes = try? FileSystem.readFile(path, limit: 64) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first ?? ""
        return Int32(text).flatMap { $0 > 0 ? $0 : nil }
    }

    /// Releases the lock (closing its descriptor); later calls do nothing.
    public func release() {
        let fd = state.withLock { s -> Int32 in
            defer { s.fd = -1 }
            return s.fd
        }
        if fd >= 0 { Self.unlockAndClose(fd) }
    }

    /// Unlocks the open file description, then closes the descriptor. Closing alone would leave the lock held by any
    /// other descriptor of the same description: a child process the app forks at that moment has a copy until it
    /// execs (its close-on-exec), and Foundation's spawn closes every other descriptor first, which takes
    /// milliseconds on a loaded machine. A task finished in that window looked held by another process.
    private static func unlockAndClose(_ fd: Int32) {
        _ = systemFlock(fd, LOCK_UN)
        _ = systemClose(fd)
    }

    deinit { release() }
}
