import Foundation
import HTTPClient
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Streamed bodies that stall after their head (headers sent, then nothing, or one byte every so often, each within
/// the idle timeout) end by the request's body deadline: over the sockets, over a socket lent to a relay, and over
/// URLSession (reached over plain http with an upstream proxy set, the path https takes: the client accepts no
/// self-signed certificate, so a TLS origin cannot be used here).
@Suite("Hostile origins (streamed bodies)")
struct HostileOriginBodyTests {
    static func client(proxy: String? = nil) -> HTTPClient {
        var configuration = HTTPClientConfiguration()
        configuration.idleTimeout = 10
        configuration.deadline = 10
        configuration.upstreamProxy = proxy
        return HTTPClient(configuration: configuration)
    }

    /// Reads the body to its end; the error it ended with, and the bytes it got.
    static func drain(_ response: HTTPClientResponse) async -> (error: (any Error)?, bytes: Int) {
        var bytes = 0
        do {
            for try await chunk in response.body { bytes += chunk.count }
            return (nil, bytes)
        } catch {
            return (error, bytes)
        }
    }

    @Test(arguments: ["/stall/100000", "/drip/100000"])
    func aStreamedBodyEndsAtItsDeadline(path: String) async throws {
        let origin = try HostileOrigin(trickleInterval: 0.1)
        defer { origin.stop() }
        let client = Self.client()
        var request = HTTPClientRequest(url: origin.url(path))
        request.bodyDeadline = 2
        let start = ContinuousClock.now
        let response = try await client.send(request)
        #expect(response.status == 200)
        let (error, bytes) = await Self.drain(response)
        let elapsed = start.duration(to: .now)
        let failure = try #require(error as? HTTPClientError, "\(String(describing: error))")
        #expect(failure.code == .timedOut)
        #expect(failure.url == origin.url(path))
        #expect(bytes < 100_000)
        #expect(elapsed >= .seconds(1.5) && elapsed < .seconds(5), "the body ended after \(elapsed)")
        // The host's slot is free again.
        #expect(client.requestCounts(to: origin.url(path)) == (0, 0))
    }

    @Test func aSocketLentToARelayIsShutDownAtTheDeadline() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let client = Self.client()
        var request = HTTPClientRequest(url: origin.url("/stall/100000"))
        request.bodyDeadline = 2
        let start = ContinuousClock.now
        let response = try await client.send(request)
        let socket = try #require(response.socketBody)
        let (descriptor, _) = try #require(socket.claim())
        // The relay's reads: would block while the origin is silent, end of file once the socket is shut down.
        var ended = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while start.duration(to: .now) < .seconds(8) {
            let n = recv(descriptor, &buffer, buffer.count, 0)
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                ended = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = start.duration(to: .now)
        socket.release(complete: false)
        #expect(ended)
        #expect(elapsed >= .seconds(1.5) && elapsed < .seconds(5), "the lent socket ended after \(elapsed)")
    }

    @Test func theURLSessionPathEndsAStalledBodyAtItsDeadline() async throws {
        // With an upstream proxy set every request takes the URLSession path, the one https takes. The proxy named is
        // the origin itself (it serves an absolute-form target by its path), so the request reaches it whether or
        // not this platform's URLSession honours the proxy settings.
        let origin = try HostileOrigin(trickleInterval: 0.1)
        defer { origin.stop() }
        let client = Self.client(proxy: "127.0.0.1:\(origin.port)")
        #expect(!client.usesSockets(origin.url("/drip/100000")))
        let url = origin.url("/drip/100000")
        var request = HTTPClientRequest(url: url)
        request.bodyDeadline = 2
        let start = ContinuousClock.now
        let response = try await client.send(request)
        #expect(response.status == 200)
        let (error, bytes) = await Self.drain(response)
        let elapsed = start.duration(to: .now)
        let failure = try #require(error as? HTTPClientError, "\(String(describing: error))")
        #expect(failure.code == .timedOut)
        #expect(failure.url == url)
        #expect(bytes < 100_000)
        #expect(elapsed >= .seconds(1.5) && elapsed < .seconds(5), "the body ended after \(elapsed)")
        #expect(origin.requests("drip") == 1)
    }
}
