public import HTTPWire

/// One request the client sends.
public struct HTTPClientRequest: Hashable, Sendable {
    public var url: String
    public var method: HTTPMethod
    /// The caller's fields, in order; the client owns `Host`, `Connection`, `Accept-Encoding`, `Content-Length`
    /// and `Transfer-Encoding` and drops those (and any field with a line break) from the list.
    public var headers: HTTPHeaders
    /// Where the credentials among ``headers`` may go, checked on this URL and on every redirect target; nil: the
    /// scope of credentials given with ``url`` itself (sent to its host only).
    public var credentials: CredentialScope?
    /// Seconds this request may take in all, in place of ``HTTPClientConfiguration/deadline`` (a caller's retry
    /// loop gives each attempt what is left of its own deadline).
    public var deadline: Double?
    /// Seconds from this request's start to the end of its streamed body (``HTTPClient/send(_:)``), however slowly
    /// the server trickles after the head: past it the body throws ``HTTPClientError/Code/timedOut`` naming the
    /// URL, and its connection is closed (a socket lent to a relay, ``SocketBody``, is shut down, which ends the
    /// relay). Nil: a streamed body has ``HTTPClientConfiguration/idleTimeout`` between bytes and no bound in all.
    public var bodyDeadline: Double?

    /// A request for `url`; with `credentials`, the secret fields among `headers` are left out at once when `url` is
    /// not in that scope (so any transport sends only what it may), and the client asks the scope again at every
    /// redirect.
    public init(
        url: String, method: HTTPMethod = .get, headers: HTTPHeaders = [:], credentials: CredentialScope? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = credentials.map { $0.fields(headers, for: url) } ?? headers
        self.credentials = credentials
    }

    /// The first value of a field, matched case-insensitively.
    public func header(_ name: String) -> String? { headers.first(name: name) }
}

/// The head of a response and its body as a stream of chunks.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    /// The body in chunks; it ends normally when the body is complete, or throws when the transfer failed.
    public var body: AsyncThrowingStream<[UInt8], any Error>
    /// The same body as the connection's socket, for a relay that moves the bytes in the kernel instead of
    /// reading ``body``; set for a plain-http body of known length.
    public var socketBody: SocketBody?
    /// The URL that answered, after the redirects the client followed.
    public var url: String?

    public init(
        status: Int, headers: HTTPHeaders, body: AsyncThrowingStream<[UInt8], any Error>,
        socketBody: SocketBody? = nil, url: String? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.socketBody = socketBody
        self.url = url
    }

    /// The first value of a field, matched case-insensitively.
    public func header(_ name: String) -> String? { headers.first(name: name) }

    /// Content-Length as a number, when present and valid.
    public var contentLength: UInt64? {
        header("Content-Length").flatMap { HTTPASCII.parseDecimal(HTTPASCII.trimmed(Array($0.utf8))) }
    }
}

/// A response read whole (see ``HTTPClient/fetch(_:maxBytes:)``).
public struct HTTPWholeResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The URL that answered, after the redirects the client followed.
    public var url: String?

    public init(status: Int, headers: HTTPHeaders, body: [UInt8], url: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// Collects a streamed response, failing past `maxBytes`.
    public init(collecting response: HTTPClientResponse, maxBytes: Int) async throws {
        var body: [UInt8] = []
        for try await chunk in response.body {
            body += chunk
            guard body.count <= maxBytes else {
                throw HTTPClientError(
                    .tooLarge, "the body is longer than \(maxBytes) bytes", url: response.url ?? "")
            }
        }
        self.init(status: response.status, headers: response.headers, body: body, url: response.url)
    }

    /// The first value of a field, matched case-insensitively.
    public func header(_ name: String) -> String? { headers.first(name: name) }
}

/// What sends requests: ``HTTPClient`` in apps and tools, a fake in tests of the layers above.
public protocol HTTPTransport: Sendable {
    /// Sends the request and returns once the response head arrived. Cancelling the calling task, or dropping the
    /// body stream, cancels the transfer.
    func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse
}
