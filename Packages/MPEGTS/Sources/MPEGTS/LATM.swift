// AAC in LATM/LOAS (ISO/IEC 14496-3 1.7), as DVB carries it (stream_type 0x11): the LOAS AudioSyncStream
// (1.7.2: an 11-bit sync word 0x2B7, a 13-bit length, one AudioMuxElement), the AudioMuxElement with its mux
// configuration in band (1.7.3: muxConfigPresent 1), the StreamMuxConfig of audioMuxVersion 0 or 1 with its
// AudioSpecificConfig (1.6.2.1, SBR and PS signalled either way), and PayloadLengthInfo with frameLengthType 0.
// What a single-program, single-layer, one-subframe stream needs; the rest is refused with a typed error.

/// The decoder configuration a LATM stream's StreamMuxConfig carries: its AudioSpecificConfig, as carried, and
/// what it says.
public struct LATMConfiguration: Hashable, Sendable {
    /// The AudioSpecificConfig's bits as the stream carried them, zero bits added to a whole byte: what an MP4
    /// `esds` carries as the DecoderSpecificInfo, so that SBR and PS are signalled as the stream signals them.
    public var audioSpecificConfig: [UInt8]
    /// The AAC core's audio object type (2 for AAC-LC), after any explicit SBR or PS signalling.
    public var objectType: Int
    /// The core's sampling frequency index (0–12) and rate.
    public var samplingFrequencyIndex: Int
    public var sampleRate: Int
    /// The channel configuration (1–7; 7 is 7.1).
    public var channelConfiguration: Int
    /// 5 when SBR is signalled (HE-AAC), 29 when SBR and PS are (HE-AAC v2), in either form (explicit
    /// hierarchical, or backward-compatible with the 0x2B7 sync extension); nil when neither is signalled (plain
    /// AAC, or HE-AAC left for the decoder to find: implicit signalling).
    public var extensionObjectType: Int?
    /// The output sampling rate when SBR is signalled.
    public var extensionSampleRate: Int?
    /// Samples (per channel, at the core's rate) in one access unit: 1024, or 960 with the frame length flag.
    public var samplesPerFrame: Int

    /// The RFC 6381 codec string: `mp4a.40.5` or `mp4a.40.29` when SBR or PS is signalled, else the core's type.
    public var codecString: String { "mp4a.40.\(extensionObjectType ?? objectType)" }

    /// The channels a player outputs (8 for configuration 7).
    public var channels: Int { channelConfiguration == 7 ? 8 : channelConfiguration }
}

/// Reads LOAS frames one after another, keeping the last StreamMuxConfig for the frames that reuse it
/// (useSameStreamMux). Each frame gives its one raw AAC access unit.
public struct LOASReader: Sendable {
    /// The configuration of the last StreamMuxConfig read, or nil before the first.
    public private(set) var configuration: LATMConfiguration?

    public init() {}

    /// A reader that starts with the configuration of `audioSpecificConfig` (the bytes of an earlier
    /// ``LATMConfiguration``), so that frames reusing it (useSameStreamMux) read before the stream repeats its
    /// StreamMuxConfig: for a range cut from the middle of a stream. Throws as the StreamMuxConfig would.
    public init(audioSpecificConfig: [UInt8]) throws(MPEGTSError) {
        var reader = BitReader(audioSpecificConfig)
        configuration = try Self.audioSpecificConfig(&reader, lengthBits: audioSpecificConfig.count * 8)
    }

    /// The LOAS sync word, 11 bits.
    static let syncWord: UInt32 = 0x2B7
    /// The longest LOAS frame: a 3-byte header and an AudioMuxElement of at most 8191 bytes.
    public static let maximumFrameLength = 3 + 8191

    /// The length of the LOAS frame at `index` (its 3-byte header included), whether or not the whole frame is in
    /// `bytes`; nil when no sync word starts there or fewer than 3 bytes are left.
    public static func frameLength(_ bytes: [UInt8], at index: Int) -> Int? {
        guard index >= 0, index + 3 <= bytes.count, bytes[index] == 0x56, bytes[index + 1] & 0xE0 == 0xE0 else {
            return nil
        }
        let length = Int(bytes[index + 1] & 0x1F) << 8 | Int(bytes[index + 2])
        return length > 0 ? 3 + length : nil
    }

    /// Whether a LOAS header could start at `index` though too few bytes are left to read its length.
    public static func mayStartFrame(_ bytes: [UInt8], at index: Int) -> Bool {
        guard index >= 0, index < bytes.count, bytes.count - index < 3 else { return false }
        return bytes[index] == 0x56 && (index + 1 >= bytes.count || bytes[index + 1] & 0xE0 == 0xE0)
    }

    /// The raw access unit of the whole LOAS frame at `index`, reading its StreamMuxConfig when it has one.
    /// Errors carry `index` (plus the bytes into the frame, when known) as their offset: ``MPEGTSError/Code/noSync``
    /// (no sync word), ``MPEGTSError/Code/truncated`` (the frame or a field runs past its end),
    /// ``MPEGTSError/Code/unsupported`` (several subframes, programs or layers, audioMuxVersionA 1, a frame length
    /// type other than 0, a program config element, an object type other than AAC Main, LC, SSR or LTP, an
    /// explicit sampling frequency), ``MPEGTSError/Code/invalidValue`` (useSameStreamMux before any
    /// StreamMuxConfig, an empty access unit, a reserved index). After an error the configuration read before
    /// stays.
    public mutating func accessUnit(_ bytes: [UInt8], at index: Int) throws(MPEGTSError) -> [UInt8] {
        guard let length = Self.frameLength(bytes, at: index) else {
            throw MPEGTSError(.noSync, offset: Int64(index), "no LOAS sync word (0x2B7)")
        }
        guard index + length <= bytes.count else {
            throw MPEGTSError(
                .truncated, offset: Int64(index),
                "LOAS frame of \(length) bytes, \(bytes.count - index) left")
        }
        var reader = BitReader(Array(bytes[index + 3..<index + length]))
        do {
            return try audioMuxElement(&reader)
        } catch {
            var located = error
            located.offset = Int64(index + 3 + reader.bitPosition / 8)
            throw located
        }
    }

    /// AudioMuxElement(1) (1.7.3 table 1.41): the payload of the one subframe of the one program and layer.
    mutating func audioMuxElement(_ reader: inout BitReader) throws(MPEGTSError) -> [UInt8] {
        if try reader.bit() == 0 {
            try streamMuxConfig(&reader)
        } else if configuration == nil {
            throw MPEGTSError(.invalidValue, "LATM frame reuses a StreamMuxConfig (useSameStreamMux) before any")
        }
        // PayloadLengthInfo, frameLengthType 0: MuxSlotLengthBytes in bytes of 255 and a last one below.
        var count = 0
        var tmp: UInt32
        repeat {
            tmp = try reader.bits(8)
            count += Int(tmp)
        } while tmp == 255 && count <= 8191
        guard count > 0 else { throw MPEGTSError(.invalidValue, "LATM payload of 0 bytes") }
        guard count * 8 <= reader.bitsRemaining else {
            throw MPEGTSError(
                .truncated, "LATM payload of \(count) bytes, \(reader.bitsRemaining / 8) left in the frame")
        }
        var unit = [UInt8](repeating: 0, count: count)
        for position in 0..<count { unit[position] = UInt8(try reader.bits(8)) }
        // otherData (and the byte alignment) follow; nothing in them is needed.
        return unit
    }

    /// LatmGetValue (1.7.3 table 1.43): 2 bits saying how many more bytes, then those bytes plus one.
    static func latmValue(_ reader: inout BitReader) throws(MPEGTSError) -> Int {
        let bytes = Int(try reader.bits(2))
        var value = 0
        for _ in 0...bytes { value = value << 8 | Int(try reader.bits(8)) }
        return value
    }

    /// StreamMuxConfig (1.7.3 table 1.42).
    mutating func streamMuxConfig(_ reader: inout BitReader) throws(MPEGTSError) {
        let version = Int(try reader.bit())
        if version == 1 {
            guard try reader.bit() == 0 else {
                throw MPEGTSError(.unsupported, "LATM audioMuxVersionA 1 (reserved)")
            }
            _ = try Self.latmValue(&reader)  // taraBufferFullness
        }
        _ = try reader.bit()  // allStreamsSameTimeFraming: one program and layer make it moot
        let subFrames = try reader.bits(6)
        let programs = try reader.bits(4)
        let layers = try reader.bits(3)
        guard subFrames == 0, programs == 0, layers == 0 else {
            throw MPEGTSError(
                .unsupported,
                "LATM with \(subFrames + 1) subframes, \(programs + 1) programs, \(layers + 1) layers (one of each is "
                    + "read)")
        }
        let config: LATMConfiguration
        if version == 0 {
            config = try Self.audioSpecificConfig(&reader, lengthBits: nil)
        } else {
            let length = try Self.latmValue(&reader)
            guard length > 0, length <= reader.bitsRemaining else {
                throw MPEGTSError(.truncated, "AudioSpecificConfig of \(length) bits, \(reader.bitsRemaining) left")
            }
            config = try Self.audioSpecificConfig(&reader, lengthBits: length)
        }
        let frameLengthType = try reader.bits(3)
        guard frameLengthType == 0 else {
            throw MPEGTSError(.unsupported, "LATM frameLengthType \(frameLengthType) (only 0, lengths in bytes)")
        }
        _ = try reader.bits(8)  // latmBufferFullness
        let otherData = try reader.bit() == 1
        if otherData {
            if version == 1 {
                _ = try Self.latmValue(&reader)
            } else {
                var escape: UInt32
                var rounds = 0
                repeat {
                    escape = try reader.bit()
                    _ = try reader.bits(8)
                    rounds += 1
                } while escape == 1 && rounds < 8
            }
        }
        if try reader.bit() == 1 { _ = try reader.bits(8) }  // crcCheckPresent, crcCheckSum
        configuration = config
    }
}

extension LOASReader {
    /// The audio object types whose GASpecificConfig is read: AAC Main, LC, SSR and LTP.
    static let coreObjectTypes: Set<Int> = [1, 2, 3, 4]
    static let sampleRates = ADTSHeader.sampleRates

    /// GetAudioObjectType (1.6.2.1 table 1.14): 5 bits, 31 escaping to 32 + 6 bits.
    static func objectType(_ reader: inout BitReader) throws(MPEGTSError) -> Int {
        let type = Int(try reader.bits(5))
        return type == 31 ? 32 + Int(try reader.bits(6)) : type
    }

    /// A sampling frequency index and its rate; the explicit 24-bit frequency (index 15) is refused.
    static func frequency(_ reader: inout BitReader, _ what: String) throws(MPEGTSError) -> (index: Int, rate: Int) {
        let index = Int(try reader.bits(4))
        guard index != 15 else { throw MPEGTSError(.unsupported, "\(what): an explicit sampling frequency") }
        guard index < sampleRates.count else {
            throw MPEGTSError(.invalidValue, "\(what): reserved sampling frequency index \(index)")
        }
        return (index, sampleRates[index])
    }

    /// AudioSpecificConfig (1.6.2.1) with a GASpecificConfig (4.4.1), taking `lengthBits` bits when the length is
    /// given (audioMuxVersion 1; then a backward-compatible SBR/PS sync extension after it is read too), else as
    /// many as it needs (audioMuxVersion 0, where nothing may follow it).
    static func audioSpecificConfig(_ reader: inout BitReader, lengthBits: Int?) throws(MPEGTSError)
        -> LATMConfiguration
    {
        let start = reader
        let startBit = reader.bitPosition
        var type = try objectType(&reader)
        let core = try frequency(&reader, "AudioSpecificConfig")
        let channels = Int(try reader.bits(4))
        var extensionType: Int?
        var extensionRate: Int?
        if type == 5 || type == 29 {
            // Explicit hierarchical signalling: the output rate, then the core's object type.
            extensionType = type
            extensionRate = try frequency(&reader, "SBR extension").rate
            type = try objectType(&reader)
        }
        guard coreObjectTypes.contains(type) else {
            throw MPEGTSError(.unsupported, "audio object type \(type) (AAC Main, LC, SSR or LTP is read)")
        }
        // GASpecificConfig: frameLengthFlag, dependsOnCoreCoder (coreCoderDelay), extensionFlag.
        let samples = try reader.bit() == 1 ? 960 : 1024
        if try reader.bit() == 1 { try reader.skip(14) }
        let extensionFlag = try reader.bit()
        guard channels != 0 else {
            throw MPEGTSError(.unsupported, "channel configuration 0 (a program config element)")
        }
        guard channels < 8 else { throw MPEGTSError(.invalidValue, "reserved channel configuration \(channels)") }
        if extensionFlag == 1 { _ = try reader.bit() }  // extensionFlag3 (types 1–4 have no other fields)
        if let lengthBits {
            let used = reader.bitPosition - startBit
            guard used <= lengthBits else {
                throw MPEGTSError(.invalidLength, "AudioSpecificConfig of \(used) bits in an ascLen of \(lengthBits)")
            }
            var rest = reader
            if extensionType == nil, lengthBits - used >= 16, try rest.bits(11) == 0x2B7 {
                // Backward-compatible signalling (1.6.5.1): SBR, and PS after a second sync word.
                if try objectType(&rest) == 5, try rest.bit() == 1 {
                    extensionType = 5
                    extensionRate = try frequency(&rest, "SBR extension").rate
                    if lengthBits - (rest.bitPosition - startBit) >= 12, try rest.bits(11) == 0x548,
                        try rest.bit() == 1
                    {
                        extensionType = 29
                    }
                }
            }
            try reader.skip(lengthBits - used)
        }
        let total = reader.bitPosition - startBit
        var copy = start
        var bytes: [UInt8] = []
        bytes.reserveCapacity((total + 7) / 8)
        var left = total
        while left > 0 {
            let take = min(8, left)
            bytes.append(UInt8(try copy.bits(take) << (8 - take)))
            left -= take
        }
        return LATMConfiguration(
            audioSpecificConfig: bytes, objectType: type, samplingFrequencyIndex: core.index, sampleRate: core.rate,
            channelConfiguration: channels, extensionObjectType: extensionType, extensionSampleRate: extensionRate,
            samplesPerFrame: samples)
    }
}

extension LOASReader {
    /// The configuration of the first LOAS frame in `bytes` that carries a StreamMuxConfig and reads, looking at
    /// 64 whole frames at most; nil when none does.
    public static func firstConfiguration(in bytes: [UInt8]) -> LATMConfiguration? {
        var index = 0
        var frames = 0
        while index < bytes.count, frames < 64 {
            guard let length = frameLength(bytes, at: index), index + length <= bytes.count else {
                index += 1
                continue
            }
            var reader = LOASReader()
            if (try? reader.accessUnit(bytes, at: index)) != nil, let configuration = reader.configuration {
                return configuration
            }
            frames += 1
            index += length
        }
        return nil
    }
}
