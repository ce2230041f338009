import MPEGTS
import TextCodecs

/// The few fields of an SCTE-35 `splice_info_section` (ANSI/SCTE 35 §9) that ad detection needs.
///
/// Decoded by MPEGTS's `SpliceInfoSection` (CRC checked); this keeps what ad detection reads: the command type,
/// `splice_insert`'s out-of-network flag and break duration, and the segmentation descriptors (type and duration).
/// Overlay placement opportunities (0x38/0x3A) are not ads here: they do not replace the content.
public struct SCTE35Cue: Sendable, Hashable {
    /// `splice_command_type` (§9.7): 0x05 splice_insert, 0x06 time_signal, 0x00 splice_null, ...
    public var commandType: UInt8
    /// splice_insert: `splice_event_id`.
    public var spliceEventID: UInt32?
    /// splice_insert: `out_of_network_indicator` (nil for other commands or a cancelled event).
    public var outOfNetwork: Bool?
    /// splice_insert: `splice_event_cancel_indicator`.
    public var cancelled: Bool
    /// splice_insert: `break_duration` in seconds.
    public var breakDuration: Double?
    /// time_signal: the segmentation descriptors (§10.3.3) carried with the command.
    public var segmentations: [Segmentation]

    /// One `segmentation_descriptor`.
    public struct Segmentation: Sendable, Hashable {
        public var eventID: UInt32
        public var cancelled: Bool
        /// `segmentation_type_id` (Table 22).
        public var typeID: UInt8
        /// `segmentation_duration` in seconds.
        public var duration: Double?
    }

    /// Segmentation types that open an advertisement break: break start (0x22), provider/distributor
    /// advertisement start (0x30/0x32), placement opportunity start (0x34/0x36) and ad block start (0x44/0x46).
    public static let adStartTypes: Set<UInt8> = [0x22, 0x30, 0x32, 0x34, 0x36, 0x44, 0x46]
    /// The matching end types (each start type plus one).
    public static let adEndTypes: Set<UInt8> = [0x23, 0x31, 0x33, 0x35, 0x37, 0x45, 0x47]

    /// What the cue says about ads.
    public enum Signal: Sendable, Hashable {
        /// The start of an ad break, with the duration when the cue gives one.
        case adStart(duration: Double?)
        /// The end of an ad break (return to network).
        case adEnd
        /// Nothing about ads (splice_null, a chapter or program boundary, a cancelled event, ...).
        case none
    }

    /// The ad meaning of the cue.
    public var signal: Signal {
        switch commandType {
        case 0x05:
            if cancelled { return .none }
            if outOfNetwork == true { return .adStart(duration: breakDuration) }
            if outOfNetwork == false { return .adEnd }
            return .none
        case 0x06:
            for s in segmentations where !s.cancelled {
                if SCTE35Cue.adStartTypes.contains(s.typeID) { return .adStart(duration: s.duration) }
                if SCTE35Cue.adEndTypes.contains(s.typeID) { return .adEnd }
            }
            return .none
        default:
            return .none
        }
    }

    /// Decodes a splice_info_section (with MPEGTS's decoder, CRC checked); nil when it is not one.
    public init?(bytes: [UInt8]) {
        guard let section = try? SpliceInfoSection(bytes: bytes) else { return nil }
        cancelled = false
        segmentations = []
        switch section.command {
        case .null: commandType = 0x00
        case .schedule: commandType = 0x04
        case .insert(let insert):
            commandType = 0x05
            spliceEventID = insert.eventID
            cancelled = insert.isCancel
            if !insert.isCancel { outOfNetwork = insert.isOutOfNetwork }
            breakDuration = insert.breakDuration?.seconds
        case .timeSignal: commandType = 0x06
        case .bandwidthReservation: commandType = 0x07
        case .privateCommand: commandType = 0xFF
        case .unknown(let type, _): commandType = type
        case .encrypted(let type): commandType = type
        }
        for descriptor in section.descriptors {
            guard case .segmentation(let s) = descriptor else { continue }
            segmentations.append(
                Segmentation(eventID: s.eventID, cancelled: s.isCancel, typeID: s.typeID, duration: s.durationSeconds))
        }
    }

    /// Decodes base64 (standard or URL-safe, padding optional) or `0x`-prefixed hexadecimal text.
    public init?(text: String) {
        guard let bytes = SCTE35Cue.payloadBytes(text) else { return nil }
        self.init(bytes: bytes)
    }

    /// The bytes of a payload written as base64 or as `0x` hexadecimal.
    public static func payloadBytes(_ text: String) -> [UInt8]? {
        var t = Substring(text)
        while let f = t.first, f == " " || f == "\"" { t = t.dropFirst() }
        while let l = t.last, l == " " || l == "\"" { t = t.dropLast() }
        if t.hasPrefix("0x") || t.hasPrefix("0X") { return hex(t.dropFirst(2)) }
        return base64(t)
    }

    /// An even, non-zero count of hexadecimal digits as bytes.
    static func hex(_ s: Substring) -> [UInt8]? {
        guard !s.isEmpty, s.utf8.count % 2 == 0 else { return nil }
        return Hex.decode(s.utf8)
    }

    static func base64(_ s: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for b in s.utf8 {
            let v: UInt32
            switch b {
            case 0x41...0x5A: v = UInt32(b - 0x41)
            case 0x61...0x7A: v = UInt32(b - 0x61 + 26)
            case 0x30...0x39: v = UInt32(b - 0x30 + 52)
            case 0x2B, 0x2D: v = 62
            case 0x2F, 0x5F: v = 63
            case 0x3D: continue
            default: return nil
            }
            accumulator = (accumulator << 6 | v) & 0xFFFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out.isEmpty ? nil : out
    }
}
