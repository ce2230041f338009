import FileRange
import Foundation
import HTTPClient
import HTTPWire
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// send(2) flags that keep a write to a closed peer from raising SIGPIPE: MSG_NOSIGNAL on Linux; on Darwin, which
/// has none for send(2), SO_NOSIGPIPE is set on each accepted socket instead and the flags are 0.
#if canImport(Darwin)
    private let noSignalFlags: Int32 = 0
#else
    private let noSignalFlags = Int32(MSG_NOSIGNAL)
#endif

/// A tiny HTTP/1.1 origin on a loopback socket, one thread per connection: `reply` maps a request path to raw
/// response bytes and whether to close the connection after them (`stall` keeps it open, sending nothing more).
final class RawOrigin: Sendable {
    enum Reply: Sendable {
        case bytes([UInt8], close: Bool)
        case stall([UInt8])
    }
    let port: UInt16
    private let listener: Int32
    let connections = LockedValue(0)
    let paths = LockedValue<[String]>([])
    let heads = LockedValue<[String]>([])

    init(reply: @escaping @Sendable (String) -> Reply) throws {
        let fd = LoopbackTCP.listener()
        try #require(fd >= 0)
        port = LoopbackTCP.localPort(fd)
        listener = fd
        LoopbackTCP.serveConnections(on: fd) { [self] client in
            connections.withLock { $0 += 1 }
            serve(client, reply: reply)
        }
    }

    private func serve(_ client: Int32, reply: @Sendable (String) -> Reply) {
        defer { close(client) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            while !pending.contains(0x0A) || String(decoding: pending, as: UTF8.self).range(of: "\r\n\r\n") == nil {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { return }
                pending += buffer[0..<n]
            }
            let text = String(decoding: pending, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { return }
            pending = Array(text[end.upperBound...].utf8)
            let path = text.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            paths.withLock { $0.append(path) }
            heads.withLock { $0.append(String(text[..<end.lowerBound])) }
            switch reply(path) {
            case .bytes(let bytes, let closing):
                _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, noSignalFlags) }
                if closing { return }
            case .stall(let bytes):
                _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, noSignalFlags) }
                // blocks: the origin's connection thread
                Thread.sleep(forTimeInterval: 5)
                return
            }
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    deinit {
        LoopbackTCP.stopServing(listener)
    }
}

@Suite("Client over sockets") struct SocketTests {
    static func response(_ body: [UInt8], status: String = "200 OK", extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n\(extra)\r\n".utf8) + body
    }

    static func collect(_ response: HTTPClientResponse) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in response.body { bytes += chunk }
        return bytes
    }

    @Test func keepAliveChunkedAndRedirects() async throws {
        let big = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let origin = try RawOrigin { path in
            switch path {
            case "/big": return .bytes(Self.response(big), close: false)
            case "/small": return .bytes(Self.response(Array("hello".utf8)), close: false)
            case "/chunked":
                let body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
                return .bytes(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(body)".utf8), close: false)
            case "/moved":
                return .bytes(Self.response([], status: "302 Found", extra: "Location: /small\r\n"), close: false)
            case "/file":
                return .bytes(
                    Self.response([], status: "302 Found", extra: "Location: file:///etc/passwd\r\n"), close: false)
            case "/loop":
                return .bytes(Self.response([], status: "302 Found", extra: "Location: /loop\r\n"), close: false)
            default: return .bytes(Self.response([], status: "404 Not Found"), close: false)
            }
        }
        let transport = makeClient(stallTimeout: 5, maxRedirects: 3, chunkSize: 64 << 10)
        let first = try await transport.send(HTTPClientRequest(url: origin.url("/big"), headers: []))
        #expect(first.status == 200)
        #expect(first.contentLength == UInt64(big.count))
        var chunks = 0
        var received: [UInt8] = []
        for try await chunk in first.body {
            #expect(chunk.count <= 64 << 10)
            chunks += 1
            received += chunk
        }
        #expect(received == big)
        #expect(chunks >= big.count / (64 << 10))
        let chunked = try await transport.send(HTTPClientRequest(url: origin.url("/chunked"), headers: []))
        #expect(try await Self.collect(chunked) == Array("hello, world".utf8))
        let moved = try await transport.send(HTTPClientRequest(url: origin.url("/moved"), headers: []))
        #expect(moved.status == 200)
        // The response says where it came from after the redirect.
        #expect(moved.url == origin.url("/small"))
        #expect(chunked.url == origin.url("/chunked"))
        #expect(try await Self.collect(moved) == Array("hello".utf8))
        let missing = try await transport.send(HTTPClientRequest(url: origin.url("/nothing"), headers: []))
        #expect(missing.status == 404)
        #expect(try await Self.collect(missing).isEmpty)
        // Every request so far went over one kept-alive connection.
        #expect(origin.connections.withLock { $0 } == 1)
        #expect(origin.paths.withLock { $0 } == ["/big", "/chunked", "/moved", "/small", "/nothing"])

        await #expect(throws: HTTPClientError.self) {
            _ = try await transport.send(HTTPClientRequest(url: origin.url("/file"), headers: []))
        }
        await #expect(throws: HTTPClientError.self) {
            _ = try await transport.send(HTTPClientRequest(url: origin.url("/loop"), headers: []))
        }
        // https goes to URLSession, and nothing listens there.
        await #expect(throws: HTTPClientError.self) {
            _ = try await transport.send(HTTPClientRequest(url: "https://127.0.0.1:1/x", headers: []))
        }
    }

    /// The replies both whole-body tests share: `/big` (by length), `/chunked` ("hello, world") and `/moved` (302 to
    /// `/big`).
    static func wholeBodyReply(_ path: String, big: [UInt8]) -> RawOrigin.Reply? {
        switch path {
        case "/big": return .bytes(response(big), close: false)
        case "/chunked":
            let body = "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
            return .bytes(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(body)".utf8), close: false)
        case "/moved": return .bytes(response([], status: "302 Found", extra: "Location: /big\r\n"), close: false)
        default: return nil
        }
    }

    /// `fetch` reads small bodies whole in one call, in every framing, follows redirects, reuses the connection,
    /// and refuses a body over the cap (declared or not) without reusing that connection.
    @Test func fetchReadsWholeBodies() async throws {
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let origin = try RawOrigin { path in
            if let reply = Self.wholeBodyReply(path, big: big) { return reply }
            switch path {
            case "/until-close":
                return .bytes(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end".utf8), close: true)
            case "/long-chunked":
                let chunk = String(repeating: "x", count: 4096)
                let body = String(repeating: "1000\r\n\(chunk)\r\n", count: 4) + "0\r\n\r\n"
                return .bytes(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(body)".utf8), close: false)
            default: return .bytes(Self.response([], status: "404 Not Found"), close: false)
            }
        }
        let transport = makeClient(stallTimeout: 5)
        let whole = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/big"), headers: []), maxBytes: 1 << 20)
        #expect(whole.status == 200)
        #expect(whole.body == big)
        let chunked = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/chunked"), headers: []), maxBytes: 1 << 20)
        #expect(chunked.body == Array("hello, world".utf8))
        let moved = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/moved"), headers: []), maxBytes: 1 << 20)
        #expect(moved.status == 200)
        #expect(moved.body == big)
        #expect(moved.url == origin.url("/big"))
        #expect(whole.url == origin.url("/big"))
        let missing = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/nothing"), headers: []), maxBytes: 1 << 20)
        #expect(missing.status == 404)
        #expect(missing.body.isEmpty)
        #expect(origin.connections.withLock { $0 } == 1)
        let untilClose = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/until-close"), headers: []), maxBytes: 1 << 20)
        #expect(untilClose.body == Array("to the end".utf8))
        // Over the cap: by its Content-Length, or as it arrives (chunked).
        await #expect(throws: HTTPClientError(.tooLarge, "the body is longer than 1000 bytes", url: origin.url("/big")))
        {
            _ = try await transport.fetch(HTTPClientRequest(url: origin.url("/big"), headers: []), maxBytes: 1000)
        }
        await #expect(
            throws: HTTPClientError(.tooLarge, "the body is longer than 5000 bytes", url: origin.url("/long-chunked"))
        ) {
            _ = try await transport.fetch(
                HTTPClientRequest(url: origin.url("/long-chunked"), headers: []), maxBytes: 5000)
        }
        // The refused bodies' connections were not reused: each later request needed a new one.
        let after = origin.connections.withLock { $0 }
        let again = try await transport.fetch(
            HTTPClientRequest(url: origin.url("/big"), headers: []), maxBytes: 1 << 20)
        #expect(again.body == big)
        #expect(origin.connections.withLock { $0 } == after + 1)
        #expect(!HTTPClientError.Code.tooLarge.isTransient)
    }

    /// `fetchBlocking` does what `fetch` does in one call on the calling thread (a dispatch queue's here), with
    /// two differences: a redirect comes back as it is, and an https URL is not its business (nil).
    @Test func fetchBlockingReadsWholeBodiesOnTheCallingThread() async throws {
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let origin = try RawOrigin { path in
            if let reply = Self.wholeBodyReply(path, big: big) { return reply }
            switch path {
            case "/dropped":
                // Keep-alive by its head, but the origin closes the connection right after.
                return .bytes(Self.response(Array("bye".utf8)), close: true)
            default: return .bytes(Self.response([], status: "404 Not Found"), close: false)
            }
        }
        let transport = makeClient(stallTimeout: 5)
        func blocking(_ path: String, maxBytes: Int = 1 << 20) async throws -> HTTPWholeResponse? {
            let url = path.hasPrefix("https:") ? path : origin.url(path)
            return try await withCheckedThrowingContinuation { continuation in
                BlockingPool.shared.submit {
                    do {
                        continuation.resume(
                            returning: try transport.fetchBlocking(
                                HTTPClientRequest(url: url, headers: []), maxBytes: maxBytes))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
        #expect(try await blocking("/big")?.body == big)
        #expect(try await blocking("/chunked")?.body == Array("hello, world".utf8))
        let moved = try #require(try await blocking("/moved"))
        #expect(moved.status == 302)
        #expect(moved.header("Location") == "/big")
        #expect(try await blocking("/nothing")?.status == 404)
        // All on one kept-alive connection.
        #expect(origin.connections.withLock { $0 } == 1)
        #expect(origin.paths.withLock { $0 } == ["/big", "/chunked", "/moved", "/nothing"])
        #expect(try await blocking("https://127.0.0.1:1/secure.m3u8") == nil)
        // A connection the origin closed after answering is not reused: the next request opens a new one.
        #expect(try await blocking("/dropped")?.body == Array("bye".utf8))
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await blocking("/big")?.body == big)
        #expect(origin.connections.withLock { $0 } == 2)
        await #expect(throws: HTTPClientError(.tooLarge, "the body is longer than 1000 bytes", url: origin.url("/big")))
        {
            _ = try await blocking("/big", maxBytes: 1000)
        }
        await #expect(throws: HTTPClientError.self) { _ = try await blocking("ftp://127.0.0.1/x") }
    }

    /// The address check sees the numeric addresses a connection would use: refused ones are never connected to,
    /// and a host with nothing else fails with addressRefused (not transient); other addresses connect as usual.
    @Test func refusedAddressesAreNeverConnectedTo() async throws {
        let origin = try RawOrigin { _ in .bytes(Self.response(Array("ok".utf8)), close: false) }
        let asked = LockedValue<[String]>([])
        let refusing = makeClient(
            stallTimeout: 5,
            refusesAddress: { address in
                asked.withLock { $0.append(address) }
                return address == "127.0.0.1"
            })
        await #expect(throws: HTTPClientError.self) {
            _ = try await refusing.fetch(HTTPClientRequest(url: origin.url("/a"), headers: []), maxBytes: 100)
        }
        do {
            _ = try await refusing.fetch(HTTPClientRequest(url: origin.url("/a"), headers: []), maxBytes: 100)
        } catch let error as HTTPClientError {
            #expect(error.code == .addressRefused)
            #expect(!error.code.isTransient)
            #expect(error.message.contains("127.0.0.1"))
        }
        #expect(asked.withLock { $0 } == ["127.0.0.1", "127.0.0.1"])
        #expect(origin.connections.withLock { $0 } == 0)
        let allowing = makeClient(stallTimeout: 5, refusesAddress: { $0.hasPrefix("10.") })
        #expect(
            try await allowing.fetch(HTTPClientRequest(url: origin.url("/b"), headers: []), maxBytes: 100).body
                == Array("ok".utf8))
        #expect(origin.connections.withLock { $0 } == 1)
    }

    /// Reads a claimed socket body to its end: the bytes read with the head, then the socket (non-blocking).
    static func drain(_ claimed: (descriptor: Int32, buffered: [UInt8]), length: Int) async -> [UInt8] {
        let (descriptor, buffered) = claimed
        return await blocking { drainNow((descriptor, buffered), length: length) }
    }

    private static func drainNow(_ claimed: (descriptor: Int32, buffered: [UInt8]), length: Int) -> [UInt8] {
        var bytes = claimed.buffered
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < length {
            let n = recv(claimed.descriptor, &buffer, min(buffer.count, length - bytes.count), 0)
            if n < 0 && errno == EAGAIN {
                var descriptor = pollfd(fd: claimed.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 1000)
                continue
            }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }

    /// A relay claims a body of known length as the socket: exactly the body comes out of it, and releasing it
    /// complete puts the connection back for the next request; a body already started, or without a length,
    /// cannot be claimed; releasing early closes the connection.
    @Test func socketBodyIsClaimedReadAndReleased() async throws {
        let big = (0..<900_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        let origin = try RawOrigin { path in
            switch path {
            case "/big": return .bytes(Self.response(big), close: false)
            case "/chunked":
                return .bytes(
                    Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".utf8),
                    close: false)
            default: return .bytes(Self.response(Array("hello".utf8)), close: false)
            }
        }
        let transport = makeClient(stallTimeout: 5)
        let first = try await transport.send(HTTPClientRequest(url: origin.url("/big"), headers: []))
        let body = try #require(first.socketBody)
        #expect(body.length == UInt64(big.count))
        let claimed = try #require(body.claim())
        #expect(fcntl(claimed.descriptor, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(claimed.descriptor, F_GETFD) & FD_CLOEXEC != 0)
        #expect(body.claim() == nil)
        #expect(await Self.drain(claimed, length: big.count) == big)
        body.release(complete: true)
        #expect(fcntl(claimed.descriptor, F_GETFL) & O_NONBLOCK == 0)
        // The stream of a claimed body ends at once.
        #expect(try await Self.collect(first).isEmpty)
        // The connection went back to the pool and serves the next request.
        let second = try await transport.send(HTTPClientRequest(url: origin.url("/small"), headers: []))
        #expect(try await Self.collect(second) == Array("hello".utf8))
        #expect(origin.connections.withLock { $0 } == 1)
        // A body already started cannot be claimed.
        let third = try await transport.send(HTTPClientRequest(url: origin.url("/big"), headers: []))
        var iterator = third.body.makeAsyncIterator()
        let firstChunk = try #require(try await iterator.next())
        #expect(third.socketBody?.claim() == nil)
        var rest = firstChunk
        while let chunk = try await iterator.next() { rest += chunk }
        #expect(rest == big)
        // A chunked body has no socket body.
        let chunked = try await transport.send(HTTPClientRequest(url: origin.url("/chunked"), headers: []))
        #expect(chunked.socketBody == nil)
        #expect(try await Self.collect(chunked) == Array("hello".utf8))
        // Released early: the connection is closed, and the next request opens a new one.
        let fourth = try await transport.send(HTTPClientRequest(url: origin.url("/big"), headers: []))
        let early = try #require(fourth.socketBody?.claim())
        #expect(await Self.drain(early, length: 1000).count >= 1000)
        fourth.socketBody?.release(complete: false)
        let fifth = try await transport.send(HTTPClientRequest(url: origin.url("/small"), headers: []))
        #expect(try await Self.collect(fifth) == Array("hello".utf8))
        #expect(origin.connections.withLock { $0 } == 2)
    }

    @Test func headersAreSentAndInjectionIsRefused() async throws {
        let origin = try RawOrigin { _ in .bytes(Self.response(Array("ok".utf8)), close: true) }
        let transport = makeClient(stallTimeout: 5)
        let response = try await transport.send(
            HTTPClientRequest(
                url: origin.url("/h?q=1"),
                headers: [
                    HTTPHeaders.Field(name: "X-Test", value: "yes"),
                    HTTPHeaders.Field(name: "X-Bad", value: "a\r\nInjected: 1"),
                ]))
        #expect(try await Self.collect(response) == Array("ok".utf8))
        let head = try #require(origin.heads.withLock { $0.first })
        #expect(head.hasPrefix("GET /h?q=1 HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n"))
        #expect(head.contains("\r\nX-Test: yes\r\n"))
        #expect(head.contains("\r\nAccept-Encoding: identity\r\n"))
        #expect(!head.contains("Injected"))
    }

    @Test func truncatedBodyAndStallFail() async throws {
        let origin = try RawOrigin { path in
            switch path {
            case "/short":
                return .bytes(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b".utf8), close: true)
            default:
                return .stall(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".utf8))
            }
        }
        let transport = makeClient(stallTimeout: 0.3)
        let short = try await transport.send(HTTPClientRequest(url: origin.url("/short"), headers: []))
        var got: [UInt8] = []
        do {
            for try await chunk in short.body { got += chunk }
            Issue.record("a truncated body ended normally")
        } catch let error as HTTPClientError {
            #expect(error.code == .connectionReset)
        }
        #expect(got == Array("only ten b".utf8))

        let stalled = try await transport.send(HTTPClientRequest(url: origin.url("/stall"), headers: []))
        let start = ContinuousClock.now
        do {
            for try await _ in stalled.body {}
            Issue.record("a stalled body ended normally")
        } catch let error as HTTPClientError {
            #expect(error.code == .timedOut)
        }
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test func cancellationEndsABlockedRead() async throws {
        let origin = try RawOrigin { _ in .stall(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".utf8)) }
        let transport = makeClient(stallTimeout: 30)
        let response = try await transport.send(HTTPClientRequest(url: origin.url("/stall"), headers: []))
        let reader = Task { () -> Bool in
            do {
                for try await _ in response.body {}
                return false
            } catch {
                return true
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        reader.cancel()
        #expect(await reader.value)
        #expect(ContinuousClock.now - start < .seconds(3))
    }
}
