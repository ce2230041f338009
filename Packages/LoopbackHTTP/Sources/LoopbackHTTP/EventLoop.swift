// Long file: the event loop is one state machine over its connections and poller; its parts share that state.
import FileRange
import HTTPWire

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
    private let closed = LockedValue<Bool>(false)

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

/// One outgoing piece of a response.
private enum OutItem {
    case bytes([UInt8], sent: Int)
    case file(FileStreamer, offset: UInt64, remaining: UInt64)
    case relay(Relay)
}

/// A body moved from a claimed descriptor to the client through a pipe, inside the kernel.
private final class Relay {
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
private struct StreamState {
    var chunked: Bool
    var remaining: UInt64?
    var continuation: CheckedContinuation<Bool, Never>?
    var ended = false
    var task: Task<Void, Never>?
}

/// The exchange in progress, for the access log and for completing an async response.
private struct Exchange {
    var request: HTTPRequest
    var logPath: String?
    var start: UInt64
    var status = 0
    var headBytes = 0
    var bytesWritten: UInt64 = 0
}

/// One accepted socket, owned by one loop thread.
private final class Connection {
    let fd: Int32
    let id: ConnectionID
    let peer: String
    var machine: HTTPConnectionStateMachine
    var parser: HTTPRequestHeadParser
    var input: [UInt8] = []
    var inputStart = 0
    var output: [OutItem] = []
    var readPaused = false
    var exchange: Exchange?
    var stream: StreamState?
    var closed = false
    var awaitingHandler = false
    var usePread = false
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
    private let poller: Poller
    private let handle: LoopHandle
    private let shared: ServerShared
    private let listeners: [Int32]
    private var connections: [Connection?] = []
    private var openCount = 0
    private var nextSerial: UInt64 = 0
    private var shutdownDeadline: UInt64?
    private var acceptPausedUntil: UInt64?
    private var listenerHealth: [Int32: ListenerHealth] = [:]
    private var nextSweep: UInt64 = 0
    private let scratch: UnsafeMutableRawBufferPointer
    private var cachedDateSecond = -1
    private var cachedDate = ""
    private var running = true
    private let configuration: HTTPServerConfiguration
    /// Empty relay pipes kept for the next relay.
    private var sparePipes: [(read: Int32, write: Int32, capacity: Int)] = []

    private static let scratchSize = 64 * 1024
    private static let acceptBatch = 2
    private static let maxBufferedInput = 64 * 1024
    private static let inlineFileLimit: UInt64 = 16 * 1024
    private static let sweepInterval: UInt64 = 250_000_000
    private static let streamAhead = 1 << 20
    private static let relayTokenFlag: UInt64 = 1 << 41
    private static let maxSparePipes = 4

    init(handle: LoopHandle, shared: ServerShared, listeners: [Int32]) {
        self.poller = Poller(descriptors: handle.descriptors)
        self.handle = handle
        self.shared = shared
        self.listeners = listeners
        self.configuration = shared.application.configuration
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
            poller.wait(timeoutMilliseconds: 250) { event in self.handle(event) }
            let now = monotonicNow()
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

    private func handle(_ event: PollEvent) {
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

    // MARK: Accepting

    private func acceptConnections(_ listener: Int32, hangup: Bool) {
        guard shutdownDeadline == nil, acceptPausedUntil == nil else { return }
        if shared.failedListeners.withLock({ $0.contains(listener) }) {
            poller.remove(listener)  // another loop found it dead
            return
        }
        if hangup, listenerHealth[listener, default: ListenerHealth()].hungUp() == .fail {
            failListener(listener, errno: nil)
            return
        }
        // A few per wake-up, like nginx without multi_accept: the listener is level-triggered and exclusive, so
        // the remaining connections wake a loop that is idle instead of piling onto the busy one.
        for _ in 0..<Self.acceptBatch {
            let accepted: (fd: Int32, peer: String)?
            do {
                accepted = try SocketOps.accept(listener)
            } catch {
                switch listenerHealth[listener, default: ListenerHealth()].acceptFailed(error) {
                case .retry:
                    continue
                case .pause:
                    pauseAccepting()  // EMFILE, ENFILE, ENOBUFS, ENOMEM: stop accepting for a moment, keep serving
                case .fail:
                    failListener(listener, errno: error)
                }
                return
            }
            listenerHealth[listener, default: ListenerHealth()].healthy()
            guard let (fd, peer) = accepted else { return }
            var localHost: String?
            if configuration.listensOnLocalNetwork {
                switch LocalNetwork.admission(of: fd) {
                case .loopback:
                    break
                case .localNetwork(let address):
                    localHost = address
                case .refused:
                    closeDescriptor(fd)
                    continue
                }
            }
            // A connection over the cap is never counted, so `openConnections` does not see it while it is refused.
            let admitted = shared.connectionCount.withLock { count in
                guard count < configuration.maxConnections else { return false }
                count += 1
                return true
            }
            guard admitted else {
                refuseBusy(fd)
                continue
            }
            register(fd: fd, peer: peer, localHost: localHost)
        }
    }

    /// Stops watching a dead listener and marks the server failed (``HTTPServer/failure``); connections already
    /// accepted are served on.
    private func failListener(_ listener: Int32, errno: Errno?) {
        poller.remove(listener)
        shared.listenerFailed(
            listener,
            HTTPServerError(
                .listenerFailed, errno: errno,
                message: errno == nil
                    ? "the listening socket was shut down" : "accepting failed; the listening socket is unusable"))
    }

    private func pauseAccepting() {
        acceptPausedUntil = monotonicNow() + 100_000_000
        for listener in listeners { poller.remove(listener) }
    }

    private func resumeAcceptingIfDue(now: UInt64) {
        guard let until = acceptPausedUntil, now >= until, shutdownDeadline == nil else { return }
        acceptPausedUntil = nil
        let failed = shared.failedListeners.withLock { $0 }
        for listener in listeners where !failed.contains(listener) {
            try? poller.addListener(listener, token: UInt64(UInt32(bitPattern: listener)) | 1 << 40)
        }
    }

    /// Answers 503 with `Retry-After` on a connection over the cap, best effort, and closes it.
    private func refuseBusy(_ fd: Int32) {
        let body = "503 Service Unavailable\n"
        let text =
            "HTTP/1.1 503 Service Unavailable\r\nDate: \(currentDate())\r\nRetry-After: \(configuration.retryAfterSeconds)\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { buffer in
            try? SocketOps.send(fd, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, buffer.count)
        }
        _ = Platform.shutdownWrite(fd)
        closeDescriptor(fd)
    }

    private func register(fd: Int32, peer: String, localHost: String?) {
        nextSerial &+= 1
        let now = monotonicNow()
        let connection = Connection(
            fd: fd, id: ConnectionID(fd: fd, serial: nextSerial), peer: peer, localHost: localHost,
            machine: HTTPConnectionStateMachine(timeouts: configuration.timeouts, now: now),
            limits: configuration.limits)
        let index = Int(fd)
        if index >= connections.count {
            connections += [Connection?](repeating: nil, count: max(index + 1 - connections.count, 256))
        }
        connections[index] = connection
        openCount += 1
        do {
            try poller.addConnection(fd, token: UInt64(index))
        } catch {
            close(connection)
        }
    }

    // MARK: Reading and parsing

    /// Reads what the socket holds. A read shorter than the buffer drained the socket, so the next arrival raises
    /// a new edge and the loop stops there, unless the peer already closed: then it reads on to the end of file,
    /// which raises no further edge.
    private func readAvailable(_ connection: Connection, untilEnd: Bool = false) {
        while !connection.closed {
            if connection.input.count - connection.inputStart >= Self.maxBufferedInput {
                connection.readPaused = true  // enough pipelined bytes: resume after the current response
                return
            }
            connection.readPaused = false
            let result: IOResult<Int>
            do {
                result = try SocketOps.receive(connection.fd, scratch.baseAddress!, Self.scratchSize)
            } catch {
                execute(connection.machine.socketError(), connection)
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                execute(connection.machine.readEOF(), connection)
                return
            case .done(let count):
                if connection.inputStart == connection.input.count {
                    connection.input.removeAll(keepingCapacity: true)
                    connection.inputStart = 0
                } else if connection.inputStart > 32 * 1024 {
                    connection.input.removeFirst(connection.inputStart)
                    connection.inputStart = 0
                    connection.parser.reset()
                }
                connection.input.append(
                    contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]).bindMemory(to: UInt8.self))
                execute(connection.machine.bytesReceived(now: monotonicNow()), connection)
                if count < Self.scratchSize, !untilEnd { return }
            }
        }
    }

    private func parseNext(_ connection: Connection) {
        guard !connection.closed else { return }
        let start = connection.inputStart
        let result = connection.input.withUnsafeBufferPointer { buffer in
            connection.parser.parse(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        switch result {
        case .needMoreData:
            execute(
                connection.machine.needMoreData(
                    bufferedBytes: connection.input.count - connection.inputStart, now: monotonicNow()), connection)
        case .error(let error):
            execute(connection.machine.parseFailed(status: error.status), connection)
        case .request(let request, let consumed):
            connection.inputStart += consumed
            let action = connection.machine.headParsed(request, now: monotonicNow())
            if case .dispatch = action {
                dispatch(HTTPRequest(request), on: connection)
            } else {
                execute(action, connection)
            }
        }
    }

    private func execute(_ action: HTTPConnectionStateMachine.Action, _ connection: Connection) {
        switch action {
        case .none, .dispatch:
            return
        case .parse:
            parseNext(connection)
        case .sendErrorAndClose(let status):
            var request = HTTPRequest(method: .get, target: "/", version: .http1_1)
            request.remoteAddress = connection.peer
            connection.exchange = Exchange(request: request, logPath: nil, start: monotonicNow())
            respond(.error(status), on: connection)
        case .close:
            // The machine asks for an immediate close only when nothing more can or should be written (idle
            // timeout, socket error, end of file while idle, shutdown of an idle connection); an error response
            // that must go out first comes as `.sendErrorAndClose`.
            close(connection)
        }
    }

    // MARK: Handling

    private func dispatch(_ request: HTTPRequest, on connection: Connection) {
        var request = request
        request.remoteAddress = connection.peer
        request.localHost = connection.localHost
        let decision = shared.application.decide(&request)
        connection.exchange = Exchange(request: request, logPath: nil, start: monotonicNow())
        switch decision {
        case .respond(let response):
            respond(response, on: connection)
        case .handle(let handler, let logPath):
            connection.exchange?.logPath = logPath
            switch handler.kind {
            case .immediate(let body):
                respond(body(request), on: connection)
            case .async(let body):
                let responder = laterAnswer(on: connection)
                let request = request  // a constant: the task's closure is @Sendable and may not capture a var
                Task { responder.respond(await body(request)) }
            case .deferred(let body):
                body(request, laterAnswer(on: connection))
            }
        }
    }

    /// A responder for an answer that comes later, from another thread, through the loop's mailbox.
    private func laterAnswer(on connection: Connection) -> HTTPResponder {
        connection.awaitingHandler = true
        let id = connection.id
        let handle = self.handle
        return HTTPResponder { handle.post(.response(id, $0)) }
    }

    private func receive(_ message: LoopMessage) {
        switch message {
        case .response(let id, let response):
            guard let connection = live(id), connection.awaitingHandler else { return }
            connection.awaitingHandler = false
            respond(response, on: connection)
        case .chunk(let id, let bytes, let continuation):
            guard let connection = live(id), var stream = connection.stream, !stream.ended else {
                continuation.resume(returning: false)
                return
            }
            var payload = bytes
            if let remaining = stream.remaining {
                if UInt64(payload.count) > remaining {
                    // The producer sent more than the announced length: the response is broken.
                    continuation.resume(returning: false)
                    failResponse(connection)
                    return
                }
                stream.remaining = remaining - UInt64(payload.count)
            }
            if stream.chunked {
                var framed: [UInt8] = []
                framed.reserveCapacity(payload.count + 20)
                HTTPChunkedEncoder.appendChunk(payload, to: &framed)
                payload = framed
            }
            stream.continuation = continuation
            connection.stream = stream
            connection.output.append(.bytes(payload, sent: 0))
            flush(connection)
        case .streamEnd(let id, let completed):
            guard let connection = live(id), var stream = connection.stream, !stream.ended else { return }
            stream.ended = true
            connection.stream = stream
            if !completed || (stream.remaining ?? 0) != 0 {
                failResponse(connection)
                return
            }
            if stream.chunked { connection.output.append(.bytes(HTTPChunkedEncoder.end, sent: 0)) }
            flush(connection)
        case .shutdown(let deadline):
            shutdownDeadline = deadline
            for listener in listeners { poller.remove(listener) }
            for fd in 0..<connections.count {
                guard let connection = connections[fd] else { continue }
                execute(connection.machine.shutdown(), connection)
            }
            if openCount == 0 { running = false }
        }
    }

    private func live(_ id: ConnectionID) -> Connection? {
        let index = Int(id.fd)
        guard index < connections.count, let connection = connections[index], connection.id == id, !connection.closed
        else { return nil }
        return connection
    }

    // MARK: Writing

    private func currentDate() -> String {
        let second = time(nil)
        if second != cachedDateSecond {
            cachedDateSecond = second
            cachedDate = HTTPDate(secondsSince1970: Int64(second)).imfFixdate
        }
        return cachedDate
    }

    private func respond(_ response: HTTPResponse, on connection: Connection) {
        guard let exchange = connection.exchange else { return }
        let request = exchange.request
        let prepared = shared.application.prepare(
            response, for: request, keepAlive: connection.machine.keepAlive, date: currentDate())
        if !prepared.keepAlive { connection.machine.mustCloseAfterResponse() }
        var head: [UInt8] = []
        head.reserveCapacity(512)
        head += "HTTP/1.1 ".utf8
        ASCII.appendDecimal(UInt64(prepared.status.code), to: &head)
        head.append(0x20)
        head += prepared.status.reasonPhrase.utf8
        head += [0x0D, 0x0A]
        for field in prepared.headers {
            head += field.name.utf8
            head += [0x3A, 0x20]
            head += field.value.utf8
            head += [0x0D, 0x0A]
        }
        head += [0x0D, 0x0A]
        connection.exchange?.status = prepared.status.code
        connection.exchange?.headBytes = head.count
        connection.machine.responseHeadWritten(now: monotonicNow())
        switch prepared.body {
        case .none:
            connection.output.append(.bytes(head, sent: 0))
        case .parts(let parts):
            for part in parts {
                switch part {
                case .bytes(let bytes):
                    if bytes.count <= 64 * 1024 {
                        head += bytes
                    } else {
                        connection.output.append(.bytes(head, sent: 0))
                        head = []
                        connection.output.append(.bytes(bytes, sent: 0))
                    }
                case .file(let file, let offset, let length):
                    if length <= Self.inlineFileLimit, let count = Int(exactly: length) {
                        // Small regions: one pread into the head buffer, so head and body leave in one send.
                        let before = head.count
                        head += repeatElement(0, count: count)
                        let read = head.withUnsafeMutableBytes { buffer in
                            try? file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[before...]), at: offset)
                        }
                        guard read == count else {
                            connection.output.removeAll()
                            failResponse(connection)
                            return
                        }
                    } else {
                        if !head.isEmpty { connection.output.append(.bytes(head, sent: 0)) }
                        head = []
                        connection.output.append(.file(file, offset: offset, remaining: length))
                    }
                }
            }
            if !head.isEmpty { connection.output.append(.bytes(head, sent: 0)) }
        case .stream(let body, let chunked):
            connection.output.append(.bytes(head, sent: 0))
            if !chunked {
                switch startRelay(body, on: connection) {
                case .stream:
                    break
                case .relay(let relay):
                    connection.output.append(.relay(relay))
                    flush(connection)
                    return
                case .failed:
                    failResponse(connection)
                    return
                }
            }
            connection.stream = StreamState(chunked: chunked, remaining: body.length)
            let id = connection.id
            let handle = self.handle
            connection.stream?.task = Task {
                let iterator = body.makeIterator()
                while let chunk = await iterator.next() {
                    if chunk.isEmpty { continue }
                    let accepted = await withCheckedContinuation { continuation in
                        handle.post(.chunk(id, chunk, continuation))
                    }
                    if !accepted || Task.isCancelled { return }
                }
                handle.post(.streamEnd(id, completed: true))
            }
        }
        flush(connection)
    }

    /// A response cannot be completed: close (the client sees a short body, never a wrong one).
    private func failResponse(_ connection: Connection) {
        _ = connection.machine.responseFailed()
        close(connection)
    }

    private func flush(_ connection: Connection) {
        while !connection.closed, !connection.output.isEmpty {
            let more = connection.output.count > 1
            switch connection.output[0] {
            case .bytes(let bytes, let sent):
                let result: IOResult<Int>
                do {
                    result = try bytes.withUnsafeBytes { buffer throws(Errno) in
                        try SocketOps.send(connection.fd, buffer.baseAddress! + sent, buffer.count - sent, more: more)
                    }
                } catch {
                    execute(connection.machine.socketError(), connection)
                    return
                }
                guard case .done(let count) = result else {
                    releaseProducerIfRoom(connection)
                    return
                }
                connection.exchange?.bytesWritten += UInt64(count)
                connection.machine.wroteBytes(now: monotonicNow())
                if sent + count >= bytes.count {
                    connection.output.removeFirst()
                } else {
                    connection.output[0] = .bytes(bytes, sent: sent + count)
                }
            case .file(let file, let offset, let remaining):
                let chunk = Int(min(remaining, connection.usePread ? 256 * 1024 : 1 << 30))
                var result: IOResult<Int> = .wouldBlock
                var failed = false
                if !connection.usePread {
                    do {
                        result = try file.withFileDescriptor { fileFD in
                            try SocketOps.sendFile(socket: connection.fd, file: fileFD, offset: offset, count: chunk)
                        }
                    } catch let error as Errno {
                        if SendFile.isUnsupported(error) {
                            connection.usePread = true  // no sendfile for this pair: copy through memory
                            continue
                        }
                        failed = true
                    } catch {
                        failed = true
                    }
                } else {
                    // pread fallback: read a block, queue it as bytes in front of the rest of the file.
                    do {
                        let bytes = try file.read(at: offset, length: chunk)
                        guard bytes.count == chunk else {
                            failResponse(connection)
                            return
                        }
                        connection.output[0] = .bytes(bytes, sent: 0)
                        if remaining > UInt64(chunk) {
                            connection.output.insert(
                                .file(file, offset: offset + UInt64(chunk), remaining: remaining - UInt64(chunk)), at: 1
                            )
                        }
                        continue
                    } catch {
                        failed = true
                    }
                }
                if failed {
                    failResponse(connection)
                    return
                }
                guard case .done(let count) = result else {
                    releaseProducerIfRoom(connection)
                    return
                }
                if count == 0 {
                    failResponse(connection)  // the file shrank under us
                    return
                }
                connection.exchange?.bytesWritten += UInt64(count)
                connection.machine.wroteBytes(now: monotonicNow())
                if UInt64(count) >= remaining {
                    connection.output.removeFirst()
                } else {
                    connection.output[0] = .file(
                        file, offset: offset + UInt64(count), remaining: remaining - UInt64(count))
                }
            case .relay(let relay):
                switch pump(relay, connection) {
                case .finished:
                    connection.output.removeFirst()
                    endRelay(relay, complete: true)
                case .waiting:
                    return
                case .failed:
                    failResponse(connection)
                    return
                }
            }
        }
        guard !connection.closed, connection.output.isEmpty else { return }
        if var stream = connection.stream {
            if let continuation = stream.continuation {
                stream.continuation = nil
                connection.stream = stream
                continuation.resume(returning: true)
                return
            }
            if !stream.ended { return }
            connection.stream = nil
        }
        guard connection.exchange != nil, !connection.awaitingHandler else { return }
        finishExchange(connection)
        let action = connection.machine.responseFinished(now: monotonicNow())
        if action == .close || connection.machine.state == .closed {
            close(connection)
        } else {
            execute(action, connection)
            if connection.readPaused, !connection.closed, connection.machine.state != .responding {
                readAvailable(connection, untilEnd: true)
            }
        }
    }

    /// Lets a streamed body's producer fetch its next chunk while this one is still being written, as long as no
    /// more than ``streamAhead`` bytes wait for the socket: reading upstream and writing downstream overlap, and a
    /// slow client still holds the producer back.
    private func releaseProducerIfRoom(_ connection: Connection) {
        guard !connection.closed, var stream = connection.stream, let continuation = stream.continuation else { return }
        var waiting = 0
        for item in connection.output {
            if case .bytes(let bytes, let sent) = item { waiting += bytes.count - sent }
        }
        guard waiting <= Self.streamAhead else { return }
        stream.continuation = nil
        connection.stream = stream
        continuation.resume(returning: true)
    }

    // MARK: Relays

    private enum RelayStart {
        /// No relay: iterate the stream.
        case stream
        case relay(Relay)
        /// The source was claimed but cannot be relayed: the response cannot be completed.
        case failed
    }

    /// Claims a streamed body's splice source, when it has one and the system can splice: the bytes the source
    /// already read go out first, then the relay.
    private func startRelay(_ body: HTTPResponse.StreamBody, on connection: Connection) -> RelayStart {
        guard let source = body.spliceSource, let length = body.length, Splice.available else { return .stream }
        guard let pipe = sparePipes.popLast() ?? Splice.makePipe() else { return .stream }
        guard let (descriptor, buffered) = source.claim() else {
            recyclePipe(pipe, empty: true)
            return .stream
        }
        guard UInt64(buffered.count) <= length else {
            source.release(complete: false)
            recyclePipe(pipe, empty: true)
            return .failed
        }
        let relay = Relay(
            source: source, descriptor: descriptor, pipe: pipe, length: length - UInt64(buffered.count))
        if !buffered.isEmpty { connection.output.append(.bytes(buffered, sent: 0)) }
        do {
            try poller.addReadable(descriptor, token: UInt64(connection.fd) | Self.relayTokenFlag)
        } catch {
            source.release(complete: false)
            recyclePipe(pipe, empty: true)
            return .failed
        }
        return .relay(relay)
    }

    private enum PumpResult { case finished, waiting, failed }

    /// Moves what can be moved now: source → pipe while the pipe has room, pipe → socket while the socket takes
    /// it. Waits when neither moves (the socket's writable edge or the source's readable edge resumes it).
    private func pump(_ relay: Relay, _ connection: Connection) -> PumpResult {
        while true {
            var moved = false
            if relay.toRead > 0, relay.inPipe < relay.pipe.capacity {
                let want = Int(min(relay.toRead, UInt64(relay.pipe.capacity - relay.inPipe)))
                do {
                    switch try Splice.move(from: relay.descriptor, to: relay.pipe.write, count: want, more: false) {
                    case .done(0):
                        return .failed  // the upstream ended before the announced length
                    case .done(let count):
                        relay.toRead -= UInt64(count)
                        relay.inPipe += count
                        moved = true
                    case .wouldBlock:
                        break
                    }
                } catch {
                    return .failed
                }
            }
            if relay.inPipe > 0 {
                do {
                    let more = relay.toRead > 0 || connection.output.count > 1
                    switch try Splice.move(from: relay.pipe.read, to: connection.fd, count: relay.inPipe, more: more) {
                    case .done(let count):
                        relay.inPipe -= count
                        connection.exchange?.bytesWritten += UInt64(count)
                        connection.machine.wroteBytes(now: monotonicNow())
                        moved = moved || count > 0
                    case .wouldBlock:
                        break
                    }
                } catch {
                    return .failed
                }
            }
            if relay.toRead == 0, relay.inPipe == 0 { return .finished }
            if !moved { return .waiting }
        }
    }

    /// Ends a relay: the source stops being watched and is given back; an empty pipe is kept for the next one.
    private func endRelay(_ relay: Relay, complete: Bool) {
        poller.remove(relay.descriptor)
        relay.source.release(complete: complete)
        recyclePipe(relay.pipe, empty: relay.inPipe == 0)
    }

    private func recyclePipe(_ pipe: (read: Int32, write: Int32, capacity: Int), empty: Bool) {
        if empty, sparePipes.count < Self.maxSparePipes {
            sparePipes.append(pipe)
        } else {
            closeDescriptor(pipe.read)
            closeDescriptor(pipe.write)
        }
    }

    private func finishExchange(_ connection: Connection) {
        guard let exchange = connection.exchange else { return }
        connection.exchange = nil
        guard let log = configuration.accessLog else { return }
        let elapsed = monotonicNow() &- exchange.start
        let written = exchange.bytesWritten
        let body = written > UInt64(exchange.headBytes) ? written - UInt64(exchange.headBytes) : 0
        log(
            AccessLogEntry(
                method: exchange.request.method.rawValue,
                path: exchange.logPath ?? String(exchange.request.path),
                status: exchange.status, bytesSent: body,
                duration: .nanoseconds(Int64(clamping: elapsed)), remoteAddress: connection.peer))
    }

    private func close(_ connection: Connection) {
        guard !connection.closed else { return }
        connection.closed = true
        if connection.exchange != nil, connection.exchange?.status != 0 { finishExchange(connection) }
        if let stream = connection.stream {
            stream.continuation?.resume(returning: false)
            stream.task?.cancel()
            connection.stream = nil
        }
        for case .relay(let relay) in connection.output { endRelay(relay, complete: false) }
        connection.output.removeAll()
        closeDescriptor(connection.fd)
        let index = Int(connection.fd)
        if index < connections.count, connections[index] === connection { connections[index] = nil }
        openCount -= 1
        shared.connectionCount.withLock { $0 -= 1 }
        if shutdownDeadline != nil, openCount == 0 { running = false }
    }

    // MARK: Timers

    private func sweep(now: UInt64) {
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
