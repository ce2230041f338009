import HLSPlaylist
import Testing

@testable import HLSProxy

/// The playlist rewriter on its own: parsed playlists and route tables in, bytes out; no I/O, no proxy, no clock.
@Suite struct PlaylistRewriterTests {
    static let rewriter = PlaylistRewriter(token: "TOKEN", lifetime: 600)

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func aMediaPlaylistsURIsBecomeRoutesOfItsTable() throws {
        let input = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:10
            #EXT-X-MAP:URI="../init/./main.mp4?v=1"
            #EXT-X-KEY:METHOD=AES-128,URI="keys/k1.key?t=2",IV=0x00000000000000000000000000000001
            #EXT-X-PROGRAM-DATE-TIME:2026-12-01T20:00:00.000Z
            #EXTINF:2.000,
            ../live/./seg_10.m4s?session=abc&n=10
            #EXTINF:2.000,
            slate/11.m4s

            """
        let playlist = try Playlist(bytes: Array(input.utf8))
        var routes = RouteTable(prefix: "7-")
        var cache: RouteCache?
        let base = "https://cdn.example/a/b/index.m3u8"
        let output = Self.rewriter.media(
            playlist, base: base, variables: Variables(), playlistID: "7", live: true, routes: &routes, cache: &cache,
            now: 100)
        let expected = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:10
            #EXT-X-MAP:URI="/TOKEN/s/7-1.mp4"
            #EXT-X-KEY:METHOD=AES-128,URI="/TOKEN/k/7-2.key",IV=0x00000000000000000000000000000001
            #EXT-X-PROGRAM-DATE-TIME:2026-12-01T20:00:00.000Z
            #EXTINF:2.000,
            /TOKEN/s/7-3.m4s
            #EXTINF:2.000,
            /TOKEN/slate/7/11.m4s

            """
        #expect(Self.text(output) == expected)
        // The table maps each ID to the resolved URL (dot segments removed, query kept).
        #expect(routes.lookup("7-1", kind: .segment) == "https://cdn.example/a/init/main.mp4?v=1")
        #expect(routes.lookup("7-2", kind: .key) == "https://cdn.example/a/b/keys/k1.key?t=2")
        #expect(routes.lookup("7-3", kind: .segment) == "https://cdn.example/a/live/seg_10.m4s?session=abc&n=10")
        #expect(routes.lookup("7-2", kind: .segment) == nil, "a key's route is not a segment's")
        #expect(routes.byID.count == 3)
        #expect(cache?.entries.count == 1)

        // The same playlist again: the same bytes, no new route.
        let again = Self.rewriter.media(
            playlist, base: base, variables: Variables(), playlistID: "7", live: true, routes: &routes, cache: &cache,
            now: 101)
        #expect(again == output)
        #expect(routes.next == 3)

        // VOD: a `slate/` line is an ordinary URI there.
        var vodRoutes = RouteTable(prefix: "8-")
        var vodCache: RouteCache?
        let vod = Self.rewriter.media(
            playlist, base: base, variables: Variables(), playlistID: "8", live: false, routes: &vodRoutes,
            cache: &vodCache, now: 100)
        #expect(Self.text(vod).contains("\n/TOKEN/s/8-4.m4s\n"))
        #expect(vodRoutes.lookup("8-4", kind: .segment) == "https://cdn.example/a/b/slate/11.m4s")
    }

    @Test func aSlidingWindowMapsOnlyItsNewSegmentsAndAMovedBaseStartsAfresh() throws {
        func window(_ first: Int) throws -> Playlist {
            let text = MediaPlaylistText.window(
                first: first, count: 3, version: nil, targetDuration: 2, duration: "2.000", uri: { "./s\($0).ts" })
            return try Playlist(bytes: text.bytes)
        }
        var routes = RouteTable(prefix: "p-")
        var cache: RouteCache?
        let base = "http://o.example/live/index.m3u8"
        let first = Self.rewriter.media(
            try window(0), base: base, variables: Variables(), playlistID: "p", live: true, routes: &routes,
            cache: &cache, now: 0)
        let second = Self.rewriter.media(
            try window(1), base: base, variables: Variables(), playlistID: "p", live: true, routes: &routes,
            cache: &cache, now: 2)
        #expect(
            Self.text(first).hasSuffix(
                "/TOKEN/s/p-1.ts\n#EXTINF:2.000,\n/TOKEN/s/p-2.ts\n#EXTINF:2.000,\n/TOKEN/s/p-3.ts\n"))
        #expect(
            Self.text(second).hasSuffix(
                "/TOKEN/s/p-2.ts\n#EXTINF:2.000,\n/TOKEN/s/p-3.ts\n#EXTINF:2.000,\n/TOKEN/s/p-4.ts\n"))
        #expect(routes.next == 4)
        #expect(cache?.entries.count == 4)

        // The playlist answered from another URL: the same URI lines resolve elsewhere, so the cache starts afresh.
        let moved = Self.rewriter.media(
            try window(1), base: "http://other.example/live/index.m3u8", variables: Variables(), playlistID: "p",
            live: true, routes: &routes, cache: &cache, now: 3)
        #expect(Self.text(moved).hasSuffix("/TOKEN/s/p-7.ts\n"))
        #expect(routes.lookup("p-7", kind: .segment) == "http://other.example/live/s3.ts")
        #expect(cache?.entries.count == 3)
        #expect(cache?.base == "http://other.example/live/index.m3u8")
    }

    @Test func routesNoPlaylistHoldsArePrunedAfterTheirLifetime() throws {
        let rewriter = PlaylistRewriter(token: "T", lifetime: 40)
        #expect(rewriter.refreshEvery == 10)
        var routes = RouteTable()
        _ = routes.id(for: "http://o.example/v.m3u8", kind: .playlist, now: 0)
        _ = routes.id(for: "http://o.example/k.key", kind: .key, now: 0)
        let empty = try Playlist(bytes: Array("#EXTM3U\n".utf8))
        _ = rewriter.multivariant(
            empty, base: "http://o.example/m.m3u8", variables: Variables(), routes: &routes, now: 30)
        #expect(routes.byID.count == 2, "not yet past the lifetime")
        _ = rewriter.multivariant(
            empty, base: "http://o.example/m.m3u8", variables: Variables(), routes: &routes, now: 50)
        #expect(routes.lookup("2", kind: .key) == nil, "the key went")
        #expect(routes.lookup("1", kind: .playlist) == "http://o.example/v.m3u8", "playlist routes stay")
    }

    @Test func aMultivariantPlaylistsURIsBecomeRoutesByKind() throws {
        let input = """
            #EXTM3U
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="../keys/s.key"
            #EXT-X-SESSION-DATA:DATA-ID="com.example.title",URI="data/title.json"
            #EXT-X-CONTENT-STEERING:SERVER-URI="steer?x=1"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="audio/./en.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1000000,AUDIO="a"
            video/../video/720.m3u8?q=1
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="iframe.m3u8"

            """
        let playlist = try Playlist(bytes: Array(input.utf8))
        var routes = RouteTable()
        let base = "https://cdn.example/a/master.m3u8"
        let output = Self.rewriter.multivariant(
            playlist, base: base, variables: playlist.multivariant(url: base).variables, routes: &routes, now: 0)
        let expected = """
            #EXTM3U
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="/TOKEN/k/1.key"
            #EXT-X-SESSION-DATA:DATA-ID="com.example.title",URI="/TOKEN/r/2"
            #EXT-X-CONTENT-STEERING:SERVER-URI="/TOKEN/r/3"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="/TOKEN/p/4.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1000000,AUDIO="a"
            /TOKEN/p/5.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="/TOKEN/p/6.m3u8"

            """
        #expect(Self.text(output) == expected)
        #expect(routes.lookup("1", kind: .key) == "https://cdn.example/keys/s.key")
        #expect(routes.lookup("2", kind: .raw) == "https://cdn.example/a/data/title.json")
        #expect(routes.lookup("3", kind: .raw) == "https://cdn.example/a/steer?x=1")
        #expect(routes.lookup("4", kind: .playlist) == "https://cdn.example/a/audio/en.m3u8")
        #expect(routes.lookup("5", kind: .playlist) == "https://cdn.example/a/video/720.m3u8?q=1")
        #expect(routes.lookup("6", kind: .playlist) == "https://cdn.example/a/iframe.m3u8")
        #expect(RouteTable.stream(of: "5") == nil)
        #expect(RouteTable.stream(of: "5-1b") == "5")
    }

    @Test func importedAndQueryParameterDefinitionsAreRestated() throws {
        let input = """
            #EXTM3U
            #EXT-X-DEFINE:IMPORT="auth"
            #EXT-X-TARGETDURATION:2
            #EXTINF:2.000,
            seg.ts?auth={$auth}
            #EXT-X-ENDLIST

            """
        let playlist = try Playlist(bytes: Array(input.utf8))
        var parent = Variables()
        parent.values["auth"] = "s3cret"
        let view = playlist.media(url: "http://o.example/v/index.m3u8", parent: parent)
        var routes = RouteTable(prefix: "v-")
        var cache: RouteCache?
        let output = Self.rewriter.media(
            playlist, base: "http://o.example/v/index.m3u8", variables: view.variables, playlistID: "v", live: false,
            routes: &routes, cache: &cache, now: 0)
        #expect(Self.text(output).contains("#EXT-X-DEFINE:NAME=\"auth\",VALUE=\"s3cret\"\n"))
        #expect(routes.lookup("v-1", kind: .segment) == "http://o.example/v/seg.ts?auth=s3cret")
    }
}
