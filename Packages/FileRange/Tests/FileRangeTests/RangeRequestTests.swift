import FileRange
import TestSupport
import Testing

@Suite struct RangeRequestTests {
    func resolve(_ header: String, _ length: UInt64) -> RangeResolution? {
        RangeRequest.parse(header)?.resolve(length: length)
    }

    func ranges(_ pairs: [(UInt64, UInt64)]) -> RangeResolution {
        .partial(pairs.compactMap { ByteRange(first: $0.0, last: $0.1) })
    }

    /// RFC 9110 §14.1.2: the examples for a representation of length 10000.
    @Test func rfc9110ByteRangeExamples() {
        #expect(resolve("bytes=0-499", 10000) == ranges([(0, 499)]))  // the first 500 bytes
        #expect(resolve("bytes=500-999", 10000) == ranges([(500, 999)]))  // the second 500 bytes
        #expect(resolve("bytes=500-", 10000) == ranges([(500, 9999)]))  // all but the first 500
        #expect(resolve("bytes=-500", 10000) == ranges([(9500, 9999)]))  // the final 500 bytes
        #expect(resolve("bytes=9500-", 10000) == ranges([(9500, 9999)]))  // the final 500 bytes, another way
        #expect(resolve("bytes=0-0,-1", 10000) == ranges([(0, 0), (9999, 9999)]))  // first and last bytes
        // Other valid (but not canonical) specifications of the second 500 bytes: coalesced to one range.
        #expect(resolve("bytes=500-600,601-999", 10000) == ranges([(500, 999)]))
        #expect(resolve("bytes=500-700,601-999", 10000) == ranges([(500, 999)]))
    }

    /// RFC 9110 §14.1.1 and §14.2: list syntax, unit, validity.
    @Test func syntax() {
        #expect(resolve("bytes=0-999, 4500-5499, -1000", 10000) == ranges([(0, 999), (4500, 5499), (9000, 9999)]))
        #expect(resolve("BYTES=0-1", 10) == ranges([(0, 1)]))  // the unit is case-insensitive
        #expect(resolve("bytes=0-1 ,\t2-3", 10) == ranges([(0, 3)]))  // OWS around commas
        #expect(resolve("bytes=,0-1,,", 10) == ranges([(0, 1)]))  // empty list elements are accepted
        #expect(resolve("  bytes=0-1  ", 10) == ranges([(0, 1)]))
        #expect(RangeRequest.parse("bytes=5-4") == nil)  // last < first: invalid, so ignored (200)
        #expect(RangeRequest.parse("items=0-1") == nil)  // another unit: ignored
        #expect(RangeRequest.parse("bytes=") == nil)
        #expect(RangeRequest.parse("bytes=,") == nil)
        #expect(RangeRequest.parse("bytes=-") == nil)
        #expect(RangeRequest.parse("bytes=a-b") == nil)
        #expect(RangeRequest.parse("bytes=0-1-2") == nil)
        #expect(RangeRequest.parse("bytes = 0-1") == nil)  // no whitespace around "=" in the grammar
        #expect(RangeRequest.parse("bytes=+1-2") == nil)
        #expect(RangeRequest.parse("bytes=0x1-2") == nil)
        #expect(RangeRequest.parse("bytes0-1") == nil)
        #expect(RangeRequest.parse("") == nil)
    }

    @Test func unsatisfiableAndClamping() {
        #expect(resolve("bytes=10000-", 10000) == .unsatisfiable)
        #expect(resolve("bytes=-0", 10000) == .unsatisfiable)  // a zero-length suffix is unsatisfiable
        #expect(resolve("bytes=0-", 0) == .unsatisfiable)  // nothing to send from an empty representation
        #expect(resolve("bytes=-5", 0) == .unsatisfiable)
        #expect(resolve("bytes=9000-20000", 10000) == ranges([(9000, 9999)]))  // last-pos clamped
        #expect(resolve("bytes=-20000", 10000) == ranges([(0, 9999)]))  // suffix longer than the representation
        #expect(resolve("bytes=20000-30000,0-0", 10000) == ranges([(0, 0)]))  // one satisfiable range is enough
        // Numbers beyond UInt64 saturate instead of trapping or wrapping.
        #expect(resolve("bytes=0-99999999999999999999999999", 10) == ranges([(0, 9)]))
        #expect(resolve("bytes=99999999999999999999999999-", 10) == .unsatisfiable)
        #expect(resolve("bytes=-99999999999999999999999999", 10) == ranges([(0, 9)]))
    }

    @Test func rangeCountCapIgnoresTheHeader() {
        let many = "bytes=" + (0..<17).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        #expect(resolve(many, 1000) == .full)
        #expect(RangeRequest.parse(many)?.resolve(length: 1000, maxRanges: 17) != .full)
        let huge =
            "bytes="
            + [String](repeating: "0-0", count: RangeRequest.maximumSpecifierCount + 1)
            .joined(separator: ",")
        #expect(RangeRequest.parse(huge) == nil)
    }

    /// RFC 9110 §14.4 and §14.6: Content-Range values.
    @Test func contentRangeValues() throws {
        #expect(
            ContentRange.value(for: try #require(ByteRange(first: 42, last: 1233)), completeLength: 1234)
                == "bytes 42-1233/1234")
        #expect(ContentRange.unsatisfiedValue(completeLength: 1234) == "bytes */1234")
        #expect(
            ContentRange.value(for: try #require(ByteRange(first: 500, last: 999)), completeLength: 8000)
                == "bytes 500-999/8000")
        #expect(
            ContentRange.value(for: try #require(ByteRange(first: 7000, last: 7999)), completeLength: 8000)
                == "bytes 7000-7999/8000")
    }

    /// Every header of one or two range specs over positions 0...13, for every representation length 0...12, against
    /// a naive model that marks each selected byte. The failure message names the header and the length.
    @Test func exhaustiveSmallRepresentationsAgainstNaiveModel() async {
        await blocking {
            var specs: [String] = []
            for first in 0...13 {
                specs.append("\(first)-")
                for last in first...13 { specs.append("\(first)-\(last)") }
            }
            for suffix in 0...13 { specs.append("-\(suffix)") }
            var headers = specs.map { "bytes=\($0)" }
            for a in specs { for b in specs { headers.append("bytes=\(a), \(b)") } }
            for length in 0...12 {
                for header in headers {
                    let result = resolve(header, UInt64(length))
                    let expected = Self.naive(header: header, length: length)
                    if result != expected {
                        Issue.record(
                            "length \(length), header '\(header)': got \(String(describing: result)), expected \(expected)"
                        )
                        return
                    }
                }
            }
        }
    }

    /// The model: mark every selected byte in a Bool array, then read back the maximal runs.
    static func naive(header: String, length: Int) -> RangeResolution {
        var marked = [Bool](repeating: false, count: length)
        var any = false
        for spec in header.dropFirst("bytes=".count).split(separator: ",") {
            let text = spec.trimmingPrefix(" ")
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            if parts[0].isEmpty {
                let suffix = Int(parts[1]) ?? 0
                guard suffix > 0, length > 0 else { continue }
                for i in max(0, length - suffix)..<length { marked[i] = true }
                any = true
            } else {
                let first = Int(parts[0]) ?? 0
                let last = parts[1].isEmpty ? length - 1 : min(Int(parts[1]) ?? 0, length - 1)
                guard first < length else { continue }
                for i in first...last { marked[i] = true }
                any = true
            }
        }
        guard any else { return .unsatisfiable }
        return .partial(ByteRangeTests.runs(marked))
    }
}

@Suite struct HTTPDateTests {
    /// The byte-by-byte formatter against known texts, and every value read back by the parser, across leap days,
    /// the epoch and the last second of year 9999.
    @Test func imfFixdateIsExactAndReadsBack() {
        #expect(HTTPDate(secondsSince1970: 0).imfFixdate == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate(secondsSince1970: 784_111_777).imfFixdate == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate(secondsSince1970: 951_782_400).imfFixdate == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate(secondsSince1970: 253_402_300_799).imfFixdate == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate(secondsSince1970: -1).imfFixdate == "Wed, 31 Dec 1969 23:59:59 GMT")
        for seconds: Int64 in [0, 784_111_777, 951_782_400, 1_700_000_000, 4_102_444_800, 253_402_300_799] {
            let date = HTTPDate(secondsSince1970: seconds)
            #expect(HTTPDate.parse(date.imfFixdate) == date, "\(seconds): \(date.imfFixdate)")
        }
    }

    /// RFC 9110 §5.6.7: the three forms of the same instant.
    @Test func rfc9110Forms() {
        let instant = HTTPDate(secondsSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == instant)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == instant)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == instant)
        #expect(instant.imfFixdate == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func rejectsMalformedDates() {
        for text in [
            "", "Sun, 06 Nov 1994 08:49:37", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT junk", "1994-11-06T08:49:37Z",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    /// Formatting then parsing gives back the same second, for one instant in every week from 1970 to 2100.
    @Test func roundTripAcrossCenturies() {
        var seconds: Int64 = 0
        while seconds < 4_102_444_800 {
            let date = HTTPDate(secondsSince1970: seconds)
            #expect(HTTPDate.parse(date.imfFixdate) == date, "\(seconds) -> \(date.imfFixdate)")
            seconds += 7 * 86_400 + 3_671
        }
        #expect(HTTPDate(secondsSince1970: 951_782_400).imfFixdate == "Tue, 29 Feb 2000 00:00:00 GMT")
    }

    @Test func ifRange() {
        let lastModified = HTTPDate(secondsSince1970: 784_111_777)
        #expect(IfRange.rangeApplies(ifRange: "\"abc\"", entityTag: "\"abc\"", lastModified: nil))
        #expect(!IfRange.rangeApplies(ifRange: "\"abc\"", entityTag: "\"abd\"", lastModified: nil))
        #expect(!IfRange.rangeApplies(ifRange: "W/\"abc\"", entityTag: "\"abc\"", lastModified: nil))  // weak: never
        #expect(!IfRange.rangeApplies(ifRange: "\"abc\"", entityTag: "W/\"abc\"", lastModified: nil))
        #expect(!IfRange.rangeApplies(ifRange: "\"abc\"", entityTag: nil, lastModified: lastModified))
        #expect(
            IfRange.rangeApplies(
                ifRange: "Sun, 06 Nov 1994 08:49:37 GMT", entityTag: "\"x\"", lastModified: lastModified))
        #expect(
            !IfRange.rangeApplies(ifRange: "Sun, 06 Nov 1994 08:49:38 GMT", entityTag: nil, lastModified: lastModified))
        #expect(!IfRange.rangeApplies(ifRange: "Sun, 06 Nov 1994 08:49:37 GMT", entityTag: "\"x\"", lastModified: nil))
        #expect(!IfRange.rangeApplies(ifRange: "garbage", entityTag: "\"x\"", lastModified: lastModified))
    }
}

/// The one reader of received `Content-Range` values (the downloader's and the caching proxy's).
@Suite struct ContentRangeParseTests {
    @Test func readsTheThreeFormsAndRefusesTheRest() {
        #expect(ContentRange.parse("bytes 0-99/1000")! == (0...99, 1000))
        #expect(ContentRange.parse("  Bytes 5-5/*\t")! == (5...5, nil))
        #expect(ContentRange.parse("bytes */1000")! == (nil, 1000))
        #expect(
            ContentRange.parse("bytes 0-18446744073709551614/18446744073709551615")! == (
                0...18_446_744_073_709_551_614, UInt64.max
            ))
        for bad in [
            "", "bytes", "bytes ", "bytes */*", "bytes 10-9/100", "bytes 0-100/100", "bytes 0-99", "items 0-9/10",
            "bytes -1-9/10", "bytes 0-+9/10", "bytes 0-9/+10", "bytes 0-9/1x", "bytes 0-9/18446744073709551616",
            "bytes 0 -9/10", "bytes=0-9/10", "bytes 5-4/100", "bytes 0-100/100", "items 0-9/100", "bytes 0-9/x",
        ] {
            #expect(ContentRange.parse(bad) == nil, "\(bad)")
        }
    }
}
