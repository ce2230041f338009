/// Timeouts of one connection.
public struct HTTPTimeouts: Sendable, Hashable {
    /// How long a kept-alive connection may sit with no request before it is closed.
    public var idle: Duration = .seconds(60)
    /// How long a client may take to send a whole request head once its first byte arrived; slower → 408.
    public var header: Duration = .seconds(10)
    /// How long a response may wait for the socket to accept more bytes; longer → the connection is closed.
    public var writeStall: Duration = .seconds(30)
    public init() {}
    public init(idle: Duration, header: Duration, writeStall: Duration) {
        self.idle = idle
        self.header = header
        self.writeStall = writeStall
    }
}

extension Duration {
    /// The duration in nanoseconds, 0 when negative and clamped far below `UInt64.max` (deadlines add to it).
    public var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (ns, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max / 2 : ns &+ UInt64(attoseconds / 1_000_000_000)
    }
}

/// The lifecycle of one HTTP/1.1 connection as a value type (RFC 9112 §9): the socket layer feeds it events and
/// executes the actions it returns; it does no I/O itself, so tests drive it directly.
///
/// One request is handled at a time. Bytes of pipelined requests that arrive meanwhile stay buffered and are
/// parsed only once the current response has been written, so responses go out in request order.
/// Times are monotonic nanoseconds supplied by the caller.
public struct HTTPConnectionStateMachine: Sendable {
    public enum State: Hashable, Sendable {
        /// Waiting for the first byte of a request (a new or kept-alive connection).
        case idle
        /// Some bytes of a request head have arrived; the head is not complete.
        case readingHead
        /// A request was dispatched; its response has not been fully written.
        case responding
        /// The connection is finished (or must be closed once the current write completes).
        case closed
    }

    public enum Action: Hashable, Sendable {
        /// Nothing to do.
        case none
        /// Try to parse a request head from the buffered bytes.
        case parse
        /// Hand the parsed request to the handler. Serialise the response with `Connection: close` unless
        /// `keepAlive` (read ``keepAlive`` again when the head is written: a shutdown may have cleared it).
        case dispatch(keepAlive: Bool)
        /// Write this error response (with `Connection: close`), then close.
        case sendErrorAndClose(HTTPStatus)
        /// Close the socket now.
        case close
    }

    public private(set) var state: State = .idle
    /// Whether the connection stays open after the response in progress.
    public private(set) var keepAlive = true
    /// Whether a graceful shutdown has begun.
    public private(set) var isShuttingDown = false
    /// Whether the peer has stopped sending (read side at end of file).
    public private(set) var peerClosedRead = false
    /// The next time ``tick(now:)`` has something to do.
    public private(set) var deadline: UInt64

    /// The timeouts in nanoseconds, converted once (every event sets a deadline from one of them).
    private let idleTimeout: UInt64
    private let headerTimeout: UInt64
    private let writeStallTimeout: UInt64
    private var responseHeadSent = false

    /// A new connection accepted at `now`.
    public init(timeouts: HTTPTimeouts = HTTPTimeouts(), now: UInt64) {
        idleTimeout = timeouts.idle.nanosecondsClamped
        headerTimeout = timeouts.header.nanosecondsClamped
        writeStallTimeout = timeouts.writeStall.nanosecondsClamped
        self.deadline = now &+ idleTimeout
    }

    /// Bytes were appended to the connection's buffer.
    public mutating func bytesReceived(now: UInt64) -> Action {
        switch state {
        case .idle:
            state = .readingHead
            deadline = now &+ headerTimeout
            return .parse
        case .readingHead:
            return .parse
        case .responding, .closed:
            return .none  // pipelined bytes stay buffered until the response is written
        }
    }

    /// The parser needs more bytes. `bufferedBytes` is how many bytes of the next head are already buffered.
    public mutating func needMoreData(bufferedBytes: Int, now: UInt64) -> Action {
        if bufferedBytes == 0, state == .readingHead {
            state = .idle
            deadline = now &+ idleTimeout
        } else if bufferedBytes > 0, state == .idle {
            state = .readingHead
            deadline = now &+ headerTimeout
        }
        if peerClosedRead, state == .idle || state == .readingHead {
            state = .closed
            return .close
        }
        return .none
    }

    /// A complete request head was parsed.
    public mutating func headParsed(_ request: HTTPRequestHead, now: UInt64) -> Action {
        guard state == .idle || state == .readingHead else { return .none }
        state = .responding
        responseHeadSent = false
        keepAlive = request.wantsKeepAlive && !isShuttingDown
        deadline = now &+ writeStallTimeout
        return .dispatch(keepAlive: keepAlive)
    }

    /// The parser refused the head. If no response has started, answer `status` and close; otherwise close.
    public mutating func parseFailed(status: HTTPStatus) -> Action {
        guard state != .closed else { return .none }
        let mayAnswer = state != .responding
        state = .closed
        keepAlive = false
        return mayAnswer ? .sendErrorAndClose(status) : .close
    }

    /// The response cannot be kept alive (for example a close-delimited body, or an HTTP/1.0 stream).
    public mutating func mustCloseAfterResponse() { keepAlive = false }

    /// The response head was handed to the socket.
    public mutating func responseHeadWritten(now: UInt64) {
        responseHeadSent = true
        deadline = now &+ writeStallTimeout
    }

    /// Some response bytes were written (resets the write-stall timer).
    public mutating func wroteBytes(now: UInt64) {
        if state == .responding { deadline = now &+ writeStallTimeout }
    }

    /// The response was written completely.
    public mutating func responseFinished(now: UInt64) -> Action {
        guard state == .responding else { return state == .closed ? .close : .none }
        if !keepAlive || isShuttingDown {
            state = .closed
            return .close
        }
        state = .idle
        deadline = now &+ idleTimeout
        return .parse  // a pipelined request may already be buffered
    }

    /// The response failed after it started (a file error, a producer that ended early): the only honest
    /// signal left is to close. Before the head was sent, the caller answers 500 instead.
    public mutating func responseFailed() -> Action {
        state = .closed
        keepAlive = false
        return .close
    }

    /// Whether the response head has been written (an error after that point can only close).
    public var hasSentResponseHead: Bool { responseHeadSent }

    /// The peer shut down its sending side (read returned 0).
    public mutating func readEOF() -> Action {
        peerClosedRead = true
        switch state {
        case .idle:
            state = .closed
            return .close
        case .readingHead:
            // A partial head that can never complete; the caller may still have a complete pipelined head
            // buffered, so it asks the parser first and calls `needMoreData`, which closes.
            return .parse
        case .responding:
            keepAlive = false  // finish the response, then close (half-close)
            return .none
        case .closed:
            return .none
        }
    }

    /// A socket error (reset, broken pipe): nothing more can be written.
    public mutating func socketError() -> Action {
        state = .closed
        return .close
    }

    /// Time passed; checks the deadline of the current state.
    public mutating func tick(now: UInt64) -> Action {
        guard now >= deadline else { return .none }
        switch state {
        case .idle:
            state = .closed
            return .close
        case .readingHead:
            state = .closed
            keepAlive = false
            return .sendErrorAndClose(.requestTimeout)
        case .responding:
            state = .closed
            return .close  // the write stalled (or a handler never answered)
        case .closed:
            return .close
        }
    }

    /// A graceful shutdown began: idle connections close now, a response in flight finishes and then closes.
    public mutating func shutdown() -> Action {
        isShuttingDown = true
        switch state {
        case .idle, .readingHead:
            state = .closed
            return .close
        case .responding:
            if !responseHeadSent { keepAlive = false }
            if responseHeadSent && keepAlive { keepAlive = false }
            return .none
        case .closed:
            return .none
        }
    }
}
