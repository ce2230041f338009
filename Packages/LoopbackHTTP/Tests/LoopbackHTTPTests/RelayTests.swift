import FileRange
import Foundation
import Sockets
import Testing

@testable import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A splice source over one end of a socket pair; the test writes the body into the other end, as an upstream
/// server would.
final class SocketPairSource: SpliceSource {
    let serverEnd: Int32
    let writerEnd: Int32
    let buffered: [UInt8]
    let claims = LockedValue<Int>(0)
    let releases = LockedValue<[Bool]>([])

    init(buffered: [UInt8]) throws {
        var ends: [Int32] = [-1, -1]
        #if canImport(Glibc)
            let type = Int32(SOCK_STREAM.rawValue)
        #else
            let type = SOCK_STREAM
        #endif
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { throw POSIXError(.EIO) }
        serverEnd = ends[0]
        writerEnd = ends[1]
        self.buffered = buffered
    }

    deinit {
        close(serverEnd)
        close(writerEnd)
    }

    func claim() -> (descriptor: Int32, buffered: [UInt8])? {
        claims.withLock { $0 += 1 }
        _ = fcntl(serverEnd, F_SETFL, fcntl(serverEnd, F_GETFL) | O_NONBLOCK)
        return (serverEnd, buffered)
    }

    func release(complete: Bool) { releases.withLock { $0.append(complete) } }

    var claimCount: Int { claims.withLock { $0 } }
    var released: [Bool] { releases.withLock { $0 } }

    /// Writes `bytes` into the pair in pieces, pausing now and then so that the relay runs dry and waits for the
    /// source; stops once the source is released. Runs on its own thread.
    func feed(_ bytes: [UInt8], piece: Int = 64 << 10, thenClose: Bool = false) -> Thread {
        let fd = writerEnd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let thread = Thread { [self] in
            var offset = 0
            var count = 0
            while offset < bytes.count, released.isEmpty {
                let n = bytes[offset..<min(bytes.count, offset + piece)].withUnsafeBytes { raw in
                    write(fd, raw.baseAddress, raw.count)
                }
                if n < 0 && errno == EAGAIN {
                    usleep(1000)
                    continue
                }
                if n <= 0 { break }
                offset += n
                count += 1
                if count % 8 == 0 { usleep(2000) }
            }
            if thenClose { shutdown(fd, Int32(SHUT_WR)) }
        }
        thread.start()
        return thread
    }
}

/// A stream that records whether anything pulled it (a spliced body must never be pulled).
struct WatchedStream: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let pulled: PullFlag
    let chunks: [[UInt8]]

    struct AsyncIterator: AsyncIteratorProtocol {
        let pulled: PullFlag
        var chunks: [[UInt8]]
        mutating func next() async -> [UInt8]? {
            pulled.value.withLock { $0 = true }
            return chunks.isEmpty ? nil : chunks.removeFirst()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(pulled: pulled, chunks: chunks) }
}

/// A shareable flag.
final class PullFlag: Sendable {
    let value = LockedValue<Bool>(false)
    var isSet: Bool { value.withLock { $0 } }
}

/// Deterministic bytes that differ at every offset within a few megabytes (a second for 8 MiB in a debug build: tests
/// make them in `blocking { }`, off Swift's cooperative threads).
func patternBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
}

/// Relays from a splice source. They belong to the socket suite, whose tests run one at a time: a test blocks
/// its thread in socket reads, and two such tests at once would hold every thread of the cooperative pool, leaving
/// none for the server's async handlers.
extension SocketTests {
    private func relayApplication(
        _ source: SocketPairSource, length: Int, pulled: PullFlag, fallback: [UInt8] = []
    ) -> HTTPApplication {
        var router = makeApplication(www: tree.www, token: token).router
        router.get("/relay") { _ in
            var response = HTTPResponse(headers: ["Content-Type": "video/mp2t"])
            response.body = .stream(
                HTTPResponse.StreamBody(
                    length: UInt64(length), WatchedStream(pulled: pulled, chunks: [fallback]), spliceSource: source))
            return response
        }
        return HTTPApplication(
            router: router, configuration: makeApplication(www: tree.www, token: token).configuration)
    }

    /// The bytes the source had already read go first, then the rest straight from the descriptor; the source is
    /// released as complete once, the stream is never pulled, and the connection stays usable.
    @Test func splicedBodyArrivesWholeAndInOrder() async throws {
        let body = await blocking { patternBytes(3 << 20 + 12345) }
        let source = try SocketPairSource(buffered: Array(body[0..<1000]))
        let pulled = PullFlag()
        try await withServer(relayApplication(source, length: body.count, pulled: pulled)) { port, _ in
            let feeder = source.feed(Array(body[1000...]))
            let client = try RawClient(port: port)
            client.send(request("/relay"))
            let wire = try #require(await client.readResponse())
            #expect(wire.status == 200)
            #expect(wire.header("Content-Length") == String(body.count))
            #expect(wire.header("Transfer-Encoding") == nil)
            #expect(wire.body.count == body.count)
            #expect(wire.body == body)
            client.send(request("/bytes"))
            #expect(await client.readResponse()?.status == 200)
            withExtendedLifetime(feeder) {}
        }
        if Splice.available {
            #expect(source.claimCount == 1)
            #expect(source.released == [true])
            #expect(!pulled.isSet)
        } else {
            // No splice (Darwin): the same bytes come through the stream instead.
            #expect(pulled.isSet)
        }
    }

    /// A source that ends before the announced length: the client gets a short body and a closed connection
    /// (never a wrong one), and the source is released as incomplete.
    @Test func shortSourceClosesTheConnection() async throws {
        let body = await blocking { patternBytes(256 << 10) }
        let source = try SocketPairSource(buffered: [])
        let pulled = PullFlag()
        try await withServer(relayApplication(source, length: body.count + 100, pulled: pulled)) { port, server in
            let feeder = source.feed(body, thenClose: true)
            let client = try RawClient(port: port)
            client.send(request("/relay"))
            #expect(await client.readResponse() == nil)
            #expect(await client.isClosedByPeer())
            var waited = 0
            while server.openConnections > 0, waited < 100 {
                try await Task.sleep(for: .milliseconds(20))
                waited += 1
            }
            #expect(server.openConnections == 0)
            withExtendedLifetime(feeder) {}
        }
        #expect(source.released == [false])
        #expect(!pulled.isSet)
    }

    /// A client that leaves mid-body ends the relay: the source is released as incomplete and the connection
    /// closes, while the upstream still has bytes to give.
    @Test func clientLeavingEndsTheRelay() async throws {
        let body = await blocking { patternBytes(8 << 20) }
        let source = try SocketPairSource(buffered: [])
        let pulled = PullFlag()
        try await withServer(relayApplication(source, length: body.count, pulled: pulled)) { port, server in
            let feeder = source.feed(body)
            let client = try RawClient(port: port)
            client.send(request("/relay"))
            var some = [UInt8](repeating: 0, count: 4096)
            #expect(recv(client.fd, &some, some.count, 0) > 0)
            client.reset()
            var waited = 0
            while source.releases.withLock({ $0.isEmpty }) || server.openConnections > 0, waited < 150 {
                try await Task.sleep(for: .milliseconds(20))
                waited += 1
            }
            #expect(server.openConnections == 0)
            withExtendedLifetime(feeder) {}
        }
        #expect(source.released == [false])
    }

    /// HEAD sends no body: the source is never claimed (its owner keeps it).
    @Test func headNeverClaims() async throws {
        let source = try SocketPairSource(buffered: [])
        let pulled = PullFlag()
        try await withServer(relayApplication(source, length: 5000, pulled: pulled)) { port, _ in
            let client = try RawClient(port: port)
            client.send(request("/relay", method: "HEAD"))
            let wire = try #require(await client.readResponse(head: true))
            #expect(wire.status == 200)
            #expect(wire.header("Content-Length") == "5000")
        }
        #expect(source.claimCount == 0)
        #expect(source.released.isEmpty)
    }
}
