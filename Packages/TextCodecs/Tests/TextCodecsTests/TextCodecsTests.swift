import Testing
import TextCodecs

/// RFC 3986 §5.4: every normal and abnormal example of reference resolution against its base.
@Suite struct URIReferenceTests {
    static let base = URIReference("http://a/b/c/d;p?q")
    static let examples: [(String, String)] = [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        // §5.4.2, abnormal examples.
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"), ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g#s/./x"), ("g#s/../x", "http://a/b/c/g#s/../x"), ("http:g", "http:g"),
    ]

    @Test func resolvesEveryExampleOfTheRFC() {
        for (reference, expected) in Self.examples {
            #expect(URIReference(reference).resolved(against: Self.base).description == expected, "\(reference)")
        }
    }

    @Test func splitsIntoFivePartsAndRecomposesLosslessly() {
        let reference = URIReference("https://user@host:8443/a/b.m3u8?x=1&y#frag")
        #expect(reference.scheme == "https")
        #expect(reference.authority == "user@host:8443")
        #expect(reference.path == "/a/b.m3u8")
        #expect(reference.query == "x=1&y")
        #expect(reference.fragment == "frag")
        #expect(reference.queryParameter("x") == "1")
        #expect(reference.queryParameter("y") == "")
        #expect(reference.queryParameter("z") == nil)
        for text in ["", "a", "//h", "?q", "#f", "a:b", "1a:b", "/p?q#f", "%2e%2e/x"] {
            #expect(URIReference(text).description == text, "\(text)")
        }
        // A first segment with a colon but a digit first is a path, not a scheme.
        #expect(URIReference("1a:b").scheme == nil)
    }
}

@Suite struct PercentTests {
    @Test func decodesOnceAndRefusesMalformedEscapes() {
        #expect(Percent.decode(Array("a%20b%2Fc%25".utf8)) == Array("a b/c%".utf8))
        #expect(Percent.decode(Array("%252F".utf8)) == Array("%2F".utf8), "decoded once")
        for bad in ["%", "%2", "%G0", "a%0", "%+F"] {
            #expect(Percent.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(Percent.decodeUTF8(Array("caf%C3%A9".utf8)) == "café")
        #expect(Percent.decodeUTF8(Array("%C0%AF".utf8)) == nil, "an overlong form is refused")
        #expect(Percent.decodeUTF8(Array("%ED%A0%80".utf8)) == nil, "a surrogate is refused")
        #expect(Percent.decodeUTF8([0xFF]) == nil, "invalid UTF-8 without any escape is refused")
    }

    @Test func encodesWhatIsNotKeptAndReadsBack() {
        let text = "a b/é%~"
        let encoded = Percent.encode(text, keeping: Percent.isUnreserved)
        #expect(encoded == "a%20b%2F%C3%A9%25~")
        #expect(Percent.decodeUTF8(Array(encoded.utf8)) == text)
    }
}

@Suite struct HexTests {
    @Test func everyByteRoundTripsInBothCases() {
        let all = (0...255).map { UInt8($0) }
        let lower = Hex.encode(all)
        let upper = Hex.encode(all, uppercase: true)
        #expect(lower.hasPrefix("000102") && lower.hasSuffix("fdfeff"))
        #expect(upper == lower.uppercased())
        #expect(Hex.decode(Array(lower.utf8)) == all)
        #expect(Hex.decode(Array(upper.utf8)) == all)
        #expect(Hex.decode(Array("abc".utf8)) == [0x0A, 0xBC], "an odd count reads as if a 0 led it")
        #expect(Hex.decode(Array("0g".utf8)) == nil)
        for byte in 0...255 {
            let b = UInt8(byte)
            let model: UInt8? = UInt8(String(decoding: [b], as: UTF8.self), radix: 16)
            #expect(Hex.value(of: b) == (b == UInt8(ascii: "+") || b == UInt8(ascii: "-") ? nil : model), "\(b)")
        }
    }
}

@Suite struct CivilDateTests {
    /// Against a day-by-day walk from 1900 to 2100: every date's day count, its date back, and its weekday.
    @Test func agreesWithADayByDayCalendar() {
        var days = CivilDate.days(year: 1900, month: 1, day: 1)
        #expect(days == -25_567)
        var weekday = 1  // 1 January 1900 was a Monday
        for year: Int64 in 1900...2100 {
            for month: Int64 in 1...12 {
                let lengths: [Int64] = [
                    31, CivilDate.isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
                ]
                for day in 1...lengths[Int(month - 1)] {
                    #expect(CivilDate.days(year: year, month: month, day: day) == days)
                    let date = CivilDate.date(fromDays: days)
                    #expect(date.year == year && date.month == month && date.day == day)
                    #expect(CivilDate.weekday(fromDays: days) == weekday)
                    days += 1
                    weekday = (weekday + 1) % 7
                }
            }
        }
        #expect(CivilDate.isLeapYear(2000) && !CivilDate.isLeapYear(1900) && CivilDate.isLeapYear(2024))
        #expect(CivilDate.split(secondsSince1970: -1) == (days: -1, secondOfDay: 86_399))
        #expect(CivilDate.split(secondsSince1970: 86_400) == (days: 1, secondOfDay: 0))
    }
}

@Suite struct ByteSearchTests {
    /// Against `firstIndex(of:)` on every length to 40, every start, the byte at every position, with bytes that
    /// differ from the target by one bit and by a borrow (0x09 and 0x0B around LF, 0x8A with the high bit).
    @Test func findsTheFirstByteLikeTheNaiveSearch() {
        for length in 0...40 {
            for position in -1..<length {
                var bytes = (0..<length).map { [0x09, 0x0B, 0x8A, 0x0A ^ 0x80, 0x01][$0 % 5] as UInt8 }
                if position >= 0 { bytes[position] = 0x0A }
                if position >= 0, position + 3 < length { bytes[position + 3] = 0x0A }
                for from in 0...length {
                    let expected = bytes[from...].firstIndex(of: 0x0A) ?? length
                    let found = bytes.withUnsafeBufferPointer { ByteSearch.firstIndex(of: 0x0A, in: $0, from: from) }
                    #expect(found == expected, "length \(length), LF at \(position), from \(from)")
                }
            }
        }
        let word = UInt64(0x0A00_0A0B_0A09_0A0A)
        #expect(ByteSearch.matches(word, 0x0A).nonzeroBitCount == 5)
    }

    /// The two-byte search against the naive one: every length to 24, each of the two bytes at every position, with
    /// near misses (one bit off, and the other byte's neighbours) around them.
    @Test func findsTheFirstOfTwoBytesLikeTheNaiveSearch() {
        let (a, b): (UInt8, UInt8) = (0x3D, 0x2C)  // `=` and `,`
        for length in 0...24 {
            for position in -1..<length {
                for target in [a, b] {
                    var bytes = (0..<length).map { [0x3C, 0x2D, 0xBD, 0x2C ^ 0x80, 0x3E][$0 % 5] as UInt8 }
                    if position >= 0 { bytes[position] = target }
                    if position >= 0, position + 5 < length { bytes[position + 5] = target == a ? b : a }
                    for from in 0...length {
                        let expected = bytes[from...].firstIndex { $0 == a || $0 == b } ?? length
                        let found = bytes.withUnsafeBufferPointer {
                            ByteSearch.firstIndex(of: a, or: b, in: $0, from: from)
                        }
                        #expect(found == expected, "length \(length), \(target) at \(position), from \(from)")
                    }
                }
            }
        }
    }
}

@Suite struct DecimalDigitsTests {
    /// Every power of ten and its neighbours, the extremes, and a spread of values, after bytes already there: the
    /// same digits as the standard library's description.
    @Test func writesWhatDescriptionWrites() {
        var values: [UInt64] = [0, 1, 9, 10, 11, UInt64.max, UInt64.max - 1]
        var power: UInt64 = 1
        while power <= UInt64.max / 10 {
            power *= 10
            values += [power - 1, power, power + 1]
        }
        var generator = SystemRandomNumberGenerator()
        values += (0..<1000).map { _ in
            UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64.random(in: 0...63)
        }
        for value in values {
            var bytes = Array("x=".utf8)
            DecimalDigits.append(value, to: &bytes)
            #expect(bytes == Array("x=\(value)".utf8), "\(value)")
        }
    }
}
