/// A run of whole packets of one size with nothing between them: where its first packet starts in the file, where
/// that packet's 188 bytes start in the served view (see ``PacketLayout``), and how many packets it holds.
public struct PacketRun: Hashable, Sendable {
    /// The file offset of the run's first packet (of its timecode, for 192-byte packets).
    public var fileOffset: UInt64
    /// The offset of the run's first packet in the served 188-byte view.
    public var servedOffset: UInt64
    /// Whole packets in the run.
    public var packets: UInt64
    /// Bytes per packet in the run: 188, 192 or 204 (a file joined from others may change size between runs).
    public var packetSize: Int

    /// A run.
    public init(fileOffset: UInt64, servedOffset: UInt64, packets: UInt64, packetSize: Int = 188) {
        self.fileOffset = fileOffset
        self.servedOffset = servedOffset
        self.packets = packets
        self.packetSize = packetSize
    }

    /// Where the 188 bytes start inside one of the run's packets in the file (4 for 192-byte packets, else 0).
    public var syncOffset: Int { packetSize == 192 ? 4 : 0 }
}

/// How a file's packets look as plain 188-byte MPEG-TS (the served view): each packet's 188 bytes (without the
/// 4-byte timecode of 192-byte packets or the 16 parity bytes of 204-byte ones), one after the other, without the
/// bytes before the first packet, between runs (garbage the demuxer skipped) or after the last whole packet.
///
/// The runs come from the index's scan (``TSIndexer``), so mapping a range of the view to the file's bytes reads
/// nothing. Offsets outside every run map to the start of the next run (or the view's end).
public struct PacketLayout: Hashable, Sendable {
    /// Bytes per packet in the file: 188, 192 or 204 (the last run's; each run has its own).
    public var packetSize: Int
    /// The runs, in file order; their served offsets follow on without a gap.
    public var runs: [PacketRun]

    /// A layout.
    public init(packetSize: Int, runs: [PacketRun]) {
        self.packetSize = packetSize
        self.runs = runs
    }

    /// Where the 188 bytes start inside a packet in the file (4 for 192-byte packets, else 0).
    public var syncOffset: Int { packetSize == 192 ? 4 : 0 }

    /// The length of the served view.
    public var servedLength: UInt64 {
        guard let last = runs.last else { return 0 }
        return last.servedOffset + last.packets * 188
    }

    /// Whether the served view is the file itself (188-byte packets from byte 0, no gap), so its bytes can be sent
    /// as they are.
    public var isIdentity: Bool {
        packetSize == 188 && runs.count <= 1 && (runs.first.map { $0.fileOffset == 0 && $0.packetSize == 188 } ?? true)
    }

    /// The served offset of the packet that holds file byte `offset` (a packet's first byte maps to its first
    /// served byte; a byte inside a packet to that packet's start); an offset before, between or after the runs to
    /// the start of the next run (the view's end after the last).
    public func servedOffset(ofFileOffset offset: UInt64) -> UInt64 {
        // The last run that starts at or before `offset`.
        var low = 0
        var high = runs.count
        while low < high {
            let middle = (low + high) / 2
            if runs[middle].fileOffset <= offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return 0 }
        let run = runs[low - 1]
        let packet = (offset - run.fileOffset) / UInt64(max(run.packetSize, 1))
        if packet < run.packets { return run.servedOffset + packet * 188 }
        return run.servedOffset + run.packets * 188
    }

    /// Where served byte `offset` lies in the file: the file offset of its packet, the byte within the packet's 188,
    /// the packets from that one to the end of its run (at least 1), and the run's packet size. Nil at or past the
    /// view's end.
    public func locate(servedOffset offset: UInt64) -> (
        packetOffset: UInt64, within: Int, packetsLeft: UInt64, packetSize: Int
    )? {
        var low = 0
        var high = runs.count
        while low < high {
            let middle = (low + high) / 2
            if runs[middle].servedOffset <= offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let run = runs[low - 1]
        let packet = (offset - run.servedOffset) / 188
        guard packet < run.packets else { return nil }
        return (
            run.fileOffset + packet * UInt64(run.packetSize), Int((offset - run.servedOffset) % 188),
            run.packets - packet,
            run.packetSize
        )
    }

    /// Appends the served bytes of the whole packets in `packets` (read from the file at a packet boundary of a run
    /// of `packetSize`-byte packets) to `output`, leaving out the first `skip` served bytes and stopping after
    /// `limit` bytes. Returns the bytes appended. A trailing partial packet is ignored.
    public func appendServed(
        _ packets: UnsafeRawBufferPointer, packetSize: Int, skip: Int, limit: Int, to output: inout [UInt8]
    ) -> Int {
        guard packetSize == 188 || packetSize == 192 || packetSize == 204 else { return 0 }
        let size = packetSize
        let sync = packetSize == 192 ? 4 : 0
        var skip = max(0, skip)
        var left = max(0, limit)
        var position = 0
        let before = output.count
        while left > 0 && position + size <= packets.count {
            if skip < 188 {
                let take = min(188 - skip, left)
                let start = position + sync + skip
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: packets[start..<(start + take)]))
                left -= take
            }
            skip = max(0, skip - 188)
            position += size
        }
        return output.count - before
    }
}

/// Records the packet runs a demuxer reports (its ``DemuxEvent/synchronized(_:offset:)`` events and sync losses).
struct PacketRunRecorder: Sendable {
    private(set) var closed: [PacketRun] = []
    private var open: (fileOffset: UInt64, servedOffset: UInt64, packetSize: Int)?
    private var servedEnd: UInt64 = 0
    private(set) var packetSize = 188

    /// Notes one demuxer event (only synchronisation and sync losses matter).
    @inline(__always)
    mutating func note(_ event: DemuxEvent) {
        switch event {
        case .synchronized(let size, let offset):
            guard let start = UInt64(exactly: offset) else { return }
            close(at: start)
            packetSize = size.length
            open = (start, servedEnd, size.length)
        case .error(let error) where error.code == .syncLost:
            guard let offset = error.offset, let end = UInt64(exactly: offset) else { return }
            close(at: end)
        default:
            break
        }
    }

    private mutating func close(at end: UInt64) {
        guard let run = open else { return }
        let packets = end > run.fileOffset ? (end - run.fileOffset) / UInt64(run.packetSize) : 0
        if packets > 0 {
            closed.append(
                PacketRun(
                    fileOffset: run.fileOffset, servedOffset: run.servedOffset, packets: packets,
                    packetSize: run.packetSize))
            servedEnd = run.servedOffset + packets * 188
        }
        open = nil
    }

    /// The runs, the open one taken to `end` (the bytes read so far, or the file's size).
    func layout(end: UInt64) -> PacketLayout {
        var runs = closed
        if let run = open, end > run.fileOffset {
            let packets = (end - run.fileOffset) / UInt64(run.packetSize)
            if packets > 0 {
                runs.append(
                    PacketRun(
                        fileOffset: run.fileOffset, servedOffset: run.servedOffset, packets: packets,
                        packetSize: run.packetSize))
            }
        }
        return PacketLayout(packetSize: packetSize, runs: runs)
    }
}

/// Keeps one program's packets of a transport stream and replaces each PAT with one that names that program alone
/// (ISO/IEC 13818-1 2.4.4.3), so that the output is a single-program transport stream (RFC 8216 3.3 wants one
/// program per segment). One table lookup per packet, nothing allocated per packet.
public struct ProgramFilter: Sendable {
    /// The program kept.
    public let programNumber: UInt16
    private let keep: [Bool]
    /// The PAT packet's payload: pointer_field, the section, stuffing.
    private let patPayload: [UInt8]

    /// A filter for program `programNumber`, whose PMT is on `pmtPID`, keeping `pids` (its streams and PCR PID) too.
    public init(programNumber: UInt16, pmtPID: UInt16, pids: some Sequence<UInt16>, transportStreamID: UInt16 = 1) {
        self.programNumber = programNumber
        var keep = Array(repeating: false, count: 8192)
        keep[Int(pmtPID & 0x1FFF)] = true
        for pid in pids { keep[Int(pid & 0x1FFF)] = true }
        keep[0] = false
        self.keep = keep
        // table_id 0, section_syntax_indicator 1, section_length 13: five header bytes, one entry, the CRC.
        var section: [UInt8] = [
            0x00, 0xB0, 13, UInt8(transportStreamID >> 8), UInt8(transportStreamID & 0xFF), 0xC1, 0x00, 0x00,
            UInt8(programNumber >> 8), UInt8(programNumber & 0xFF), 0xE0 | UInt8((pmtPID >> 8) & 0x1F),
            UInt8(pmtPID & 0xFF),
        ]
        let crc = CRC32MPEG2.checksum(section)
        section += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        patPayload = [0x00] + section + Array(repeating: 0xFF, count: 184 - 1 - section.count)
    }

    /// A PAT packet naming the program alone.
    public func patPacket(continuityCounter: UInt8 = 0) -> [UInt8] {
        [0x47, 0x40, 0x00, 0x10 | (continuityCounter & 0x0F)] + patPayload
    }

    /// Whether the filter keeps `pid`'s packets (PAT packets are rewritten, not kept).
    public func keeps(_ pid: UInt16) -> Bool { keep[Int(pid & 0x1FFF)] }

    /// Appends the kept packets among the whole packets of `packets` (each `packetSize` bytes, its 188 bytes at
    /// `syncOffset`) to `output`: the program's packets as they are, each PAT packet that starts a section as one
    /// naming the program alone (with the original's continuity counter). Packets without a sync byte, other
    /// programs' packets and PAT continuations are left out. Returns the packets appended.
    public func append(
        _ packets: UnsafeRawBufferPointer, packetSize: Int, syncOffset: Int, to output: inout [UInt8]
    ) -> Int {
        var appended = 0
        forEachSyncedPacket(packets, packetSize: packetSize, syncOffset: syncOffset) { start, pid in
            if pid == 0 {
                guard packets[start + 1] & 0x40 != 0 else { return }
                output.append(0x47)
                output.append(0x40)
                output.append(0x00)
                output.append(0x10 | (packets[start + 3] & 0x0F))
                output.append(contentsOf: patPayload)
                appended += 1
            } else if keep[Int(pid)] {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: packets[start..<(start + 188)]))
                appended += 1
            }
        }
        return appended
    }
}

/// Calls `body` with the offset and PID of each whole packet in `packets` (each `packetSize` bytes, its 188 bytes at
/// `syncOffset`) that begins with a sync byte; nothing when the sizes do not describe a TS packet.
@inline(__always)
func forEachSyncedPacket(
    _ packets: UnsafeRawBufferPointer, packetSize: Int, syncOffset: Int, _ body: (_ start: Int, _ pid: UInt16) -> Void
) {
    guard packetSize >= 188, syncOffset >= 0, syncOffset + 188 <= packetSize else { return }
    var position = 0
    while position + packetSize <= packets.count {
        let start = position + syncOffset
        position += packetSize
        guard packets[start] == 0x47 else { continue }
        body(start, UInt16(packets[start + 1] & 0x1F) << 8 | UInt16(packets[start + 2]))
    }
}
