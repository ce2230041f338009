import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The event loop: reading requests, parsing them and handing them to the application.
extension EventLoopRunner {

    /// Reads what the socket holds. A read shorter than the buffer drained the socket, so the next arrival raises
    /// a new edge and the loop stops there, unless the peer already closed: then it reads on to the end of file,
    /// which raises no further edge.
    func readAvailable(_ connection: Connection, untilEnd: Bool = false) {
        while !connection.closed {
            if connection.input.count - connection.inputStart >= Self.maxBufferedInput {
                connection.readPaused = true  // enough pipelined bytes: resume after the current response
                return
            }
            connection.readPaused = false
            let result: IOResult<Int>
            do {
                result = try Socket(descriptor: connection.fd).receive(
                    into: scratch.baseAddress!, count: Self.scratchSize)
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
                execute(connection.machine.bytesReceived(now: now), connection)
                if count < Self.scratchSize, !untilEnd { return }
            }
        }
    }

    func parseNext(_ connection: Connection) {
        guard !connection.closed else { return }
        let start = connection.inputStart
        let result = connection.input.withUnsafeBufferPointer { buffer in
            connection.parser.parse(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        switch result {
        case .needMoreData:
            execute(
                connection.machine.needMoreData(
                    bufferedBytes: connection.input.count - connection.inputStart, now: now), connection)
        case .error(let error):
            execute(connection.machine.parseFailed(status: error.status), connection)
        case .request(let head, let consumed):
            connection.inputStart += consumed
            let action = connection.machine.headParsed(head, now: now)
            if case .dispatch = action {
                dispatch(HTTPRequest(head), on: connection)
            } else {
                execute(action, connection)
            }
        }
    }

    func execute(_ action: HTTPConnectionStateMachine.Action, _ connection: Connection) {
        switch action {
        case .none, .dispatch:
            return
        case .parse:
            parseNext(connection)
        case .sendErrorAndClose(let status):
            let request = HTTPRequest(method: .get, target: "/", version: .http1_1)
            connection.exchange = Exchange(logged: logged(request, logPath: nil), start: now)
            respond(.error(status), to: request, on: connection)
        case .close:
            // The machine asks for an immediate close only when nothing more can or should be written (idle
            // timeout, socket error, end of file while idle, shutdown of an idle connection); an error response
            // that must go out first comes as `.sendErrorAndClose`.
            close(connection)
        }
    }

    // MARK: Handling

    func dispatch(_ request: consuming HTTPRequest, on connection: Connection) {
        var request = request
        request.remoteAddress = connection.peer
        request.localHost = connection.localHost
        let decision = application.decide(&request)
        switch decision {
        case .respond(let response):
            connection.exchange = Exchange(logged: logged(request, logPath: nil), start: now)
            respond(response, to: request, on: connection)
        case .handle(let handler, let logPath):
            switch handler.kind {
            case .immediate(let body):
                connection.exchange = Exchange(logged: logged(request, logPath: logPath), start: now)
                respond(body(request), to: request, on: connection)
            case .async(let body):
                connection.exchange = Exchange(request: request, logged: logged(request, logPath: logPath), start: now)
                let responder = laterAnswer(on: connection, method: request.method)
                let request = request  // a constant: the task's closure is @Sendable and may not capture a var
                Task { responder.respond(await body(request)) }
            case .deferred(let body):
                connection.exchange = Exchange(request: request, logged: logged(request, logPath: logPath), start: now)
                body(request, laterAnswer(on: connection, method: request.method))
            }
        }
    }

    /// What the access log prints for the request (the route's path for it, or the request's), or nil without a log.
    func logged(_ request: borrowing HTTPRequest, logPath: String?) -> (method: HTTPMethod, path: String)? {
        guard configuration.accessLog != nil else { return nil }
        return (request.method, logPath ?? String(request.path))
    }

    /// A responder for an answer that comes later, from another thread, through the loop's mailbox. A `200` body
    /// in memory that will get a content ETag (``HTTPApplication/prepare(_:for:keepAlive:date:)``) is hashed on the
    /// answering thread, where its bytes were just made, not on the loop, which every connection waits for.
    func laterAnswer(on connection: Connection, method: HTTPMethod) -> HTTPResponder {
        connection.awaitingHandler = true
        let id = connection.id
        let handle = self.handle
        return HTTPResponder { response in
            var response = response
            if let bytes = HTTPApplication.contentTagged(response.status, method, response.body, response.headers) {
                response.contentTag = HTTPApplication.contentEntityTag(bytes)
            }
            handle.post(.response(id, response))
        }
    }

    func receive(_ message: LoopMessage) {
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

    func live(_ id: ConnectionID) -> Connection? {
        let index = Int(id.fd)
        guard index < connections.count, let connection = connections[index], connection.id == id, !connection.closed
        else { return nil }
        return connection
    }

}
