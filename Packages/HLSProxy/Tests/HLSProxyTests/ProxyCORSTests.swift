import FileRange
import Foundation
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A web player on another origin reads every answer of an ad-stripping proxy started with a CORS origin: the
/// playlists, relayed segments (ranges included), slates, errors, and the preflight a Range request needs.
@Suite(.serialized, .temporaryFolders) struct ProxyCORSTests {
    static let page = CORSTestPage.page

    /// A request with the page's Origin; `method` OPTIONS asks as a browser's preflight does.
    static func request(_ url: String, method: String = "GET", headers: [String: String] = [:]) async throws
        -> ProxyTestClient.Response
    {
        try await CORSTestPage.request(url, method: method, headers: headers)
    }

    /// The headers every answer to the page must carry.
    static func expectCORS(_ response: ProxyTestClient.Response, _ what: String) {
        CORSTestPage.expectCORS(response, what)
    }

    @Test func everyProxyAnswerCarriesTheOriginsHeaders() async throws {
        let origin = try await ProxyTestOrigin()
        var window = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:10\n"
        window += "#EXTINF:2.000,\nseg10.ts\n#EXT-X-CUE-OUT:2\n#EXTINF:2.000,\nseg11.ts\n#EXT-X-CUE-IN\n"
        window += "#EXTINF:2.000,\nseg12.ts\n#EXTINF:2.000,\nmissing.ts\n"
        origin.set("/live.m3u8", window)
        let anchor = ProxySlateTests.anchor()
        origin.set("/seg10.ts", bytes: anchor, contentType: "video/mp2t")
        origin.set("/seg12.ts", bytes: anchor, contentType: "video/mp2t")
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.server.cors = CORSOptions(allowedOrigin: Self.page)
        let server = PlaybackServer()
        let proxy = AdStrippingProxy(url: origin.base + "/live.m3u8", options: options, server: server)
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        #expect(server.configuration.cors?.allowedOrigin == Self.page)

        let playlist = try await Self.request(url)
        #expect(playlist.status == 200)
        Self.expectCORS(playlist, "playlist")
        let uris = playlist.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(uris.count == 4, "\(playlist.text)")
        let absolute = { (uri: String) in
            uri.hasPrefix("http") ? uri : "http://127.0.0.1:\(server.boundPort ?? 0)" + uri
        }
        let content = absolute(uris[0])
        let slate = absolute(uris[1])
        #expect(slate.contains("/slate/"), "\(uris)")

        let whole = try await Self.request(content)
        #expect(whole.status == 200 && whole.body == anchor)
        Self.expectCORS(whole, "segment")
        let part = try await Self.request(content, headers: ["Range": "bytes=188-375"])
        #expect(part.status == 206 && part.body == Array(anchor[188...375]))
        #expect(part.header("Content-Range") == "bytes 188-375/\(anchor.count)")
        Self.expectCORS(part, "segment range")

        let slateAnswer = try await Self.request(slate)
        #expect(slateAnswer.status == 200 && slateAnswer.body.count > 188, "slate: \(slateAnswer.status)")
        Self.expectCORS(slateAnswer, "slate")

        // Errors: an upstream 404 relayed as 502 with its reason, and a route the proxy does not have.
        let upstream = try await Self.request(absolute(uris[3]))
        #expect(upstream.status == 502, "missing segment: \(upstream.status) \(upstream.text)")
        Self.expectCORS(upstream, "502")
        let unknown = try await Self.request(url.replacingOccurrences(of: "master.m3u8", with: "s/nothing.ts"))
        #expect(unknown.status == 404)
        Self.expectCORS(unknown, "404")

        // The preflight of a ranged segment request.
        let preflight = try await Self.request(
            content, method: "OPTIONS",
            headers: ["Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"])
        #expect(preflight.status == 204, "preflight: \(preflight.status)")
        #expect(preflight.header("Access-Control-Allow-Origin") == Self.page, "\(preflight.headers)")
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("GET") == true, "\(preflight.headers)")
        #expect(
            preflight.header("Access-Control-Allow-Headers")?.lowercased().contains("range") == true,
            "\(preflight.headers)")
        #expect(preflight.header("Access-Control-Max-Age") != nil)
        let slatePreflight = try await Self.request(
            slate, method: "OPTIONS", headers: ["Access-Control-Request-Method": "GET"])
        #expect(slatePreflight.status == 204)
        #expect(slatePreflight.header("Access-Control-Allow-Origin") == Self.page)
    }

    @Test func withoutCORSNoOriginIsAllowed() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/vod.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n")
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        let proxy = AdStrippingProxy(url: origin.base + "/vod.m3u8", options: options, server: PlaybackServer())
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        let playlist = try await Self.request(url)
        #expect(playlist.status == 200)
        #expect(playlist.header("Access-Control-Allow-Origin") == nil)
    }
}
