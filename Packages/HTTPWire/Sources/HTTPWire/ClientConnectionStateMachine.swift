/// The client's side of one HTTP/1.1 connection as a value type (RFC 9112 §6, §9): one exchange at a time (no
/// pipelining). The socket layer sends the request, reads bytes and feeds them in, and executes the actions it
/// gets back; it does no I/O itself, so tests drive it directly.
///
/// The keep-alive decision is made here: a connection goes back to the pool only when both sides wanted it kept
/// open, the body was delimited by length or chunks, and it was read to its end.
public struct HTTPClientConnectionStateMachine: Sendable {
    public enum State: Hashable, Sendable {
        /// Open and unused: a request may be sent.
        case idle
        /// A request was sent; its response head has not been read.
        case awaitingHead
        /// The head was read; the body is being read with this framing.
        case readingBody(HTTPBodyFraming)
        /// The connection must not be used again.
        case closed
    }

    public enum Action: Hashable, Sendable {
        /// Nothing to do.
        case none
        /// Read (more of) the response head.
        case readHead
        /// Read the body with this framing.
        case readBody(HTTPBodyFraming)
        /// The exchange is complete and the connection may serve another request: put it back in the pool.
        case returnToPool
        /// Close the connection.
        case close
    }

    public private(set) var state: State = .idle
    private var method: HTTPMethod = .get
    private var requestKeepAlive = true
    private var responseKeepAlive = true

    public init() {}

    /// A request head is about to be written. Returns ``Action/readHead``, or ``Action/close`` when the connection
    /// is not idle (it cannot carry a second exchange at once).
    public mutating func sendingRequest(_ head: HTTPRequestHead) -> Action {
        guard state == .idle else {
            state = .closed
            return .close
        }
        method = head.method
        requestKeepAlive = head.wantsKeepAlive
        state = .awaitingHead
        return .readHead
    }

    /// A response head was read. Interim (1xx) heads are skipped (another head follows); a final head decides the
    /// body's framing (and throws when its framing is refused, after which the connection is closed).
    public mutating func headReceived(_ head: HTTPResponseHead) throws(HTTPResponseHeadError) -> Action {
        guard state == .awaitingHead else {
            state = .closed
            return .close
        }
        if head.isInterim, head.status.code != 101 { return .readHead }
        let framing: HTTPBodyFraming
        do {
            framing = try head.bodyFraming(requestMethod: method)
        } catch {
            state = .closed
            throw error
        }
        responseKeepAlive = head.keepAlive && framing != .untilClose && head.status.code != 101
        if framing == .none { return finish() }
        state = .readingBody(framing)
        return .readBody(framing)
    }

    /// The body was read to its end (the length reached, the last chunk read, or the close of a close-delimited
    /// body).
    public mutating func bodyFinished() -> Action {
        guard case .readingBody = state else {
            state = .closed
            return .close
        }
        return finish()
    }

    /// The peer closed the connection. For a close-delimited body that is its end (``Action/close`` and the body
    /// is complete); anywhere else the exchange failed (`complete` false).
    public mutating func peerClosed() -> (action: Action, complete: Bool) {
        let complete = state == .readingBody(.untilClose)
        state = .closed
        return (.close, complete)
    }

    /// The reader stopped before the end of the body, or an error happened: the connection is in an unknown
    /// place of the stream and is closed.
    public mutating func abandoned() -> Action {
        state = .closed
        return .close
    }

    private mutating func finish() -> Action {
        if requestKeepAlive && responseKeepAlive {
            state = .idle
            return .returnToPool
        }
        state = .closed
        return .close
    }
}
