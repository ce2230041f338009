import Testing

@testable import HTTPWire

/// Parses `text` in one shot.
private func parse(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> HTTPRequestHeadParser.Result {
    var parser = HTTPRequestHeadParser(limits: limits)
    return parser.parse(Array(text.utf8))
}

private func request(_ text: String) -> HTTPRequestHead? {
    if case .request(let request, _) = parse(text) { return request }
    return nil
}

private func errorCode(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> HTTPRequestHeadError? {
    if case .error(let error) = parse(text, limits: limits) { return error }
    return nil
}

@Suite("Request-head parser")
struct ParserTests {
    @Test func simpleGet() throws {
        let text = "GET /a/b?c=d HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nRange: bytes=0-1\r\nX-A: 1\r\nx-a: 2\r\n\r\n"
        guard case .request(let request, let consumed) = parse(text) else {
            Issue.record("not parsed")
            return
        }
        #expect(consumed == text.utf8.count)
        #expect(request.method == .get)
        #expect(request.target == "/a/b?c=d")
        #expect(request.path == "/a/b")
        #expect(request.query == "c=d")
        #expect(request.version == .http1_1)
        #expect(request.headers.fields.map(\.name) == ["Host", "Range", "X-A", "x-a"])
        #expect(request.headers.values(name: "x-A") == ["1", "2"])
        #expect(request.headers["range"] == "bytes=0-1")
    }

    @Test func valueWhitespaceTrimmedAndObsTextKept() throws {
        let parsed = try #require(request("GET / HTTP/1.1\r\nHost:  h \t\r\nX: a b\u{00E9} \r\n\r\n"))
        #expect(parsed.headers["Host"] == "h")
        #expect(parsed.headers["X"] == "a b\u{00E9}")
    }

    @Test func bareLineFeedsAndOneLeadingEmptyLine() throws {
        #expect(request("GET / HTTP/1.1\nHost: h\n\n") != nil)
        #expect(request("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") != nil)
        #expect(request("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") != nil)
        #expect(errorCode("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")?.status.code == 400)
    }

    @Test func http10NeedsNoHost() throws {
        let parsed = try #require(request("GET / HTTP/1.0\r\n\r\n"))
        #expect(parsed.version == .http1_0)
        #expect(!parsed.wantsKeepAlive)
        let keepAlive = try #require(request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"))
        #expect(keepAlive.wantsKeepAlive)
        let close = try #require(request("GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, close\r\n\r\n"))
        #expect(!close.wantsKeepAlive)
    }

    @Test func targetForms() throws {
        #expect(request("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")?.target == "*")
        let absolute = try #require(request("GET http://127.0.0.1:9/x/y?q HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(absolute.path == "/x/y")
        #expect(errorCode("GET x HTTP/1.1\r\nHost: h\r\n\r\n")?.code == .invalidTarget)
        #expect(errorCode("GET /a\u{7F} HTTP/1.1\r\nHost: h\r\n\r\n")?.code == .invalidTarget)
        #expect(errorCode("GET /\u{00E9} HTTP/1.1\r\nHost: h\r\n\r\n")?.code == .invalidTarget)
    }

    /// Every malformed head answers 400 (or the documented status), never a request.
    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", HTTPRequestHeadError.Code.missingHost),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .duplicateHost),
        ("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", .duplicateHost),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", .requestBodyNotAllowed),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", .invalidContentLength),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0, 1\r\n\r\n", .requestBodyNotAllowed),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -0\r\n\r\n", .invalidContentLength),
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", .requestBodyNotAllowed),
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", .requestBodyNotAllowed),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", .obsoleteLineFolding),
        ("GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsoleteLineFolding),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", .whitespaceBeforeColon),
        ("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", .whitespaceBeforeColon),
        ("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", .bareCarriageReturn),
        ("GET / HTTP/1.1\rHost: a\r\n\r\n", .bareCarriageReturn),
        ("GET / HTTP/1.1\r\nHo\u{01}st: a\r\n\r\n", .invalidFieldName),
        ("GET / HTTP/1.1\r\nHo(st: a\r\n\r\n", .invalidFieldName),
        ("GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", .invalidFieldName),
        ("GET / HTTP/1.1\r\nNoColon\r\nHost: a\r\n\r\n", .invalidFieldName),
        ("GET / HTTP/1.1\r\nHost: a\u{00}b\r\n\r\n", .invalidFieldValue),
        ("GET / HTTP/1.1\r\nHost: a\u{1B}b\r\n\r\n", .invalidFieldValue),
        ("GET / HTTP/1.1\r\nHost: a\u{7F}\r\n\r\n", .invalidFieldValue),
        ("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", .invalidVersion),
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        ("GET /\r\n\r\n", .invalidVersion),
        ("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", .invalidVersion),
        ("GET / http/1.1\r\nHost: a\r\n\r\n", .invalidVersion),
        ("GET / HTTP/11\r\nHost: a\r\n\r\n", .invalidVersion),
        ("GET / HTTP/0.9\r\nHost: a\r\n\r\n", .invalidVersion),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion),
        ("G@T / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
        (" GET / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
        ("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
    ])
    func malformed(_ text: String, _ expected: HTTPRequestHeadError.Code) {
        let error = errorCode(text)
        #expect(error?.code == expected, "\(text.debugDescription)")
        if expected == .unsupportedVersion {
            #expect(error?.status.code == 505)
        } else {
            #expect(error?.status.code == 400)
        }
    }

    @Test func requestLineCap() {
        let limit = HTTPParserLimits().maxRequestLineLength
        // Exactly at the cap is fine.
        let fits = "GET /" + String(repeating: "a", count: limit - 14) + " HTTP/1.1"
        #expect(fits.utf8.count == limit)
        #expect(request(fits + "\r\nHost: h\r\n\r\n") != nil)
        let long = "GET /" + String(repeating: "a", count: limit - 13) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(errorCode(long)?.status.code == 414)
        // Known before the line ends: no line feed within the cap.
        let partial = "GET /" + String(repeating: "a", count: limit + 10)
        #expect(errorCode(partial)?.code == .requestLineTooLong)
    }

    @Test func headerBlockCaps() {
        let big = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 16 * 1024) + "\r\n\r\n"
        #expect(errorCode(big)?.status.code == 431)
        let unfinished = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 16 * 1024 + 10)
        #expect(errorCode(unfinished)?.code == .headerBlockTooLarge)
        var fields = "GET / HTTP/1.1\r\nHost: h\r\n"
        for i in 0..<99 { fields += "X-\(i): v\r\n" }
        #expect(request(fields + "\r\n") != nil)  // 100 fields
        #expect(errorCode(fields + "X-last: v\r\n\r\n")?.code == .tooManyFields)
        #expect(errorCode(fields + "X-last: v\r\n\r\n")?.status.code == 431)
    }

    @Test func everyPrefixNeedsMoreData() {
        let text = Array("GET /media.ts HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-99\r\n\r\n".utf8)
        for length in 0..<text.count {
            var parser = HTTPRequestHeadParser()
            guard case .needMoreData = parser.parse(Array(text[0..<length])) else {
                Issue.record("prefix of \(length) bytes did not ask for more")
                continue
            }
        }
    }

    @Test func dripFeedMatchesOneShot() throws {
        let text = Array(
            "GET /x HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-99,200-\r\nIf-Range: \"abc\"\r\n\r\nGET /next".utf8)
        let oneShot = try #require(request(String(decoding: text, as: UTF8.self)))
        var generator = SystemRandomNumberGenerator()
        for chunking in 0..<20 {
            var parser = HTTPRequestHeadParser()
            var buffer: [UInt8] = []
            var result: HTTPRequestHead?
            var consumed = 0
            var index = 0
            while index < text.count, result == nil {
                let step = chunking == 0 ? 1 : Int.random(in: 1...7, using: &generator)
                buffer += text[index..<min(text.count, index + step)]
                index += step
                switch parser.parse(buffer) {
                case .needMoreData: continue
                case .request(let request, let count):
                    result = request
                    consumed = count
                case .error(let error): Issue.record("error \(error)")
                }
            }
            let parsed = try #require(result)
            #expect(parsed.target == oneShot.target)
            #expect(parsed.headers == oneShot.headers)
            #expect(consumed == text.count - "GET /next".utf8.count)
        }
    }

    @Test func pipelinedHeadsParseInOrder() throws {
        let text = Array("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTT".utf8)
        var parser = HTTPRequestHeadParser()
        var offset = 0
        var targets: [String] = []
        while true {
            let result = parser.parse(Array(text[offset...]))
            guard case .request(let request, let consumed) = result else {
                guard case .needMoreData = result else {
                    Issue.record("unexpected \(result)")
                    return
                }
                break
            }
            targets.append(request.target)
            offset += consumed
        }
        #expect(targets == ["/1", "/2"])
        #expect(offset == text.count - "GET /3 HTT".utf8.count)
    }

    @Test func headersOrderedListAPI() {
        var headers: HTTPHeaders = ["A": "1", "b": "2", "a": "3"]
        #expect(headers.values(name: "a") == ["1", "3"])
        headers.replaceOrAdd(name: "A", value: "9")
        #expect(headers.fields.map(\.value) == ["9", "2"])
        headers.remove(name: "B")
        #expect(headers.count == 1)
        let connection: HTTPHeaders = ["Connection": "Keep-Alive , Upgrade"]
        #expect(connection.containsToken("upgrade", in: "connection"))
        #expect(!connection.containsToken("close", in: "connection"))
    }
}
