import HLSAdFilter
import HLSPlaylist
import Testing

/// Encrypted streams around an ad break: the KEY lines the filter writes come before the EXTINF of the first segment
/// they govern, the scope is closed over unencrypted slates and re-opened after them, every content segment is kept
/// and decrypts with the key and IV it had in the source.
@Suite struct KeyScopeTests {
    let url = "https://origin.example.com/vod/index.m3u8"

    /// Content under k1 (implicit IVs), an unencrypted two-segment ad, content under k1 again (re-stated by the
    /// source after the ad), then a key rotation to k2 inside a second, encrypted ad.
    static let encryptedWithBreaks = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:4
        #EXT-X-MEDIA-SEQUENCE:20
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k1.key"
        #EXTINF:4.000,
        c0.ts
        #EXTINF:4.000,
        c1.ts
        #EXT-X-CUE-OUT:8
        #EXT-X-KEY:METHOD=NONE
        #EXTINF:4.000,
        https://ads.example.org/a0.ts
        #EXTINF:4.000,
        https://ads.example.org/a1.ts
        #EXT-X-CUE-IN
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k1.key"
        #EXTINF:4.000,
        c2.ts
        #EXTINF:4.000,
        c3.ts
        #EXT-X-CUE-OUT:4
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k2.key"
        #EXTINF:4.000,
        https://ads.example.org/a2.ts
        #EXT-X-CUE-IN
        #EXTINF:4.000,
        c4.ts
        #EXTINF:4.000,
        c5.ts
        #EXT-X-ENDLIST

        """

    /// The same stream, live (no ENDLIST).
    static var live: String { String(encryptedWithBreaks.dropLast("#EXT-X-ENDLIST\n".count)) }

    @Test func vodRemovalWritesKeysBeforeTheEXTINFTheyGovern() throws {
        let source = try Playlist(Self.encryptedWithBreaks)
        let result = AdFilter().cleanVOD(source, url: url)
        #expect(pattern(result.decisions) == "ccaaccacc")
        let out = result.playlist
        let before = source.media(url: url)
        let after = out.media(url: url)
        // No content segment dropped, none added.
        let content = before.segments.filter { !$0.uri.contains("ads.example.org") }
        #expect(after.segments.map(\.uri) == content.map(\.uri))
        // Each decrypts as it did in the source: same key, same IV (explicit where the number moved).
        for (kept, original) in zip(after.segments, content) {
            #expect(effectiveKeys(kept) == effectiveKeys(original), "\(kept.rawURI)\n\(out.text)")
        }
        #expect(tagsBetweenEXTINFAndURI(out).isEmpty, "\(tagsBetweenEXTINFAndURI(out))\n\(out.text)")
        // The key lines made for c2 (its number moved from 24 to 22) sit after the DISCONTINUITY of the join and
        // before c2's EXTINF.
        let lines = out.lines.map(\.text)
        let c2 = try #require(lines.firstIndex(of: "c2.ts"))
        #expect(lines[c2 - 1] == "#EXTINF:4.000,")
        let k1 = "#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.example.com/k1.key\""
        #expect(lines[c2 - 2] == k1 + ",IV=0x00000000000000000000000000000018")
        #expect(lines[(c2 - 4)..<(c2 - 2)].contains("#EXT-X-DISCONTINUITY"))
        // c4 comes back under k2 (set inside the removed ad): the filter re-opens it before c4's EXTINF.
        let c4 = try #require(lines.firstIndex(of: "c4.ts"))
        #expect(lines[c4 - 1] == "#EXTINF:4.000,")
        #expect(lines[c4 - 2].hasPrefix("#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.example.com/k2.key\",IV=0x"))
        #expect(!out.text.contains("ads.example.org"))
        #expect(lintErrors(out, url: url).isEmpty, "\(lintErrors(out, url: url))")
    }

    @Test func vodRemovalClosesTheScopeBeforeTheEXTINFOfAClearSegment() throws {
        // Content under k1, an ad, then clear content: METHOD=NONE was inside the removed ad, so the filter writes it.
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-KEY:METHOD=AES-128,URI="k1.key",IV=0x000102030405060708090A0B0C0D0E0F
            #EXTINF:4.000,
            c0.ts
            #EXT-X-CUE-OUT:4
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4.000,
            a0.ts
            #EXT-X-CUE-IN
            #EXTINF:4.000,
            c1.ts
            #EXT-X-ENDLIST

            """
        let result = AdFilter().cleanVOD(try Playlist(text), url: url)
        let lines = result.playlist.lines.map(\.text)
        let c1 = try #require(lines.firstIndex(of: "c1.ts"))
        #expect(Array(lines[(c1 - 3)..<c1]) == ["#EXT-X-DISCONTINUITY", "#EXT-X-KEY:METHOD=NONE", "#EXTINF:4.000,"])
        #expect(result.playlist.media(url: url).segments.map(\.keys.isEmpty) == [false, true])
        #expect(tagsBetweenEXTINFAndURI(result.playlist).isEmpty)
    }

    @Test func liveSlatesCloseTheScopeAndContentReopensItBeforeEXTINF() throws {
        var filter = LiveAdFilter()
        let source = try Playlist(Self.live)
        let result = filter.filter(source, url: url)
        #expect(pattern(result.decisions) == "ccaaccacc")
        let out = result.playlist
        let before = source.media(url: url)
        let after = out.media(url: url)
        #expect(after.segments.count == before.segments.count)
        for (segment, (original, decision)) in zip(after.segments, zip(before.segments, result.decisions)) {
            if decision.isAd {
                #expect(segment.rawURI == "slate/\(original.mediaSequence).ts")
                #expect(segment.keys.isEmpty, "key scope open over \(segment.rawURI)\n\(out.text)")
            } else {
                #expect(segment.uri == original.uri)
                #expect(effectiveKeys(segment) == effectiveKeys(original), "\(segment.rawURI)\n\(out.text)")
            }
        }
        #expect(tagsBetweenEXTINFAndURI(out).isEmpty, "\(tagsBetweenEXTINFAndURI(out))\n\(out.text)")
        let lines = out.lines.map(\.text)
        // Closed by the filter before the first slate's EXTINF (the ad's own METHOD=NONE goes with the ad's lines)...
        let slate22 = try #require(lines.firstIndex(of: "slate/22.ts"))
        #expect(Array(lines[(slate22 - 2)..<slate22]) == ["#EXT-X-KEY:METHOD=NONE", "#EXTINF:4.000,"])
        // ...re-opened by the source's k1 line before c2, closed again before the slate of the encrypted ad...
        let slate26 = try #require(lines.firstIndex(of: "slate/26.ts"))
        #expect(Array(lines[(slate26 - 2)..<slate26]) == ["#EXT-X-KEY:METHOD=NONE", "#EXTINF:4.000,"])
        // ...and re-opened by the filter (k2, set by the ad's line the slate replaced) before c4's EXTINF.
        let c4 = try #require(lines.firstIndex { $0.hasSuffix("c4.ts") })
        #expect(
            Array(lines[(c4 - 2)..<c4]) == [
                "#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.example.com/k2.key\"", "#EXTINF:4.000,",
            ])
        #expect(lintErrors(out, url: url).isEmpty, "\(lintErrors(out, url: url))")
    }
}
