import FileRange
import Foundation
import Testing

@testable import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starts a server around `application`, runs `body` with its port, and stops it.
func withServer(
    _ application: HTTPApplication, _ body: (UInt16, HTTPServer) async throws -> Void
) async throws {
    let server = HTTPServer(application: application)
    let port = try server.start()
    do {
        try await body(port, server)
    } catch {
        await server.stop(gracePeriod: .seconds(1))
        throw error
    }
    await server.stop(gracePeriod: .seconds(1))
}

func request(_ target: String, _ extra: String = "", method: String = "GET") -> String {
    "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)\r\n"
}

@Suite("Over a real socket", .serialized, .temporaryFolders)
struct SocketTests {
    let tree: TempTree
    let token = SessionToken.random()
    let app: HTTPApplication

    init() throws {
        tree = try TempTree()
        app = makeApplication(www: tree.www, token: token)
    }

    @Test func sameAnswersAsInProcess() async throws {
        let cases: [(String, String)] = [
            ("/bytes", ""), ("/bytes", "Range: bytes=0-9\r\n"), ("/bytes", "Range: bytes=-5\r\n"),
            ("/bytes", "Range: bytes=90-\r\n"), ("/bytes", "Range: bytes=10-19,15-29\r\n"),
            ("/bytes", "Range: bytes=100-\r\n"), ("/bytes", "Range: bytes=5-1\r\n"),
            ("/\(token.value)/media.ts", "Range: bytes=10-14\r\n"), ("/\(token.value)/media.ts", ""),
            ("/static/empty.ts", "Range: bytes=0-\r\n"), ("/static/sub/index.m3u8", ""), ("/missing", ""),
            ("/static/../secret.txt", ""), ("/async/x", ""), ("/known", ""),
        ]
        try await withServer(app) { port, _ in
            let client = try RawClient(port: port)
            for (target, extra) in cases {
                client.send(request(target, extra))
                let wire = try #require(await client.readResponse(), "\(target) \(extra)")
                var headers = HTTPHeaders()
                for line in extra.split(separator: "\r\n") {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    headers.add(name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
                }
                headers.add(name: "Host", value: "127.0.0.1")
                let expected = await app.respond(
                    to: HTTPRequest(method: .get, target: target, headers: headers))
                #expect(wire.status == expected.status.code, "\(target) \(extra)")
                #expect(wire.fieldLines == expected.fieldLines, "\(target) \(extra)")
                #expect(wire.body == expected.bodyBytes, "\(target) \(extra)")
                #expect(wire.header("Date") != nil)
            }
        }
    }

    @Test func multipartOverSocket() async throws {
        try await withServer(app) { port, _ in
            let client = try RawClient(port: port)
            client.send(request("/\(token.value)/media.ts", "Range: bytes=0-1,50-54,-3\r\n"))
            let wire = try #require(await client.readResponse())
            #expect(wire.status == 206)
            let contentType = try #require(wire.header("Content-Type"))
            let boundary = String(contentType.dropFirst("multipart/byteranges; boundary=".count))
            let expected = multipartBody(
                boundary: boundary, contentType: "video/mp2t", ranges: [(0, 1), (50, 54), (97, 99)],
                content: hundredBytes)
            #expect(wire.body == expected)
            #expect(wire.header("Content-Length") == String(expected.count))
        }
    }

    @Test func keepAliveReuseAndPipelining() async throws {
        try await withServer(app) { port, server in
            let client = try RawClient(port: port)
            for _ in 0..<5 {
                client.send(request("/bytes", "Range: bytes=0-0\r\n"))
                let wire = try #require(await client.readResponse())
                #expect(wire.status == 206)
                #expect(wire.header("Connection") == nil)
            }
            #expect(server.openConnections == 1)
            // Pipelined: three requests in one write, answered in order (an async one in the middle).
            client.send(request("/async/one") + request("/bytes", "Range: bytes=1-1\r\n") + request("/async/three"))
            #expect(await client.readResponse()?.bodyText == "hello one")
            #expect(await client.readResponse()?.bodyText == "1")
            #expect(await client.readResponse()?.bodyText == "hello three")
            // HEAD in a pipeline: no body bytes in between.
            client.send(request("/bytes", method: "HEAD") + request("/bytes", "Range: bytes=2-2\r\n"))
            let head = try #require(await client.readResponse(head: true))
            #expect(head.header("Content-Length") == "100")
            #expect(await client.readResponse()?.bodyText == "2")
            // Connection: close ends it.
            client.send(request("/bytes", "Connection: close\r\n"))
            let last = try #require(await client.readResponse())
            #expect(last.header("Connection") == "close")
            #expect(await client.isClosedByPeer())
        }
    }

    /// A request and the client's FIN in one segment: the edge-triggered loop must still see the end of file.
    @Test func requestWithHalfCloseIsAnsweredAndClosed() async throws {
        try await withServer(app) { port, server in
            for target in ["/bytes", "/async/x"] {
                let client = try RawClient(port: port)
                client.send(request(target))
                shutdown(client.fd, Int32(SHUT_WR))
                let started = ContinuousClock.now
                #expect(await client.readResponse()?.status == 200)
                #expect(await client.isClosedByPeer())
                #expect(ContinuousClock.now - started < .seconds(2))
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(server.openConnections == 0)
        }
    }

    /// Clients that reset the connection in the middle of a large sendfile body: EPIPE/ECONNRESET, never SIGPIPE
    /// (which would kill this test process).
    @Test func resetsDuringLargeFileBodies() async throws {
        let big = tree.root.appendingPathComponent("www/big.ts")
        try Data(count: 8 << 20).write(to: big)
        try await withServer(app) { port, server in
            for _ in 0..<30 {
                let client = try RawClient(port: port)
                client.send(request("/static/big.ts"))
                var chunk = [UInt8](repeating: 0, count: 4096)
                _ = recv(client.fd, &chunk, chunk.count, 0)
                var lingerOption = linger(l_onoff: 1, l_linger: 0)
                setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &lingerOption, socklen_t(MemoryLayout<linger>.size))
            }
            try await Task.sleep(for: .milliseconds(200))
            let after = try RawClient(port: port)
            after.send(request("/bytes", "Range: bytes=0-0\r\n"))
            #expect(await after.readResponse()?.status == 206)
            #expect(server.openConnections == 1)
        }
    }

    @Test func http10() async throws {
        try await withServer(app) { port, _ in
            let client = try RawClient(port: port)
            client.send("GET /bytes HTTP/1.0\r\n\r\n")
            let wire = try #require(await client.readResponse())
            #expect(wire.status == 200)
            #expect(wire.header("Connection") == "close")
            #expect(await client.isClosedByPeer())

            let kept = try RawClient(port: port)
            kept.send("GET /bytes HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(await kept.readResponse()?.header("Connection") == "keep-alive")
            kept.send("GET /bytes HTTP/1.0\r\nConnection: keep-alive\r\nRange: bytes=3-3\r\n\r\n")
            #expect(await kept.readResponse()?.bodyText == "3")

            let stream = try RawClient(port: port)
            stream.send("GET /stream/2 HTTP/1.0\r\n\r\n")
            let streamed = try #require(await stream.readResponse())
            #expect(streamed.bodyText == "chunk0;chunk1;")
        }
    }

    @Test func streamedBodyOverSocket() async throws {
        try await withServer(app) { port, _ in
            let client = try RawClient(port: port)
            client.send(request("/stream/500"))
            let wire = try #require(await client.readResponse())
            #expect(wire.header("Transfer-Encoding") == "chunked")
            #expect(wire.bodyText == (0..<500).map { "chunk\($0);" }.joined())
            client.send(request("/known"))
            #expect(await client.readResponse()?.bodyText == "abcdefg")
        }
    }

    /// The producer of a streamed body is asked for the next chunk only once the previous one went to the socket:
    /// with a client that does not read, production stops at about the socket buffers' size, and when the client
    /// goes away the producer stops for good.
    @Test func streamBackpressure() async throws {
        let produced = ProducedCounter()
        var router = app.router
        router.get("/endless") { _ in
            HTTPResponse(body: .stream(.init(EndlessChunks(counter: produced))))
        }
        let streaming = HTTPApplication(router: router, configuration: app.configuration)
        try await withServer(streaming) { port, server in
            let client = try RawClient(port: port)
            client.send(request("/endless"))
            var head = [UInt8](repeating: 0, count: 64)
            _ = recv(client.fd, &head, head.count, 0)
            try await Task.sleep(for: .milliseconds(600))
            let stalled = produced.bytes.withLock { $0 }
            try await Task.sleep(for: .milliseconds(300))
            let later = produced.bytes.withLock { $0 }
            #expect(stalled < 64 << 20, "produced \(stalled) bytes for a client that reads nothing")
            #expect(later - stalled <= 2 * EndlessChunks.chunkSize, "production went on: \(stalled) → \(later)")
            // Reading drains the socket and production resumes.
            var sink = [UInt8](repeating: 0, count: 1 << 20)
            for _ in 0..<64 { _ = recv(client.fd, &sink, sink.count, 0) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(produced.bytes.withLock { $0 } > later)
            // The client leaves: the connection closes and the producer stops.
            client.reset()
            try await Task.sleep(for: .milliseconds(300))
            let afterClose = produced.bytes.withLock { $0 }
            try await Task.sleep(for: .milliseconds(300))
            #expect(produced.bytes.withLock { $0 } - afterClose <= EndlessChunks.chunkSize)
            #expect(server.openConnections == 0)
        }
    }

    /// Every malformed request gets its documented status and `Connection: close`, and the server lives on.
    @Test func malformedCorpus() async throws {
        let corpus: [(String, Int)] = [
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nH\u{01}: a\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            ("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: a\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "b", count: 17000))\r\n\r\n", 431),
            ("GET / HTTP/1.1\r\nHost: a\r\n" + (0..<101).map { "X\($0): 1\r\n" }.joined() + "\r\n", 431),
            ("POST /bytes HTTP/1.1\r\nHost: localhost\r\n\r\n", 405),
            ("BREW /bytes HTTP/1.1\r\nHost: localhost\r\n\r\n", 501),
            ("GET /bytes HTTP/1.1\r\nHost: attacker.example\r\n\r\n", 421),
            ("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}\r\n\r\n", 400),
        ]
        try await withServer(app) { port, _ in
            for (text, status) in corpus {
                let client = try RawClient(port: port)
                client.send(text)
                let wire = try #require(await client.readResponse(), "\(text.prefix(40).debugDescription)")
                #expect(wire.status == status, "\(text.prefix(40).debugDescription)")
                if status != 405 && status != 501 && status != 421 {
                    #expect(wire.header("Connection") == "close")
                    #expect(await client.isClosedByPeer())
                }
            }
            let after = try RawClient(port: port)
            after.send(request("/bytes"))
            #expect(await after.readResponse()?.status == 200)
        }
    }

    @Test func slowHeaderGets408WhileOthersAreServed() async throws {
        var configuration = app.configuration
        configuration.timeouts.header = .milliseconds(700)
        let slowApp = HTTPApplication(router: app.router, configuration: configuration)
        try await withServer(slowApp) { port, _ in
            let slow = try RawClient(port: port)
            slow.send("GET /bytes HTTP/1.1\r\nHo")
            let started = ContinuousClock.now
            // Meanwhile another client is served promptly, many times.
            let other = try RawClient(port: port)
            for _ in 0..<20 {
                other.send(request("/bytes", "Range: bytes=0-0\r\n"))
                #expect(await other.readResponse()?.status == 206)
            }
            #expect(ContinuousClock.now - started < .milliseconds(600))
            slow.send("s")  // still dripping: the header deadline does not move
            let wire = try #require(await slow.readResponse())
            #expect(wire.status == 408)
            #expect(wire.header("Connection") == "close")
            #expect(await slow.isClosedByPeer())
            #expect(ContinuousClock.now - started >= .milliseconds(650))
        }
    }

    @Test func connectionCapAnswers503() async throws {
        var configuration = app.configuration
        configuration.maxConnections = 2
        let capped = HTTPApplication(router: app.router, configuration: configuration)
        try await withServer(capped) { port, server in
            let first = try RawClient(port: port)
            let second = try RawClient(port: port)
            first.send(request("/bytes", "Range: bytes=0-0\r\n"))
            second.send(request("/bytes", "Range: bytes=0-0\r\n"))
            #expect(await first.readResponse()?.status == 206)
            #expect(await second.readResponse()?.status == 206)
            let third = try RawClient(port: port)
            let refused = try #require(await third.readResponse())
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") == "1")
            #expect(refused.header("Connection") == "close")
            #expect(refused.header("Date") != nil)
            #expect(await third.isClosedByPeer())
            #expect(server.openConnections == 2)
        }
    }

    @Test func rangeReadCloseCyclesReturnToBaseline() async throws {
        try await withServer(app) { port, server in
            let baseline = openDescriptorCount(port: port)
            for i in 0..<2000 {
                let client = try RawClient(port: port)
                client.send(request("/\(token.value)/media.ts", "Range: bytes=\(i % 90)-\(i % 90 + 9)\r\n"))
                var byte: UInt8 = 0
                _ = recv(client.fd, &byte, 1, 0)
            }
            // Connections close on the server side as the clients go away.
            var waited = 0
            while server.openConnections > 0, waited < 100 {
                try await Task.sleep(for: .milliseconds(20))
                waited += 1
            }
            #expect(server.openConnections == 0)
            #expect(openDescriptorCount(port: port) == baseline)
            #expect(openDescriptorCount(path: tree.www + "/media.ts") == 0)
        }
    }

    @Test func accessLogHidesToken() async throws {
        let entries = LockedValue<[AccessLogEntry]>([])
        let logged = makeApplication(
            www: tree.www, token: token, log: { entry in entries.withLock { $0.append(entry) } })
        try await withServer(logged) { port, _ in
            let client = try RawClient(port: port)
            client.send(request("/\(token.value)/media.ts", "Range: bytes=0-9\r\n"))
            _ = await client.readResponse()
            client.send(request("/bytes"))
            _ = await client.readResponse()
        }
        let all = entries.withLock { $0 }
        #expect(all.count == 2)
        #expect(all.first?.path == "/{token}/media.ts")
        #expect(all.first?.status == 206)
        #expect(all.first?.bytesSent == 10)
        #expect(all.last?.path == "/bytes")
        #expect(all.last?.bytesSent == 100)
        #expect(!all.contains { $0.path.contains(token.value) })
    }

    @Test func gracefulShutdownFinishesInFlight() async throws {
        var router = app.router
        router.get("/slow") { _ in
            try? await Task.sleep(for: .milliseconds(300))
            return .text("done")
        }
        let server = HTTPServer(application: HTTPApplication(router: router, configuration: app.configuration))
        let port = try server.start()
        let busy = try RawClient(port: port)
        let idle = try RawClient(port: port)
        busy.send(request("/slow"))
        try await Task.sleep(for: .milliseconds(50))
        await server.stop(gracePeriod: .seconds(3))
        let wire = try #require(await busy.readResponse())
        #expect(wire.bodyText == "done")
        #expect(wire.header("Connection") == "close")
        #expect(await busy.isClosedByPeer())
        #expect(await idle.isClosedByPeer())
        #expect((try? RawClient(port: port)) == nil)
        #expect(server.state == .stopped)
    }

    @Test func shutdownDeadlineForcesClose() async throws {
        var router = app.router
        router.get("/never") { _ in
            try? await Task.sleep(for: .seconds(5))
            return .text("late")
        }
        let server = HTTPServer(application: HTTPApplication(router: router, configuration: app.configuration))
        let port = try server.start()
        let client = try RawClient(port: port)
        client.send(request("/never"))
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        await server.stop(gracePeriod: .milliseconds(300))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(await client.isClosedByPeer())
    }

    @Test func bindsLoopbackOnlyAndRefusesOthersWithoutToken() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.bindAddresses = ["0.0.0.0"]
        let server = HTTPServer(router: Router(), configuration: configuration)
        #expect(throws: HTTPServerError.self) { try server.start() }
        let loopback = HTTPServer(router: Router())
        let port = try loopback.start()
        #expect(port != 0)
        #expect(loopback.state == .running(port: port))
        await loopback.stop()
    }

    @Test func manyConcurrentConnections() async throws {
        try await withServer(app) { port, server in
            var clients: [RawClient] = []
            for _ in 0..<300 { clients.append(try RawClient(port: port)) }
            for client in clients { client.send(request("/bytes", "Range: bytes=0-4\r\n")) }
            for client in clients { #expect(await client.readResponse()?.bodyText == "01234") }
            #expect(server.openConnections == 300)
        }
    }
}

/// Counts the bytes a producer has handed out.
final class ProducedCounter: Sendable {
    let bytes = LockedValue<Int>(0)
}

/// An endless pull-based body: each chunk is made when asked for.
struct EndlessChunks: AsyncSequence, Sendable {
    static let chunkSize = 64 * 1024
    let counter: ProducedCounter

    struct AsyncIterator: AsyncIteratorProtocol {
        let counter: ProducedCounter
        mutating func next() async -> [UInt8]? {
            if Task.isCancelled { return nil }
            counter.bytes.withLock { $0 += EndlessChunks.chunkSize }
            return [UInt8](repeating: 0x78, count: EndlessChunks.chunkSize)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(counter: counter) }
}
