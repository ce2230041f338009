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
public final class HTTPServer: Sendable {
    /// Where the server is in its lifecycle.
    public enum State: Hashable, Sendable {
        case idle
        case running(port: UInt16)
        case stopping
        case stopped
    }

    private struct Lifecycle {
        var state: State = .idle
        var listeners: [Int32] = []
        var loops: [LoopHandle] = []
        /// The port of the last run, for ``revive(gracePeriod:)``.
        var lastPort: UInt16?
    }

    public let application: HTTPApplication
    private let shared: ServerShared
    private let lifecycle = LockedValue(Lifecycle())

    public init(application: HTTPApplication) {
        self.application = application
        self.shared = ServerShared(application: application)
    }

    public convenience init(router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        self.init(application: HTTPApplication(router: router, configuration: configuration))
    }

    /// Where the server is in its lifecycle.
    public var state: State { lifecycle.withLock { $0.state } }

    /// Open connections right now (across all event loops).
    public var openConnections: Int { shared.connectionCount.withLock { $0 } }

    /// Why the server stopped accepting connections while it runs, or nil while it accepts them.
    ///
    /// A listening socket can die under a running server: iOS reclaims the sockets of an app it suspended, and
    /// when the app resumes its listener fails every `accept`. The event loops then stop watching it instead of
    /// retrying it for ever, keep serving the connections they have, and record the failure here (code
    /// ``HTTPServerError/Code/listenerFailed``); ``state`` stays `.running`. Check it when the app returns to
    /// the foreground, and call ``revive(gracePeriod:)``.
    public var failure: HTTPServerError? { shared.failure.withLock { $0 } }

    /// The listening sockets of the current run (for tests that break one under the running loops).
    var listenerDescriptors: [Int32] { lifecycle.withLock { $0.listeners } }

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
            return try run(port: application.configuration.port, &life)
        }
    }

    /// Starts the server again on a fresh listening socket, for example after ``failure`` was set or the app
    /// closed the server while in the background: on the port it had when that port is still free, else on the
    /// configured port, else (when that is the old one, or 0) on a new ephemeral port. A running server is
    /// stopped first, with `gracePeriod` for the responses in flight. Returns the port.
    @discardableResult
    public func revive(gracePeriod: Duration = .milliseconds(200)) async throws(HTTPServerError) -> UInt16 {
        if case .running = state { await stop(gracePeriod: gracePeriod) }
        return try lifecycle.withLock { (life) throws(HTTPServerError) -> UInt16 in
            guard life.state != .stopping else {
                throw HTTPServerError(.alreadyStarted, message: "the server is stopping")
            }
            if case .running(let port) = life.state { return port }  // revived meanwhile by another caller
            life.state = .idle
            let configured = application.configuration.port
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
    }

    /// The addresses to bind: ``HTTPServerConfiguration/bindAddresses``, with the IPv4 loopback address widened to
    /// `0.0.0.0` when ``HTTPServerConfiguration/listensOnLocalNetwork`` is on.
    static func bindAddresses(for configuration: HTTPServerConfiguration) -> [String] {
        guard configuration.listensOnLocalNetwork else { return configuration.bindAddresses }
        var addresses = configuration.bindAddresses.filter { !$0.hasPrefix("127.") && $0 != "0.0.0.0" }
        addresses.insert("0.0.0.0", at: 0)
        return addresses
    }

    /// Binds and starts the loops; called with the lifecycle's lock held.
    private func run(port requestedPort: UInt16, _ life: inout Lifecycle) throws(HTTPServerError) -> UInt16 {
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
        life.listeners = bound
        shared.reset()
        shared.loopsRunning.withLock { $0 = handles.count }
        let shared = self.shared
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
        life.loops = handles
        life.lastPort = port
        life.state = .running(port: port)
        return port
    }

    /// Stops accepting, lets responses in flight finish for up to `gracePeriod`, then closes everything.
    public func stop(gracePeriod: Duration = .seconds(5)) async {
        let loops: [LoopHandle]? = lifecycle.withLock { life in
            guard case .running = life.state else { return nil }
            life.state = .stopping
            return life.loops
        }
        guard let loops else { return }
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
        lifecycle.withLock { life in
            for fd in life.listeners { closeDescriptor(fd) }
            life.listeners = []
            life.loops = []
            life.state = .stopped
        }
    }

    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.")
    }
}
