// The one socket type of the toolkit and the C library calls it makes. Everything that differs between Linux and
// Darwin about sockets is decided here: how close-on-exec and non-blocking are set (flags to socket/accept4 on
// Linux; fcntl on Darwin), how SIGPIPE is kept away (MSG_NOSIGNAL on every send on Linux; SO_NOSIGPIPE on the
// socket on Darwin, whose send(2) has no such flag), and the layout of socket addresses (Darwin's `sin_len`).
public import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP socket descriptor: the toolkit's one way to make, connect, accept on, read from and write to a socket.
///
/// Every socket made here (``tcp(family:protocol:nonBlocking:)``, ``listening(host:port:backlog:)``,
/// ``accept()``) is close-on-exec, so a program the app starts inherits no connection, and never raises SIGPIPE
/// when written to after the peer left: ``send(_:count:more:)`` then throws `EPIPE` instead. Calls on a
/// non-blocking socket report "would block" as `FileRange.IOResult.wouldBlock`, a value, never an error; `EINTR` is
/// retried (`FileRange.syscall(connecting:_:)`).
///
/// A `Socket` is the descriptor number and nothing more: copying it does not duplicate the descriptor, and
/// ``close()`` must be called exactly once, by whoever owns it.
public struct Socket: Hashable, Sendable, CustomStringConvertible {
    /// The descriptor number.
    public let descriptor: Int32

    /// Wraps a descriptor that is already a socket (for instance one lent by another owner).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    public var description: String { "socket \(descriptor)" }

    /// The address families ``tcp(family:protocol:nonBlocking:)`` takes: the `ai_family` of a resolved address.
    public static let ipv4Family = Int32(AF_INET)
    public static let ipv6Family = Int32(AF_INET6)

    // MARK: Making sockets

    /// A new TCP socket of `family` (`AF_INET` or `AF_INET6`, such as the `ai_family` of a `getaddrinfo` result),
    /// close-on-exec and without SIGPIPE; non-blocking unless `nonBlocking` is false.
    public static func tcp(family: Int32, protocol: Int32 = 0, nonBlocking: Bool = true) throws(Errno) -> Socket {
        #if canImport(Glibc)
            var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
            return Socket(descriptor: try retryingOnInterrupt { LibC.socket(family, type, `protocol`) })
        #else
            let socket = Socket(descriptor: try retryingOnInterrupt { LibC.socket(family, LibC.stream, `protocol`) })
            do throws(Errno) {
                try socket.finishFlags(nonBlocking: nonBlocking)
            } catch {
                socket.close()
                throw error
            }
            return socket
        #endif
    }

    /// A non-blocking socket listening on `host` (a numeric IPv4 or IPv6 address) and `port` (0: one the system
    /// chooses, see ``localPort``), with `SO_REUSEADDR`; an IPv6 socket takes IPv6 only.
    public static func listening(host: String, port: UInt16, backlog: Int32) throws(SocketError) -> Socket {
        let isIPv6 = host.contains(":")
        let display = isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
        let socket: Socket
        do {
            socket = try tcp(family: isIPv6 ? ipv6Family : ipv4Family)
        } catch {
            throw SocketError(.socket, errno: error, address: display)
        }
        socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1)
        var bound: Int32
        if isIPv6 {
            socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
            var address = SocketAddress.ipv6(port: port)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                socket.close()
                throw SocketError(.invalidAddress, address: display, message: "not a numeric IPv6 address")
            }
            bound = withUnsafePointer(to: &address) {
                LibC.bind(socket.descriptor, UnsafeRawPointer($0), UInt32(MemoryLayout<sockaddr_in6>.size))
            }
        } else {
            var address = SocketAddress.ipv4(port: port)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                socket.close()
                throw SocketError(.invalidAddress, address: display, message: "not a numeric IPv4 address")
            }
            bound = withUnsafePointer(to: &address) {
                LibC.bind(socket.descriptor, UnsafeRawPointer($0), UInt32(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = Errno.current
            socket.close()
            throw SocketError(.bind, errno: error, address: display)
        }
        guard LibC.listen(socket.descriptor, backlog) == 0 else {
            let error = Errno.current
            socket.close()
            throw SocketError(.listen, errno: error, address: display)
        }
        return socket
    }

    /// A connection taken from a listener's queue, and the peer's `host:port`.
    public struct Accepted: Hashable, Sendable {
        public var socket: Socket
        public var peer: String
    }

    /// Takes one connection from a listening socket: non-blocking, close-on-exec and without SIGPIPE, like every
    /// socket made here. `FileRange.IOResult.wouldBlock` when none is pending.
    public func accept() throws(Errno) -> IOResult<Accepted> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try syscall { () -> Int32 in
            withUnsafeMutablePointer(to: &storage) { LibC.accept(descriptor, UnsafeMutableRawPointer($0), &length) }
        }
        guard case .done(let fd) = result else { return .wouldBlock }
        let socket = Socket(descriptor: fd)
        #if !canImport(Glibc)
            do throws(Errno) {
                try socket.finishFlags(nonBlocking: true)
            } catch {
                socket.close()
                throw error
            }
        #endif
        return .done(Accepted(socket: socket, peer: SocketAddress.describe(&storage)))
    }

    #if !canImport(Glibc)
        /// Darwin's socket(2) and accept(2) take no flags: close-on-exec, non-blocking and `SO_NOSIGPIPE` are set
        /// afterwards (`fcntl`, whose variadic C form Swift calls through the overlay's `fcntl(_:_:_: Int32)`).
        private func finishFlags(nonBlocking: Bool) throws(Errno) {
            _ = try retryingOnInterrupt { fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            setOption(SOL_SOCKET, SO_NOSIGPIPE, 1)
            if nonBlocking { try setNonBlocking(true) }
        }
    #endif

    // MARK: Connecting

    /// Starts or finishes connecting to `address` (a `sockaddr_in` or `sockaddr_in6` of `length` bytes, such as
    /// a `getaddrinfo` result's `ai_addr`). On a non-blocking socket a connection that is under way is
    /// `FileRange.IOResult.wouldBlock` (`EINPROGRESS`): wait until the socket is writable, then read
    /// ``pendingError()``.
    public func connect(to address: UnsafeRawPointer, length: UInt32) throws(Errno) -> IOResult<Void> {
        switch try syscall(connecting: true, { LibC.connect(descriptor, address, length) }) {
        case .done: .done(())
        case .wouldBlock: .wouldBlock
        }
    }

    /// How a connection attempt with a timeout ended.
    public enum ConnectOutcome: Hashable, Sendable {
        case connected
        /// The timeout passed before the peer answered.
        case timedOut
        /// `isCancelled` said so while the connection was under way.
        case cancelled
        case failed(Errno)
    }

    /// How often a connection under way asks whether it was cancelled.
    public static let cancellationCheckInterval: Duration = .milliseconds(20)

    /// Connects a non-blocking socket to `address` within `timeout` seconds, asking `isCancelled` at least every
    /// ``cancellationCheckInterval`` while it waits: a cancelled attempt returns ``ConnectOutcome/cancelled`` at
    /// once, without waiting for the peer (a listener that never accepts, an address that never answers). The
    /// socket stays as it was (non-blocking); after anything but ``ConnectOutcome/connected`` close it.
    public func connect(
        to address: UnsafeRawPointer, length: UInt32, timeout: Double, isCancelled: () -> Bool
    ) -> ConnectOutcome {
        if isCancelled() { return .cancelled }
        do {
            if case .done = try connect(to: address, length: length) { return .connected }
        } catch {
            return .failed(error)
        }
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .nanoseconds(Int64(max(0, min(timeout, 1e9)) * 1e9)))
        while true {
            if isCancelled() { return .cancelled }
            let left = clock.now.duration(to: end)
            guard left > .zero else { return .timedOut }
            let ready: Bool
            do {
                ready = try wait(for: .writable, timeout: min(left, Self.cancellationCheckInterval))
            } catch {
                return .failed(error)
            }
            if ready {
                if let error = pendingError() { return .failed(error) }
                return .connected
            }
        }
    }

    /// The socket's pending error (`SO_ERROR`, which reading clears): how a non-blocking connect ended. Nil for
    /// none.
    public func pendingError() -> Errno? {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return .current }
        return error == 0 ? nil : Errno(rawValue: error)
    }

    // MARK: Reading and writing

    /// Sends up to `count` bytes. SIGPIPE is never raised: a peer that left is `EPIPE` (or `ECONNRESET`). `more`
    /// tells Linux that more data follows at once (`MSG_MORE`); Darwin ignores it. On a blocking socket with a send
    /// timeout, a timeout is `FileRange.IOResult.wouldBlock`.
    @inline(__always)
    public func send(_ bytes: UnsafeRawPointer, count: Int, more: Bool = false) throws(Errno) -> IOResult<Int> {
        #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        #else
            let flags: Int32 = 0
        #endif
        return try syscall { LibC.send(descriptor, bytes, count, flags) }
    }

    /// Reads up to `count` bytes into `buffer`; 0 means the peer closed its side. `waitAll` (a blocking socket)
    /// waits until `count` bytes arrived, the peer closed or the receive timeout passed. On a blocking socket with
    /// a receive timeout, a timeout with nothing read is `FileRange.IOResult.wouldBlock`.
    @inline(__always)
    public func receive(into buffer: UnsafeMutableRawPointer, count: Int, waitAll: Bool = false) throws(Errno)
        -> IOResult<Int>
    {
        let flags = waitAll ? Int32(MSG_WAITALL) : 0
        return try syscall { LibC.recv(descriptor, buffer, count, flags) }
    }

    /// What ``wait(for:timeout:)`` waits for.
    public enum Readiness: Hashable, Sendable {
        /// Data to read, a connection to accept, or the peer's close.
        case readable
        /// Room to write, or a connect that ended.
        case writable
    }

    /// Waits at most `timeout` (zero: only looks) until the socket is ready or has an error or hang-up to report;
    /// whether it is. `EINTR` waits again for what is left.
    public func wait(for readiness: Readiness, timeout: Duration) throws(Errno) -> Bool {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: timeout)
        var entry = pollfd(
            fd: descriptor, events: Int16(readiness == .readable ? POLLIN : POLLOUT), revents: 0)
        while true {
            let left = max(.zero, clock.now.duration(to: end))
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(
                clamping: seconds &* 1000 &+ (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            let ready = poll(&entry, 1, milliseconds)
            if ready >= 0 { return ready > 0 }
            let error = Errno.current
            guard error == .interrupted else { throw error }
        }
    }

    // MARK: Options and state

    /// Switches `O_NONBLOCK` on or off.
    public func setNonBlocking(_ on: Bool) throws(Errno) {
        let flags = try retryingOnInterrupt { fcntl(descriptor, F_GETFL) }
        let wanted = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { _ = try retryingOnInterrupt { fcntl(descriptor, F_SETFL, wanted) } }
    }

    /// Whether `O_NONBLOCK` is set.
    public var isNonBlocking: Bool {
        let flags = fcntl(descriptor, F_GETFL)
        return flags >= 0 && flags & O_NONBLOCK != 0
    }

    /// Whether `FD_CLOEXEC` is set (it always is on sockets made here).
    public var isCloseOnExec: Bool {
        let flags = fcntl(descriptor, F_GETFD)
        return flags >= 0 && flags & FD_CLOEXEC != 0
    }

    /// Turns Nagle's delay off (`TCP_NODELAY`): small writes go out at once.
    public func setNoDelay() {
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Bounds each blocking read (`SO_RCVTIMEO`) or write (`SO_SNDTIMEO`) by `seconds` (at least 1 ms); a call that
    /// times out is `FileRange.IOResult.wouldBlock`.
    public func setTimeout(_ seconds: Double, for direction: Direction) {
        let seconds = max(0.001, seconds.isFinite ? min(seconds, 1e9) : 1e9)
        var value = timeval()
        value.tv_sec = .init(seconds.rounded(.down))
        value.tv_usec = .init(seconds.truncatingRemainder(dividingBy: 1) * 1e6)
        let name = direction == .receive ? SO_RCVTIMEO : SO_SNDTIMEO
        _ = setsockopt(descriptor, SOL_SOCKET, name, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// A direction of a connection.
    public enum Direction: Hashable, Sendable {
        case receive, send
    }

    /// The port the socket is bound to (0 when it cannot be read).
    public var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { return 0 }
        return SocketAddress.port(&storage)
    }

    /// The `host:port` the socket is bound to (`[host]:port` for IPv6), or nil when it cannot be read.
    public var localAddress: String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return result == 0 ? SocketAddress.describe(&storage) : nil
    }

    /// Shuts down one or both directions: a blocked read or write on another thread returns, the peer sees the
    /// end. Failures (a socket never connected) are ignored.
    public func shutdown(_ direction: Direction? = nil) {
        switch direction {
        case .send?: _ = LibC.shutdown(descriptor, LibC.shutWrite)
        case .receive?: _ = LibC.shutdown(descriptor, LibC.shutRead)
        case nil: _ = LibC.shutdown(descriptor, LibC.shutBoth)
        }
    }

    /// Closes the descriptor. Not retried on `EINTR` (the descriptor is gone either way on Linux and Darwin).
    public func close() {
        _ = systemClose(descriptor)
    }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}

/// IPv4 and IPv6 socket addresses.
enum SocketAddress {
    /// An IPv4 address with `port` (Darwin's has `sin_len`, which Linux lacks).
    static func ipv4(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return address
    }

    /// An IPv6 address with `port` (Darwin's has `sin6_len`).
    static func ipv6(port: UInt16) -> sockaddr_in6 {
        var address = sockaddr_in6()
        #if canImport(Darwin)
            address.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
        #endif
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        return address
    }

    static func port(_ storage: inout sockaddr_storage) -> UInt16 {
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

    /// `host:port` of an address (`[host]:port` for IPv6).
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
}

/// The C library's socket calls, named apart from ``Socket``'s methods of the same names.
private enum LibC {
    #if canImport(Glibc)
        static let shutRead = Int32(SHUT_RD)
        static let shutWrite = Int32(SHUT_WR)
        static let shutBoth = Int32(SHUT_RDWR)
    #else
        static let stream = SOCK_STREAM
        static let shutRead = SHUT_RD
        static let shutWrite = SHUT_WR
        static let shutBoth = SHUT_RDWR
    #endif

    @inline(__always)
    static func socket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.socket(family, type, proto)
        #elseif canImport(Musl)
            Musl.socket(family, type, proto)
        #else
            Darwin.socket(family, type, proto)
        #endif
    }

    @inline(__always)
    static func bind(_ fd: Int32, _ address: UnsafeRawPointer, _ length: UInt32) -> Int32 {
        let address = address.assumingMemoryBound(to: sockaddr.self)
        #if canImport(Glibc)
            return Glibc.bind(fd, address, socklen_t(length))
        #elseif canImport(Musl)
            return Musl.bind(fd, address, socklen_t(length))
        #else
            return Darwin.bind(fd, address, socklen_t(length))
        #endif
    }

    @inline(__always)
    static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.listen(fd, backlog)
        #elseif canImport(Musl)
            Musl.listen(fd, backlog)
        #else
            Darwin.listen(fd, backlog)
        #endif
    }

    /// accept(2); on Linux accept4 with `SOCK_NONBLOCK | SOCK_CLOEXEC`, so that no other thread's fork ever sees the
    /// descriptor without close-on-exec.
    @inline(__always)
    static func accept(_ fd: Int32, _ address: UnsafeMutableRawPointer, _ length: UnsafeMutablePointer<socklen_t>)
        -> Int32
    {
        #if canImport(Glibc)
            sys_accept4(fd, address, length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        #elseif canImport(Musl)
            Musl.accept(fd, address.assumingMemoryBound(to: sockaddr.self), length)
        #else
            Darwin.accept(fd, address.assumingMemoryBound(to: sockaddr.self), length)
        #endif
    }

    @inline(__always)
    static func connect(_ fd: Int32, _ address: UnsafeRawPointer, _ length: UInt32) -> Int32 {
        let address = address.assumingMemoryBound(to: sockaddr.self)
        #if canImport(Glibc)
            return Glibc.connect(fd, address, socklen_t(length))
        #elseif canImport(Musl)
            return Musl.connect(fd, address, socklen_t(length))
        #else
            return Darwin.connect(fd, address, socklen_t(length))
        #endif
    }

    @inline(__always)
    static func send(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.send(fd, bytes, count, flags)
        #elseif canImport(Musl)
            Musl.send(fd, bytes, count, flags)
        #else
            Darwin.send(fd, bytes, count, flags)
        #endif
    }

    @inline(__always)
    static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.recv(fd, buffer, count, flags)
        #elseif canImport(Musl)
            Musl.recv(fd, buffer, count, flags)
        #else
            Darwin.recv(fd, buffer, count, flags)
        #endif
    }

    @inline(__always)
    static func shutdown(_ fd: Int32, _ how: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.shutdown(fd, how)
        #elseif canImport(Musl)
            Musl.shutdown(fd, how)
        #else
            Darwin.shutdown(fd, how)
        #endif
    }
}

/// Closes a descriptor that is not a socket (a poller's, a pipe's end).
func closeDescriptor(_ fd: Int32) {
    _ = systemClose(fd)
}
