// Audio frame headers, as the bridge needs them to cut elementary streams into samples and to build sample
// entries: ADTS (ISO/IEC 13818-7 6.2 / 14496-3 1.A.2), AC-3 and E-AC-3 (ATSC A/52 5.3 and E.1.2), and MPEG-1/2
// audio layers I–III (ISO/IEC 11172-3 2.4.2.3, 13818-3 2.4.2.3). Nothing here knows of MPEG-TS.

/// The audio formats whose frames the bridge can split.
public enum AudioFrameFormat: Hashable, Sendable {
    case adts
    case ac3
    case eac3
    case mpegAudio
}

/// One audio frame's header: where its payload starts and ends, how many samples it decodes to, and what the
/// sample entry is built from.
public struct AudioFrameHeader: Sendable {
    /// The frame's length, header included.
    public var length: Int
    /// The bytes of the header that the sample leaves out (the ADTS header; 0 for the other formats, whose samples
    /// are whole frames).
    public var strippedLength: Int
    /// Decoded samples (per channel) in the frame.
    public var samples: Int
    public var sampleRate: Int
    public var channelCount: Int
    /// What the sample entry needs.
    public var codec: TrackCodec
    /// For E-AC-3: a dependent substream, which belongs to the sample of the independent frame before it.
    public var isDependent: Bool = false

    static let ac3BitRates = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640]
    static let acmodChannels = [2, 1, 2, 3, 3, 4, 4, 5]
    static let mpegAudioBitRates: [[Int]] = [
        [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
        [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
        [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
        [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]

    /// The header of the frame at `index`, or nil when no valid header of `format` starts there (or too few bytes
    /// are left to read one).
    public static func parse(_ format: AudioFrameFormat, _ bytes: [UInt8], at index: Int) -> AudioFrameHeader? {
        guard index >= 0, index < bytes.count else { return nil }
        switch format {
        case .adts: return adts(bytes, at: index)
        case .ac3, .eac3: return ac3(bytes, at: index)
        case .mpegAudio: return mpegAudio(bytes, at: index)
        }
    }

    static func adts(_ b: [UInt8], at i: Int) -> AudioFrameHeader? {
        guard i + 7 <= b.count, b[i] == 0xFF, b[i + 1] & 0xF6 == 0xF0 else { return nil }
        guard let config = try? AudioSpecificConfig(adtsHeader: Array(b[i..<i + 4])), let rate = config.sampleRate
        else { return nil }
        let length = Int(b[i + 3] & 0x03) << 11 | Int(b[i + 4]) << 3 | Int(b[i + 5] >> 5)
        let header = b[i + 1] & 1 == 1 ? 7 : 9
        let blocks = Int(b[i + 6] & 0x03) + 1
        guard length > header, config.objectType != 0 else { return nil }
        let channels = config.channelConfiguration == 7 ? 8 : Int(config.channelConfiguration)
        return AudioFrameHeader(
            length: length, strippedLength: header, samples: 1024 * blocks, sampleRate: Int(rate),
            channelCount: channels, codec: .aac(config))
    }

    static func ac3(_ b: [UInt8], at i: Int) -> AudioFrameHeader? {
        guard i + 8 <= b.count, b[i] == 0x0B, b[i + 1] == 0x77 else { return nil }
        let bsid = b[i + 5] >> 3
        if bsid <= 10 {
            let fscod = Int(b[i + 4] >> 6)
            let code = Int(b[i + 4] & 0x3F)
            guard fscod < 3, code / 2 < ac3BitRates.count else { return nil }
            let rate = ac3BitRates[code / 2]
            let words: Int
            switch fscod {
            case 0: words = rate * 2
            case 1: words = rate * 320 / 147 + (code & 1)
            default: words = rate * 3
            }
            // BSI: bsid(5) bsmod(3) acmod(3), then mix levels that depend on acmod, then lfeon.
            var reader = BitReader(bytes: Array(b[i + 5..<i + 8]), what: "AC-3 header")
            guard (try? reader.bits(5)) != nil, let bsmod = try? reader.bits(3), let acmod = try? reader.bits(3)
            else { return nil }
            var skip = 0
            if acmod & 1 != 0, acmod != 1 { skip += 2 }
            if acmod & 4 != 0 { skip += 2 }
            if acmod == 2 { skip += 2 }
            guard (try? reader.skip(skip)) != nil, let lfe = try? reader.bit() else { return nil }
            let sampleRate = [48000, 44100, 32000][fscod]
            let box = AC3SpecificBox(
                fscod: UInt8(fscod), bsid: bsid, bsmod: UInt8(bsmod), acmod: UInt8(acmod), lfeon: lfe == 1,
                bitRateCode: UInt8(code / 2))
            let channels = acmodChannels[Int(acmod)] + Int(lfe)
            return AudioFrameHeader(
                length: words * 2, strippedLength: 0, samples: 1536, sampleRate: sampleRate, channelCount: channels,
                codec: .ac3(box, channelCount: UInt16(channels), sampleRate: UInt32(sampleRate)))
        }
        guard bsid <= 16 else { return nil }
        // E-AC-3 BSI: strmtyp(2) substreamid(3) frmsiz(11) fscod(2) fscod2|numblkscod(2) acmod(3) lfeon(1) bsid(5).
        var reader = BitReader(bytes: Array(b[i + 2..<i + 8]), what: "E-AC-3 header")
        guard let strmtyp = try? reader.bits(2), (try? reader.bits(3)) != nil, let frmsiz = try? reader.bits(11),
            let fscod = try? reader.bits(2), let code2 = try? reader.bits(2), let acmod = try? reader.bits(3),
            let lfe = try? reader.bit()
        else { return nil }
        let sampleRate: Int
        let blocks: Int
        if fscod == 3 {
            guard code2 < 3 else { return nil }
            sampleRate = [24000, 22050, 16000][Int(code2)]
            blocks = 6
        } else {
            sampleRate = [48000, 44100, 32000][Int(fscod)]
            blocks = [1, 2, 3, 6][Int(code2)]
        }
        let length = (Int(frmsiz) + 1) * 2
        let samples = 256 * blocks
        let dataRate = length * 8 * sampleRate / samples / 1000
        let channels = acmodChannels[Int(acmod)] + Int(lfe)
        let substream = EC3SpecificBox.Substream(
            fscod: UInt8(fscod == 3 ? 3 : fscod), bsid: bsid, acmod: UInt8(acmod), lfeon: lfe == 1)
        guard let box = try? EC3SpecificBox(dataRate: UInt16(min(dataRate, 0x1FFF)), substreams: [substream]) else {
            return nil
        }
        return AudioFrameHeader(
            length: length, strippedLength: 0, samples: samples, sampleRate: sampleRate, channelCount: channels,
            codec: .eac3(box, channelCount: UInt16(channels), sampleRate: UInt32(sampleRate)), isDependent: strmtyp == 1
        )
    }

    static func mpegAudio(_ b: [UInt8], at i: Int) -> AudioFrameHeader? {
        guard i + 4 <= b.count, b[i] == 0xFF, b[i + 1] & 0xE0 == 0xE0 else { return nil }
        let version = Int(b[i + 1] >> 3) & 0x03  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
        let layer = 4 - (Int(b[i + 1] >> 1) & 0x03)
        let rateIndex = Int(b[i + 2] >> 4)
        let frequencyIndex = Int(b[i + 2] >> 2) & 0x03
        let padding = Int(b[i + 2] >> 1) & 0x01
        guard version != 1, layer <= 3, rateIndex > 0, rateIndex < 15, frequencyIndex < 3 else { return nil }
        let mpeg1 = version == 3
        let table = mpeg1 ? layer - 1 : (layer == 1 ? 3 : 4)
        let bitRate = mpegAudioBitRates[table][rateIndex - 1] * 1000
        let sampleRate = [44100, 48000, 32000][frequencyIndex] >> (mpeg1 ? 0 : version == 2 ? 1 : 2)
        let length: Int
        let samples: Int
        switch layer {
        case 1:
            length = (12 * bitRate / sampleRate + padding) * 4
            samples = 384
        case 2:
            length = 144 * bitRate / sampleRate + padding
            samples = 1152
        default:
            length = (mpeg1 ? 144 : 72) * bitRate / sampleRate + padding
            samples = mpeg1 ? 1152 : 576
        }
        let channels = b[i + 3] >> 6 == 3 ? 1 : 2
        guard length > 4 else { return nil }
        return AudioFrameHeader(
            length: length, strippedLength: 0, samples: samples, sampleRate: sampleRate, channelCount: channels,
            codec: .mp3(channelCount: UInt16(channels), sampleRate: UInt32(sampleRate)))
    }
}
