import FileRange
import MPEGTS

extension FragmentedPresentation {
    /// Reads `length` bytes at `offset`, a joined recording's later parts on the first part's PIDs
    /// (`MPEGTS.PartReader`).
    func read(at offset: UInt64, length: Int) throws -> [UInt8] {
        guard let reader = partReader.withLock({ $0 }) else { return try file.read(at: offset, length: length) }
        return try reader.read(at: offset, length: length) { (start, count) throws(FileStreamerError) in
            try file.read(at: start, length: count)
        }
    }

    /// Follows the index's parts: when the parts read on other PIDs change (the index grew past a cut), the ranges'
    /// values, shifts and made segments are dropped, as they were read with the parts known before. The last part's
    /// end, which moves on as a growing file is indexed, changes nothing that was read.
    func follow(parts: [RecordingPart], packetSize: Int) {
        let changed = knownParts.withLock { known in
            guard known != parts else { return false }
            known = parts
            return true
        }
        guard changed else { return }
        let reader = PartReader(parts: parts, packetSize: packetSize)
        let same = partReader.withLock { value in
            defer { value = reader }
            switch (value, reader) {
            case (nil, nil): return true
            case (let old?, let new?): return old.hasSameParts(as: new)
            default: return false
            }
        }
        guard !same else { return }
        forgetMadeValues()
    }
}
