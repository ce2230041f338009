import FileRange
import Foundation
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

/// The proxy's routes sit under its session token: a wrong token is a plain 404 and no token reaches the log.
@Suite("AdStrippingProxy token")
struct ProxyTokenTests {
    @Test func wrongTokenIs404AndTheLogHidesTheToken() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/master.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nvideo.m3u8\n")
        let paths = LockedValue<[String]>([])
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.server.accessLog = { entry in paths.withLock { $0.append("\(entry.path) \(entry.status)") } }
        // A server of its own: the access log is the server's, and the shared one may already run for other tests.
        let proxy = AdStrippingProxy(url: origin.base + "/master.m3u8", options: options, server: PlaybackServer())
        let url = try await proxy.start()
        let good = try await ProxyTestClient.get(url)
        #expect(good.status == 200)
        let stranger = url.replacingOccurrences(of: proxy.token.value, with: SessionToken.random().value)
        #expect(try await ProxyTestClient.get(stranger).status == 404)
        await proxy.stop()
        await origin.stop()
        let logged = paths.withLock { $0 }
        #expect(logged == ["/{token}/master.m3u8 200", "/{token}/master.m3u8 404"], "\(logged)")
    }
}
