public import FileRange
import HTTPWire

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
            case socket, bind, listen, eventLoop, invalidConfiguration, alreadyStarted, notRunning, listenerFailed
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
        /// A listening socket died while the server ran (on iOS, the system reclaims the sockets of a suspended
        /// app): the server accepts no more connections until ``HTTPServer/revive(gracePeriod:)``.
        public static let listenerFailed = Code(.listenerFailed)
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

/// Socket helpers over the C API.
enum SocketOps {
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Prepares an accepted socket: non-blocking and no SIGPIPE (``Platform/prepareSocket(_:)``), no Nagle delay.
    static func configureAccepted(_ fd: Int32) {
        Platform.prepareSocket(fd)
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Creates a listening socket bound to a numeric address.
    static func listen(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, port: UInt16)
    {
        let isIPv6 = host.contains(":")
        let display = isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Platform.listenerSocketType, 0)
        guard fd >= 0 else { throw HTTPServerError(.socket, errno: .current, address: display) }
        Platform.prepareSocket(fd)
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        var bound: Int32
        if isIPv6 {
            setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
            var address = Platform.ipv6Address(port: port)
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
            var address = Platform.ipv4Address(port: port)
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
        guard Platform.listen(fd, backlog) == 0 else {
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
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Platform.accept(listener, $0, &length) }
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
        let flags = Platform.sendFlags(more: more)
        return try syscall { Platform.send(fd, pointer, count, flags) }
    }

    @inline(__always)
    static func receive(_ fd: Int32, _ pointer: UnsafeMutableRawPointer, _ count: Int) throws(Errno) -> IOResult<Int> {
        try syscall { recv(fd, pointer, count, 0) }
    }

    /// Sends up to `count` bytes of `file` from `offset` with `sendfile` (zero copy). Returns bytes sent.
    static func sendFile(socket: Int32, file: Int32, offset: UInt64, count: Int) throws(Errno) -> IOResult<Int> {
        try SendFile.run(offset: offset, count: count) { offset, count in
            Platform.sendFileOnce(socket: socket, file: file, offset: offset, count: count)
        }
    }
}

/// The platform-neutral rules around `sendfile`, apart from the call so that tests can drive them.
enum SendFile {
    /// Calls `call` (one sendfile of `count` bytes from `offset`) until `count` bytes are sent, the socket would
    /// block or the call fails. `EINTR` calls again from where the interrupted call stopped: on Darwin an
    /// interrupted call may already have sent bytes, reported in `len`. Bytes sent before `EAGAIN` or a failure are
    /// reported as sent (a failure shows again on the next call); `EAGAIN` with nothing sent is ``IOResult/wouldBlock``.
    /// A success that sent nothing means the offset is at or past the end of the file.
    static func run(offset: UInt64, count: Int, _ call: (_ offset: UInt64, _ count: Int) -> SendFileCall) throws(Errno)
        -> IOResult<Int>
    {
        guard count > 0 else { return .done(0) }
        var total = 0
        while true {
            let outcome = call(offset &+ UInt64(total), count - total)
            total += min(max(0, outcome.sent), count - total)
            guard let error = outcome.error else { return .done(total) }
            if error == EINTR {
                if total < count { continue }
                return .done(total)
            }
            if total > 0 { return .done(total) }
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            throw Errno(rawValue: error)
        }
    }

    /// Whether a sendfile failure means "not for this file or socket" rather than a broken connection: then the
    /// body is copied with pread and send instead. Linux: `EINVAL` (a file that cannot be mapped), `ENOSYS`.
    /// Darwin (sendfile(2)): `ENOTSUP` ("fd does not refer to a regular file"), `EOPNOTSUPP` ("the file system
    /// for fd does not support sendfile"), `EINVAL`; the first two are different numbers on Darwin (45
    /// and 102) and the same one on Linux.
    static func isUnsupported(_ error: Errno) -> Bool {
        switch error.rawValue {
        case EINVAL, ENOSYS, ENOTSUP, EOPNOTSUPP: true
        default: false
        }
    }
}
