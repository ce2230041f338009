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
/// and says whether it is a keyframe (H.264 IDR, NAL type 5; HEVC IRAP, NAL types 16-23).
struct KeyframeScanner: Sendable {
    enum Syntax: UInt8, Sendable {
        case h264
        case hevc
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

    init(syntax: Syntax) { self.syntax = syntax }

    mutating func reset() {
        window = 0xFFFF_FFFF
        result = .undecided
    }

    /// Scans more payload; stops at the first VCL NAL unit.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) {
        guard case .undecided = result else { return }
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
                }
                if case .undecided = result {} else { break }
            }
        }
        self.window = window
    }
}
