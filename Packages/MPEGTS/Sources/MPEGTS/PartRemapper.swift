/// Serves a later part of a joined recording (``RecordingPart``) on the first part's program number, PMT PID and
/// stream PIDs, so that a player sees one program whose streams go on through the cut (as after a time stamp reset)
/// rather than a program that ends and another that appears: each PAT becomes one naming the target program alone,
/// each PMT (a section in one packet) is rewritten with the target's program number and PIDs (its stream types and
/// descriptors kept, its version the part's number), and each stream's packets move to the target's PID of the same
/// kind and rank (first video to first video, second audio to second audio). A stream with no counterpart keeps its
/// PID unless that is one of the target's; other programs' packets are left out. One table lookup per packet.
public struct PartRemapper: Sendable {
    /// The program number and PMT PID the output names.
    public let programNumber: UInt16
    public let pmtPID: UInt16
    private let sourcePMTPID: UInt16
    private let version: UInt8
    /// For each source PID, the PID it is written on; 0xFFFF: left out.
    private let targets: [UInt16]
    private let filter: ProgramFilter

    /// A remapper of `source`'s packets onto `target`'s program; `version` is written into rewritten PMTs (the part's
    /// number, so that a player that keys the PMT by version sees a new one).
    public init(from source: RecordingPart, to target: RecordingPart, version: Int) {
        programNumber = target.programNumber
        pmtPID = target.pmtPID
        sourcePMTPID = source.pmtPID
        self.version = UInt8(truncatingIfNeeded: version) & 0x1F
        var targets = Array(repeating: UInt16(0xFFFF), count: 8192)
        func kind(_ stream: RecordingPart.Stream) -> Codec.Kind {
            Codec(streamType: stream.streamType, descriptors: []).kind
        }
        var used = Set<UInt16>()
        var ranks: [Codec.Kind: Int] = [:]
        for stream in source.streams {
            let rank = ranks[kind(stream), default: 0]
            ranks[kind(stream)] = rank + 1
            let candidates = target.streams.filter { kind($0) == kind(stream) }
            if rank < candidates.count {
                targets[Int(stream.pid & 0x1FFF)] = candidates[rank].pid
                used.insert(candidates[rank].pid)
            }
        }
        let targetPIDs = Set(target.pids + [target.pmtPID, target.pcrPID])
        for stream in source.streams where targets[Int(stream.pid & 0x1FFF)] == 0xFFFF {
            if !targetPIDs.contains(stream.pid) && !used.contains(stream.pid) {
                targets[Int(stream.pid & 0x1FFF)] = stream.pid
                used.insert(stream.pid)
            }
        }
        // A PCR PID of its own (not a stream's) goes to the target's.
        if targets[Int(source.pcrPID & 0x1FFF)] == 0xFFFF && !source.pids.contains(source.pcrPID) {
            targets[Int(source.pcrPID & 0x1FFF)] = target.pcrPID
        }
        targets[0] = 0xFFFF
        targets[Int(source.pmtPID & 0x1FFF)] = 0xFFFF
        self.targets = targets
        filter = ProgramFilter(programNumber: target.programNumber, pmtPID: target.pmtPID, pids: [])
    }

    /// Whether `other` writes every packet as this one does (the same program, PMT PIDs, version and PID targets).
    public func hasSameMapping(as other: PartRemapper) -> Bool {
        programNumber == other.programNumber && pmtPID == other.pmtPID && sourcePMTPID == other.sourcePMTPID
            && version == other.version && targets == other.targets
    }

    /// The PID `pid`'s packets are written on, or nil when they are left out.
    public func target(of pid: UInt16) -> UInt16? {
        let value = targets[Int(pid & 0x1FFF)]
        return value == 0xFFFF ? nil : value
    }

    /// A PAT packet naming the target program alone.
    public func patPacket(continuityCounter: UInt8 = 0) -> [UInt8] {
        filter.patPacket(continuityCounter: continuityCounter)
    }

    /// The PMT packet at `start` in `packet` (188 bytes from there) rewritten onto the target program, or nil when it
    /// does not start a section that ends inside it, or the section is not a valid PMT.
    public func rewrittenPMT(_ packet: UnsafeRawBufferPointer, at start: Int) -> [UInt8]? {
        guard start >= 0, start + 188 <= packet.count, packet[start + 1] & 0x40 != 0 else { return nil }
        let control = (packet[start + 3] >> 4) & 0x03
        guard control & 0x01 != 0 else { return nil }
        var index = start + 4
        if control & 0x02 != 0 { index += 1 + Int(packet[start + 4]) }
        guard index < start + 188 else { return nil }
        let sectionStart = index + 1 + Int(packet[index])
        guard sectionStart + 3 <= start + 188 else { return nil }
        let length = Int(packet[sectionStart + 1] & 0x0F) << 8 | Int(packet[sectionStart + 2])
        let end = sectionStart + 3 + length
        guard end <= start + 188,
            let section = try? PSISection(bytes: Array(packet[sectionStart..<end])),
            let table = try? ProgramMapTable(section: section)
        else { return nil }
        let streams = table.streams.compactMap { stream -> ElementaryStream? in
            guard let pid = target(of: stream.pid) else { return nil }
            return ElementaryStream(streamType: stream.streamType, pid: pid, descriptors: stream.descriptors)
        }
        let rewritten = ProgramMapTable(
            programNumber: programNumber, version: version, pcrPID: target(of: table.pcrPID) ?? table.pcrPID,
            descriptors: table.descriptors, streams: streams
        ).sectionBytes
        guard rewritten.count <= 183 else { return nil }
        var output: [UInt8] = [
            0x47, 0x40 | UInt8(pmtPID >> 8) & 0x1F, UInt8(pmtPID & 0xFF), 0x10 | (packet[start + 3] & 0x0F), 0x00,
        ]
        output += rewritten
        output += Array(repeating: 0xFF, count: 188 - output.count)
        return output
    }

    /// Appends the packets of `packets` (whole packets of `packetSize` bytes, their 188 bytes at `syncOffset`) as the
    /// target program's to `output`; returns the packets appended.
    public func append(
        _ packets: UnsafeRawBufferPointer, packetSize: Int, syncOffset: Int, to output: inout [UInt8]
    ) -> Int {
        var appended = 0
        forEachSyncedPacket(packets, packetSize: packetSize, syncOffset: syncOffset) { start, pid in
            if pid == 0 {
                guard packets[start + 1] & 0x40 != 0 else { return }
                output += filter.patPacket(continuityCounter: packets[start + 3] & 0x0F)
                appended += 1
            } else if pid == sourcePMTPID {
                guard let packet = rewrittenPMT(packets, at: start) else { return }
                output += packet
                appended += 1
            } else if let mapped = target(of: pid) {
                let first = output.count
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: packets[start..<(start + 188)]))
                output[first + 1] = (output[first + 1] & 0xE0) | UInt8(mapped >> 8)
                output[first + 2] = UInt8(mapped & 0xFF)
                appended += 1
            }
        }
        return appended
    }
}
