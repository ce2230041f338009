public import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outcome of a non-blocking system call: a value, or "try again later" (`EAGAIN`), which is not an error.
enum IOResult<T> {
    case done(T)
    case wouldBlock
}

/// The one wrapper every socket call goes through (STYLE.md item 9): retries `EINTR`, reports `EAGAIN` /
/// `EWOULDBLOCK` as ``IOResult/wouldBlock``, throws any other failure as a typed ``Errno``.
@inline(__always)
func syscall<T: FixedWidthInteger & SignedInteger>(_ body: () -> T) throws(Errno) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let error = errno
        if error == EINTR { continue }
        if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
        throw Errno(rawValue: error)
    }
}

/// A server-side error with its context: what failed, the errno, and where.
public struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case socket, bind, listen, eventLoop, invalidConfiguration, alreadyStarted, notRunning
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let socket = Code(.socket)
        public static let bind = Code(.bind)
        public static let listen = Code(.listen)
        public static let eventLoop = Code(.eventLoop)
        public static let invalidConfiguration = Code(.invalidConfiguration)
        public static let alreadyStarted = Code(.alreadyStarted)
        public static let notRunning = Code(.notRunning)
        public var description: String { "\(value)" }
    }
    public var code: Code
    public var errno: Errno?
    /// The address involved, if any (e.g. `127.0.0.1:8080`).
    public var address: String?
    public var message: String?

    public init(_ code: Code, errno: Errno? = nil, address: String? = nil, message: String? = nil) {
        self.code = code
        self.errno = errno
        self.address = address
        self.message = message
    }

    public var description: String {
        var text = "\(code)"
        if let address { text += " \(address)" }
        if let message { text += ": \(message)" }
        if let errno { text += ": \(errno)" }
        return text
    }
}

/// Monotonic nanoseconds.
func monotonicNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(fd)
    #else
        _ = Darwin.close(fd)
    #endif
}

/// Socket helpers over the C API.
enum SocketOps {
    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Prepares an accepted socket: non-blocking (Darwin), no SIGPIPE (Darwin), no Nagle delay.
    static func configureAccepted(_ fd: Int32) {
        #if canImport(Darwin)
            setNonBlocking(fd)
            setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Creates a listening socket bound to a numeric address.
    static func listen(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, port: UInt16)
    {
        let isIPv6 = host.contains(":")
        let display = isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
        #if canImport(Glibc)
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
            let type = SOCK_STREAM
        #endif
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, type, 0)
        guard fd >= 0 else { throw HTTPServerError(.socket, errno: .current, address: display) }
        #if canImport(Darwin)
            setNonBlocking(fd)
            setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        var bound: Int32
        if isIPv6 {
            setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                closeDescriptor(fd)
                throw HTTPServerError(.invalidConfiguration, address: display, message: "not a numeric IPv6 address")
            }
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                closeDescriptor(fd)
                throw HTTPServerError(.invalidConfiguration, address: display, message: "not a numeric IPv4 address")
            }
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard bound == 0 else {
            let error = Errno.current
            closeDescriptor(fd)
            throw HTTPServerError(.bind, errno: error, address: display)
        }
        guard Glibc_or_Darwin_listen(fd, backlog) == 0 else {
            let error = Errno.current
            closeDescriptor(fd)
            throw HTTPServerError(.listen, errno: error, address: display)
        }
        return (fd, localPort(fd))
    }

    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer -> UInt16 in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        }
    }

    /// `host:port` of a peer address.
    static func describe(_ storage: inout sockaddr_storage) -> String {
        var text = [CChar](repeating: 0, count: 64)
        let family = Int32(storage.ss_family)
        if family == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address -> String in
                    var addr = address.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &addr, &text, 64)
                    let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    return "[\(host)]:\(UInt16(bigEndian: address.pointee.sin6_port))"
                }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address -> String in
                var addr = address.pointee.sin_addr
                _ = inet_ntop(AF_INET, &addr, &text, 64)
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return "\(host):\(UInt16(bigEndian: address.pointee.sin_port))"
            }
        }
    }

    /// Accepts one connection. Returns nil when none is pending.
    static func accept(_ listener: Int32) throws(Errno) -> (fd: Int32, peer: String)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try syscall { () -> Int32 in
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    #if os(Linux)
                        sys_accept4(
                            listener, UnsafeMutableRawPointer(address), &length,
                            Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                    #else
                        Darwin.accept(listener, address, &length)
                    #endif
                }
            }
        }
        switch result {
        case .wouldBlock: return nil
        case .done(let fd):
            configureAccepted(fd)
            return (fd, describe(&storage))
        }
    }

    /// Writes without raising SIGPIPE.
    @inline(__always)
    static func send(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, more: Bool = false) throws(Errno)
        -> IOResult<Int>
    {
        #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        #else
            let flags: Int32 = 0  // SO_NOSIGPIPE is set on the socket
        #endif
        return try syscall { Glibc_or_Darwin_send(fd, pointer, count, flags) }
    }

    @inline(__always)
    static func receive(_ fd: Int32, _ pointer: UnsafeMutableRawPointer, _ count: Int) throws(Errno) -> IOResult<Int> {
        try syscall { recv(fd, pointer, count, 0) }
    }

    /// Sends up to `count` bytes of `file` from `offset` with `sendfile` (zero copy). Returns bytes sent.
    static func sendFile(socket: Int32, file: Int32, offset: UInt64, count: Int) throws(Errno) -> IOResult<Int> {
        #if canImport(Glibc)
            var position = off_t(truncatingIfNeeded: offset)
            return try syscall { Glibc.sendfile(socket, file, &position, count) }
        #else
            var length = off_t(count)
            let result = Darwin.sendfile(file, socket, off_t(truncatingIfNeeded: offset), &length, nil, 0)
            if result == 0 || length > 0 { return .done(Int(length)) }
            let error = errno
            if error == EAGAIN || error == EINTR { return .wouldBlock }
            throw Errno(rawValue: error)
        #endif
    }
}

@inline(__always)
private func Glibc_or_Darwin_listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.listen(fd, backlog)
    #else
        Darwin.listen(fd, backlog)
    #endif
}

@inline(__always)
private func Glibc_or_Darwin_send(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    #if canImport(Glibc)
        Glibc.send(fd, pointer, count, flags)
    #else
        Darwin.send(fd, pointer, count, flags)
    #endif
}
