/// The size of a transport stream packet on disk: 188 bytes, 192 bytes (M2TS / BDAV: a 4-byte timecode before
/// each packet) or 204 bytes (188 bytes followed by 16 bytes of Reed-Solomon parity).
public struct PacketSize: Hashable, Sendable, CustomStringConvertible {
    /// Bytes per packet on disk.
    public let length: Int
    /// Where the 0x47 sync byte sits within the packet on disk (4 for M2TS, else 0).
    public let syncOffset: Int

    private init(length: Int, syncOffset: Int) {
        self.length = length
        self.syncOffset = syncOffset
    }

    /// Plain 188-byte packets.
    public static let standard = PacketSize(length: 188, syncOffset: 0)
    /// 192-byte M2TS packets: a 4-byte arrival timecode, then the 188-byte packet.
    public static let m2ts = PacketSize(length: 192, syncOffset: 4)
    /// 204-byte packets: the 188-byte packet followed by 16 bytes of parity.
    public static let fec = PacketSize(length: 204, syncOffset: 0)

    /// The candidates in the order detection prefers them.
    public static let all: [PacketSize] = [.standard, .fec, .m2ts]

    /// The size for a packet length (188, 192 or 204).
    public init?(length: Int) {
        switch length {
        case 188: self = .standard
        case 192: self = .m2ts
        case 204: self = .fec
        default: return nil
        }
    }

    public var description: String { "\(length)" }

    /// Sync bytes that must line up, counting the first, before a packet size is accepted.
    static let confirmations = 5

    enum Probe {
        case confirmed
        case rejected
        case needMore
    }

    /// Checks whether packets of this size start at `start` in `bytes` (unsafe indices are all checked).
    func probe(_ bytes: UnsafeRawBufferPointer, packetStart start: Int, isFinal: Bool) -> Probe {
        guard start >= 0 else { return .rejected }
        var sawAll = true
        for index in 0..<Self.confirmations {
            let position = start + index * length + syncOffset
            guard position < bytes.count else {
                sawAll = false
                break
            }
            if bytes[position] != 0x47 { return .rejected }
        }
        if sawAll { return .confirmed }
        if !isFinal { return .needMore }
        // At the end of the input, weaker evidence is accepted: a complete first packet and no mismatch.
        return start + length <= bytes.count ? .confirmed : .rejected
    }

    /// Finds the packet size and the offset of the first packet in `bytes` (five sync bytes in a row at one
    /// stride), or nil when none is found.
    public static func detect(in bytes: UnsafeRawBufferPointer) -> (size: PacketSize, offset: Int)? {
        switch search(bytes, from: 0, isFinal: true) {
        case .found(let size, let start): (size, start)
        case .needMore, .notFound: nil
        }
    }

    /// Finds the packet size and first packet offset in `bytes`.
    public static func detect(in bytes: [UInt8]) -> (size: PacketSize, offset: Int)? {
        bytes.withUnsafeBytes { detect(in: $0) }
    }

    /// The byte every packet carries at ``syncOffset``.
    public static let syncByte: UInt8 = 0x47

    /// The offset in `bytes` of the first sync byte that is missing when packets of this size start at offset 0
    /// (a last, partial packet included), or nil when every packet has its sync byte.
    public func firstMissingSyncByte(in bytes: UnsafeRawBufferPointer) -> Int? {
        var position = syncOffset
        while position < bytes.count {
            if bytes[position] != Self.syncByte { return position }
            position += length
        }
        return nil
    }

    enum SearchResult {
        case found(PacketSize, Int)
        /// No answer yet: keep the bytes from this index on and call again with more.
        case needMore(keepFrom: Int)
        case notFound
    }

    static func search(_ bytes: UnsafeRawBufferPointer, from: Int, isFinal: Bool) -> SearchResult {
        var index = max(from, 0)
        let count = bytes.count
        while index < count {
            if bytes[index] == 0x47 {
                for size in all where index - size.syncOffset >= from {
                    switch size.probe(bytes, packetStart: index - size.syncOffset, isFinal: isFinal) {
                    case .confirmed: return .found(size, index - size.syncOffset)
                    case .rejected: continue
                    case .needMore: return .needMore(keepFrom: max(index - 4, from, 0))
                    }
                }
            }
            index += 1
        }
        return isFinal ? .notFound : .needMore(keepFrom: max(count - 4, from, 0))
    }
}

/// The 4-byte header of a transport stream packet.
public struct PacketHeader: Hashable, Sendable {
    /// transport_error_indicator.
    public var transportError: Bool
    /// payload_unit_start_indicator: a PES packet or PSI section starts in this packet.
    public var payloadUnitStart: Bool
    /// transport_priority.
    public var priority: Bool
    /// The 13-bit packet identifier.
    public var pid: UInt16
    /// transport_scrambling_control (0 = not scrambled).
    public var scramblingControl: UInt8
    /// adaptation_field_control bit 1: an adaptation field follows the header.
    public var hasAdaptationField: Bool
    /// adaptation_field_control bit 0: a payload follows.
    public var hasPayload: Bool
    /// The 4-bit continuity counter.
    public var continuityCounter: UInt8

    /// Decodes the header from the three bytes after the sync byte.
    @inline(__always)
    public init(_ byte1: UInt8, _ byte2: UInt8, _ byte3: UInt8) {
        transportError = byte1 & 0x80 != 0
        payloadUnitStart = byte1 & 0x40 != 0
        priority = byte1 & 0x20 != 0
        pid = UInt16(byte1 & 0x1F) << 8 | UInt16(byte2)
        scramblingControl = byte3 >> 6
        hasAdaptationField = byte3 & 0x20 != 0
        hasPayload = byte3 & 0x10 != 0
        continuityCounter = byte3 & 0x0F
    }

    public init(
        pid: UInt16, payloadUnitStart: Bool = false, continuityCounter: UInt8 = 0, hasAdaptationField: Bool = false,
        hasPayload: Bool = true, transportError: Bool = false, priority: Bool = false, scramblingControl: UInt8 = 0
    ) {
        self.transportError = transportError
        self.payloadUnitStart = payloadUnitStart
        self.priority = priority
        self.pid = pid & 0x1FFF
        self.scramblingControl = scramblingControl & 3
        self.hasAdaptationField = hasAdaptationField
        self.hasPayload = hasPayload
        self.continuityCounter = continuityCounter & 0x0F
    }

    /// The four header bytes, sync byte first.
    public var bytes: (UInt8, UInt8, UInt8, UInt8) {
        let byte1 =
            (transportError ? 0x80 : 0) | (payloadUnitStart ? 0x40 : 0) | (priority ? 0x20 : 0)
            | UInt8(truncatingIfNeeded: pid >> 8) & 0x1F
        let byte3 =
            scramblingControl << 6 | (hasAdaptationField ? 0x20 : 0) | (hasPayload ? 0x10 : 0)
            | continuityCounter & 0x0F
        return (0x47, byte1, UInt8(truncatingIfNeeded: pid), byte3)
    }
}

/// The adaptation field of a transport stream packet.
public struct AdaptationField: Hashable, Sendable {
    /// adaptation_field_length (the bytes after the length byte).
    public var length: Int
    public var discontinuity: Bool = false
    public var randomAccess: Bool = false
    public var elementaryStreamPriority: Bool = false
    public var pcr: PCR?
    public var opcr: PCR?
    /// splice_countdown, a signed count of packets to a splice point.
    public var spliceCountdown: Int8?
    /// transport_private_data bytes.
    public var privateData: [UInt8] = []
    /// Whether adaptation_field_extension was present (its content is skipped, length checked).
    public var hasExtension: Bool = false
    /// Stuffing bytes at the end of the field.
    public var stuffingLength: Int = 0

    public init(length: Int) { self.length = length }

    /// Reads a PCR or OPCR (6 bytes).
    static func readPCR(_ cursor: inout ByteCursor) throws(MPEGTSError) -> PCR {
        let raw = try cursor.readBigEndian(6, "PCR")
        return PCR(base: raw >> 15, extension: UInt16(raw & 0x1FF))
    }

    /// Parses an adaptation field starting at its length byte. `hasPayload` bounds the allowed length.
    static func parse(_ cursor: inout ByteCursor, hasPayload: Bool) throws(MPEGTSError) -> AdaptationField {
        let start = cursor.offset
        let length = Int(try cursor.readUInt8("adaptation_field_length"))
        let maximum = hasPayload ? 182 : 183
        guard length <= maximum, length <= cursor.remaining else {
            throw MPEGTSError(.invalidLength, offset: start, "adaptation_field_length \(length) > \(maximum)")
        }
        var field = AdaptationField(length: length)
        guard length > 0 else { return field }
        var body = try cursor.subCursor(length, "adaptation field")
        let flags = try body.readUInt8("adaptation field flags")
        field.discontinuity = flags & 0x80 != 0
        field.randomAccess = flags & 0x40 != 0
        field.elementaryStreamPriority = flags & 0x20 != 0
        if flags & 0x10 != 0 { field.pcr = try readPCR(&body) }
        if flags & 0x08 != 0 { field.opcr = try readPCR(&body) }
        if flags & 0x04 != 0 { field.spliceCountdown = Int8(bitPattern: try body.readUInt8("splice_countdown")) }
        if flags & 0x02 != 0 {
            let privateLength = Int(try body.readUInt8("transport_private_data_length"))
            field.privateData = Array(try body.readBytes(privateLength, "transport_private_data"))
        }
        if flags & 0x01 != 0 {
            let extensionLength = Int(try body.readUInt8("adaptation_field_extension_length"))
            try body.skip(extensionLength, "adaptation field extension")
            field.hasExtension = true
        }
        field.stuffingLength = body.remaining
        return field
    }
}

/// A view of one 188-byte transport stream packet: header, adaptation field and payload.
///
/// The payload is a view into the buffer the packet was parsed from.
public struct TSPacket {
    public var header: PacketHeader
    public var adaptationField: AdaptationField?
    /// The payload bytes (empty when the packet carries none).
    public var payload: UnsafeRawBufferPointer

    /// Parses a packet from exactly 188 bytes starting with the sync byte; `offset` is used in errors.
    public static func parse(_ bytes: UnsafeRawBufferPointer, offset: Int64 = 0) throws(MPEGTSError) -> TSPacket {
        var cursor = ByteCursor(bytes, baseOffset: offset)
        guard bytes.count >= 188 else {
            throw MPEGTSError(.truncated, offset: offset, "packet of \(bytes.count) bytes")
        }
        guard try cursor.readUInt8("sync byte") == 0x47 else {
            throw MPEGTSError(.syncLost, offset: offset, "no sync byte")
        }
        let header = PacketHeader(try cursor.readUInt8(), try cursor.readUInt8(), try cursor.readUInt8())
        var packetBody = try cursor.subCursor(184, "packet body")
        var field: AdaptationField?
        if header.hasAdaptationField {
            field = try AdaptationField.parse(&packetBody, hasPayload: header.hasPayload)
        }
        let payload = header.hasPayload ? packetBody.readRest() : UnsafeRawBufferPointer(start: nil, count: 0)
        return TSPacket(header: header, adaptationField: field, payload: payload)
    }
}
