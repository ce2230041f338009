import FileRange
import LoopbackHTTP

// A small server for the end-to-end tests and Scripts/bench/http.sh: serves a directory, a session route and
// a few test routes, prints `PORT <n>` (and `TOKEN <t>`) on stdout, and runs until stdin reaches end of file.
//
//   loopback-http-testserver [--root DIR] [--port N] [--threads N] [--cors ORIGIN] [--media FILE]
//                            [--max-connections N] [--header-timeout SECONDS] [--idle-timeout SECONDS] [--log]
//                            [--max-open-files N]
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

var configuration = HTTPServerConfiguration()
var root: String?
var media: String?
var logRequests = false
/// Writes to standard error without touching the C `stderr` global.
@Sendable func printError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
// From argc/argv, which every standard library declares read-only (the iOS 16 and 17 SDKs declare
// `CommandLine.arguments` a mutable static, which Swift 6 refuses to read).
let arguments = (1..<max(1, Int(CommandLine.argc))).map {
    CommandLine.unsafeArgv[$0].map { String(cString: $0) } ?? ""
}
var position = 0
@MainActor func value() -> String {
    guard position < arguments.count else {
        printError("Error: missing value\n")
        exit(64)
    }
    position += 1
    return arguments[position - 1]
}
while position < arguments.count {
    let argument = arguments[position]
    position += 1
    switch argument {
    case "--root": root = value()
    case "--media": media = value()
    case "--port": configuration.port = UInt16(value()) ?? 0
    case "--threads": configuration.eventLoopThreads = Int(value()) ?? 2
    case "--cors": configuration.cors = CORSOptions(allowedOrigin: value())
    case "--max-connections": configuration.maxConnections = Int(value()) ?? 4096
    case "--header-timeout": configuration.timeouts.header = .seconds(Int(value()) ?? 10)
    case "--idle-timeout": configuration.timeouts.idle = .seconds(Int(value()) ?? 60)
    case "--log": logRequests = true
    case "--max-open-files":
        // Lowers RLIMIT_NOFILE so that tests can drive accept() into EMFILE.
        var limit = rlimit()
        let count = rlim_t(Int(value()) ?? 1024)
        limit.rlim_cur = count
        limit.rlim_max = count
        #if canImport(Glibc)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        #else
            _ = setrlimit(RLIMIT_NOFILE, &limit)
        #endif
    default:
        printError("Error: unknown argument \(argument)\n")
        exit(64)
    }
}
if logRequests {
    configuration.accessLog = { entry in
        printError("\(entry.method) \(entry.path) \(entry.status) \(entry.bytesSent)\n")
    }
}

let token = SessionToken.random()
var router = Router()
// A streamed body of unknown length (chunked): /_test/stream/<bytes>
router.get("/_test/stream/:size") { request in
    let size = Int(request.parameters["size"] ?? "") ?? 0
    let stream = AsyncStream<[UInt8]> { continuation in
        var left = size
        var value: UInt8 = 0
        while left > 0 {
            let count = min(left, 10_000)
            var chunk = [UInt8](repeating: 0, count: count)
            for i in 0..<count {
                chunk[i] = value
                value &+= 1
            }
            continuation.yield(chunk)
            left -= count
        }
        continuation.finish()
    }
    return HTTPResponse(headers: ["Content-Type": "application/octet-stream"], body: .stream(.init(stream)))
}
// The same with a known length (Content-Length).
router.get("/_test/stream-known/:size") { request in
    let size = Int(request.parameters["size"] ?? "") ?? 0
    let stream = AsyncStream<[UInt8]> { continuation in
        var left = size
        while left > 0 {
            let count = min(left, 7_000)
            continuation.yield([UInt8](repeating: 0x61, count: count))
            left -= count
        }
        continuation.finish()
    }
    return HTTPResponse(
        headers: ["Content-Type": "application/octet-stream"],
        body: .stream(.init(length: UInt64(size), stream)))
}
// An in-memory body (Range applies): 0123456789 repeated to 100 bytes.
router.getImmediate("/_test/bytes") { _ in
    .bytes(Array((0..<100).map { UInt8(ascii: "0") + UInt8($0 % 10) }), contentType: "text/plain")
}
router.get("/_test/slow") { _ in
    try? await Task.sleep(for: .milliseconds(200))
    return .text("slow\n")
}
if let media {
    router.getImmediate("/media.ts", session: token) { _ in
        do {
            return try HTTPResponse.file(FileStreamer(path: media), contentType: MediaType.forPath(media))
        } catch {
            return .error(.notFound)
        }
    }
    router.getImmediate("/index.m3u8", session: token) { _ in
        var response = HTTPResponse.bytes(
            Array("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-ENDLIST\n".utf8),
            contentType: "application/vnd.apple.mpegurl")
        response.headers.add(name: "Cache-Control", value: "no-cache")
        return response
    }
}
if let root {
    router.add(.get, "/**", handler: StaticFileHandler(root: root).handler)
}

let server = HTTPServer(router: router, configuration: configuration)
let port: UInt16
do {
    port = try server.start()
} catch {
    printError("Error: \(error)\n")
    exit(1)
}
var banner = Array("PORT \(port)\nTOKEN \(token.value)\n".utf8)
_ = banner.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
var byte: UInt8 = 0
while read(0, &byte, 1) > 0 {}
await server.stop(gracePeriod: .seconds(2))
