/// Something the playback server serves under its own token: a `.ts` file, a folder, a presentation, an ad-stripping
/// proxy's stream, a cached remote file.
///
/// A source answers in one of two ways. By default (``answersLater`` false) the server calls ``respond(to:)`` on its
/// event-loop thread and sends the response at once, with no thread hand-off: local playback answers from memory or
/// an open file. A source whose answers take time (the proxies, which fetch upstream) sets ``answersLater``; the
/// server then calls ``answer(_:_:)`` on the event loop, which must not block, and the source answers through the
/// responder later, from any thread.
public protocol PlaybackSource: AnyObject, Sendable {
    /// The token the source's routes sit under.
    var token: SessionToken { get }
    /// Answers a request; `request.wildcardSegments` is the path after the token.
    func respond(to request: HTTPRequest) -> HTTPResponse
    /// Called when the source is added to a server: starts background work such as indexing.
    func prepare()
    /// Whether the server calls ``answer(_:_:)`` (true) or ``respond(to:)`` (false, the default). Read once, when the
    /// source is added.
    var answersLater: Bool { get }
    /// Answers a request later, from any thread, with `responder.respond(_:)` (called on the server's event loop:
    /// it must not block). The default answers ``respond(to:)`` at once.
    func answer(_ request: HTTPRequest, _ responder: HTTPResponder)
}

extension PlaybackSource {
    public var answersLater: Bool { false }

    public func answer(_ request: HTTPRequest, _ responder: HTTPResponder) {
        responder.respond(respond(to: request))
    }
}

/// One loopback HTTP server shared by every playback session, ad-stripping proxy and caching proxy of an app: each
/// source's routes sit under its own token, so sources never see each other's files; a source's routes disappear when
/// it is removed, and the server stops when the last source goes. One port and one lifecycle for all of them:
/// ``needsRevival`` and ``revive()`` after the app returns from the background cover every source.
///
/// A thin front over one long-lived ``HTTPServer`` made with ``HTTPServer/init(sourcesWith:)``, which holds the
/// registry of sources and the one start, stop and revive path; this type keeps the API apps use (URLs, the
/// ``PlaybackError`` they catch).
///
/// Every call is safe from any thread. ``register(_:)`` is synchronous and never waits on Swift's cooperative pool
/// (binding takes a few milliseconds on the calling thread), so synchronous initialisers above it cannot deadlock,
/// whether they run on the main thread or inside a task.
public final class PlaybackServer: Sendable {
    /// The server most apps need.
    public static let shared = PlaybackServer()

    /// The one HTTP server, for the life of this object.
    private let http: HTTPServer

    /// A server that starts with `configuration` when its first session is added.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        http = HTTPServer(sourcesWith: configuration)
    }

    /// The settings the server starts with (port, CORS, access log). Change them before the first session.
    public var configuration: HTTPServerConfiguration { http.application.configuration }

    /// Changes the settings used the next time the server starts.
    public func setConfiguration(_ configuration: HTTPServerConfiguration) {
        http.setConfiguration(configuration)
    }

    /// Adds a session (starting the server when needed) and starts indexing it; returns the base URL of its routes,
    /// such as `http://127.0.0.1:49152/TOKEN/`. The same as ``register(_:)``, for async callers.
    public func add(_ session: any PlaybackSource) async throws(PlaybackError) -> String {
        try register(session)
    }

    /// Adds a session as ``add(_:)`` does, synchronously on the calling thread. A server whose listening socket
    /// the system took away (``needsRevival``) is replaced first, on the same port when it is free.
    public func register(_ session: any PlaybackSource) throws(PlaybackError) -> String {
        try register(session, startingWith: nil)
    }

    /// Adds a source as ``register(_:)`` does; when the server is not running, it starts with `configuration` (which
    /// then becomes ``configuration``). A server that already runs keeps its own configuration.
    public func register(_ session: any PlaybackSource, startingWith configuration: HTTPServerConfiguration?)
        throws(PlaybackError) -> String
    {
        let port: UInt16
        do {
            port = try http.add(session, startingWith: configuration)
        } catch {
            throw PlaybackError(.serverFailed, detail: "\(error)")
        }
        return base(port: port, session)
    }

    /// The host of the URLs handed out: the device's local-network address when the configuration listens there
    /// (for AirPlay), else `127.0.0.1`.
    public var host: String {
        guard configuration.listensOnLocalNetwork else { return "127.0.0.1" }
        return HTTPServer.localNetworkAddresses().first ?? "127.0.0.1"
    }

    private func base(port: UInt16, _ session: any PlaybackSource) -> String {
        "http://\(host):\(port)/\(session.token.value)/"
    }

    /// Whether the server stopped accepting connections while it runs (iOS reclaims the listening socket of an
    /// app it suspends): call ``revive()`` when the app returns to the foreground. ``register(_:)`` revives by
    /// itself.
    public var needsRevival: Bool { http.failure != nil }

    /// Removes a session; its routes answer 404 from now on. The server stops when no session remains.
    public func remove(_ session: any PlaybackSource) async {
        await http.remove(session)
    }

    /// Removes a session without waiting for the server to stop (for `deinit`s and other synchronous callers).
    public func removeWithoutWaiting(_ session: any PlaybackSource) {
        http.removeWithoutWaiting(session)
    }

    /// The base URL of a session's routes while the server runs, or nil when the session is not served.
    public func baseURL(for session: any PlaybackSource) -> String? {
        guard let port = boundPort, http.serves(session) else { return nil }
        return base(port: port, session)
    }

    /// Starts the server again, for example when an app returns from the background and the system has closed its
    /// listening socket (call it on every return to the foreground: not every system reports the loss): on the
    /// same port when it is still free, else on a new one (read the new URLs with ``baseURL(for:)``). Sessions keep
    /// their tokens. A change of ``configuration`` (such as ``HTTPServerConfiguration/listensOnLocalNetwork`` for
    /// AirPlay) applies from here on. Returns the port.
    @discardableResult
    public func revive() async throws(PlaybackError) -> UInt16 {
        do {
            return try await http.revive(gracePeriod: .milliseconds(200))
        } catch {
            throw PlaybackError(.serverFailed, detail: "\(error)")
        }
    }

    /// The HTTP server while it runs (for tests).
    var httpServer: HTTPServer? { http.port == nil ? nil : http }

    /// The port the server listens on, while it runs.
    public var boundPort: UInt16? { http.port }
}

/// A source whose requests a closure answers later (the proxies mount themselves with one that holds them weakly, so
/// that a proxy released while served answers 404 rather than stay alive).
public final class DeferredSource: PlaybackSource {
    public let token: SessionToken
    private let body: @Sendable (HTTPRequest, HTTPResponder) -> Void

    /// A source under `token` whose requests `body` answers, on the event loop (it must not block).
    public init(token: SessionToken, _ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) {
        self.token = token
        self.body = body
    }

    public var answersLater: Bool { true }

    public func answer(_ request: HTTPRequest, _ responder: HTTPResponder) { body(request, responder) }

    /// Never called by the server (which calls ``answer(_:_:)``): a source that answers later has no answer at once.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        .text("503 Service Unavailable: this route answers asynchronously\n", status: .serviceUnavailable)
    }

    public func prepare() {}
}
