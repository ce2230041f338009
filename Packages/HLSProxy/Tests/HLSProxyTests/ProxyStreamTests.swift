import Dispatch
import FileRange
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

/// The proxy's state is locked per media playlist: polls of different playlists never wait for each other.
@Suite struct ProxyStreamTests {
    /// A live window of `count` segments from `first`, of the media playlist at `url`.
    static func window(_ url: String, first: Int, count: Int = 50) throws -> FetchedPlaylist {
        let text = MediaPlaylistText.window(
            first: first, count: count, targetDuration: 2, duration: "2.000", uri: { "seg_\($0).ts?s=1" })
        return try RemotePlaylistFetcher.parsed(text.bytes, url: url)
    }

    @Test func aPollOfOnePlaylistCompletesWhileAnotherPlaylistsRewriteIsHeld() async throws {
        var options = AdStrippingProxy.Options()
        // Every poll filtered and rewritten in full, under its stream's lock.
        options.incrementalPolls = false
        let proxy = AdStrippingProxy(url: "http://origin.example/master.m3u8", options: options)
        let a = "http://origin.example/a/index.m3u8"
        let b = "http://origin.example/b/index.m3u8"
        _ = proxy.media(try Self.window(a, first: 0), playlistID: "a")
        _ = proxy.media(try Self.window(b, first: 0), playlistID: "b")

        // Playlist a's lock, held as its rewrite holds it, until released.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        BlockingPool.shared.submit {
            proxy.streams.stream("a").state.withLock { _ in
                held.signal()
                release.wait()
            }
        }
        await blocking { held.wait() }
        let nextA = try Self.window(a, first: 1)
        let nextB = try Self.window(b, first: 1)
        let doneB = DispatchSemaphore(value: 0)
        let outputB = LockedValue<[UInt8]>([])
        BlockingPool.shared.submit {
            let output = proxy.media(nextB, playlistID: "b")
            outputB.withLock { $0 = output }
            doneB.signal()
        }
        let bFinished = await blocking { doneB.wait(timeout: .now() + 10) == .success }
        #expect(bFinished, "a poll of b waited for a's rewrite")
        let doneA = DispatchSemaphore(value: 0)
        BlockingPool.shared.submit {
            _ = proxy.media(nextA, playlistID: "a")
            doneA.signal()
        }
        // A poll of a itself waits for a's lock.
        #expect(await blocking { doneA.wait(timeout: .now() + .milliseconds(300)) } == .timedOut)
        release.signal()
        #expect(await blocking { doneA.wait(timeout: .now() + 10) } == .success)
        if !bFinished { _ = await blocking { doneB.wait(timeout: .now() + 10) } }
        let text = String(decoding: outputB.withLock { $0 }, as: UTF8.self)
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:1\n"))
        #expect(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.count == 50)
        #expect(proxy.pollCounts.full == 4)
    }

    @Test func eachPlaylistsRoutesAreItsOwnAndNamedByTheirID() throws {
        let proxy = AdStrippingProxy(url: "http://origin.example/master.m3u8")
        let a = "http://origin.example/a/index.m3u8"
        let b = "http://origin.example/b/index.m3u8"
        let outA = String(decoding: proxy.media(try Self.window(a, first: 0, count: 2), playlistID: "a"), as: UTF8.self)
        let outB = String(decoding: proxy.media(try Self.window(b, first: 0, count: 2), playlistID: "b"), as: UTF8.self)
        let prefix = "/\(proxy.token.value)/s/"
        #expect(outA.contains(prefix + "a-1.ts\n"))
        #expect(outA.contains(prefix + "a-2.ts\n"))
        #expect(outB.contains(prefix + "b-1.ts\n"))
        #expect(proxy.streams.lookup("a-1", kind: .segment) == "http://origin.example/a/seg_0.ts?s=1")
        #expect(proxy.streams.lookup("b-2", kind: .segment) == "http://origin.example/b/seg_1.ts?s=1")
        #expect(proxy.streams.lookup("a-1", kind: .key) == nil)
        #expect(proxy.streams.lookup("c-1", kind: .segment) == nil)
        #expect(proxy.streams.lookup("1", kind: .playlist) == nil)
    }

    @Test func requestPathsParseIntoRoutes() {
        #expect(ProxyRoute(["master.m3u8"]) == .master)
        #expect(ProxyRoute(["p", "4.m3u8"]) == .playlist("4"))
        #expect(ProxyRoute(["s", "4-1b.ts"]) == .segment("4-1b"))
        #expect(ProxyRoute(["s", "4-1b"]) == .segment("4-1b"))
        #expect(ProxyRoute(["k", "4-2.key"]) == .key("4-2"))
        #expect(ProxyRoute(["r", "3"]) == .raw("3"))
        #expect(ProxyRoute(["slate", "4", "init.mp4"]) == .slateInit(playlist: "4"))
        #expect(ProxyRoute(["slate", "4", "1001.ts"]) == .slate(playlist: "4", sequence: "1001"))
        for path in [[], ["master.m3u8", "x"], ["p"], ["s", "a", "b"], ["x", "1"], ["slate", "4"]] {
            #expect(ProxyRoute(path) == nil, "\(path)")
        }
    }
}
