/// Percent-encoding (RFC 3986 §2.1): the one place the toolkit decodes and encodes `%XY` escapes.
public enum Percent {
    /// The bytes with each `%XY` replaced by the byte it names, decoded once; nil on a `%` not followed by two
    /// hexadecimal digits.
    public static func decode(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(Hex.value), let low = iterator.next().flatMap(Hex.value)
                else { return nil }
                output.append(high << 4 | low)
            } else {
                output.append(byte)
            }
        }
        return output
    }

    /// ``decode(_:)`` as text: nil also when the decoded bytes are not well-formed UTF-8.
    public static func decodeUTF8(_ bytes: some Collection<UInt8>) -> String? {
        if !bytes.contains(UInt8(ascii: "%")) { return validatedUTF8(bytes) }
        return decode(bytes).flatMap(validatedUTF8)
    }

    /// `text` with every byte of its UTF-8 for which `keep` is false written as `%XY` (upper-case digits).
    public static func encode(_ text: String, keeping keep: (UInt8) -> Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if keep(byte) {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), Hex.digit(byte >> 4, uppercase: true), Hex.digit(byte, uppercase: true)]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Unreserved characters (RFC 3986 §2.3): letters, digits, `-`, `.`, `_` and `~`.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// The bytes as a string if they are well-formed UTF-8 (overlong forms and surrogates refused), else nil: what
    /// `String(validating:as:)` does, which needs macOS 15 / iOS 18.
    public static func validatedUTF8(_ bytes: some Collection<UInt8>) -> String? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: return nil
            }
        }
    }
}
