/// Hexadecimal digits: the one place the toolkit reads and writes them (chunk sizes, percent escapes, SCTE-35 and
/// key material in playlists, codec strings).
public enum Hex {
    /// The value of one hexadecimal digit (either case), or nil.
    @inlinable @inline(__always)
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: return digit &- 0x30
        case 0x41...0x46: return digit &- 0x41 &+ 10
        case 0x61...0x66: return digit &- 0x61 &+ 10
        default: return nil
        }
    }

    /// Whether `byte` is a hexadecimal digit.
    @inlinable @inline(__always)
    public static func isDigit(_ byte: UInt8) -> Bool { value(of: byte) != nil }

    /// The digit of a value from 0 to 15.
    @inlinable @inline(__always)
    public static func digit(_ value: UInt8, uppercase: Bool = false) -> UInt8 {
        let nibble = value & 0x0F
        return nibble < 10 ? 0x30 &+ nibble : (uppercase ? 0x41 : 0x61) &+ nibble &- 10
    }

    /// Two digits a byte, high nibble first.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digit(byte >> 4, uppercase: uppercase))
            out.append(digit(byte, uppercase: uppercase))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Pairs of digits as bytes; an odd count of digits reads as if a `0` led them. Nil when any byte is not a digit.
    public static func decode(_ digits: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity((digits.count + 1) / 2)
        var iterator = digits.makeIterator()
        if digits.count % 2 == 1 {
            guard let first = iterator.next(), let low = value(of: first) else { return nil }
            out.append(low)
        }
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = value(of: high), let l = value(of: low) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }
}
