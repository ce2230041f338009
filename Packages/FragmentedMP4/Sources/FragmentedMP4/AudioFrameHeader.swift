// Audio frame headers, as the bridge needs them to cut elementary streams into samples and to build sample
// entries: ADTS (ISO/IEC 13818-7 6.2 / 14496-3 1.A.2), AC-3 and E-AC-3 (ATSC A/52 5.3 and E.1.2), and MPEG-1/2
// audio layers I–III (ISO/IEC 11172-3 2.4.2.3, 13818-3 2.4.2.3). A frame's length, samples and rate are MPEGTS's
// reading (`AudioFrameLayout`), the one in the toolkit; this file adds what a sample entry needs (channels, the
// decoder configuration). Like the `TS*.swift` bridge files it imports MPEGTS.
public import MPEGTS

/// The audio formats whose frames the bridge can split.
public enum AudioFrameFormat: Hashable, Sendable {
    case adts
    case ac3
    case eac3
    case mpegAudio
    /// AAC in LATM/LOAS: frames that may reuse an earlier frame's configuration, so ``AudioFrameHeader`` cannot read
    /// them alone; the bridge reads them with MPEGTS's `LOASReader` and carries each raw access unit as a sample.
    case latm
}

extension AudioSpecificConfig {
    /// The configuration a LATM StreamMuxConfig carried: its bytes as they were (SBR and PS signalled as the stream
    /// signals them), the core's fields, and the explicitly signalled extension type (5 or 29) for the CODECS
    /// string.
    public init(latm configuration: LATMConfiguration) {
        self.init(
            objectType: UInt8(clamping: configuration.objectType),
            samplingFrequencyIndex: UInt8(clamping: configuration.samplingFrequencyIndex),
            channelConfiguration: UInt8(clamping: configuration.channelConfiguration))
        extensionObjectType = configuration.extensionObjectType.map { UInt8(clamping: $0) }
        carriedBytes = configuration.audioSpecificConfig
    }
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

    static let acmodChannels = [2, 1, 2, 3, 3, 4, 4, 5]

    /// The header of the frame at `index`, or nil when no valid header of `format` starts there (or too few bytes
    /// are left to read one). Always nil for ``AudioFrameFormat/latm``, whose frames need the stream's state.
    public static func parse(_ format: AudioFrameFormat, _ bytes: [UInt8], at index: Int) -> AudioFrameHeader? {
        guard index >= 0, index < bytes.count else { return nil }
        switch format {
        case .adts: return adts(bytes, at: index)
        case .ac3, .eac3: return ac3(bytes, at: index)
        case .mpegAudio: return mpegAudio(bytes, at: index)
        case .latm: return nil
        }
    }

    static func adts(_ b: [UInt8], at i: Int) -> AudioFrameHeader? {
        guard let frame = AudioFrameLayout.adts(b, at: i),
            let config = try? AudioSpecificConfig(adtsHeader: Array(b[i..<i + 4])), let rate = config.sampleRate
        else { return nil }
        let header = b[i + 1] & 1 == 1 ? 7 : 9
        guard frame.length > header, config.objectType != 0 else { return nil }
        let channels = config.channelConfiguration == 7 ? 8 : Int(config.channelConfiguration)
        return AudioFrameHeader(
            length: frame.length, strippedLength: header, samples: frame.samples, sampleRate: Int(rate),
            channelCount: channels, codec: .aac(config))
    }

    static func ac3(_ b: [UInt8], at i: Int) -> AudioFrameHeader? {
        // Eight bytes: the BSI fields a sample entry needs end in the eighth.
        guard i + 8 <= b.count, let frame = AudioFrameLayout.ac3(b, at: i) else { return nil }
        let bsid = b[i + 5] >> 3
        if bsid <= 10 {
            let fscod = Int(b[i + 4] >> 6)
            let code = Int(b[i + 4] & 0x3F)
            // BSI: bsid(5) bsmod(3) acmod(3), then mix levels that depend on acmod, then lfeon.
            var reader = BitReader(bytes: Array(b[i + 5..<i + 8]), what: "AC-3 header")
            guard (try? reader.bits(5)) != nil, let bsmod = try? reader.bits(3), let acmod = try? reader.bits(3)
            else { return nil }
            var skip = 0
            if acmod & 1 != 0, acmod != 1 { skip += 2 }
            if acmod & 4 != 0 { skip += 2 }
            if acmod == 2 { skip += 2 }
            guard (try? reader.skip(skip)) != nil, let lfe = try? reader.bit() else { return nil }
            let sampleRate = frame.sampleRate
            let box = AC3SpecificBox(
                fscod: UInt8(fscod), bsid: bsid, bsmod: UInt8(bsmod), acmod: UInt8(acmod), lfeon: lfe == 1,
                bitRateCode: UInt8(code / 2))
            let channels = acmodChannels[Int(acmod)] + Int(lfe)
            return AudioFrameHeader(
                length: frame.length, strippedLength: 0, samples: frame.samples, sampleRate: sampleRate,
                channelCount: channels,
                codec: .ac3(box, channelCount: UInt16(channels), sampleRate: UInt32(sampleRate)))
        }
        // E-AC-3 BSI: strmtyp(2) substreamid(3) frmsiz(11) fscod(2) fscod2|numblkscod(2) acmod(3) lfeon(1) bsid(5).
        var reader = BitReader(bytes: Array(b[i + 2..<i + 8]), what: "E-AC-3 header")
        guard let strmtyp = try? reader.bits(2), (try? reader.bits(3)) != nil, (try? reader.bits(11)) != nil,
            let fscod = try? reader.bits(2), (try? reader.bits(2)) != nil, let acmod = try? reader.bits(3),
            let lfe = try? reader.bit()
        else { return nil }
        let sampleRate = frame.sampleRate
        let length = frame.length
        let samples = frame.samples
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
        guard let frame = AudioFrameLayout.mpegAudio(b, at: i) else { return nil }
        let channels = b[i + 3] >> 6 == 3 ? 1 : 2
        guard frame.length > 4 else { return nil }
        return AudioFrameHeader(
            length: frame.length, strippedLength: 0, samples: frame.samples, sampleRate: frame.sampleRate,
            channelCount: channels, codec: .mp3(channelCount: UInt16(channels), sampleRate: UInt32(frame.sampleRate)))
    }
}
