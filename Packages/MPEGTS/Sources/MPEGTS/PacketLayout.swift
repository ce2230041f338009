/// A run of whole packets of one size with nothing between them: where its first packet starts in the file, where
/// that packet's 188 bytes start in the served view (see ``PacketLayout``), and how many packets it holds.
public struct PacketRun: Hashable, Sendable {
    /// The file offset of the run's first packet (of its timecode, for 192-byte packets).
    public var fileOffset: UInt64
    /// The offset of the run's first packet in the served 188-byte view.
    public var servedOffset: UInt64
    /// Whole packets in the run.
    public var packets: UInt64

    /// A run.
    public init(fileOffset: UInt64, servedOffset: UInt64, packets: UInt64) {
        self.fileOffset = fileOffset
        self.servedOffset = servedOffset
        self.packets = packets
    }
}

/// How a file's packets look as plain 188-byte MPEG-TS (the served view): each packet's 188 bytes (without the
/// 4-byte timecode of 192-byte packets or the 16 parity bytes of 204-byte ones), one after the other, without the
/// bytes before the first packet, between runs (garbage the demuxer skipped) or after the last whole packet.
///
/// The runs come from the index's scan (``TSIndexer``), so mapping a range of the view to the file's bytes reads
/// nothing. Offsets outside every run map to the start of the next run (or the view's end).
public struct PacketLayout: Hashable, Sendable {
    /// Bytes per packet in the file: 188, 192 or 204.
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
        packetSize == 188 && runs.count <= 1 && (runs.first?.fileOffset ?? 0) == 0
    }

    /// The served offset of the packet that holds file byte `offset` (a packet's first byte maps to its first
    /// served byte; a byte inside a packet to that packet's start); an offset before, between or after the runs to
    /// the start of the next run (the view's end after the last).
    public func servedOffset(ofFileOffset offset: UInt64) -> UInt64 {
        let size = UInt64(packetSize)
        // The last run that starts at or before `offset`.
        var low = 0
        var high = runs.count
        while low < high {
            let middle = (low + high) / 2
            if runs[middle].fileOffset <= offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return 0 }
        let run = runs[low - 1]
        let packet = (offset - run.fileOffset) / size
        if packet < run.packets { return run.servedOffset + packet * 188 }
        return run.servedOffset + run.packets * 188
    }

    /// Where served byte `offset` lies in the file: the file offset of its packet, the byte within the packet's 188,
    /// and the packets from that one to the end of its run (at least 1). Nil at or past the view's end.
    public func locate(servedOffset offset: UInt64) -> (packetOffset: UInt64, within: Int, packetsLeft: UInt64)? {
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
            run.fileOffset + packet * UInt64(packetSize), Int((offset - run.servedOffset) % 188), run.packets - packet
        )
    }

    /// Appends the served bytes of the whole packets in `packets` (read from the file at a packet boundary) to
    /// `output`, leaving out the first `skip` served bytes and stopping after `limit` bytes. Returns the bytes
    /// appended. A trailing partial packet is ignored.
    public func appendServed(
        _ packets: UnsafeRawBufferPointer, skip: Int, limit: Int, to output: inout [UInt8]
    ) -> Int {
        let size = packetSize
        let sync = syncOffset
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
    private var open: (fileOffset: UInt64, servedOffset: UInt64)?
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
            open = (start, servedEnd)
        case .error(let error) where error.code == .syncLost:
            guard let offset = error.offset, let end = UInt64(exactly: offset) else { return }
            close(at: end)
        default:
            break
        }
    }

    private mutating func close(at end: UInt64) {
        guard let run = open else { return }
        let packets = end > run.fileOffset ? (end - run.fileOffset) / UInt64(packetSize) : 0
        if packets > 0 {
            closed.append(PacketRun(fileOffset: run.fileOffset, servedOffset: run.servedOffset, packets: packets))
            servedEnd = run.servedOffset + packets * 188
        }
        open = nil
    }

    /// The runs, the open one taken to `end` (the bytes read so far, or the file's size).
    func layout(end: UInt64) -> PacketLayout {
        var runs = closed
        if let run = open, end > run.fileOffset {
            let packets = (end - run.fileOffset) / UInt64(packetSize)
            if packets > 0 {
                runs.append(PacketRun(fileOffset: run.fileOffset, servedOffset: run.servedOffset, packets: packets))
            }
        }
        return PacketLayout(packetSize: packetSize, runs: runs)
    }
}
