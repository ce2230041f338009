import HLSAdFilter
import HLSPlaylist
import Testing

/// Server-side insertion as stitchers deliver it: per-ad date ranges with a slate filling the avail, encrypted
/// content around clear ads, and the decoys that must stay content.
@Suite struct SSAITests {
    let url = "https://origin.example.com/live/index.m3u8"

    /// An avail of two ads, each with its ad creative signaling date range, and a slate (no date range) filling the
    /// rest of the break from the stitcher's host: all of it goes, every content segment stays, each decision says why.
    @Test func adDateRangesAndTheSlateFillingTheAvail() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:398
            #EXT-X-PROGRAM-DATE-TIME:2026-02-10T19:20:00.000Z
            #EXTINF:4.000,
            index_1_398.ts?m=1676054627
            #EXTINF:4.000,
            index_1_399.ts?m=1676054627
            #EXTINF:4.000,
            index_1_400.ts?m=1676054627
            #EXT-X-DISCONTINUITY
            #EXT-X-DATERANGE:ID="401-1",START-DATE="2026-02-10T19:20:12.000Z",DURATION=8,X-AD-CREATIVE-SIGNALING="e30="
            #EXT-X-PROGRAM-DATE-TIME:2026-02-10T19:20:12.000Z
            #EXTINF:4.000,
            https://segments.stitcher.example/tm/asset-a/0.ts
            #EXTINF:4.000,
            https://segments.stitcher.example/tm/asset-a/1.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-DATERANGE:ID="401-2",START-DATE="2026-02-10T19:20:20.000Z",DURATION=4,X-AD-CREATIVE-SIGNALING="e30="
            #EXT-X-PROGRAM-DATE-TIME:2026-02-10T19:20:20.000Z
            #EXTINF:4.000,
            https://segments.stitcher.example/tm/asset-b/0.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-PROGRAM-DATE-TIME:2026-02-10T19:20:24.000Z
            #EXTINF:4.000,
            https://segments.stitcher.example/tm/slate/0.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-PROGRAM-DATE-TIME:2026-02-10T19:20:28.000Z
            #EXTINF:4.000,
            index_1_401.ts?m=1676054627
            #EXTINF:4.000,
            index_1_402.ts?m=1676054627
            #EXTINF:4.000,
            index_1_403.ts?m=1676054627
            #EXTINF:4.000,
            index_1_404.ts?m=1676054627
            #EXT-X-ENDLIST

            """
        let playlist = try Playlist(text)
        let result = AdFilter().cleanVOD(playlist, url: url)
        #expect(pattern(result.decisions) == "cccaaaacccc")
        #expect(result.decisions[3...5].allSatisfy { $0.rule == .adDateRange }, "\(result.decisions.map(\.reason))")
        #expect(result.decisions[6].rule == .originChange)
        #expect(result.decisions.filter(\.isAd).allSatisfy { !$0.reason.isEmpty })
        let kept = result.playlist.media(url: url).segments.map(\.rawURI)
        #expect(
            kept == (398...400).map { "index_1_\($0).ts?m=1676054627" }
                + (401...404).map { "index_1_\($0).ts?m=1676054627" })
        #expect(!result.playlist.text.contains("X-AD-CREATIVE-SIGNALING"))
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(lintErrors(result.playlist, url: url))")
    }

    /// Encrypted content around a clear pod (no markers): the key scope is closed over the ads and re-opened after,
    /// and no content segment is dropped or loses its key.
    @Test func encryptedContentAroundClearAds() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.net/k1",IV=0x00000000000000000000000000000001
            #EXTINF:4.000,
            https://cdn.example.net/c0.ts
            #EXTINF:4.000,
            https://cdn.example.net/c1.ts
            #EXTINF:4.000,
            https://cdn.example.net/c2.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4.000,
            ads/a0.ts
            #EXT-X-DISCONTINUITY
            #EXTINF:4.000,
            ads/b0.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.net/k1",IV=0x00000000000000000000000000000001
            #EXTINF:4.000,
            https://cdn.example.net/c3.ts
            #EXTINF:4.000,
            https://cdn.example.net/c4.ts
            #EXTINF:4.000,
            https://cdn.example.net/c5.ts
            #EXT-X-ENDLIST

            """
        let playlist = try Playlist(text)
        let result = AdFilter().cleanVOD(playlist, url: url)
        #expect(pattern(result.decisions) == "cccaaccc")
        let after = result.playlist.media(url: url)
        #expect(after.segments.map(\.uri) == (0...5).map { "https://cdn.example.net/c\($0).ts" })
        #expect(after.segments.allSatisfy { $0.keys.first?.uri == "https://keys.example.net/k1" })
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(lintErrors(result.playlist, url: url))")
    }

    /// Decoys stay content: a CDN switch without a discontinuity, a chapter date range with a client attribute, a
    /// long stretch from a second CDN after a discontinuity, and a non-ad SCTE-35 time signal.
    @Test func decoysStayContent() throws {
        var text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z
            #EXT-X-DATERANGE:ID="chapter-1",CLASS="com.example.chapter",START-DATE="2026-01-01T00:00:00.000Z",DURATION=8,X-COM-EXAMPLE-TITLE="Intro"

            """
        for n in 0..<4 { text += "#EXTINF:4.000,\nhttps://cdn-a.example.net/s\(n).ts\n" }
        for n in 4..<8 { text += "#EXTINF:4.000,\nhttps://cdn-b.example.net/s\(n).ts\n" }
        text += "#EXT-X-DISCONTINUITY\n"
        for n in 8..<100 { text += "#EXTINF:4.000,\nhttps://cdn-c.example.net/s\(n).ts\n" }
        text += "#EXT-X-ENDLIST\n"
        let result = AdFilter().cleanVOD(try Playlist(text), url: url)
        #expect(result.decisions.allSatisfy { !$0.isAd }, "\(result.decisions.filter(\.isAd).map(\.reason))")
        #expect(result.playlist.media(url: url).segments.count == 100)
    }

    /// A DAI-style pod on the stitcher's own host (relative pod paths): each decision names the pod's path and the
    /// content's; the same path change without discontinuities, or longer than any pod, stays content.
    @Test func podPathsOnTheContentHost() throws {
        let url = "https://dai.example.com/linear/hls/event/E41/master/v3/index.m3u8"
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        for n in 0..<3 { text += "#EXTINF:6,\nseg_\(n).ts\n" }
        text += "#EXT-X-DISCONTINUITY\n"
        for n in 0..<2 { text += "#EXTINF:6,\n../../../../../pods/7/ad/a0/\(n).ts\n" }
        text += "#EXT-X-DISCONTINUITY\n"
        for n in 3..<6 { text += "#EXTINF:6,\nseg_\(n).ts\n" }
        let decisions = AdFilter().explain(try Playlist(text + "#EXT-X-ENDLIST\n"), url: url)
        #expect(pattern(decisions) == "cccaaccc")
        for d in decisions where d.isAd {
            #expect(d.rule == .pathChange)
            #expect(
                d.reason == "between discontinuities and served from dai.example.com/linear/pods/7/ad/a0/ on the "
                    + "content's host, not the content's path dai.example.com/linear/hls/event/E41/master/v3/")
        }
        // No discontinuities: a path change alone is content.
        let plain = text.split(separator: "\n").filter { $0 != "#EXT-X-DISCONTINUITY" }.joined(separator: "\n") + "\n"
        #expect(pattern(AdFilter().explain(try Playlist(plain + "#EXT-X-ENDLIST\n"), url: url)) == "cccccccc")
        // Longer than any pod (over 300 s): content.
        var long = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        for n in 0..<60 { long += "#EXTINF:6,\nseg_\(n).ts\n" }
        long += "#EXT-X-DISCONTINUITY\n"
        for n in 0..<51 { long += "#EXTINF:6,\nother/\(n).ts\n" }
        long += "#EXT-X-DISCONTINUITY\n"
        for n in 60..<120 { long += "#EXTINF:6,\nseg_\(n).ts\n" }
        let longDecisions = AdFilter().explain(try Playlist(long + "#EXT-X-ENDLIST\n"), url: url)
        #expect(longDecisions.allSatisfy { !$0.isAd })
    }
}
