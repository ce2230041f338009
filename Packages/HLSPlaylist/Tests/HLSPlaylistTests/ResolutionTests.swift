import Foundation
import HLSPlaylist
import Testing

@Suite struct ResolutionTests {
    /// RFC 3986 §5.4.1 and §5.4.2, every example.
    @Test(arguments: [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"), ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"), ("g#s/./x", "http://a/b/c/g#s/./x"),
        ("g#s/../x", "http://a/b/c/g#s/../x"), ("http:g", "http:g"),
    ])
    func rfc3986Examples(reference: String, expected: String) {
        let base = URIReference("http://a/b/c/d;p?q")
        #expect(URIReference(reference).resolved(against: base).description == expected)
        // The media view resolves the same way.
        let p = try? Playlist("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n\(reference)\n")
        if !reference.isEmpty, !reference.hasPrefix("#") {
            #expect(p?.media(url: "http://a/b/c/d;p?q").segments.first?.uri == expected)
        }
    }

    @Test func variablesImportQueryParamAndValue() throws {
        let parent = try Playlist(bytes: try Fixtures.bytes("valid/multivariant-define.m3u8"))
        let mv = parent.multivariant(url: "https://origin.example/master.m3u8")
        #expect(mv.variables.values == ["cdn": "https://cdn.example.com/live"])
        #expect(mv.variants.first?.uri == "https://cdn.example.com/live/360p.m3u8")
        #expect(mv.iFrameVariants.first?.uri == "https://cdn.example.com/live/360p-iframes.m3u8")
        let media = try Playlist(bytes: try Fixtures.bytes("valid/variables-import.m3u8"))
            .media(url: "https://origin.example/a/media.m3u8?x=1&token=t%20k", parent: mv.variables)
        #expect(media.diagnostics.isEmpty)
        #expect(
            media.segments.map(\.uri) == [
                "https://cdn.example.com/live/seg1.ts?token=t%20k", "https://cdn.example.com/live/seg2.ts?token=t%20k",
            ])
        let missing = try Playlist(bytes: try Fixtures.bytes("valid/variables-import.m3u8")).media(url: nil)
        #expect(missing.diagnostics.filter { $0.error.code == .undefinedVariable }.count == 6)
    }

    @Test func segmentStateInEffect() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("valid/every-media-tag.m3u8"))
        let m = p.media(url: "https://origin.example/live/index.m3u8")
        #expect(m.segments.count == 3)
        #expect(m.segments.map(\.mediaSequence) == [102, 103, 104])  // 100 + 2 skipped
        #expect(m.segments.map(\.discontinuitySequence) == [3, 3, 4])
        #expect(
            m.segments.map(\.byteRange) == [
                ByteRange(length: 1000, offset: 720), ByteRange(length: 2000, offset: 1720), nil,
            ])
        #expect(m.segments.map(\.gap) == [false, false, true])
        #expect(m.segments.allSatisfy { $0.keys.first?.uri == "https://cdn.example.com/key" })
        #expect(m.segments.allSatisfy { $0.map?.uri == "https://cdn.example.com/init.mp4" })
        #expect(
            m.segments.map { $0.programDateTime?.text } == [
                "2026-01-02T03:04:05.000Z", "2026-01-02T03:04:11.000Z", nil,
            ])
        #expect(m.segments.map(\.bitrate) == [1200, 1200, 1200])
        #expect(m.segments[0].title == "first segment")
        #expect(m.segments[0].lineRange == 12..<20)
        #expect(
            m.trailingParts.map(\.byteRange) == [
                ByteRange(length: 500, offset: 0), ByteRange(length: 500, offset: 500), nil,
            ])
        #expect(
            m.trailingParts.map(\.uri) == [
                "https://origin.example/live/part1.mp4", "https://origin.example/live/part1.mp4",
                "https://origin.example/live/part3.mp4",
            ])
        #expect(m.trailingParts.map(\.mediaSequence) == [105, 105, 105])
        #expect(m.partCount == 3)
        #expect(m.recentlyRemovedDateRanges == ["old1", "old2"])
        #expect(m.dateRanges.first?.clientAttributes.map(\.name) == ["X-AD-ID", "X-COUNT"])
        #expect(m.dateRanges.first?.scte35Out == [0xFC, 0x00, 0x2F, 0, 0, 0, 0, 0, 0xFF])
        let ll = try Playlist(bytes: try Fixtures.bytes("valid/ll-hls.m3u8")).media()
        #expect(ll.segments.last?.parts.count == 12)
        #expect(ll.segments.last?.parts.map(\.mediaSequence).allSatisfy { $0 == 271 } == true)
        #expect(ll.trailingParts.count == 3)
        #expect(
            ll.segments.map { $0.programDateTime?.text } == [
                "2019-02-14T02:13:36.106Z", "2019-02-14T02:13:40.106Z", "2019-02-14T02:13:44.106Z",
                "2019-02-14T02:13:48.106Z", "2019-02-14T02:13:52.106Z", "2019-02-14T02:13:56.106Z",
            ])
        let enc = try Playlist(bytes: try Fixtures.bytes("valid/spec-encrypted-media.m3u8")).media()
        #expect(
            enc.segments.map { $0.keys.first?.uri ?? "" } == [
                "https://priv.example.com/key.php?r=52", "https://priv.example.com/key.php?r=52",
                "https://priv.example.com/key.php?r=52", "https://priv.example.com/key.php?r=53",
            ])
        #expect(enc.segments.map(\.mediaSequence) == [7794, 7795, 7796, 7797])
    }

    @Test func dateTimes() {
        #expect(DateTime("1970-01-01T00:00:00Z")?.secondsSince1970 == 0)
        #expect(DateTime("2010-02-19T14:54:23.031+08:00")?.secondsSince1970 == 1_266_562_463.031)
        #expect(DateTime("2010-02-19T14:54:23.031+0800")?.secondsSince1970 == 1_266_562_463.031)
        #expect(DateTime("2024-02-29T23:59:59-05:00")?.secondsSince1970 == 1_709_269_199)
        #expect(DateTime("2024-13-01T00:00:00Z") == nil)
        #expect(DateTime("garbage") == nil)
        #expect(DateTime(secondsSince1970: 1_266_562_463.031).text == "2010-02-19T06:54:23.031Z")
    }
}
