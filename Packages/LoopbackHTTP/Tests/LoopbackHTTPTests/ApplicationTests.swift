import FileRange
import Foundation
import Testing

@testable import LoopbackHTTP

/// 100 bytes: "0123456789" ten times.
let hundredBytes: [UInt8] = (0..<100).map { UInt8(ascii: "0") + UInt8($0 % 10) }

/// A temporary directory with a few files, removed when the test that made it ends (its suite must be marked
/// `.temporaryFolders`).
final class TempTree {
    let root: URL
    init() throws {
        root = TemporaryFolders.make(prefix: "lh-")
        let inside = root.appendingPathComponent("www")
        try FileManager.default.createDirectory(
            at: inside.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data(hundredBytes).write(to: inside.appendingPathComponent("media.ts"))
        try Data().write(to: inside.appendingPathComponent("empty.ts"))
        try Data("#EXTM3U\n".utf8).write(to: inside.appendingPathComponent("sub/index.m3u8"))
        try Data("secret".utf8).write(to: root.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: inside.appendingPathComponent("escape.txt").path,
            withDestinationPath: root.appendingPathComponent("secret.txt").path)
        try FileManager.default.createSymbolicLink(
            atPath: inside.appendingPathComponent("alias.ts").path, withDestinationPath: "media.ts")
    }
    var www: String { root.appendingPathComponent("www").path }
}

/// The application used by the in-process and socket tests.
func makeApplication(
    www: String, token: SessionToken, cors: CORSOptions? = nil, log: (@Sendable (AccessLogEntry) -> Void)? = nil
) -> HTTPApplication {
    var router = Router()
    router.getImmediate("/bytes") { _ in .bytes(hundredBytes, contentType: "text/plain") }
    router.get("/async/:name") { request in
        .text("hello \(request.parameters["name"] ?? "?")")
    }
    router.get("/stream/:count") { request in
        let count = Int(request.parameters["count"] ?? "") ?? 0
        let stream = AsyncStream<[UInt8]> { continuation in
            for i in 0..<count { continuation.yield(Array("chunk\(i);".utf8)) }
            continuation.finish()
        }
        return HTTPResponse(headers: ["Content-Type": "text/plain"], body: .stream(.init(stream)))
    }
    router.get("/known") { _ in
        let stream = AsyncStream<[UInt8]> { continuation in
            continuation.yield(Array("abc".utf8))
            continuation.yield(Array("defg".utf8))
            continuation.finish()
        }
        return HTTPResponse(body: .stream(.init(length: 7, stream)))
    }
    router.getImmediate("/media.ts", session: token) { _ in
        do {
            return try HTTPResponse.file(FileStreamer(path: www + "/media.ts"), contentType: "video/mp2t")
        } catch {
            return .error(.notFound)
        }
    }
    router.add(.get, "/static/**", handler: StaticFileHandler(root: www).handler)
    var configuration = HTTPServerConfiguration()
    configuration.cors = cors
    configuration.accessLog = log
    return HTTPApplication(router: router, configuration: configuration)
}

func get(
    _ target: String, _ extra: [(String, String)] = [], method: HTTPMethod = .get, version: HTTPVersion = .http1_1,
    host: String? = "127.0.0.1:8080"
) -> HTTPRequest {
    var headers = HTTPHeaders()
    if let host { headers.add(name: "Host", value: host) }
    for (name, value) in extra { headers.add(name: name, value: value) }
    return HTTPRequest(method: method, target: target, version: version, headers: headers)
}

extension HTTPResponse {
    var bodyBytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }
    var bodyText: String { String(decoding: bodyBytes, as: UTF8.self) }
    /// Header fields except Date, as `name: value` lines.
    var fieldLines: [String] { headers.fields.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" } }
}

/// Expected multipart/byteranges body for `ranges` of `content`.
func multipartBody(boundary: String, contentType: String, ranges: [(Int, Int)], content: [UInt8]) -> [UInt8] {
    var body: [UInt8] = []
    for (first, last) in ranges {
        body += Array(
            "\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: bytes \(first)-\(last)/\(content.count)\r\n\r\n"
                .utf8)
        body += content[first...last]
    }
    body += Array("\r\n--\(boundary)--\r\n".utf8)
    return body
}

@Suite("In-process handling", .temporaryFolders)
struct ApplicationTests {
    let tree: TempTree
    let token = SessionToken.random()
    let app: HTTPApplication

    init() throws {
        tree = try TempTree()
        app = makeApplication(www: tree.www, token: token)
    }

    /// The content validator changes when any byte changes (in the word lanes and in the tail), or the length
    /// does, and is the same for the same bytes.
    @Test func contentValidatorSeesEveryByte() {
        let base = (0..<203).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        let tag = HTTPApplication.contentEntityTag(base)
        #expect(HTTPApplication.contentEntityTag(Array(base)) == tag)
        var seen: Set<UInt64> = [HTTPApplication.contentHash(base)]
        for index in base.indices {
            var changed = base
            changed[index] ^= 0x01
            #expect(HTTPApplication.contentEntityTag(changed) != tag, "byte \(index)")
            seen.insert(HTTPApplication.contentHash(changed))
        }
        #expect(seen.count == base.count + 1)
        #expect(HTTPApplication.contentHash(base + [0]) != HTTPApplication.contentHash(base))
        #expect(HTTPApplication.contentHash([]) != HTTPApplication.contentHash([0]))
    }

    @Test func wholeBody() async {
        let response = await app.respond(to: get("/bytes"))
        #expect(response.status.code == 200)
        let etag = HTTPApplication.contentEntityTag(hundredBytes)
        #expect(
            response.fieldLines == [
                "Content-Type: text/plain", "Accept-Ranges: bytes", "ETag: \(etag)", "Content-Length: 100",
            ])
        // The content validator works for conditional requests and If-Range.
        let notModified = await app.respond(to: get("/bytes", [("If-None-Match", etag)]))
        #expect(notModified.status.code == 304)
        let ranged = await app.respond(to: get("/bytes", [("Range", "bytes=0-0"), ("If-Range", etag)]))
        #expect(ranged.status.code == 206)
        let stale = await app.respond(to: get("/bytes", [("Range", "bytes=0-0"), ("If-Range", "\"x\"")]))
        #expect(stale.status.code == 200)
        #expect(response.headers.first(name: "Date")?.hasSuffix(" GMT") == true)
        #expect(response.headers.fields.first?.name == "Date")
        #expect(response.bodyBytes == hundredBytes)
    }

    @Test(arguments: [
        ("bytes=0-9", 0, 9),
        ("bytes=90-", 90, 99),
        ("bytes=-5", 95, 99),
        ("bytes=-500", 0, 99),
        ("bytes=95-200", 95, 99),
        ("bytes=10-19,15-29", 10, 29),  // overlapping: coalesced into one part
        ("bytes=10-19,20-29", 10, 29),  // adjacent: coalesced
        ("BYTES=5-5", 5, 5),
    ])
    func singleRange(_ range: String, _ first: Int, _ last: Int) async {
        let response = await app.respond(to: get("/bytes", [("Range", range)]))
        #expect(response.status.code == 206, "\(range)")
        #expect(
            response.fieldLines == [
                "Content-Type: text/plain", "Accept-Ranges: bytes",
                "ETag: \(HTTPApplication.contentEntityTag(hundredBytes))",
                "Content-Range: bytes \(first)-\(last)/100",
                "Content-Length: \(last - first + 1)",
            ], "\(range)")
        #expect(response.bodyBytes == Array(hundredBytes[first...last]), "\(range)")
    }

    @Test func multipleRanges() async throws {
        for target in ["/bytes", "/\(token.value)/media.ts"] {
            let response = await app.respond(to: get(target, [("Range", "bytes=50-54, 0-1,-3")]))
            #expect(response.status.code == 206)
            let contentType = try #require(response.headers["Content-Type"])
            #expect(contentType.hasPrefix("multipart/byteranges; boundary="))
            let boundary = String(contentType.dropFirst("multipart/byteranges; boundary=".count))
            let expected = multipartBody(
                boundary: boundary, contentType: target == "/bytes" ? "text/plain" : "video/mp2t",
                ranges: [(0, 1), (50, 54), (97, 99)], content: hundredBytes)
            #expect(response.bodyBytes == expected)
            #expect(response.headers["Content-Length"] == String(expected.count))
            #expect(response.headers["Content-Range"] == nil)
        }
    }

    @Test(arguments: ["bytes=100-", "bytes=200-300", "bytes=-0", "bytes=100-100,150-"])
    func unsatisfiable(_ range: String) async {
        let response = await app.respond(to: get("/bytes", [("Range", range)]))
        #expect(response.status.code == 416, "\(range)")
        #expect(response.headers["Content-Range"] == "bytes */100")
        #expect(response.headers["Content-Length"] == "0")
        #expect(response.bodyBytes.isEmpty)
    }

    @Test(arguments: ["bytes=5-1", "bytes=a-b", "items=0-1", "bytes=", "bytes=1", "0-1", "bytes=--1"])
    func invalidRangeIgnored(_ range: String) async {
        let response = await app.respond(to: get("/bytes", [("Range", range)]))
        #expect(response.status.code == 200, "\(range)")
        #expect(response.headers["Content-Length"] == "100")
        #expect(response.bodyBytes == hundredBytes)
    }

    @Test func tooManyRangesServeWhole() async {
        let ranges = (0..<17).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        let response = await app.respond(to: get("/bytes", [("Range", "bytes=" + ranges)]))
        #expect(response.status.code == 200)
    }

    @Test func fileRangeAndValidators() async throws {
        let path = "/\(token.value)/media.ts"
        let whole = await app.respond(to: get(path))
        #expect(whole.status.code == 200)
        let etag = try #require(whole.headers["ETag"])
        let lastModified = try #require(whole.headers["Last-Modified"])
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
        #expect(HTTPDate.parse(lastModified) != nil)
        #expect(whole.bodyBytes == hundredBytes)

        let partial = await app.respond(to: get(path, [("Range", "bytes=10-14")]))
        #expect(partial.status.code == 206)
        #expect(
            partial.fieldLines == [
                "Content-Type: video/mp2t", "ETag: \(etag)", "Last-Modified: \(lastModified)",
                "Cache-Control: no-cache",
                "Accept-Ranges: bytes",
                "Content-Range: bytes 10-14/100", "Content-Length: 5",
            ])
        #expect(partial.bodyText == "01234")

        // If-Range with the current ETag or date: the range applies; otherwise the whole file.
        let matching = await app.respond(to: get(path, [("Range", "bytes=10-14"), ("If-Range", etag)]))
        #expect(matching.status.code == 206)
        let byDate = await app.respond(to: get(path, [("Range", "bytes=10-14"), ("If-Range", lastModified)]))
        #expect(byDate.status.code == 206)
        let stale = await app.respond(to: get(path, [("Range", "bytes=10-14"), ("If-Range", "\"other\"")]))
        #expect(stale.status.code == 200)
        #expect(stale.bodyBytes == hundredBytes)
        let weak = await app.respond(to: get(path, [("Range", "bytes=10-14"), ("If-Range", "W/\(etag)")]))
        #expect(weak.status.code == 200)
        let oldDate = await app.respond(
            to: get(path, [("Range", "bytes=10-14"), ("If-Range", "Sun, 06 Nov 1994 08:49:37 GMT")]))
        #expect(oldDate.status.code == 200)

        // Conditional GET.
        let notModified = await app.respond(to: get(path, [("If-None-Match", etag)]))
        #expect(notModified.status.code == 304)
        #expect(
            notModified.fieldLines == ["ETag: \(etag)", "Last-Modified: \(lastModified)", "Cache-Control: no-cache"])
        #expect(notModified.bodyBytes.isEmpty)
        let listMatch = await app.respond(to: get(path, [("If-None-Match", "\"x\", W/\(etag)")]))
        #expect(listMatch.status.code == 304)
        let star = await app.respond(to: get(path, [("If-None-Match", "*")]))
        #expect(star.status.code == 304)
        let changed = await app.respond(to: get(path, [("If-None-Match", "\"x\"")]))
        #expect(changed.status.code == 200)
        let since = await app.respond(to: get(path, [("If-Modified-Since", lastModified)]))
        #expect(since.status.code == 304)
        let sinceOld = await app.respond(to: get(path, [("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")]))
        #expect(sinceOld.status.code == 200)
        // If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2).
        let both = await app.respond(to: get(path, [("If-None-Match", "\"x\""), ("If-Modified-Since", lastModified)]))
        #expect(both.status.code == 200)
        let ifMatch = await app.respond(to: get(path, [("If-Match", "\"x\"")]))
        #expect(ifMatch.status.code == 412)
        #expect(ifMatch.bodyText == "412 Precondition Failed\n")
        #expect(ifMatch.headers["Content-Length"] == "24")
        let ifMatchOK = await app.respond(to: get(path, [("If-Match", etag), ("Range", "bytes=0-0")]))
        #expect(ifMatchOK.status.code == 206)
    }

    @Test func zeroLengthFile() async {
        let whole = await app.respond(to: get("/static/empty.ts"))
        #expect(whole.status.code == 200)
        #expect(whole.headers["Content-Length"] == "0")
        let ranged = await app.respond(to: get("/static/empty.ts", [("Range", "bytes=0-")]))
        #expect(ranged.status.code == 416)
        #expect(ranged.headers["Content-Range"] == "bytes */0")
        let suffix = await app.respond(to: get("/static/empty.ts", [("Range", "bytes=-10")]))
        #expect(suffix.status.code == 416)
    }

    @Test func headHasGetHeadersAndNoBody() async {
        let getResponse = await app.respond(to: get("/static/sub/index.m3u8"))
        let head = await app.respond(to: get("/static/sub/index.m3u8", method: .head))
        #expect(head.status.code == 200)
        #expect(head.fieldLines == getResponse.fieldLines)
        #expect(head.headers["Content-Length"] == "8")
        #expect(head.headers["Content-Type"] == "application/vnd.apple.mpegurl")
        #expect(head.bodyBytes.isEmpty)
        let headRange = await app.respond(to: get("/bytes", [("Range", "bytes=0-4")], method: .head))
        #expect(headRange.status.code == 206)
        #expect(headRange.headers["Content-Length"] == "5")
        #expect(headRange.bodyBytes.isEmpty)
    }

    @Test func methods() async {
        let post = await app.respond(to: get("/bytes", method: .post))
        #expect(post.status.code == 405)
        #expect(post.headers["Allow"] == "GET, HEAD, OPTIONS")
        let delete = await app.respond(to: get("/nothing", method: .delete))
        #expect(delete.status.code == 405)
        let brew = await app.respond(to: get("/bytes", method: HTTPMethod("BREW")))
        #expect(brew.status.code == 501)
        let options = await app.respond(to: get("/bytes", method: .options))
        #expect(options.status.code == 204)
        #expect(options.headers["Allow"] == "GET, HEAD, OPTIONS")
        #expect(options.headers["Content-Length"] == nil)
        #expect(options.headers["Access-Control-Allow-Origin"] == nil)  // CORS off by default
        let star = await app.respond(to: get("*", method: .options))
        #expect(star.status.code == 204)
        let starGet = await app.respond(to: get("*"))
        #expect(starGet.status.code == 400)
        let missing = await app.respond(to: get("/missing"))
        #expect(missing.status.code == 404)
        let optionsMissing = await app.respond(to: get("/missing", method: .options))
        #expect(optionsMissing.status.code == 404)
    }

    @Test func cors() async {
        let corsApp = makeApplication(www: tree.www, token: token, cors: CORSOptions(allowedOrigin: "*"))
        let preflight = await corsApp.respond(
            to: get("/bytes", [("Origin", "http://x"), ("Access-Control-Request-Method", "GET")], method: .options))
        #expect(preflight.status.code == 204)
        #expect(preflight.headers["Access-Control-Allow-Origin"] == "*")
        #expect(preflight.headers["Access-Control-Allow-Headers"] == "Range")
        #expect(preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS")
        #expect(preflight.headers["Access-Control-Expose-Headers"] == "Content-Length, Content-Range, Accept-Ranges")
        let response = await corsApp.respond(to: get("/bytes", [("Range", "bytes=0-0")]))
        #expect(response.headers["Access-Control-Allow-Origin"] == "*")
        #expect(response.headers["Access-Control-Expose-Headers"] == "Content-Length, Content-Range, Accept-Ranges")
        let origin = makeApplication(
            www: tree.www, token: token, cors: CORSOptions(allowedOrigin: "https://app.example"))
        let varied = await origin.respond(to: get("/bytes"))
        #expect(varied.headers["Access-Control-Allow-Origin"] == "https://app.example")
        #expect(varied.headers["Vary"] == "Origin")
    }

    @Test(arguments: [
        ("127.0.0.1", 200), ("127.0.0.1:8080", 200), ("localhost", 200), ("LOCALHOST:1", 200), ("[::1]", 200),
        ("[::1]:443", 200), ("evil.example", 421), ("evil.example:8080", 421), ("127.0.0.1.evil.example", 421),
        ("127.0.0.2", 421), ("localhost:abc", 421), ("[::2]:80", 421), ("", 421), ("127.0.0.1:", 421),
    ])
    func hostAllowList(_ host: String, _ status: Int) async {
        let response = await app.respond(to: get("/bytes", host: host))
        #expect(response.status.code == status, "\(host)")
    }

    @Test func absoluteFormAuthorityIsChecked() async {
        let evil = await app.respond(to: get("http://evil.example/bytes", host: "127.0.0.1"))
        #expect(evil.status.code == 421)
        let good = await app.respond(to: get("http://localhost:1/bytes", host: "evil.example"))
        #expect(good.status.code == 200)
    }

    @Test func sessionToken() async {
        let right = await app.respond(to: get("/\(token.value)/media.ts"))
        #expect(right.status.code == 200)
        let other = SessionToken.random()
        let wrong = await app.respond(to: get("/\(other.value)/media.ts"))
        #expect(wrong.status.code == 404)
        let short = await app.respond(to: get("/\(token.value.dropLast())/media.ts"))
        #expect(short.status.code == 404)
        #expect(token.matches(token.value))
        #expect(!token.matches(other.value))
        #expect(!token.matches(""))
        #expect(!token.matches(token.value + "0"))
        #expect(token.value.utf8.count == 32)
        #expect(SessionToken(token.value) == token)
        #expect(SessionToken("xyz") == nil)
        #expect(!"\(token)".contains(token.value))
    }

    @Test func asyncHandlerAndParameters() async {
        let response = await app.respond(to: get("/async/w%C3%B6rld"))
        #expect(response.bodyText == "hello w\u{00F6}rld")
    }

    @Test func streamedBodies() async {
        let chunked = await app.respond(to: get("/stream/3"))
        #expect(chunked.status.code == 200)
        #expect(chunked.headers["Transfer-Encoding"] == "chunked")
        #expect(chunked.headers["Content-Length"] == nil)
        #expect(chunked.bodyText == "7\r\nchunk0;\r\n7\r\nchunk1;\r\n7\r\nchunk2;\r\n0\r\n\r\n")
        // A Range request is not applied to a stream.
        let ranged = await app.respond(to: get("/stream/1", [("Range", "bytes=0-1")]))
        #expect(ranged.status.code == 200)
        let known = await app.respond(to: get("/known"))
        #expect(known.headers["Content-Length"] == "7")
        #expect(known.headers["Transfer-Encoding"] == nil)
        #expect(known.bodyText == "abcdefg")
        // HTTP/1.0 cannot take chunked: the body is delimited by closing.
        let old = await app.respond(to: get("/stream/1", version: .http1_0))
        #expect(old.headers["Transfer-Encoding"] == nil)
        #expect(old.headers["Connection"] == "close")
        #expect(old.bodyText == "chunk0;")
    }

    @Test(arguments: [
        ("/static/media.ts", 200), ("/static/sub/index.m3u8", 200), ("/static/alias.ts", 200),
        ("/static/escape.txt", 404), ("/static/../secret.txt", 404), ("/static/sub/../media.ts", 404),
        ("/static/%2e%2e/secret.txt", 404), ("/static/%2E%2E/secret.txt", 404), ("/static/.%2e/secret.txt", 404),
        ("/static/sub%2f..%2f..%2fsecret.txt", 404), ("/static/..%2fsecret.txt", 404),
        ("/static/..%5csecret.txt", 404), ("/static/sub\\..\\..\\secret.txt", 404),
        ("/static/media.ts%00.m3u8", 404), ("/static/%252e%252e/secret.txt", 404), ("/static/sub", 404),
        ("/static/", 404), ("/static//etc/passwd", 404), ("/static/./media.ts", 404),
        ("/static/%c0%ae%c0%ae/secret.txt", 400), ("/static/%e0%80%ae/x", 400), ("/static/%zz", 400),
        ("/static/%", 400), ("/static/media%2Ets", 200),
    ])
    func staticFileConfinement(_ target: String, _ status: Int) async {
        let response = await app.respond(to: get(target))
        #expect(response.status.code == status, "\(target)")
        #expect(!response.bodyText.contains("secret"), "\(target)")
    }

    /// A path served (and verified) once, then replaced by a symbolic link that leaves the root: refused.
    @Test func swappedForEscapingSymlink() async throws {
        let swap = tree.root.appendingPathComponent("www/swap.ts")
        try Data("inside".utf8).write(to: swap)
        let first = await app.respond(to: get("/static/swap.ts"))
        #expect(first.bodyText == "inside")
        try FileManager.default.removeItem(at: swap)
        try FileManager.default.createSymbolicLink(
            atPath: swap.path, withDestinationPath: tree.root.appendingPathComponent("secret.txt").path)
        let second = await app.respond(to: get("/static/swap.ts"))
        #expect(second.status.code == 404)
        #expect(!second.bodyText.contains("secret"))
    }

    @Test func mediaTypes() {
        #expect(MediaType.forPath("a/b.m3u8") == "application/vnd.apple.mpegurl")
        #expect(MediaType.forPath("x.M3U") == "audio/mpegurl")
        #expect(MediaType.forPath("x.ts") == "video/mp2t")
        #expect(MediaType.forPath("x.mp4") == "video/mp4")
        #expect(MediaType.forPath("x.m4v") == "video/mp4")
        #expect(MediaType.forPath("x.m4s") == "video/iso.segment")
        #expect(MediaType.forPath("x.aac") == "audio/aac")
        #expect(MediaType.forPath("x.ac3") == "audio/ac3")
        #expect(MediaType.forPath("x.ec3") == "audio/eac3")
        #expect(MediaType.forPath("x.mp3") == "audio/mpeg")
        #expect(MediaType.forPath("x.vtt") == "text/vtt")
        #expect(MediaType.forPath("x.key") == "application/octet-stream")
        #expect(MediaType.forPath("x.qm") == "application/octet-stream")
        #expect(MediaType.forPath("dir.ts/file") == "application/octet-stream")
        #expect(MediaType.forPath("noext") == "application/octet-stream")
    }
}
