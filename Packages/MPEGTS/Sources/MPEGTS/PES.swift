/// The header of a PES packet: stream id, length, and PTS/DTS with their marker bits checked.
public struct PESHeader: Hashable, Sendable {
    public var streamID: UInt8
    /// PES_packet_length: bytes after this field, or 0 for an unbounded (video) PES.
    public var packetLength: Int
    /// Bytes from the start code through the end of the header, i.e. where the payload starts.
    public var headerLength: Int
    public var pts: Timestamp?
    public var dts: Timestamp?
    public var scramblingControl: UInt8
    public var dataAlignment: Bool

    public init(
        streamID: UInt8, packetLength: Int = 0, headerLength: Int = 9, pts: Timestamp? = nil, dts: Timestamp? = nil,
        scramblingControl: UInt8 = 0, dataAlignment: Bool = false
    ) {
        self.streamID = streamID
        self.packetLength = packetLength
        self.headerLength = headerLength
        self.pts = pts
        self.dts = dts
        self.scramblingControl = scramblingControl
        self.dataAlignment = dataAlignment
    }

    /// Stream ids whose PES packets have no optional header (program_stream_map, padding, private_stream_2,
    /// ECM, EMM, DSMCC, H.222.1 type E, directory).
    static func hasOptionalHeader(_ streamID: UInt8) -> Bool {
        switch streamID {
        case 0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF: false
        default: true
        }
    }

    /// The bytes needed before ``parse(_:offset:)`` can succeed, from the first bytes of a PES (nil when more
    /// than the 9 bytes given are needed to know).
    static func requiredLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 9 else { return nil }
        guard hasOptionalHeader(bytes[3]) else { return 6 }
        return 9 + Int(bytes[8])
    }

    /// Parses a PES header from the start of `bytes`. `offset` is used in errors.
    public static func parse(_ bytes: UnsafeRawBufferPointer, offset: Int64 = 0) throws(MPEGTSError) -> PESHeader {
        if let header = parseValid(bytes) { return header }
        return try parseChecked(bytes, offset: offset)
    }

    /// The common case read with direct loads after one length check: a well-formed header with an optional
    /// header and PTS or PTS+DTS (or neither). Nil for anything else, which ``parseChecked(_:offset:)`` then
    /// reads (and reports) field by field.
    @inline(__always)
    static func parseValid(_ bytes: UnsafeRawBufferPointer) -> PESHeader? {
        let count = bytes.count
        guard count >= 9, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else { return nil }
        let streamID = bytes[3]
        guard hasOptionalHeader(streamID) else { return nil }
        let flags1 = bytes[6]
        let flags2 = bytes[7]
        let dataLength = Int(bytes[8])
        let packetLength = Int(bytes[4]) << 8 | Int(bytes[5])
        guard flags1 >> 6 == 0b10, 9 + dataLength <= count, packetLength == 0 || packetLength >= 3 + dataLength
        else { return nil }
        var header = PESHeader(
            streamID: streamID, packetLength: packetLength, headerLength: 9 + dataLength,
            scramblingControl: (flags1 >> 4) & 3, dataAlignment: flags1 & 0x04 != 0)
        switch flags2 >> 6 {
        case 0b10:
            guard dataLength >= 5, let pts = timestampValid(bytes, at: 9) else { return nil }
            header.pts = pts
        case 0b11:
            guard dataLength >= 10, let pts = timestampValid(bytes, at: 9),
                let dts = timestampValid(bytes, at: 14)
            else { return nil }
            header.pts = pts
            header.dts = dts
        case 0b00:
            break
        default:
            return nil
        }
        return header
    }

    /// A PTS/DTS at `index` (the caller checked that 5 bytes are there), nil when a marker bit is 0.
    @inline(__always)
    private static func timestampValid(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Timestamp? {
        let b0 = UInt64(bytes[index])
        let b1 = UInt64(bytes[index + 1])
        let b2 = UInt64(bytes[index + 2])
        let b3 = UInt64(bytes[index + 3])
        let b4 = UInt64(bytes[index + 4])
        guard b0 & 1 != 0, b2 & 1 != 0, b4 & 1 != 0 else { return nil }
        return Timestamp(wrapping: (b0 >> 1 & 7) << 30 | b1 << 22 | (b2 >> 1) << 15 | b3 << 7 | b4 >> 1)
    }

    /// Field-by-field parsing with an error for the first problem.
    static func parseChecked(_ bytes: UnsafeRawBufferPointer, offset: Int64) throws(MPEGTSError) -> PESHeader {
        var cursor = ByteCursor(bytes, baseOffset: offset)
        let prefix = try cursor.readUInt24("packet_start_code_prefix")
        guard prefix == 1 else {
            throw MPEGTSError(.invalidMarker, offset: offset, "PES start code prefix is 0x\(String(prefix, radix: 16))")
        }
        let streamID = try cursor.readUInt8("stream_id")
        let packetLength = Int(try cursor.readUInt16("PES_packet_length"))
        var header = PESHeader(streamID: streamID, packetLength: packetLength, headerLength: 6)
        guard hasOptionalHeader(streamID) else { return header }
        let flags1 = try cursor.readUInt8("PES header flags")
        guard flags1 >> 6 == 0b10 else {
            throw MPEGTSError(
                .invalidMarker, offset: offset + 6, "PES header marker bits '\(flags1 >> 6)' are not '10'")
        }
        header.scramblingControl = (flags1 >> 4) & 3
        header.dataAlignment = flags1 & 0x04 != 0
        let flags2 = try cursor.readUInt8("PES header flags")
        let dataLength = Int(try cursor.readUInt8("PES_header_data_length"))
        header.headerLength = 9 + dataLength
        guard packetLength == 0 || packetLength >= 3 + dataLength else {
            throw MPEGTSError(.invalidLength, offset: offset + 8, "PES_header_data_length \(dataLength) > packet")
        }
        var fields = try cursor.subCursor(dataLength, "PES header data")
        switch flags2 >> 6 {
        case 0b10:
            header.pts = try readTimestamp(&fields, prefix: 0b0010, what: "PTS")
        case 0b11:
            header.pts = try readTimestamp(&fields, prefix: 0b0011, what: "PTS")
            header.dts = try readTimestamp(&fields, prefix: 0b0001, what: "DTS")
        case 0b01:
            throw MPEGTSError(.invalidValue, offset: offset + 7, "PTS_DTS_flags '01' is forbidden")
        default:
            break
        }
        return header
    }

    /// Reads a 5-byte PTS or DTS, checking the three marker bits.
    static func readTimestamp(_ cursor: inout ByteCursor, prefix: UInt8, what: String) throws(MPEGTSError)
        -> Timestamp
    {
        let start = cursor.offset
        let raw = try cursor.readBigEndian(5, what)
        guard raw & 0x01 != 0, raw & 0x1_0000 != 0, raw & 0x1_0000_0000 != 0 else {
            throw MPEGTSError(.invalidMarker, offset: start, "\(what) marker bit is 0")
        }
        let value = (raw >> 3) & (0x7 << 30) | (raw >> 2) & (0x7FFF << 15) | (raw >> 1) & 0x7FFF
        return Timestamp(wrapping: value)
    }

    /// Encodes a PTS or DTS with its 4-bit prefix and marker bits.
    static func encodeTimestamp(_ timestamp: Timestamp, prefix: UInt8) -> [UInt8] {
        let value = timestamp.value
        return [
            prefix << 4 | UInt8(truncatingIfNeeded: value >> 29) & 0x0E | 1,
            UInt8(truncatingIfNeeded: value >> 22),
            UInt8(truncatingIfNeeded: value >> 14) | 1,
            UInt8(truncatingIfNeeded: value >> 7),
            UInt8(truncatingIfNeeded: value << 1) | 1,
        ]
    }

    /// The header bytes: start code, stream id, length, flags and PTS/DTS. `payloadLength` sets
    /// PES_packet_length (0 when it does not fit, as for video).
    public func encoded(payloadLength: Int) -> [UInt8] {
        var optional: [UInt8] = []
        var flags2: UInt8 = 0
        if let pts {
            if let dts {
                flags2 = 0xC0
                optional = Self.encodeTimestamp(pts, prefix: 0b0011) + Self.encodeTimestamp(dts, prefix: 0b0001)
            } else {
                flags2 = 0x80
                optional = Self.encodeTimestamp(pts, prefix: 0b0010)
            }
        }
        let length = 3 + optional.count + payloadLength
        let lengthField = length <= 0xFFFF ? length : 0
        return [
            0, 0, 1, streamID, UInt8(truncatingIfNeeded: lengthField >> 8), UInt8(truncatingIfNeeded: lengthField),
            0x80 | (dataAlignment ? 0x04 : 0), flags2, UInt8(optional.count),
        ] + optional
    }
}

/// Finds the first VCL NAL unit of an access unit by scanning for start codes, across any number of chunks,
/// and says whether it is a keyframe (H.264 IDR, NAL type 5; HEVC IRAP, NAL types 16-23). For MPEG-1/2 video
/// it finds the first picture header: a keyframe is an I picture (picture_coding_type 1) that follows a sequence
/// header or a GOP header in the same PES.
struct KeyframeScanner: Sendable {
    enum Syntax: UInt8, Sendable {
        case h264
        case hevc
        case mpegVideo
    }

    enum Result: Sendable {
        case undecided
        case keyframe
        case notKeyframe
    }

    let syntax: Syntax
    /// The last bytes seen, newest in the low byte.
    private var window: UInt32 = 0xFFFF_FFFF
    private(set) var result: Result = .undecided
    /// MPEG video: a sequence or GOP header was seen; bytes still to read after a picture_start_code.
    private var sawSequenceHeader = false
    private var pictureHeaderBytes = 0

    init(syntax: Syntax) { self.syntax = syntax }

    mutating func reset() {
        window = 0xFFFF_FFFF
        result = .undecided
        sawSequenceHeader = false
        pictureHeaderBytes = 0
    }

    /// Scans more payload; stops at the first VCL NAL unit (MPEG video: the first picture header).
    mutating func scan(_ bytes: UnsafeRawBufferPointer) {
        guard case .undecided = result else { return }
        if syntax == .mpegVideo {
            scanMPEGVideo(bytes)
            return
        }
        var window = self.window
        for byte in bytes {
            window = window << 8 | UInt32(byte)
            // The previous three bytes were 00 00 01 and `byte` is the first NAL header byte.
            if window & 0xFFFF_FF00 == 0x0000_0100 {
                switch syntax {
                case .h264:
                    let type = byte & 0x1F
                    if type == 5 {
                        result = .keyframe
                    } else if type >= 1 && type <= 4 {
                        result = .notKeyframe
                    }
                case .hevc:
                    let type = (byte >> 1) & 0x3F
                    if type >= 16 && type <= 23 {
                        result = .keyframe
                    } else if type < 32 {
                        result = .notKeyframe
                    }
                case .mpegVideo:
                    break
                }
                if case .undecided = result {} else { break }
            }
        }
        self.window = window
    }

    /// MPEG-1/2 video (ISO/IEC 13818-2 6.2.3): picture_start_code 00 00 01 00, then temporal_reference (10 bits)
    /// and picture_coding_type (3 bits: 1 I, 2 P, 3 B); sequence_header_code B3, group_start_code B8.
    private mutating func scanMPEGVideo(_ bytes: UnsafeRawBufferPointer) {
        var window = self.window
        for byte in bytes {
            window = window << 8 | UInt32(byte)
            if pictureHeaderBytes > 0 {
                pictureHeaderBytes -= 1
                if pictureHeaderBytes == 0 {
                    result = (byte >> 3) & 0x07 == 1 && sawSequenceHeader ? .keyframe : .notKeyframe
                    break
                }
                continue
            }
            guard window & 0xFFFF_FF00 == 0x0000_0100 else { continue }
            switch byte {
            case 0xB3, 0xB8: sawSequenceHeader = true
            case 0x00: pictureHeaderBytes = 2
            default: break
            }
        }
        self.window = window
    }
}
