// Annex-B byte streams (ITU-T H.264 annex B, H.265 annex B) to the length-prefixed NAL units ISO/IEC 14496-15
// samples carry, and the few NAL unit facts the sample entries and flags need. Nothing here knows of MPEG-TS.

/// The syntax of a NAL unit stream: H.264 (1-byte NAL headers) or HEVC (2-byte headers).
public enum NALSyntax: Hashable, Sendable {
    case h264
    case hevc

    /// The nal_unit_type of a NAL unit (its first byte or two), or nil for an empty unit.
    public func type(of unit: ArraySlice<UInt8>) -> UInt8? {
        guard let first = unit.first else { return nil }
        switch self {
        case .h264: return first & 0x1F
        case .hevc: return (first >> 1) & 0x3F
        }
    }

    /// Access unit delimiters: never carried in samples.
    func isDelimiter(_ type: UInt8) -> Bool { self == .h264 ? type == 9 : type == 35 }

    /// Parameter sets (SPS and PPS; VPS too for HEVC).
    func isParameterSet(_ type: UInt8) -> Bool { self == .h264 ? type == 7 || type == 8 : (32...34).contains(type) }

    /// An IDR picture (H.264) or an IRAP picture (HEVC: BLA, IDR, CRA).
    func isRandomAccess(_ type: UInt8) -> Bool { self == .h264 ? type == 5 : (16...21).contains(type) }

    /// A supplemental enhancement information unit (HEVC: prefix SEI).
    func isSEI(_ type: UInt8) -> Bool { self == .h264 ? type == 6 : type == 39 }
}

/// Splits Annex-B byte streams into NAL units and writes them as samples.
public enum AnnexB {
    /// The NAL units of an Annex-B byte stream, without their start codes and without trailing zero bytes. Bytes
    /// before the first start code are dropped.
    public static func units(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var start: Int?
        let count = bytes.count
        // The start codes' positions, found over the raw buffer (the hot loop of segment making).
        let codes = bytes.withUnsafeBufferPointer { buffer -> [Int] in
            var found: [Int] = []
            var index = 0
            let raw = UnsafeRawBufferPointer(buffer)
            while index + 2 < count {
                // Eight bytes with no zero among them start no start code: skip them at once.
                if index + 8 <= count {
                    let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 == 0 {
                        index += 8
                        continue
                    }
                }
                // Find 00 00 01: step by the third byte to skip quickly where it cannot match.
                let third = buffer[index + 2]
                if third > 1 {
                    index += 3
                    continue
                }
                if third == 1, buffer[index] == 0, buffer[index + 1] == 0 {
                    found.append(index)
                    index += 3
                } else {
                    index += 1
                }
            }
            return found
        }
        for index in codes {
            if let begin = start { units.append(trimmed(bytes[begin..<index])) }
            start = index + 3
        }
        if let begin = start, begin < count { units.append(trimmed(bytes[begin..<count])) }
        return units.filter { !$0.isEmpty }
    }

    /// A unit without the zero bytes that end it (trailing_zero_8bits and the first zero of a 4-byte start code).
    static func trimmed(_ unit: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = unit.endIndex
        while end > unit.startIndex, unit[end - 1] == 0 { end -= 1 }
        return unit[unit.startIndex..<end]
    }

    /// The units as a sample: each one after its 4-byte big-endian length.
    public static func lengthPrefixed(_ units: [ArraySlice<UInt8>]) -> [UInt8] {
        var sample: [UInt8] = []
        sample.reserveCapacity(units.reduce(0) { $0 + $1.count + 4 })
        for unit in units {
            let length = UInt32(truncatingIfNeeded: unit.count)
            sample.append(UInt8(truncatingIfNeeded: length >> 24))
            sample.append(UInt8(truncatingIfNeeded: length >> 16))
            sample.append(UInt8(truncatingIfNeeded: length >> 8))
            sample.append(UInt8(truncatingIfNeeded: length))
            sample.append(contentsOf: unit)
        }
        return sample
    }

    /// The caption services an SEI NAL unit carries: from each user_data_registered_itu_t_t35 message (payload
    /// type 4) with country code 0xB5, provider 0x0031, user identifier `GA94` and user_data_type_code 3 (ATSC
    /// A/53 part 4, SCTE 128), the valid entries of its cc_data: cc_type 0 or 1 is CEA-608, 2 or 3 CEA-708 (DTVCC).
    public static func captionServices(sei unit: ArraySlice<UInt8>, syntax: NALSyntax) -> CaptionServices {
        let headerLength = syntax == .h264 ? 1 : 2
        guard unit.count > headerLength else { return [] }
        let rbsp = BitReader(rbspOf: Array(unit.dropFirst(headerLength)), what: "SEI").bytes
        var services: CaptionServices = []
        var position = 0
        var messages = 0
        while position < rbsp.count, rbsp[position] != 0x80, messages < 64 {
            messages += 1
            var payloadType = 0
            while position < rbsp.count, rbsp[position] == 0xFF {
                payloadType += 255
                position += 1
            }
            guard position < rbsp.count else { return services }
            payloadType += Int(rbsp[position])
            position += 1
            var payloadSize = 0
            while position < rbsp.count, rbsp[position] == 0xFF {
                payloadSize += 255
                position += 1
            }
            guard position < rbsp.count else { return services }
            payloadSize += Int(rbsp[position])
            position += 1
            guard payloadSize <= rbsp.count - position else { return services }
            if payloadType == 4, payloadSize >= 10 {
                let p = rbsp[position..<position + payloadSize]
                let s = p.startIndex
                if p[s] == 0xB5, p[s + 1] == 0x00, p[s + 2] == 0x31, p[s + 3] == 0x47, p[s + 4] == 0x41,
                    p[s + 5] == 0x39, p[s + 6] == 0x34, p[s + 7] == 0x03, p[s + 8] & 0x40 != 0
                {
                    // cc_data(): process_cc_data_flag (set: the entries are to be read) and cc_count, em_data,
                    // then cc_count (marker, cc_valid, cc_type, cc_data_1, cc_data_2) triplets.
                    let count = Int(p[s + 8] & 0x1F)
                    var entry = s + 10
                    for _ in 0..<count where entry + 3 <= p.endIndex {
                        if p[entry] & 0x04 != 0 { services.insert(p[entry] & 0x02 == 0 ? .cea608 : .cea708) }
                        entry += 3
                    }
                }
            }
            position += payloadSize
        }
        return services
    }
}

/// The caption services a video's SEI carries (ATSC A/53 cc_data).
public struct CaptionServices: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// CEA-608 byte pairs (cc_type 0 and 1, line 21 fields 1 and 2): HLS `INSTREAM-ID="CC1"` and on.
    public static let cea608 = CaptionServices(rawValue: 1)
    /// CEA-708 DTVCC packets (cc_type 2 and 3): HLS `INSTREAM-ID="SERVICE1"` and on.
    public static let cea708 = CaptionServices(rawValue: 2)
}
