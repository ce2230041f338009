import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The event loop: writing responses (bytes, files through sendfile or pread, streams: the rules are
// PendingWrites's), then closing.
extension EventLoopRunner {

    func currentDate() -> String {
        let second = time(nil)
        if second != cachedDateSecond {
            cachedDateSecond = second
            cachedDate = HTTPDate(secondsSince1970: Int64(second)).imfFixdate
        }
        return cachedDate
    }

    func respond(_ response: consuming HTTPResponse, on connection: Connection) {
        guard let request = connection.exchange?.request else { return }
        connection.exchange?.request = nil
        respond(response, to: request, on: connection)
    }

    /// ``respond(_:on:)`` with the exchange's request at hand (the caller's, not a copy from the exchange).
    func respond(_ response: consuming HTTPResponse, to request: borrowing HTTPRequest, on connection: Connection) {
        guard connection.exchange != nil else { return }
        let prepared = application.prepare(
            response, for: request, keepAlive: connection.machine.keepAlive, date: currentDate())
        if !prepared.keepAlive { connection.machine.mustCloseAfterResponse() }
        // Sized once for the head and a small inline body, and filled byte by byte (no temporary arrays, no
        // header list: `Date`, the fields, then the framing fields written from their values).
        var head: [UInt8] = []
        head.reserveCapacity(Self.headCapacity(prepared))
        head += "HTTP/1.1 ".utf8
        ASCII.appendDecimal(UInt64(prepared.status.code), to: &head)
        head.append(0x20)
        head += prepared.status.reasonPhrase.utf8
        head += "\r\nDate: ".utf8
        head += prepared.date.utf8
        head.append(0x0D)
        head.append(0x0A)
        let fields = prepared.headers.fields
        for index in fields.indices {  // by index: each field read in place, not copied out
            Self.appendUTF8(fields[index].name, to: &head)
            head.append(0x3A)
            head.append(0x20)
            Self.appendUTF8(fields[index].value, to: &head)
            head.append(0x0D)
            head.append(0x0A)
        }
        if let (range, completeLength) = prepared.contentRange {
            head += "Content-Range: ".utf8
            ContentRange.append(for: range, completeLength: completeLength, to: &head)
            head.append(0x0D)
            head.append(0x0A)
        }
        switch prepared.framing {
        case .none: break
        case .contentLength(let length):
            head += "Content-Length: ".utf8
            ASCII.appendDecimal(length, to: &head)
            head.append(0x0D)
            head.append(0x0A)
        case .chunked: head += "Transfer-Encoding: chunked\r\n".utf8
        }
        switch prepared.connection {
        case .none: break
        case .close: head += "Connection: close\r\n".utf8
        case .keepAlive: head += "Connection: keep-alive\r\n".utf8
        }
        head.append(0x0D)
        head.append(0x0A)
        connection.exchange?.status = prepared.status.code
        connection.exchange?.headBytes = head.count
        connection.machine.responseHeadWritten(now: now)
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
                        head.append(contentsOf: repeatElement(0, count: count))
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
        if batching {
            startedResponses.append(connection)
        } else {
            flush(connection)
        }
    }

    /// Appends a string's UTF-8 as one copy of its bytes (the generic append walks the view byte by byte).
    @inline(__always)
    static func appendUTF8(_ string: String, to bytes: inout [UInt8]) {
        if string.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes += string.utf8
        }
    }

    /// Room for the head plus a body small enough to be read into it: one allocation for both.
    static func headCapacity(_ prepared: HTTPApplication.Prepared) -> Int {
        var capacity = 160  // status line, Date, framing and Connection fields
        if prepared.contentRange != nil { capacity += 80 }
        let fields = prepared.headers.fields
        for index in fields.indices {  // by index, like the writing: no field copied out
            capacity += fields[index].name.utf8.count + fields[index].value.utf8.count + 4
        }
        if case .parts(let parts) = prepared.body, parts.count == 1, case .file(_, _, let length) = parts[0],
            length <= inlineFileLimit
        {
            capacity += Int(length)
        }
        return capacity
    }

    /// A response cannot be completed: close (the client sees a short body, never a wrong one).
    func failResponse(_ connection: Connection) {
        _ = connection.machine.responseFailed()
        close(connection)
    }

    func flush(_ connection: Connection) {
        let socket = Socket(descriptor: connection.fd)
        while !connection.closed, !connection.output.isEmpty {
            let stop = connection.output.write(
                send: { (bytes, more) throws(Errno) in
                    try socket.send(
                        bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: bytes.count, more: more)
                },
                sendFile: { file, offset, count in
                    try file.withFileDescriptor { fileFD in try socket.sendFile(fileFD, offset: offset, count: count) }
                },
                read: { file, offset, count in try file.read(at: offset, length: count) },
                wrote: { count in
                    connection.exchange?.bytesWritten += UInt64(count)
                    connection.machine.wroteBytes(now: now)
                })
            switch stop {
            case .drained:
                break
            case .wouldBlock:
                releaseProducerIfRoom(connection)
                return
            case .socketFailed:
                execute(connection.machine.socketError(), connection)
                return
            case .fileFailed:
                failResponse(connection)
                return
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
        let action = connection.machine.responseFinished(now: now)
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
    func releaseProducerIfRoom(_ connection: Connection) {
        guard !connection.closed, var stream = connection.stream, let continuation = stream.continuation else { return }
        guard connection.output.waitingBytes <= Self.streamAhead else { return }
        stream.continuation = nil
        connection.stream = stream
        continuation.resume(returning: true)
    }

    func finishExchange(_ connection: Connection) {
        let exchange = connection.exchange
        connection.exchange = nil
        // `logged` is there exactly when there is an access log (``logged(_:logPath:)``).
        guard let log = configuration.accessLog, let exchange, let logged = exchange.logged else { return }
        let elapsed = monotonicNow() &- exchange.start
        let written = exchange.bytesWritten
        let body = written > UInt64(exchange.headBytes) ? written - UInt64(exchange.headBytes) : 0
        log(
            AccessLogEntry(
                method: logged.method.rawValue,
                path: logged.path,
                status: exchange.status, bytesSent: body,
                duration: .nanoseconds(Int64(clamping: elapsed)), remoteAddress: connection.peer))
    }

    func close(_ connection: Connection) {
        guard !connection.closed else { return }
        connection.closed = true
        if connection.exchange != nil, connection.exchange?.status != 0 { finishExchange(connection) }
        if let stream = connection.stream {
            stream.continuation?.resume(returning: false)
            stream.task?.cancel()
            connection.stream = nil
        }
        for case .relay(let relay) in connection.output.items { endRelay(relay, complete: false) }
        connection.output.removeAll()
        closeDescriptor(connection.fd)
        let index = Int(connection.fd)
        if index < connections.count, connections[index] === connection { connections[index] = nil }
        openCount -= 1
        shared.connectionCount.withLock { $0 -= 1 }
        if shutdownDeadline != nil, openCount == 0 { running = false }
    }

}
