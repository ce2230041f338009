import HLSPlaylist
import HTTPClient
import LoopbackHTTP
import Testing

@testable import HLSProxy

/// One poll's work in process (`AdStrippingProxy.poll(bytes:url:)`, what the poll benchmark times): a sliding live
/// window keeps its routes and slates from poll to poll while only new segments are mapped.
@Suite struct ProxyPollTests {
    static let url = "http://origin.example/live/index.m3u8"

    /// The window of `count` segments starting at `first`; a 6-segment break (CUE-OUT 12 s) opens at 104.
    static func window(first: Int, count: Int = 8, uriWhitespace: String = "") -> [UInt8] {
        MediaPlaylistText.window(
            first: first, count: count, targetDuration: 2, duration: "2.000",
            uri: { "\(uriWhitespace)https://cdn.example/seg_\($0).ts?s=1" },
            tags: { $0 == 104 ? "#EXT-X-CUE-OUT:12.000\n" : "" }
        ).bytes
    }

    /// The URI lines of an output, by media sequence number.
    static func uris(_ output: [UInt8], first: Int) -> [Int: String] {
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }
        var out: [Int: String] = [:]
        for (i, line) in lines.enumerated() { out[first + i] = String(line) }
        return out
    }

    @Test func slidingWindowKeepsRoutesAndSlates() throws {
        let proxy = AdStrippingProxy(url: Self.url)
        let prefix = "/\(proxy.token.value)/"
        var seen: [Int: String] = [:]
        for first in 100..<106 {
            let output = try proxy.poll(bytes: Self.window(first: first), url: Self.url)
            let uris = Self.uris(output, first: first)
            #expect(uris.count == 8)
            #expect(String(decoding: output, as: UTF8.self).contains("#EXT-X-MEDIA-SEQUENCE:\(first)\n"))
            for (m, uri) in uris {
                #expect(uri.hasPrefix(prefix), "\(m): \(uri)")
                if (104..<110).contains(m) {
                    #expect(uri.hasPrefix(prefix + "slate/"), "\(m) is in the break: \(uri)")
                    #expect(uri.hasSuffix("/\(m).ts"))
                } else {
                    #expect(uri.hasPrefix(prefix + "s/"), "\(m) is content: \(uri)")
                }
                // The same segment gets the same URI in every poll that holds it.
                if let earlier = seen[m] { #expect(earlier == uri, "\(m) changed from \(earlier) to \(uri)") }
                seen[m] = uri
            }
            // Routes are distinct per segment.
            #expect(Set(uris.values).count == uris.count)
            // A repeated poll is answered with the same bytes.
            #expect(try proxy.poll(bytes: Self.window(first: first), url: Self.url) == output)
        }
    }

    @Test func uriLinesDifferingOnlyInBlanksShareTheirRoute() throws {
        let proxy = AdStrippingProxy(url: Self.url)
        let plain = Self.uris(try proxy.poll(bytes: Self.window(first: 0), url: Self.url), first: 0)
        let padded = Self.uris(
            try proxy.poll(bytes: Self.window(first: 1, uriWhitespace: "  "), url: Self.url), first: 1)
        for m in 1..<8 { #expect(plain[m] == padded[m], "\(m): \(plain[m] ?? "-") vs \(padded[m] ?? "-")") }
    }

    @Test func aBodyThatIsNotAPlaylistIsRefused() {
        let proxy = AdStrippingProxy(url: Self.url)
        #expect(throws: ProxyError.self) { try proxy.poll(bytes: Array("<html></html>".utf8), url: Self.url) }
    }

    @Test func uriKeysCompareBytesNotJustDigests() {
        let a = URIKey(Array("https://cdn.example/a.ts".utf8)[...])
        let b = URIKey(Array("https://cdn.example/b.ts".utf8)[...])
        let a2 = URIKey(Array("xxhttps://cdn.example/a.ts".utf8).dropFirst(2))
        #expect(a == a2)
        #expect(a.hashValue == a2.hashValue)
        #expect(a != b)
        #expect(a.owned == a)
    }
}
