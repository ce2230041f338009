import FileRange
import Foundation
import HTTPClient
import LoopbackHTTP
import Testing

@testable import MediaCache

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A web player on another origin reads the caching proxy's answers when it is started with a CORS origin (moved
/// from TSPlayerKit's `ProxyCORSTests`, whose ad-stripping proxy tests are HLSProxy's).
@Suite(.serialized, .temporaryFolders) struct CachingProxyCORSTests {
    static let page = CORSTestPage.page

    static func request(_ url: String, method: String = "GET", headers: [String: String] = [:]) async throws
        -> ProxyTestClient.Response
    {
        try await CORSTestPage.request(url, method: method, headers: headers)
    }

    static func expectCORS(_ response: ProxyTestClient.Response, _ what: String) {
        CORSTestPage.expectCORS(response, what)
    }

    @Test func theCachingProxyAnswersTheOriginToo() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(10_000, seed: 3)
        origin.set("/song.mp3", .init(body: body, etag: "\"v1\""))
        var options = CachingMediaProxy.Options(cacheDirectory: cachingTestDirectory())
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.server.cors = CORSOptions(allowedOrigin: Self.page)
        let proxy = try CachingMediaProxy(options: options, server: PlaybackServer())
        let local = try await proxy.localURL(for: origin.url("/song.mp3"), headers: [])
        let part = try await Self.request(local, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206 && part.body == Array(body[100...199]))
        Self.expectCORS(part, "cached file range")
        let preflight = try await Self.request(
            local, method: "OPTIONS",
            headers: ["Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == Self.page)
        #expect(preflight.header("Access-Control-Allow-Headers")?.lowercased().contains("range") == true)
        await proxy.stop()
        await origin.stop()
    }
}
