import Foundation
import HLSPlaylist
import TestSupport
import Testing

@Suite struct ParserTests {
    /// EXT-X-BYTERANGE numbers at the digit-count boundaries of the line fast path: 19 and 20 digits read, the
    /// largest UInt64 read, one past it and 21 digits left as text with a diagnostic.
    @Test func byteRangeDigitBoundaries() throws {
        func range(_ value: String) throws -> (ByteRangeSpec?, Int) {
            let p = try Playlist("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:\(value)\nmedia.ts\n")
            return (p.firstTag(.byteRange)?.byteRange, p.diagnostics.count)
        }
        #expect(try range("9999999999999999999@1") == (ByteRangeSpec(length: 9_999_999_999_999_999_999, offset: 1), 0))
        #expect(try range("18446744073709551615") == (ByteRangeSpec(length: UInt64.max, offset: nil), 0))
        #expect(try range("1@00000000000000000012") == (ByteRangeSpec(length: 1, offset: 12), 0))
        #expect(try range("18446744073709551616").0 == nil)
        #expect(try range("18446744073709551616").1 == 1)
        #expect(try range("100000000000000000000").0 == nil)
    }

    /// `name` with one byte changed at the start, in the middle and at the end.
    static func oneByteVariants(of name: String) -> [String] {
        Set([0, name.utf8.count / 2, name.utf8.count - 1]).map { position in
            var bytes = Array(name.utf8)
            bytes[position] = bytes[position] == UInt8(ascii: "Q") ? UInt8(ascii: "Z") : UInt8(ascii: "Q")
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Attribute names are matched word by word while parsing: every name of the draft (1 to 27 bytes), and names
    /// that differ from one only in a byte covered by each word, are told apart.
    @Test func attributeNamesMatchedWordByWord() throws {
        let names = [
            "AUDIO", "ALLOWED-CPC", "ASSOC-LANGUAGE", "AUTOSELECT", "AVERAGE-BANDWIDTH", "BANDWIDTH", "BIT-DEPTH",
            "BYTERANGE", "BYTERANGE-LENGTH", "BYTERANGE-START", "CAN-BLOCK-RELOAD", "CAN-SKIP-DATERANGES",
            "CAN-SKIP-UNTIL", "CHANNELS", "CHARACTERISTICS", "CLASS", "CLOSED-CAPTIONS", "CODECS", "CUE", "DATA-ID",
            "DEFAULT", "DURATION", "END-DATE", "END-ON-NEXT", "FORCED", "FORMAT", "FRAME-RATE", "GAP", "GROUP-ID",
            "HDCP-LEVEL", "HOLD-BACK", "ID", "IMPORT", "INDEPENDENT", "INSTREAM-ID", "IV", "KEYFORMAT",
            "KEYFORMATVERSIONS", "LANGUAGE", "LAST-MSN", "LAST-PART", "METHOD", "NAME", "PART-HOLD-BACK",
            "PART-TARGET", "PATHWAY-ID", "PLANNED-DURATION", "PRECISE", "PROGRAM-ID", "QUERYPARAM",
            "RECENTLY-REMOVED-DATERANGES", "REQ-VIDEO-LAYOUT", "RESOLUTION", "SAMPLE-RATE", "SCORE", "SCTE35-CMD",
            "SCTE35-IN", "SCTE35-OUT", "SERVER-URI", "SKIPPED-SEGMENTS", "STABLE-RENDITION-ID", "STABLE-VARIANT-ID",
            "START-DATE", "SUBTITLES", "SUPPLEMENTAL-CODECS", "TIME-OFFSET", "TYPE", "URI", "VALUE", "VIDEO",
            "VIDEO-RANGE",
        ]
        for name in names {
            // The name itself, then variants with one byte changed at the start, the middle and the end.
            let variants = [name] + Self.oneByteVariants(of: name)
            for candidate in variants {
                let p = try Playlist("#EXTM3U\n#EXT-X-SESSION-DATA:\(candidate)=\"v\",X-OTHER=\"d\"\n")
                let list = try #require(p.lines[1].tag?.attributes)
                #expect(list[candidate]?.quotedString == "v", "\(candidate)")
                #expect(list.attributes.first?.name == candidate)
                if candidate != name, !names.contains(candidate) { #expect(list[name] == nil, "\(candidate)") }
            }
        }
    }

    /// Tag names are looked up word by word: every known tag, and names that differ from one in a single byte at
    /// the start, the middle or the end, are told apart (with and without a value after the name).
    @Test func tagNamesMatchedWordByWord() throws {
        let names = KnownTag.allCases.map(\.rawValue)
        for tag in KnownTag.allCases {
            let name = tag.rawValue
            let variants = [name] + Self.oneByteVariants(of: name)
            for candidate in variants {
                for suffix in ["", ":1", ":X=\"a long value after the name\""] {
                    let p = try Playlist("#EXTM3U\n#\(candidate)\(suffix)\n")
                    let expected = names.contains(candidate) ? KnownTag(rawValue: candidate) : nil
                    #expect(p.lines[1].knownTag == expected, "\(candidate)\(suffix)")
                    // A line not starting with #EXT is a comment, not a tag.
                    let expectedName = candidate.hasPrefix("EXT") ? candidate : nil
                    #expect(p.lines[1].tag?.name == expectedName, "\(candidate)\(suffix)")
                }
            }
        }
    }

    /// Attribute names end at the first byte outside `[A-Z0-9-]`, found eight bytes at a time: a lowercase letter,
    /// a byte just outside each range or a non-ASCII byte at every offset in a word is reported, and the name and
    /// value keep their bounds.
    @Test func attributeNameEndsAtEveryOffset() throws {
        for k in 0..<17 {
            for bad in ["a", "@", "[", "/", ":", "é", "_"] {
                let name = String(repeating: "A", count: k) + bad + "Z9-"
                let text = "#EXTM3U\n#EXT-X-START:TIME-OFFSET=1,\(name)=2,PRECISE=YES\n#EXT-X-ENDLIST\n"
                let p = try Playlist(text)
                let list = try #require(p.lines[1].tag?.attributes)
                #expect(list.map(\.name) == ["TIME-OFFSET", name, "PRECISE"], "k=\(k) \(bad)")
                #expect(list[name]?.rawValue == "2", "k=\(k) \(bad)")
                #expect(p.diagnostics.map(\.error.code) == [.malformedAttributeList], "k=\(k) \(bad)")
                #expect(p.write() == Array(text.utf8))
            }
            let clean = String(repeating: "A", count: k) + "Z9-"
            let p = try Playlist("#EXTM3U\n#EXT-X-START:TIME-OFFSET=1,\(clean)=2\n#EXT-X-ENDLIST\n")
            #expect(p.diagnostics.isEmpty, "k=\(k)")
            #expect(p.lines[1].tag?.attributes?[clean]?.rawValue == "2", "k=\(k)")
        }
    }

    /// Unquoted values end at the first comma or quote found eight bytes at a time: a stray quote at every offset
    /// in a word is reported at its column, and the values around it keep their bounds.
    @Test func strayQuoteInUnquotedValueAtEveryOffset() throws {
        for k in 0..<17 {
            let clean = String(repeating: "a", count: k)
            let stray = "x" + clean + "\"b"  // not at the value's start, where it would open a quoted string
            for (value, quoted) in [(clean, false), (stray, true)] {
                let p = try Playlist("#EXTM3U\n#EXT-X-START:TIME-OFFSET=1,X-A=\(value),PRECISE=YES\n#EXT-X-ENDLIST\n")
                let list = try #require(p.lines[1].tag?.attributes)
                #expect(list.map(\.name) == ["TIME-OFFSET", "X-A", "PRECISE"], "k=\(k)")
                #expect(list["X-A"]?.rawValue == value, "k=\(k)")
                #expect(list["PRECISE"]?.rawValue == "YES", "k=\(k)")
                let columns = p.diagnostics.filter { $0.error.code == .malformedAttributeList }.map(\.column)
                #expect(columns == (quoted ? [14 + 18 + 1 + k] : []), "k=\(k)")
                // At the end of the line too (no comma after the value).
                let last = try Playlist("#EXTM3U\n#EXT-X-START:TIME-OFFSET=1,X-A=\(value)\n#EXT-X-ENDLIST\n")
                #expect(last.lines[1].tag?.attributes?["X-A"]?.rawValue == value, "k=\(k)")
                #expect(last.write() == Array(last.text.utf8))
            }
        }
    }

    /// Lines are found eight bytes at a time: a non-UTF-8 byte just before the line feed, at every offset in a word,
    /// is still seen (and a clean line next to it is not blamed).
    @Test func invalidUTF8IsSeenAtEveryOffsetBeforeALineFeed() throws {
        for k in 0..<17 {
            var bytes = Array("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n".utf8)
            bytes += Array(repeating: UInt8(ascii: "a"), count: k) + [0xFF, 0x0A]
            bytes += Array("#EXTINF:6,\nclean.ts\n".utf8)
            let p = try Playlist(bytes: bytes)
            let lines = p.diagnostics.filter { $0.error.code == .invalidUTF8 }.map(\.error.line)
            #expect(lines == [4], "k=\(k)")
            #expect(p.write() == bytes)
        }
    }

    /// EXTINF durations are read by the buffer fast path; attribute values by the general one: both agree on
    /// every shape (integers, fractions, leading zeros, long mantissas, signs, junk).
    @Test(arguments: [
        "10", "9.618", "0.5", ".5", "5.", ".", "-1", "1.2.3", "00001.000", "0", "0.000000000000000001",
        "123456789012345", "1234567890123456", "123456789012345678901", "1234567890.123456789", "1e5",
        "12345678901234567890e3", "6.006006006006006", "x", "1 ", "4294967296.25",
    ])
    func extinfDurationsMatchAttributeFloats(text: String) throws {
        let p = try Playlist("#EXTM3U\n#EXTINF:\(text),t\nx.ts\n")
        let expected = Attribute(name: "X", rawValue: text).decimalFloat
        #expect(p.lines[1].tag?.extinf?.duration == expected, "\(text)")
        if expected != nil { #expect(p.lines[1].tag?.extinf?.durationText == text) }
    }

    @Test func roundTripIsByteIdenticalOnEveryFixture() throws {
        let files =
            Fixtures.files("valid") + Fixtures.files("quirks") + Fixtures.files("invalid")
            + Fixtures.files("invalid/live")
        #expect(files.count > 60)
        for file in files {
            let bytes = try Fixtures.bytes(file)
            let playlist = try Playlist(bytes: bytes)
            #expect(playlist.write() == bytes, "round trip of \(file.lastPathComponent)")
        }
    }

    @Test func validFixturesParseStrictly() throws {
        for file in Fixtures.files("valid") {
            let playlist = try Playlist(bytes: try Fixtures.bytes(file), strict: true)
            #expect(playlist.diagnostics.isEmpty, "\(file.lastPathComponent)")
        }
    }

    @Test func lineEndingsAndBOM() throws {
        let crlf = try Playlist(bytes: try Fixtures.bytes("quirks/crlf.m3u8"))
        #expect(crlf.lines.allSatisfy { $0.ending == .crlf })
        #expect(crlf.lines[0].text == "#EXTM3U")
        let bom = try Playlist(bytes: try Fixtures.bytes("quirks/bom-no-final-newline.m3u8"))
        #expect(bom.hasByteOrderMark)
        #expect(bom.lines.first?.knownTag == .extm3u)
        #expect(bom.lines.last?.ending == LineEnding.none)
        #expect(bom.lines.last?.knownTag == .endList)
        let mixed = try Playlist(bytes: try Fixtures.bytes("quirks/mixed-endings.m3u8"))
        #expect(mixed.lines.map(\.ending) == [.crlf, .lf, .crlf, .lf, .crlf, .none])
    }

    @Test func extinfTitlesWhitespaceAndUnknownTags() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("quirks/whitespace-and-titles.m3u8"))
        let extinfs = p.tags(.extinf).compactMap { $0.tag.extinf }
        #expect(extinfs.map(\.title) == [" Title, with commas, and \"quotes\"", "", ""])
        #expect(extinfs.map(\.duration) == [10, 9, 8.5])
        #expect(extinfs[2].hasComma == false)
        #expect(p.firstTag(.targetDuration)?.decimalInteger == 10)
        let unknown = p.lines.compactMap(\.tag).first { $0.known == nil }
        #expect(unknown?.name == "EXT-X-UNKNOWN-VENDOR-TAG")
        #expect(unknown?.value == .text("FOO=1, BAR=\"x\""))
        #expect(p.lines.filter(\.isComment).map(\.text) == ["# just a comment"])
        #expect(p.lines.filter(\.isBlank).count == 2)
        let media = p.media()
        #expect(media.segments.map(\.uri) == ["seg 1.ts", "seg2.ts", "seg3.ts"])
    }

    /// EXTINF, EXT-X-BYTERANGE and EXT-X-PROGRAM-DATE-TIME lines keep only their value when parsed and build their
    /// tag from their bytes when asked for: the same tag, text and value as written, equal (with equal hashes) to
    /// the line built from that tag when the text is canonical, and to the same line parsed again.
    @Test func segmentLinesBuildTheirTagFromTheirBytes() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXTINF:9.009,Title, with, commas\u{20}\u{20}
            a.ts
            #EXTINF:10
            b.ts
            #EXTINF:8.5,\r
            #EXT-X-BYTERANGE:100@200
            c.ts
            #EXT-X-PROGRAM-DATE-TIME:2026-03-04T05:06:07.890Z
            #EXTINF:7.000,x
            #EXT-X-BYTERANGE:50
            c.ts

            """
        let p = try Playlist(text)
        let extinfs = p.tags(.extinf).map(\.tag)
        #expect(extinfs.map { $0.extinf?.durationText } == ["9.009", "10", "8.5", "7.000"])
        #expect(extinfs.map { $0.extinf?.title } == ["Title, with, commas", "", "", "x"])
        #expect(extinfs.map { $0.extinf?.hasComma } == [true, false, true, true])
        #expect(extinfs.map { $0.extinf?.duration } == [9.009, 10, 8.5, 7])
        #expect(extinfs.map(\.valueText) == ["9.009,Title, with, commas", "10", "8.5,", "7.000,x"])
        #expect(
            p.tags(.byteRange).map { $0.tag.byteRange } == [ByteRangeSpec(length: 100, offset: 200), .init(length: 50)])
        #expect(p.firstTag(.programDateTime)?.dateTime?.text == "2026-03-04T05:06:07.890Z")
        #expect(
            p.lines.map(\.knownTag) == [
                .extm3u, .targetDuration, .extinf, nil, .extinf, nil, .extinf, .byteRange, nil, .programDateTime,
                .extinf, .byteRange, nil,
            ])
        #expect(
            p.lines.map(\.isURI) == [
                false, false, false, true, false, true, false, false, true, false, false, false, true,
            ])
        #expect(p.media().segments.map(\.title) == ["Title, with, commas", "", "", "x"])
        #expect(
            p.media().segments.map(\.byteRange) == [
                nil, nil, ByteRange(length: 100, offset: 200), ByteRange(length: 50, offset: 300),
            ])
        for index in [4, 7, 9, 10, 11] {
            let line = p.lines[index]
            let tag = try #require(line.tag)
            let built = PlaylistLine(tag: tag, ending: line.ending)
            #expect(built.text == line.text)
            #expect(built == line && line == built, "\(line.text)")
            #expect(built.hashValue == line.hashValue, "\(line.text)")
            #expect(line.content == .tag(tag))
        }
        // Not canonical: trailing blanks (kept in the bytes, not in the value).
        #expect(p.lines[2] != PlaylistLine(tag: try #require(p.lines[2].tag)))
        #expect(p.lines[2].tag == PlaylistLine(tag: try #require(p.lines[2].tag)).tag)
        #expect(p.lines[6].text == "#EXTINF:8.5," && p.lines[6].ending == .crlf)
        let again = try Playlist(text)
        #expect(again == p && again.lines == p.lines)
        #expect(Set(p.lines + again.lines).count == Set(p.lines).count)
        #expect(p.lines[2] != p.lines[4] && p.lines[8] == p.lines[12])
        #expect(p.write() == Array(text.utf8))
    }

    @Test func everyTagIsTyped() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("valid/every-media-tag.m3u8"))
        #expect(p.kind == .media)
        #expect(p.firstTag(.version)?.decimalInteger == 9)
        #expect(p.firstTag(.start)?.typedAttribute("TIME-OFFSET") == .signedDecimalFloat(-12.5))
        #expect(p.firstTag(.start)?.typedAttribute("PRECISE") == .enumeratedString("YES"))
        #expect(p.firstTag(.playlistType)?.enumeratedString == "EVENT")
        #expect(p.firstTag(.partInf)?.typedAttribute("PART-TARGET") == .decimalFloat(1.0))
        let key = try #require(p.firstTag(.key))
        #expect(key.typedAttribute("METHOD") == .enumeratedString("AES-128"))
        #expect(
            key.typedAttribute("IV")
                == .hexadecimalSequence([
                    0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
                ]))
        #expect(key.typedAttribute("URI") == .quotedString("{$host}/key"))
        #expect(p.firstTag(.programDateTime)?.dateTime?.secondsSince1970 == 1_767_323_045)
        let daterange = try #require(p.firstTag(.dateRange)?.attributes)
        #expect(
            daterange.map(\.name) == [
                "ID", "CLASS", "START-DATE", "DURATION", "PLANNED-DURATION", "SCTE35-OUT", "X-AD-ID", "X-COUNT",
            ])
        #expect(p.firstTag(.byteRange)?.byteRange == ByteRangeSpec(length: 1000, offset: 720))
        #expect(p.firstTag(.bitrate)?.decimalInteger == 1200)
        #expect(p.firstTag(.gap) != nil)
        #expect(p.firstTag(.skip)?.typedAttribute("SKIPPED-SEGMENTS") == .decimalInteger(2))
        #expect(p.firstTag(.preloadHint)?.typedAttribute("TYPE") == .enumeratedString("PART"))
        #expect(p.firstTag(.renditionReport)?.typedAttribute("LAST-MSN") == .decimalInteger(104))
        let mv = try Playlist(bytes: try Fixtures.bytes("valid/spec-session-data-steering.m3u8"))
        #expect(mv.kind == .multivariant)
        let inf = try #require(mv.firstTag(.streamInf))
        #expect(inf.typedAttribute("RESOLUTION") == .decimalResolution(Resolution(width: 1280, height: 720)))
        #expect(inf.typedAttribute("FRAME-RATE") == .decimalFloat(29.97))
        #expect(inf.typedAttribute("HDCP-LEVEL") == .enumeratedString("NONE"))
        #expect(mv.firstTag(.contentSteering)?.attributes?.quotedString("PATHWAY-ID") == "CDN-A")
        #expect(mv.firstTag(.sessionKey)?.attributes?.quotedString("KEYFORMAT") == "com.apple.streamingkeydelivery")
        #expect(mv.tags(.sessionData).count == 3)
        #expect(mv.firstTag(.iFrameStreamInf)?.typedAttribute("URI") == .quotedString("720p-iframes.m3u8"))
    }

    @Test func adMarkersAreTyped() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("valid/ad-markers.m3u8"))
        let cues = p.tags(.cueOut).compactMap { $0.tag.cue }
        #expect(cues.map(\.form) == [.duration, .attributes, .bare])
        #expect(cues.map(\.duration) == [30, 15, nil])
        let conts = p.tags(.cueOutCont).compactMap { $0.tag.cue }
        #expect(conts.map(\.form) == [.attributes, .elapsedSlashDuration])
        #expect(conts.map(\.elapsed) == [6, 12])
        #expect(conts.map(\.duration) == [30, 30])
        #expect(conts[0].attributes["SCTE35"]?.rawValue.hasPrefix("/DAl") == true)
        #expect(p.tags(.cueIn).count == 2)
        #expect(p.firstTag(.oatclsSCTE35)?.value == .text("/DAlAAAAAAAAAP/wFAUAAAABf+/+ANgNkv4AFJlwAAEBAQAAnP5B7Q=="))
        #expect(p.firstTag(.asset)?.attributes?["CAID"]?.hexadecimalSequence?.count == 8)
        #expect(p.firstTag(.scte35)?.attributes?.quotedString("ID") == "123")
        #expect(p.firstTag(.cue)?.attributes?.quotedString("TYPE") == "SpliceOut")
        #expect(p.firstTag(.splicePointSCTE35) != nil)
        #expect(p.diagnostics.isEmpty)
    }

    /// Decimal numbers with more fraction digits before the first significant one than a Double has (the zeros
    /// after the point counted as fraction digits and indexed past the table of powers of ten: a trap).
    @Test func fractionsWithManyLeadingZerosParse() throws {
        let tiny = "0." + String(repeating: "0", count: 30) + "5"
        let p = try Playlist(
            bytes: Array(
                ("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-CUE-OUT:\(tiny)\n#EXT-X-CUE-OUT-CONT:\(tiny)/\(tiny)\n"
                    + "#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2024-01-01T00:00:00Z\",DURATION=\(tiny)\n"
                    + "#EXTINF:\(tiny),\nsegment.ts\n").utf8))
        #expect(p.firstTag(.cueOut)?.cue?.duration == 5e-31)
        #expect(p.firstTag(.cueOutCont)?.cue?.elapsed == 5e-31)
        #expect(p.firstTag(.dateRange)?.attributes?.decimalFloat("DURATION") == 5e-31)
        #expect(p.media().segments.first?.duration == 5e-31)
        let iptv = try IPTVPlaylist(bytes: Array("#EXTM3U\n#EXTINF:-\(tiny),Name\nhttp://a/b\n".utf8))
        #expect(iptv.channels.first?.duration == -5e-31)
    }

    @Test func tolerantModeRecordsLineAndColumnAndKeepsGoing() throws {
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:x\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\n#EXTINF:abc,\na.ts\n#EXTINF:5,\nb.ts\n"
        let p = try Playlist(text)
        #expect(p.diagnostics.map(\.error.code) == [.invalidValue, .malformedAttributeList, .invalidValue])
        #expect(p.diagnostics.map(\.line) == [2, 3, 4])
        #expect(p.diagnostics.map(\.column) == [23, 31, 9])
        #expect(p.media().segments.map(\.uri) == ["a.ts", "b.ts"])
        #expect(p.write() == Array(text.utf8))
        #expect(throws: PlaylistError.self) { try Playlist(text, strict: true) }
        do {
            _ = try Playlist(text, strict: true)
        } catch {
            #expect(error.code == .invalidValue)
            #expect(error.line == 2)
        }
    }

    @Test func eachCapHasItsOwnError() throws {
        func code(_ text: String, _ limits: PlaylistLimits) -> PlaylistError.Code? {
            do {
                _ = try Playlist(text, limits: limits)
                return nil
            } catch { return error.code }
        }
        var l = PlaylistLimits()
        l.maxBytes = 10
        #expect(code("#EXTM3U\n#EXTINF:1,\na.ts\n", l) == .playlistTooLarge)
        l = PlaylistLimits()
        l.maxLineLength = 8
        #expect(code("#EXTM3U\n#EXTINF:1,\nabcdefghijk.ts\n", l) == .lineTooLong)
        l = PlaylistLimits()
        l.maxLines = 3
        #expect(code("#EXTM3U\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n", l) == .tooManyLines)
        l = PlaylistLimits()
        l.maxSegments = 1
        #expect(code("#EXTM3U\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n", l) == .tooManySegments)
        l = PlaylistLimits()
        l.maxVariants = 1
        #expect(
            code("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na\n#EXT-X-STREAM-INF:BANDWIDTH=2\nb\n", l) == .tooManyVariants
        )
        l = PlaylistLimits()
        l.maxAttributes = 2
        #expect(code("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,A=1,B=2\na\n", l) == .tooManyAttributes)
        l = PlaylistLimits()
        l.maxVariables = 1
        #expect(
            code("#EXTM3U\n#EXT-X-DEFINE:NAME=\"a\",VALUE=\"1\"\n#EXT-X-DEFINE:NAME=\"b\",VALUE=\"1\"\n", l)
                == .tooManyVariables)
    }

    /// Every prefix parses (tolerantly) without trapping, keeps the complete lines of the whole parse, and in strict
    /// mode a prefix that ends between EXTINF and its URI is a typed truncation error.
    @Test func everyPrefixOfEveryFixture() async throws {
        try await blocking {
            for file in Fixtures.files("valid") + Fixtures.files("quirks") {
                let bytes = try Fixtures.bytes(file)
                let whole = try Playlist(bytes: bytes)
                for n in 0...bytes.count {
                    let prefix = Array(bytes[0..<n])
                    let p = try Playlist(bytes: prefix)
                    #expect(p.write() == prefix)
                    let complete = p.lines.filter { $0.ending != .none }
                    #expect(
                        complete.map(\.bytes) == whole.lines.prefix(complete.count).map(\.bytes),
                        "\(file.lastPathComponent) prefix \(n)")
                    if let last = p.lines.last(where: { !$0.isBlank && !$0.isComment }), last.knownTag == .extinf {
                        #expect(throws: PlaylistError.self) { try Playlist(bytes: prefix, strict: true) }
                        #expect(p.diagnostics.contains { $0.error.code == .truncated })
                    }
                }
            }
        }
    }

    @Test func editsRenderAndKeepTheRest() throws {
        var p = try Playlist(bytes: try Fixtures.bytes("valid/ad-markers.m3u8"))
        // Drop every segment between CUE-OUT and CUE-IN along with its tags, as an ad filter would.
        let media = p.media()
        let ads = media.segments.filter { $0.rawURI.hasPrefix("ad") }
        for s in ads.reversed() { p.lines.removeSubrange(s.lineRange) }
        let after = p.media()
        #expect(after.segments.map(\.rawURI) == ["content1.ts", "content2.ts", "content3.ts"])
        if let i = p.lines.firstIndex(where: { $0.knownTag == .targetDuration }) {
            p.lines[i] = PlaylistLine(tag: Tag(.targetDuration, .decimalInteger(7)))
        }
        let text = p.text
        #expect(text.contains("#EXT-X-TARGETDURATION:7\n"))
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:3\n"))
        let reparsed = try Playlist(text)
        #expect(reparsed.write() == p.write())
        #expect(reparsed.lines.map(\.content) == p.lines.map(\.content))
    }

    @Test func canonicalWriter() throws {
        let p = try Playlist(bytes: try Fixtures.bytes("quirks/whitespace-and-titles.m3u8"))
        let canonical = String(decoding: p.writeCanonical(), as: UTF8.self)
        #expect(
            canonical == """
                #EXTM3U
                #EXT-X-TARGETDURATION:10
                #EXT-X-VERSION:3
                #EXTINF:10, Title, with commas, and "quotes"
                seg 1.ts
                # just a comment
                #EXT-X-UNKNOWN-VENDOR-TAG:FOO=1, BAR="x"
                #EXTINF:9,
                seg2.ts
                #EXT-X-KEY:METHOD=NONE
                #EXTINF:8.5
                seg3.ts
                #EXT-X-ENDLIST

                """)
        let again = try Playlist(bytes: p.writeCanonical())
        #expect(again.writeCanonical() == p.writeCanonical())
    }
}
