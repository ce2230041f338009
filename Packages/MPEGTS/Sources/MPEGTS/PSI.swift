/// CRC-32/MPEG-2: polynomial 0x04C11DB7, initial value 0xFFFFFFFF, no reflection, no final XOR.
public enum CRC32MPEG2 {
    static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    /// The CRC of `bytes`. A section whose bytes include its own CRC checksums to zero.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        }
        return crc
    }

    /// The CRC of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}

/// One complete PSI section (PAT, PMT, SDT, SCTE-35 ...), header and CRC included.
public struct PSISection: Hashable, Sendable {
    /// All the bytes of the section, from table_id through CRC_32.
    public let bytes: [UInt8]
    public let tableID: UInt8
    public let sectionSyntaxIndicator: Bool
    /// The 12-bit section_length (bytes after the length field).
    public let sectionLength: Int
    /// table_id_extension (program_number in a PMT, transport_stream_id in a PAT); 0 in short sections.
    public let tableIDExtension: UInt16
    public let version: UInt8
    public let currentNext: Bool
    public let sectionNumber: UInt8
    public let lastSectionNumber: UInt8
    /// Whether the section carries a CRC_32 (long sections and SCTE-35).
    public let hasCRC: Bool

    /// The bytes after the header and before the CRC: after the 8-byte long header, or the 3-byte short one.
    public var body: ArraySlice<UInt8> {
        let start = sectionSyntaxIndicator ? 8 : 3
        let end = bytes.count - (hasCRC ? 4 : 0)
        return start <= end ? bytes[start..<end] : []
    }

    /// Parses and checks one section; `bytes` must hold exactly the section. `offset` is used in errors.
    public init(bytes: [UInt8], offset: Int64 = 0) throws(MPEGTSError) {
        let parsed = try withBytes(bytes) { raw throws(MPEGTSError) in
            var cursor = ByteCursor(raw, baseOffset: offset)
            let tableID = try cursor.readUInt8("table_id")
            let flags = try cursor.readUInt16("section_length")
            return (tableID, flags)
        }
        tableID = parsed.0
        sectionSyntaxIndicator = parsed.1 & 0x8000 != 0
        sectionLength = Int(parsed.1 & 0x0FFF)
        guard sectionLength <= 4093 else {
            throw MPEGTSError(.invalidLength, offset: offset, "section_length \(sectionLength)")
        }
        guard bytes.count >= 3 + sectionLength else {
            throw MPEGTSError(.truncated, offset: offset + Int64(bytes.count), "section")
        }
        guard bytes.count == 3 + sectionLength else {
            throw MPEGTSError(
                .invalidLength, offset: offset, "section of \(bytes.count) bytes, expected \(3 + sectionLength)")
        }
        self.bytes = bytes
        hasCRC = sectionSyntaxIndicator || tableID == 0xFC
        if sectionSyntaxIndicator {
            guard sectionLength >= 9 else {
                throw MPEGTSError(.invalidLength, offset: offset, "long section_length \(sectionLength) < 9")
            }
            tableIDExtension = UInt16(bytes[3]) << 8 | UInt16(bytes[4])
            version = (bytes[5] >> 1) & 0x1F
            currentNext = bytes[5] & 1 != 0
            sectionNumber = bytes[6]
            lastSectionNumber = bytes[7]
        } else {
            tableIDExtension = 0
            version = 0
            currentNext = true
            sectionNumber = 0
            lastSectionNumber = 0
        }
        if hasCRC {
            guard sectionLength >= 4 else { throw MPEGTSError(.invalidLength, offset: offset, "no room for CRC_32") }
            let crc = bytes.withUnsafeBytes { CRC32MPEG2.checksum($0) }
            guard crc == 0 else {
                throw MPEGTSError(.crcMismatch, offset: offset, "table_id 0x\(hex(tableID)) CRC_32 mismatch")
            }
        }
    }

    /// Builds a long-form section (header, body, CRC) ready to packetise.
    public static func make(
        tableID: UInt8, tableIDExtension: UInt16, version: UInt8 = 0, sectionNumber: UInt8 = 0,
        lastSectionNumber: UInt8 = 0, body: some Sequence<UInt8>
    ) -> [UInt8] {
        let bodyBytes = Array(body)
        let sectionLength = 5 + bodyBytes.count + 4
        var bytes: [UInt8] = [
            tableID, 0xB0 | UInt8(truncatingIfNeeded: sectionLength >> 8) & 0x0F,
            UInt8(truncatingIfNeeded: sectionLength),
            UInt8(truncatingIfNeeded: tableIDExtension >> 8), UInt8(truncatingIfNeeded: tableIDExtension),
            0xC1 | (version & 0x1F) << 1, sectionNumber, lastSectionNumber,
        ]
        bytes += bodyBytes
        let crc = CRC32MPEG2.checksum(bytes)
        bytes += [
            UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8),
            UInt8(truncatingIfNeeded: crc),
        ]
        return bytes
    }
}

func hex(_ value: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(value >> 4)], digits[Int(value & 0x0F)]])
}

func hex(_ value: UInt16) -> String { hex(UInt8(value >> 8)) + hex(UInt8(truncatingIfNeeded: value)) }

/// Assembles PSI sections from the payloads of one PID's packets: the pointer field, sections spanning
/// packets and several sections in one packet.
public struct SectionAssembler: Sendable {
    private var partial: [UInt8] = []
    private var partialOffset: Int64 = 0
    private var collecting = false

    public init() {}

    /// Whether no section is being assembled and bytes after a unit start would be ignored.
    public var isIdle: Bool { !collecting && partial.isEmpty }

    /// Forgets a partly assembled section (after a continuity error).
    public mutating func reset() {
        partial.removeAll(keepingCapacity: true)
        collecting = false
    }

    /// Feeds one packet's payload. `offset` is the stream offset of the payload's first byte. Complete sections
    /// (as raw bytes with their stream offset) and errors go to the handlers.
    /// Returns ``isIdle`` afterwards.
    @discardableResult
    public mutating func push(
        _ payload: UnsafeRawBufferPointer, payloadUnitStart: Bool, offset: Int64,
        section: (_ bytes: [UInt8], _ offset: Int64) -> Void, error: (MPEGTSError) -> Void
    ) -> Bool {
        var index = 0
        if payloadUnitStart {
            guard let pointer = payload.first else { return isIdle }
            index = 1
            let pointerField = Int(pointer)
            guard 1 + pointerField <= payload.count else {
                error(MPEGTSError(.invalidLength, offset: offset, "pointer_field \(pointerField)"))
                reset()
                return isIdle
            }
            if collecting {
                append(UnsafeRawBufferPointer(rebasing: payload[1..<(1 + pointerField)]), section: section)
            }
            reset()
            index = 1 + pointerField
            collecting = true
            partialOffset = offset + Int64(index)
        } else if !collecting {
            return isIdle
        }
        // Sections that start in this packet.
        while index < payload.count {
            if partial.isEmpty {
                if payload[index] == 0xFF {  // stuffing: no more sections in this packet
                    collecting = false
                    return isIdle
                }
                partialOffset = offset + Int64(index)
            }
            let consumed = append(UnsafeRawBufferPointer(rebasing: payload[index...]), section: section)
            index += consumed
            if !collecting { return isIdle }
        }
        return isIdle
    }

    /// Appends bytes to the current section; returns how many were used.
    @discardableResult
    private mutating func append(_ bytes: UnsafeRawBufferPointer, section: (_ bytes: [UInt8], _ offset: Int64) -> Void)
        -> Int
    {
        var used = 0
        // The 3-byte header first, to learn the length.
        while partial.count < 3, used < bytes.count {
            partial.append(bytes[used])
            used += 1
        }
        guard partial.count >= 3 else { return used }
        let total = 3 + Int(UInt16(partial[1] & 0x0F) << 8 | UInt16(partial[2]))
        let take = min(total - partial.count, bytes.count - used)
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used..<(used + take)]))
        used += take
        if partial.count == total {
            section(partial, partialOffset)
            partial.removeAll(keepingCapacity: true)
        }
        return used
    }
}

/// A descriptor from a PMT or another table: tag and raw bytes.
public struct Descriptor: Hashable, Sendable {
    public var tag: UInt8
    public var data: [UInt8]

    public init(tag: UInt8, data: [UInt8]) {
        self.tag = tag
        self.data = data
    }

    /// The format_identifier of a registration descriptor (tag 5), e.g. "CUEI", "HEVC", "AC-3".
    public var registrationFormat: String? {
        guard tag == 0x05, data.count >= 4 else { return nil }
        return String(decoding: data[0..<4], as: UTF8.self)
    }

    /// The language codes of an ISO 639 language descriptor (tag 10).
    public var languages: [String] {
        guard tag == 0x0A else { return [] }
        var codes: [String] = []
        var index = 0
        while index + 4 <= data.count {
            codes.append(String(decoding: data[index..<(index + 3)], as: UTF8.self))
            index += 4
        }
        return codes
    }

    /// Reads a descriptor loop of `length` bytes.
    static func readLoop(_ cursor: inout ByteCursor, length: Int) throws(MPEGTSError) -> [Descriptor] {
        var loop = try cursor.subCursor(length, "descriptor loop")
        var descriptors: [Descriptor] = []
        while !loop.isAtEnd {
            let tag = try loop.readUInt8("descriptor_tag")
            let length = Int(try loop.readUInt8("descriptor_length"))
            descriptors.append(Descriptor(tag: tag, data: Array(try loop.readBytes(length, "descriptor"))))
        }
        return descriptors
    }

    var encoded: [UInt8] { [tag, UInt8(truncatingIfNeeded: data.count)] + data }
}

/// The program association table (PID 0).
public struct ProgramAssociationTable: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var programNumber: UInt16
        /// The PID of the program's PMT.
        public var pmtPID: UInt16
        public init(programNumber: UInt16, pmtPID: UInt16) {
            self.programNumber = programNumber
            self.pmtPID = pmtPID
        }
    }
    public var transportStreamID: UInt16
    public var version: UInt8
    public var programs: [Entry]
    /// The network PID (program number 0), when listed.
    public var networkPID: UInt16?

    public init(transportStreamID: UInt16, version: UInt8 = 0, programs: [Entry], networkPID: UInt16? = nil) {
        self.transportStreamID = transportStreamID
        self.version = version
        self.programs = programs
        self.networkPID = networkPID
    }

    /// Decodes a PAT from a checked section (table_id 0).
    public init(section: PSISection, offset: Int64 = 0) throws(MPEGTSError) {
        guard section.tableID == 0x00, section.sectionSyntaxIndicator else {
            throw MPEGTSError(.invalidValue, offset: offset, "not a PAT section")
        }
        transportStreamID = section.tableIDExtension
        version = section.version
        programs = []
        networkPID = nil
        let body = Array(section.body)
        guard body.count % 4 == 0 else { throw MPEGTSError(.invalidLength, offset: offset, "PAT body \(body.count)") }
        var index = 0
        while index + 4 <= body.count {
            let number = UInt16(body[index]) << 8 | UInt16(body[index + 1])
            let pid = UInt16(body[index + 2] & 0x1F) << 8 | UInt16(body[index + 3])
            if number == 0 { networkPID = pid } else { programs.append(Entry(programNumber: number, pmtPID: pid)) }
            index += 4
        }
    }

    /// Decodes a PAT sent as several sections (section_number 0 ... last_section_number): the programs of all
    /// of them, in section order.
    public init(sections: [PSISection], offset: Int64 = 0) throws(MPEGTSError) {
        guard let first = sections.first else {
            throw MPEGTSError(.invalidValue, offset: offset, "a PAT needs at least one section")
        }
        self = try ProgramAssociationTable(section: first, offset: offset)
        for section in sections.dropFirst() {
            let part = try ProgramAssociationTable(section: section, offset: offset)
            programs += part.programs
            if networkPID == nil { networkPID = part.networkPID }
        }
    }

    /// The section bytes of this table.
    public var sectionBytes: [UInt8] {
        var body: [UInt8] = []
        if let networkPID { body += [0, 0, 0xE0 | UInt8(networkPID >> 8), UInt8(truncatingIfNeeded: networkPID)] }
        for entry in programs {
            body += [
                UInt8(entry.programNumber >> 8), UInt8(truncatingIfNeeded: entry.programNumber),
                0xE0 | UInt8(entry.pmtPID >> 8) & 0x1F, UInt8(truncatingIfNeeded: entry.pmtPID),
            ]
        }
        return PSISection.make(tableID: 0, tableIDExtension: transportStreamID, version: version, body: body)
    }
}

/// One elementary stream listed in a PMT.
public struct ElementaryStream: Hashable, Sendable {
    public var streamType: StreamType
    public var pid: UInt16
    public var descriptors: [Descriptor]

    public init(streamType: StreamType, pid: UInt16, descriptors: [Descriptor] = []) {
        self.streamType = streamType
        self.pid = pid
        self.descriptors = descriptors
    }

    /// The codec, from the stream type and, for private data, the descriptors.
    public var codec: Codec { Codec(streamType: streamType, descriptors: descriptors) }

    /// ISO 639 language codes from the descriptors.
    public var languages: [String] { descriptors.flatMap(\.languages) }
}

/// The program map table of one program.
public struct ProgramMapTable: Hashable, Sendable {
    public var programNumber: UInt16
    public var version: UInt8
    public var pcrPID: UInt16
    public var descriptors: [Descriptor]
    public var streams: [ElementaryStream]

    public init(
        programNumber: UInt16, version: UInt8 = 0, pcrPID: UInt16, descriptors: [Descriptor] = [],
        streams: [ElementaryStream]
    ) {
        self.programNumber = programNumber
        self.version = version
        self.pcrPID = pcrPID
        self.descriptors = descriptors
        self.streams = streams
    }

    /// Decodes a PMT from a checked section (table_id 2).
    public init(section: PSISection, offset: Int64 = 0) throws(MPEGTSError) {
        guard section.tableID == 0x02, section.sectionSyntaxIndicator else {
            throw MPEGTSError(.invalidValue, offset: offset, "not a PMT section")
        }
        programNumber = section.tableIDExtension
        version = section.version
        let body = Array(section.body)
        let decoded = try withBytes(body) { raw throws(MPEGTSError) in
            var cursor = ByteCursor(raw, baseOffset: offset + 8)
            let pcrPID = try cursor.readUInt16("PCR_PID") & 0x1FFF
            let infoLength = Int(try cursor.readUInt16("program_info_length") & 0x0FFF)
            let descriptors = try Descriptor.readLoop(&cursor, length: infoLength)
            var streams: [ElementaryStream] = []
            while !cursor.isAtEnd {
                let type = try cursor.readUInt8("stream_type")
                let pid = try cursor.readUInt16("elementary_PID") & 0x1FFF
                let esInfoLength = Int(try cursor.readUInt16("ES_info_length") & 0x0FFF)
                let esDescriptors = try Descriptor.readLoop(&cursor, length: esInfoLength)
                streams.append(
                    ElementaryStream(streamType: StreamType(rawValue: type), pid: pid, descriptors: esDescriptors))
                guard streams.count <= 1024 else {
                    throw MPEGTSError(.invalidLength, offset: offset, "too many streams")
                }
            }
            return (pcrPID, descriptors, streams)
        }
        pcrPID = decoded.0
        descriptors = decoded.1
        streams = decoded.2
    }

    /// Decodes a PMT sent as several sections: the PCR PID and program descriptors of the first, the streams of
    /// all of them in section order.
    public init(sections: [PSISection], offset: Int64 = 0) throws(MPEGTSError) {
        guard let first = sections.first else {
            throw MPEGTSError(.invalidValue, offset: offset, "a PMT needs at least one section")
        }
        self = try ProgramMapTable(section: first, offset: offset)
        for section in sections.dropFirst() {
            let part = try ProgramMapTable(section: section, offset: offset)
            streams += part.streams
            guard streams.count <= 1024 else { throw MPEGTSError(.invalidLength, offset: offset, "too many streams") }
        }
    }

    /// The section bytes of this table.
    public var sectionBytes: [UInt8] {
        let programInfo = descriptors.flatMap(\.encoded)
        var body: [UInt8] = [
            0xE0 | UInt8(pcrPID >> 8) & 0x1F, UInt8(truncatingIfNeeded: pcrPID),
            0xF0 | UInt8(truncatingIfNeeded: programInfo.count >> 8) & 0x0F,
            UInt8(truncatingIfNeeded: programInfo.count),
        ]
        body += programInfo
        for stream in streams {
            let info = stream.descriptors.flatMap(\.encoded)
            body += [
                stream.streamType.rawValue, 0xE0 | UInt8(stream.pid >> 8) & 0x1F, UInt8(truncatingIfNeeded: stream.pid),
                0xF0 | UInt8(truncatingIfNeeded: info.count >> 8) & 0x0F, UInt8(truncatingIfNeeded: info.count),
            ]
            body += info
        }
        return PSISection.make(tableID: 2, tableIDExtension: programNumber, version: version, body: body)
    }
}
