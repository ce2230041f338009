import Testing

@testable import HTTPWire

/// Decodes `input` fed in pieces of `piece` bytes (0: all at once); returns the body and the bytes left after it.
private func decode(_ input: [UInt8], piece: Int = 0, limits: HTTPChunkedDecoder.Limits = .init())
    throws(HTTPChunkedError)
    -> (body: [UInt8], rest: [UInt8])
{
    var decoder = HTTPChunkedDecoder(limits: limits)
    var pending: [UInt8] = []
    var fed = 0
    var body: [UInt8] = []
    while true {
        let (step, consumed) = try decoder.decode(pending)
        if case .data(let range) = step { body += pending[range] }
        pending.removeFirst(consumed)
        switch step {
        case .end:
            return (body, pending + input[fed...])
        case .data:
            continue
        case .needMoreData:
            guard fed < input.count else {
                throw HTTPChunkedError(code: .invalidChunkSize, offset: UInt64.max)  // truncated: marker for tests
            }
            let take = piece == 0 ? input.count - fed : min(piece, input.count - fed)
            pending += input[fed..<(fed + take)]
            fed += take
        }
    }
}

private let truncated = HTTPChunkedError(code: .invalidChunkSize, offset: UInt64.max)

@Suite("Chunked transfer coding")
struct ChunkedTests {
    static let sample = Array("5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\nNEXT".utf8)

    @Test func decodesInOneShotAndDripFed() throws {
        for piece in [0, 1, 2, 3, 7, 64] {
            let (body, rest) = try decode(Self.sample, piece: piece)
            #expect(String(decoding: body, as: UTF8.self) == "hello, world", "piece \(piece)")
            #expect(String(decoding: rest, as: UTF8.self) == "NEXT", "piece \(piece)")
        }
    }

    @Test func everyPrefixIsIncomplete() {
        let body = Array(Self.sample.dropLast(4))
        for end in 0..<body.count {
            #expect(throws: truncated, "prefix \(end)") { try decode(Array(body[0..<end])) }
        }
    }

    @Test func encoderRoundTrips() throws {
        var encoded: [UInt8] = []
        let pieces: [[UInt8]] = [Array(repeating: 0x41, count: 300), [], [1, 2, 3], Array(repeating: 0, count: 4096)]
        for piece in pieces { HTTPChunkedEncoder.appendChunk(piece, to: &encoded) }
        encoded += HTTPChunkedEncoder.end
        #expect(HTTPChunkedEncoder.chunkHeader(count: 300) == Array("12c\r\n".utf8))
        #expect(HTTPChunkedEncoder.chunkHeader(count: 0) == Array("0\r\n".utf8))
        let (body, rest) = try decode(encoded, piece: 5)
        #expect(body == pieces.flatMap { $0 })
        #expect(rest.isEmpty)
    }

    @Test func bareLineFeedsAreAccepted() throws {
        let (body, _) = try decode(Array("3\nabc\n0\n\n".utf8))
        #expect(body == Array("abc".utf8))
    }

    @Test func damagedInputsAreTypedWithOffsets() {
        func failure(_ text: String, limits: HTTPChunkedDecoder.Limits = .init()) -> HTTPChunkedError? {
            do {
                _ = try decode(Array(text.utf8), limits: limits)
                return nil
            } catch { return error }
        }
        #expect(failure("zz\r\n") == HTTPChunkedError(code: .invalidChunkSize, offset: 0))
        #expect(failure("\r\n") == HTTPChunkedError(code: .invalidChunkSize, offset: 0))
        #expect(failure("-5\r\nhello\r\n0\r\n\r\n")?.code == .invalidChunkSize)
        #expect(failure("5 x\r\nhello\r\n0\r\n\r\n") == HTTPChunkedError(code: .invalidChunkSize, offset: 2))
        #expect(failure("5;a\u{01}\r\nhello\r\n0\r\n\r\n")?.code == .invalidChunkSize)
        #expect(failure("3\r\nabcX\r\n0\r\n\r\n") == HTTPChunkedError(code: .missingChunkTerminator, offset: 6))
        #expect(failure("3\r\nabc\rX0\r\n\r\n") == HTTPChunkedError(code: .missingChunkTerminator, offset: 6))
        #expect(failure("fffffffffffffffff\r\n")?.code == .chunkSizeTooLarge)
        var small = HTTPChunkedDecoder.Limits()
        small.maxChunkSize = 16
        #expect(failure("11\r\n", limits: small)?.code == .chunkSizeTooLarge)
        small.maxChunkLineLength = 8
        #expect(failure("1;" + String(repeating: "e", count: 20), limits: small)?.code == .chunkLineTooLong)
        small.maxTrailerBytes = 20
        #expect(
            failure("0\r\nA: " + String(repeating: "t", count: 30) + "\r\n\r\n", limits: small)?.code
                == .trailerTooLarge)
        #expect(failure("0\r\nA: " + String(repeating: "t", count: 30), limits: small)?.code == .trailerTooLarge)
        #expect(failure("0\r\nnot a field\r\n\r\n")?.code == .invalidTrailer)
        #expect(failure("0\r\nA: b\u{00}\r\n\r\n")?.code == .invalidTrailer)
        #expect(
            HTTPChunkedError(code: .invalidChunkSize, offset: 3).description
                == "malformed chunk size at byte 3 of the chunked body")
    }

    @Test func dataReadDirectlyIsSkipped() throws {
        var decoder = HTTPChunkedDecoder()
        var (step, consumed) = try decoder.decode(Array("a\r\n".utf8))
        #expect(step == .needMoreData)
        #expect(consumed == 3)
        #expect(decoder.remainingInChunk == 10)
        decoder.skipData(4)
        #expect(decoder.remainingInChunk == 6)
        (step, consumed) = try decoder.decode(Array("efghij\r\n0\r\n\r\n".utf8))
        #expect(step == .data(0..<6))
        (step, consumed) = try decoder.decode(Array("\r\n0\r\n\r\n".utf8))
        #expect(step == .end)
        #expect(consumed == 7)
        #expect(decoder.isFinished)
    }
}

@Suite("Client connection state machine (no I/O)")
struct ClientConnectionStateMachineTests {
    private let get = HTTPRequestHead(method: .get, target: "/", headers: ["Host": "h"])

    private func response(_ code: Int, _ fields: HTTPHeaders, version: HTTPVersion = .http1_1) -> HTTPResponseHead {
        HTTPResponseHead(version: version, status: HTTPStatus(code: code), headers: fields)
    }

    @Test func lengthBodyKeepsTheConnection() throws {
        var machine = HTTPClientConnectionStateMachine()
        #expect(machine.sendingRequest(get) == .readHead)
        #expect(try machine.headReceived(response(200, ["Content-Length": "5"])) == .readBody(.length(5)))
        #expect(machine.bodyFinished() == .returnToPool)
        #expect(machine.state == .idle)
        #expect(machine.sendingRequest(get) == .readHead)
    }

    @Test func interimHeadsAreSkipped() throws {
        var machine = HTTPClientConnectionStateMachine()
        _ = machine.sendingRequest(get)
        #expect(try machine.headReceived(response(100, [:])) == .readHead)
        #expect(try machine.headReceived(response(204, [:])) == .returnToPool)
    }

    @Test func closeDelimitedAndCloseAskedEndTheConnection() throws {
        var machine = HTTPClientConnectionStateMachine()
        _ = machine.sendingRequest(get)
        #expect(try machine.headReceived(response(200, [:])) == .readBody(.untilClose))
        let (action, complete) = machine.peerClosed()
        #expect(action == .close && complete)

        var closing = HTTPClientConnectionStateMachine()
        _ = closing.sendingRequest(get)
        #expect(try closing.headReceived(response(200, ["Content-Length": "0", "Connection": "close"])) == .close)

        var old = HTTPClientConnectionStateMachine()
        _ = old.sendingRequest(get)
        #expect(try old.headReceived(response(200, ["Content-Length": "0"], version: .http1_0)) == .close)

        var asked = HTTPClientConnectionStateMachine()
        _ = asked.sendingRequest(HTTPRequestHead(method: .get, target: "/", headers: ["Connection": "close"]))
        #expect(try asked.headReceived(response(200, ["Transfer-Encoding": "chunked"])) == .readBody(.chunked))
        #expect(asked.bodyFinished() == .close)
    }

    @Test func headRequestsHaveNoBody() throws {
        var machine = HTTPClientConnectionStateMachine()
        _ = machine.sendingRequest(HTTPRequestHead(method: .head, target: "/"))
        #expect(try machine.headReceived(response(200, ["Content-Length": "900"])) == .returnToPool)
    }

    @Test func failuresClose() throws {
        var machine = HTTPClientConnectionStateMachine()
        _ = machine.sendingRequest(get)
        #expect(throws: HTTPResponseHeadError(code: .conflictingFraming, offset: 0)) {
            try machine.headReceived(response(200, ["Content-Length": "5", "Transfer-Encoding": "chunked"]))
        }
        #expect(machine.state == .closed)

        var early = HTTPClientConnectionStateMachine()
        _ = early.sendingRequest(get)
        _ = try early.headReceived(response(200, ["Content-Length": "5"]))
        let (action, complete) = early.peerClosed()
        #expect(action == .close && !complete)

        var dropped = HTTPClientConnectionStateMachine()
        _ = dropped.sendingRequest(get)
        _ = try dropped.headReceived(response(200, ["Content-Length": "5"]))
        #expect(dropped.abandoned() == .close)
        #expect(dropped.sendingRequest(get) == .close)
    }
}
