import FileRange
public import HTTPWire
import TextCodecs

/// What answers a request.
///
/// An ``immediate(_:)`` handler runs on the event-loop thread that read the request, with no task hop: use it
/// for work that never blocks for long (in-memory bodies, opening a local file). Any other handler is `async`
/// and runs in a task of its own; its response is handed back to the event loop. A ``deferred(_:)`` handler is
/// called on the event loop too, but answers later, from any thread, through an ``HTTPResponder``: a handler that
/// must block (a socket read on a dispatch queue) answers with two thread hand-offs instead of an async
/// handler's four.
public struct HTTPHandler: Sendable {
    enum Kind: Sendable {
        case immediate(@Sendable (HTTPRequest) -> HTTPResponse)
        case async(@Sendable (HTTPRequest) async -> HTTPResponse)
        case deferred(@Sendable (HTTPRequest, HTTPResponder) -> Void)
    }
    let kind: Kind

    /// An async handler.
    public init(_ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) { kind = .async(body) }

    /// A handler that runs synchronously on the event loop (it must not block).
    public static func immediate(_ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) -> HTTPHandler {
        HTTPHandler(kind: .immediate(body))
    }

    /// A handler called on the event loop (it must not block) that answers later, from any thread, with
    /// ``HTTPResponder/respond(_:)``.
    public static func deferred(_ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) -> HTTPHandler {
        HTTPHandler(kind: .deferred(body))
    }

    private init(kind: Kind) { self.kind = kind }

    /// Runs the handler (in process).
    public func callAsFunction(_ request: HTTPRequest) async -> HTTPResponse {
        switch kind {
        case .immediate(let body): return body(request)
        case .async(let body): return await body(request)
        case .deferred(let body):
            return await withCheckedContinuation { continuation in
                body(request, HTTPResponder { continuation.resume(returning: $0) })
            }
        }
    }
}

/// How a ``HTTPHandler/deferred(_:)`` handler answers: ``respond(_:)`` once, from any thread. Later calls are
/// ignored; a responder dropped without an answer answers `500 Internal Server Error`, so a request is never left
/// waiting.
public final class HTTPResponder: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let answered = LockedValue<Bool>(false)

    init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) { self.deliver = deliver }

    deinit {
        if !answered.withLock({ $0 }) {
            deliver(.text("500 Internal Server Error: the handler did not answer\n", status: .internalServerError))
        }
    }

    /// Sends the response (the first call only).
    public func respond(_ response: HTTPResponse) {
        let first = answered.withLock { answered in
            defer { answered = true }
            return !answered
        }
        guard first else { return }
        deliver(response)
    }
}

/// 128 random bits that gate a session's routes: `/<token>/...`. Compared in constant time; never logged
/// (access-log paths show `{token}` instead).
public struct SessionToken: Sendable, Hashable, CustomStringConvertible {
    /// The token as 32 lowercase hex digits.
    public let value: String

    /// A fresh token from the system's random source (`getrandom` / `arc4random_buf`).
    public static func random() -> SessionToken {
        // SystemRandomNumberGenerator draws from the OS's cryptographic source (getrandom / arc4random).
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        for _ in 0..<2 {
            let word: UInt64 = generator.next()
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return SessionToken(uncheckedValue: String(decoding: text, as: UTF8.self))
    }

    /// A token from its text (for example one read back from a saved session). Nil unless 32 hex digits.
    public init?(_ value: String) {
        guard value.utf8.count == 32,
            value.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
        else { return nil }
        self.value = value
    }

    private init(uncheckedValue: String) { value = uncheckedValue }

    /// Compares with `candidate` in time that depends only on the lengths, not on where the bytes differ.
    public func matches(_ candidate: some StringProtocol) -> Bool {
        let expected = Array(value.utf8)
        var difference: UInt8 = candidate.utf8.count == expected.count ? 0 : 1
        var index = 0
        for byte in candidate.utf8 {
            difference |= byte ^ expected[index % expected.count]
            index += 1
        }
        return difference == 0
    }

    /// Hidden, so that a token does not end up in logs by accident.
    public var description: String { "SessionToken(…)" }
}

/// Session tokens that come and go while a server runs (one per playback session, proxied stream or cached
/// resource), for routes registered with `sessions:`. Such a route's first path segment must equal one of the
/// tokens in the set at the time of the request; each is compared in constant time, the match is
/// ``HTTPRequest/sessionToken``, and the access log shows `{token}` in its place, as for a fixed session.
public final class SessionTokenSet: Sendable {
    private let tokens = LockedValue<[SessionToken]>([])

    public init() {}

    /// Adds a token (adding one twice keeps one).
    public func insert(_ token: SessionToken) {
        tokens.withLock { list in
            if !list.contains(token) { list.append(token) }
        }
    }

    /// Removes a token: its routes answer 404 from the next request on.
    public func remove(_ token: SessionToken) {
        tokens.withLock { list in list.removeAll { $0 == token } }
    }

    /// The number of live tokens.
    public var count: Int { tokens.withLock { $0.count } }

    /// The token `candidate` equals, comparing with every live token in constant time.
    public func match(_ candidate: some StringProtocol) -> SessionToken? {
        tokens.withLock { list in
            var found: SessionToken?
            for token in list where token.matches(candidate) { found = token }
            return found
        }
    }
}

/// Routes requests by method and path pattern.
///
/// A pattern is a `/`-separated list of segments: a literal (`index.m3u8`), a parameter (`:name`, matching one
/// segment, available as `request.parameters["name"]`), or a trailing `**` that matches the rest of the path
/// (in `request.wildcardSegments`). A route may sit under a ``SessionToken``, or under any token of a
/// ``SessionTokenSet``: its first segment must then equal the token (compared in constant time), a wrong token is a
/// plain 404, and the access log shows `{token}`. Segments are percent-decoded exactly
/// once before matching; a segment that does not decode (bad `%` escape, invalid UTF-8) matches nothing.
/// `HEAD` is answered by the `GET` route; `OPTIONS` by the server (with `Allow` and, when enabled, CORS).
public struct Router: Sendable {
    enum Segment: Sendable {
        case literal(String)
        case parameter(String)
        case wildcard
    }

    /// A route, immutable once added: a class, so that matching a request reads each route through one
    /// reference instead of copying its fields.
    final class Route: Sendable {
        let method: HTTPMethod
        let token: SessionToken?
        let sessions: SessionTokenSet?
        let segments: [Segment]
        let handler: HTTPHandler

        init(
            method: HTTPMethod, token: SessionToken?, sessions: SessionTokenSet?, segments: [Segment],
            handler: HTTPHandler
        ) {
            self.method = method
            self.token = token
            self.sessions = sessions
            self.segments = segments
            self.handler = handler
        }
    }

    private(set) var routes: [Route] = []

    public init() {}

    /// Adds a route. `pattern` starts with `/`.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, session token: SessionToken? = nil, handler: HTTPHandler
    ) {
        add(method, pattern, session: token, sessions: nil, handler: handler)
    }

    /// Adds a route under whichever token of `sessions` the request names (`/<token>/<pattern>`).
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, sessions: SessionTokenSet, handler: HTTPHandler
    ) {
        add(method, pattern, session: nil, sessions: sessions, handler: handler)
    }

    private mutating func add(
        _ method: HTTPMethod, _ pattern: String, session token: SessionToken?, sessions: SessionTokenSet?,
        handler: HTTPHandler
    ) {
        var segments: [Segment] = []
        for piece in pattern.split(separator: "/", omittingEmptySubsequences: true) {
            if piece == "**" {
                segments.append(.wildcard)
            } else if piece.hasPrefix(":") {
                segments.append(.parameter(String(piece.dropFirst())))
            } else {
                segments.append(.literal(String(piece)))
            }
        }
        routes.append(Route(method: method, token: token, sessions: sessions, segments: segments, handler: handler))
    }

    /// Adds an async `GET` (and `HEAD`) route.
    public mutating func get(
        _ pattern: String, session token: SessionToken? = nil,
        _ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        add(.get, pattern, session: token, handler: HTTPHandler(body))
    }

    /// Adds a `GET` (and `HEAD`) route answered synchronously on the event loop.
    public mutating func getImmediate(
        _ pattern: String, session token: SessionToken? = nil,
        _ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(.get, pattern, session: token, handler: .immediate(body))
    }

    /// Adds a `GET` (and `HEAD`) route called on the event loop and answered later through an ``HTTPResponder``.
    public mutating func getDeferred(
        _ pattern: String, session token: SessionToken? = nil,
        _ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void
    ) {
        add(.get, pattern, session: token, handler: .deferred(body))
    }

    /// Adds an async `GET` (and `HEAD`) route under whichever token of `sessions` the request names.
    public mutating func get(
        _ pattern: String, sessions: SessionTokenSet, _ body: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        add(.get, pattern, sessions: sessions, handler: HTTPHandler(body))
    }

    /// Adds a synchronous `GET` (and `HEAD`) route under whichever token of `sessions` the request names.
    public mutating func getImmediate(
        _ pattern: String, sessions: SessionTokenSet, _ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(.get, pattern, sessions: sessions, handler: .immediate(body))
    }

    /// The outcome of matching a request.
    enum Match {
        case handler(
            HTTPHandler, parameters: [String: String], wildcard: [String], session: SessionToken?, logPath: String?)
        /// The path exists but not for this method; the methods it allows.
        case methodNotAllowed(allow: [HTTPMethod])
        case notFound
        case badPath
    }

    /// Matches a request's method and path (`path` still percent-encoded).
    func match(method: HTTPMethod, path: Substring) -> Match {
        guard let decoded = Router.decodeSegments(path) else { return .badPath }
        var allowed: [HTTPMethod] = []
        let lookupMethod = method == .head ? HTTPMethod.get : method
        // By index: the routes are read in place, not copied one by one.
        for index in routes.indices {
            guard let (parameters, wildcard, session) = Router.match(routes[index], decoded) else { continue }
            if routes[index].method == lookupMethod {
                let logPath: String? =
                    session == nil
                    ? nil
                    : "/{token}/" + decoded.dropFirst().map(AccessLogEntry.encoded(segment:)).joined(separator: "/")
                return .handler(
                    routes[index].handler, parameters: parameters, wildcard: wildcard, session: session,
                    logPath: logPath)
            }
            if !allowed.contains(routes[index].method) { allowed.append(routes[index].method) }
        }
        if !allowed.isEmpty {
            if allowed.contains(.get) { allowed.append(.head) }
            return .methodNotAllowed(allow: allowed)
        }
        // A token-shaped first segment that opens no session (a mistyped one, or the token of a session that has
        // ended) is still a secret of sorts: a plain 404 whose log line shows `{token}` in its place.
        if let first = decoded.first, SessionToken(first) != nil,
            routes.contains(where: { $0.token != nil || $0.sessions != nil })
        {
            return .handler(
                .immediate { _ in .error(.notFound) }, parameters: [:], wildcard: [], session: nil,
                logPath: "/{token}/" + decoded.dropFirst().map(AccessLogEntry.encoded(segment:)).joined(separator: "/"))
        }
        return .notFound
    }

    /// Whether some route (of any method) matches the path, and the methods it allows.
    func allowedMethods(path: Substring) -> [HTTPMethod]? {
        guard let decoded = Router.decodeSegments(path) else { return nil }
        var allowed: [HTTPMethod] = []
        for route in routes where Router.match(route, decoded) != nil {
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return allowed.isEmpty ? nil : allowed
    }

    private static func match(_ route: Route, _ decoded: [String]) -> ([String: String], [String], SessionToken?)? {
        // By position in `decoded`, with nothing built until the route has matched (most routes fail at their
        // first literal).
        var position = 0
        var session: SessionToken?
        if let token = route.token {
            guard position < decoded.count, token.matches(decoded[position]) else { return nil }
            session = token
            position += 1
        } else if let sessions = route.sessions {
            guard position < decoded.count, let token = sessions.match(decoded[position]) else { return nil }
            session = token
            position += 1
        }
        var parameters: [String: String] = [:]
        let segments = route.segments
        for index in segments.indices {
            switch segments[index] {
            case .wildcard:
                guard index == segments.count - 1 else { return nil }
                // The whole path (a static file route at the root): the decoded array itself, not a copy.
                return (parameters, position == 0 ? decoded : Array(decoded[position...]), session)
            case .literal(let text):
                guard position < decoded.count, decoded[position] == text else { return nil }
                position += 1
            case .parameter(let name):
                guard position < decoded.count else { return nil }
                parameters[name] = decoded[position]
                position += 1
            }
        }
        return position == decoded.count ? (parameters, [], session) : nil
    }

    /// Splits a path on `/` and percent-decodes each segment once. Nil when a `%` escape is malformed or a
    /// segment is not valid UTF-8 (overlong forms included). Empty segments (`//`) are kept so that the static
    /// handler can refuse them.
    static func decodeSegments(_ path: Substring) -> [String]? {
        plainSegments(path) ?? decodedSegments(path)
    }

    /// ``decodeSegments(_:)`` for any path: split, then percent-decode and validate each piece.
    static func decodedSegments(_ path: Substring) -> [String]? {
        var segments: [String] = []
        var pieces = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        if pieces.first?.isEmpty == true { pieces.removeFirst() }
        if pieces.count > 1, pieces.last?.isEmpty == true { pieces.removeLast() }
        for piece in pieces {
            guard let segment = Percent.decodeUTF8(piece) else { return nil }
            segments.append(segment)
        }
        if segments.count == 1, segments[0].isEmpty { return [] }
        return segments
    }

    /// The common case of ``decodeSegments(_:)``, without its generic decoding: a path of ASCII bytes with no `%`
    /// decodes to itself, so its segments are its pieces between `/` as they are (the same empty-piece rules).
    /// Nil when the path holds a `%` or a byte above 0x7F (then the full decoding runs).
    static func plainSegments(_ path: Substring) -> [String]? {
        let utf8 = path.utf8
        var slashes = 0
        for byte in utf8 {
            if byte >= 0x80 || byte == UInt8(ascii: "%") { return nil }
            if byte == UInt8(ascii: "/") { slashes += 1 }
        }
        var segments: [String] = []
        segments.reserveCapacity(slashes + 1)  // one allocation, not one per doubling
        var start = utf8.startIndex
        if utf8.first == UInt8(ascii: "/") { start = utf8.index(after: start) }  // no empty segment before the first
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                segments.append(String(Substring(utf8[start..<index])))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        segments.append(String(Substring(utf8[start..<index])))
        if segments.count > 1, segments.last?.isEmpty == true { segments.removeLast() }
        if segments.count == 1, segments[0].isEmpty { return [] }
        return segments
    }
}
