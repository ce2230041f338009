public import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Linux `splice(2)`, which moves bytes between a descriptor and a pipe inside the kernel: a relayed body goes
/// source → pipe → client socket without being copied into the process. The C library declares it (and `pipe2`)
/// only for `_GNU_SOURCE`, so both are looked up at run time; elsewhere (Darwin) ``available`` is false and bodies are pulled
/// as chunks instead.
public enum Splice {
    #if canImport(Glibc)
        private typealias Function =
            @convention(c) (Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32)
            -> Int
        private static let function: Function? = dlsym(nil, "splice").map { unsafeBitCast($0, to: Function.self) }
        private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
        private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }
    #endif

    /// The pipe size asked for (the kernel's default is 64 KiB; `/proc/sys/fs/pipe-max-size` is 1 MiB by default).
    public static let pipeSize: Int32 = 1 << 20

    public static var available: Bool {
        #if canImport(Glibc)
            function != nil
        #else
            false
        #endif
    }

    /// Moves up to `count` bytes from `source` to `destination` (one of them a pipe), never blocking on the pipe;
    /// `more` tells a socket destination that more data follows (like `MSG_MORE`).
    public static func move(from source: Int32, to destination: Int32, count: Int, more: Bool) throws(Errno)
        -> IOResult<Int>
    {
        #if canImport(Glibc)
            guard let function else { throw Errno.notSupported }
            // SPLICE_F_MOVE | SPLICE_F_NONBLOCK, plus SPLICE_F_MORE.
            let flags: UInt32 = more ? 1 | 2 | 4 : 1 | 2
            return try syscall { function(source, nil, destination, nil, count, flags) }
        #else
            throw Errno.notSupported
        #endif
    }

    /// A non-blocking, close-on-exec pipe, enlarged to ``pipeSize`` where allowed, and its capacity.
    public static func makePipe() -> (read: Int32, write: Int32, capacity: Int)? {
        #if canImport(Glibc)
            // Both ends non-blocking and close-on-exec from the start (a process started meanwhile inherits nothing).
            var ends: [Int32] = [-1, -1]
            guard let pipe2, pipe2(&ends, O_NONBLOCK | O_CLOEXEC) == 0 else { return nil }
            // F_SETPIPE_SZ and F_GETPIPE_SZ (Linux values; the C library hides the names without _GNU_SOURCE).
            _ = fcntl(ends[1], 1031, pipeSize)
            let capacity = fcntl(ends[1], 1032)
            return (ends[0], ends[1], capacity > 0 ? Int(capacity) : 64 << 10)
        #else
            return nil
        #endif
    }
}
