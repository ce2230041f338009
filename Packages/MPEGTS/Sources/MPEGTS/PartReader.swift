/// The bytes of a joined recording (``RecordingPart``) with each later part on another program, PMT PID or stream
/// PIDs moved onto the first part's (``PartRemapper``: video to video, audio to audio by rank), so that a reader that
/// knows only the first part's program (fragmented MP4's tracks, a remux's layout) goes on through the cut. Every
/// packet keeps its place and size: one the remapper leaves out (another program's, a table it cannot rewrite)
/// becomes a null packet, and a place where no packet starts (bytes without sync inside a part) is left as it is, so
/// byte offsets, segment ranges and an index's keyframes stay those of the file.
public struct PartReader: Sendable {
    /// One later part whose packets are moved: where it starts and ends in the file, and its remapper.
    struct Remapped: Sendable {
        var start: UInt64
        var end: UInt64
        var remapper: PartRemapper
    }

    /// The parts whose packets are remapped, in file order.
    let remapped: [Remapped]
    /// The packet size (188, 192 or 204) and where the 188 bytes of a packet start in it (4 for 192, else 0).
    public let packetSize: Int
    let syncOffset: Int

    /// A reader of `parts` (an index's, in file order), or nil when no later part is on another program, PMT PID or
    /// stream PIDs than the first (a time stamp break alone needs no remapping), or `packetSize` is not 188, 192 or
    /// 204.
    public init?(parts: [RecordingPart], packetSize: Int) {
        guard let first = parts.first, [188, 192, 204].contains(packetSize) else { return nil }
        var list: [Remapped] = []
        for (number, part) in parts.enumerated() where number > 0 {
            guard part.programNumber != first.programNumber || part.pmtPID != first.pmtPID || part.pids != first.pids,
                let start = UInt64(exactly: part.offset)
            else { continue }
            let next = number + 1 < parts.count ? UInt64(exactly: parts[number + 1].offset) : nil
            // Damaged input may give parts out of order: such a part is left out rather than given a negative range.
            let end = max(start, next ?? .max)
            list.append(
                Remapped(start: start, end: end, remapper: PartRemapper(from: part, to: first, version: number)))
        }
        guard !list.isEmpty else { return nil }
        remapped = list
        self.packetSize = packetSize
        syncOffset = packetSize == 192 ? 4 : 0
    }

    /// Whether two readers move the same packets the same way: the same packet size, and the same remapped parts
    /// (where each starts and ends, and the PIDs it is moved from and to). Parts that differ only in their times (the
    /// last part's end, as a growing file is indexed) give the same reader.
    public func hasSameParts(as other: PartReader) -> Bool {
        packetSize == other.packetSize && remapped.count == other.remapped.count
            && zip(remapped, other.remapped).allSatisfy {
                $0.start == $1.start && $0.end == $1.end && $0.remapper.hasSameMapping(as: $1.remapper)
            }
    }

    /// A null packet (PID 0x1FFF), which every reader skips.
    static let nullPacket: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + Array(repeating: 0xFF, count: 184)

    /// `length` bytes from `offset` (fewer at the end; none for a range that ends past the largest offset), the
    /// remapped parts' packets moved: `read(offset, length)` gives the file's bytes (fewer at its end, none past it). A read that starts or ends inside a remapped part's packet
    /// reads that whole packet, so any offset and length give the same bytes as one read of the whole file.
    public func read<Failure: Error>(
        at offset: UInt64, length: Int, from read: (_ offset: UInt64, _ length: Int) throws(Failure) -> [UInt8]
    ) throws(Failure) -> [UInt8] {
        guard length > 0 else { return [] }
        let size = UInt64(packetSize)
        let (end, overflow) = offset.addingReportingOverflow(UInt64(length))
        guard !overflow else { return [] }
        // Whole packets of the remapped parts: the read starts and ends on their boundaries.
        var start = offset
        var stop = end
        for part in remapped {
            if part.start <= offset, offset < part.end { start = part.start + (offset - part.start) / size * size }
            if part.start < end, end <= part.end {
                let packets = (end - part.start) / size + ((end - part.start) % size == 0 ? 0 : 1)
                let (last, overflow) = packets.multipliedReportingOverflow(by: size)
                stop = overflow ? part.end : min(part.end, part.start.addingReportingOverflow(last).partialValue)
            }
        }
        guard let count = Int(exactly: stop - start) else { return [] }
        var bytes = try read(start, count)
        let available = start + UInt64(bytes.count)
        var packet: [UInt8] = []
        packet.reserveCapacity(188)
        for part in remapped where part.start < available && part.end > start {
            var position = max(part.start, start)
            let limit = min(part.end, available)
            while position + size <= limit {
                let at = Int(position - start) + syncOffset
                position += size
                // No packet starts here (bytes without sync): left as they are, for the demuxer to skip.
                guard bytes[at] == 0x47 else { continue }
                packet.removeAll(keepingCapacity: true)
                let appended = bytes.withUnsafeBytes { raw in
                    part.remapper.append(
                        UnsafeRawBufferPointer(rebasing: raw[at..<(at + 188)]), packetSize: 188, syncOffset: 0,
                        to: &packet)
                }
                let replacement = appended == 1 && packet.count == 188 ? packet : Self.nullPacket
                bytes.replaceSubrange(at..<(at + 188), with: replacement)
            }
        }
        let from = Int(offset - start)
        guard from < bytes.count else { return [] }
        return Array(bytes[from..<min(bytes.count, from + length)])
    }
}
