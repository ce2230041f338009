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

    /// The bound port while running.
    public var port: UInt16? {
        if case .running(let port) = state { return port }
        return nil
    }

    /// Binds, starts the event loops and returns the bound port, on the calling thread.
    @discardableResult
    public func start() throws(HTTPServerError) -> UInt16 {
        try lifecycle.withLock { (life) throws(HTTPServerError) -> UInt16 in
            guard life.state == .idle else { throw HTTPServerError(.alreadyStarted) }
            let (port, listeners, loops) = try bindAndRun()
            life.listeners = listeners
            life.loops = loops
            life.state = .running(port: port)
            return port
        }
    }

    private func bindAndRun() throws(HTTPServerError) -> (UInt16, [Int32], [LoopHandle]) {
        let configuration = application.configuration
        guard !configuration.bindAddresses.isEmpty, configuration.eventLoopThreads >= 1 else {
            throw HTTPServerError(.invalidConfiguration, message: "no bind address or no event loop")
        }
        for address in configuration.bindAddresses where !Self.isLoopback(address) {
            guard configuration.nonLoopbackToken != nil else {
                throw HTTPServerError(
                    .invalidConfiguration, address: address,
                    message: "binding a non-loopback address needs nonLoopbackToken")
            }
        }
        var port = configuration.port
        var bound: [Int32] = []
        for (index, address) in configuration.bindAddresses.enumerated() {
            do {
                let result = try SocketOps.listen(host: address, port: port, backlog: configuration.listenBacklog)
                bound.append(result.fd)
                port = result.port
            } catch {
                // The IPv6 loopback may be missing (containers): skip it unless it is the only address.
                let missing =
                    error.errno == Errno(rawValue: EADDRNOTAVAIL) || error.errno == Errno(rawValue: EAFNOSUPPORT)
                if address == "::1", missing, index > 0 || configuration.bindAddresses.count > 1 { continue }
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
        shared.loopsRunning.withLock { $0 = handles.count }
        let shared = self.shared
        let listenerList = bound
        for handle in handles {
            try startThread {
                EventLoopRunner(handle: handle, shared: shared, listeners: listenerList).run()
            }
        }
        return (port, bound, handles)
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
