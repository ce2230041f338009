import Foundation
import HLSPlaylist
import Testing

@Suite struct IPTVTests {
    @Test func channelsAttributesAndOptions() throws {
        let list = try IPTVPlaylist(bytes: try Fixtures.bytes("iptv/channels.m3u"))
        #expect(list.header["url-tvg"] == "http://epg.example.com/guide.xml.gz")
        #expect(list.header["catchup"] == "shift")
        #expect(
            list.channels.map(\.name) == [
                "News UK HD", "Sport 1, the \"best\" channel", "Movie Classic", "Radio One", "Kids TV",
            ])
        let sport = list.channels[1]
        #expect(sport["tvg-name"] == "Sport 1, Live")
        #expect(sport.group == "Sports; Live")
        #expect(sport["catchup-days"] == "7")
        #expect(sport.userAgent == "Mozilla/5.0 (Windows NT 10.0; Win64; x64)")
        #expect(sport.referrer == "https://www.example.com/")
        let movie = list.channels[2]
        #expect(movie["tvg-name"] == "Movie \"Classic\" HD")
        #expect(movie["tvg-logo"] == "")
        #expect(movie.duration == 0)
        #expect(movie.kodiProps.map(\.name) == ["inputstream", "inputstream.adaptive.manifest_type"])
        #expect(movie.httpHeaders.map(\.value) == ["Kodi/20.0", "https://kodi.example/", "a\"b"])
        #expect(movie.userAgent == "Kodi/20.0")
        #expect(movie.url == "https://movies.example.com/classic.m3u8")
        #expect(list.channels[3].group == "Music")
        #expect(list.channels[4]["tvg-id"] == "noquotes")
        #expect(list.diagnostics.map(\.line) == [14, 15, 23])
    }

    /// Quotes are found eight bytes at a time: a stray quote or the closing quote at every offset in a word.
    @Test func quotesAtEveryWordOffset() throws {
        for n in 0..<20 {
            let pad = String(repeating: "x", count: n)
            let values = [pad, pad + "\"q\" " + pad, "\"" + pad, pad + "\""]
            for value in values {
                let text = "#EXTM3U\n#EXTINF:-1 tvg-name=\"\(value)\" group-title=\"g\(n)\",T \(n)\nhttp://h/\(n)\n"
                let list = try IPTVPlaylist(text)
                let channel = try #require(list.channels.first)
                #expect(channel["tvg-name"] == value, "n=\(n) value=\(value)")
                #expect(channel.group == "g\(n)")
                #expect(channel.name == "T \(n)")
                #expect(channel.attributes.map(\.name) == ["tvg-name", "group-title"])
            }
        }
    }

    /// The key after a closing quote is found once (while deciding the quote closes the value) and reused:
    /// spaces and tabs before it, an unquoted value, and a stray quote followed by a non-key.
    @Test func keysAfterClosingQuotes() throws {
        let text = "#EXTM3U\n#EXTINF:-1 a=\"1\"   b=\"2\" c=3 d=\"x\" y\" e=\"5\"\t f=\"6\",Title, more\nhttp://h/1\n"
        let channel = try #require(try IPTVPlaylist(text).channels.first)
        #expect(channel.attributes.map(\.name) == ["a", "b", "c", "d", "e", "f"])
        #expect(channel.attributes.map(\.value) == ["1", "2", "3", "x\" y", "5", "6"])
        #expect(channel.name == "Title, more")
    }

    @Test(arguments: ["iptv/channels.m3u", "iptv/wild.m3u"])
    func losslessWrite(fixture: String) throws {
        let bytes = try Fixtures.bytes(fixture)
        let list = try IPTVPlaylist(bytes: bytes)
        #expect(list.write() == bytes)
    }

    /// The list as found in the wild: bare URL lines, attribute names in any case, a quoted Kodi header value.
    @Test func wildListAsAClientSeesIt() throws {
        let list = try IPTVPlaylist(bytes: try Fixtures.bytes("iptv/wild.m3u"))
        #expect(list.header.guideURLs == ["http://epg.example.com/guide.xml"])
        #expect(list.header.tvgShift == 1)
        #expect(list.channels.map(\.name) == ["news.m3u8", "Sport HD", "radio", ""])
        #expect(list.channels.map(\.nameSource) == [.url, .title, .url, .none])
        #expect(list.channels[1]["tvg-id"] == "sport.uk")
        #expect(list.channels[1].group == "Sports")
        #expect(list.channels[1].userAgent == "Mozilla/5.0 (X11; Linux x86_64)")
        #expect(list.channels[1].referrer == "http://site.example/")
        #expect(list.channels[2].userAgent == "VLC/3.0")
        #expect(list.diagnostics.isEmpty)
    }

    @Test(arguments: ["iptv/channels.m3u", "iptv/wild.m3u", "quirks/bom-no-final-newline.m3u8", "quirks/crlf.m3u8"])
    func chunkedParsingMatchesOneShot(fixture: String) throws {
        let bytes = try Fixtures.bytes(fixture)
        let whole = try IPTVPlaylist(bytes: bytes)
        var generator = SystemRandomNumberGenerator()
        for chunkSize in [1, 2, 3, 7, 64, 0] {
            var parser = IPTVStreamParser()
            var channels: [IPTVChannel] = []
            var i = 0
            while i < bytes.count {
                let size = chunkSize == 0 ? Int.random(in: 1...40, using: &generator) : chunkSize
                let end = min(bytes.count, i + size)
                try parser.consume(bytes[i..<end]) { channels.append($0) }
                i = end
            }
            try parser.finish { channels.append($0) }
            #expect(channels == whole.channels, "chunk size \(chunkSize)")
            #expect(parser.diagnostics == whole.diagnostics)
            #expect(parser.hasByteOrderMark == whole.hasByteOrderMark)
        }
    }

    @Test(arguments: ["iptv/channels.m3u", "iptv/wild.m3u"])
    func everyPrefixParsesWithoutTrapping(fixture: String) throws {
        let bytes = try Fixtures.bytes(fixture)
        for n in 0...bytes.count {
            let prefix = Array(bytes[0..<n])
            let list = try IPTVPlaylist(bytes: prefix)
            #expect(list.write() == prefix)
        }
    }

    @Test func lineCapIsEnforcedWhileStreaming() {
        var limits = PlaylistLimits()
        limits.maxLineLength = 16
        var parser = IPTVStreamParser(limits: limits)
        #expect(throws: PlaylistError.self) {
            try parser.consume(ArraySlice(Array(repeating: UInt8(ascii: "a"), count: 40))) { _ in }
        }
    }
}
