import FileRange
import Foundation
import HLSAdFilter
import HLSPlaylist
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

@Suite(.serialized) struct ProxyTests {
    static func liveWindow(first: Int, ads: Set<Int>, count: Int = 5) -> String {
        MediaPlaylistText.window(
            first: first, count: count, targetDuration: 4, duration: "4.000", uri: { "seg\($0).ts?token=abc" },
            tags: { m in
                if ads.contains(m), !ads.contains(m - 1) {
                    return "#EXT-X-CUE-OUT:\(4 * ads.filter { $0 >= m }.count)\n"
                }
                if !ads.contains(m), ads.contains(m - 1) { return "#EXT-X-CUE-IN\n" }
                return ""
            }
        ).text
    }

    func makeProxy(
        _ origin: ProxyTestOrigin, path: String = "/master.m3u8",
        configure: (inout AdStrippingProxy.Options) -> Void = { _ in }
    )
        -> AdStrippingProxy
    {
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.headers = [(name: "Authorization", value: "Bearer secret")]
        options.fetch.userAgent = "ProxyTests/1"
        options.fetch.retries = 0
        configure(&options)
        return AdStrippingProxy(url: origin.base + path, options: options)
    }

    @Test func multivariantURIsAreAllRewrittenAndQueriesNeverCollide() async throws {
        let origin = try await ProxyTestOrigin(requiredAuthorization: "Bearer secret")
        origin.set(
            "/master.m3u8",
            """
            #EXTM3U
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="keys/session.key"
            #EXT-X-SESSION-DATA:DATA-ID="com.example.title",URI="data.json"
            #EXT-X-CONTENT-STEERING:SERVER-URI="https://steer.example.com/s.json",PATHWAY-ID="A"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=YES,AUTOSELECT=YES,URI="audio.m3u8?lang=en"
            #EXT-X-STREAM-INF:BANDWIDTH=1000000,AUDIO="aud"
            video.m3u8?q=low
            #EXT-X-STREAM-INF:BANDWIDTH=2000000,AUDIO="aud"
            video.m3u8?q=high
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="iframes.m3u8"

            """)
        let proxy = makeProxy(origin)
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        #expect(url.hasSuffix("/\(proxy.token.value)/master.m3u8"))
        let response = try await ProxyTestClient.get(url)
        #expect(response.status == 200)
        let text = response.text
        #expect(!text.contains("127.0.0.1"))
        #expect(!text.contains("steer.example.com"))
        let playlist = try Playlist(text)
        let mv = playlist.multivariant(url: url)
        #expect(mv.variants.count == 2)
        let routes = mv.variants.map(\.uri)
        #expect(Set(routes).count == 2, "query-only differences get different routes")
        #expect(routes.allSatisfy { $0.contains("/\(proxy.token.value)/p/") })
        #expect(mv.renditions.first?.uri?.contains("/p/") == true)
        #expect(mv.iFrameVariants.first?.uri.contains("/p/") == true)
        #expect(mv.sessionKeys.first?.uri?.contains("/k/") == true)
        #expect(text.contains("SERVER-URI=\"/\(proxy.token.value)/r/"))
        // Each route reaches the right upstream URL, query included.
        origin.set("/video.m3u8?q=low", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nlow.ts\n#EXT-X-ENDLIST\n")
        origin.set("/video.m3u8?q=high", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nhigh.ts\n#EXT-X-ENDLIST\n")
        origin.set("/low.ts", bytes: [1, 2, 3], contentType: "video/mp2t")
        origin.set("/high.ts", bytes: [4, 5, 6, 7], contentType: "video/mp2t")
        for (route, expected) in zip(routes, [[UInt8]([1, 2, 3]), [4, 5, 6, 7]]) {
            let media = try await ProxyTestClient.get(route)
            #expect(media.status == 200)
            let segment = try #require(try Playlist(media.text).media(url: route).segments.first)
            #expect(segment.uri.contains("/s/"))
            let body = try await ProxyTestClient.get(segment.uri)
            #expect(body.status == 200)
            #expect(body.body == expected)
            #expect(body.header("Content-Type") == "video/mp2t")
        }
        #expect(origin.log.withLock { $0 }.contains("/video.m3u8?q=high"))
    }

    @Test func livePollsGetSlatesHeadersAndRanges() async throws {
        let origin = try await ProxyTestOrigin(requiredAuthorization: "Bearer secret")
        origin.set("/live.m3u8", Self.liveWindow(first: 10, ads: [12, 13]))
        let payload = (0..<1000).map { UInt8($0 % 251) }
        origin.set("/seg10.ts?token=abc", bytes: payload, contentType: "video/mp2t")
        let proxy = makeProxy(origin, path: "/live.m3u8")
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        let response = try await ProxyTestClient.get(url)
        #expect(response.status == 200)
        let media = try Playlist(response.text).media(url: url)
        #expect(media.mediaSequence == 10)
        #expect(media.segments.count == 5)
        let t = proxy.token.value
        #expect(media.segments[2].uri.hasSuffix("/\(t)/slate/\(media.segments[2].uri.split(separator: "/")[4])/12.ts"))
        #expect(media.segments[3].uri.hasSuffix("/13.ts"))
        #expect(media.segments[0].uri.contains("/\(t)/s/"))
        #expect(!response.text.contains("CUE-OUT"))
        // A segment is relayed with the configured headers; Range is passed through.
        let whole = try await ProxyTestClient.get(media.segments[0].uri)
        #expect(whole.status == 200)
        #expect(whole.body == payload)
        let part = try await ProxyTestClient.get(media.segments[0].uri, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206)
        #expect(part.body == Array(payload[100...199]))
        #expect(part.header("Content-Range") == "bytes 100-199/1000")
        // The next poll keeps sequence numbers and slate URIs.
        origin.set(
            "/live.m3u8",
            Self.liveWindow(first: 12, ads: [12, 13]).replacingOccurrences(of: "#EXT-X-CUE-OUT:8\n", with: ""))
        let second = try Playlist(try await ProxyTestClient.get(url).text)
        let secondMedia = second.media(url: url)
        #expect(secondMedia.segments.first?.uri == media.segments[2].uri)
        #expect(secondMedia.segments[1].uri == media.segments[3].uri)
        #expect(
            PlaylistLinter(url: url).lint(second, previous: try Playlist(response.text)).filter {
                $0.severity == .error
            }.isEmpty)
    }

    @Test func redirectModeAnswers302() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/vod.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n")
        let proxy = makeProxy(origin, path: "/vod.m3u8") { $0.segmentMode = .redirect }
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        let media = try Playlist(try await ProxyTestClient.get(url).text).media(url: url)
        let response = try await ProxyTestClient.get(try #require(media.segments.first).uri)
        #expect(response.status == 302)
        #expect(response.header("Location") == origin.base + "/a.ts")
    }

    /// Redirect mode sends the player only where stream mode would fetch: a segment URI of another scheme, or
    /// (without allowPrivateUpstreams) on a private address in any of its forms, is answered 502 with no Location.
    @Test func redirectModeRefusesWhatStreamModeRefuses() async throws {
        let origin = try await ProxyTestOrigin()
        let refused = ["file:///etc/passwd", "gopher://127.0.0.1:70/1", "ftp://127.0.0.1/a.ts"]
        origin.set(
            "/vod.m3u8",
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + (["a.ts"] + refused).map { "#EXTINF:4,\n\($0)\n" }.joined()
                + "#EXT-X-ENDLIST\n")
        let proxy = makeProxy(origin, path: "/vod.m3u8") { $0.segmentMode = .redirect }
        let url = try await proxy.start()
        var strictOptions = AdStrippingProxy.Options()
        strictOptions.segmentMode = .redirect
        strictOptions.fetch.retries = 0
        let strict = AdStrippingProxy(url: origin.base + "/vod.m3u8", options: strictOptions)
        let strictURL = try await strict.start()
        defer {
            Task {
                await proxy.stop()
                await strict.stop()
                await origin.stop()
            }
        }
        let media = try Playlist(try await ProxyTestClient.get(url).text).media(url: url)
        #expect(media.segments.count == 1 + refused.count)
        let good = try await ProxyTestClient.get(media.segments[0].uri)
        #expect(good.status == 302)
        #expect(good.header("Location") == origin.base + "/a.ts")
        for (segment, target) in zip(media.segments.dropFirst(), refused) {
            let answer = try await ProxyTestClient.get(segment.uri)
            #expect(answer.status == 502, "\(target)")
            #expect(answer.header("Location") == nil, "\(target)")
        }
        // A proxy that refuses private upstreams refuses to send the player to one too (routes set directly: it
        // cannot fetch a playlist from this loopback origin).
        let privateTargets = [
            origin.base + "/a.ts", "http://localhost:\(origin.port)/a.ts", "http://10.1.2.3/a.ts",
            "http://[::127.0.0.1]:\(origin.port)/a.ts", "http://[::ffff:127.0.0.1]:\(origin.port)/a.ts",
            "http://[64:ff9b::7f00:1]/a.ts", "http://[fec0::1]/a.ts", "http://[ff02::1]/a.ts", "http://[fd00::1]/a.ts",
        ]
        let ids = strict.streams.multivariant.withLock { table in
            privateTargets.map { table.routes.id(for: $0, kind: .segment, now: ProxyClock.now) }
        }
        let base = strictURL.replacingOccurrences(of: "master.m3u8", with: "s/")
        for (id, target) in zip(ids, privateTargets) {
            let answer = try await ProxyTestClient.get(base + id + ".ts")
            #expect(answer.status == 502, "\(target)")
            #expect(answer.header("Location") == nil, "\(target)")
            #expect(answer.text.contains("address not allowed"), "\(target): \(answer.text)")
        }
        #expect(origin.log.withLock { $0 }.filter { $0 == "/a.ts" }.isEmpty)
    }

    /// The stream's credentials (Authorization, Cookie, Proxy-Authorization, the secret X-Api-Key) reach its own
    /// host only: a segment and a key the playlist names on another host name (`localhost` beside `127.0.0.1`), and
    /// a segment that redirects there, get the harmless headers only; allowed by name, that host gets them all.
    @Test func credentialsGoOnlyToTheStreamsHost() async throws {
        for allowing in [false, true] {
            let origin = try await ProxyTestOrigin()
            let other = try await ProxyTestOrigin()
            let elsewhere = "http://localhost:\(other.port)"
            origin.set(
                "/vod.m3u8",
                """
                #EXTM3U
                #EXT-X-TARGETDURATION:4
                #EXT-X-KEY:METHOD=AES-128,URI="\(elsewhere)/k.key"
                #EXTINF:4,
                a.ts
                #EXTINF:4,
                \(elsewhere)/b.ts
                #EXTINF:4,
                r.ts
                #EXT-X-ENDLIST

                """)
            origin.set("/a.ts", bytes: [0x47], contentType: "video/mp2t")
            origin.redirect("/r.ts", to: elsewhere + "/r.ts")
            other.set("/b.ts", bytes: [0x47], contentType: "video/mp2t")
            other.set("/r.ts", bytes: [0x47], contentType: "video/mp2t")
            other.set("/k.key", bytes: [UInt8](repeating: 1, count: 16), contentType: "application/octet-stream")
            let proxy = makeProxy(origin, path: "/vod.m3u8") { options in
                options.fetch.headers += [
                    (name: "Cookie", value: "c=secret"), (name: "Proxy-Authorization", value: "Basic secret"),
                    (name: "X-Api-Key", value: "secret-key"), (name: "Referer", value: "http://site.example/"),
                    (name: "Origin", value: "http://site.example"),
                ]
                options.fetch.secretHeaders = ["X-API-KEY"]
                if allowing { options.fetch.credentialHosts = ["LocalHost"] }
            }
            let url = try await proxy.start()
            let text = try await ProxyTestClient.get(url).text
            let media = try Playlist(text).media(url: url)
            #expect(media.segments.count == 3)
            for segment in media.segments {
                #expect(try await ProxyTestClient.get(segment.uri).status == 200, "\(segment.uri)")
            }
            let keyURI = try #require(media.segments.first?.keys.first?.uri)
            #expect(try await ProxyTestClient.get(keyURI).body.count == 16)
            let own = origin.received.withLock { $0 }
            let foreign = other.received.withLock { $0 }
            #expect(Set(own.map(\.path)) == ["/vod.m3u8", "/a.ts", "/r.ts"])
            #expect(Set(foreign.map(\.path)) == ["/k.key", "/b.ts", "/r.ts"])
            let secrets = ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"]
            for (path, headers) in own {
                for name in secrets { #expect(headers[name] != nil, "\(name) on \(path)") }
            }
            for (path, headers) in foreign {
                for name in secrets { #expect((headers[name] != nil) == allowing, "\(name) on \(path)") }
                #expect(headers["Referer"] == "http://site.example/", "\(path)")
                #expect(headers["Origin"] == "http://site.example", "\(path)")
                #expect(headers["User-Agent"] == "ProxyTests/1", "\(path)")
            }
            await proxy.stop()
            await origin.stop()
            await other.stop()
        }
    }

    @Test func upstreamFailuresBecome502WithAReason() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/html.m3u8", "\u{FEFF}<!DOCTYPE html><html>error</html>", contentType: "text/html")
        origin.set("/bom.m3u8", "\u{FEFF}#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n")
        let html = makeProxy(origin, path: "/html.m3u8")
        let htmlURL = try await html.start()
        let missing = makeProxy(origin, path: "/missing.m3u8")
        let missingURL = try await missing.start()
        let bom = makeProxy(origin, path: "/bom.m3u8")
        let bomURL = try await bom.start()
        var strictOptions = AdStrippingProxy.Options()
        strictOptions.fetch.retries = 0
        let strict = AdStrippingProxy(url: origin.base + "/bom.m3u8", options: strictOptions)
        let strictURL = try await strict.start()
        defer {
            Task {
                for p in [html, missing, bom, strict] { await p.stop() }
                await origin.stop()
            }
        }

        let a = try await ProxyTestClient.get(htmlURL)
        #expect(a.status == 502)
        #expect(a.text.contains("HTML"))
        let b = try await ProxyTestClient.get(missingURL)
        #expect(b.status == 502)
        #expect(b.text.contains("404"))
        let c = try await ProxyTestClient.get(bomURL)
        #expect(c.status == 200)
        let d = try await ProxyTestClient.get(strictURL)
        #expect(d.status == 502)
        #expect(d.text.contains("address not allowed"))
        let e = try await ProxyTestClient.get(bomURL.replacingOccurrences(of: "master.m3u8", with: "s/zzz.ts"))
        #expect(e.status == 404)
    }

    @Test func redirectsAreBoundedAndChecked() async throws {
        let origin = try await ProxyTestOrigin()
        for i in 0..<8 { origin.redirect("/r\(i).m3u8", to: origin.base + "/r\(i + 1).m3u8") }
        origin.set("/r8.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n")
        origin.redirect("/file.m3u8", to: "file:///etc/passwd")
        let fetcher = RemotePlaylistFetcher(
            options: {
                var o = RemoteFetchOptions()
                o.allowPrivateUpstreams = true
                o.maxRedirects = 3
                o.retries = 0
                return o
            }())
        await #expect(throws: ProxyError.self) { try await fetcher.fetchPlaylist(origin.base + "/r0.m3u8") }
        let ok = try await fetcher.fetchPlaylist(origin.base + "/r6.m3u8")
        #expect(ok.url == origin.base + "/r8.m3u8", "relative URIs resolve against the final URL")
        await #expect(throws: ProxyError.self) { try await fetcher.fetchPlaylist(origin.base + "/file.m3u8") }
        do {
            _ = try await fetcher.fetchPlaylist("ftp://example.com/a.m3u8")
            Issue.record("ftp accepted")
        } catch {
            #expect(error.code == .schemeNotAllowed)
        }
        await origin.stop()
    }

    @Test func stallsAreReported() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/live.m3u8", Self.liveWindow(first: 0, ads: []))
        let proxy = makeProxy(origin, path: "/live.m3u8") { $0.stallTimeout = 0.05 }
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        _ = try await ProxyTestClient.get(url)
        try await Task.sleep(for: .milliseconds(100))
        _ = try await ProxyTestClient.get(url)
        origin.set("/live.m3u8", Self.liveWindow(first: 1, ads: []))
        _ = try await ProxyTestClient.get(url)
        var stalled = false
        var resumed = false
        for await event in proxy.events {
            switch event {
            case .stalled: stalled = true
            case .resumed: resumed = true
            default: break
            }
            if stalled && resumed { break }
        }
        #expect(stalled && resumed)
    }

    @Test func routeExtensionsComeFromThePathOnly() {
        #expect(ProxyURIs.extensionOf("https://a.example.com/x/seg1.ts?v=1.mp4", default: "ts") == "ts")
        #expect(ProxyURIs.extensionOf("https://a.example.com/x/init.MP4#f.ts", default: "ts") == "mp4")
        #expect(ProxyURIs.extensionOf("https://a.example.com/x/noext?a=b.ts", default: "ts") == "ts")
        #expect(ProxyURIs.extensionOf("https://a.example.com/x.y/seg", default: "aac") == "aac")
        #expect(ProxyURIs.extensionOf("https://a.example.com", default: "ts") == "ts")
        #expect(ProxyURIs.extensionOf("https://a.example.com/a.b/../c.m4s", default: "ts") == "m4s")
        #expect(ProxyURIs.extensionOf("https://a.example.com/c.t%20s", default: "ts") == "ts")
    }

    @Test func privateAddressesAreRecognised() {
        for a in [
            "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.1.1", "::1", "fd00::1",
            "fe80::1%eth0", "::ffff:127.0.0.1", "100.64.0.1", "0.0.0.0",
        ] {
            #expect(UpstreamAddressPolicy.isPrivate(a), "\(a)")
        }
        for a in ["8.8.8.8", "172.32.0.1", "2001:4860:4860::8888", "192.169.0.1"] {
            #expect(!UpstreamAddressPolicy.isPrivate(a), "\(a)")
        }
    }

    @Test func iptvChannelOptionsCarryTheChannelsHeaders() {
        var channel = IPTVChannel(name: "News", url: "https://example.com/news.m3u8")
        channel.userAgent = "IPTVPlayer/2"
        channel.referrer = "https://example.com/"
        channel.httpHeaders = [(name: "Cookie", value: "a=b")]
        let options = AdStrippingProxy.Options(channel: channel)
        #expect(options.fetch.userAgent == "IPTVPlayer/2")
        #expect(options.fetch.headers.map(\.name) == ["Referer", "Cookie"])
    }
}
