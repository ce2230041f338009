import FileRange
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

    /// The route matcher, which walks the decoded segments by position, against what each pattern means: the
    /// segments a wildcard gets (all of them at the root: the decoded list itself), parameters, literals, tokens,
    /// and paths one segment too short or too long.
    @Test func routeMatchingByPosition() {
        let token = SessionToken.random()
        var router = Router()
        router.getImmediate("/a/:name") { _ in .error(.ok) }
        router.getImmediate("/a/:name/b") { _ in .error(.ok) }
        router.getImmediate("/files/**") { _ in .error(.ok) }
        router.getImmediate("/media.ts", session: token) { _ in .error(.ok) }
        router.getImmediate("/s/**", session: token) { _ in .error(.ok) }
        router.getImmediate("/**") { _ in .error(.ok) }
        func outcome(_ path: String) -> String {
            switch router.match(method: .get, path: Substring(path)) {
            case .handler(_, let parameters, let wildcard, let session, _):
                let names = parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                return "params[\(names.joined(separator: ","))] wild\(wildcard) session \(session != nil)"
            case .methodNotAllowed: return "405"
            case .notFound: return "404"
            case .badPath: return "400"
            }
        }
        #expect(outcome("/a/x") == "params[name=x] wild[] session false")
        #expect(outcome("/a/x/b") == "params[name=x] wild[] session false")
        #expect(outcome("/a/x/c") == "params[] wild[\"a\", \"x\", \"c\"] session false")  // falls to /**
        #expect(outcome("/files/d/e.ts") == "params[] wild[\"d\", \"e.ts\"] session false")
        #expect(outcome("/files") == "params[] wild[] session false")
        #expect(outcome("/1gib.ts") == "params[] wild[\"1gib.ts\"] session false")
        #expect(outcome("/\(token.value)/media.ts") == "params[] wild[] session true")
        #expect(outcome("/\(token.value)/s/x/y") == "params[] wild[\"x\", \"y\"] session true")
        #expect(outcome("/\(token.value)/s") == "params[] wild[] session true")
        #expect(outcome("/\(token.value)/media.ts/more").hasSuffix("session false"))  // only /** takes it
        #expect(outcome("/%zz") == "400")
    }

    static let rangeValues = [
        "bytes=0-187", "bytes=1073741636-1073741823", "BYTES=0-1", " bytes=0-1\t", "bytes=,0-1,,", "bytes=0-1 ,\t2-3",
        "bytes=-500", "bytes=500-", "bytes=5-4", "bytes=", "bytes", "bytes =0-1", "bytes0-1", "items=0-1", "",
        "bytes=0-99999999999999999999999999", "bytes=a-b", "bytes=0-1-2", "bytes=-", "bytes=,", "byte=0-1",
    ]

    /// `RangeRequest.parse` walks a string's bytes where they lie; bytes without contiguous storage are copied
    /// first. Both ways agree on every value.
    @Test(arguments: rangeValues) func rangeParseOfBorrowedAndCopiedBytesAgree(_ value: String) {
        let borrowed = RangeRequest.parse(value)
        #expect(RangeRequest.parse(value.utf8.lazy.map { $0 }) == borrowed)
        #expect(RangeRequest.parse(Array(value.utf8)) == borrowed)
    }

    /// `ContentRange.value` writes its digits into one buffer: the same text as interpolation, at the extremes.
    @Test func contentRangeDigitsAtTheExtremes() throws {
        for (first, last, length) in [
            (UInt64(0), UInt64(0), UInt64(1)), (9, 10, 11), (99, 100, 1000), (0, UInt64.max - 1, UInt64.max),
            (1_073_741_636, 1_073_741_823, 1_073_741_824),
        ] {
            let range = try #require(ByteRange(first: first, last: last))
            #expect(ContentRange.value(for: range, completeLength: length) == "bytes \(first)-\(last)/\(length)")
        }
    }
}
