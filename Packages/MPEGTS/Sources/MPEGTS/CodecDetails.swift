/// What a stream's own headers say about it: profile, level, picture size, frame rate, sample rate, channels,
/// and the RFC 6381 `CODECS` string an HLS playlist needs (`avc1.64001f`, `hvc1.1.6.L93.B0`, `mp4a.40.2`).
public struct CodecDetails: Hashable, Sendable {
    public var codecString: String?
    public var profile: Int?
    public var level: Int?
    public var width: Int?
    public var height: Int?
    /// Frames per second, when the SPS VUI signals timing.
    public var frameRate: Double?
    public var sampleRate: Int?
    public var channels: Int?

    public init() {}

    /// Details from an elementary stream payload (the first PES, or the first with a parameter set).
    public static func parse(codec: Codec, payload: [UInt8]) -> CodecDetails? {
        switch codec {
        case .h264:
            guard let sps = NALUnits.first(type: 7, in: payload, hevc: false) else { return nil }
            return try? H264SPS.parse(sps)
        case .hevc:
            guard let sps = NALUnits.first(type: 33, in: payload, hevc: true) else { return nil }
            return try? HEVCSPS.parse(sps)
        case .aac: return ADTSHeader.parse(payload)
        case .ac3, .eac3: return AC3Header.parse(payload, codec: codec)
        case .aacLATM:
            guard let configuration = LOASReader.firstConfiguration(in: payload) else { return nil }
            var details = CodecDetails()
            details.profile = configuration.extensionObjectType ?? configuration.objectType
            details.codecString = configuration.codecString
            details.sampleRate = configuration.extensionSampleRate ?? configuration.sampleRate
            details.channels = configuration.channels
            return details
        default: return nil
        }
    }
}

enum NALUnits {
    /// The first NAL unit of `type` (without its start code, emulation prevention bytes removed).
    static func first(type: UInt8, in bytes: [UInt8], hevc: Bool) -> [UInt8]? {
        var index = 0
        var start: Int?
        while index + 3 <= bytes.count {
            if bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] == 1 {
                if let begin = start { return unescape(bytes[begin..<index]) }
                let header = index + 3
                if header < bytes.count {
                    let nalType = hevc ? (bytes[header] >> 1) & 0x3F : bytes[header] & 0x1F
                    if nalType == type { start = header }
                }
                index += 3
            } else {
                index += 1
            }
        }
        if let begin = start { return unescape(bytes[begin...]) }
        return nil
    }

    /// Removes emulation prevention bytes (00 00 03 → 00 00) and trailing zero bytes.
    static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            output.append(byte)
        }
        while output.last == 0 { output.removeLast() }
        return output
    }
}

func hex2(_ value: Int) -> String {
    let digits = String(value, radix: 16)
    return digits.count < 2 ? "0" + digits : digits
}

enum H264SPS {
    static func parse(_ nal: [UInt8]) throws(MPEGTSError) -> CodecDetails {
        var reader = BitReader(nal)
        try reader.skip(8)  // NAL header
        let profile = Int(try reader.bits(8))
        let constraints = Int(try reader.bits(8))
        let level = Int(try reader.bits(8))
        var details = CodecDetails()
        details.profile = profile
        details.level = level
        details.codecString = "avc1." + hex2(profile) + hex2(constraints) + hex2(level)
        _ = try reader.ue()  // seq_parameter_set_id
        var chromaFormat: UInt32 = 1
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            chromaFormat = try reader.ue()
            if chromaFormat == 3 { try reader.skip(1) }
            _ = try reader.ue()  // bit_depth_luma_minus8
            _ = try reader.ue()  // bit_depth_chroma_minus8
            try reader.skip(1)  // qpprime_y_zero_transform_bypass_flag
            if try reader.bit() == 1 {  // seq_scaling_matrix_present_flag
                for list in 0..<(chromaFormat != 3 ? 8 : 12) where try reader.bit() == 1 {
                    var last: Int32 = 8
                    var next: Int32 = 8
                    for _ in 0..<(list < 6 ? 16 : 64) where next != 0 {
                        next = (last + (try reader.se()) + 256) % 256
                        if next != 0 { last = next }
                    }
                }
            }
        }
        _ = try reader.ue()  // log2_max_frame_num_minus4
        let pocType = try reader.ue()
        if pocType == 0 {
            _ = try reader.ue()
        } else if pocType == 1 {
            try reader.skip(1)
            _ = try reader.se()
            _ = try reader.se()
            let cycle = try reader.ue()
            guard cycle <= 255 else { throw MPEGTSError(.invalidValue, "num_ref_frames_in_pic_order_cnt_cycle") }
            for _ in 0..<cycle { _ = try reader.se() }
        }
        _ = try reader.ue()  // max_num_ref_frames
        try reader.skip(1)
        let widthMBs = Int(try reader.ue()) + 1
        let heightUnits = Int(try reader.ue()) + 1
        let frameMBsOnly = try reader.bit() == 1
        if !frameMBsOnly { try reader.skip(1) }
        try reader.skip(1)  // direct_8x8_inference_flag
        var crop = (left: 0, right: 0, top: 0, bottom: 0)
        if try reader.bit() == 1 {
            crop = (Int(try reader.ue()), Int(try reader.ue()), Int(try reader.ue()), Int(try reader.ue()))
        }
        let cropX = chromaFormat == 1 || chromaFormat == 2 ? 2 : 1
        let cropY = (chromaFormat == 1 ? 2 : 1) * (frameMBsOnly ? 1 : 2)
        details.width = widthMBs * 16 - cropX * (crop.left + crop.right)
        details.height = (frameMBsOnly ? 1 : 2) * heightUnits * 16 - cropY * (crop.top + crop.bottom)
        if try reader.bit() == 1 {  // VUI
            if try reader.bit() == 1, try reader.bits(8) == 255 { try reader.skip(32) }
            if try reader.bit() == 1 { try reader.skip(1) }
            if try reader.bit() == 1 {
                try reader.skip(4)
                if try reader.bit() == 1 { try reader.skip(24) }
            }
            if try reader.bit() == 1 {
                _ = try reader.ue()
                _ = try reader.ue()
            }
            if try reader.bit() == 1 {
                let unitsInTick = try reader.bits(32)
                let timeScale = try reader.bits(32)
                if unitsInTick > 0 { details.frameRate = Double(timeScale) / Double(2 * UInt64(unitsInTick)) }
            }
        }
        return details
    }
}

enum HEVCSPS {
    static func parse(_ nal: [UInt8]) throws(MPEGTSError) -> CodecDetails {
        var reader = BitReader(nal)
        try reader.skip(16)  // NAL header
        try reader.skip(4)  // sps_video_parameter_set_id
        let maxSubLayersMinus1 = Int(try reader.bits(3))
        try reader.skip(1)
        let profileSpace = Int(try reader.bits(2))
        let tier = try reader.bit()
        let profile = Int(try reader.bits(5))
        let compatibility = try reader.bits(32)
        var constraintBytes: [Int] = []
        for _ in 0..<6 { constraintBytes.append(Int(try reader.bits(8))) }
        let level = Int(try reader.bits(8))
        var subLayerProfile: [Bool] = []
        var subLayerLevel: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            subLayerProfile.append(try reader.bit() == 1)
            subLayerLevel.append(try reader.bit() == 1)
        }
        if maxSubLayersMinus1 > 0 { try reader.skip(2 * (8 - maxSubLayersMinus1)) }
        for index in 0..<maxSubLayersMinus1 {
            if subLayerProfile[index] { try reader.skip(88) }
            if subLayerLevel[index] { try reader.skip(8) }
        }
        _ = try reader.ue()  // sps_seq_parameter_set_id
        let chromaFormat = try reader.ue()
        if chromaFormat == 3 { try reader.skip(1) }
        var width = Int(try reader.ue())
        var height = Int(try reader.ue())
        if try reader.bit() == 1 {
            let subWidth = chromaFormat == 1 || chromaFormat == 2 ? 2 : 1
            let subHeight = chromaFormat == 1 ? 2 : 1
            let left = Int(try reader.ue())
            let right = Int(try reader.ue())
            let top = Int(try reader.ue())
            let bottom = Int(try reader.ue())
            width -= subWidth * (left + right)
            height -= subHeight * (top + bottom)
        }
        var details = CodecDetails()
        details.profile = profile
        details.level = level
        details.width = width
        details.height = height
        // ISO/IEC 14496-15 E.3: hvc1.[space]profile.compat(reversed, hex).tier+level.constraints
        var reversed: UInt32 = 0
        for bit in 0..<32 where compatibility & (1 << UInt32(bit)) != 0 { reversed |= 1 << UInt32(31 - bit) }
        let space = ["", "A", "B", "C"][profileSpace]
        var text =
            "hvc1.\(space)\(profile).\(String(reversed, radix: 16, uppercase: true)).\(tier == 1 ? "H" : "L")\(level)"
        while constraintBytes.last == 0 { constraintBytes.removeLast() }
        for byte in constraintBytes { text += "." + String(byte, radix: 16, uppercase: true) }
        details.codecString = text
        // The rest, up to the VUI's timing info, only for the frame rate: a failure there keeps what was read.
        details.frameRate = try? frameRate(&reader, maxSubLayersMinus1: maxSubLayersMinus1)
        return details
    }

    /// Reads from after the conformance window to vui_timing_info (H.265 7.3.2.2.1, E.2.1): time_scale /
    /// num_units_in_tick, or nil when the VUI does not signal timing.
    static func frameRate(_ reader: inout BitReader, maxSubLayersMinus1: Int) throws(MPEGTSError) -> Double? {
        _ = try reader.ue()  // bit_depth_luma_minus8
        _ = try reader.ue()  // bit_depth_chroma_minus8
        let pocLSBBits = Int(try reader.ue()) + 4
        guard pocLSBBits <= 16 else { throw MPEGTSError(.invalidValue, "log2_max_pic_order_cnt_lsb_minus4") }
        let orderingInfoForAll = try reader.bit() == 1
        for _ in (orderingInfoForAll ? 0 : maxSubLayersMinus1)...maxSubLayersMinus1 {
            _ = try reader.ue()  // sps_max_dec_pic_buffering_minus1
            _ = try reader.ue()  // sps_max_num_reorder_pics
            _ = try reader.ue()  // sps_max_latency_increase_plus1
        }
        for _ in 0..<6 { _ = try reader.ue() }  // coding/transform block sizes, hierarchy depths
        if try reader.bit() == 1, try reader.bit() == 1 { try skipScalingListData(&reader) }
        try reader.skip(2)  // amp_enabled_flag, sample_adaptive_offset_enabled_flag
        if try reader.bit() == 1 {  // pcm_enabled_flag
            try reader.skip(8)
            _ = try reader.ue()
            _ = try reader.ue()
            try reader.skip(1)
        }
        let setCount = Int(try reader.ue())  // num_short_term_ref_pic_sets
        guard setCount <= 64 else { throw MPEGTSError(.invalidValue, "num_short_term_ref_pic_sets \(setCount)") }
        var deltaPocs: [Int] = []
        for index in 0..<setCount { deltaPocs.append(try skipShortTermRefPicSet(&reader, index: index, deltaPocs)) }
        if try reader.bit() == 1 {  // long_term_ref_pics_present_flag
            let count = Int(try reader.ue())
            guard count <= 32 else { throw MPEGTSError(.invalidValue, "num_long_term_ref_pics_sps \(count)") }
            for _ in 0..<count { try reader.skip(pocLSBBits + 1) }
        }
        try reader.skip(2)  // sps_temporal_mvp_enabled_flag, strong_intra_smoothing_enabled_flag
        guard try reader.bit() == 1 else { return nil }  // vui_parameters_present_flag
        if try reader.bit() == 1, try reader.bits(8) == 255 { try reader.skip(32) }  // aspect ratio
        if try reader.bit() == 1 { try reader.skip(1) }  // overscan
        if try reader.bit() == 1 {  // video_signal_type_present_flag
            try reader.skip(4)
            if try reader.bit() == 1 { try reader.skip(24) }
        }
        if try reader.bit() == 1 {  // chroma_loc_info_present_flag
            _ = try reader.ue()
            _ = try reader.ue()
        }
        try reader.skip(3)  // neutral_chroma_indication_flag, field_seq_flag, frame_field_info_present_flag
        if try reader.bit() == 1 { for _ in 0..<4 { _ = try reader.ue() } }  // default display window
        guard try reader.bit() == 1 else { return nil }  // vui_timing_info_present_flag
        let unitsInTick = try reader.bits(32)
        let timeScale = try reader.bits(32)
        guard unitsInTick > 0, timeScale > 0 else { return nil }
        return Double(timeScale) / Double(unitsInTick)
    }

    /// scaling_list_data() (H.265 7.3.4).
    static func skipScalingListData(_ reader: inout BitReader) throws(MPEGTSError) {
        for sizeID in 0..<4 {
            for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                if try reader.bit() == 0 {
                    _ = try reader.ue()  // scaling_list_pred_matrix_id_delta
                } else {
                    if sizeID > 1 { _ = try reader.se() }
                    for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { _ = try reader.se() }
                }
            }
        }
    }

    /// st_ref_pic_set(index) in an SPS (H.265 7.3.7); returns its NumDeltaPocs.
    static func skipShortTermRefPicSet(_ reader: inout BitReader, index: Int, _ deltaPocs: [Int]) throws(MPEGTSError)
        -> Int
    {
        if index > 0, try reader.bit() == 1 {  // inter_ref_pic_set_prediction_flag
            try reader.skip(1)  // delta_rps_sign
            _ = try reader.ue()  // abs_delta_rps_minus1
            let reference = deltaPocs[index - 1]
            var count = 0
            for _ in 0...reference {
                let used = try reader.bit() == 1
                let useDelta = used ? true : try reader.bit() == 1
                if used || useDelta { count += 1 }
            }
            return count
        }
        let negative = Int(try reader.ue())
        let positive = Int(try reader.ue())
        guard negative <= 16, positive <= 16 else { throw MPEGTSError(.invalidValue, "num_negative/positive_pics") }
        for _ in 0..<(negative + positive) {
            _ = try reader.ue()
            try reader.skip(1)
        }
        return negative + positive
    }
}

enum ADTSHeader {
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    static func parse(_ bytes: [UInt8]) -> CodecDetails? {
        guard bytes.count >= 7, bytes[0] == 0xFF, bytes[1] & 0xF6 == 0xF0 else { return nil }
        let objectType = Int(bytes[2] >> 6) + 1
        let rateIndex = Int((bytes[2] >> 2) & 0x0F)
        let channels = Int((bytes[2] & 1) << 2 | bytes[3] >> 6)
        var details = CodecDetails()
        details.profile = objectType
        details.codecString = "mp4a.40.\(objectType)"
        details.sampleRate = rateIndex < sampleRates.count ? sampleRates[rateIndex] : nil
        details.channels = channels == 7 ? 8 : channels
        return details
    }
}

enum AC3Header {
    static func parse(_ bytes: [UInt8], codec: Codec) -> CodecDetails? {
        guard bytes.count >= 8, bytes[0] == 0x0B, bytes[1] == 0x77 else { return nil }
        var details = CodecDetails()
        let bsid = bytes[5] >> 3
        var reader = BitReader(Array(bytes[2..<min(bytes.count, 16)]))
        do {
            if bsid > 10 {
                // E-AC-3: strmtyp 2, substreamid 3, frmsiz 11, fscod 2, fscod2/numblkscod 2, acmod 3, lfeon 1.
                try reader.skip(16)
                let fscod = try reader.bits(2)
                let fscod2 = try reader.bits(2)
                let acmod = Int(try reader.bits(3))
                let lfe = Int(try reader.bit())
                details.sampleRate =
                    fscod == 3 ? [24000, 22050, 16000, 0][Int(fscod2)] : [48000, 44100, 32000][Int(fscod)]
                details.channels = [2, 1, 2, 3, 3, 4, 4, 5][acmod] + lfe
                details.codecString = "ec-3"
            } else {  // AC-3: crc1 16, fscod 2, frmsizecod 6, bsid 5, bsmod 3, acmod 3, mix levels, lfeon
                try reader.skip(16)
                let fscod = Int(try reader.bits(2))
                try reader.skip(6 + 5 + 3)
                let acmod = Int(try reader.bits(3))
                if acmod & 1 != 0 && acmod != 1 { try reader.skip(2) }
                if acmod & 4 != 0 { try reader.skip(2) }
                if acmod == 2 { try reader.skip(2) }
                let lfe = Int(try reader.bit())
                details.sampleRate = fscod < 3 ? [48000, 44100, 32000][fscod] : nil
                details.channels = [2, 1, 2, 3, 3, 4, 4, 5][acmod] + lfe
                details.codecString = "ac-3"
            }
        } catch {
            return nil
        }
        _ = codec
        return details
    }
}
