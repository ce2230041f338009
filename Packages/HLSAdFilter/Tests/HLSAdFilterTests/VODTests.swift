import HLSAdFilter
import HLSPlaylist
import Testing

@Suite struct VODTests {
    let url = "https://origin.example.com/vod/index.m3u8"

    @Test func keysAreReemittedWithExplicitIVsAndJoinsGetDiscontinuities() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:10
            #EXT-X-KEY:METHOD=AES-128,URI="k1.key"
            #EXTINF:4.000,
            c0.ts
            #EXT-X-CUE-OUT:8
            #EXT-X-KEY:METHOD=AES-128,URI="k2.key"
            #EXTINF:4.000,
            a0.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4.000,
            a1.ts
            #EXT-X-CUE-IN
            #EXTINF:4.000,
            c1.ts
            #EXTINF:4.000,
            c2.ts
            #EXT-X-ENDLIST

            """
        let playlist = try Playlist(text)
        let result = AdFilter().cleanVOD(playlist, url: url)
        #expect(pattern(result.decisions) == "caacc")
        #expect(result.breaks.count == 1)
        #expect(result.breaks.first?.duration == 8)
        let before = playlist.media(url: url)
        let after = result.playlist.media(url: url)
        #expect(after.segments.map(\.rawURI) == ["c0.ts", "c1.ts", "c2.ts"])
        // c1 was unencrypted in the source (METHOD=NONE inside the removed run) and stays so.
        #expect(after.segments[1].keys.isEmpty)
        #expect(after.segments[1].discontinuity)
        #expect(!after.segments[2].discontinuity)
        #expect(after.segments[0].keys.first?.uri == before.segments[0].keys.first?.uri)
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(lintErrors(result.playlist, url: url))")
        #expect(!result.playlist.text.contains("k2.key"))
    }

    @Test func implicitIVsBecomeExplicitWhenSequenceNumbersShift() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:10
            #EXT-X-KEY:METHOD=AES-128,URI="k1.key"
            #EXTINF:4.000,
            c0.ts
            #EXT-X-CUE-OUT:4
            #EXTINF:4.000,
            a0.ts
            #EXT-X-CUE-IN
            #EXTINF:4.000,
            c1.ts
            #EXT-X-ENDLIST

            """
        let result = AdFilter().cleanVOD(try Playlist(text), url: url)
        let after = result.playlist.media(url: url)
        #expect(after.segments.count == 2)
        // c1 had media sequence 12 in the source; it is 11 in the output, so its IV must say 12.
        #expect(after.segments[1].mediaSequence == 11)
        let iv = try #require(after.segments[1].keys.first?.iv)
        #expect(iv == [UInt8](repeating: 0, count: 15) + [12])
        #expect(after.segments[0].keys.first?.iv == nil)
    }

    @Test func byteRangesBecomeExplicitAndMapsAreReemitted() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:4.000,
            #EXT-X-BYTERANGE:1000@0
            content.mp4
            #EXT-X-CUE-OUT:4
            #EXT-X-MAP:URI="ad-init.mp4"
            #EXTINF:4.000,
            #EXT-X-BYTERANGE:500@0
            ad.mp4
            #EXT-X-CUE-IN
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:4.000,
            #EXT-X-BYTERANGE:1000@1000
            content.mp4
            #EXTINF:4.000,
            #EXT-X-BYTERANGE:1000
            content.mp4
            #EXT-X-ENDLIST

            """
        let result = AdFilter().cleanVOD(try Playlist(text), url: url)
        let out = result.playlist.text
        #expect(!out.contains("ad-init.mp4"))
        #expect(out.contains("#EXT-X-BYTERANGE:1000@2000"))
        let after = result.playlist.media(url: url)
        #expect(after.segments.map { $0.byteRange?.offset } == [0, 1000, 2000])
        #expect(after.segments.allSatisfy { $0.map?.uri == "https://origin.example.com/vod/init.mp4" })
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(lintErrors(result.playlist, url: url))")
    }

    @Test func prerollRemovalKeepsDiscontinuitySequenceAndDates() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXT-X-DISCONTINUITY-SEQUENCE:3
            #EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z
            #EXTINF:4.000,
            https://ads.example.org/pre0.ts
            #EXTINF:4.000,
            https://ads.example.org/pre1.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-DATERANGE:ID="chapter",START-DATE="2026-01-01T00:00:08.000Z",DURATION=8.0
            #EXTINF:4.000,
            https://cdn.example.com/c0.ts
            #EXTINF:4.000,
            https://cdn.example.com/c1.ts
            #EXTINF:4.000,
            https://cdn.example.com/c2.ts
            #EXTINF:4.000,
            https://cdn.example.com/c3.ts
            #EXT-X-ENDLIST

            """
        let playlist = try Playlist(text)
        let result = AdFilter().cleanVOD(playlist, url: url)
        #expect(pattern(result.decisions) == "aacccc")
        #expect(result.decisions[0].rule == .adHost)
        let before = playlist.media(url: url)
        let after = result.playlist.media(url: url)
        #expect(after.segments.first?.discontinuitySequence == before.segments[2].discontinuitySequence)
        #expect(after.segments.first?.programDateTime?.text == "2026-01-01T00:00:08.000Z")
        #expect(after.dateRanges.count == 1)
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(lintErrors(result.playlist, url: url))")
    }

    @Test func anAllAdPlaylistIsLeftAsItIsWithAWarning() throws {
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-CUE-OUT:8\n#EXTINF:4,\na.ts\n#EXTINF:4,\nb.ts\n#EXT-X-ENDLIST\n"
        let playlist = try Playlist(text)
        let result = AdFilter().cleanVOD(playlist)
        #expect(result.playlist.write() == playlist.write())
        #expect(result.warnings.contains { $0.contains("every segment is an ad") })
    }

    @Test func aPlaylistWithoutAdsIsWrittenBackByteForByte() throws {
        let text =
            "#EXTM3U\r\n#EXT-X-TARGETDURATION:4\r\n#EXTINF:4,\r\na.ts\r\n# a comment\r\n#EXTINF:4,\r\nb.ts\r\n#EXT-X-ENDLIST"
        let playlist = try Playlist(text)
        #expect(AdFilter().cleanVOD(playlist).playlist.write() == playlist.write())
    }
}
