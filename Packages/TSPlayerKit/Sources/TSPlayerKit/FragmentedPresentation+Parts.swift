import FileRange
import MPEGTS

/// The bytes of a joined recording (``MPEGTS/RecordingPart``) as fragmented MP4 reads them: each later part on
/// another program, PMT PID or stream PIDs is read with its packets moved onto the first part's (``PartRemapper``:
/// video to video, audio to audio by rank), so the presentation's tracks, which are the PIDs found at open, go on
/// through the cut. Every packet keeps its place and size (one the remapper leaves out becomes a null packet), so
/// byte offsets, segment ranges and the index's keyframes stay those of the file.
struct PartReader: Sendable {
    /// The parts whose packets are remapped, in file order, each with its remapper and where it ends.
    let remapped: [(start: UInt64, end: UInt64, remapper: PartRemapper)]
    let packetSize: Int
    let syncOffset: Int

    /// A reader of `parts` (the index's), or nil when no later part is on another program, PMT PID or PIDs.
    init?(parts: [RecordingPart], packetSize: Int) {
        guard let first = parts.first, [188, 192, 204].contains(packetSize) else { return nil }
        var list: [(start: UInt64, end: UInt64, remapper: PartRemapper)] = []
        for (number, part) in parts.enumerated() where number > 0 {
            guard part.programNumber != first.programNumber || part.pmtPID != first.pmtPID || part.pids != first.pids,
                let start = UInt64(exactly: part.offset)
            else { continue }
            let next = number + 1 < parts.count ? UInt64(exactly: parts[number + 1].offset) : nil
            list.append((start, next ?? .max, PartRemapper(from: part, to: first, version: number)))
        }
        guard !list.isEmpty else { return nil }
        remapped = list
        self.packetSize = packetSize
        syncOffset = packetSize == 192 ? 4 : 0
    }

    static let nullPacket: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + Array(repeating: 0xFF, count: 184)

    /// `length` bytes of `file` from `offset` (fewer at its end), the remapped parts' packets moved.
    func read(_ file: FileStreamer, at offset: UInt64, length: Int) throws -> [UInt8] {
        let end = offset + UInt64(max(0, length))
        let size = UInt64(packetSize)
        // Whole packets of the remapped parts: the read starts and ends on their boundaries.
        var start = offset
        var stop = end
        for part in remapped {
            if part.start <= offset, offset < part.end { start = part.start + (offset - part.start) / size * size }
            if part.start < end, end <= part.end {
                stop = min(part.end, part.start + (end - part.start + size - 1) / size * size)
            }
        }
        var bytes = try file.read(at: start, length: Int(stop - start))
        var packet: [UInt8] = []
        packet.reserveCapacity(188)
        for part in remapped where part.start < start + UInt64(bytes.count) && part.end > start {
            var position = max(part.start, start)
            while position + size <= min(part.end, start + UInt64(bytes.count)) {
                let at = Int(position - start) + syncOffset
                packet.removeAll(keepingCapacity: true)
                let appended = bytes.withUnsafeBytes { raw in
                    part.remapper.append(
                        UnsafeRawBufferPointer(rebasing: raw[at..<(at + 188)]), packetSize: 188, syncOffset: 0,
                        to: &packet)
                }
                let replacement = appended == 1 && packet.count == 188 ? packet : Self.nullPacket
                bytes.replaceSubrange(at..<(at + 188), with: replacement)
                position += size
            }
        }
        let from = Int(offset - start)
        guard from < bytes.count else { return [] }
        return Array(bytes[from..<min(bytes.count, from + length)])
    }
}

extension FragmentedPresentation {
    /// Reads `length` bytes at `offset`, a joined recording's later parts on the first part's PIDs (``PartReader``).
    func read(at offset: UInt64, length: Int) throws -> [UInt8] {
        guard let reader = partReader.withLock({ $0 }) else { return try file.read(at: offset, length: length) }
        return try reader.read(file, at: offset, length: length)
    }

    /// Follows the index's parts: when they change (the index grew past a cut), the ranges' values, shifts and made
    /// segments are dropped, as they were read on the parts known before.
    func follow(parts: [RecordingPart], packetSize: Int) {
        let changed = knownParts.withLock { known in
            guard known != parts else { return false }
            known = parts
            return true
        }
        guard changed else { return }
        let reader = PartReader(parts: parts, packetSize: packetSize)
        let had = partReader.withLock { value in
            defer { value = reader }
            return value != nil
        }
        guard had || reader != nil else { return }
        forgetMadeValues()
    }
}
