import FileRange
public import LoopbackHTTP

/// Something the playback server serves under its own token: a `.ts` file, a folder, a presentation.
public protocol PlaybackSource: AnyObject, Sendable {
    /// The token the source's routes sit under.
    var token: SessionToken { get }
    /// Answers a request; `request.wildcardSegments` is the path after the token.
    func respond(to request: HTTPRequest) -> HTTPResponse
    /// Called when the source is added to a server: starts background work such as indexing.
    func prepare()
}

/// One loopback HTTP server shared by every playback session: each session's routes sit under its own token, so
/// sessions never see each other's files; a session's routes disappear when it is removed, and the server stops when
/// the last session goes.
public actor PlaybackServer {
    /// The server most apps need.
    public static let shared = PlaybackServer()

    /// The settings the server starts with (port, CORS, access log). Change them before the first session.
    public var configuration: HTTPServerConfiguration

    private let registry = SessionRegistry()
    private var server: HTTPServer?
    private var port: UInt16?

    /// A server that starts with `configuration` when its first session is added.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        self.configuration = configuration
    }

    /// Changes the settings used the next time the server starts.
    public func setConfiguration(_ configuration: HTTPServerConfiguration) {
        self.configuration = configuration
    }

    /// Adds a session (starting the server when needed) and starts indexing it; returns the base URL of its routes,
    /// such as `http://127.0.0.1:49152/TOKEN/`.
    public func add(_ session: any PlaybackSource) async throws(PlaybackError) -> String {
        let port = try await startIfNeeded()
        registry.sessions.withLock { $0.append(session) }
        registry.tokens.insert(session.token)
        session.prepare()
        return "http://127.0.0.1:\(port)/\(session.token.value)/"
    }

    /// Removes a session; its routes answer 404 from now on. The server stops when no session remains.
    public func remove(_ session: any PlaybackSource) async {
        let remaining = registry.sessions.withLock { list in
            list.removeAll { $0 === session }
            return list.count
        }
        if !registry.sessions.withLock({ list in list.contains { $0.token == session.token } }) {
            registry.tokens.remove(session.token)
        }
        if remaining == 0, let server {
            self.server = nil
            port = nil
            await server.stop()
        }
    }

    /// The base URL of a session's routes while the server runs, or nil when the session is not served.
    public func baseURL(for session: any PlaybackSource) -> String? {
        guard let port, registry.sessions.withLock({ list in list.contains { $0 === session } }) else { return nil }
        return "http://127.0.0.1:\(port)/\(session.token.value)/"
    }

    /// Starts the server again, for example when an app returns from the background and the system has closed its
    /// listening socket: on the same port when it is still free, else on a new one (read the new URLs with
    /// ``baseURL(for:)``). Sessions keep their tokens. Returns the port.
    @discardableResult
    public func revive() async throws(PlaybackError) -> UInt16 {
        let previous = port
        if let server {
            self.server = nil
            port = nil
            await server.stop(gracePeriod: .milliseconds(200))
        }
        guard registry.sessions.withLock({ !$0.isEmpty }) else { return previous ?? 0 }
        let configured = configuration.port
        if let previous {
            configuration.port = previous
            defer { configuration.port = configured }
            if let port = try? await startIfNeeded() { return port }
        }
        configuration.port = configured == previous ? 0 : configured
        defer { configuration.port = configured }
        return try await startIfNeeded()
    }

    /// The port the server listens on, while it runs.
    public var boundPort: UInt16? { port }

    private func startIfNeeded() async throws(PlaybackError) -> UInt16 {
        if let port { return port }
        var router = Router()
        let registry = self.registry
        // The router matches the live tokens in constant time and logs "/{token}/…", never a token.
        router.getImmediate("/**", sessions: registry.tokens) { request in
            guard let token = request.sessionToken,
                let session = registry.sessions.withLock({ list in list.first { $0.token == token } })
            else { return .error(.notFound) }
            return session.respond(to: request)
        }
        let server = HTTPServer(router: router, configuration: configuration)
        let port: UInt16
        do {
            port = try await server.start()
        } catch {
            throw PlaybackError(.serverFailed, detail: "\(error)")
        }
        self.server = server
        self.port = port
        return port
    }
}

/// The live sessions, shared between the actor and the server's handler.
private final class SessionRegistry: Sendable {
    let sessions = LockedValue<[any PlaybackSource]>([])
    let tokens = SessionTokenSet()
}
