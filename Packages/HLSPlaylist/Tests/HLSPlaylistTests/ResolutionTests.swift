import Foundation
import HLSPlaylist
import TestSupport
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

    /// Segment and variant URIs are resolved when first read; the eight-bytes-at-a-time shape scan must agree with
    /// the full §5.2 algorithm, also where a `/.` or `:` straddles two eight-byte words.
    @Test(arguments: [
        "seg1.ts", "abcdefg/.hidden/x.ts", "abcdefgh/./x.ts", "abcdefg/../x.ts", "abcdefghijklmno/x.ts",
        "abcdefghijklmnop.ts", "abcdefg:h/x.ts", "a/b/c/d/e/f/g/h/i.ts", "x.ts?token=a/./b", "dir./x.ts", "d/.x",
        "http://cdn.example/a/../b.ts", "https://cdn.example/v/seg.ts", "//other.example/x.ts", "/abs/x.ts",
        "?q=1", "é/ü.ts", "a b.ts",
    ])
    func lazySegmentURIsMatchTheFullAlgorithm(reference: String) throws {
        let base = "https://origin.example/live/sub/index.m3u8?x=1"
        let expected = URIReference(reference).resolved(against: URIReference(base)).description
        let media = try Playlist("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n\(reference)\n").media(url: base)
        let segment = try #require(media.segments.first)
        #expect(segment.uri == expected)
        #expect(segment.rawURI == reference)
        let multivariant = try Playlist("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(reference)\n").multivariant(
            url: base)
        #expect(multivariant.variants.first?.uri == expected)
        #expect(multivariant.variants.first?.rawURI == reference)
    }

    /// Every reference over a small alphabet (up to five characters, bare and after a 24-byte absolute prefix, so
    /// `/.`, `{` and `:` fall at every place in and across eight-byte words) resolves as the full §5.2 algorithm
    /// resolves it.
    @Test func everyShortReferenceResolvesAsTheFullAlgorithm() async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            let base = "https://origin.example/live/sub/index.m3u8?x=1"
            let alphabet: [Character] = ["a", "/", ".", ":", "{", "?"]
            var references: [String] = []
            var current = [""]
            for _ in 1...5 {
                current = current.flatMap { prefix in alphabet.map { prefix + String($0) } }
                references += current
            }
            var checked = 0
            for suffix in references {
                for reference in [suffix, "https://cdn.example.com/" + suffix] where !reference.hasPrefix("#") {
                    let expected = URIReference(reference).resolved(against: URIReference(base)).description
                    let playlist = try Playlist("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n\(reference)\n")
                    let uri = playlist.media(url: base).segments.first?.uri
                    if uri != expected {
                        Issue.record("\(reference): \(uri ?? "nil") != \(expected)")
                        return
                    }
                    checked += 1
                }
            }
            #expect(checked == 2 * references.count)
        }
    }

    @Test func lazyURIsKeepValueSemantics() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg1.ts\n#EXTINF:6,\nseg2.ts\n"
        let url = "https://cdn.example/live/index.m3u8"
        let a = try Playlist(text).media(url: url)
        let b = try Playlist(text).media(url: url)
        #expect(a == b)
        #expect(a.segments[0].hashValue == b.segments[0].hashValue)
        var s = a.segments[0]
        // Changing the raw URI leaves the resolved one as it was, and the other way round.
        s.rawURI = "other.ts"
        #expect(s.uri == "https://cdn.example/live/seg1.ts")
        #expect(s.rawURI == "other.ts")
        #expect(s != a.segments[0])
        s.uri = "https://elsewhere.example/x.ts"
        #expect(s.uri == "https://elsewhere.example/x.ts")
        #expect(s.rawURI == "other.ts")
        // A segment whose URI was set to the value it already had still equals the original.
        var t = a.segments[1]
        t.uri = "https://cdn.example/live/seg2.ts"
        #expect(t == a.segments[1])
        #expect(t.hashValue == a.segments[1].hashValue)
        // Without a base URL the URI is the reference as written.
        #expect(try Playlist(text).media().segments.map(\.uri) == ["seg1.ts", "seg2.ts"])
    }

    /// Dot-segment references with queries resolve lazily (a resolved directory before the reference's last
    /// segment and query) and keep value semantics; implicit byte-range offsets follow the resolved URI; dates
    /// parsed in place or derived equal the same dates made from text.
    @Test func lazyDotSegmentURIsAndDatesKeepValueSemantics() throws {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z\n"
            + "#EXTINF:6,\n#EXT-X-BYTERANGE:100@0\n../media/a.ts?t=1\n#EXTINF:6,\n#EXT-X-BYTERANGE:50\n"
            + "../x/../media/a.ts?t=1\n#EXTINF:6,\n#EXT-X-BYTERANGE:70\n../media/a.ts?t=2\n#EXT-X-ENDLIST\n"
        let url = "https://cdn.example/live/v1/index.m3u8"
        let a = try Playlist(text).media(url: url)
        let b = try Playlist(bytes: Array(text.utf8)).media(url: url)
        #expect(a == b)
        #expect(a.segments.map(\.hashValue) == b.segments.map(\.hashValue))
        #expect(
            a.segments.map(\.uri) == [
                "https://cdn.example/live/media/a.ts?t=1", "https://cdn.example/live/media/a.ts?t=1",
                "https://cdn.example/live/media/a.ts?t=2",
            ])
        // The second segment's range continues the first (same resolved URI); the third's URI differs.
        #expect(a.segments.map { $0.byteRange?.offset } == [0, 100, 0])
        // A range without an offset continues only the segment right before it, and only when that one has a
        // range of the same resource.
        let gaps = try Playlist(
            "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:10@5\nm.ts\n#EXTINF:6,\nm.ts\n"
                + "#EXTINF:6,\n#EXT-X-BYTERANGE:20\nm.ts\n#EXTINF:6,\n#EXT-X-BYTERANGE:30\nm.ts\n"
                + "#EXTINF:6,\n#EXT-X-BYTERANGE:40\nn.ts\n#EXTINF:6,\n#EXT-X-BYTERANGE:50\nn.ts\n"
        ).media(url: url)
        #expect(gaps.segments.map { $0.byteRange?.offset } == [5, nil, 0, 20, 0, 40])
        var s = a.segments[0]
        s.rawURI = "other.ts"
        #expect(s.uri == "https://cdn.example/live/media/a.ts?t=1")
        #expect(s != a.segments[0])
        var t = a.segments[1]
        t.uri = "https://cdn.example/live/media/a.ts?t=1"
        #expect(t == a.segments[1])
        #expect(t.hashValue == a.segments[1].hashValue)
        // Dates: the parsed one keeps its text; derived ones are rendered; both equal dates made from text.
        #expect(
            a.segments.map { $0.programDateTime?.text } == [
                "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:06.000Z", "2026-01-01T00:00:12.000Z",
            ])
        for segment in a.segments {
            let date = try #require(segment.programDateTime)
            let again = try #require(DateTime(date.text))
            #expect(date == again)
            #expect(date.hashValue == again.hashValue)
        }
        var d = try #require(a.segments[1].programDateTime)
        d.secondsSince1970 += 1
        #expect(d.text == "2026-01-01T00:00:06.000Z")
        d.text = "2026-01-01T00:00:07.000Z"
        #expect(d == DateTime("2026-01-01T00:00:07.000Z"))
        #expect(DateTime(secondsSince1970: 0) != DateTime("1970-01-01T00:00:00Z"))
        #expect(DateTime(secondsSince1970: 0) == DateTime("1970-01-01T00:00:00.000Z"))
    }

    /// EXT-X-BYTERANGE and EXT-X-PROGRAM-DATE-TIME lines, read straight from the buffer when well formed, give
    /// the same values and diagnostics as the general tag path (which reads the malformed and space-padded ones).
    @Test func segmentTagFastPathMatchesTheGeneralPath() throws {
        let lines = [
            "#EXT-X-BYTERANGE:100@5", "#EXT-X-BYTERANGE:100@5 ", "#EXT-X-BYTERANGE:7", "#EXT-X-BYTERANGE:x",
            "#EXT-X-BYTERANGE:1@", "#EXT-X-BYTERANGE:@1", "#EXT-X-BYTERANGE:", "#EXT-X-BYTERANGE",
            "#EXT-X-BYTERANGE:99999999999999999999999", "#EXT-X-BYTERANGES:1", "#EXT-X-BYTERANGE:1@2\r",
            "#EXT-X-BYTERANGE:18446744073709551615@18446744073709551616", "#EXT-X-BYTERANGE:1@2@3",
            "#EXT-X-BYTERANGE:1x", "#EXT-X-BYTERANGE:00000000000000000000001", "#EXT-X-BYTERANGE:18446744073709551615",
            "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z", "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00.000Z\t",
            "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T01:00:00+01:00", "#EXT-X-PROGRAM-DATE-TIME:2026-13-01T00:00:00Z",
            "#EXT-X-PROGRAM-DATE-TIME:", "#EXT-X-PROGRAM-DATE-TIMEX:2026-01-01T00:00:00Z",
            "#EXT-X-PROGRAM-DATE-TIME: 2026-01-01T00:00:00Z",
        ]
        for line in lines {
            // Line 2 takes the fast path when it applies; line 1 always takes the general path (and is reported
            // as a missing header, the one diagnostic more).
            let p = try Playlist("#EXTM3U\n\(line)\n")
            let general = try Playlist("\(line)\n")
            #expect(p.lines[1] == general.lines[0], "\(line)")
            #expect(p.lines[1].tag?.dateTime?.text == general.lines[0].tag?.dateTime?.text, "\(line)")
            #expect(p.write() == Array("#EXTM3U\n\(line)\n".utf8))
            #expect(
                p.diagnostics.map(\.error.code)
                    == general.diagnostics.map(\.error.code).filter { $0 != .missingHeader },
                "\(line)")
        }
        let p = try Playlist("#EXTM3U\n" + lines.joined(separator: "\n") + "\n")
        #expect(p.lines[1].tag?.byteRange == ByteRangeSpec(length: 100, offset: 5))
        #expect(p.lines[3].tag?.byteRange == ByteRangeSpec(length: 7))
        #expect(p.lines[17].tag?.dateTime?.secondsSince1970 == 1_767_225_600)
        #expect(p.lines[19].tag?.dateTime?.secondsSince1970 == 1_767_225_600)
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

    /// EXT-X-MEDIA-SEQUENCE, EXT-X-DISCONTINUITY-SEQUENCE and EXT-X-DEFINE apply from the first segment even when
    /// written after it (the one-pass resolution falls back to reading them first): the result is the same as
    /// with the tags on top.
    @Test func playlistWideTagsApplyWhereverTheyAre() throws {
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        let wide =
            "#EXT-X-MEDIA-SEQUENCE:40\n#EXT-X-DISCONTINUITY-SEQUENCE:7\n#EXT-X-DEFINE:NAME=\"p\",VALUE=\"v2\"\n"
            + "#EXT-X-VERSION:8\n"
        let body =
            "#EXT-X-KEY:METHOD=AES-128,URI=\"{$p}/key\"\n#EXTINF:6,first\n{$p}/a.ts\n#EXT-X-DISCONTINUITY\n"
            + "#EXT-X-DATERANGE:ID=\"d\",START-DATE=\"2026-01-01T00:00:00Z\"\n#EXTINF:5,\n{$p}/b.ts\n"
        let url = "https://cdn.example/live/index.m3u8"
        let onTop = try Playlist(head + wide + body).media(url: url)
        #expect(onTop.segments.map(\.mediaSequence) == [40, 41])
        #expect(onTop.segments.map(\.discontinuitySequence) == [7, 8])
        #expect(onTop.segments.map(\.uri) == ["https://cdn.example/live/v2/a.ts", "https://cdn.example/live/v2/b.ts"])
        #expect(onTop.segments.first?.keys.first?.uri == "https://cdn.example/live/v2/key")
        #expect(onTop.version == 8)
        #expect(onTop.diagnostics.isEmpty)
        // Before the first segment, after it, and at the end.
        let afterFirst = try #require(body.range(of: "a.ts\n")).upperBound
        for split in [body.startIndex, afterFirst, body.endIndex] {
            let moved = try Playlist(head + String(body[..<split]) + wide + String(body[split...])).media(url: url)
            #expect(moved.segments.map(\.mediaSequence) == onTop.segments.map(\.mediaSequence))
            #expect(moved.segments.map(\.discontinuitySequence) == onTop.segments.map(\.discontinuitySequence))
            #expect(moved.segments.map(\.uri) == onTop.segments.map(\.uri))
            #expect(moved.segments.map(\.keys) == onTop.segments.map(\.keys))
            #expect(moved.segments.map(\.title) == ["first", ""])
            #expect(moved.dateRanges.map(\.id) == ["d"])
            #expect(moved.variables == onTop.variables)
            #expect(moved.version == 8)
            #expect(moved.diagnostics.isEmpty)
        }
    }

    /// Segment URIs with dot segments (resolved by their directory part, remembered from one segment to the next)
    /// against RFC 3986 resolution of each reference on its own, over small combinations of directory parts and
    /// last segments, each twice in a row and interleaved with others.
    @Test(arguments: [
        "https://cdn.example.com/live/v1/index.m3u8", "http://a/b/c/d;p?q", "https://h", "file:///x/y/z.m3u8",
    ])
    func dotSegmentsResolveAsEachReferenceAlone(base: String) async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            let directories = [
                "", "./", "../", "../../", "../../../../", "a/../", "./a/./", "/x/../", "//h2/a/../",
                "http://h3/a/./b/../",
                "g:", "a:b/../", "../media/", "./../a/", "..", ".", "a/..", "../%2E%2E/", "c d/../", "x/.../",
            ]
            let files = [
                "seg_00001.ts", "x", "..", ".", "a%20b.ts", "s p.ts", "", "q?x=1/../y", "f#frag", ".hidden", "..x",
                "seg.ts?token=9f86&expires=1", "f?q#frag", "f#a/../b", "?q", ".?q", "..?q", "..#f", "x?/./",
                "f?", "f#", "f{x}.ts", "f?{x}", "a/f.ts", "f/", "f?a/../b", "{x}/f",
            ]
            var references: [String] = []
            for d in directories {
                for f in files { references += [d + f, d + f, "../other/" + f] }
            }
            var text = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n"
            for r in references where !r.isEmpty { text += "#EXTINF:4,\n\(r)\n" }
            let media = try Playlist(text + "#EXT-X-ENDLIST\n").media(url: base)
            let expected = references.filter { !$0.isEmpty }.map {
                URIReference($0).resolved(against: URIReference(base)).description
            }
            #expect(media.segments.count == expected.count)
            for (segment, want) in zip(media.segments, expected) {
                #expect(segment.uri == want, "\(segment.rawURI) against \(base)")
            }
        }
    }

    @Test func bitrateSkipsByteRangeSegmentsAndDatesAreOwnOrDerived() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("valid/program-date-time-bitrate.m3u8"))
        let m = p.media()
        #expect(m.segments.map(\.bitrate) == [2400, nil, 2400, 2400, nil, 800])
        #expect(m.segments.map(\.hasOwnProgramDateTime) == [true, false, false, false, true, false])
        #expect(
            m.segments.map { $0.programDateTime?.text } == [
                "2026-03-04T05:06:07.250Z", "2026-03-04T05:06:13.250Z", "2026-03-04T05:06:18.750Z", nil,
                "2026-03-04T07:10:00.500+02:00", "2026-03-04T05:10:04.500Z",
            ])
        // The other shape: EXT-X-BITRATE on a byte-range segment carries on to the next one without a range.
        let q = try Playlist(
            "#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXT-X-BITRATE:900\n#EXTINF:6,\n"
                + "#EXT-X-BYTERANGE:100@0\na.ts\n#EXTINF:6,\n#EXT-X-BYTERANGE:100\na.ts\n#EXTINF:6,\nb.ts\n"
                + "#EXT-X-ENDLIST\n")
        #expect(q.media().segments.map(\.bitrate) == [nil, nil, 900])
        // The builder writes no EXT-X-BITRATE for a byte-range segment, so what it writes reads back the same.
        var b = MediaPlaylistBuilder(kind: .vod)
        b.append(.init(uri: "a.ts", duration: 6, byteRange: ByteRange(length: 100, offset: 0), bitrate: 500))
        b.append(.init(uri: "b.ts", duration: 6, bitrate: 700))
        let built = b.build()
        #expect(built.lines.filter { $0.knownTag == .bitrate }.count == 1)
        #expect(built.media().segments.map(\.bitrate) == [nil, 700])
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
        #expect(m.segments.map(\.hasOwnProgramDateTime) == [true, false, false])
        // EXT-X-BITRATE applies to segments without EXT-X-BYTERANGE only (RFC 8216bis 4.4.4.8).
        #expect(m.segments.map(\.bitrate) == [nil, nil, 1200])
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

    /// Variant fields are read from the attributes when asked for; the first attribute of a name wins, a set field
    /// keeps its value, and a new attribute list leaves the fields as they were.
    @Test func variantFieldsReadLazily() throws {
        let text =
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,AVERAGE-BANDWIDTH=900,SCORE=1.5,CODECS=\"avc1.640028,mp4a.40.2\","
            + "SUPPLEMENTAL-CODECS=\"dvh1.08.07\",RESOLUTION=1280x720,FRAME-RATE=29.970,HDCP-LEVEL=TYPE-0,"
            + "VIDEO-RANGE=PQ,AUDIO=\"aud\",VIDEO=\"vid\",SUBTITLES=\"sub\",CLOSED-CAPTIONS=\"cc\","
            + "PATHWAY-ID=\"A\",STABLE-VARIANT-ID=\"s1\",BANDWIDTH=5\nv.m3u8\n"
        let mv = try Playlist(text).multivariant(url: "https://a.example/m.m3u8")
        var v = try #require(mv.variants.first)
        #expect(v.bandwidth == 1000)
        #expect(v.averageBandwidth == 900)
        #expect(v.score == 1.5)
        #expect(v.codecs == "avc1.640028,mp4a.40.2")
        #expect(v.supplementalCodecs == "dvh1.08.07")
        #expect(v.resolution == Resolution(width: 1280, height: 720))
        #expect(v.frameRate == 29.97)
        #expect(v.hdcpLevel == "TYPE-0")
        #expect(v.videoRange == "PQ")
        #expect(v.audio == "aud")
        #expect(v.video == "vid")
        #expect(v.subtitles == "sub")
        #expect(v.closedCaptions == "cc")
        #expect(v.pathwayID == "A")
        #expect(v.stableVariantID == "s1")
        #expect(v.uri == "https://a.example/v.m3u8")
        let original = v
        v.codecs = nil
        v.bandwidth = 7
        v.resolution = nil
        #expect(v.codecs == nil && v.bandwidth == 7 && v.resolution == nil && v.audio == "aud")
        #expect(v != original)
        #expect(v.attributes == original.attributes)
        v.codecs = "avc1.640028,mp4a.40.2"
        v.bandwidth = 1000
        v.resolution = Resolution(width: 1280, height: 720)
        #expect(v == original)
        #expect(v.hashValue == original.hashValue)
        // A new attribute list does not change the fields.
        v.attributes = AttributeList([Attribute(name: "BANDWIDTH", rawValue: "1")])
        #expect(v.bandwidth == 1000 && v.codecs == "avc1.640028,mp4a.40.2" && v.stableVariantID == "s1")
        #expect(v.attributes.decimalInteger("BANDWIDTH") == 1)
        v.attributes.set("AUDIO", rawValue: "\"other\"")
        #expect(v.audio == "aud")
    }

    /// Dates in the fixed form `YYYY-MM-DDThh:mm:ss.sssZ` (read at fixed positions) against the same dates with a
    /// lowercase `t` and `z` (read by the general path), and broken fixed-form dates refused like the general path.
    @Test func fixedFormDatesReadAsTheGeneralPath() throws {
        var random = SplitMix64(seed: 0xDA7E)
        func pad(_ v: UInt64, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        for _ in 0..<20_000 {
            let r = random.next()
            let fields = [
                pad(r % 10_000, 4), pad(r >> 14 % 14, 2), pad(r >> 18 % 33, 2), pad(r >> 24 % 25, 2),
                pad(r >> 30 % 61, 2), pad(r >> 36 % 62, 2), pad(r >> 42 % 1000, 3),
            ]
            let body = "\(fields[0])-\(fields[1])-\(fields[2])T\(fields[3]):\(fields[4]):\(fields[5]).\(fields[6])"
            let fixed = DateTime(body + "Z")
            let general = DateTime(body.replacingOccurrences(of: "T", with: "t") + "z")
            #expect(fixed?.secondsSince1970 == general?.secondsSince1970, "\(body)Z")
        }
        #expect(DateTime("2026-01-01T00:00:09.618Z")?.secondsSince1970 == 1_767_225_609.618)
        // Parsed from a playlist, a fixed-form date keeps its text (rendered when read when that gives the same
        // bytes); a leap second or a day past the month's end keeps it as written.
        var dates: [String] = []
        for _ in 0..<2_000 {
            let r = random.next()
            dates.append(
                "\(pad(r % 10_000, 4))-\(pad(1 + r >> 14 % 12, 2))-\(pad(1 + r >> 18 % 31, 2))T\(pad(r >> 24 % 24, 2)):"
                    + "\(pad(r >> 30 % 60, 2)):\(pad(r >> 36 % 61, 2)).\(pad(r >> 42 % 1000, 3))Z")
        }
        dates += [
            "2024-02-29T23:59:60.000Z", "2023-02-29T00:00:00.000Z", "2026-04-31T12:00:00.500Z",
            "0000-01-01T00:00:00.000Z",
        ]
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n"
            + dates.map { "#EXT-X-PROGRAM-DATE-TIME:\($0)\n#EXTINF:4,\na.ts\n" }.joined()
        let parsed = try #require(try? Playlist(text))
        let media = parsed.media()
        #expect(media.segments.map { $0.programDateTime?.text } == dates)
        #expect(parsed.tags(.programDateTime).map { $0.tag.dateTime?.text } == dates)
        #expect(parsed.tags(.programDateTime).map(\.tag.valueText) == dates)
        for (segment, date) in zip(media.segments, dates) {
            #expect(segment.programDateTime?.secondsSince1970 == DateTime(date)?.secondsSince1970, "\(date)")
            #expect(segment.programDateTime == DateTime(date), "\(date)")
        }
        #expect(parsed.write() == Array(text.utf8))
        for broken in [
            "2026-01-01T00:00:09.61xZ", "2026-00-01T00:00:09.618Z", "2026-01-32T00:00:09.618Z",
            "2026-01-01T24:00:09.618Z", "2026-01-01T00:60:09.618Z", "2026-01-01T00:00:61.618Z",
            "2026/01-01T00:00:09.618Z", "2026-01-01T00:00:09,618Q", " 026-01-01T00:00:09.618Z",
        ] {
            #expect(DateTime(broken) == nil, "\(broken)")
        }
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
