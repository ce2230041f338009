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
        var bytes = Array(value)[...]
        trimWhitespace(&bytes)
        // range-unit = token, compared case-insensitively with "bytes"
        guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let unit = bytes[bytes.startIndex..<equals]
        guard unit.count == 5, zip(unit, "bytes".utf8).allSatisfy({ lowercased($0) == $1 }) else { return nil }
        var rest = bytes[(equals + 1)...]
        var specifiers: [RangeSpecifier] = []
        while true {
            // 1#range-spec: elements separated by OWS "," OWS; empty elements are accepted.
            let comma = rest.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            var element = rest[rest.startIndex..<comma]
            trimWhitespace(&element)
            if !element.isEmpty {
                guard let specifier = parseSpecifier(element) else { return nil }
                specifiers.append(specifier)
                guard specifiers.count <= maximumSpecifierCount else { return nil }
            }
            guard comma < rest.endIndex else { break }
            rest = rest[(comma + 1)...]
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
        return .partial(ByteRangeSet(satisfiable).ranges)
    }

    private static func parseSpecifier(_ element: ArraySlice<UInt8>) -> RangeSpecifier? {
        guard let dash = element.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let before = element[element.startIndex..<dash]
        let after = element[(dash + 1)...]
        if before.isEmpty {
            guard let length = parseDigits(after) else { return nil }
            return .suffix(length: length)
        }
        guard let first = parseDigits(before) else { return nil }
        if after.isEmpty {
            return .range(first: first, last: nil)
        }
        guard let last = parseDigits(after), last >= first else { return nil }
        return .range(first: first, last: last)
    }

    /// `1*DIGIT`, saturating at `UInt64.max`.
    private static func parseDigits(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            value = (overflow1 || overflow2) ? UInt64.max : sum
        }
        return value
    }

    private static func trimWhitespace(_ bytes: inout ArraySlice<UInt8>) {
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte + 32 : byte
    }
}

/// `Content-Range` field values (RFC 9110 §14.4).
public enum ContentRange {
    /// `bytes FIRST-LAST/COMPLETE` for a range that was sent. An empty range gives the unsatisfied form.
    public static func value(for range: ByteRange, completeLength: UInt64) -> String {
        guard let last = range.last else { return unsatisfiedValue(completeLength: completeLength) }
        return "bytes \(range.offset)-\(last)/\(completeLength)"
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
