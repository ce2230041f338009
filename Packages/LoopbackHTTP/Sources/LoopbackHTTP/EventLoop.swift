import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Identifies a connection across threads: the descriptor plus a serial number, so that a late message for a
/// closed connection never reaches a new connection that reused the descriptor.
struct ConnectionID: Hashable, Sendable {
    var fd: Int32
    var serial: UInt64
}

/// Work handed to an event loop from other threads.
enum LoopMessage: Sendable {
    /// An async handler's response.
    case response(ConnectionID, HTTPResponse)
    /// A streamed body's next chunk; the continuation is resumed with `true` once the chunk has been handed to
    /// the socket (backpressure), or `false` when the connection is gone.
    case chunk(ConnectionID, [UInt8], CheckedContinuation<Bool, Never>)
    /// The streamed body ended (`completed` false: the producer failed).
    case streamEnd(ConnectionID, completed: Bool)
    /// Begin a graceful shutdown; force-close whatever is left at `deadline` (monotonic ns).
    case shutdown(deadline: UInt64)
}

/// State shared by the event loops of one server.
final class ServerShared: Sendable {
    let application: HTTPApplication
    let connectionCount = LockedValue<Int>(0)
    let loopsRunning = LockedValue<Int>(0)
    let onAllLoopsStopped = LockedValue<CheckedContinuation<Void, Never>?>(nil)
    let stoppedFlag = LockedValue<Bool>(false)
    /// Why the server stopped accepting connections while it runs (the first listener that failed), and which
    /// listeners failed: every loop stops watching them.
    let failure = LockedValue<HTTPServerError?>(nil)
    let failedListeners = LockedValue<Set<Int32>>([])

    init(application: HTTPApplication) { self.application = application }

    /// Clears what the previous run left, before a start. The loops of that run have all stopped.
    func reset() {
        stoppedFlag.withLock { $0 = false }
        onAllLoopsStopped.withLock { $0 = nil }
        failure.withLock { $0 = nil }
        failedListeners.withLock { $0 = [] }
    }

    func listenerFailed(_ listener: Int32, _ error: HTTPServerError) {
        failedListeners.withLock { _ = $0.insert(listener) }
        failure.withLock { value in
            if value == nil { value = error }
        }
    }

    func loopStopped() {
        let remaining = loopsRunning.withLock { count in
            count -= 1
            return count
        }
        if remaining == 0 {
            stoppedFlag.withLock { $0 = true }
            let continuation = onAllLoopsStopped.withLock { value -> CheckedContinuation<Void, Never>? in
                defer { value = nil }
                return value
            }
            continuation?.resume()
        }
    }
}

/// The cross-thread face of one event loop: a mailbox and a wake-up handle.
final class LoopHandle: Sendable {
    let inbox = LockedValue<[LoopMessage]>([])
    let descriptors: PollerDescriptors
    /// Set, under `inbox`'s lock, before the loop closes its descriptors.
    let closed = LockedValue<Bool>(false)

    init(descriptors: PollerDescriptors) { self.descriptors = descriptors }

    /// Queues a message and wakes the loop. Once the loop has closed its descriptors the message is dropped: the
    /// wake-up descriptor's number may already belong to another file (another server's socket, in a process that
    /// runs several), and writing to it would corrupt that file. The wake-up is written while the lock is held,
    /// so the loop cannot close the descriptor in the middle of it.
    func post(_ message: LoopMessage) {
        inbox.withLock { box in
            guard !closed.withLock({ $0 }) else { return }
            box.append(message)
            if box.count == 1 { Poller.wake(descriptors) }
        }
    }

    /// Marks the loop closed; after this returns no `post` touches the descriptors.
    func markClosed() {
        inbox.withLock { box in
            closed.withLock { $0 = true }
            box.removeAll()
        }
    }
}

/// A connection's pending writes, with the event loop's files and relays.
typealias Output = PendingWrites<FileStreamer, Relay>

/// A body moved from a claimed descriptor to the client through a pipe, inside the kernel.
final class Relay {
    let source: any SpliceSource
    let descriptor: Int32
    let pipe: (read: Int32, write: Int32, capacity: Int)
    /// Bytes still to take from the descriptor.
    var toRead: UInt64
    /// Bytes in the pipe, not yet sent.
    var inPipe = 0

    init(source: any SpliceSource, descriptor: Int32, pipe: (read: Int32, write: Int32, capacity: Int), length: UInt64)
    {
        self.source = source
        self.descriptor = descriptor
        self.pipe = pipe
        self.toRead = length
    }
}

/// A streamed body in progress.
struct StreamState {
    var chunked: Bool
    var remaining: UInt64?
    var continuation: CheckedContinuation<Bool, Never>?
    var ended = false
    var task: Task<Void, Never>?
}

/// The exchange in progress, for the access log and for completing an async response.
struct Exchange {
    /// The request, kept only for an answer that comes later (``EventLoopRunner/respond(_:on:)`` prepares it
    /// against the request); an immediate answer is prepared from the dispatched request, so nothing is copied.
    var request: HTTPRequest?
    /// The access log's method and path, kept only when there is an access log.
    var logged: (method: HTTPMethod, path: String)?
    var start: UInt64
    var status = 0
    var headBytes = 0
    var bytesWritten: UInt64 = 0
}

/// One accepted socket, owned by one loop thread.
final class Connection {
    let fd: Int32
    let id: ConnectionID
    let peer: String
    var machine: HTTPConnectionStateMachine
    var parser: HTTPRequestHeadParser
    var input: [UInt8] = []
    var inputStart = 0
    var output = Output()
    var readPaused = false
    var exchange: Exchange?
    var stream: StreamState?
    var closed = false
    var awaitingHandler = false
    /// The local address this connection arrived on, when it is not a loopback address (``HTTPServerConfiguration/
    /// listensOnLocalNetwork``): a `Host` naming it is accepted.
    let localHost: String?

    init(
        fd: Int32, id: ConnectionID, peer: String, localHost: String?, machine: HTTPConnectionStateMachine,
        limits: HTTPParserLimits
    ) {
        self.fd = fd
        self.id = id
        self.peer = peer
        self.localHost = localHost
        self.machine = machine
        self.parser = HTTPRequestHeadParser(limits: limits)
        input.reserveCapacity(2048)
    }
}

/// The thread-confined side of an event loop: the poller, its connections and the per-loop caches.
final class EventLoopRunner {
    let poller: Poller
    let handle: LoopHandle
    let shared: ServerShared
    let listeners: [Int32]
    var connections: [Connection?] = []
    var openCount = 0
    var nextSerial: UInt64 = 0
    var shutdownDeadline: UInt64?
    var acceptPausedUntil: UInt64?
    var listenerHealth: [Int32: ListenerHealth] = [:]
    var nextSweep: UInt64 = 0
    /// The loop's clock (monotonic ns), read once per event and once per turn of the loop: the per-request path
    /// (deadlines, the exchange's start) reads this instead of the system clock. An event's work takes
    /// microseconds, against timeouts of seconds.
    var now: UInt64 = 0
    let scratch: UnsafeMutableRawBufferPointer
    /// While the events of one wait are handled, responses started are only queued here and written after the
    /// last event: every request that arrived together is answered before the first answer wakes a client.
    var batching = false
    var startedResponses: [Connection] = []
    var cachedDateSecond = -1
    var cachedDate = ""
    var running = true
    let configuration: HTTPServerConfiguration
    /// The shared application, held here so that the per-request path reads it without going through `shared`.
    let application: HTTPApplication
    /// Empty relay pipes kept for the next relay.
    var sparePipes: [(read: Int32, write: Int32, capacity: Int)] = []

    static let scratchSize = 64 * 1024
    static let acceptBatch = 2
    static let maxBufferedInput = 64 * 1024
    static let inlineFileLimit: UInt64 = 16 * 1024
    static let sweepInterval: UInt64 = 250_000_000
    static let streamAhead = 1 << 20
    static let relayTokenFlag: UInt64 = 1 << 41
    static let maxSparePipes = 4

    init(handle: LoopHandle, shared: ServerShared, listeners: [Int32]) {
        self.poller = Poller(descriptors: handle.descriptors)
        self.handle = handle
        self.shared = shared
        self.listeners = listeners
        self.configuration = shared.application.configuration
        self.application = shared.application
        self.scratch = .allocate(byteCount: Self.scratchSize, alignment: 16)
    }

    deinit { scratch.deallocate() }

    /// Runs until a shutdown finishes.
    func run() {
        // sendfile has no MSG_NOSIGNAL: block SIGPIPE on this thread, so a peer that vanished mid-file yields EPIPE
        // instead of killing the process (the signal stays pending on this thread, harmlessly).
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        for listener in listeners {
            try? poller.addListener(listener, token: UInt64(UInt32(bitPattern: listener)) | 1 << 40)
        }
        while running {
            batching = true
            poller.wait(timeoutMilliseconds: 250) { event in self.handle(event) }
            batching = false
            if !startedResponses.isEmpty {
                for connection in startedResponses { flush(connection) }
                startedResponses.removeAll(keepingCapacity: true)
            }
            now = monotonicNow()
            if now >= nextSweep {
                nextSweep = now + Self.sweepInterval
                sweep(now: now)
            }
        }
        for fd in 0..<connections.count { if let connection = connections[fd] { close(connection) } }
        for listener in listeners { poller.remove(listener) }
        for pipe in sparePipes {
            closeDescriptor(pipe.read)
            closeDescriptor(pipe.write)
        }
        sparePipes = []
        handle.markClosed()
        poller.closeDescriptors()
        shared.loopStopped()
    }

    func handle(_ event: PollEvent) {
        now = monotonicNow()
        if event.token == Poller.wakeToken {
            poller.drainWake()
            let messages = handle.inbox.withLock { box -> [LoopMessage] in
                defer { box.removeAll(keepingCapacity: true) }
                return box
            }
            for message in messages { receive(message) }
            return
        }
        if event.token & (1 << 40) != 0 {
            acceptConnections(Int32(bitPattern: UInt32(truncatingIfNeeded: event.token)), hangup: event.hangup)
            return
        }
        if event.token & Self.relayTokenFlag != 0 {
            // A relay's source has more bytes.
            let fd = Int(event.token & ~Self.relayTokenFlag)
            guard fd < connections.count, let connection = connections[fd], !connection.closed,
                case .relay = connection.output.first
            else { return }
            flush(connection)
            return
        }
        let fd = Int(event.token)
        guard fd < connections.count, let connection = connections[fd] else { return }
        if event.writable, !connection.output.isEmpty { flush(connection) }
        if event.readable, !connection.closed { readAvailable(connection, untilEnd: event.hangup) }
    }

    // MARK: Timers

    func sweep(now: UInt64) {
        resumeAcceptingIfDue(now: now)
        OpenFiles.shared.sweep(now: now)
        if let deadline = shutdownDeadline, now >= deadline {
            for fd in 0..<connections.count { if let connection = connections[fd] { close(connection) } }
            running = false
            return
        }
        for fd in 0..<connections.count {
            guard let connection = connections[fd], now >= connection.machine.deadline else { continue }
            let action = connection.machine.tick(now: now)
            if case .close = action {
                close(connection)
            } else {
                execute(action, connection)
            }
        }
        if shutdownDeadline != nil, openCount == 0 { running = false }
    }
}
