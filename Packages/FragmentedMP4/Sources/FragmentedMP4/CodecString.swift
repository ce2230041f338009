import TextCodecs

// RFC 6381 `codecs` parameters, as HLS's CODECS attribute lists them, from the configuration records.

extension TrackCodec {
    /// The RFC 6381 codec string: `avc1.PPCCLL` from the SPS, `hvc1.P.C.TL.B…` from the HEVC profile, tier and
    /// level (ISO/IEC 14496-15 annex E), `mp4a.40.N` with the AAC object type (5 or 29 when the configuration
    /// signals SBR or PS explicitly, as LATM streams may), `ac-3`, `ec-3`, and `mp4a.6B` (MPEG-1 audio) or
    /// `mp4a.69` (MPEG-2 audio's lower rates). Nil when the configuration cannot be built.
    public var codecString: String? {
        switch self {
        case .avc(let sps, _, _, _):
            guard let first = sps.first, first.count >= 4 else { return nil }
            return "avc1." + hex2(first[1]) + hex2(first[2]) + hex2(first[3])
        case .hevc(let vps, let sps, let pps, _, _):
            guard let box = try? HEVCConfigurationBox(vps: vps, sps: sps, pps: pps) else { return nil }
            let ptl = box.profileTierLevel
            let space = ["", "A", "B", "C"][Int(ptl.profileSpace & 3)]
            // The compatibility flags in reverse bit order, in hexadecimal without leading zeros.
            var reversed: UInt32 = 0
            for bit in 0..<32 where ptl.profileCompatibilityFlags & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
            var text = "hvc1.\(space)\(ptl.profileIDC).\(String(reversed, radix: 16, uppercase: true))"
            text += ".\(ptl.tierFlag ? "H" : "L")\(ptl.levelIDC)"
            var constraints: [UInt8] = (0..<6).map {
                UInt8(truncatingIfNeeded: ptl.constraintIndicatorFlags >> (40 - 8 * $0))
            }
            while constraints.count > 1, constraints.last == 0 { constraints.removeLast() }
            for byte in constraints { text += "." + String(byte, radix: 16, uppercase: true) }
            return text
        case .aac(let config): return "mp4a.40.\(config.extensionObjectType ?? config.objectType)"
        case .ac3: return "ac-3"
        case .eac3: return "ec-3"
        case .mp3(_, let rate): return rate >= 32000 ? "mp4a.6B" : "mp4a.69"
        }
    }

    /// The channel count HLS's CHANNELS attribute gives: from the AAC channel configuration, the AC-3 or E-AC-3
    /// coding mode and LFE, or the MPEG audio mode. Nil for video.
    public var channelCount: Int? {
        switch self {
        case .avc, .hevc: return nil
        case .aac(let config): return config.channelConfiguration == 7 ? 8 : Int(config.channelConfiguration)
        case .ac3(_, let channels, _), .eac3(_, let channels, _), .mp3(let channels, _): return Int(channels)
        }
    }
}

func hex2(_ byte: UInt8) -> String { Hex.encode([byte]) }
