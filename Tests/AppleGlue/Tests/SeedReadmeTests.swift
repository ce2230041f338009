import AVFoundation
import FileRange
import Foundation
import TSPlayerKit
import TSPlayerKitAppleGlue
import Testing

// The seed library's README snippets, compiled against the toolkit and run wherever they do not need a real
// AVPlayer (the stand-in player records `play()` and plays nothing). Documentation/Migration.md lists them.
@Suite("The seed library's README snippets", .temporaryFolders)
struct SeedReadmeTests {
    @MainActor
    @Test("basic playback: TSPlayerItem(tsFileURL:) into an AVPlayer")
    func basicPlayback() async throws {
        let tsFileURL = sampleTS
        let tsItem = try TSPlayerItem(tsFileURL: tsFileURL)
        let player = AVPlayer(playerItem: tsItem.playerItem)
        player.play()

        #expect(player.currentItem === tsItem.playerItem)
        #expect(await glueGet(tsItem.url).status == 200)
    }

    @Test("every seed initialiser and SegmentInfo(offset:duration:length:file:)")
    func initialisers() async throws {
        let bytes = try Data(contentsOf: sampleTS)
        let total = try TSPlayerItem(tsFileURL: sampleTS, totalDuration: 10.0)
        let segments = try TSPlayerItem(
            tsFileURL: sampleTS, segments: [SegmentInfo(offset: 0, duration: 4.0, length: UInt64(bytes.count))])
        let folder = try GlueFolder()
        _ = try folder.write([UInt8](bytes), to: "video_000.ts")
        let files = try TSPlayerItem(
            tsFilesDirectory: folder.url,
            segments: [SegmentInfo(offset: 0, duration: 4.0, length: UInt64(bytes.count), file: "video_000.ts")])
        for item in [total, segments, files] {
            #expect(await glueGet(item.url).status == 200)
        }
        let info = SegmentInfo(offset: 188, duration: 2, length: 376, file: "a.ts")
        let decoded = try JSONDecoder().decode(SegmentInfo.self, from: JSONEncoder().encode(info))
        #expect(decoded == info)
        let seedJSON = #"{"offset":0,"duration":6.0,"length":1880,"file":"video_001.ts"}"#
        let seed = try JSONDecoder().decode(SegmentInfo.self, from: Data(seedJSON.utf8))
        #expect(seed == SegmentInfo(offset: 0, duration: 6, length: 1880, file: "video_001.ts"))
    }

    @MainActor
    @Test("ad blocking: RemotePlaylistFetcher(userAgent:extraHeaders:), AdStrippingProxy(remoteURL:fetcher:), localURL")
    func adBlocking() async throws {
        // 1. A fetcher with the headers the source needs.
        let fetcher = RemotePlaylistFetcher(
            userAgent: "Mozilla/5.0 ...",
            extraHeaders: ["Client-Id": "xxx"]
        )
        // 2. The proxy on a remote stream (here a loopback origin, which the default policy refuses).
        let origin = try GlueOrigin(bodies: ["/live/index.m3u8": (type: "application/vnd.apple.mpegurl", body: [])])
        let streamURL = origin.url("/live/index.m3u8")
        let proxy = try AdStrippingProxy(remoteURL: streamURL, fetcher: fetcher)
        // 3. Play through the proxy.
        let player = AVPlayer(playerItem: AVPlayerItem(asset: AVURLAsset(url: proxy.localURL)))
        player.play()

        #expect(proxy.localURL.absoluteString.hasPrefix("http://127.0.0.1:"))
        #expect(proxy.localURL.lastPathComponent == "master.m3u8")
        #expect(proxy.segmentMode == .stream)
        proxy.segmentMode = .redirect
        #expect(proxy.segmentMode == .redirect)
        #expect(fetcher.options.userAgent == "Mozilla/5.0 ...")
        #expect(fetcher.options.headers.map(\.name) == ["Client-Id"])
        let answer = await glueGet(proxy.localURL)
        #expect(answer.status == 502, "loopback upstreams stay refused unless allowed")
        #expect(origin.requests.withLock { $0.isEmpty })
        await origin.stop()
    }

    @Test("the seed proxy cleans a stream, sends the fetcher's headers, and redirects segments in .redirect mode")
    func seedProxyEndToEnd() async throws {
        let media = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXTINF:4.0,
            seg0.ts
            #EXT-X-CUE-OUT:4.0
            #EXTINF:4.0,
            ad0.ts
            #EXT-X-CUE-IN
            #EXTINF:4.0,
            seg1.ts
            #EXT-X-ENDLIST

            """
        let origin = try GlueOrigin(bodies: [
            "/vod/index.m3u8": (type: "application/vnd.apple.mpegurl", body: Array(media.utf8)),
            "/vod/seg0.ts": (type: "video/mp2t", body: [0x47, 1, 2, 3]),
        ])
        var options = RemoteFetchOptions()
        options.userAgent = "SeedAgent/1"
        options.headers = [(name: "Client-Id", value: "xxx")]
        options.allowPrivateUpstreams = true
        let proxy = try AdStrippingProxy(
            remoteURL: origin.url("/vod/index.m3u8"), fetcher: RemotePlaylistFetcher(options: options))

        // A media playlist upstream is answered at the proxy's master URL, cleaned.
        let master = await glueGet(proxy.localURL)
        #expect(master.status == 200)
        let cleaned = String(decoding: master.body, as: UTF8.self)
        #expect(cleaned.components(separatedBy: "#EXTINF:").count == 3, "the ad segment is removed: \(cleaned)")
        #expect(!cleaned.contains("ad0.ts"))
        let seed = origin.requests.withLock { $0.first }
        #expect(seed?.headers["user-agent"] == "SeedAgent/1")
        #expect(seed?.headers["client-id"] == "xxx")

        proxy.segmentMode = .redirect
        let segmentLine = try #require(cleaned.split(separator: "\n").first { !$0.hasPrefix("#") })
        let segmentURL = try #require(URL(string: String(segmentLine), relativeTo: proxy.localURL)?.absoluteURL)
        let redirected = await glueGet(segmentURL)
        #expect(redirected.status == 302)
        #expect(redirected.headers["location"] == origin.url("/vod/seg0.ts").absoluteString)
        proxy.segmentMode = .stream
        let relayed = await glueGet(segmentURL)
        #expect(relayed.status == 200)
        #expect([UInt8](relayed.body) == [0x47, 1, 2, 3])
        await origin.stop()
    }

    @Test("fetchPlaylist(url:) gives the text and the URL after redirects; a body that is not a playlist is refused")
    func fetchPlaylistText() async throws {
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n"
        let origin = try GlueOrigin(
            bodies: [
                "/real/index.m3u8": (type: "application/vnd.apple.mpegurl", body: Array(playlist.utf8)),
                "/page.html": (type: "text/html", body: Array("<html>".utf8)),
            ],
            redirects: ["/moved.m3u8": "/real/index.m3u8"])
        var options = RemoteFetchOptions()
        options.allowPrivateUpstreams = true
        let fetcher = RemotePlaylistFetcher(options: options)
        let (text, finalURL) = try await fetcher.fetchPlaylist(url: origin.url("/moved.m3u8"))
        #expect(text == playlist)
        #expect(finalURL == origin.url("/real/index.m3u8"))
        do {
            _ = try await fetcher.fetchPlaylist(url: origin.url("/page.html"))
            Issue.record("an HTML page was taken for a playlist")
        } catch {
            #expect(error.code == .notAPlaylist)
        }
        do {
            _ = try await fetcher.fetchPlaylist(url: origin.url("/missing.m3u8"))
            Issue.record("a 404 was taken for a playlist")
        } catch {
            #expect(error.status == 404)
        }
        await origin.stop()
    }
}
