import Testing

@testable import LoopbackHTTP

/// The per-request shortcuts (plain ASCII paths) give what the general code gives, and decline what they do not
/// cover.
@Suite struct FastPathTests {
    static let paths = [
        "", "/", "//", "/a", "/a/", "/a//b", "/a/b/c.ts", "a/b", "/files/sub/index.m3u8", "/x/../y", "/./a",
        "/a%20b", "/%2F", "/%zz", "/caf\u{E9}", "/a%C3%A9", "/%C0%AF", "/a/b%", "///", "/a b/c",
    ]

    @Test(arguments: paths) func plainSegmentsMatchDecoding(_ path: String) {
        let general = Router.decodedSegments(Substring(path))
        #expect(Router.decodeSegments(Substring(path)) == general)
        if let plain = Router.plainSegments(Substring(path)) {
            #expect(plain == general)
        } else {
            #expect(path.utf8.contains { $0 >= 0x80 || $0 == UInt8(ascii: "%") })
        }
    }

    @Test func plainSegmentsOfASubstring() {
        let target = "GET /a/b.ts HTTP/1.1"
        let path = target.dropFirst(4).prefix(7)
        #expect(Router.plainSegments(path) == ["a", "b.ts"])
    }

    static let names = [
        "a/b.m3u8", "x.M3U", "x.ts", "X.TS", "x.Ts", "x.mp4", "x.m4v", "x.m4s", "x.aac", "x.ac3", "x.ec3", "x.mp3",
        "x.vtt", "x.key", "x.qm", "dir.ts/file", "noext", "", ".", "x.", ".ts", "a.b.ts", "a.ts.", "x.tss",
        "x.m3u8m3u8", "x.abcdefghij", "x.ts\u{0}", "x.t\u{0}s", "x.\u{0}ts", "caf\u{E9}.ts", "\u{0600}.ts",
        "a.\u{301}ts", "x.TS/", "a/.ts", "x.m3u9",
    ]

    @Test(arguments: names) func mediaTypeShortcutMatchesGeneralWay(_ name: String) {
        #expect(MediaType.forPath(name) == MediaType.forAnyPath(name))
        if let shortcut = MediaType.forASCIIPath(name.utf8) {
            #expect(shortcut == MediaType.forAnyPath(name))
        } else {
            #expect(name.utf8.contains { $0 < 0x20 || $0 >= 0x7F })
        }
    }
}
