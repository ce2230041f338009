import FileRange
import HTTPWire
import Sockets

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
            Socket(descriptor: s.fd).setTimeout(seconds, for: .receive)
            s.shortened = shortened
        }
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
        if fd >= 0 { Socket(descriptor: fd).close() }
    }

    /// Runs blocking `work` on a thread of FileRange's ``BlockingPool`` (never on Swift's cooperative pool); a
    /// cancellation of the calling task shuts the connection down so that a blocked call returns, and calls
    /// `onCancel` (a connect under way stops at its next look, ``ConnectCancellation``). A cancelled task throws
    /// `CancellationError`, whatever `work` returned.
    static func run<T: Sendable>(
        _ connection: Connection?, onCancel: @escaping @Sendable () -> Void = {},
        _ work: @escaping @Sendable () throws(HTTPClientError) -> T
    ) async throws -> T {
        try Task.checkCancellation()
        // One exchange uses a connection at a time, so its calls never overlap: no queue of its own is needed.
        let result = await withTaskCancellationHandler {
            await BlockingPool.shared.run { () -> Result<T, HTTPClientError> in
                do throws(HTTPClientError) {
                    return .success(try work())
                } catch {
                    return .failure(error)
                }
            }
        } onCancel: {
            connection?.abort()
            onCancel()
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
            if s.fd >= 0 { Socket(descriptor: s.fd).shutdown() }
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
        if fd >= 0 { Socket(descriptor: fd).close() }
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
            guard (try? Socket(descriptor: s.fd).setNonBlocking(true)) != nil else { return nil }
            defer { s.buffer = [] }
            return (s.fd, s.buffer)
        }
    }

    /// Takes the socket back from a relay (blocking mode again).
    func takeBack() {
        state.withLock { s in
            guard s.fd >= 0 else { return }
            try? Socket(descriptor: s.fd).setNonBlocking(false)
        }
    }

    /// Whether the connection is idle and still open: nothing to read (a readable idle socket is closed or
    /// holding junk).
    func isIdleAndOpen() -> Bool {
        let fd = self.fd
        guard fd >= 0, state.withLock({ !$0.aborted && $0.buffer.isEmpty && $0.machine.state == .idle }) else {
            return false
        }
        return (try? Socket(descriptor: fd).wait(for: .readable, timeout: .zero)) == false
    }

    /// Opens a connection to the target's host, trying each address the policy allows, each within the connect
    /// timeout; reads and writes then time out after the idle timeout. Once `cancellation` is cancelled, a connect
    /// under way stops within ``Socket/cancellationCheckInterval`` and no further address is tried.
    static func establish(
        _ target: Target, pool: ConnectionPool, url: String, deadline: Deadline? = nil,
        cancellation: ConnectCancellation? = nil
    ) throws(HTTPClientError) -> Connection {
        if pool.policy.refusesLoopbackNames, UpstreamAddressPolicy.isLoopbackName(target.host) {
            throw HTTPClientError(
                .addressRefused, "\(target.host) is a loopback name (a private upstream)", url: url)
        }
        do {
            return try Resolver.withAddresses(target.host, port: target.port) {
                (first) throws(HTTPClientError) -> Connection in
                try establish(
                    first, target: target, pool: pool, url: url, deadline: deadline, cancellation: cancellation)
            }
        } catch {
            throw error.at(url)
        }
    }

    private static func establish(
        _ first: UnsafeMutablePointer<addrinfo>, target: Target, pool: ConnectionPool, url: String,
        deadline: Deadline?, cancellation: ConnectCancellation?
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
            // Close-on-exec and no SIGPIPE, as every socket of the toolkit (Sockets); connected without blocking,
            // so that a cancelled request stops waiting for a peer that does not answer.
            guard let address = entry.pointee.ai_addr else { continue }
            let socket: Socket
            do {
                socket = try Socket.tcp(family: entry.pointee.ai_family, protocol: entry.pointee.ai_protocol)
            } catch {
                last = error
                lastText = "\(error)"
                continue
            }
            let outcome = socket.connect(
                to: address, length: UInt32(entry.pointee.ai_addrlen), timeout: connectTimeout,
                isCancelled: { cancellation?.isCancelled ?? false })
            switch outcome {
            case .connected:
                break
            case .cancelled:
                socket.close()
                throw HTTPClientError(.other, "the request was cancelled while connecting", url: url)
            case .timedOut:
                last = .timedOut
                lastText = "connect timed out"
            case .failed(let error):
                last = error
                lastText = "\(error)"
            }
            guard outcome == .connected else {
                socket.close()
                continue
            }
            do {
                try socket.setNonBlocking(false)
            } catch {
                socket.close()
                last = error
                lastText = "\(error)"
                continue
            }
            socket.setTimeout(pool.idleTimeout, for: .receive)
            socket.setTimeout(pool.idleTimeout, for: .send)
            socket.setNoDelay()
            let fd = socket.descriptor
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
            let result: IOResult<Int>
            do {
                result = try bytes.withUnsafeBytes { (raw) throws(Errno) -> IOResult<Int> in
                    guard let base = raw.baseAddress else { return .done(0) }
                    return try Socket(descriptor: fd).send(base + offset, count: raw.count - offset)
                }
            } catch let error as Errno {
                throw failure(error, "sending the request")
            } catch {
                throw HTTPClientError(.other, "sending the request failed: \(error)")
            }
            guard case .done(let sent) = result else {
                // A blocking socket whose send timeout passed.
                throw failure(.wouldBlock, "sending the request")
            }
            offset += sent
        }
    }

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
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            do throws(Errno) {
                switch try Socket(descriptor: fd).receive(into: base, count: count, waitAll: waitAll) {
                case .done(let n): initialized = n
                case .wouldBlock: failed = .wouldBlock  // a blocking socket whose receive timeout passed
                }
            } catch {
                failed = error
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

/// Cancels a connect under way on another thread: the connecting thread looks at it between short waits
/// (``Socket/connect(to:length:timeout:isCancelled:)``).
final class ConnectCancellation: Sendable {
    private let cancelled = LockedValue(false)

    func cancel() { cancelled.withLock { $0 = true } }

    var isCancelled: Bool { cancelled.withLock { $0 } }
}
