/// Reads bits, most significant first, from the RBSP of a NAL unit (emulation prevention bytes removed); running
/// out of bits throws ``FragmentedMP4Error/Code/truncated`` instead of trapping.
struct BitReader {
    let bytes: [UInt8]
    var bitPosition = 0
    let what: String

    /// The RBSP of `nal`: every `00 00 03` loses its `03`.
    init(rbspOf nal: [UInt8], what: String) {
        var rbsp: [UInt8] = []
        rbsp.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        bytes = rbsp
        self.what = what
    }

    /// Bits read straight from `bytes` (no emulation prevention to remove).
    init(bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.what = what
    }

    mutating func bit() throws(FragmentedMP4Error) -> UInt32 {
        let index = bitPosition >> 3
        guard index < bytes.count else {
            throw FragmentedMP4Error(.truncated, offset: index, "\(what) ends early")
        }
        let value = UInt32(bytes[index] >> (7 - UInt8(bitPosition & 7))) & 1
        bitPosition += 1
        return value
    }

    mutating func bits(_ count: Int) throws(FragmentedMP4Error) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<count { value = value << 1 | UInt64(try bit()) }
        return value
    }

    mutating func skip(_ count: Int) throws(FragmentedMP4Error) { _ = try bits(count) }

    /// An unsigned Exp-Golomb code (ue(v)), at most 31 leading zeros.
    mutating func ue() throws(FragmentedMP4Error) -> UInt32 {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            guard zeros < 32 else {
                throw FragmentedMP4Error(.invalidValue, offset: bitPosition >> 3, "\(what): Exp-Golomb code too long")
            }
        }
        return UInt32(truncatingIfNeeded: (UInt64(1) << zeros) - 1 + (try bits(zeros)))
    }
}
