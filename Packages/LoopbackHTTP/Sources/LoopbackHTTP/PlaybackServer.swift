import FileRange

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
/// Every call is safe from any thread. ``register(_:)`` is synchronous and never waits on Swift's cooperative pool
/// (binding takes a few milliseconds on the calling thread), so synchronous initialisers above it cannot deadlock,
/// whether they run on the main thread or inside a task.
public final class PlaybackServer: Sendable {
    /// The server most apps need.
    public static let shared = PlaybackServer()

    private struct Lifecycle {
        var configuration: HTTPServerConfiguration
        var server: HTTPServer?
        var port: UInt16?
    }

    private let registry = SessionRegistry()
    private let lifecycle: LockedValue<Lifecycle>

    /// A server that starts with `configuration` when its first session is added.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        lifecycle = LockedValue(Lifecycle(configuration: configuration))
    }

    /// The settings the server starts with (port, CORS, access log). Change them before the first session.
    public var configuration: HTTPServerConfiguration { lifecycle.withLock { $0.configuration } }

    /// Changes the settings used the next time the server starts.
    public func setConfiguration(_ configuration: HTTPServerConfiguration) {
        lifecycle.withLock { $0.configuration = configuration }
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
        // Started and joined under one lock, so that a concurrent removal of the last other session cannot stop
        // the server between the two.
        let port = try lifecycle.withLock { (life) throws(PlaybackError) -> UInt16 in
            if let configuration, life.server == nil { life.configuration = configuration }
            let port = try ensureRunning(&life)
            registry.sessions.withLock { list in
                // A source added twice is served once (and removed at once).
                if !list.contains(where: { $0 === session }) { list.append(session) }
            }
            registry.tokens(answeringLater: session.answersLater).insert(session.token)
            return port
        }
        session.prepare()
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
    public var needsRevival: Bool { lifecycle.withLock { $0.server?.failure != nil } }

    /// Removes a session; its routes answer 404 from now on. The server stops when no session remains.
    public func remove(_ session: any PlaybackSource) async {
        await unregister(session)?.stop()
    }

    /// Removes a session without waiting for the server to stop (for `deinit`s and other synchronous callers).
    public func removeWithoutWaiting(_ session: any PlaybackSource) {
        guard let server = unregister(session) else { return }
        Task.detached { await server.stop() }
    }

    /// Takes the session out; returns the server when it was the last one, for the caller to stop.
    private func unregister(_ session: any PlaybackSource) -> HTTPServer? {
        lifecycle.withLock { life in
            let remaining = registry.sessions.withLock { list in
                list.removeAll { $0 === session }
                return list.count
            }
            if !registry.sessions.withLock({ list in list.contains { $0.token == session.token } }) {
                registry.tokens.remove(session.token)
                registry.laterTokens.remove(session.token)
            }
            guard remaining == 0, let server = life.server else { return nil }
            life.server = nil
            life.port = nil
            return server
        }
    }

    /// The base URL of a session's routes while the server runs, or nil when the session is not served.
    public func baseURL(for session: any PlaybackSource) -> String? {
        guard let port = boundPort, registry.sessions.withLock({ list in list.contains { $0 === session } }) else {
            return nil
        }
        return base(port: port, session)
    }

    /// Starts the server again, for example when an app returns from the background and the system has closed its
    /// listening socket (call it on every return to the foreground: not every system reports the loss): on the
    /// same port when it is still free, else on a new one (read the new URLs with ``baseURL(for:)``). Sessions keep
    /// their tokens. A change of ``configuration`` (such as ``HTTPServerConfiguration/listensOnLocalNetwork`` for
    /// AirPlay) applies from here on. Returns the port.
    @discardableResult
    public func revive() async throws(PlaybackError) -> UInt16 {
        let (old, previous) = lifecycle.withLock { life in
            defer {
                life.server = nil
                life.port = nil
            }
            return (life.server, life.port)
        }
        await old?.stop(gracePeriod: .milliseconds(200))
        guard registry.sessions.withLock({ !$0.isEmpty }) else { return previous ?? 0 }
        return try lifecycle.withLock { (life) throws(PlaybackError) -> UInt16 in
            try ensureRunning(previous: previous, &life)
        }
    }

    /// The running HTTP server (for tests).
    var httpServer: HTTPServer? { lifecycle.withLock { $0.server } }

    /// The port the server listens on, while it runs.
    public var boundPort: UInt16? { lifecycle.withLock { $0.port } }

    /// Starts the server unless it runs and accepts connections; a server that lost its listener is replaced. A
    /// new server tries the `previous` port first (or the lost server's), then the configured one, then any.
    /// Called with the lifecycle's lock held.
    private func ensureRunning(previous: UInt16? = nil, _ life: inout Lifecycle) throws(PlaybackError) -> UInt16 {
        var previous = previous
        if let server = life.server, let port = life.port {
            guard server.failure != nil else { return port }
            life.server = nil
            life.port = nil
            previous = port
            Task.detached { await server.stop(gracePeriod: .milliseconds(200)) }
        }
        let configured = life.configuration.port
        if let previous, previous != 0, let port = try? start(port: previous, &life) {
            return port
        }
        return try start(port: configured == previous ? 0 : configured, &life)
    }

    /// Starts a server on `port`; called with the lifecycle's lock held.
    private func start(port: UInt16, _ life: inout Lifecycle) throws(PlaybackError) -> UInt16 {
        var router = Router()
        let registry = self.registry
        // The router matches the live tokens in constant time and logs "/{token}/…", never a token.
        router.getImmediate("/**", sessions: registry.tokens) { request in
            guard let session = registry.session(for: request) else { return .error(.notFound) }
            return session.respond(to: request)
        }
        // Sources that answer later (the proxies): called on the event loop, answered from any thread.
        router.add(
            .get, "/**", sessions: registry.laterTokens,
            handler: .deferred { request, responder in
                guard let session = registry.session(for: request) else {
                    return responder.respond(.error(.notFound))
                }
                session.answer(request, responder)
            })
        var configuration = life.configuration
        configuration.port = port
        if configuration.listensOnLocalNetwork, configuration.nonLoopbackToken == nil {
            // Session tokens gate every route; this one only satisfies the server's rule and is never handed out.
            configuration.nonLoopbackToken = SessionToken.random()
        }
        let server = HTTPServer(router: router, configuration: configuration)
        let bound: UInt16
        do {
            bound = try server.start()
        } catch {
            throw PlaybackError(.serverFailed, detail: "\(error)")
        }
        life.server = server
        life.port = bound
        return bound
    }
}

/// The live sources, shared between the server object and its handlers.
private final class SessionRegistry: Sendable {
    let sessions = LockedValue<[any PlaybackSource]>([])
    /// The tokens of sources answered on the event loop, and of those that answer later.
    let tokens = SessionTokenSet()
    let laterTokens = SessionTokenSet()

    func tokens(answeringLater: Bool) -> SessionTokenSet { answeringLater ? laterTokens : tokens }

    /// The source a request's token (matched by the router) names.
    func session(for request: HTTPRequest) -> (any PlaybackSource)? {
        guard let token = request.sessionToken else { return nil }
        return sessions.withLock { list in list.first { $0.token == token } }
    }
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
