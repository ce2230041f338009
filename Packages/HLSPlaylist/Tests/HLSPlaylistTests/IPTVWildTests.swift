import HLSPlaylist
import Testing

/// IPTV channel lists as they are found in the wild: each shape, and the headers a client must send for a channel
/// wherever the list puts them.
@Suite struct IPTVWildTests {
    private func channels(_ text: String) throws -> [IPTVChannel] { try IPTVPlaylist(text).channels }

    private func headers(_ channel: IPTVChannel) -> [String] {
        channel.requestHeaders.map { "\($0.name): \($0.value)" }
    }

    @Test func kodiHeadersAfterAPipeArePercentDecodedAndLeaveTheURL() throws {
        let list = try channels(
            "#EXTM3U\n#EXTINF:-1,One\nhttps://h.example/live/one.m3u8?t=1|User-Agent=My%20Player%2F2.0&"
                + "Referer=https%3A%2F%2Fsite.example%2F&X-Forwarded-For=10.0.0.1|Origin=https://site.example\n")
        let one = try #require(list.first)
        #expect(one.url == "https://h.example/live/one.m3u8?t=1")
        #expect(one.userAgent == "My Player/2.0")
        #expect(one.referrer == "https://site.example/")
        #expect(
            headers(one) == [
                "User-Agent: My Player/2.0", "Referer: https://site.example/", "X-Forwarded-For: 10.0.0.1",
                "Origin: https://site.example",
            ])
        // A bar with no Name= after it is not a header suffix; a malformed escape is kept as written.
        let odd = try channels("#EXTINF:-1,Two\nhttp://h/two|nothing\n#EXTINF:-1,Three\nhttp://h/3|User-Agent=a%zz\n")
        #expect(odd.map(\.url) == ["http://h/two|nothing", "http://h/3"])
        #expect(odd[1].userAgent == "a%zz")
    }

    /// Options anywhere before the URL apply; of two lines giving one header the later wins, and the URL's own
    /// suffix wins over every line.
    @Test func theURLsHeadersWinOverOptionsAndOptionsAnywhereBeforeTheURLApply() throws {
        let list = try channels(
            """
            #EXTM3U
            #EXTVLCOPT:http-user-agent=VLC/3
            #KODIPROP:inputstream=inputstream.adaptive
            #EXTINF:-1 tvg-id="a",A
            #EXTHTTP:{"Referer":"https://from-exthttp/","Cookie":"k=v"}
            #EXTVLCOPT:http-referrer=https://from-vlcopt/
            http://h/a|User-Agent=Kodi
            """)
        let a = try #require(list.first)
        #expect(a.kodiProps.map(\.name) == ["inputstream"])
        #expect(a.vlcOpts.map(\.name) == ["http-user-agent", "http-referrer"])
        #expect(headers(a) == ["User-Agent: Kodi", "Referer: https://from-vlcopt/", "Cookie: k=v"])
    }

    @Test func aListWithoutAHeaderOfBareURLsOrEXTINFLinesOnly() throws {
        let bare = try IPTVPlaylist("http://h/live/news.m3u8\n\nhttps://h/radio/one.mp3?x=1\nhttp://h/\n")
        #expect(bare.header.line == nil)
        #expect(bare.channels.map(\.url) == ["http://h/live/news.m3u8", "https://h/radio/one.mp3?x=1", "http://h/"])
        #expect(bare.channels.map(\.name) == ["news.m3u8", "one.mp3", "http://h/"])
        #expect(bare.diagnostics.isEmpty)
        let extinfOnly = try channels("#EXTINF:-1 group-title=\"G\",News\nhttp://h/n\n#EXTINF:-1,Sport\nhttp://h/s\n")
        #expect(extinfOnly.map(\.name) == ["News", "Sport"])
        #expect(extinfOnly.map(\.group) == ["G", nil])
        #expect(bare.channels.map(\.nameSource) == [.url, .url, .url])
        // The URL of an unreadable EXTINF is skipped with it.
        let broken = try IPTVPlaylist("#EXTINF:x TVG-ID=\"b\",Broken\nhttp://h/broken\nhttp://h/next\n")
        #expect(broken.channels.map(\.url) == ["http://h/next"])
        #expect(broken.channels.map(\.attributeSpellings) == [[:]])
        #expect(broken.diagnostics.map(\.line) == [1, 2])
    }

    /// A URL line with no #EXTINF before it is an entry in a list with a header too (VLC and Kodi play it), named
    /// after its URL, with the options held before it; the list still writes back byte for byte.
    @Test func bareURLLinesAreEntriesInAListWithAHeader() throws {
        let text =
            "#EXTM3U x-tvg-url=\"http://e/g.xml\"\nhttp://h/live/stray.m3u8?t=1\n#EXTINF:-1,Fine\nhttp://h/fine\n"
            + "#EXTVLCOPT:http-user-agent=UA\n#EXTGRP:Radio\nhttp://h/\nhttp://h/x.ts|Referer=http%3A%2F%2Fr%2F\n"
        let list = try IPTVPlaylist(text)
        #expect(
            list.channels.map(\.url) == ["http://h/live/stray.m3u8?t=1", "http://h/fine", "http://h/", "http://h/x.ts"])
        #expect(list.channels.map(\.name) == ["stray.m3u8", "Fine", "http://h/", "x.ts"])
        #expect(list.channels.map(\.nameSource) == [.url, .title, .url, .url])
        #expect(list.channels.map(\.lineNumber) == [2, 3, 5, 8])
        #expect(list.channels[2].userAgent == "UA")
        #expect(list.channels[2].group == "Radio")
        #expect(list.channels[3].referrer == "http://r/")
        #expect(list.channels.map(\.duration) == [-1, -1, -1, -1])
        #expect(list.diagnostics.isEmpty)
        #expect(list.write() == Array(text.utf8))
    }

    /// The name's source: the title, else tvg-name, else nothing (an empty name); an EXTINF that names nothing and
    /// has no attributes is named after its URL, as a bare URL is.
    @Test func theNameSaysWhereItCameFrom() throws {
        let list = try IPTVPlaylist(
            "#EXTM3U\n#EXTINF:-1 tvg-name=\"TVG\",Title\nhttp://h/1\n#EXTINF:-1 tvg-name=\"TVG\"\nhttp://h/2\n"
                + "#EXTINF:-1 tvg-id=\"x\",\nhttp://h/3\n#EXTINF:-1,\nhttp://h/a/four.m3u8\n")
        #expect(list.channels.map(\.name) == ["Title", "TVG", "", "four.m3u8"])
        #expect(list.channels.map(\.nameSource) == [.title, .tvgName, .none, .url])
        #expect(IPTVChannel(name: "", url: "http://h/").nameSource == .none)
        #expect(IPTVChannel(name: "N", url: "http://h/").nameSource == .title)
    }

    /// Attribute names are one name whatever their case: stored and looked up in lower case, the first spelling kept
    /// for writing, and the list written back byte for byte.
    @Test func attributeNamesAreMatchedWithoutRegardToCase() throws {
        let text =
            "#EXTM3U URL-TVG=\"http://e/1.xml\" X-Tvg-Url=\"http://e/2.xml\" Tvg-Shift=\"+2\"\n"
            + "#EXTINF:-1 TVG-ID=\"bbc1\" Group-Title=\"News\" tvg-NAME=\"BBC\" TVG-CHNO=\"7\" Custom-Attr=\"v\","
            + "BBC One\nhttp://h/b\n#EXTINF:-1 tvg-id=\"lower\" TVG-ID=\"upper\",Two\nhttp://h/2\n"
        let list = try IPTVPlaylist(text)
        #expect(list.header.attributes.map(\.name) == ["url-tvg", "x-tvg-url", "tvg-shift"])
        #expect(list.header["url-tvg"] == "http://e/1.xml")
        #expect(list.header["URL-TVG"] == "http://e/1.xml")
        #expect(list.header.guideURLs == ["http://e/1.xml", "http://e/2.xml"])
        #expect(list.header.tvgShift == 2)
        #expect(list.header.attributeSpellings["x-tvg-url"] == "X-Tvg-Url")
        let one = list.channels[0]
        #expect(one.attributes.map(\.name) == ["tvg-id", "group-title", "tvg-name", "tvg-chno", "custom-attr"])
        #expect(one["tvg-id"] == "bbc1")
        #expect(one["Tvg-Id"] == "bbc1")
        #expect(one["custom-attr"] == "v")
        #expect(one.group == "News")
        #expect(
            one.attributeSpellings == [
                "tvg-id": "TVG-ID", "group-title": "Group-Title", "tvg-name": "tvg-NAME", "tvg-chno": "TVG-CHNO",
                "custom-attr": "Custom-Attr",
            ])
        // Two spellings of one name: both values kept, the first is the value, the first spelling is kept.
        let two = list.channels[1]
        #expect(two.attributes.map(\.name) == ["tvg-id", "tvg-id"])
        #expect(two["TVG-ID"] == "lower")
        #expect(two.attributeSpellings.isEmpty)
        #expect(list.write() == Array(text.utf8))
        // Rendered from its values (as a list built in code is), a channel keeps the names as the source spelled them.
        var rebuilt = IPTVChannel(name: one.name, url: "http://local/1", attributes: one.attributes)
        rebuilt.attributeSpellings = one.attributeSpellings
        #expect(
            rebuilt.renderedLines.first
                == "#EXTINF:-1 TVG-ID=\"bbc1\" Group-Title=\"News\" tvg-NAME=\"BBC\" TVG-CHNO=\"7\" Custom-Attr=\"v\",BBC One"
        )
        // A channel built in code with upper-case names stores them the same way.
        let coded = IPTVChannel(name: "C", url: "http://h/c", attributes: [("Group-Title", "G"), ("tvg-id", "c")])
        #expect(coded.group == "G")
        #expect(coded.attributes.map(\.name) == ["group-title", "tvg-id"])
        #expect(coded.renderedLines.first == "#EXTINF:-1 Group-Title=\"G\" tvg-id=\"c\",C")
    }

    /// Quoted values in Kodi's pipe headers lose their quotes, and names and values are decoded as Kodi decodes
    /// them (`%XX` and `+` as a space), so neither the quotes nor the escapes go upstream.
    @Test func quotedKodiHeaderValuesAreUnquotedAndDecoded() throws {
        let list = try channels(
            "#EXTM3U\n#EXTINF:-1,Q\nhttp://h/q.m3u8|User-Agent=\"Mozilla/5.0 (Windows NT 10.0; Win64; x64)\"&"
                + "Referer=\"https%3A%2F%2Fsite.example%2F\"&X-Plus=a+b%2Bc&X-Encoded=%22q%22&X-Lone=\"open&X-Empty=\"\"\n"
        )
        let q = try #require(list.first)
        #expect(q.url == "http://h/q.m3u8")
        #expect(q.userAgent == "Mozilla/5.0 (Windows NT 10.0; Win64; x64)")
        #expect(q.referrer == "https://site.example/")
        #expect(
            headers(q) == [
                "User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "Referer: https://site.example/",
                "X-Plus: a b+c", "X-Encoded: q", "X-Lone: \"open", "X-Empty: ",
            ])
    }

    @Test func crlfAndAByteOrderMark() throws {
        let bytes: [UInt8] =
            [0xEF, 0xBB, 0xBF] + Array("#EXTM3U x-tvg-url=\"http://e/g.xml\"\r\n#EXTINF:-1,A\r\nhttp://h/a\r\n".utf8)
        let list = try IPTVPlaylist(bytes: bytes)
        #expect(list.hasByteOrderMark)
        #expect(list.header.guideURLs == ["http://e/g.xml"])
        #expect(list.channels.map(\.url) == ["http://h/a"])
        #expect(list.channels.map(\.name) == ["A"])
        #expect(list.write() == bytes)
    }

    @Test func unquotedSingleQuotedAndEmptyValues() throws {
        let c = try #require(
            try channels(
                "#EXTINF:-1 tvg-id=plain tvg-name='Single Quoted' tvg-logo=\"\" tvg-chno= group-title='It''s',T\nhttp://h/t\n"
            ).first)
        #expect(c["tvg-id"] == "plain")
        #expect(c["tvg-name"] == "Single Quoted")
        #expect(c["tvg-logo"] == "")
        #expect(c["tvg-chno"] == "")
        #expect(c.attributes.map(\.name) == ["tvg-id", "tvg-name", "tvg-logo", "tvg-chno", "group-title"])
        #expect(c.name == "T")
    }

    @Test func commasAndQuotesInsideTitlesAndValues() throws {
        let c = try #require(
            try channels(
                "#EXTINF:-1 tvg-name=\"News, \"Live\"\" group-title=\"A,B\",BBC One, \"HD\", London\nhttp://h/b\n"
            ).first)
        #expect(c["tvg-name"] == "News, \"Live\"")
        #expect(c.group == "A,B")
        #expect(c.name == "BBC One, \"HD\", London")
    }

    @Test func duplicateAttributesAreAllKeptAndTheFirstIsTheValue() throws {
        let c = try #require(
            try channels("#EXTINF:-1 tvg-id=\"one\" tvg-id=\"two\" group-title=\"G\",T\nhttp://h/t\n").first)
        #expect(c.attributes.filter { $0.name == "tvg-id" }.map(\.value) == ["one", "two"])
        #expect(c["tvg-id"] == "one")
    }

    @Test func blankAndCommentLinesBetweenEXTINFAndTheURL() throws {
        let list = try IPTVPlaylist("#EXTM3U\n#EXTINF:-1,A\n\n# a note\n  \n#EXTGRP:Films\nhttp://h/a\n")
        #expect(list.channels.map(\.url) == ["http://h/a"])
        #expect(list.channels.first?.group == "Films")
        #expect(list.diagnostics.isEmpty)
        #expect(list.write() == Array("#EXTM3U\n#EXTINF:-1,A\n\n# a note\n  \n#EXTGRP:Films\nhttp://h/a\n".utf8))
    }

    @Test func headerAttributesGuideURLsShiftAndCatchup() throws {
        let list = try IPTVPlaylist(
            "#EXTM3U url-tvg=\"http://e/1.xml,http://e/2.xml\" x-tvg-url=\"http://e/2.xml, http://e/3.xml.gz\" "
                + "tvg-shift=\"+1.5\" catchup=\"append\" catchup-days=\"3\" catchup-source=\"?utc={utc}\"\n"
                + "#EXTINF:-1 tvg-shift=-2 catchup-days=\"7\",A\nhttp://h/a\n#EXTINF:-1,B\nhttp://h/b\n")
        #expect(list.header.guideURLs == ["http://e/1.xml", "http://e/2.xml", "http://e/3.xml.gz"])
        #expect(list.header.tvgShift == 1.5)
        #expect(list.header["catchup"] == "append")
        #expect(list.header["catchup-days"] == "3")
        #expect(list.header["catchup-source"] == "?utc={utc}")
        #expect(list.channels.map(\.tvgShift) == [-2, nil])
        #expect(list.channels.first?["catchup-days"] == "7")
    }

    /// A streaming parse holds one entry at a time: over a list of 20,000 channels fed in 4 KiB chunks, the lines
    /// held between channels never exceed one entry's, and every channel arrives.
    @Test func aLargeListStreamsWithBoundedState() async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            var text = "#EXTM3U\n"
            for n in 0..<20_000 {
                text +=
                    "#EXTINF:-1 tvg-id=\"c\(n)\" group-title=\"G\(n % 7)\",Channel \(n)\n#EXTVLCOPT:http-user-agent=UA\(n)\n"
                text += "http://h.example/\(n).m3u8|Referer=http%3A%2F%2Fr%2F\(n)\n"
            }
            let bytes = Array(text.utf8)
            var parser = IPTVStreamParser()
            var count = 0
            var mostHeld = 0
            var offset = 0
            var last: IPTVChannel?
            while offset < bytes.count {
                let end = min(bytes.count, offset + 4096)
                try parser.consume(bytes[offset..<end]) { channel in
                    count += 1
                    last = channel
                }
                mostHeld = max(mostHeld, parser.pendingLines.count)
                offset = end
            }
            try parser.finish { _ in count += 1 }
            #expect(count == 20_000)
            #expect(mostHeld <= 3)
            #expect(last?.requestHeaders.map(\.value) == ["UA19999", "http://r/19999"])
        }
    }
}
