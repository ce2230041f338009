/// Splits PSI sections and PES packets into 188-byte transport stream packets, keeping a continuity counter
/// per PID. Short last packets are filled with adaptation-field stuffing (PES) or 0xFF bytes (sections).
public struct Packetizer: Sendable {
    /// The next continuity counter to use, by PID.
    public var continuityCounters: [UInt16: UInt8] = [:]

    public init(continuityCounters: [UInt16: UInt8] = [:]) {
        self.continuityCounters = continuityCounters
    }

    private mutating func nextCounter(_ pid: UInt16) -> UInt8 {
        let counter = continuityCounters[pid, default: 0] & 0x0F
        continuityCounters[pid] = (counter + 1) & 0x0F
        return counter
    }

    /// Packets carrying one PSI section (pointer_field 0), padded with 0xFF.
    public mutating func packets(section: [UInt8], pid: UInt16) -> [UInt8] {
        var output: [UInt8] = []
        var data: [UInt8] = [0] + section
        var first = true
        while !data.isEmpty || first {
            let take = min(184, data.count)
            let header = PacketHeader(pid: pid, payloadUnitStart: first, continuityCounter: nextCounter(pid))
            let bytes = header.bytes
            output += [bytes.0, bytes.1, bytes.2, bytes.3]
            output += data[..<take]
            output += repeatElement(0xFF, count: 184 - take)
            data.removeFirst(take)
            first = false
        }
        return output
    }

    /// Packets carrying one PES packet. `pcr` and `randomAccess` go in the first packet's adaptation field.
    public mutating func packets(
        pes header: PESHeader, payload: [UInt8], pid: UInt16, pcr: PCR? = nil, randomAccess: Bool = false
    ) -> [UInt8] {
        let data = header.encoded(payloadLength: payload.count) + payload
        var output: [UInt8] = []
        output.reserveCapacity((data.count / 184 + 2) * 188)
        var position = 0
        var first = true
        while position < data.count {
            let wantsField = first && (pcr != nil || randomAccess)
            let fieldBody = wantsField ? 1 + (pcr != nil ? 6 : 0) : 0  // flags + PCR, after the length byte
            let minimumField = wantsField ? 1 + fieldBody : 0
            let capacity = 184 - minimumField
            let take = min(capacity, data.count - position)
            let fieldTotal = 184 - take  // adaptation field bytes including its length byte
            let hasField = fieldTotal > 0
            let header = PacketHeader(
                pid: pid, payloadUnitStart: first, continuityCounter: nextCounter(pid), hasAdaptationField: hasField)
            let bytes = header.bytes
            output += [bytes.0, bytes.1, bytes.2, bytes.3]
            if hasField {
                let fieldLength = fieldTotal - 1
                output.append(UInt8(fieldLength))
                if fieldLength > 0 {
                    output.append((first && randomAccess ? 0x40 : 0) | (first && pcr != nil ? 0x10 : 0))
                    var written = 1
                    if first, let pcr {
                        let raw = pcr.base << 15 | 0x7E00 | UInt64(pcr.extension)
                        for shift in stride(from: 40, through: 0, by: -8) {
                            output.append(UInt8(truncatingIfNeeded: raw >> UInt64(shift)))
                        }
                        written += 6
                    }
                    output += repeatElement(0xFF, count: fieldLength - written)
                }
            }
            output += data[position..<(position + take)]
            position += take
            first = false
        }
        return output
    }
}
