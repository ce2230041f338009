/// Rewrites existing 188-byte packets onto another timeline and PID layout: PIDs remapped, continuity counters
/// continued from a given state, PTS/DTS and PCR/OPCR shifted by an offset with 33-bit wrap, and PAT/PMT
/// replaced by tables generated for the target program.
///
/// Packets of PIDs not in the map (and the input's own PAT/PMT) are dropped. Each input PAT is replaced by the
/// target PAT and PMT.
public struct TSRewriter: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Source PID → target PID for the elementary streams to keep.
        public var pidMap: [UInt16: UInt16]
        /// Added to every PTS and DTS (90 kHz ticks, either sign); PCR and OPCR move by the same time.
        public var timestampOffset: Int64
        /// The target program: its PMT is written on `pmtPID`, and a PAT naming it on PID 0.
        public var program: ProgramMapTable
        public var pmtPID: UInt16
        public var transportStreamID: UInt16

        public init(
            pidMap: [UInt16: UInt16], timestampOffset: Int64, program: ProgramMapTable, pmtPID: UInt16,
            transportStreamID: UInt16 = 1
        ) {
            self.pidMap = pidMap
            self.timestampOffset = timestampOffset
            self.program = program
            self.pmtPID = pmtPID
            self.transportStreamID = transportStreamID
        }
    }

    public let configuration: Configuration
    /// The next continuity counter of each output PID; pass the state left by the content to continue it.
    public var continuityCounters: [UInt16: UInt8]
    private let patSection: [UInt8]
    private let pmtSection: [UInt8]
    private var lastCounters: [UInt16: UInt8] = [:]

    public init(configuration: Configuration, continuityCounters: [UInt16: UInt8] = [:]) {
        self.configuration = configuration
        self.continuityCounters = continuityCounters
        patSection =
            ProgramAssociationTable(
                transportStreamID: configuration.transportStreamID,
                programs: [.init(programNumber: configuration.program.programNumber, pmtPID: configuration.pmtPID)]
            ).sectionBytes
        pmtSection = configuration.program.sectionBytes
    }

    /// Rewrites whole 188-byte packets (a trailing partial packet is ignored; packets without the sync byte are
    /// dropped). Returns the output packets.
    public mutating func rewrite(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count + 376)
        var packet = [UInt8](repeating: 0, count: 188)
        var position = 0
        while position + 188 <= input.count {
            defer { position += 188 }
            guard input[position] == 0x47 else { continue }
            let pid = UInt16(input[position + 1] & 0x1F) << 8 | UInt16(input[position + 2])
            if pid == 0 {
                if input[position + 1] & 0x40 != 0 { writeTables(into: &output) }
                continue
            }
            guard let target = configuration.pidMap[pid] else { continue }
            for index in 0..<188 { packet[index] = input[position + index] }
            rewritePacket(&packet, target: target)
            output += packet
        }
        return output
    }

    /// The continuity counters that continue `packets` (whole 188-byte packets; bytes between them that are not a
    /// sync byte are skipped): for each PID, the counter after its last packet with a payload. Pass them as
    /// ``continuityCounters`` (here or to a ``SlateBuilder``) to make output that follows `packets` without a
    /// continuity error.
    public static func continuityCounters(following packets: [UInt8]) -> [UInt16: UInt8] {
        var counters: [UInt16: UInt8] = [:]
        var index = 0
        while index + 188 <= packets.count {
            guard packets[index] == 0x47 else {
                index += 1
                continue
            }
            let pid = UInt16(packets[index + 1] & 0x1F) << 8 | UInt16(packets[index + 2])
            if packets[index + 3] & 0x10 != 0 { counters[pid] = (packets[index + 3] & 0x0F) &+ 1 & 0x0F }
            index += 188
        }
        return counters
    }

    /// Rewrites packets given as an array.
    public mutating func rewrite(_ input: [UInt8]) -> [UInt8] {
        input.withUnsafeBytes { rewrite($0) }
    }

    private mutating func writeTables(into output: inout [UInt8]) {
        var packetizer = Packetizer(continuityCounters: continuityCounters)
        output += packetizer.packets(section: patSection, pid: 0)
        output += packetizer.packets(section: pmtSection, pid: configuration.pmtPID)
        continuityCounters = packetizer.continuityCounters
    }

    private mutating func rewritePacket(_ packet: inout [UInt8], target: UInt16) {
        packet[1] = packet[1] & 0xE0 | UInt8(target >> 8) & 0x1F
        packet[2] = UInt8(truncatingIfNeeded: target)
        let hasPayload = packet[3] & 0x10 != 0
        let counter: UInt8
        if hasPayload {
            counter = continuityCounters[target, default: 0] & 0x0F
            continuityCounters[target] = (counter + 1) & 0x0F
            lastCounters[target] = counter
        } else {
            counter = lastCounters[target] ?? (continuityCounters[target, default: 0] &+ 15) & 0x0F
        }
        packet[3] = packet[3] & 0xF0 | counter
        var payloadStart = 4
        if packet[3] & 0x20 != 0 {
            let length = Int(packet[4])
            guard length <= 183 else { return }
            payloadStart = 5 + length
            if length >= 1 {
                let flags = packet[5]
                var field = 6
                if flags & 0x10 != 0, field + 6 <= 5 + length {
                    shiftPCR(&packet, at: field)
                    field += 6
                }
                if flags & 0x08 != 0, field + 6 <= 5 + length { shiftPCR(&packet, at: field) }
            }
        }
        guard hasPayload, packet[1] & 0x40 != 0, payloadStart + 14 <= 188 else { return }
        let start = payloadStart
        guard packet[start] == 0, packet[start + 1] == 0, packet[start + 2] == 1,
            PESHeader.hasOptionalHeader(packet[start + 3]), packet[start + 6] >> 6 == 0b10
        else { return }
        let flags = packet[start + 7] >> 6
        if flags & 0b10 != 0 { shiftTimestamp(&packet, at: start + 9) }
        if flags == 0b11, start + 19 <= 188 { shiftTimestamp(&packet, at: start + 14) }
    }

    private func shiftTimestamp(_ packet: inout [UInt8], at index: Int) {
        var raw: UInt64 = 0
        for offset in 0..<5 { raw = raw << 8 | UInt64(packet[index + offset]) }
        let value = (raw >> 3) & (0x7 << 30) | (raw >> 2) & (0x7FFF << 15) | (raw >> 1) & 0x7FFF
        let shifted = Timestamp(wrapping: value).advanced(by: configuration.timestampOffset)
        let encoded = PESHeader.encodeTimestamp(shifted, prefix: packet[index] >> 4)
        for offset in 0..<5 { packet[index + offset] = encoded[offset] }
    }

    private func shiftPCR(_ packet: inout [UInt8], at index: Int) {
        var raw: UInt64 = 0
        for offset in 0..<6 { raw = raw << 8 | UInt64(packet[index + offset]) }
        let pcr = PCR(base: raw >> 15, extension: UInt16(raw & 0x1FF))
        let shifted = pcr.advanced(by: (configuration.timestampOffset % Int64(Timestamp.modulus)) * 300)
        let encoded = shifted.base << 15 | (raw & 0x7E00) | UInt64(shifted.extension)
        for offset in 0..<6 { packet[index + offset] = UInt8(truncatingIfNeeded: encoded >> UInt64(40 - 8 * offset)) }
    }
}
