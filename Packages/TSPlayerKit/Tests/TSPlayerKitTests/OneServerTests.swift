import FileRange
import Foundation
import HTTPClient
import Testing

@testable import LoopbackHTTP
@testable import TSPlayerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One server for everything: a playback session, an ad-stripping proxy and a caching proxy in one process share one
/// port and one lifecycle.
@Suite("One server", .temporaryFolders)
struct OneServerTests {
    /// An ad-stripping proxy and a caching proxy on `server`, with their origins, and the URLs they hand out.
    struct Proxies {
        let proxyOrigin: ProxyTestOrigin
        let cacheOrigin: CachingTestOrigin
        let proxy: AdStrippingProxy
        let cache: CachingMediaProxy
        let proxyURL: String
        let songURL: String
        let song: [UInt8]

        init(server: PlaybackServer) async throws {
            proxyOrigin = try await ProxyTestOrigin()
            proxyOrigin.set("/live/master.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nvideo.m3u8\n")
            var options = AdStrippingProxy.Options()
            options.fetch.allowPrivateUpstreams = true
            options.fetch.retries = 0
            proxy = AdStrippingProxy(url: proxyOrigin.base + "/live/master.m3u8", options: options, server: server)
            proxyURL = try await proxy.start()

            cacheOrigin = try await CachingTestOrigin()
            song = cachingTestBytes(20_000, seed: 7)
            cacheOrigin.set("/song.mp3", .init(body: song, etag: "\"one\""))
            var cacheOptions = CachingMediaProxy.Options(cacheDirectory: cachingTestDirectory())
            cacheOptions.fetch.allowPrivateUpstreams = true
            cacheOptions.fetch.retries = 0
            cache = try CachingMediaProxy(options: cacheOptions, server: server)
            songURL = try await cache.localURL(for: cacheOrigin.url("/song.mp3"))
        }

        func stop() async {
            await proxy.stop()
            await cache.stop()
            await proxyOrigin.stop()
            await cacheOrigin.stop()
        }
    }

    /// The text of a GET's body, with its status.
    static func get(_ url: String) async throws -> (Int, String) {
        let (status, _, body) = try await cachingTestGet(url)
        return (status, String(decoding: body, as: UTF8.self))
    }

    /// `http://host:port/<token>/`: the base of a URL the server handed out.
    static func base(of url: String) throws -> String {
        let parts = url.split(separator: "/", omittingEmptySubsequences: false)
        try #require(parts.count >= 5)
        return parts[0..<4].joined(separator: "/") + "/"
    }

    @Test("a session, an ad-stripping proxy and a caching proxy share one port; each token reaches only its routes")
    func onePortIsolatedTokens() async throws {
        let server = PlaybackServer()
        let session = EchoSource("session")
        let sessionBase = try server.register(session)
        let proxies = try await Proxies(server: server)
        let port = try #require(server.boundPort)
        #expect(proxies.proxy.port == port)
        #expect(proxies.cache.boundPort == port)
        for url in [sessionBase, proxies.proxyURL, proxies.songURL] {
            #expect(URL(string: url)?.port == Int(port), "\(url)")
        }
        #expect(proxies.proxyURL == "http://127.0.0.1:\(port)/\(proxies.proxy.token.value)/master.m3u8")

        // Each source answers under its own token.
        #expect(try await Self.get(sessionBase + "a/b.ts") == (200, "session:a/b.ts"))
        let (status, playlist) = try await Self.get(proxies.proxyURL)
        #expect(status == 200)
        #expect(playlist.contains("/\(proxies.proxy.token.value)/p/"), "\(playlist)")
        #expect(try await cachingTestGet(proxies.songURL).2 == proxies.song)

        // And only its own routes: another source's path under a token is that token's source's answer.
        let proxyBase = try Self.base(of: proxies.proxyURL)
        let songBase = try Self.base(of: proxies.songURL)
        #expect(try await Self.get(sessionBase + "master.m3u8") == (200, "session:master.m3u8"))
        #expect(try await Self.get(sessionBase + "song.mp3") == (200, "session:song.mp3"))
        #expect(try await Self.get(proxyBase + "song.mp3").0 == 404)
        #expect(try await Self.get(proxyBase + "a/b.ts").0 == 404)
        let underSongToken = try await cachingTestGet(songBase + "master.m3u8")
        #expect(underSongToken.0 == 200)
        #expect(underSongToken.2 == proxies.song, "the song's token serves the song whatever the file name")
        #expect(try await Self.get("http://127.0.0.1:\(port)/\(SessionToken.random().value)/master.m3u8").0 == 404)

        // Removing one source leaves the others serving, on the same port.
        await proxies.proxy.stop()
        #expect(proxies.proxy.port == nil)
        #expect(try await Self.get(proxies.proxyURL).0 == 404)
        #expect(try await Self.get(sessionBase + "x").1 == "session:x")
        #expect(try await cachingTestGet(proxies.songURL).2 == proxies.song)
        #expect(server.boundPort == port)
        await proxies.cache.stop()
        #expect(proxies.cache.boundPort == nil)
        #expect(try await Self.get(proxies.songURL).0 == 404)
        #expect(try await Self.get(sessionBase + "y").1 == "session:y")
        await server.remove(session)
        #expect(server.boundPort == nil)
        await proxies.stop()
    }

    @Test("the last source to go is a proxy: the server stops with it, and a proxy started again starts it")
    func proxiesAloneRunTheServer() async throws {
        let server = PlaybackServer()
        let proxies = try await Proxies(server: server)
        let port = try #require(server.boundPort)
        await proxies.cache.stop()
        #expect(server.boundPort == port)
        await proxies.proxy.stop()
        #expect(server.boundPort == nil)
        let again = AdStrippingProxy(url: proxies.proxy.upstreamURL, options: proxies.proxy.options, server: server)
        let url = try again.startServer()
        #expect(try again.startServer() == url, "starting a started proxy gives its URL again")
        #expect(try await Self.get(url).0 == 200)
        await again.stop()
        #expect(server.boundPort == nil)
        await proxies.stop()
    }

    @Test("revive after the system took the listener brings every proxy back on the same port")
    func reviveCoversTheProxies() async throws {
        let server = PlaybackServer()
        let session = EchoSource("session")
        let sessionBase = try server.register(session)
        let proxies = try await Proxies(server: server)
        let port = try #require(server.boundPort)
        let http = try #require(server.httpServer)
        let runs = http.runCount
        try await loseListeners(of: server)
        #expect(server.needsRevival, "the dead listener was never noticed")
        #expect(try await server.revive() == port)
        #expect(!server.needsRevival)
        // One long-lived server: the run that lost its listener was replaced by a new one.
        #expect(server.httpServer === http)
        #expect(http.runCount == runs + 1)
        #expect(proxies.proxy.port == port)
        #expect(proxies.cache.boundPort == port)
        #expect(try await Self.get(proxies.proxyURL).0 == 200)
        #expect(try await cachingTestGet(proxies.songURL).2 == proxies.song)
        #expect(try await Self.get(sessionBase + "z").1 == "session:z")
        await proxies.stop()
        await server.remove(session)
        #expect(server.boundPort == nil)
    }

    @Test("a proxy's server settings apply when it starts the server, and a running server keeps its own")
    func serverSettings() async throws {
        let server = PlaybackServer()
        let paths = LockedValue<[String]>([])
        var options = AdStrippingProxy.Options()
        options.server.accessLog = { entry in paths.withLock { $0.append(entry.path) } }
        let first = AdStrippingProxy(url: "http://127.0.0.1:9/a.m3u8", options: options, server: server)
        _ = try first.startServer()
        #expect(server.configuration.accessLog != nil)
        var other = HTTPServerConfiguration()
        other.port = 1
        var later = AdStrippingProxy.Options()
        later.server = other
        let second = AdStrippingProxy(url: "http://127.0.0.1:9/b.m3u8", options: later, server: server)
        _ = try second.startServer()
        #expect(second.port == first.port, "the running server is joined, not restarted on another port")
        #expect(server.configuration.port == 0)
        await first.stop()
        await second.stop()
        #expect(server.boundPort == nil)
    }
}
