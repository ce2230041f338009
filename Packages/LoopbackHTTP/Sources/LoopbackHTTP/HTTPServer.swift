import FileRange

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
/// let port = try await server.start()
/// // ...
/// await server.stop(gracePeriod: .seconds(2))
/// ```
///
/// The lifecycle lives in this actor; requests are served by a small fixed set of event-loop threads (epoll on
/// Linux, kqueue on Darwin) that never block on the actor.
public actor HTTPServer {
    /// Where the server is in its lifecycle.
    public enum State: Hashable, Sendable {
        case idle
        case running(port: UInt16)
        case stopping
        case stopped
    }

    public private(set) var state: State = .idle
    public nonisolated let application: HTTPApplication
    private let shared: ServerShared
    private var listeners: [Int32] = []
    private var loops: [LoopHandle] = []
    /// The port of the last run, for ``revive(gracePeriod:)``.
    private var lastPort: UInt16?

    public init(application: HTTPApplication) {
        self.application = application
        self.shared = ServerShared(application: application)
    }

    public init(router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        self.init(application: HTTPApplication(router: router, configuration: configuration))
    }

    /// Open connections right now (across all event loops).
    public nonisolated var openConnections: Int { shared.connectionCount.withLock { $0 } }

    /// Why the server stopped accepting connections while it runs, or nil while it accepts them.
    ///
    /// A listening socket can die under a running server: iOS reclaims the sockets of an app it suspended, and
    /// when the app resumes its listener fails every `accept`. The event loops then stop watching it instead of
    /// retrying it for ever, keep serving the connections they have, and record the failure here (code
    /// ``HTTPServerError/Code/listenerFailed``); ``state`` stays `.running`. Check it when the app returns to
    /// the foreground, and call ``revive(gracePeriod:)``.
    public nonisolated var failure: HTTPServerError? { shared.failure.withLock { $0 } }

    /// The listening sockets of the current run (for tests that break one under the running loops).
    var listenerDescriptors: [Int32] { listeners }

    /// The bound port while running.
    public var port: UInt16? {
        if case .running(let port) = state { return port }
        return nil
    }

    /// The device's IPv4 local-network addresses (interfaces that are up, loopback excluded), for the URLs
    /// handed to another device when ``HTTPServerConfiguration/listensOnLocalNetwork`` is on.
    public nonisolated static func localNetworkAddresses() -> [String] { LocalNetwork.addresses() }

    /// Binds, starts the event loops and returns the bound port.
    @discardableResult
    public func start() throws(HTTPServerError) -> UInt16 {
        guard state == .idle else { throw HTTPServerError(.alreadyStarted) }
        return try run(port: application.configuration.port)
    }

    /// Starts the server again on a fresh listening socket, for example after ``failure`` was set or the app
    /// closed the server while in the background: on the port it had when that port is still free, else on the
    /// configured port, else (when that is the old one, or 0) on a new ephemeral port. A running server is
    /// stopped first, with `gracePeriod` for the responses in flight. Returns the port.
    @discardableResult
    public func revive(gracePeriod: Duration = .milliseconds(200)) async throws(HTTPServerError) -> UInt16 {
        if case .running = state { await stop(gracePeriod: gracePeriod) }
        guard state != .stopping else { throw HTTPServerError(.alreadyStarted, message: "the server is stopping") }
        state = .idle
        let configured = application.configuration.port
        if let previous = lastPort, previous != 0 {
            do {
                return try run(port: previous)
            } catch {
                // Someone took the port meanwhile: go on to the configured or a new port.
                guard error.code == .bind, error.errno == .addressInUse else { throw error }
            }
        }
        return try run(port: configured == lastPort ? 0 : configured)
    }

    /// The addresses to bind: ``HTTPServerConfiguration/bindAddresses``, with the IPv4 loopback address widened to
    /// `0.0.0.0` when ``HTTPServerConfiguration/listensOnLocalNetwork`` is on.
    static func bindAddresses(for configuration: HTTPServerConfiguration) -> [String] {
        guard configuration.listensOnLocalNetwork else { return configuration.bindAddresses }
        var addresses = configuration.bindAddresses.filter { !$0.hasPrefix("127.") && $0 != "0.0.0.0" }
        addresses.insert("0.0.0.0", at: 0)
        return addresses
    }

    private func run(port requestedPort: UInt16) throws(HTTPServerError) -> UInt16 {
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
            throw error
        }
        listeners = bound
        shared.reset()
        shared.loopsRunning.withLock { $0 = handles.count }
        let shared = self.shared
        let listenerList = bound
        for handle in handles {
            try startThread {
                EventLoopRunner(handle: handle, shared: shared, listeners: listenerList).run()
            }
        }
        loops = handles
        lastPort = port
        state = .running(port: port)
        return port
    }

    /// Stops accepting, lets responses in flight finish for up to `gracePeriod`, then closes everything.
    public func stop(gracePeriod: Duration = .seconds(5)) async {
        guard case .running = state else { return }
        state = .stopping
        let deadline = monotonicNow() &+ gracePeriod.nanosecondsClamped
        let shared = self.shared
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = shared.onAllLoopsStopped.withLock { value -> Bool in
                if shared.stoppedFlag.withLock({ $0 }) { return true }
                value = continuation
                return false
            }
            if already { continuation.resume() }
            for loop in loops { loop.post(.shutdown(deadline: deadline)) }
        }
        for fd in listeners { closeDescriptor(fd) }
        listeners = []
        loops = []
        state = .stopped
    }

    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.")
    }
}
