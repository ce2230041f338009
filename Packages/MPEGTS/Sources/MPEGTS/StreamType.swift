/// The stream_type byte of a PMT entry (ISO/IEC 13818-1 Table 2-34 and common registrations).
public struct StreamType: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let mpeg1Video = StreamType(rawValue: 0x01)
    public static let mpeg2Video = StreamType(rawValue: 0x02)
    public static let mpeg1Audio = StreamType(rawValue: 0x03)
    public static let mpeg2Audio = StreamType(rawValue: 0x04)
    public static let privateSections = StreamType(rawValue: 0x05)
    public static let privatePES = StreamType(rawValue: 0x06)
    public static let aacADTS = StreamType(rawValue: 0x0F)
    public static let mpeg4Video = StreamType(rawValue: 0x10)
    public static let aacLATM = StreamType(rawValue: 0x11)
    public static let metadataPES = StreamType(rawValue: 0x15)
    public static let h264 = StreamType(rawValue: 0x1B)
    public static let hevc = StreamType(rawValue: 0x24)
    public static let ac3 = StreamType(rawValue: 0x81)
    public static let scte35 = StreamType(rawValue: 0x86)
    public static let eac3 = StreamType(rawValue: 0x87)

    /// A human-readable name.
    public var name: String {
        switch rawValue {
        case 0x01: "MPEG-1 video"
        case 0x02: "MPEG-2 video"
        case 0x03: "MPEG-1 audio"
        case 0x04: "MPEG-2 audio"
        case 0x05: "private sections"
        case 0x06: "PES private data"
        case 0x0F: "AAC (ADTS)"
        case 0x10: "MPEG-4 video"
        case 0x11: "AAC (LATM)"
        case 0x15: "metadata in PES"
        case 0x1B: "H.264"
        case 0x24: "HEVC"
        case 0x81: "AC-3"
        case 0x86: "SCTE-35"
        case 0x87: "E-AC-3"
        default: "unknown"
        }
    }

    public var description: String { "0x\(hex(rawValue)) (\(name))" }
}

/// What an elementary stream carries, resolved from the stream type and descriptors.
public struct Codec: Hashable, Sendable, CustomStringConvertible {
    /// The broad kind of stream.
    public enum Kind: String, Hashable, Sendable {
        case video
        case audio
        case data
        case unknown
    }

    /// A short identifier, the same as ffprobe's `codec_name` where ffprobe knows the codec
    /// (h264, hevc, aac, aac_latm, ac3, eac3, mp2, mpeg2video, timed_id3, scte_35 ...).
    public let name: String
    public let kind: Kind

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    public static let h264 = Codec(name: "h264", kind: .video)
    public static let hevc = Codec(name: "hevc", kind: .video)
    public static let mpeg1Video = Codec(name: "mpeg1video", kind: .video)
    public static let mpeg2Video = Codec(name: "mpeg2video", kind: .video)
    public static let mpeg4Video = Codec(name: "mpeg4", kind: .video)
    public static let mpegAudio = Codec(name: "mp2", kind: .audio)
    public static let aac = Codec(name: "aac", kind: .audio)
    public static let aacLATM = Codec(name: "aac_latm", kind: .audio)
    public static let ac3 = Codec(name: "ac3", kind: .audio)
    public static let eac3 = Codec(name: "eac3", kind: .audio)
    public static let id3 = Codec(name: "timed_id3", kind: .data)
    public static let scte35 = Codec(name: "scte_35", kind: .data)
    public static let privateData = Codec(name: "private", kind: .data)
    public static let unknown = Codec(name: "unknown", kind: .unknown)

    /// Whether the stream is carried in PSI sections rather than PES packets.
    public var isSectionStream: Bool { self == .scte35 }

    public var description: String { name }

    /// Resolves the codec of a PMT entry.
    public init(streamType: StreamType, descriptors: [Descriptor]) {
        let registration = descriptors.lazy.compactMap(\.registrationFormat).first
        switch streamType.rawValue {
        case 0x01: self = .mpeg1Video
        case 0x02: self = .mpeg2Video
        case 0x03, 0x04: self = .mpegAudio
        case 0x0F: self = .aac
        case 0x10: self = .mpeg4Video
        case 0x11: self = .aacLATM
        case 0x15: self = registration == "ID3 " || descriptors.contains { $0.tag == 0x26 } ? .id3 : .privateData
        case 0x1B: self = .h264
        case 0x24: self = .hevc
        case 0x81: self = .ac3
        case 0x87: self = .eac3
        case 0x86: self = .scte35
        case 0x05: self = registration == "CUEI" ? .scte35 : .privateData
        case 0x06:
            if descriptors.contains(where: { $0.tag == 0x6A }) || registration == "AC-3" {
                self = .ac3
            } else if descriptors.contains(where: { $0.tag == 0x7A }) || registration == "EAC3" {
                self = .eac3
            } else if registration == "HEVC" {
                self = .hevc
            } else if registration == "ID3 " {
                self = .id3
            } else {
                self = .privateData
            }
        default: self = .unknown
        }
    }

    /// Identifies an audio codec from the first bytes of a PES payload: ADTS (AAC), AC-3 / E-AC-3 sync frames,
    /// MPEG audio frame headers on an audio stream id.
    static func sniff(streamID: UInt8, payload: UnsafeRawBufferPointer) -> Codec? {
        guard payload.count >= 6 else { return nil }
        let b0 = payload[0]
        let b1 = payload[1]
        if b0 == 0x0B && b1 == 0x77 {
            let bsid = payload[5] >> 3
            return bsid > 10 ? .eac3 : .ac3
        }
        if b0 == 0xFF && b1 & 0xF6 == 0xF0 { return .aac }  // ADTS: sync, layer 00
        if b0 == 0xFF && b1 & 0xE0 == 0xE0 && b1 & 0x06 != 0 && streamID & 0xE0 == 0xC0 { return .mpegAudio }
        return nil
    }
}
