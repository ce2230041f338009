public import HTTPWire

/// A parsed request head and the route parameters the router matched.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as received (RFC 9112 §3.2), for example `/a%20b?x=1` or `*`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// Route parameters by name, percent-decoded once. A `**` wildcard is joined with `/`.
    public var parameters: [String: String] = [:]
    /// The segments matched by a trailing `**` wildcard, each percent-decoded once (never joined, so an encoded
    /// `/` cannot become a separator).
    public var wildcardSegments: [String] = []
    /// The remote peer, for logs (e.g. `127.0.0.1:53122`).
    public var remoteAddress: String = ""
    /// The session token the route matched, for routes under a ``SessionToken`` or a ``SessionTokenSet``.
    public var sessionToken: SessionToken?
    /// The local address the request arrived on, when it is not loopback (only with
    /// ``HTTPServerConfiguration/listensOnLocalNetwork``): a `Host` that names it is accepted.
    var localHost: String?

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = [:]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The request a parsed head starts.
    public init(_ head: HTTPRequestHead) {
        self.init(method: head.method, target: head.target, version: head.version, headers: head.headers)
    }

    /// The head alone, as parsed.
    public var head: HTTPRequestHead {
        HTTPRequestHead(method: method, target: target, version: version, headers: headers)
    }

    /// The path part of the target (before `?`), still percent-encoded. For an absolute-form target
    /// (`http://host/p`), the path of that URI.
    public var path: Substring { HTTPRequestHead.path(ofTarget: target) }

    /// The query part of the target (after `?`), if any.
    public var query: Substring? { HTTPRequestHead.query(ofTarget: target) }

    /// Whether the client asked to keep the connection open after this exchange (RFC 9112 §9.3).
    public var wantsKeepAlive: Bool { HTTPRequestHead.wantsKeepAlive(version: version, headers: headers) }
}
