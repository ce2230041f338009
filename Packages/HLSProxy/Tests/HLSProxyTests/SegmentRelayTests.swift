import FileRange
import Foundation
import HLSPlaylist
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Segment relay in stream mode over a plain-http upstream, where the server moves the bytes from the upstream
/// socket to the client inside the kernel: the bytes must be exactly the origin's, ranges must pass through, the
/// upstream connection must be reused after a whole relay and dropped after a cut one.
@Suite(.serialized) struct SegmentRelayTests {
    /// An origin that logs each request's remote address (one per upstream connection).
    final class Origin: Sendable {
        let server: HTTPServer
        let port: UInt16
        /// Remote addresses of the segment requests, in order.
        final class Peers: Sendable {
            let list = LockedValue<[String]>([])
        }
        let peers = Peers()
        let segments: [[UInt8]]

        init(segments: [[UInt8]]) async throws {
            self.segments = segments
            let playlistBytes = MediaPlaylistText(
                targetDuration: 4, header: "#EXT-X-PLAYLIST-TYPE:VOD\n",
                segments: segments.indices.map { .init(duration: "4.000", uri: "seg\($0).ts") }, ended: true
            ).bytes
            var router = Router()
            router.getImmediate("/vod.m3u8") { _ in
                .bytes(playlistBytes, contentType: "application/vnd.apple.mpegurl")
            }
            for (index, bytes) in segments.enumerated() {
                router.getImmediate("/seg\(index).ts") { _ in .bytes(bytes, contentType: "video/mp2t") }
            }
            var configuration = HTTPServerConfiguration()
            let peers = self.peers
            configuration.accessLog = { entry in
                if entry.path.hasSuffix(".ts") { peers.list.withLock { $0.append(entry.remoteAddress) } }
            }
            server = HTTPServer(application: HTTPApplication(router: router, configuration: configuration))
            port = try server.start()
        }

        var connections: Int { peers.list.withLock { Set($0).count } }
    }

    static func segment(_ count: Int, seed: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var state = UInt64(seed)
            for index in 0..<count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                buffer[index] = UInt8(truncatingIfNeeded: state >> 56)
            }
            initialized = count
        }
    }

    @Test func relayedSegmentsAreTheOriginsBytesAndReuseTheUpstreamConnection() async throws {
        let origin = try await Origin(segments: [
            Self.segment(16_000_017, seed: 1), Self.segment(2_500_000, seed: 2), Self.segment(1_234_567, seed: 3),
        ])
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        let proxy = AdStrippingProxy(url: "http://127.0.0.1:\(origin.port)/vod.m3u8", options: options)
        let url = try await proxy.start()
        let playlist = try await ProxyTestClient.get(url)
        let media = try Playlist(playlist.text).media(url: url)
        #expect(media.segments.count == 3)

        // Whole segments, one after another: exact bytes, one upstream connection for all.
        for (index, segment) in media.segments.enumerated() {
            let response = try await ProxyTestClient.get(segment.uri)
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == String(origin.segments[index].count))
            #expect(response.body == origin.segments[index])
        }
        #expect(origin.connections == 1)

        // A range in the middle of a big segment passes through.
        let part = try await ProxyTestClient.get(media.segments[0].uri, headers: ["Range": "bytes=1000000-1999999"])
        #expect(part.status == 206)
        #expect(part.header("Content-Range") == "bytes 1000000-1999999/16000017")
        #expect(part.body == Array(origin.segments[0][1_000_000...1_999_999]))

        // A client that leaves mid-segment (a small receive window keeps most of the 16 MB upstream): that
        // upstream connection is not reused (it is somewhere inside a body), and the next relay is whole again.
        let before = origin.connections
        let address = try #require(URL(string: media.segments[0].uri))
        let cut = try RelayRawClient(port: UInt16(try #require(address.port)))
        cut.send("GET \(address.path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await cut.readSome() > 0)
        cut.reset()
        try await Task.sleep(for: .milliseconds(100))
        let again = try await ProxyTestClient.get(media.segments[0].uri)
        #expect(again.body == origin.segments[0])
        #expect(origin.connections == before + 1)

        await proxy.stop()
        await origin.server.stop(gracePeriod: .milliseconds(100))
    }
}

/// A raw loopback client that can vanish mid-response.
final class RelayRawClient: Sendable {
    let fd: Int32

    init(port: UInt16) throws {
        // Darwin has no MSG_NOSIGNAL for send(2): LoopbackTCP's socket itself is told not to raise SIGPIPE.
        fd = LoopbackTCP.socket()
        var window: Int32 = 64 << 10
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
        guard LoopbackTCP.connect(fd, port: port) else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    func send(_ text: String) {
        #if canImport(Darwin)
            let flags: Int32 = 0  // SO_NOSIGPIPE is set on the socket
        #else
            let flags = Int32(MSG_NOSIGNAL)
        #endif
        _ = Array(text.utf8).withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count, flags) }
    }

    /// One read, on FileRange's pool; what recv(2) returned.
    func readSome() async -> Int {
        await blocking { [fd] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            return recv(fd, &buffer, buffer.count, 0)
        }
    }

    /// Closes with a reset, as a player that gives up does.
    func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
    }
}

/// The C library's send(2), named apart from RelayRawClient.send.
private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}
