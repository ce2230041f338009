import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// LoopbackHTTP's platform layer: every call whose name, types or semantics differ between Darwin and Glibc, so
// that the rest of the package is written once. The readiness APIs (epoll, kqueue) are in Poller.swift, and the
// Linux entry points the Glibc module does not export in LinuxSystem.swift; splice, which only Linux has, is in
// Splice.swift.

/// What one `sendfile` call did: the bytes it sent, and `errno` when it returned -1 (nil on success).
///
/// On Darwin the bytes sent are `*len` on return, which counts bytes sent even when the call fails with `EAGAIN` or
/// `EINTR` (sendfile(2)); on Linux they are the return value, and a failed call sent nothing.
struct SendFileCall: Equatable {
    var sent: Int
    var error: Int32?
}

enum Platform {
    /// The `type` argument of socket(2) for a listener. Glibc imports `SOCK_STREAM` as a `__socket_type` value and
    /// takes `SOCK_NONBLOCK | SOCK_CLOEXEC` in the same call; Darwin's `SOCK_STREAM` is an `Int32` and it has neither
    /// flag (``prepareSocket(_:)`` sets them with fcntl).
    static var listenerSocketType: Int32 {
        #if canImport(Glibc)
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
            SOCK_STREAM
        #endif
    }

    /// Finishes a socket from socket(2) or accept(2). Darwin: non-blocking and close-on-exec (`fcntl`, whose
    /// variadic C form Swift calls through the overlay's `fcntl(_:_:_: Int32)`), and `SO_NOSIGPIPE`, since Darwin
    /// has no `MSG_NOSIGNAL`. Linux: nothing (the flags were given to socket/accept4, and sends pass
    /// `MSG_NOSIGNAL`).
    static func prepareSocket(_ fd: Int32) {
        #if canImport(Darwin)
            let flags = fcntl(fd, F_GETFL, 0)
            if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// The flags of send(2): no SIGPIPE (Linux: `MSG_NOSIGNAL`; Darwin: 0, the socket has `SO_NOSIGPIPE`), and
    /// `MSG_MORE` on Linux when more data follows at once.
    @inline(__always)
    static func sendFlags(more: Bool) -> Int32 {
        #if canImport(Glibc)
            Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        #else
            0
        #endif
    }

    /// An IPv4 socket address (Darwin's has `sin_len`, which Linux lacks).
    static func ipv4Address(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return address
    }

    /// An IPv6 socket address (Darwin's has `sin6_len`).
    static func ipv6Address(port: UInt16) -> sockaddr_in6 {
        var address = sockaddr_in6()
        #if canImport(Darwin)
            address.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
        #endif
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        return address
    }

    /// accept(2); on Linux accept4 with `SOCK_NONBLOCK | SOCK_CLOEXEC`. Returns the descriptor or -1 with `errno`.
    @inline(__always)
    static func accept(
        _ listener: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>
    ) -> Int32 {
        #if canImport(Glibc)
            sys_accept4(
                listener, UnsafeMutableRawPointer(address), length,
                Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        #else
            Darwin.accept(listener, address, length)
        #endif
    }

    @inline(__always)
    static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.listen(fd, backlog)
        #else
            Darwin.listen(fd, backlog)
        #endif
    }

    @inline(__always)
    static func send(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.send(fd, pointer, count, flags)
        #else
            Darwin.send(fd, pointer, count, flags)
        #endif
    }

    /// Shuts down the sending side (`SHUT_WR` is an `Int` enum value in Glibc, an `Int32` in Darwin).
    @inline(__always)
    static func shutdownWrite(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.shutdown(fd, Int32(SHUT_WR))
        #else
            Darwin.shutdown(fd, SHUT_WR)
        #endif
    }

    @inline(__always)
    static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }

    /// One sendfile call for `count` (> 0) bytes of `file` from `offset` to `socket`.
    ///
    /// Darwin: `sendfile(fd, s, offset, &len, hdtr, flags)` with the file first; `len` is in and out, and 0 on the
    /// way in would mean "to the end of the file", which callers never ask for. Linux: `sendfile(out, in, &offset,
    /// count)`.
    static func sendFileOnce(socket: Int32, file: Int32, offset: UInt64, count: Int) -> SendFileCall {
        #if canImport(Darwin)
            var length = off_t(count)
            let result = Darwin.sendfile(file, socket, off_t(clamping: offset), &length, nil, 0)
            let error: Int32? = result == 0 ? nil : errno
            return SendFileCall(sent: Int(max(0, length)), error: error)
        #else
            var position = off_t(clamping: offset)
            let result = Glibc.sendfile(socket, file, &position, count)
            return SendFileCall(sent: max(0, result), error: result < 0 ? errno : nil)
        #endif
    }

    /// The path the kernel has for an open descriptor (after symbolic links), or nil. Linux: the
    /// `/proc/self/fd/N` link; Darwin: `fcntl(fd, F_GETPATH, buffer)`, whose buffer must hold `MAXPATHLEN` bytes
    /// (fcntl(2)).
    static func path(ofOpen fd: Int32) -> String? {
        #if canImport(Darwin)
            var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
            guard fcntl(fd, F_GETPATH, &buffer) != -1 else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink("/proc/self/fd/\(fd)", &buffer, Int(PATH_MAX))
            guard count > 0 else { return nil }
            return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #endif
    }

    /// Whether ``path(ofOpen:)`` can fail for want of the facility rather than because of the file: Linux
    /// containers may have no `/proc`, and then a path is resolved by name instead. Darwin's `F_GETPATH` has no such
    /// gap, so a failure there refuses the file.
    static var openPathMayBeUnavailable: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    /// A `stat`'s modification time: `st_mtimespec` on Darwin, `st_mtim` on Linux.
    static func modificationTime(of info: stat) -> (seconds: Int64, nanoseconds: Int64) {
        #if canImport(Darwin)
            (Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec))
        #else
            (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
        #endif
    }
}

/// `stat` fields the server needs, in one call.
struct FileStatus: Equatable {
    var size: UInt64
    var seconds: Int64
    var nanoseconds: Int64
    var device: UInt64
    var inode: UInt64
    /// The number of links to the file (0 once it was deleted or renamed over while open).
    var links: UInt64 = 1

    static func of(_ fd: Int32) -> FileStatus? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let (seconds, nanoseconds) = Platform.modificationTime(of: info)
        return FileStatus(
            size: UInt64(max(0, info.st_size)), seconds: seconds, nanoseconds: nanoseconds,
            device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino),
            links: UInt64(truncatingIfNeeded: info.st_nlink))
    }
}

func closeDescriptor(_ fd: Int32) { Platform.close(fd) }
