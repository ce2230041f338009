import TextCodecs

/// One `range-spec` of an RFC 9110 §14.1.1 byte-range set.
public enum RangeSpecifier: Hashable, Sendable {
    /// `first-pos "-" [ last-pos ]`: from `first` to `last` inclusive, or to the end when `last` is nil.
    case range(first: UInt64, last: UInt64?)
    /// `"-" suffix-length`: the last `length` bytes.
    case suffix(length: UInt64)
}

/// What a server does with a `Range` header, once resolved against the representation's length (RFC 9110 §14.2).
public enum RangeResolution: Hashable, Sendable {
    /// Ignore the header and answer 200 with the whole representation: the header was invalid, used another unit, or
    /// asked for more ranges than the server allows.
    case full
    /// Answer 206 with these ranges: one range is a single part, several are `multipart/byteranges`. They are sorted
    /// and coalesced: none overlaps or touches another.
    case partial([ByteRange])
    /// Answer 416 with `Content-Range: bytes */LEN`: no range overlaps the representation.
    case unsatisfiable
}

/// A parsed `Range` header with the `bytes` unit (RFC 9110 §14.1.1, §14.2).
public struct RangeRequest: Hashable, Sendable {
    /// The range specifiers in the order the client gave them.
    public var specifiers: [RangeSpecifier]

    /// A request for `specifiers`.
    public init(specifiers: [RangeSpecifier]) {
        self.specifiers = specifiers
    }

    /// The most range specifiers ``parse(_:)-(Collection<UInt8>)`` accepts; a longer header is invalid, so ignored.
    public static let maximumSpecifierCount = 1000

    /// Parses a `Range` field value. Returns nil when the value is not a valid `bytes` range set, including another
    /// range unit: RFC 9110 §14.2 has the server ignore such a header.
    ///
    /// Accepts what the grammar allows: a case-insensitive unit, optional whitespace around the commas of the list,
    /// empty list elements, and leading or trailing whitespace around the whole value. Numbers too large for `UInt64`
    /// saturate, which resolves as "to the end" for a last position and as unsatisfiable for a first position.
    public static func parse(_ value: some Collection<UInt8>) -> RangeRequest? {
        // Walks the bytes where they lie (a `String`'s UTF-8, a slice of a request buffer); only a collection
        // without contiguous storage is copied first.
        if let parsed = value.withContiguousStorageIfAvailable({ parse(borrowing: $0) }) { return parsed }
        return Array(value).withUnsafeBufferPointer { parse(borrowing: $0) }
    }

    /// ``parse(_:)-(Collection<UInt8>)`` over borrowed bytes, by index: no copy, and no array but the result's.
    private static func parse(borrowing bytes: UnsafeBufferPointer<UInt8>) -> RangeRequest? {
        var start = 0
        var end = bytes.count
        trimWhitespace(bytes, &start, &end)
        // range-unit = token, compared case-insensitively with "bytes"
        guard end - start > 5, lowercased(bytes[start]) == UInt8(ascii: "b"),
            lowercased(bytes[start + 1]) == UInt8(ascii: "y"), lowercased(bytes[start + 2]) == UInt8(ascii: "t"),
            lowercased(bytes[start + 3]) == UInt8(ascii: "e"), lowercased(bytes[start + 4]) == UInt8(ascii: "s"),
            bytes[start + 5] == UInt8(ascii: "=")
        else { return nil }
        var specifiers: [RangeSpecifier] = []
        var position = start + 6
        while true {
            // 1#range-spec: elements separated by OWS "," OWS; empty elements are accepted.
            var comma = position
            while comma < end, bytes[comma] != UInt8(ascii: ",") { comma += 1 }
            var elementStart = position
            var elementEnd = comma
            trimWhitespace(bytes, &elementStart, &elementEnd)
            if elementStart < elementEnd {
                guard let specifier = parseSpecifier(bytes, elementStart, elementEnd) else { return nil }
                if specifiers.isEmpty { specifiers.reserveCapacity(1) }
                specifiers.append(specifier)
                guard specifiers.count <= maximumSpecifierCount else { return nil }
            }
            guard comma < end else { break }
            position = comma + 1
        }
        guard !specifiers.isEmpty else { return nil }
        return RangeRequest(specifiers: specifiers)
    }

    /// Parses a `Range` field value given as a string; see ``parse(_:)-(Collection<UInt8>)``.
    public static func parse(_ value: String) -> RangeRequest? {
        parse(value.utf8)
    }

    /// Resolves the request against a representation of `length` bytes (RFC 9110 §14.1.2).
    ///
    /// - Parameter maxRanges: more specifiers than this make the server ignore the header and send the whole
    ///   representation, a defence against range-amplification requests (nginx's `max_ranges` does the same).
    public func resolve(length: UInt64, maxRanges: Int = 16) -> RangeResolution {
        guard specifiers.count <= maxRanges else { return .full }
        var satisfiable: [ByteRange] = []
        satisfiable.reserveCapacity(specifiers.count)
        for specifier in specifiers {
            switch specifier {
            case .range(let first, let last):
                guard first < length else { continue }
                let end = min(last ?? (length - 1), length - 1)
                guard end >= first, let range = ByteRange(first: first, last: end) else { continue }
                satisfiable.append(range)
            case .suffix(let suffixLength):
                guard suffixLength > 0, length > 0 else { continue }
                let start = suffixLength >= length ? 0 : length - suffixLength
                if let range = ByteRange(lowerBound: start, upperBound: length) {
                    satisfiable.append(range)
                }
            }
        }
        guard !satisfiable.isEmpty else { return .unsatisfiable }
        // One range (the common request) is already sorted and coalesced.
        if satisfiable.count == 1 { return .partial(satisfiable) }
        return .partial(ByteRangeSet(satisfiable).ranges)
    }

    /// One range-spec in `bytes[start..<end]` (trimmed, not empty).
    private static func parseSpecifier(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int)
        -> RangeSpecifier?
    {
        var dash = start
        while dash < end, bytes[dash] != UInt8(ascii: "-") { dash += 1 }
        guard dash < end else { return nil }
        if dash == start {
            guard let length = parseDigits(bytes, dash + 1, end) else { return nil }
            return .suffix(length: length)
        }
        guard let first = parseDigits(bytes, start, dash) else { return nil }
        if dash + 1 == end {
            return .range(first: first, last: nil)
        }
        guard let last = parseDigits(bytes, dash + 1, end), last >= first else { return nil }
        return .range(first: first, last: last)
    }

    /// `1*DIGIT` in `bytes[start..<end]`, saturating at `UInt64.max`.
    private static func parseDigits(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64? {
        guard start < end else { return nil }
        var value: UInt64 = 0
        for index in start..<end {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            value = (overflow1 || overflow2) ? UInt64.max : sum
        }
        return value
    }

    /// Narrows `start..<end` past spaces and tabs at both ends.
    private static func trimWhitespace(_ bytes: UnsafeBufferPointer<UInt8>, _ start: inout Int, _ end: inout Int) {
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte + 32 : byte
    }
}

/// `Content-Range` field values (RFC 9110 §14.4).
public enum ContentRange {
    /// `bytes FIRST-LAST/COMPLETE` for a range that was sent. An empty range gives the unsatisfied form.
    public static func value(for range: ByteRange, completeLength: UInt64) -> String {
        guard range.last != nil else { return unsatisfiedValue(completeLength: completeLength) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(6 + 3 * 20 + 2)
        append(for: range, completeLength: completeLength, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``value(for:completeLength:)`` written onto `bytes` (a response head being built: no string between).
    public static func append(for range: ByteRange, completeLength: UInt64, to bytes: inout [UInt8]) {
        guard let last = range.last else {
            bytes += unsatisfiedValue(completeLength: completeLength).utf8
            return
        }
        bytes += "bytes ".utf8
        DecimalDigits.append(range.offset, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        DecimalDigits.append(last, to: &bytes)
        bytes.append(UInt8(ascii: "/"))
        DecimalDigits.append(completeLength, to: &bytes)
    }

    /// `bytes */COMPLETE`, sent with 416 (Range Not Satisfiable).
    public static func unsatisfiedValue(completeLength: UInt64) -> String {
        "bytes */\(completeLength)"
    }

    /// Reads a received value: `bytes FIRST-LAST/COMPLETE`, `bytes FIRST-LAST/*` (the complete length unknown) or
    /// `bytes */COMPLETE` (sent with 416: no range). The unit is matched without regard to case and spaces around
    /// the value are ignored. Nil for anything else, including `FIRST` after `LAST`, `LAST` at or past a known
    /// `COMPLETE`, and `*/*`: the one reader of this field, for the downloader and the caching proxy alike.
    public static func parse(_ value: String) -> (range: ClosedRange<UInt64>?, completeLength: UInt64?)? {
        var text = Substring(value)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        guard text.count > 6, text.prefix(6).lowercased() == "bytes " else { return nil }
        let halves = text.dropFirst(6).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        func number(_ digits: Substring) -> UInt64? {
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return UInt64(digits)
        }
        let completeLength: UInt64?
        if halves[1] == "*" {
            completeLength = nil
        } else {
            guard let length = number(halves[1]) else { return nil }
            completeLength = length
        }
        if halves[0] == "*" {
            guard let completeLength else { return nil }
            return (nil, completeLength)
        }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]), first <= last else {
            return nil
        }
        if let completeLength, last >= completeLength { return nil }
        return (first...last, completeLength)
    }
}

/// `If-Range` evaluation (RFC 9110 §13.1.5).
public enum IfRange {
    /// Whether the `Range` header should be honoured given this `If-Range` value: true when it is a strong entity tag
    /// equal to the representation's strong `entityTag`, or an HTTP-date equal to `lastModified`. A weak tag, a date
    /// that differs, or a value that is neither makes the server ignore `Range` and send the whole representation.
    public static func rangeApplies(ifRange: String, entityTag: String?, lastModified: HTTPDate?) -> Bool {
        var value = Substring(ifRange)
        while value.first == " " || value.first == "\t" { value.removeFirst() }
        while value.last == " " || value.last == "\t" { value.removeLast() }
        if value.hasPrefix("W/") {
            return false
        }
        if value.first == "\"" {
            guard let entityTag, !entityTag.hasPrefix("W/"), value.count >= 2, value.last == "\"" else { return false }
            return value == Substring(entityTag)
        }
        guard let date = HTTPDate.parse(String(value)), let lastModified else { return false }
        return date == lastModified
    }
}
