import Foundation
import Testing

@testable import HLSProxy

/// Which upstreams the proxies may reach, through the ad-stripping proxy (the policy's own table is HTTPClient's
/// `UpstreamPolicyTests`).
@Suite struct UpstreamPolicyTests {
    /// Through the proxy: a loopback upstream is refused with a 502 that says why, and nothing is fetched.
    @Test func theProxyAnswers502ForARefusedUpstream() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/live.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\ns.ts\n")
        let proxy = AdStrippingProxy(url: origin.base + "/live.m3u8", options: AdStrippingProxy.Options())
        let url = try await proxy.start()
        let response = try await ProxyTestClient.get(url)
        #expect(response.status == 502)
        #expect(response.text.contains("non-public address"))
        #expect(origin.log.withLock { $0 }.isEmpty)
        await proxy.stop()
        await origin.stop()
    }
}
