import TextCodecs

// Byte-level helpers shared by the parsers: ASCII classes, number parsing and number formatting.
// Everything here works on UTF-8 bytes and never traps on input.

@usableFromInline let asciiLF: UInt8 = 0x0A
@usableFromInline let asciiCR: UInt8 = 0x0D
@usableFromInline let asciiHash: UInt8 = 0x23
@usableFromInline let asciiColon: UInt8 = 0x3A
@usableFromInline let asciiComma: UInt8 = 0x2C
@usableFromInline let asciiQuote: UInt8 = 0x22
@usableFromInline let asciiApostrophe: UInt8 = 0x27
@usableFromInline let asciiEquals: UInt8 = 0x3D
@usableFromInline let asciiSpace: UInt8 = 0x20
@usableFromInline let asciiTab: UInt8 = 0x09

enum ASCII {
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    static func isWhitespace(_ b: UInt8) -> Bool { b == asciiSpace || b == asciiTab }
    /// Characters of an attribute name per RFC 8216bis §4.2: `[A-Z0-9-]`.
    static func isAttributeNameByte(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || isDigit(b) || b == 0x2D
    }
}

/// Number parsing per the value types of RFC 8216bis §4.2.
enum Numbers {
    /// A decimal-integer: 1 to 20 digits in the range 0 to 2^64-1.
    static func decimalInteger<C: Collection<UInt8>>(_ bytes: C) -> UInt64? {
        if bytes.isEmpty || bytes.count > 20 { return nil }
        var value: UInt64 = 0
        for b in bytes {
            guard ASCII.isDigit(b) else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(b &- 0x30))
            if o1 || o2 { return nil }
            value = s
        }
        return value
    }

    private static let powersOfTen: [Double] = [
        1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    ]

    /// A decimal-floating-point (`signed` false) or signed-decimal-floating-point (`signed` true): digits with an
    /// optional fraction; no exponent. Exact when there are at most 15 significant digits.
    static func decimalFloat<C: Collection<UInt8>>(_ bytes: C, signed: Bool) -> Double? {
        var i = bytes.startIndex
        var negative = false
        guard i != bytes.endIndex else { return nil }
        if bytes[i] == 0x2D {
            guard signed else { return nil }
            negative = true
            i = bytes.index(after: i)
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var sawDigit = false
        var sawPoint = false
        var pointIsLast = false
        while i != bytes.endIndex {
            let b = bytes[i]
            if ASCII.isDigit(b) {
                sawDigit = true
                pointIsLast = false
                if digits < 18 {
                    mantissa = mantissa &* 10 &+ UInt64(b &- 0x30)
                    if mantissa != 0 { digits += 1 }
                    if sawPoint { fractionDigits += 1 }
                } else if !sawPoint {
                    return slowFloat(bytes)
                }
            } else if b == 0x2E && !sawPoint {
                sawPoint = true
                pointIsLast = true
            } else {
                return nil
            }
            i = bytes.index(after: i)
        }
        if !sawDigit || pointIsLast && !sawDigit { return nil }
        // Zeros after the point count as fraction digits but not as significant ones: past the table, the slow way.
        if digits > 15 || fractionDigits >= powersOfTen.count { return slowFloat(bytes) }
        let value = Double(mantissa) / powersOfTen[fractionDigits]
        return negative ? -value : value
    }

    /// ``decimalFloat(_:signed:)`` over a buffer with integer offsets (the hot path of EXTINF and attribute values).
    static func decimalFloat(_ b: UnsafeBufferPointer<UInt8>, signed: Bool) -> Double? {
        let n = b.count
        guard n > 0 else { return nil }
        var i = 0
        var negative = false
        if b[0] == 0x2D {
            guard signed else { return nil }
            negative = true
            i = 1
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var sawDigit = false
        var sawPoint = false
        while i < n {
            let c = b[i]
            if c &- 0x30 < 10 {
                sawDigit = true
                if digits < 18 {
                    mantissa = mantissa &* 10 &+ UInt64(c &- 0x30)
                    if mantissa != 0 { digits &+= 1 }
                    if sawPoint { fractionDigits &+= 1 }
                } else if !sawPoint {
                    return slowFloat(b)
                }
            } else if c == 0x2E && !sawPoint {
                sawPoint = true
            } else {
                return nil
            }
            i &+= 1
        }
        if !sawDigit { return nil }
        // As above: the scale below is exact up to 1e18, so more fraction digits (zeros after the point) go the slow way.
        if digits > 15 || fractionDigits > 18 { return slowFloat(b) }
        // Powers of ten up to 1e18 are exact, and so is each product on the way.
        var scale: Double = 1
        var k = 0
        while k < fractionDigits {
            scale *= 10
            k &+= 1
        }
        let value = Double(mantissa) / scale
        return negative ? -value : value
    }

    private static func slowFloat<C: Collection<UInt8>>(_ bytes: C) -> Double? {
        Double(String(decoding: bytes, as: UTF8.self))
    }

    /// A hexadecimal-sequence: `0x` or `0X` followed by hex digits, as bytes (an odd digit count is left-padded).
    static func hexadecimal<C: Collection<UInt8>>(_ bytes: C) -> [UInt8]? {
        let array = Array(bytes)
        guard array.count >= 3, array[0] == 0x30, array[1] == 0x78 || array[1] == 0x58 else { return nil }
        return Hex.decode(array[2...])
    }

    /// Formats with exactly `decimals` fraction digits (rounded half away from zero), without Foundation.
    static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        let clampedDecimals = max(0, min(decimals, 9))
        var scale: Double = 1
        for _ in 0..<clampedDecimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return String(value) }
        let units = UInt64(scaled)
        let divisor = UInt64(scale)
        let whole = units / divisor
        var text = negative && units != 0 ? "-" : ""
        text += String(whole)
        if clampedDecimals > 0 {
            let fraction = String(units % divisor)
            text += "." + String(repeating: "0", count: clampedDecimals - fraction.count) + fraction
        }
        return text
    }

    /// Formats with the fewest fraction digits (up to 6) that keep the value.
    static func formatShort(_ value: Double) -> String {
        var text = format(value, decimals: 6)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }
}

extension Array where Element == UInt8 {
    @inlinable mutating func append(ascii string: String) {
        append(contentsOf: string.utf8)
    }
}

/// Whether `string` holds the byte `byte` in its UTF-8 form (a fast scan over contiguous storage).
func utf8Contains(_ string: String, _ byte: UInt8) -> Bool {
    var s = string
    return s.withUTF8 { $0.contains(byte) }
}

/// Names of 1 to 31 bytes looked up by their bytes in an open-addressed table keyed by their eight-byte words,
/// so a lookup usually reads one slot (attribute names, tag names).
struct WordTable: Sendable {
    /// Eight-byte words that together cover every byte of a name (see ``words(_:readable:)``), as plain fields so
    /// that they stay in registers and a lookup compares the first two (which decide nearly every lookup) first.
    private struct Words: Sendable, Equatable {
        var first: UInt64
        var last: UInt64
        var second: UInt64 = 0
        var third: UInt64 = 0
    }
    /// One name: its words, length and position (-1 marks an empty slot).
    private struct Slot: Sendable {
        var words: Words
        var count: Int
        var id: Int
    }
    private static let size = 256
    private let slots: [Slot]

    /// A table of `names` (at most 128 of them; longer names and those beyond are never found).
    init(_ names: [String]) {
        var table = [Slot](
            repeating: Slot(words: Words(first: 0, last: 0), count: 0, id: -1), count: WordTable.size)
        for (id, name) in names.prefix(WordTable.size / 2).enumerated() {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count < 32 else { continue }
            let w = bytes.withUnsafeBufferPointer { WordTable.words($0, readable: $0.count) }
            var i = WordTable.slot(w, bytes.count)
            while table[i].id >= 0 { i = (i &+ 1) & (WordTable.size - 1) }
            table[i] = Slot(words: w, count: bytes.count, id: id)
        }
        slots = table
    }

    @inline(__always)
    private static func slot(_ w: Words, _ count: Int) -> Int {
        let h = (w.first ^ (w.last &>> 5) ^ UInt64(truncatingIfNeeded: count)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: h >> 56)
    }

    /// Eight-byte words that together cover every byte of a name of 1 to 31 bytes: the first and last eight
    /// bytes, and the middle ones of longer names (shorter names are packed into one word, read in one load when
    /// `readable` bytes from the name's start allow it).
    @inline(__always)
    private static func words(_ b: UnsafeBufferPointer<UInt8>, readable: Int) -> Words {
        let count = b.count
        guard let base = b.baseAddress else { return Words(first: 0, last: 0) }
        let raw = UnsafeRawPointer(base)
        guard count >= 8 else {
            if readable >= 8 {
                #if _endian(little)
                    let w = raw.loadUnaligned(as: UInt64.self) & (UInt64.max >> UInt64(64 &- 8 &* count))
                    return Words(first: w, last: w)
                #endif
            }
            var w: UInt64 = 0
            var k = 0
            while k < count {
                w |= UInt64(b[k]) << UInt64(k &* 8)
                k &+= 1
            }
            return Words(first: w, last: w)
        }
        return Words(
            first: raw.loadUnaligned(as: UInt64.self),
            last: raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self),
            second: count > 16 ? raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) : 0,
            third: count > 24 ? raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self) : 0)
    }

    /// The position in the names of the name `b`, or -1. `readable` is how many bytes from the name's start may
    /// be read (at least its length).
    @inline(__always)
    func id(of b: UnsafeBufferPointer<UInt8>, readable: Int) -> Int {
        let count = b.count
        guard count > 0, count < 32 else { return -1 }
        let w = WordTable.words(b, readable: Swift.max(readable, count))
        return slots.withUnsafeBufferPointer { t -> Int in
            var i = WordTable.slot(w, count)
            var probes = 0
            while probes < t.count, i >= 0, i < t.count {
                let s = t[i]
                if s.id < 0 { return -1 }
                if s.words.first == w.first && s.words.last == w.last && s.count == count && s.words == w {
                    return s.id
                }
                i = (i &+ 1) & (WordTable.size - 1)
                probes &+= 1
            }
            return -1
        }
    }
}
