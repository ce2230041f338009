/// A four-character code: the type of an ISO BMFF box, a brand, a handler type or a sample entry's format.
public struct FourCC: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The four bytes, big-endian, as one integer.
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code from four ASCII characters; `nil` when `text` is not exactly four bytes of UTF-8.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4 else { return nil }
        var value: UInt32 = 0
        for byte in bytes { value = value << 8 | UInt32(byte) }
        rawValue = value
    }

    /// The code from a literal of exactly four ASCII characters; any other literal gives `0x3F3F3F3F` ("????").
    public init(stringLiteral value: String) {
        self = FourCC(value) ?? FourCC(rawValue: 0x3F3F_3F3F)
    }

    /// The four bytes, big-endian.
    public var bytes: [UInt8] {
        [
            UInt8(truncatingIfNeeded: rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
            UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue),
        ]
    }

    /// The code as text; bytes outside printable ASCII are shown as `\xNN`.
    public var description: String {
        var text = ""
        for byte in bytes {
            if byte >= 0x20, byte < 0x7F {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }
}

extension FourCC {
    static let ftyp: FourCC = "ftyp"
    static let styp: FourCC = "styp"
    static let moov: FourCC = "moov"
    static let mvhd: FourCC = "mvhd"
    static let trak: FourCC = "trak"
    static let tkhd: FourCC = "tkhd"
    static let mdia: FourCC = "mdia"
    static let mdhd: FourCC = "mdhd"
    static let hdlr: FourCC = "hdlr"
    static let minf: FourCC = "minf"
    static let vmhd: FourCC = "vmhd"
    static let smhd: FourCC = "smhd"
    static let dinf: FourCC = "dinf"
    static let dref: FourCC = "dref"
    static let url: FourCC = "url "
    static let stbl: FourCC = "stbl"
    static let stsd: FourCC = "stsd"
    static let stts: FourCC = "stts"
    static let stsc: FourCC = "stsc"
    static let stsz: FourCC = "stsz"
    static let stco: FourCC = "stco"
    static let mvex: FourCC = "mvex"
    static let trex: FourCC = "trex"
    static let moof: FourCC = "moof"
    static let mfhd: FourCC = "mfhd"
    static let traf: FourCC = "traf"
    static let tfhd: FourCC = "tfhd"
    static let tfdt: FourCC = "tfdt"
    static let trun: FourCC = "trun"
    static let mdat: FourCC = "mdat"
    static let uuid: FourCC = "uuid"
    static let edts: FourCC = "edts"
    static let mfra: FourCC = "mfra"
}
