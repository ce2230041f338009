// Fuzzes the SCTE-35 decoder: raw sections, and the same bytes as base64 and hex text.
import FuzzSupport
import MPEGTS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let array = Array(bytes)
    _ = try? SpliceInfoSection(bytes: array)
    // With a valid CRC appended, the decoder gets past the CRC check and reads the body.
    if array.count >= 3 {
        var section = array
        let length = section.count + 1
        section[0] = 0xFC
        section[1] = 0x30 | UInt8(truncatingIfNeeded: length >> 8) & 0x0F
        section[2] = UInt8(truncatingIfNeeded: length)
        let crc = CRC32MPEG2.checksum(section)
        section += [
            UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16),
            UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc),
        ]
        _ = try? SpliceInfoSection(bytes: section)
    }
    let text = String(decoding: array, as: UTF8.self)
    _ = try? SpliceInfoSection(base64: text)
    _ = try? SpliceInfoSection(hex: text)
}

runFuzzer(fuzzOne)
