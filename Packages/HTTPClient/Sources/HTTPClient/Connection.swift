import Dispatch
import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Idle keep-alive connections by host and port.
final class ConnectionPool: Sendable {
    let connectTimeout: Double
    let idleTimeout: Double
    let policy: UpstreamAddressPolicy
    let limits: HTTPParserLimits
    private let idle = LockedValue<[String: [Connection]]>([:])
    static let maxIdlePerHost = 32

    init(connectTimeout: Double, idleTimeout: Double, policy: UpstreamAddressPolicy, limits: HTTPParserLimits) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.policy = policy
        self.limits = limits
    }

    /// An idle connection that the server has not closed, if any.
    func take(_ key: String) -> Connection? {
        while let connection = idle.withLock({ $0[key]?.popLast() }) {
            if connection.isIdleAndOpen() { return connection }
            connection.close()
        }
        return nil
    }

    func put(_ connection: Connection, key: String) {
        let kept = idle.withLock { table -> Bool in
            guard (table[key]?.count ?? 0) < Self.maxIdlePerHost else { return false }
            table[key, default: []].append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// How many idle connections wait for this host and port.
    func idleCount(_ key: String) -> Int { idle.withLock { $0[key]?.count ?? 0 } }

    deinit {
        for list in idle.withLock({ $0.values }) {
            for connection in list { connection.close() }
        }
    }
}

/// One TCP connection and its exchange state (``HTTPClientConnectionStateMachine``). Its descriptor is closed
/// once, under a lock, so that shutting it down from a cancellation handler never touches a descriptor number that
/// was reused.
final class Connection: Sendable {
    private struct State {
        var fd: Int32
        var aborted = false
        /// Bytes read past what was consumed (the rest of a head's read, the start of a body).
        var buffer: [UInt8] = []
        var machine = HTTPClientConnectionStateMachine()
        /// The request's deadline while one is armed (``arm(_:)``): each read then waits at most until it.
        var deadline: Deadline?
        /// Whether the receive timeout is set below the idle timeout (for a deadline), to be restored.
        var shortened = false
    }
    private let state: LockedValue<State>
    private let queue = DispatchQueue(label: "HTTPClient.connection")
    let limits: HTTPParserLimits
    let idleTimeout: Double

    private init(fd: Int32, limits: HTTPParserLimits, idleTimeout: Double) {
        state = LockedValue(State(fd: fd))
        self.limits = limits
        self.idleTimeout = idleTimeout
    }

    /// Bounds every read that follows by `deadline` (nil: the idle timeout alone again).
    func arm(_ deadline: Deadline?) {
        let restore = state.withLock { s -> Bool in
            s.deadline = deadline
            return deadline == nil && s.shortened
        }
        if restore { setReceiveTimeout(idleTimeout, shortened: false) }
    }

    private func setReceiveTimeout(_ seconds: Double, shortened: Bool) {
        state.withLock { s in
            guard s.fd >= 0 else { return }
            var timeout = Self.timeoutValue(seconds)
            _ = setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            s.shortened = shortened
        }
    }

    private static func timeoutValue(_ seconds: Double) -> timeval {
        let seconds = max(0.001, seconds)
        var value = timeval()
        value.tv_sec = .init(seconds.rounded(.down))
        value.tv_usec = .init(seconds.truncatingRemainder(dividingBy: 1) * 1e6)
        return value
    }

    /// Before a read: throws the deadline's error once it passed, and shortens the receive timeout to what is left
    /// of it when that is less than the idle timeout.
    private func checkDeadline() throws(HTTPClientError) {
        guard let deadline = state.withLock({ $0.deadline }) else { return }
        let left = deadline.remaining
        guard left > 0 else { throw deadline.error }
        if left < idleTimeout { setReceiveTimeout(left, shortened: true) }
    }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { _ = socketClose(fd) }
    }

    /// Runs blocking `work` on the connection's queue (a fresh queue when there is no connection yet); a
    /// cancellation of the calling task shuts the connection down so that a blocked call returns.
    static func run<T: Sendable>(
        _ connection: Connection?, _ work: @escaping @Sendable () throws(HTTPClientError) -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let queue = connection?.queue ?? DispatchQueue(label: "HTTPClient.connect")
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, HTTPClientError>, Never>) in
                queue.async {
                    do throws(HTTPClientError) {
                        continuation.resume(returning: .success(try work()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            connection?.abort()
        }
        if Task.isCancelled {
            connection?.close()
            throw CancellationError()
        }
        return try result.get()
    }

    /// Shuts the connection down (a blocked read or write returns); it is never reused.
    func abort() {
        state.withLock { s in
            s.aborted = true
            if s.fd >= 0 { _ = shutdown(s.fd, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        let fd = state.withLock { s -> Int32 in
            let fd = s.fd
            s.fd = -1
            s.aborted = true
            _ = s.machine.abandoned()
            return fd
        }
        if fd >= 0 { _ = socketClose(fd) }
    }

    private var fd: Int32 { state.withLock { $0.fd } }

    /// The state machine's verdict once the body was read to its end: whether to pool the connection.
    func bodyFinished() -> HTTPClientConnectionStateMachine.Action {
        state.withLock { $0.machine.bodyFinished() }
    }

    /// Hands the socket to a relay: switches it to non-blocking mode and returns it with the bytes already read
    /// past the response head (at most `limit`), or nil when more than `limit` are buffered or it is closed.
    func lend(limit: UInt64) -> (descriptor: Int32, buffered: [UInt8])? {
        state.withLock { s in
            guard s.fd >= 0, !s.aborted, UInt64(s.buffer.count) <= limit else { return nil }
            let flags = fcntl(s.fd, F_GETFL)
            guard flags >= 0, fcntl(s.fd, F_SETFL, flags | O_NONBLOCK) == 0 else { return nil }
            defer { s.buffer = [] }
            return (s.fd, s.buffer)
        }
    }

    /// Takes the socket back from a relay (blocking mode again).
    func takeBack() {
        state.withLock { s in
            guard s.fd >= 0 else { return }
            let flags = fcntl(s.fd, F_GETFL)
            if flags >= 0 { _ = fcntl(s.fd, F_SETFL, flags & ~O_NONBLOCK) }
        }
    }

    /// Whether the connection is idle and still open: nothing to read (a readable idle socket is closed or
    /// holding junk).
    func isIdleAndOpen() -> Bool {
        let fd = self.fd
        guard fd >= 0, state.withLock({ !$0.aborted && $0.buffer.isEmpty && $0.machine.state == .idle }) else {
            return false
        }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Opens a connection to the target's host, trying each address the policy allows, each within the connect
    /// timeout; reads and writes then time out after the idle timeout.
    static func connect(_ target: Target, pool: ConnectionPool, url: String, deadline: Deadline? = nil)
        throws(HTTPClientError) -> Connection
    {
        if pool.policy.refusesLoopbackNames, UpstreamAddressPolicy.isLoopbackName(target.host) {
            throw HTTPClientError(
                .addressRefused, "\(target.host) is a loopback name (a private upstream)", url: url)
        }
        do {
            return try Resolver.withAddresses(target.host, port: target.port) {
                (first) throws(HTTPClientError) -> Connection in
                try connect(first, target: target, pool: pool, url: url, deadline: deadline)
            }
        } catch {
            throw error.at(url)
        }
    }

    private static func connect(
        _ first: UnsafeMutablePointer<addrinfo>, target: Target, pool: ConnectionPool, url: String,
        deadline: Deadline?
    ) throws(HTTPClientError) -> Connection {
        var last: Errno?
        var lastText = "no address"
        var refused: [String] = []
        var tried = 0
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            tried += 1
            var connectTimeout = pool.connectTimeout
            if let deadline {
                guard deadline.remaining > 0 else { throw deadline.error.at(url) }
                connectTimeout = min(connectTimeout, deadline.remaining)
            }
            if !pool.policy.checksNothing {
                let address = Resolver.numericAddress(entry.pointee.ai_addr, entry.pointee.ai_addrlen)
                if address.map({ !pool.policy.allows($0) }) ?? true {
                    refused.append(address ?? "an unreadable address")
                    continue
                }
            }
            // Close-on-exec, as the server's sockets are: a program the app starts must not inherit the connection.
            #if canImport(Glibc)
                let type = entry.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue)
            #else
                let type = entry.pointee.ai_socktype
            #endif
            let fd = socket(entry.pointee.ai_family, type, entry.pointee.ai_protocol)
            guard fd >= 0 else {
                last = Errno.current
                lastText = "\(Errno.current)"
                continue
            }
            #if !canImport(Glibc)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            #endif
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var result = socketConnect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen)
            if result != 0 && Errno.current == .inProgress {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&descriptor, 1, Int32(clamping: Int((connectTimeout * 1000).rounded(.up))))
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if ready == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 {
                    result = 0
                } else {
                    last = ready == 0 ? .timedOut : Errno(rawValue: error == 0 ? ETIMEDOUT : error)
                    lastText = ready == 0 ? "connect timed out" : "\(Errno(rawValue: error == 0 ? ETIMEDOUT : error))"
                }
            } else if result != 0 {
                last = Errno.current
                lastText = "\(Errno.current)"
            }
            guard result == 0 else {
                _ = socketClose(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            var timeout = timeoutValue(pool.idleTimeout)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
                _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            return Connection(fd: fd, limits: pool.limits, idleTimeout: pool.idleTimeout)
        }
        if !refused.isEmpty, refused.count == tried {
            throw HTTPClientError(
                .addressRefused,
                "\(target.host) resolves only to refused non-public addresses (\(refused.joined(separator: ", ")))",
                url: url)
        }
        // A connect cut short by the request's deadline (a request that got its host's slot just before the deadline)
        // is the deadline's failure, not the address's.
        if let deadline, deadline.remaining <= 0 { throw deadline.error.at(url) }
        let place = "\(target.host):\(target.port)"
        if last == .connectionRefused {
            throw HTTPClientError(
                .connectionRefused, "cannot connect to \(place): \(lastText)", url: url)
        }
        throw HTTPClientError(.connectionFailed, "cannot connect to \(place): \(lastText)", url: url)
    }

    /// The error for a failed socket call.
    private func failure(_ errno: Errno, _ what: String) -> HTTPClientError {
        if state.withLock({ $0.aborted }) { return HTTPClientError(.connectionReset, "the connection was closed") }
        if errno == .wouldBlock {
            if let deadline = state.withLock({ $0.deadline }), deadline.passed { return deadline.error }
            return HTTPClientError(.timedOut, "no data for the idle timeout")
        }
        if errno == .connectionReset || errno == .brokenPipe || errno == .notConnected {
            return HTTPClientError(.connectionReset, "the connection was lost while \(what)")
        }
        return HTTPClientError(.other, "\(what) failed: \(errno)")
    }

    func sendAll(_ bytes: [UInt8]) throws(HTTPClientError) {
        let fd = self.fd
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                socketSend(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Self.sendFlags)
            }
            if sent < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw failure(e, "sending the request")
            }
            offset += sent
        }
    }

    #if canImport(Darwin)
        static let sendFlags: Int32 = 0
    #else
        static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    /// Reads up to `count` bytes into a new array (buffered bytes first); `waitAll` waits until all arrived (or
    /// the timeout, or the end). An empty result means the peer closed the connection.
    func receive(_ count: Int, waitAll: Bool) throws(HTTPClientError) -> [UInt8] {
        let pending = state.withLock { s -> [UInt8] in
            guard !s.buffer.isEmpty else { return [] }
            let n = min(count, s.buffer.count)
            let taken = Array(s.buffer[0..<n])
            s.buffer.removeFirst(n)
            return taken
        }
        if !pending.isEmpty { return pending }
        try checkDeadline()
        let fd = self.fd
        var failed: Errno?
        let bytes = [UInt8](unsafeUninitializedCapacity: max(1, count)) { buffer, initialized in
            while true {
                let n = recv(fd, buffer.baseAddress, count, waitAll ? Int32(MSG_WAITALL) : 0)
                if n < 0 {
                    let e = Errno.current
                    if e == .interrupted { continue }
                    failed = e
                    initialized = 0
                } else {
                    initialized = n
                }
                return
            }
        }
        if let failed { throw failure(failed, "reading") }
        return bytes
    }

    /// Gives back bytes read past what was needed.
    func unread(_ bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty else { return }
        state.withLock { $0.buffer.insert(contentsOf: bytes, at: 0) }
    }

    /// Sends a request head and reads the final response head (1xx interim heads skipped) with the wire layer's
    /// parser; body bytes read with it are kept. Returns the head and what to do next.
    func exchangeHead(_ request: HTTPRequestHead) throws(HTTPClientError)
        -> (HTTPResponseHead, HTTPClientConnectionStateMachine.Action)
    {
        let start = state.withLock { $0.machine.sendingRequest(request) }
        guard start == .readHead else { throw HTTPClientError(.connectionReset, "the connection was closed") }
        try sendAll(request.serialized())
        var parser = HTTPResponseHeadParser(limits: limits)
        var data: [UInt8] = []
        while true {
            switch parser.parse(data) {
            case .needMoreData:
                let more = try receive(16 << 10, waitAll: false)
                if more.isEmpty {
                    _ = state.withLock { $0.machine.peerClosed() }
                    throw HTTPClientError(.connectionReset, "the connection closed before a response")
                }
                data += more
            case .error(let error):
                _ = state.withLock { $0.machine.abandoned() }
                throw HTTPClientError(.invalidResponse, "the server's answer is not valid HTTP: \(error)")
            case .response(let head, let consumed):
                data.removeFirst(consumed)
                parser.reset()
                let action: HTTPClientConnectionStateMachine.Action
                do {
                    action = try state.withLock { (s) throws(HTTPResponseHeadError) in try s.machine.headReceived(head)
                    }
                } catch {
                    throw HTTPClientError(.invalidResponse, "the server's answer is not valid HTTP: \(error)")
                }
                if action == .readHead { continue }
                unread(data[...])
                return (head, action)
            }
        }
    }
}

#if canImport(Glibc)
    private let socketClose = Glibc.close
    private let socketConnect = Glibc.connect
    private let socketSend = Glibc.send
#elseif canImport(Musl)
    private let socketClose = Musl.close
    private let socketConnect = Musl.connect
    private let socketSend = Musl.send
#elseif canImport(Darwin)
    private let socketClose = Darwin.close
    private let socketConnect = Darwin.connect
    private let socketSend = Darwin.send
#endif
