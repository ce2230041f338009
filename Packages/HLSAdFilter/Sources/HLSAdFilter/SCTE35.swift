/// The few fields of an SCTE-35 `splice_info_section` (ANSI/SCTE 35 §9) that ad detection needs.
///
/// MPEGTS does not ship an SCTE-35 decoder yet, so this reads just what HLSAdFilter uses: the command type,
/// `splice_insert`'s out-of-network flag and break duration, `time_signal`'s segmentation descriptors (type and
/// duration). Every length is checked against what is left; nothing traps on input.
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

    /// Decodes a splice_info_section; nil when it is not one or is cut short.
    public init?(bytes: [UInt8]) {
        var r = BitReader(bytes)
        guard r.read(8) == 0xFC else { return nil }
        _ = r.read(4)
        guard let sectionLength = r.read(12), Int(sectionLength) <= r.bytesLeft else { return nil }
        _ = r.read(8)  // protocol_version
        guard let encrypted = r.read(1), encrypted == 0 else { return nil }
        _ = r.read(6)
        _ = r.read(33)  // pts_adjustment
        _ = r.read(8)  // cw_index
        _ = r.read(12)  // tier
        guard let commandLength = r.read(12), let type = r.read(8) else { return nil }
        commandType = UInt8(truncatingIfNeeded: type)
        cancelled = false
        segmentations = []
        let commandStart = r.bytePosition
        switch commandType {
        case 0x05:
            guard let eventID = r.read(32), let cancel = r.read(1) else { return nil }
            _ = r.read(7)
            spliceEventID = UInt32(truncatingIfNeeded: eventID)
            cancelled = cancel == 1
            if !cancelled {
                guard let out = r.read(1), let programSplice = r.read(1), let durationFlag = r.read(1),
                    let immediate = r.read(1)
                else { return nil }
                _ = r.read(4)
                outOfNetwork = out == 1
                if programSplice == 1 && immediate == 0 {
                    guard BitReader.skipSpliceTime(&r) else { return nil }
                }
                if programSplice == 0 {
                    guard let count = r.read(8) else { return nil }
                    for _ in 0..<count {
                        _ = r.read(8)
                        if immediate == 0 { guard BitReader.skipSpliceTime(&r) else { return nil } }
                    }
                }
                if durationFlag == 1 {
                    _ = r.read(1)
                    _ = r.read(6)
                    guard let ticks = r.read(33) else { return nil }
                    breakDuration = Double(ticks) / 90_000
                }
                guard r.read(32) != nil else { return nil }  // unique_program_id, avail_num, avails_expected
            }
        case 0x06:
            guard BitReader.skipSpliceTime(&r) else { return nil }
        default:
            // Commands with nothing we read: skip by the declared length when it is known.
            guard commandLength != 0xFFF else { return }
            guard r.skipBytes(Int(commandLength)) else { return nil }
        }
        if commandLength != 0xFFF, r.bytePosition != commandStart + Int(commandLength) {
            let target = commandStart + Int(commandLength)
            guard target >= r.bytePosition, r.skipBytes(target - r.bytePosition) else { return nil }
        }
        guard let loopLength = r.read(16) else { return }
        let loopEnd = r.bytePosition + Int(loopLength)
        var guardCount = 0
        while r.bytePosition + 2 <= loopEnd, guardCount < 64 {
            guardCount += 1
            guard let tag = r.read(8), let length = r.read(8) else { return }
            let descriptorEnd = r.bytePosition + Int(length)
            guard descriptorEnd <= loopEnd else { return }
            if tag == 0x02, let s = BitReader.segmentation(&r, end: descriptorEnd) { segmentations.append(s) }
            guard descriptorEnd >= r.bytePosition, r.skipBytes(descriptorEnd - r.bytePosition) else { return }
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

    static func hex(_ s: Substring) -> [UInt8]? {
        let u = Array(s.utf8)
        guard !u.isEmpty, u.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i + 1 < u.count {
            guard let h = nibble(u[i]), let l = nibble(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }

    static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
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

/// Reads big-endian bit fields; every read checks what is left and returns nil past the end.
struct BitReader {
    let bytes: [UInt8]
    var bit = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var bytePosition: Int { (bit + 7) / 8 }
    var bytesLeft: Int { bytes.count - bytePosition }

    mutating func read(_ count: Int) -> UInt64? {
        guard count <= 64, bit + count <= bytes.count * 8 else { return nil }
        var v: UInt64 = 0
        for _ in 0..<count {
            let byte = bytes[bit >> 3]
            let b = (byte >> UInt8(7 - (bit & 7))) & 1
            v = v << 1 | UInt64(b)
            bit += 1
        }
        return v
    }

    mutating func skipBytes(_ n: Int) -> Bool {
        bit = bytePosition * 8
        guard n >= 0, n <= bytesLeft else { return false }
        bit += n * 8
        return true
    }

    /// splice_time() (§9.4.1).
    static func skipSpliceTime(_ r: inout BitReader) -> Bool {
        guard let specified = r.read(1) else { return false }
        if specified == 1 {
            _ = r.read(6)
            return r.read(33) != nil
        }
        return r.read(7) != nil
    }

    /// segmentation_descriptor() (§10.3.3) after its tag and length.
    static func segmentation(_ r: inout BitReader, end: Int) -> SCTE35Cue.Segmentation? {
        guard let identifier = r.read(32), identifier == 0x4355_4549 else { return nil }  // "CUEI"
        guard let eventID = r.read(32), let cancel = r.read(1) else { return nil }
        _ = r.read(7)
        var s = SCTE35Cue.Segmentation(eventID: UInt32(truncatingIfNeeded: eventID), cancelled: cancel == 1, typeID: 0)
        if s.cancelled { return s }
        guard let programFlag = r.read(1), let durationFlag = r.read(1), r.read(6) != nil else { return nil }
        if programFlag == 0 {
            guard let count = r.read(8) else { return nil }
            for _ in 0..<count { guard r.read(48) != nil else { return nil } }
        }
        if durationFlag == 1 {
            guard let ticks = r.read(40) else { return nil }
            s.duration = Double(ticks) / 90_000
        }
        guard r.read(8) != nil, let upidLength = r.read(8), r.skipBytes(Int(upidLength)) else { return nil }
        guard r.bytePosition < end, let type = r.read(8) else { return nil }
        s.typeID = UInt8(truncatingIfNeeded: type)
        return s
    }
}
