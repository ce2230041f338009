/// A decoded SCTE-35 `splice_info_section` (ANSI/SCTE 35 2022 §9.6): the splice command, its descriptors and
/// the PTS adjustment, with the CRC checked.
public struct SpliceInfoSection: Hashable, Sendable {
    public var protocolVersion: UInt8
    public var sapType: UInt8
    public var isEncrypted: Bool
    public var encryptionAlgorithm: UInt8
    /// pts_adjustment, added (modulo 2^33) to every PTS in the command and descriptors.
    public var ptsAdjustment: UInt64
    public var cwIndex: UInt8
    public var tier: UInt16
    public var command: SpliceCommand
    public var descriptors: [SpliceDescriptor]
    public var crc: UInt32

    /// A time in the command moved by ``ptsAdjustment``.
    public func adjusted(_ time: Timestamp) -> Timestamp { time.advanced(by: Int64(ptsAdjustment)) }

    /// Decodes a section (table_id 0xFC through CRC_32).
    public init(bytes: [UInt8]) throws(MPEGTSError) {
        self = try withBytes(bytes) { raw throws(MPEGTSError) in try SpliceInfoSection(raw) }
    }

    /// Decodes a section from base64 (as in HLS `#EXT-X-SCTE35:CUE=` or `#EXT-OATCLS-SCTE35`).
    public init(base64: String) throws(MPEGTSError) {
        guard let bytes = Base64.decode(base64) else { throw MPEGTSError(.invalidValue, "not base64") }
        try self.init(bytes: bytes)
    }

    /// Decodes a section from hex digits, with or without a 0x prefix (as in `SCTE35-OUT=0xFC...`).
    public init(hex: String) throws(MPEGTSError) {
        var text = Substring(hex.filter { !$0.isWhitespace })
        if text.hasPrefix("0x") || text.hasPrefix("0X") { text = text.dropFirst(2) }
        guard text.count % 2 == 0 else { throw MPEGTSError(.invalidValue, "odd number of hex digits") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else {
                throw MPEGTSError(.invalidValue, offset: Int64(bytes.count), "not hex")
            }
            bytes.append(byte)
            index = next
        }
        try self.init(bytes: bytes)
    }

    init(_ raw: UnsafeRawBufferPointer) throws(MPEGTSError) {
        var cursor = ByteCursor(raw)
        let tableID = try cursor.readUInt8("table_id")
        guard tableID == 0xFC else {
            throw MPEGTSError(.invalidValue, offset: 0, "table_id 0x\(hex(tableID)) is not 0xFC")
        }
        let lengthField = try cursor.readUInt16("section_length")
        sapType = UInt8((lengthField >> 12) & 0x03)
        let sectionLength = Int(lengthField & 0x0FFF)
        guard sectionLength >= 15 else {
            throw MPEGTSError(.invalidLength, offset: 1, "section_length \(sectionLength) too short")
        }
        guard raw.count >= 3 + sectionLength else { throw MPEGTSError(.truncated, offset: Int64(raw.count), "section") }
        let sectionBytes = UnsafeRawBufferPointer(rebasing: raw[0..<(3 + sectionLength)])
        guard CRC32MPEG2.checksum(sectionBytes) == 0 else {
            throw MPEGTSError(.crcMismatch, offset: 0, "splice_info_section CRC_32 mismatch")
        }
        var body = try cursor.subCursor(sectionLength - 4, "section body")
        crc = try cursor.readUInt32("CRC_32")
        protocolVersion = try body.readUInt8("protocol_version")
        let encryption = try body.readUInt8("encryption")
        isEncrypted = encryption & 0x80 != 0
        encryptionAlgorithm = (encryption >> 1) & 0x3F
        ptsAdjustment = UInt64(encryption & 1) << 32 | UInt64(try body.readUInt32("pts_adjustment"))
        cwIndex = try body.readUInt8("cw_index")
        let tierAndLength = try body.readUInt24("tier")
        tier = UInt16(tierAndLength >> 12)
        let commandLength = Int(tierAndLength & 0xFFF)
        let commandType = try body.readUInt8("splice_command_type")
        if isEncrypted {
            // The command and descriptors cannot be read without the key.
            command = .encrypted(type: commandType)
            descriptors = []
            return
        }
        if commandLength == 0xFFF {
            // Legacy: the length is unknown; the command is parsed from the rest.
            var rest = body
            command = try SpliceCommand.parse(type: commandType, &rest)
            body = rest
        } else {
            var commandCursor = try body.subCursor(commandLength, "splice command")
            command = try SpliceCommand.parse(type: commandType, &commandCursor)
        }
        let loopLength = Int(try body.readUInt16("descriptor_loop_length"))
        var loop = try body.subCursor(loopLength, "splice descriptors")
        var descriptors: [SpliceDescriptor] = []
        while !loop.isAtEnd {
            descriptors.append(try SpliceDescriptor.parse(&loop))
            guard descriptors.count <= 256 else { throw MPEGTSError(.invalidLength, "too many descriptors") }
        }
        self.descriptors = descriptors
    }
}

/// splice_time(): a PTS, or nil for "immediate / not specified".
func readSpliceTime(_ cursor: inout ByteCursor) throws(MPEGTSError) -> Timestamp? {
    let first = try cursor.readUInt8("splice_time")
    guard first & 0x80 != 0 else { return nil }
    let rest = try cursor.readUInt32("pts_time")
    return Timestamp(wrapping: UInt64(first & 1) << 32 | UInt64(rest))
}

/// break_duration(): auto_return and a duration in 90 kHz ticks.
public struct BreakDuration: Hashable, Sendable {
    public var autoReturn: Bool
    public var ticks: UInt64
    public var seconds: Double { Double(ticks) / 90_000 }

    static func parse(_ cursor: inout ByteCursor) throws(MPEGTSError) -> BreakDuration {
        let first = try cursor.readUInt8("break_duration")
        let rest = try cursor.readUInt32("duration")
        return BreakDuration(autoReturn: first & 0x80 != 0, ticks: UInt64(first & 1) << 32 | UInt64(rest))
    }
}

/// splice_insert().
public struct SpliceInsert: Hashable, Sendable {
    public struct Component: Hashable, Sendable {
        public var tag: UInt8
        public var spliceTime: Timestamp?
    }
    public var eventID: UInt32
    public var isCancel: Bool
    public var isOutOfNetwork: Bool = false
    public var isProgramSplice: Bool = false
    public var isImmediate: Bool = false
    /// The splice time for a program splice (nil when immediate).
    public var spliceTime: Timestamp?
    public var components: [Component] = []
    public var breakDuration: BreakDuration?
    public var uniqueProgramID: UInt16 = 0
    public var availNum: UInt8 = 0
    public var availsExpected: UInt8 = 0
}

/// One event of a splice_schedule().
public struct ScheduledSplice: Hashable, Sendable {
    public var eventID: UInt32
    public var isCancel: Bool
    public var isOutOfNetwork: Bool = false
    /// UTC seconds since 1980-01-06 (GPS epoch), for a program splice.
    public var utcSpliceTime: UInt32?
    public var components: [(tag: UInt8, utcSpliceTime: UInt32)] {
        componentTimes.map { ($0.tag, $0.time) }
    }
    var componentTimes: [ComponentTime] = []
    public var breakDuration: BreakDuration?
    public var uniqueProgramID: UInt16 = 0
    public var availNum: UInt8 = 0
    public var availsExpected: UInt8 = 0

    struct ComponentTime: Hashable, Sendable {
        var tag: UInt8
        var time: UInt32
    }
}

/// The splice command of a section.
public enum SpliceCommand: Hashable, Sendable {
    case null
    case schedule([ScheduledSplice])
    case insert(SpliceInsert)
    case timeSignal(Timestamp?)
    case bandwidthReservation
    case privateCommand(identifier: UInt32, bytes: [UInt8])
    case unknown(type: UInt8, bytes: [UInt8])
    case encrypted(type: UInt8)

    /// The name SCTE 35 gives the command.
    public var name: String {
        switch self {
        case .null: "splice_null"
        case .schedule: "splice_schedule"
        case .insert: "splice_insert"
        case .timeSignal: "time_signal"
        case .bandwidthReservation: "bandwidth_reservation"
        case .privateCommand: "private_command"
        case .unknown(let type, _): "splice_command_type 0x\(hex(type))"
        case .encrypted(let type): "encrypted splice_command_type 0x\(hex(type))"
        }
    }

    static func parse(type: UInt8, _ cursor: inout ByteCursor) throws(MPEGTSError) -> SpliceCommand {
        switch type {
        case 0x00: return .null
        case 0x04:
            let count = Int(try cursor.readUInt8("splice_count"))
            var events: [ScheduledSplice] = []
            for _ in 0..<count {
                let eventID = try cursor.readUInt32("splice_event_id")
                let cancel = try cursor.readUInt8("splice_event_cancel_indicator") & 0x80 != 0
                var event = ScheduledSplice(eventID: eventID, isCancel: cancel)
                if !cancel {
                    let flags = try cursor.readUInt8("splice flags")
                    event.isOutOfNetwork = flags & 0x80 != 0
                    let programSplice = flags & 0x40 != 0
                    let hasDuration = flags & 0x20 != 0
                    if programSplice {
                        event.utcSpliceTime = try cursor.readUInt32("utc_splice_time")
                    } else {
                        let components = Int(try cursor.readUInt8("component_count"))
                        for _ in 0..<components {
                            let tag = try cursor.readUInt8("component_tag")
                            event.componentTimes.append(.init(tag: tag, time: try cursor.readUInt32("utc_splice_time")))
                        }
                    }
                    if hasDuration { event.breakDuration = try BreakDuration.parse(&cursor) }
                    event.uniqueProgramID = try cursor.readUInt16("unique_program_id")
                    event.availNum = try cursor.readUInt8("avail_num")
                    event.availsExpected = try cursor.readUInt8("avails_expected")
                }
                events.append(event)
            }
            return .schedule(events)
        case 0x05:
            let eventID = try cursor.readUInt32("splice_event_id")
            let cancel = try cursor.readUInt8("splice_event_cancel_indicator") & 0x80 != 0
            var insert = SpliceInsert(eventID: eventID, isCancel: cancel)
            if !cancel {
                let flags = try cursor.readUInt8("splice flags")
                insert.isOutOfNetwork = flags & 0x80 != 0
                insert.isProgramSplice = flags & 0x40 != 0
                let hasDuration = flags & 0x20 != 0
                insert.isImmediate = flags & 0x10 != 0
                if insert.isProgramSplice && !insert.isImmediate { insert.spliceTime = try readSpliceTime(&cursor) }
                if !insert.isProgramSplice {
                    let components = Int(try cursor.readUInt8("component_count"))
                    for _ in 0..<components {
                        let tag = try cursor.readUInt8("component_tag")
                        let time = insert.isImmediate ? nil : try readSpliceTime(&cursor)
                        insert.components.append(.init(tag: tag, spliceTime: time))
                    }
                }
                if hasDuration { insert.breakDuration = try BreakDuration.parse(&cursor) }
                insert.uniqueProgramID = try cursor.readUInt16("unique_program_id")
                insert.availNum = try cursor.readUInt8("avail_num")
                insert.availsExpected = try cursor.readUInt8("avails_expected")
            }
            return .insert(insert)
        case 0x06: return .timeSignal(try readSpliceTime(&cursor))
        case 0x07: return .bandwidthReservation
        case 0xFF:
            let identifier = try cursor.readUInt32("identifier")
            return .privateCommand(identifier: identifier, bytes: Array(cursor.readRest()))
        default:
            return .unknown(type: type, bytes: Array(cursor.readRest()))
        }
    }
}

/// segmentation_descriptor() (SCTE 35 §10.3.3).
public struct SegmentationDescriptor: Hashable, Sendable {
    public struct Component: Hashable, Sendable {
        public var tag: UInt8
        public var ptsOffset: UInt64
    }
    public var eventID: UInt32
    public var isCancel: Bool
    public var eventIDCompliance: Bool = true
    public var isProgramSegmentation: Bool = true
    public var deliveryNotRestricted: Bool = true
    public var webDeliveryAllowed: Bool = true
    public var noRegionalBlackout: Bool = true
    public var archiveAllowed: Bool = true
    public var deviceRestrictions: UInt8 = 3
    public var components: [Component] = []
    /// segmentation_duration in 90 kHz ticks.
    public var durationTicks: UInt64?
    public var upidType: UInt8 = 0
    public var upid: [UInt8] = []
    public var typeID: UInt8 = 0
    public var segmentNumber: UInt8 = 0
    public var segmentsExpected: UInt8 = 0
    public var subSegmentNumber: UInt8?
    public var subSegmentsExpected: UInt8?

    public var durationSeconds: Double? { durationTicks.map { Double($0) / 90_000 } }

    /// The name of the segmentation_type_id (SCTE 35 Table 23).
    public var typeName: String {
        switch typeID {
        case 0x00: "Not Indicated"
        case 0x01: "Content Identification"
        case 0x02: "Call Ad Server"
        case 0x10: "Program Start"
        case 0x11: "Program End"
        case 0x12: "Program Early Termination"
        case 0x13: "Program Breakaway"
        case 0x14: "Program Resumption"
        case 0x15: "Program Runover Planned"
        case 0x16: "Program Runover Unplanned"
        case 0x17: "Program Overlap Start"
        case 0x18: "Program Blackout Override"
        case 0x19: "Program Start - In Progress"
        case 0x20: "Chapter Start"
        case 0x21: "Chapter End"
        case 0x22: "Break Start"
        case 0x23: "Break End"
        case 0x24: "Opening Credit Start"
        case 0x25: "Opening Credit End"
        case 0x26: "Closing Credit Start"
        case 0x27: "Closing Credit End"
        case 0x30: "Provider Advertisement Start"
        case 0x31: "Provider Advertisement End"
        case 0x32: "Distributor Advertisement Start"
        case 0x33: "Distributor Advertisement End"
        case 0x34: "Provider Placement Opportunity Start"
        case 0x35: "Provider Placement Opportunity End"
        case 0x36: "Distributor Placement Opportunity Start"
        case 0x37: "Distributor Placement Opportunity End"
        case 0x38: "Provider Overlay Placement Opportunity Start"
        case 0x39: "Provider Overlay Placement Opportunity End"
        case 0x3A: "Distributor Overlay Placement Opportunity Start"
        case 0x3B: "Distributor Overlay Placement Opportunity End"
        case 0x3C: "Provider Promo Start"
        case 0x3D: "Provider Promo End"
        case 0x3E: "Distributor Promo Start"
        case 0x3F: "Distributor Promo End"
        case 0x40: "Unscheduled Event Start"
        case 0x41: "Unscheduled Event End"
        case 0x42: "Alternate Content Opportunity Start"
        case 0x43: "Alternate Content Opportunity End"
        case 0x44: "Provider Ad Block Start"
        case 0x45: "Provider Ad Block End"
        case 0x46: "Distributor Ad Block Start"
        case 0x47: "Distributor Ad Block End"
        case 0x50: "Network Start"
        case 0x51: "Network End"
        default: "Unknown 0x\(hex(typeID))"
        }
    }

    /// Whether this type starts an advertisement or placement opportunity (used by ad filters).
    public var isAdStart: Bool { [0x22, 0x30, 0x32, 0x34, 0x36, 0x38, 0x3A, 0x44, 0x46].contains(typeID) }
    /// Whether this type ends one.
    public var isAdEnd: Bool { [0x23, 0x31, 0x33, 0x35, 0x37, 0x39, 0x3B, 0x45, 0x47].contains(typeID) }

    static func parse(_ cursor: inout ByteCursor) throws(MPEGTSError) -> SegmentationDescriptor {
        let eventID = try cursor.readUInt32("segmentation_event_id")
        let flags = try cursor.readUInt8("segmentation_event_cancel_indicator")
        var descriptor = SegmentationDescriptor(eventID: eventID, isCancel: flags & 0x80 != 0)
        descriptor.eventIDCompliance = flags & 0x40 != 0
        guard !descriptor.isCancel else { return descriptor }
        let more = try cursor.readUInt8("segmentation flags")
        descriptor.isProgramSegmentation = more & 0x80 != 0
        let hasDuration = more & 0x40 != 0
        descriptor.deliveryNotRestricted = more & 0x20 != 0
        if !descriptor.deliveryNotRestricted {
            descriptor.webDeliveryAllowed = more & 0x10 != 0
            descriptor.noRegionalBlackout = more & 0x08 != 0
            descriptor.archiveAllowed = more & 0x04 != 0
            descriptor.deviceRestrictions = more & 0x03
        }
        if !descriptor.isProgramSegmentation {
            let count = Int(try cursor.readUInt8("component_count"))
            for _ in 0..<count {
                let tag = try cursor.readUInt8("component_tag")
                let offset = try cursor.readBigEndian(5, "pts_offset") & 0x1_FFFF_FFFF
                descriptor.components.append(Component(tag: tag, ptsOffset: offset))
            }
        }
        if hasDuration { descriptor.durationTicks = try cursor.readBigEndian(5, "segmentation_duration") }
        descriptor.upidType = try cursor.readUInt8("segmentation_upid_type")
        let upidLength = Int(try cursor.readUInt8("segmentation_upid_length"))
        descriptor.upid = Array(try cursor.readBytes(upidLength, "segmentation_upid"))
        descriptor.typeID = try cursor.readUInt8("segmentation_type_id")
        descriptor.segmentNumber = try cursor.readUInt8("segment_num")
        descriptor.segmentsExpected = try cursor.readUInt8("segments_expected")
        if [0x34, 0x36, 0x38, 0x3A].contains(descriptor.typeID), cursor.remaining >= 2 {
            descriptor.subSegmentNumber = try cursor.readUInt8("sub_segment_num")
            descriptor.subSegmentsExpected = try cursor.readUInt8("sub_segments_expected")
        }
        return descriptor
    }
}

/// A splice descriptor (SCTE 35 §10).
public enum SpliceDescriptor: Hashable, Sendable {
    case avail(providerAvailID: UInt32)
    case dtmf(preroll: UInt8, characters: String)
    case segmentation(SegmentationDescriptor)
    /// TAI seconds, nanoseconds and the UTC offset in seconds.
    case time(taiSeconds: UInt64, nanoseconds: UInt32, utcOffset: UInt16)
    case audio(bytes: [UInt8])
    case unknown(tag: UInt8, identifier: UInt32, bytes: [UInt8])

    static func parse(_ cursor: inout ByteCursor) throws(MPEGTSError) -> SpliceDescriptor {
        let tag = try cursor.readUInt8("splice_descriptor_tag")
        let length = Int(try cursor.readUInt8("descriptor_length"))
        var body = try cursor.subCursor(length, "splice descriptor")
        let identifier = try body.readUInt32("identifier")
        guard identifier == 0x4355_4549 else {  // "CUEI"
            return .unknown(tag: tag, identifier: identifier, bytes: Array(body.readRest()))
        }
        switch tag {
        case 0x00: return .avail(providerAvailID: try body.readUInt32("provider_avail_id"))
        case 0x01:
            let preroll = try body.readUInt8("preroll")
            let count = Int(try body.readUInt8("dtmf_count") >> 5)
            return .dtmf(
                preroll: preroll, characters: String(decoding: try body.readBytes(count, "DTMF_char"), as: UTF8.self))
        case 0x02: return .segmentation(try SegmentationDescriptor.parse(&body))
        case 0x03:
            let seconds = try body.readBigEndian(6, "TAI_seconds")
            return .time(
                taiSeconds: seconds, nanoseconds: try body.readUInt32("TAI_ns"),
                utcOffset: try body.readUInt16("UTC_offset"))
        case 0x04: return .audio(bytes: Array(body.readRest()))
        default: return .unknown(tag: tag, identifier: identifier, bytes: Array(body.readRest()))
        }
    }
}

/// Base64 (RFC 4648, standard alphabet, padding optional) without Foundation.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        guard padding <= 2, bits < 6 else { return nil }
        return output
    }

    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << UInt32(16 - 8 * offset) }
            for position in 0..<4 {
                if position <= chunk.count {
                    output.append(alphabet[Int((value >> UInt32(18 - 6 * position)) & 0x3F)])
                } else {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
