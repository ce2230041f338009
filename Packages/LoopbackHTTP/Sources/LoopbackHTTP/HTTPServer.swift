import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server on POSIX sockets, bound to loopback by default.
///
/// ```swift
/// var router = Router()
/// router.getImmediate("/hello") { _ in .text("hello\n") }
/// let server = HTTPServer(application: HTTPApplication(router: router))
/// let port = try server.start()
/// // ...
/// await server.stop(gracePeriod: .seconds(2))
/// ```
///
/// The lifecycle is a small state machine under a lock, so that ``start()`` is synchronous: it binds and starts the
/// event loops on the calling thread and never waits for Swift's cooperative pool, which lets synchronous APIs
/// above it (an app's initialiser on the main thread, or inside a task) start a server without deadlocking.
/// Requests are served by a small fixed set of event-loop threads (epoll on Linux, kqueue on Darwin).
///
/// A server made with ``init(sourcesWith:)`` is the long-lived server of an app's sources (``PlaybackServer`` is
/// the front most code uses): it holds the registry of ``PlaybackSource``s under their tokens, starts with the first
/// source ``add(_:startingWith:)`` gives it, stops when ``remove(_:gracePeriod:)`` takes the last, and comes back
/// through one path, ``revive(gracePeriod:)`` (or an ``add(_:startingWith:)`` that finds the listener lost), on
/// the same port when it is free, with every source under the same token. Each run (its listeners, its loops and
/// what they share) ends on its own, so a new run can start while the last one drains.
public final class HTTPServer: Sendable {
    /// Where the server is in its lifecycle.
    public enum State: Hashable, Sendable {
        case idle
        case running(port: UInt16)
        case stopping
        case stopped
    }

    /// One run of the server: its listening sockets, its event loops and the state they share. A run that is
    /// stopped, or that lost its listener, is shut down on its own, while the next run may already serve.
    private struct Run {
        let listeners: [Int32]
        let loops: [LoopHandle]
        let shared: ServerShared
    }

    private struct Lifecycle {
        var state: State = .idle
        /// What the next run serves: its configuration may change between runs (``setConfiguration(_:)``).
        var application: HTTPApplication
        var run: Run?
        /// How many runs started.
        var runs = 0
        /// The port of the last run, for ``revive(gracePeriod:)``.
        var lastPort: UInt16?
    }

    private let lifecycle: LockedValue<Lifecycle>
    /// The sources served under their tokens, for a server made with ``init(sourcesWith:)``; nil otherwise.
    private let sources: SourceRegistry?

    public init(application: HTTPApplication) {
        lifecycle = LockedValue(Lifecycle(application: application))
        sources = nil
    }

    /// A server of sources under their tokens: a request for `/<token>/...` goes to the source added under that
    /// token (``add(_:startingWith:)``), on the event loop or, for a source that ``PlaybackSource/answersLater``,
    /// through its responder; any other path answers 404. It starts with its first source and stops with its last.
    public init(sourcesWith configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        let registry = SourceRegistry()
        lifecycle = LockedValue(
            Lifecycle(application: HTTPApplication(router: registry.router(), configuration: configuration)))
        sources = registry
    }

    /// The routes and the configuration the server runs (or the next run starts) with.
    public var application: HTTPApplication { lifecycle.withLock { $0.application } }

    /// Changes the configuration the next run starts with (``start()``, ``revive(gracePeriod:)``, or the first
    /// source added to a stopped server); a running server keeps its own until then.
    public func setConfiguration(_ configuration: HTTPServerConfiguration) {
        lifecycle.withLock { $0.application.configuration = configuration }
    }

    public convenience init(router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        self.init(application: HTTPApplication(router: router, configuration: configuration))
    }

    /// Where the server is in its lifecycle.
    public var state: State { lifecycle.withLock { $0.state } }

    /// Open connections right now (across all event loops).
    public var openConnections: Int { lifecycle.withLock { $0.run?.shared }?.connectionCount.withLock { $0 } ?? 0 }

    /// Why the server stopped accepting connections while it runs, or nil while it accepts them.
    ///
    /// A listening socket can die under a running server: iOS reclaims the sockets of an app it suspended, and
    /// when the app resumes its listener fails every `accept`. The event loops then stop watching it instead of
    /// retrying it for ever, keep serving the connections they have, and record the failure here (code
    /// ``HTTPServerError/Code/listenerFailed``); ``state`` stays `.running`. Check it when the app returns to
    /// the foreground, and call ``revive(gracePeriod:)``.
    public var failure: HTTPServerError? { lifecycle.withLock { $0.run?.shared }?.failure.withLock { $0 } }

    /// The listening sockets of the current run (for tests that break one under the running loops).
    var listenerDescriptors: [Int32] { lifecycle.withLock { $0.run?.listeners ?? [] } }

    /// How many runs started (for tests: a revived or replaced server starts a new run).
    var runCount: Int { lifecycle.withLock { $0.runs } }

    /// The bound port while running.
    public var port: UInt16? {
        if case .running(let port) = state { return port }
        return nil
    }

    /// The device's IPv4 local-network addresses (interfaces that are up, loopback excluded), for the URLs
    /// handed to another device when ``HTTPServerConfiguration/listensOnLocalNetwork`` is on.
    public static func localNetworkAddresses() -> [String] { LocalNetwork.addresses() }

    /// Binds, starts the event loops and returns the bound port, on the calling thread.
    @discardableResult
    public func start() throws(HTTPServerError) -> UInt16 {
        try lifecycle.withLock { (life) throws(HTTPServerError) -> UInt16 in
            guard life.state == .idle else { throw HTTPServerError(.alreadyStarted) }
            return try run(port: life.application.configuration.port, &life)
        }
    }

    /// Starts the server again on a fresh listening socket, for example after ``failure`` was set or the app
    /// closed the server while in the background: on the port it had when that port is still free, else on the
    /// configured port, else (when that is the old one, or 0) on a new ephemeral port. A running server is
    /// stopped first, with `gracePeriod` for the responses in flight. A configuration set with
    /// ``setConfiguration(_:)`` applies from here on. A server of sources that has none stays stopped. Returns the
    /// port.
    @discardableResult
    public func revive(gracePeriod: Duration = .milliseconds(200)) async throws(HTTPServerError) -> UInt16 {
        if case .running = state { await stop(gracePeriod: gracePeriod) }
        return try lifecycle.withLock { (life) throws(HTTPServerError) -> UInt16 in
            if case .running(let port) = life.state { return port }  // revived meanwhile by another caller
            if let sources, sources.isEmpty { return life.lastPort ?? 0 }
            return try runAgain(&life)
        }
    }

    /// Starts a new run on the last run's port when it is still free, else on the configured port, else (when
    /// that is the old one, or 0) on a new ephemeral port: the one way back after a stop or a lost listener.
    /// Called with the lifecycle's lock held, with no run in it.
    private func runAgain(_ life: inout Lifecycle) throws(HTTPServerError) -> UInt16 {
        let configured = life.application.configuration.port
        if let previous = life.lastPort, previous != 0 {
            do throws(HTTPServerError) {
                return try run(port: previous, &life)
            } catch {
                // Someone took the port meanwhile: go on to the configured or a new port.
                guard error.code == .bind, error.errno == .addressInUse else { throw error }
            }
        }
        return try run(port: configured == life.lastPort ? 0 : configured, &life)
    }

    /// The addresses to bind: ``HTTPServerConfiguration/bindAddresses``, with the IPv4 loopback address widened to
    /// `0.0.0.0` when ``HTTPServerConfiguration/listensOnLocalNetwork`` is on.
    static func bindAddresses(for configuration: HTTPServerConfiguration) -> [String] {
        guard configuration.listensOnLocalNetwork else { return configuration.bindAddresses }
        var addresses = configuration.bindAddresses.filter { !$0.hasPrefix("127.") && $0 != "0.0.0.0" }
        addresses.insert("0.0.0.0", at: 0)
        return addresses
    }

    /// Binds and starts the loops of a new run; called with the lifecycle's lock held, with no run in it.
    private func run(port requestedPort: UInt16, _ life: inout Lifecycle) throws(HTTPServerError) -> UInt16 {
        var application = life.application
        if sources != nil, application.configuration.listensOnLocalNetwork,
            application.configuration.nonLoopbackToken == nil
        {
            // Source tokens gate every route; this one only satisfies the rule below and is never handed out.
            application.configuration.nonLoopbackToken = SessionToken.random()
        }
        let configuration = application.configuration
        let addresses = Self.bindAddresses(for: configuration)
        guard !addresses.isEmpty, configuration.eventLoopThreads >= 1 else {
            throw HTTPServerError(.invalidConfiguration, message: "no bind address or no event loop")
        }
        for address in addresses where !Self.isLoopback(address) {
            guard configuration.nonLoopbackToken != nil else {
                throw HTTPServerError(
                    .invalidConfiguration, address: address,
                    message: "binding a non-loopback address (or listensOnLocalNetwork) needs nonLoopbackToken")
            }
        }
        var port = requestedPort
        var bound: [Int32] = []
        for (index, address) in addresses.enumerated() {
            do {
                let result = try SocketOps.listen(host: address, port: port, backlog: configuration.listenBacklog)
                bound.append(result.fd)
                port = result.port
            } catch {
                // The IPv6 loopback may be missing (containers): skip it unless it is the only address.
                let missing =
                    error.errno == Errno(rawValue: EADDRNOTAVAIL) || error.errno == Errno(rawValue: EAFNOSUPPORT)
                if address == "::1", missing, index > 0 || addresses.count > 1 { continue }
                for fd in bound { closeDescriptor(fd) }
                throw error
            }
        }
        guard !bound.isEmpty else { throw HTTPServerError(.bind, message: "no address could be bound") }
        var handles: [LoopHandle] = []
        do {
            for _ in 0..<configuration.eventLoopThreads {
                handles.append(LoopHandle(descriptors: try Poller.makeDescriptors()))
            }
        } catch {
            for fd in bound { closeDescriptor(fd) }
            throw HTTPServerError(error)
        }
        let shared = ServerShared(application: application)
        shared.loopsRunning.withLock { $0 = handles.count }
        let listenerList = bound
        for handle in handles {
            do {
                try startDetachedThread {
                    EventLoopRunner(handle: handle, shared: shared, listeners: listenerList).run()
                }
            } catch {
                throw HTTPServerError(.eventLoop, errno: error, message: "pthread_create")
            }
        }
        life.run = Run(listeners: bound, loops: handles, shared: shared)
        life.runs += 1
        life.lastPort = port
        life.state = .running(port: port)
        return port
    }

    /// Stops accepting, lets responses in flight finish for up to `gracePeriod`, then closes everything.
    public func stop(gracePeriod: Duration = .seconds(5)) async {
        guard let run = lifecycle.withLock({ life in beginStopping(&life) }) else { return }
        await finishStopping(run, gracePeriod: gracePeriod)
    }

    /// Takes the run out of a running server, which is stopping from here on; nil when it does not run. Called with
    /// the lifecycle's lock held.
    private func beginStopping(_ life: inout Lifecycle) -> Run? {
        guard case .running = life.state, let run = life.run else { return nil }
        life.state = .stopping
        life.run = nil
        return run
    }

    /// Ends a run taken out by ``beginStopping(_:)``; the server is stopped then, unless a new run started meanwhile.
    private func finishStopping(_ run: Run, gracePeriod: Duration) async {
        await Self.shutDown(run, gracePeriod: gracePeriod)
        lifecycle.withLock { life in
            if life.state == .stopping { life.state = .stopped }
        }
    }

    /// Stops a run's loops, letting responses in flight finish for up to `gracePeriod`, then closes its listeners.
    private static func shutDown(_ run: Run, gracePeriod: Duration) async {
        let deadline = monotonicNow() &+ gracePeriod.nanosecondsClamped
        let shared = run.shared
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = shared.onAllLoopsStopped.withLock { value -> Bool in
                if shared.stoppedFlag.withLock({ $0 }) { return true }
                value = continuation
                return false
            }
            if already { continuation.resume() }
            for loop in run.loops { loop.post(.shutdown(deadline: deadline)) }
        }
        for fd in run.listeners { closeDescriptor(fd) }
    }

    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.")
    }
}

// MARK: - Sources under tokens

extension HTTPServer {
    /// Adds `source` under its token and returns the port it is served on, on the calling thread (binding takes a
    /// few milliseconds; nothing waits on Swift's cooperative pool). A server that does not run starts, with
    /// `configuration` when given (which becomes its configuration); a running server keeps its own. A run whose
    /// listening socket the system took away (``failure``) is replaced first, on the same port when it is free.
    /// A source added twice is served once. Then calls the source's ``PlaybackSource/prepare()``.
    /// Only for a server made with ``init(sourcesWith:)``.
    @discardableResult
    public func add(_ source: any PlaybackSource, startingWith configuration: HTTPServerConfiguration? = nil)
        throws(HTTPServerError) -> UInt16
    {
        guard let sources else {
            throw HTTPServerError(.invalidConfiguration, message: "a server of sources is made with init(sourcesWith:)")
        }
        // Started (or replaced) and joined under one lock, so that a concurrent removal of the last other source
        // cannot stop the server between the two.
        let port = try lifecycle.withLock { (life) throws(HTTPServerError) -> UInt16 in
            let port = try ensureRunning(startingWith: configuration, &life)
            sources.insert(source)
            return port
        }
        source.prepare()
        return port
    }

    /// Takes `source` out: its routes answer 404 from now on. When it was the last, the server stops, with
    /// `gracePeriod` for the responses in flight; a source added meanwhile starts a new run at once.
    public func remove(_ source: any PlaybackSource, gracePeriod: Duration = .seconds(5)) async {
        guard let run = takeOut(source) else { return }
        await finishStopping(run, gracePeriod: gracePeriod)
    }

    /// Takes `source` out as ``remove(_:gracePeriod:)`` does, without waiting for the server to stop (for `deinit`s
    /// and other synchronous callers).
    public func removeWithoutWaiting(_ source: any PlaybackSource) {
        guard let run = takeOut(source) else { return }
        Task.detached { await self.finishStopping(run, gracePeriod: .seconds(5)) }
    }

    /// Whether `source` is served.
    public func serves(_ source: any PlaybackSource) -> Bool { sources?.contains(source) ?? false }

    /// Takes `source` out; returns the run when it was the last source, for the caller to finish stopping.
    private func takeOut(_ source: any PlaybackSource) -> Run? {
        guard let sources else { return nil }
        return lifecycle.withLock { life in
            guard sources.remove(source) == 0 else { return nil }
            return beginStopping(&life)
        }
    }

    /// The port of a run that accepts connections, starting or replacing one when needed; called with the
    /// lifecycle's lock held.
    private func ensureRunning(startingWith configuration: HTTPServerConfiguration?, _ life: inout Lifecycle)
        throws(HTTPServerError) -> UInt16
    {
        if case .running(let port) = life.state, let run = life.run {
            guard run.shared.failure.withLock({ $0 }) != nil else { return port }
            // The system took the listener: that run ends on its own, and the next one comes back as a revival does.
            life.run = nil
            Task.detached { await Self.shutDown(run, gracePeriod: .milliseconds(200)) }
            return try runAgain(&life)
        }
        if let configuration { life.application.configuration = configuration }
        return try run(port: life.application.configuration.port, &life)
    }
}

/// The sources of a server made with ``HTTPServer/init(sourcesWith:)``, shared between the server and its routes.
final class SourceRegistry: Sendable {
    private let sources = LockedValue<[any PlaybackSource]>([])
    /// The tokens of sources answered on the event loop, and of those that answer later.
    private let tokens = SessionTokenSet()
    private let laterTokens = SessionTokenSet()

    /// The two routes: sources answered on the event loop, and sources that answer later from any thread. The
    /// router matches the live tokens in constant time and logs "/{token}/…", never a token.
    func router() -> Router {
        var router = Router()
        router.getImmediate("/**", sessions: tokens) { [self] request in
            guard let source = source(for: request) else { return .error(.notFound) }
            return source.respond(to: request)
        }
        router.add(
            .get, "/**", sessions: laterTokens,
            handler: .deferred { [self] request, responder in
                guard let source = source(for: request) else { return responder.respond(.error(.notFound)) }
                source.answer(request, responder)
            })
        return router
    }

    var isEmpty: Bool { sources.withLock { $0.isEmpty } }

    func contains(_ source: any PlaybackSource) -> Bool { sources.withLock { list in list.contains { $0 === source } } }

    func insert(_ source: any PlaybackSource) {
        sources.withLock { list in
            if !list.contains(where: { $0 === source }) { list.append(source) }
        }
        (source.answersLater ? laterTokens : tokens).insert(source.token)
    }

    /// Takes `source` out (its token too, unless another source has it); returns how many sources remain.
    func remove(_ source: any PlaybackSource) -> Int {
        let (remaining, tokenInUse) = sources.withLock { list in
            list.removeAll { $0 === source }
            return (list.count, list.contains { $0.token == source.token })
        }
        if !tokenInUse {
            tokens.remove(source.token)
            laterTokens.remove(source.token)
        }
        return remaining
    }

    /// The source a request's token (matched by the router) names.
    func source(for request: HTTPRequest) -> (any PlaybackSource)? {
        guard let token = request.sessionToken else { return nil }
        return sources.withLock { list in list.first { $0.token == token } }
    }
}
