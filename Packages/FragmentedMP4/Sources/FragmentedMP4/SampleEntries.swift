// Sample entries (ISO/IEC 14496-12, 12.1.3 and 12.2.3) and the codec configuration boxes inside them:
// avcC and hvcC (ISO/IEC 14496-15, 5.3.3 and 8.3.3), esds (ISO/IEC 14496-14, 14496-1 descriptors),
// dac3 and dec3 (ETSI TS 102 366, annex F).

/// A video sample entry (`avc1`, `hvc1`, …) with its configuration box.
public struct VisualSampleEntry: MP4Box {
    public var type: FourCC
    public var width: UInt16
    public var height: UInt16
    public var configuration: any MP4Box
    /// Boxes written after the configuration (`pasp`, `btrt`, …).
    public var extraBoxes: [any MP4Box]

    public init(
        format: FourCC, width: UInt16, height: UInt16, configuration: any MP4Box, extraBoxes: [any MP4Box] = []
    ) {
        type = format
        self.width = width
        self.height = height
        self.configuration = configuration
        self.extraBoxes = extraBoxes
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.appendZeros(6)  // reserved
        writer.append(UInt16(1))  // data_reference_index
        writer.appendZeros(16)  // pre_defined, reserved, pre_defined[3]
        writer.append(width)
        writer.append(height)
        writer.append(UInt32(0x0048_0000))  // horizresolution 72 dpi
        writer.append(UInt32(0x0048_0000))  // vertresolution
        writer.append(UInt32(0))  // reserved
        writer.append(UInt16(1))  // frame_count
        writer.appendZeros(32)  // compressorname (empty)
        writer.append(UInt16(0x0018))  // depth
        writer.append(Int16(-1))  // pre_defined
        writer.write(configuration)
        writer.write(extraBoxes)
    }
}

/// An audio sample entry (`mp4a`, `ac-3`, `ec-3`, `.mp3`, …), version 0, with its configuration box.
public struct AudioSampleEntry: MP4Box {
    public var type: FourCC
    public var channelCount: UInt16
    /// In Hz. A version 0 entry holds at most 65535; a higher rate is written as 0 (the decoder configuration
    /// carries the real rate for every codec here).
    public var sampleRate: UInt32
    public var configuration: (any MP4Box)?

    public init(format: FourCC, channelCount: UInt16, sampleRate: UInt32, configuration: (any MP4Box)?) {
        type = format
        self.channelCount = channelCount
        self.sampleRate = sampleRate
        self.configuration = configuration
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.appendZeros(6)  // reserved
        writer.append(UInt16(1))  // data_reference_index
        writer.appendZeros(8)  // reserved
        writer.append(channelCount)
        writer.append(UInt16(16))  // samplesize
        writer.appendZeros(4)  // pre_defined, reserved
        writer.append(sampleRate <= 0xFFFF ? sampleRate << 16 : 0)
        if let configuration { writer.write(configuration) }
    }
}

/// `avcC`: the AVCDecoderConfigurationRecord, with 4-byte NAL lengths.
public struct AVCConfigurationBox: MP4Box {
    public var type: FourCC { "avcC" }
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]
    public var profile: UInt8
    public var compatibility: UInt8
    public var level: UInt8
    /// For the High profiles (100, 110, 122, 144 and 244, whose SPS carries chroma_format_idc), read from the SPS: chroma_format_idc and the bit depths − 8.
    public var highProfileFields: (chromaFormat: UInt8, bitDepthLumaMinus8: UInt8, bitDepthChromaMinus8: UInt8)?

    /// The record from SPS and PPS NAL units (each starting with its NAL header byte); profile, compatibility and
    /// level come from the first SPS.
    public init(sps: [[UInt8]], pps: [[UInt8]]) throws(FragmentedMP4Error) {
        guard let first = sps.first, first.count >= 4 else {
            throw FragmentedMP4Error(.invalidValue, path: ["avcC"], "an SPS of at least 4 bytes is needed")
        }
        guard sps.count <= 31, pps.count <= 255, (sps + pps).allSatisfy({ !$0.isEmpty && $0.count <= 0xFFFF }) else {
            throw FragmentedMP4Error(.invalidValue, path: ["avcC"], "too many or too large parameter sets")
        }
        sequenceParameterSets = sps
        pictureParameterSets = pps
        profile = first[1]
        compatibility = first[2]
        level = first[3]
        if [100, 110, 122, 144, 244].contains(profile) {
            var reader = BitReader(rbspOf: Array(first.dropFirst(4)), what: "H.264 SPS")
            _ = try reader.ue()  // seq_parameter_set_id
            let chroma = try reader.ue()
            if chroma == 3 { try reader.skip(1) }
            let luma = try reader.ue()
            let chromaDepth = try reader.ue()
            guard chroma <= 3, luma <= 7, chromaDepth <= 7 else {
                throw FragmentedMP4Error(.invalidValue, path: ["avcC"], "H.264 SPS chroma format or bit depth")
            }
            highProfileFields = (UInt8(chroma), UInt8(luma), UInt8(chromaDepth))
        }
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt8(1))  // configurationVersion
        writer.append(profile)
        writer.append(compatibility)
        writer.append(level)
        writer.append(UInt8(0xFF))  // reserved 6 bits, lengthSizeMinusOne = 3
        writer.append(UInt8(0xE0 | UInt8(truncatingIfNeeded: sequenceParameterSets.count)))
        for set in sequenceParameterSets {
            writer.append(UInt16(truncatingIfNeeded: set.count))
            writer.append(set)
        }
        writer.append(UInt8(truncatingIfNeeded: pictureParameterSets.count))
        for set in pictureParameterSets {
            writer.append(UInt16(truncatingIfNeeded: set.count))
            writer.append(set)
        }
        if let fields = highProfileFields {
            writer.append(UInt8(0xFC | fields.chromaFormat))
            writer.append(UInt8(0xF8 | fields.bitDepthLumaMinus8))
            writer.append(UInt8(0xF8 | fields.bitDepthChromaMinus8))
            writer.append(UInt8(0))  // numOfSequenceParameterSetExt
        }
    }
}

/// The general profile, tier and level of an HEVC stream (H.265, 7.3.3), as the `hvcC` record carries them.
public struct HEVCProfileTierLevel: Hashable, Sendable {
    public var profileSpace: UInt8
    public var tierFlag: Bool
    public var profileIDC: UInt8
    public var profileCompatibilityFlags: UInt32
    /// The 48 constraint indicator bits, in the low bits.
    public var constraintIndicatorFlags: UInt64
    public var levelIDC: UInt8

    public init(
        profileSpace: UInt8 = 0, tierFlag: Bool = false, profileIDC: UInt8, profileCompatibilityFlags: UInt32,
        constraintIndicatorFlags: UInt64, levelIDC: UInt8
    ) {
        self.profileSpace = profileSpace
        self.tierFlag = tierFlag
        self.profileIDC = profileIDC
        self.profileCompatibilityFlags = profileCompatibilityFlags
        self.constraintIndicatorFlags = constraintIndicatorFlags
        self.levelIDC = levelIDC
    }
}

/// `hvcC`: the HEVCDecoderConfigurationRecord with VPS, SPS and PPS arrays (`array_completeness = 1`) and 4-byte
/// NAL lengths.
public struct HEVCConfigurationBox: MP4Box {
    public var type: FourCC { "hvcC" }
    public var vps: [[UInt8]]
    public var sps: [[UInt8]]
    public var pps: [[UInt8]]
    public var profileTierLevel: HEVCProfileTierLevel
    public var chromaFormat: UInt8
    public var bitDepthLumaMinus8: UInt8
    public var bitDepthChromaMinus8: UInt8
    public var numTemporalLayers: UInt8
    public var temporalIDNested: Bool

    /// The record from VPS, SPS and PPS NAL units (each starting with its 2-byte NAL header). Profile, tier,
    /// level, chroma format, bit depths and temporal layering are read from the first SPS.
    public init(vps: [[UInt8]], sps: [[UInt8]], pps: [[UInt8]]) throws(FragmentedMP4Error) {
        guard let first = sps.first, first.count >= 3 else {
            throw FragmentedMP4Error(.invalidValue, path: ["hvcC"], "an SPS is needed")
        }
        guard [vps, sps, pps].allSatisfy({ $0.count <= 0xFFFF && $0.allSatisfy { !$0.isEmpty && $0.count <= 0xFFFF } })
        else {
            throw FragmentedMP4Error(.invalidValue, path: ["hvcC"], "too many or too large parameter sets")
        }
        self.vps = vps
        self.sps = sps
        self.pps = pps
        var reader = BitReader(rbspOf: Array(first.dropFirst(2)), what: "HEVC SPS")
        try reader.skip(4)  // sps_video_parameter_set_id
        let maxSubLayersMinus1 = Int(try reader.bits(3))
        temporalIDNested = try reader.bit() == 1
        numTemporalLayers = UInt8(maxSubLayersMinus1 + 1)
        profileTierLevel = HEVCProfileTierLevel(
            profileSpace: UInt8(try reader.bits(2)), tierFlag: try reader.bit() == 1,
            profileIDC: UInt8(try reader.bits(5)), profileCompatibilityFlags: UInt32(try reader.bits(32)),
            constraintIndicatorFlags: try reader.bits(48), levelIDC: UInt8(try reader.bits(8)))
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<maxSubLayersMinus1 { present.append((try reader.bit() == 1, try reader.bit() == 1)) }
        if maxSubLayersMinus1 > 0 { try reader.skip(2 * (8 - maxSubLayersMinus1)) }
        for layer in present {
            if layer.profile { try reader.skip(88) }
            if layer.level { try reader.skip(8) }
        }
        _ = try reader.ue()  // sps_seq_parameter_set_id
        let chroma = try reader.ue()
        if chroma == 3 { try reader.skip(1) }
        _ = try reader.ue()  // pic_width_in_luma_samples
        _ = try reader.ue()  // pic_height_in_luma_samples
        if try reader.bit() == 1 {  // conformance_window_flag
            for _ in 0..<4 { _ = try reader.ue() }
        }
        let luma = try reader.ue()
        let chromaDepth = try reader.ue()
        guard chroma <= 3, luma <= 7, chromaDepth <= 7 else {
            throw FragmentedMP4Error(.invalidValue, path: ["hvcC"], "HEVC SPS chroma format or bit depth")
        }
        chromaFormat = UInt8(chroma)
        bitDepthLumaMinus8 = UInt8(luma)
        bitDepthChromaMinus8 = UInt8(chromaDepth)
    }

    public func writeBody(to writer: inout BoxWriter) {
        let ptl = profileTierLevel
        writer.append(UInt8(1))  // configurationVersion
        writer.append(UInt8((ptl.profileSpace & 3) << 6 | (ptl.tierFlag ? 0x20 : 0) | (ptl.profileIDC & 0x1F)))
        writer.append(ptl.profileCompatibilityFlags)
        for shift in stride(from: 40, through: 0, by: -8) {
            writer.append(UInt8(truncatingIfNeeded: ptl.constraintIndicatorFlags >> shift))
        }
        writer.append(ptl.levelIDC)
        writer.append(UInt16(0xF000))  // reserved, min_spatial_segmentation_idc 0
        writer.append(UInt8(0xFC))  // reserved, parallelismType 0 (unknown)
        writer.append(UInt8(0xFC | chromaFormat))
        writer.append(UInt8(0xF8 | bitDepthLumaMinus8))
        writer.append(UInt8(0xF8 | bitDepthChromaMinus8))
        writer.append(UInt16(0))  // avgFrameRate unknown
        // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3
        writer.append(UInt8((numTemporalLayers & 7) << 3 | (temporalIDNested ? 4 : 0) | 3))
        let arrays = [(UInt8(32), vps), (UInt8(33), sps), (UInt8(34), pps)].filter { !$0.1.isEmpty }
        writer.append(UInt8(arrays.count))
        for (nalType, units) in arrays {
            writer.append(UInt8(0x80 | nalType))  // array_completeness 1
            writer.append(UInt16(truncatingIfNeeded: units.count))
            for unit in units {
                writer.append(UInt16(truncatingIfNeeded: unit.count))
                writer.append(unit)
            }
        }
    }
}

/// An MPEG-4 AudioSpecificConfig (ISO/IEC 14496-3, 1.6.2.1) for AAC: object type, sampling frequency index and
/// channel configuration, as an ADTS header carries them.
public struct AudioSpecificConfig: Hashable, Sendable {
    /// The AAC core's object type (2 for AAC-LC).
    public var objectType: UInt8
    /// The core's sampling frequency index: the track's timescale.
    public var samplingFrequencyIndex: UInt8
    public var channelConfiguration: UInt8
    /// 5 (SBR, HE-AAC) or 29 (SBR and PS, HE-AAC v2) when the configuration signals them explicitly, which the
    /// CODECS string then names; nil when it does not (plain AAC, or implicit signalling, as ADTS can only do).
    public var extensionObjectType: UInt8?
    /// The whole configuration as a stream carried it (LATM's StreamMuxConfig), which ``bytes`` gives as is (so
    /// that SBR and PS are signalled as the stream signals them); nil for one made of the fields above.
    public var carriedBytes: [UInt8]?

    /// The sampling frequencies of indices 0–12.
    public static let samplingFrequencies: [UInt32] = [
        96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
    ]

    public init(objectType: UInt8, samplingFrequencyIndex: UInt8, channelConfiguration: UInt8) {
        self.objectType = objectType
        self.samplingFrequencyIndex = samplingFrequencyIndex
        self.channelConfiguration = channelConfiguration
    }

    /// The configuration from the first 4 bytes of an ADTS header (object type = profile + 1).
    public init(adtsHeader header: [UInt8]) throws(FragmentedMP4Error) {
        guard header.count >= 4 else { throw FragmentedMP4Error(.truncated, offset: header.count, "ADTS header") }
        guard header[0] == 0xFF, header[1] & 0xF6 == 0xF0 else {
            throw FragmentedMP4Error(.invalidValue, offset: 0, "no ADTS syncword")
        }
        objectType = (header[2] >> 6) + 1
        samplingFrequencyIndex = (header[2] >> 2) & 0x0F
        channelConfiguration = (header[2] & 1) << 2 | header[3] >> 6
        guard Int(samplingFrequencyIndex) < Self.samplingFrequencies.count else {
            throw FragmentedMP4Error(.invalidValue, offset: 2, "sampling frequency index \(samplingFrequencyIndex)")
        }
    }

    /// The sampling frequency, or nil for an index outside the table.
    public var sampleRate: UInt32? {
        let index = Int(samplingFrequencyIndex)
        return index < Self.samplingFrequencies.count ? Self.samplingFrequencies[index] : nil
    }

    /// The configuration as carried, when it was; else the two bytes: 5 bits object type, 4 bits frequency
    /// index, 4 bits channels, 3 zero bits.
    public var bytes: [UInt8] {
        if let carriedBytes { return carriedBytes }
        let value =
            UInt16(objectType & 0x1F) << 11 | UInt16(samplingFrequencyIndex & 0x0F) << 7
            | UInt16(channelConfiguration & 0x0F) << 3
        return [UInt8(value >> 8), UInt8(value & 0xFF)]
    }
}

/// `esds`: an ES_Descriptor with a DecoderConfigDescriptor (object type 0x40 for AAC with its AudioSpecificConfig,
/// 0x6B for MPEG-1 audio, 0x69 for MPEG-2 audio, with no DecoderSpecificInfo) and an SLConfigDescriptor.
public struct ElementaryStreamDescriptorBox: MP4Box {
    public var type: FourCC { "esds" }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var objectTypeIndication: UInt8
    public var decoderSpecificInfo: [UInt8]?
    public var averageBitrate: UInt32
    public var maximumBitrate: UInt32
    public var bufferSize: UInt32

    public init(
        objectTypeIndication: UInt8, decoderSpecificInfo: [UInt8]?, averageBitrate: UInt32 = 0,
        maximumBitrate: UInt32 = 0, bufferSize: UInt32 = 0
    ) {
        self.objectTypeIndication = objectTypeIndication
        self.decoderSpecificInfo = decoderSpecificInfo
        self.averageBitrate = averageBitrate
        self.maximumBitrate = maximumBitrate
        self.bufferSize = bufferSize
    }

    /// A descriptor: tag, the size in 7-bit groups (high bit = more follows), the body.
    static func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        var size: [UInt8] = [UInt8(body.count & 0x7F)]
        var rest = body.count >> 7
        while rest > 0, size.count < 4 {
            size.insert(UInt8(0x80 | rest & 0x7F), at: 0)
            rest >>= 7
        }
        return [tag] + size + body
    }

    public func writeBody(to writer: inout BoxWriter) {
        var config = BoxWriter()
        config.append(objectTypeIndication)
        config.append(UInt8(0x15))  // streamType 5 (audio) << 2, upStream 0, reserved 1
        config.append24(bufferSize)
        config.append(maximumBitrate)
        config.append(averageBitrate)
        var decoderConfig = config.bytes
        if let info = decoderSpecificInfo { decoderConfig += Self.descriptor(0x05, info) }
        let es: [UInt8] =
            [0, 0, 0]  // ES_ID 0, no dependence, URL or OCR stream
            + Self.descriptor(0x04, decoderConfig) + Self.descriptor(0x06, [0x02])
        writer.append(Self.descriptor(0x03, es))
    }
}

/// `dac3`: the AC3SpecificBox (ETSI TS 102 366, F.4).
public struct AC3SpecificBox: MP4Box {
    public var type: FourCC { "dac3" }
    public var fscod: UInt8
    public var bsid: UInt8
    public var bsmod: UInt8
    public var acmod: UInt8
    public var lfeon: Bool
    public var bitRateCode: UInt8

    public init(fscod: UInt8, bsid: UInt8 = 8, bsmod: UInt8 = 0, acmod: UInt8, lfeon: Bool, bitRateCode: UInt8) {
        self.fscod = fscod
        self.bsid = bsid
        self.bsmod = bsmod
        self.acmod = acmod
        self.lfeon = lfeon
        self.bitRateCode = bitRateCode
    }

    public func writeBody(to writer: inout BoxWriter) {
        var value = UInt32(fscod & 3) << 22 | UInt32(bsid & 0x1F) << 17 | UInt32(bsmod & 7) << 14
        value |= UInt32(acmod & 7) << 11 | (lfeon ? 1 << 10 : 0) | UInt32(bitRateCode & 0x1F) << 5
        writer.append24(value)
    }
}

/// `dec3`: the EC3SpecificBox (ETSI TS 102 366, F.6), one entry per independent substream.
public struct EC3SpecificBox: MP4Box {
    /// One independent substream.
    public struct Substream: Hashable, Sendable {
        public var fscod: UInt8
        public var bsid: UInt8
        public var asvc: Bool
        public var bsmod: UInt8
        public var acmod: UInt8
        public var lfeon: Bool
        public var dependentSubstreamCount: UInt8
        /// The 9-bit chan_loc, written when there are dependent substreams.
        public var channelLocations: UInt16

        public init(
            fscod: UInt8, bsid: UInt8 = 16, asvc: Bool = false, bsmod: UInt8 = 0, acmod: UInt8, lfeon: Bool,
            dependentSubstreamCount: UInt8 = 0, channelLocations: UInt16 = 0
        ) {
            self.fscod = fscod
            self.bsid = bsid
            self.asvc = asvc
            self.bsmod = bsmod
            self.acmod = acmod
            self.lfeon = lfeon
            self.dependentSubstreamCount = dependentSubstreamCount
            self.channelLocations = channelLocations
        }
    }

    public var type: FourCC { "dec3" }
    /// In kbit/s (13 bits).
    public var dataRate: UInt16
    /// One to eight.
    public var substreams: [Substream]

    public init(dataRate: UInt16, substreams: [Substream]) throws(FragmentedMP4Error) {
        guard (1...8).contains(substreams.count) else {
            throw FragmentedMP4Error(.invalidValue, path: ["dec3"], "1 to 8 independent substreams")
        }
        self.dataRate = dataRate
        self.substreams = substreams
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt16(dataRate & 0x1FFF) << 3 | UInt16(substreams.count - 1))
        for sub in substreams {
            writer.append(UInt8((sub.fscod & 3) << 6 | (sub.bsid & 0x1F) << 1))  // + reserved bit
            writer.append(
                UInt8((sub.asvc ? 0x80 : 0) | (sub.bsmod & 7) << 4 | (sub.acmod & 7) << 1 | (sub.lfeon ? 1 : 0)))
            if sub.dependentSubstreamCount > 0 {
                let value = UInt16(sub.dependentSubstreamCount & 0x0F) << 9 | (sub.channelLocations & 0x1FF)
                writer.append(value)  // 3 reserved bits, num_dep_sub, chan_loc
            } else {
                writer.append(UInt8(0))  // 3 reserved bits, num_dep_sub 0, reserved bit
            }
        }
    }
}
