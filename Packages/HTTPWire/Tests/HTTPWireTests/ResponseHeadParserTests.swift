import Testing

@testable import HTTPWire

private func parse(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> HTTPResponseHeadParser.Result {
    var parser = HTTPResponseHeadParser(limits: limits)
    return parser.parse(Array(text.utf8))
}

private func head(_ text: String) -> HTTPResponseHead? {
    if case .response(let head, _) = parse(text) { return head }
    return nil
}

private func error(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> HTTPResponseHeadError? {
    if case .error(let error) = parse(text, limits: limits) { return error }
    return nil
}

@Suite("Response-head parser")
struct ResponseHeadParserTests {
    static let sample =
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100\r\nContent-Length: 10\r\nX-A: 1\r\nx-a:  2 \r\n\r\n"

    @Test func parsesStatusReasonAndOrderedFields() throws {
        let text = Self.sample + "0123456789"
        guard case .response(let head, let consumed) = parse(text) else {
            Issue.record("not parsed")
            return
        }
        #expect(consumed == Self.sample.utf8.count)
        #expect(head.version == .http1_1)
        #expect(head.status.code == 206)
        #expect(head.status.reasonPhrase == "Partial Content")
        #expect(head.headers.fields.map(\.name) == ["Content-Range", "Content-Length", "X-A", "x-a"])
        #expect(head.headers.values(name: "X-a") == ["1", "2"])
        #expect(head.keepAlive)
        #expect(try head.bodyFraming(requestMethod: .get) == .length(10))
    }

    @Test func emptyReasonAndMissingFinalSpaceAreAccepted() {
        #expect(head("HTTP/1.1 200 \r\n\r\n")?.status == HTTPStatus(code: 200, reasonPhrase: "OK"))
        #expect(head("HTTP/1.1 404\r\n\r\n")?.status.description == "404 Not Found")
        #expect(head("HTTP/1.0 200 OK\n\n")?.version == .http1_0)
        #expect(head("HTTP/1.1 599 Whatever It Is\r\n\r\n")?.status.description == "599 Whatever It Is")
    }

    @Test func everyPrefixNeedsMoreDataAndDripFeedMatchesOneShot() {
        let bytes = Array(Self.sample.utf8)
        for end in 0..<bytes.count {
            var parser = HTTPResponseHeadParser()
            guard case .needMoreData = parser.parse(Array(bytes[0..<end])) else {
                Issue.record("prefix of \(end) bytes did not ask for more")
                return
            }
        }
        var parser = HTTPResponseHeadParser()
        var fed: [UInt8] = []
        var result: HTTPResponseHead?
        for byte in bytes {
            fed.append(byte)
            switch parser.parse(fed) {
            case .needMoreData: continue
            case .response(let head, let consumed):
                #expect(consumed == bytes.count)
                result = head
            case .error(let error): Issue.record("drip-feed failed: \(error)")
            }
        }
        #expect(result == head(Self.sample))
    }

    @Test func damagedStatusLinesAreTypedWithOffsets() {
        #expect(error("HTTP/2 200 OK\r\n\r\n")?.code == .invalidVersion)
        #expect(error("HTTP/2.0 200 OK\r\n\r\n")?.code == .unsupportedVersion)
        #expect(error("ICY 200 OK\r\n\r\n")?.code == .invalidVersion)
        #expect(error("HTTP/1.1 20 OK\r\n\r\n")?.code == .invalidStatus)
        #expect(error("HTTP/1.1 2x0 OK\r\n\r\n") == HTTPResponseHeadError(code: .invalidStatus, offset: 10))
        #expect(error("HTTP/1.1 099 Low\r\n\r\n")?.code == .invalidStatus)
        #expect(error("HTTP/1.1  200 OK\r\n\r\n")?.code == .invalidStatus)
        #expect(error("HTTP/1.1 2000 OK\r\n\r\n")?.code == .invalidStatus)
        #expect(error("HTTP/1.1-200 OK\r\n\r\n") == HTTPResponseHeadError(code: .invalidStatusLine, offset: 8))
        #expect(error("HTTP/1.1 200 O\rK\r\n\r\n") == HTTPResponseHeadError(code: .bareCarriageReturn, offset: 14))
        #expect(error("HTTP/1.1 200 O\u{01}K\r\n\r\n")?.code == .invalidStatusLine)
        #expect(error("\r\n\r\n")?.code == .invalidStatusLine)
        #expect(error("garbage\n\n")?.code == .invalidStatusLine)
    }

    @Test func damagedFieldLinesAreTyped() {
        let line = "HTTP/1.1 200 OK\r\n"
        #expect(
            error(line + "A: 1\r\n folded\r\n\r\n") == HTTPResponseHeadError(code: .obsoleteLineFolding, offset: 23))
        #expect(error(line + "A : 1\r\n\r\n")?.code == .whitespaceBeforeColon)
        #expect(error(line + "A(b): 1\r\n\r\n")?.code == .invalidFieldName)
        #expect(error(line + ": 1\r\n\r\n")?.code == .invalidFieldName)
        #expect(error(line + "NoColon\r\n\r\n")?.code == .invalidFieldName)
        #expect(error(line + "A: x\u{00}y\r\n\r\n")?.code == .invalidFieldValue)
        #expect(error(line + "A: x\ry\r\n\r\n")?.code == .bareCarriageReturn)
    }

    @Test func capsAreEnforcedBeforeTheHeadEnds() {
        var limits = HTTPParserLimits()
        limits.maxRequestLineLength = 32
        limits.maxHeaderBlockLength = 64
        limits.maxHeaderFields = 3
        let longLine = "HTTP/1.1 200 " + String(repeating: "x", count: 40)
        #expect(error(longLine, limits: limits)?.code == .statusLineTooLong)
        #expect(error(longLine + "\r\n\r\n", limits: limits)?.code == .statusLineTooLong)
        let bigBlock = "HTTP/1.1 200 OK\r\nA: " + String(repeating: "y", count: 80)
        #expect(error(bigBlock, limits: limits) == HTTPResponseHeadError(code: .headerBlockTooLarge, offset: 17))
        let many = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"
        #expect(error(many, limits: limits) == HTTPResponseHeadError(code: .tooManyFields, offset: 35))
        #expect(error("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits) == nil)
    }

    @Test func messagesNameTheProblemInWords() {
        let failure = HTTPResponseHeadError(code: .conflictingFraming, offset: 0)
        #expect(failure.description == "both Content-Length and Transfer-Encoding at byte 0 of the response head")
        #expect(HTTPStatus(code: 429).description == "429 Too Many Requests")
        #expect(HTTPStatus(code: 404).description == "404 Not Found")
    }

    @Test func serializedRequestHeadRoundTripsThroughTheServerParser() {
        let head = HTTPRequestHead(
            method: .get, target: "/a?b=1", headers: ["Host": "example.com:8080", "Range": "bytes=0-1"])
        var parser = HTTPRequestHeadParser()
        guard case .request(let parsed, let consumed) = parser.parse(head.serialized()) else {
            Issue.record("not parsed")
            return
        }
        #expect(parsed == head)
        #expect(consumed == head.serialized().count)
    }
}

@Suite("Body framing (RFC 9112 §6.3)")
struct FramingTests {
    private func framing(_ fields: HTTPHeaders, status: Int = 200, method: HTTPMethod = .get) throws
        -> HTTPBodyFraming
    {
        try HTTPResponseHead(status: HTTPStatus(code: status), headers: fields).bodyFraming(requestMethod: method)
    }

    @Test func lengthChunkedCloseAndNone() throws {
        #expect(try framing(["Content-Length": "42"]) == .length(42))
        #expect(try framing(["Content-Length": "0"]) == .none)
        #expect(try framing(["Transfer-Encoding": "chunked"]) == .chunked)
        #expect(try framing(["Transfer-Encoding": "Chunked"]) == .chunked)
        #expect(try framing([:]) == .untilClose)
        #expect(try framing(["Content-Length": "42"], method: .head) == .none)
        #expect(try framing(["Content-Length": "42"], status: 204) == .none)
        #expect(try framing(["Content-Length": "42"], status: 304) == .none)
        #expect(try framing(["Transfer-Encoding": "chunked"], status: 100) == .none)
    }

    @Test func equalRepeatedLengthsAreOne() throws {
        #expect(try framing(["Content-Length": "7, 7"]) == .length(7))
        #expect(
            try framing(
                [("Content-Length", "7"), ("content-length", "7")].reduce(into: HTTPHeaders()) {
                    $0.add(name: $1.0, value: $1.1)
                }) == .length(7))
    }

    @Test func conflictsAndBadValuesAreRefused() {
        func code(_ fields: HTTPHeaders) -> HTTPResponseHeadError.Code? {
            do {
                _ = try framing(fields)
                return nil
            } catch { return (error as? HTTPResponseHeadError)?.code }
        }
        #expect(code(["Content-Length": "10", "Transfer-Encoding": "chunked"]) == .conflictingFraming)
        #expect(code(["Content-Length": "7, 8"]) == .invalidContentLength)
        var twice = HTTPHeaders()
        twice.add(name: "Content-Length", value: "7")
        twice.add(name: "Content-Length", value: "9")
        #expect(code(twice) == .invalidContentLength)
        #expect(code(["Content-Length": "-1"]) == .invalidContentLength)
        #expect(code(["Content-Length": "1e3"]) == .invalidContentLength)
        #expect(code(["Content-Length": ""]) == .invalidContentLength)
        #expect(code(["Content-Length": "99999999999999999999999"]) == .invalidContentLength)
        #expect(code(["Transfer-Encoding": "gzip, chunked"]) == .unsupportedTransferCoding)
        #expect(code(["Transfer-Encoding": "chunked, chunked"]) == .unsupportedTransferCoding)
        #expect(code(["Transfer-Encoding": "gzip"]) == .unsupportedTransferCoding)
        #expect(code(["Transfer-Encoding": " , "]) == .unsupportedTransferCoding)
    }

    @Test func requestFraming() throws {
        #expect(
            try HTTPRequestHead(method: .post, target: "/", headers: ["Content-Length": "3"]).bodyFraming()
                == .length(3))
        #expect(try HTTPRequestHead(method: .get, target: "/").bodyFraming() == .none)
        #expect(throws: HTTPResponseHeadError.self) {
            try HTTPRequestHead(
                method: .post, target: "/", headers: ["Content-Length": "3", "Transfer-Encoding": "chunked"]
            ).bodyFraming()
        }
    }
}
