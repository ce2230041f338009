import Foundation
import HLSPlaylist
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

/// Polls through the server: a plain-http playlist is fetched and answered on a dispatch queue in one blocking call;
/// a redirect or a failure worth retrying falls back to the async path, which follows and retries; a window that
/// moves on is answered incrementally, the same bytes as a poll filtered in full.
@Suite struct ProxyPollPathTests {
    func makeProxy(_ origin: ProxyTestOrigin, path: String, incremental: Bool = true, retries: Int = 0)
        -> AdStrippingProxy
    {
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = retries
        options.fetch.retryBackoff = 0.1
        options.incrementalPolls = incremental
        return AdStrippingProxy(url: origin.base + path, options: options)
    }

    /// The URI lines of a served playlist.
    static func uris(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    @Test func aRedirectedPlaylistIsFollowedAndResolvedAgainstTheFinalURL() async throws {
        let origin = try await ProxyTestOrigin()
        origin.redirect("/live.m3u8", to: origin.base + "/moved/live.m3u8")
        origin.set("/moved/live.m3u8", ProxyTests.liveWindow(first: 0, ads: []))
        origin.set("/moved/seg1.ts?token=abc", bytes: [1, 2, 3], contentType: "video/mp2t")
        let proxy = makeProxy(origin, path: "/live.m3u8")
        let url = try await proxy.start()
        let reply = try await ProxyTestClient.get(url)
        #expect(reply.status == 200)
        let uris = Self.uris(reply.text)
        #expect(uris.count == 5)
        // The second segment's route leads to /moved/seg1.ts (relative to the final URL, not the first one).
        let host = url.components(separatedBy: "/").prefix(3).joined(separator: "/")
        let segment = try await ProxyTestClient.get(host + uris[1])
        #expect(segment.status == 200)
        #expect(segment.body == [1, 2, 3])
        #expect(origin.log.withLock { $0 }.contains("/moved/seg1.ts?token=abc"))
        await proxy.stop()
        await origin.stop()
    }

    @Test func aFailureWorthRetryingIsRetriedByTheAsyncPath() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/live.m3u8", ProxyTests.liveWindow(first: 0, ads: []))
        let proxy = makeProxy(origin, path: "/live.m3u8", retries: 3)
        let url = try await proxy.start()
        // The stream's first fetch takes the async path (it has the first-fetch deadline); later polls go blocking.
        #expect(try await ProxyTestClient.get(url).status == 200)
        origin.set("/live.m3u8", "busy", contentType: "text/plain", status: 503)
        Task {
            try await Task.sleep(for: .milliseconds(30))
            origin.set("/live.m3u8", ProxyTests.liveWindow(first: 0, ads: []))
        }
        let reply = try await ProxyTestClient.get(url)
        #expect(reply.status == 200)
        #expect(Self.uris(reply.text).count == 5)
        // The first fetch, the blocking attempt and at least one retry after the origin recovered.
        #expect(origin.log.withLock { $0 }.filter { $0 == "/live.m3u8" }.count >= 3)
        await proxy.stop()
        await origin.stop()
    }

    @Test func aNonRetriedFailureIsA502AtOnce() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set("/live.m3u8", "gone", contentType: "text/plain", status: 410)
        let proxy = makeProxy(origin, path: "/live.m3u8", retries: 3)
        let url = try await proxy.start()
        let reply = try await ProxyTestClient.get(url)
        #expect(reply.status == 502)
        #expect(reply.text.contains("410"))
        #expect(origin.log.withLock { $0 }.filter { $0 == "/live.m3u8" }.count == 1)
        await proxy.stop()
        await origin.stop()
    }

    /// A live window that moves on, polled through two proxies' servers (incremental polls on and off): the same
    /// playlists (but for the session token). The incremental proxy filtered in full the first poll and the polls
    /// from the one where the break came in to the one where it ended (a window ending in an ad, or adding marker
    /// lines, is never answered incrementally), and otherwise only when its last full poll was 10 s ago or more.
    @Test func aMovingWindowIsAnsweredIncrementallyWithTheSameBytes() async throws {
        let origin = try await ProxyTestOrigin()
        let ads: Set<Int> = [12, 13, 14]
        origin.set("/live.m3u8", ProxyTests.liveWindow(first: 0, ads: ads, count: 8))
        let incremental = makeProxy(origin, path: "/live.m3u8")
        let full = makeProxy(origin, path: "/live.m3u8", incremental: false)
        let incrementalURL = try await incremental.start()
        let fullURL = try await full.start()
        let clock = ContinuousClock()
        var lastFull = clock.now
        for first in 0..<12 {
            origin.set("/live.m3u8", ProxyTests.liveWindow(first: first, ads: ads, count: 8))
            let before = incremental.pollCounts
            let asked = clock.now
            let a = try await ProxyTestClient.get(incrementalURL)
            let after = incremental.pollCounts
            #expect(after.full + after.incremental == before.full + before.incremental + 1, "poll \(first)")
            if first == 0 || (5...8).contains(first) {
                #expect(after.full == before.full + 1, "poll \(first) must be filtered in full")
            } else if asked - lastFull < .seconds(9) {
                #expect(after.incremental == before.incremental + 1, "poll \(first) should be incremental")
            }
            if after.full > before.full { lastFull = asked }
            let b = try await ProxyTestClient.get(fullURL)
            #expect(a.status == 200)
            #expect(
                a.text.replacingOccurrences(of: incremental.token.value, with: full.token.value) == b.text,
                "poll \(first)")
        }
        #expect(incremental.pollCounts.incremental >= 1)
        #expect(full.pollCounts.incremental == 0)
        #expect(full.pollCounts.full == 12)
        await incremental.stop()
        await full.stop()
        await origin.stop()
    }

    /// A window with a PROGRAM-DATE-TIME on every segment is answered incrementally (each segment's date line goes
    /// with it); one with dates on only some segments is filtered in full (the first segment's date may be made
    /// up); both give the bytes of a proxy without incremental polls.
    @Test func datedWindowsAreIncrementalOnlyWhenEverySegmentHasItsDate() throws {
        func window(first: Int, datedEvery step: Int) -> [UInt8] {
            MediaPlaylistText.window(
                first: first, count: 6, targetDuration: 2, duration: "2.000", uri: { "seg\($0).ts" },
                tags: { m in
                    var tags = ""
                    if m % step == 0 {
                        let second = 2 * m % 60
                        let time = "10:\(10 + 2 * m / 60):\(second < 10 ? "0" : "")\(second)"
                        tags += "#EXT-X-PROGRAM-DATE-TIME:2026-11-29T\(time).000Z\n"
                    }
                    return m == 20 ? tags + "#EXT-X-CUE-OUT:4\n" : tags
                }
            ).bytes
        }
        for step in [1, 3] {
            let url = "http://origin.example/live.m3u8"
            let incremental = AdStrippingProxy(url: url)
            var options = AdStrippingProxy.Options()
            options.incrementalPolls = false
            let full = AdStrippingProxy(url: url, options: options)
            for first in 10..<30 {
                let a = try incremental.poll(bytes: window(first: first, datedEvery: step), url: url)
                let b = try full.poll(bytes: window(first: first, datedEvery: step), url: url)
                let swapped = String(decoding: a, as: UTF8.self).replacingOccurrences(
                    of: incremental.token.value, with: full.token.value)
                #expect(swapped == String(decoding: b, as: UTF8.self), "dates every \(step), poll \(first)")
            }
            if step == 1 {
                #expect(incremental.pollCounts.incremental >= 10, "\(incremental.pollCounts)")
            } else {
                #expect(incremental.pollCounts.incremental == 0, "\(incremental.pollCounts)")
            }
        }
    }
}
