#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// FileRange's platform layer: every call whose name, fields or semantics differ between Darwin and the other C
// libraries, so that the rest of the package is written once. (``LockedValue`` keeps its own two locks.)

/// Makes what was written to `fd` durable, on the storage itself: the one flush the toolkit uses before it records
/// or renames anything that must survive a power loss (the sparse cache's map, the downloader's files).
///
/// On Darwin `fsync(2)` only hands the data to the drive, which may keep it in its own cache and write it later and
/// out of order; `fcntl(fd, F_FULLFSYNC)` asks the drive to flush that cache too (see Apple's `fsync(2)` and
/// `fcntl(2)` manual pages). File systems that do not support it (some network and FAT volumes) fail the call, and
/// then `fsync` is used. Elsewhere this is `fsync`. `EINTR` is retried.
public func syncToStorage(_ fd: Int32) throws(Errno) {
    #if canImport(Darwin)
        if (try? retryingOnInterrupt({ fcntl(fd, F_FULLFSYNC) })) != nil { return }
    #endif
    _ = try retryingOnInterrupt { fsync(fd) }
}

/// A thread, to tell later whether code runs on it: `pthread_t` is an integer on Glibc and a pointer on Darwin,
/// compared with `pthread_equal` on both.
struct ThreadIdentity: @unchecked Sendable {
    private let thread: pthread_t

    /// The calling thread.
    static var current: ThreadIdentity { ThreadIdentity(thread: pthread_self()) }

    /// Whether the calling thread is this one.
    var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }
}

/// A `stat`'s modification time: `st_mtimespec` on Darwin, `st_mtim` elsewhere.
func fileModificationTime(of info: stat) -> (seconds: Int64, nanoseconds: Int64) {
    #if canImport(Darwin)
        (Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec))
    #else
        (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
    #endif
}

/// The C library's `close`, named apart from ``FileStreamer/close()`` and `Socket.close()`: one wrapper for every
/// package that closes a descriptor (FileRange's files, Sockets' sockets and pollers).
public func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(fd)
    #elseif canImport(Musl)
        Musl.close(fd)
    #else
        Darwin.close(fd)
    #endif
}

/// The C library's `write`.
func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
    #elseif canImport(Musl)
        Musl.write(fd, buffer, count)
    #else
        Darwin.write(fd, buffer, count)
    #endif
}

/// The C library's `read`.
func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.read(fd, buffer, count)
    #elseif canImport(Musl)
        Musl.read(fd, buffer, count)
    #else
        Darwin.read(fd, buffer, count)
    #endif
}

/// The C library's `rename`, named apart from ``FileSystem/rename(_:to:)``.
func systemRename(_ from: String, _ to: String) -> Int32 {
    #if canImport(Glibc)
        Glibc.rename(from, to)
    #elseif canImport(Musl)
        Musl.rename(from, to)
    #else
        Darwin.rename(from, to)
    #endif
}

/// `flock(2)`, the same call on Glibc, Musl and Darwin (`int flock(int fd, int operation)`); unqualified, since the
/// module-qualified name means the `struct flock` of `fcntl(2)`.
func systemFlock(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}

/// Starts a detached thread running `body`: the toolkit's one way to start a thread of its own (the HTTP server's
/// event loops, ``BlockingPool``'s threads; blocking work runs on the pool, not on a thread of its own). Throws what
/// `pthread_create` returned when no thread could be started; `body` is then not run.
public func startDetachedThread(_ body: @escaping @Sendable () -> Void) throws(Errno) {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Start(body)).toOpaque()
    // Glibc: `pthread_create(UnsafeMutablePointer<pthread_t>, …, @convention(c) (UnsafeMutableRawPointer?) ->
    // UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)`, with `pthread_t` an integer. Darwin's <pthread.h>:
    // `pthread_t _Nullable * _Nonnull` (Swift: `UnsafeMutablePointer<pthread_t?>`, `pthread_t` a pointer) and a start
    // routine `void * _Nullable (* _Nonnull)(void * _Nonnull)` (Swift: `(UnsafeMutableRawPointer) ->
    // UnsafeMutableRawPointer?`). The routine binds its argument to an optional first, which compiles against both.
    #if canImport(Darwin)
        var thread: pthread_t?
    #else
        var thread = pthread_t()
    #endif
    let result = pthread_create(
        &thread, nil,
        { argument in
            let pointer: UnsafeMutableRawPointer? = argument
            guard let pointer else { return nil }
            Unmanaged<Start>.fromOpaque(pointer).takeRetainedValue().body()
            return nil
        }, context)
    guard result == 0 else {
        Unmanaged<Start>.fromOpaque(context).release()
        throw Errno(rawValue: result)
    }
    #if canImport(Darwin)
        if let thread { _ = pthread_detach(thread) }
    #else
        _ = pthread_detach(thread)
    #endif
}
