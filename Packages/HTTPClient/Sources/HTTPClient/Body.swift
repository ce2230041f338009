import FileRange
import HTTPWire

/// A response body of known length as the connection's socket, for a relay that moves it in the kernel (Linux
/// `splice`). The relay claims it before reading any of ``HTTPClientResponse/body`` (which then ends at once),
/// reads exactly ``length`` bytes (the `claim`'s buffered bytes, then the socket), and releases it, once.
public final class SocketBody: Sendable {
    /// The body's length in bytes, buffered bytes included.
    public let length: UInt64
    private let reader: BodyReader
    private let stage = LockedValue(Stage.unclaimed)
    private enum Stage { case unclaimed, claimed, released }

    init(_ reader: BodyReader, _ length: UInt64) {
        self.reader = reader
        self.length = length
    }

    deinit {
        if stage.withLock({ $0 }) == .claimed { reader.release(complete: false) }
    }

    /// The socket, in non-blocking mode, and the body bytes already read from it; nil when the body was already
    /// started, or claimed, or cannot be lent (the stream is then the only way, or the body is lost).
    public func claim() -> (descriptor: Int32, buffered: [UInt8])? {
        guard
            stage.withLock({ s -> Bool in
                guard s == .unclaimed else { return false }
                s = .claimed
                return true
            })
        else { return nil }
        guard let lent = reader.claim(length: length) else {
            stage.withLock { $0 = .released }
            return nil
        }
        return lent
    }

    /// Gives the socket back. `complete`: exactly the body was read from it (the connection may be reused);
    /// otherwise it is closed.
    public func release(complete: Bool) {
        guard
            stage.withLock({ s -> Bool in
                guard s == .claimed else { return false }
                s = .released
                return true
            })
        else { return }
        reader.release(complete: complete)
    }
}

/// Delivers one response body in chunks, then gives the connection back to the pool when the connection state
/// machine says it can be reused.
final class BodyReader: Sendable {
    private struct State {
        var framing: HTTPBodyFraming
        var decoder = HTTPChunkedDecoder()
        var finished = false
        /// The socket is lent to a relay (``claim(length:)``) and not yet given back.
        var lent = false
    }
    private let state: LockedValue<State>
    private let connection: Connection
    private let pool: ConnectionPool
    private let key: String
    private let chunkSize: Int
    private let url: String
    /// The request's slot to its host, given back when the body ends.
    private let slot: HostSlot?
    /// The end of the body's time (``HTTPClientRequest/bodyDeadline``), when it has one.
    private let deadline: Deadline?

    init(
        connection: Connection, framing: HTTPBodyFraming, pool: ConnectionPool, key: String, chunkSize: Int,
        url: String,
        slot: HostSlot? = nil, deadline: Deadline? = nil
    ) {
        self.state = LockedValue(State(framing: framing))
        self.connection = connection
        self.pool = pool
        self.key = key
        self.chunkSize = chunkSize
        self.url = url
        self.slot = slot
        self.deadline = deadline
        // Every read of the body then waits at most until the deadline, and fails once it passed.
        if let deadline { connection.arm(deadline) }
    }

    deinit {
        // Dropped before the end: the connection is in an unknown place of the body and cannot be reused.
        if !state.withLock({ $0.finished }) { connection.close() }
    }

    /// Claims the whole body for a relay before any of it was read: the socket and the bytes already buffered.
    func claim(length: UInt64) -> (descriptor: Int32, buffered: [UInt8])? {
        let claimed = state.withLock { s -> Bool in
            guard !s.finished, s.framing == .length(length) else { return false }
            s.finished = true
            return true
        }
        guard claimed else { return nil }
        guard let lent = connection.lend(limit: length) else {
            connection.close()  // the body cannot be read either way now
            return nil
        }
        state.withLock { $0.lent = true }
        if let deadline {
            // The relay reads the socket itself: shut it down at the deadline if it is still lent then (on FileRange's
            // alarm thread, which no busy queue delays).
            Alarms.shared.schedule(at: deadline.end) { [weak self] in
                guard let self, self.state.withLock({ $0.lent }) else { return }
                self.connection.abort()
            }
        }
        return lent
    }

    /// Ends a relay's claim: a relay that moved the whole body gives the connection back to the pool.
    func release(complete: Bool) {
        state.withLock { $0.lent = false }
        connection.takeBack()
        if complete { settle() } else { connection.close() }
        slot?.release()
    }

    /// Marks the body done without touching the connection (its exchange was already settled).
    func markFinished() {
        state.withLock { $0.finished = true }
        slot?.release()
    }

    private func settle() {
        if deadline != nil { connection.arm(nil) }
        if connection.bodyFinished() == .returnToPool { pool.put(connection, key: key) } else { connection.close() }
    }

    private func complete() {
        let first = state.withLock { s -> Bool in
            defer { s.finished = true }
            return !s.finished
        }
        if first { settle() }
        slot?.release()
    }

    private func fail(_ error: HTTPClientError) -> HTTPClientError {
        state.withLock { $0.finished = true }
        connection.close()
        slot?.release()
        return error.at(url)
    }

    /// The next chunk, or nil at the end of the body.
    func next() async throws -> [UInt8]? {
        let snapshot = state.withLock { ($0.framing, $0.finished, $0.decoder) }
        if snapshot.1 { return nil }
        switch snapshot.0 {
        case .none:
            complete()
            return nil
        case .length(let left):
            let want = Int(min(left, UInt64(chunkSize)))
            let bytes: [UInt8]
            do {
                bytes = try await Connection.run(connection) { [connection] () throws(HTTPClientError) -> [UInt8] in
                    try connection.receive(want, waitAll: true)
                }
            } catch let error as HTTPClientError {
                throw fail(error)
            }
            if bytes.isEmpty {
                throw fail(HTTPClientError(.connectionReset, "the connection closed with \(left) body bytes missing"))
            }
            let remaining = left - UInt64(bytes.count)
            state.withLock { $0.framing = .length(remaining) }
            if remaining == 0 { complete() }
            return bytes
        case .untilClose:
            let bytes: [UInt8]
            do {
                bytes = try await Connection.run(connection) { [connection, chunkSize] () throws(HTTPClientError) in
                    try connection.receive(chunkSize, waitAll: true)
                }
            } catch let error as HTTPClientError {
                throw fail(error)
            }
            if bytes.isEmpty {
                state.withLock { $0.finished = true }
                connection.close()
                slot?.release()
                return nil
            }
            return bytes
        case .chunked:
            let result: (ChunkStep, HTTPChunkedDecoder)
            do {
                result = try await Connection.run(connection) {
                    [connection, chunkSize, decoder = snapshot.2] () throws(HTTPClientError) in
                    var decoder = decoder
                    let step = try Self.readChunked(connection, decoder: &decoder, limit: chunkSize)
                    return (step, decoder)
                }
            } catch let error as HTTPClientError {
                throw fail(error)
            }
            state.withLock { $0.decoder = result.1 }
            switch result.0 {
            case .data(let bytes):
                return bytes
            case .end:
                complete()
                return nil
            }
        }
    }

    /// Reads a whole body of at most `maxBytes` (blocking; on a `BlockingPool` thread).
    static func readWhole(_ connection: Connection, framing: HTTPBodyFraming, maxBytes: Int) throws(HTTPClientError)
        -> [UInt8]
    {
        let tooLarge = HTTPClientError(.tooLarge, "the body is longer than \(maxBytes) bytes")
        switch framing {
        case .none:
            return []
        case .length(let length):
            guard length <= UInt64(maxBytes) else { throw tooLarge }
            var body: [UInt8] = []
            body.reserveCapacity(Int(length))
            while body.count < Int(length) {
                let bytes = try connection.receive(Int(length) - body.count, waitAll: true)
                if bytes.isEmpty {
                    throw HTTPClientError(
                        .connectionReset, "the connection closed with \(Int(length) - body.count) body bytes missing")
                }
                body += bytes
            }
            return body
        case .untilClose:
            var body: [UInt8] = []
            while true {
                let bytes = try connection.receive(64 << 10, waitAll: false)
                if bytes.isEmpty { return body }
                body += bytes
                guard body.count <= maxBytes else { throw tooLarge }
            }
        case .chunked:
            var body: [UInt8] = []
            var decoder = HTTPChunkedDecoder()
            while true {
                switch try readChunked(connection, decoder: &decoder, limit: 1 << 20) {
                case .data(let bytes):
                    body += bytes
                    guard body.count <= maxBytes else { throw tooLarge }
                case .end:
                    return body
                }
            }
        }
    }

    enum ChunkStep: Sendable {
        case data([UInt8])
        case end
    }

    /// The next piece of a chunked body, decoded by the wire layer's ``HTTPChunkedDecoder``; a chunk's data that
    /// is not buffered yet is read straight from the socket.
    static func readChunked(_ connection: Connection, decoder: inout HTTPChunkedDecoder, limit: Int)
        throws(HTTPClientError) -> ChunkStep
    {
        var pending: [UInt8] = []
        while true {
            if pending.isEmpty {
                let left = decoder.remainingInChunk
                if left > 0 {
                    let bytes = try connection.receive(Int(min(left, UInt64(limit))), waitAll: true)
                    if bytes.isEmpty {
                        throw HTTPClientError(.connectionReset, "the connection closed inside a chunk")
                    }
                    decoder.skipData(UInt64(bytes.count))
                    return .data(bytes)
                }
                pending = try connection.receive(16 << 10, waitAll: false)
                if pending.isEmpty {
                    throw HTTPClientError(.connectionReset, "the connection closed inside a chunked body")
                }
            }
            let step: HTTPChunkedDecoder.Step
            let consumed: Int
            do {
                (step, consumed) = try decoder.decode(pending)
            } catch {
                throw HTTPClientError(.invalidResponse, "the server's chunked body is damaged: \(error)")
            }
            switch step {
            case .data(let range):
                let bytes = Array(pending[range])
                connection.unread(pending[consumed...])
                return .data(bytes)
            case .end:
                connection.unread(pending[consumed...])
                return .end
            case .needMoreData:
                pending.removeFirst(consumed)
                if decoder.remainingInChunk > 0 && pending.isEmpty { continue }
                let more = try connection.receive(16 << 10, waitAll: false)
                if more.isEmpty {
                    throw HTTPClientError(.connectionReset, "the connection closed inside a chunked body")
                }
                pending += more
            }
        }
    }
}
