/// Packets per PID in one span of a file (see ``TSIndex/spanPacketCounts``), sorted by PID, only the PIDs with
/// packets. PID 0 counts only the PAT packets that start a section: those are the ones a ``ProgramFilter`` keeps
/// (rewritten), so that the packets a filter keeps from the span are ``packets(keptBy:)`` without reading them.
public struct PIDPacketCounts: Hashable, Sendable {
    /// Each entry is `pid << 48 | count`, by PID.
    private var packed: [UInt64]

    /// No packets.
    public init() { packed = [] }

    /// Counts from `(pid, count)` pairs (PIDs over 0x1FFF are masked; a PID given twice has its counts added).
    public init(_ pairs: some Sequence<(pid: UInt16, count: UInt64)>) {
        var counts: [UInt16: UInt64] = [:]
        for (pid, count) in pairs where count > 0 { counts[pid & 0x1FFF, default: 0] &+= count }
        packed = counts.keys.sorted().map { UInt64($0) << 48 | Swift.min(counts[$0] ?? 0, Self.countMask) }
    }

    private static let countMask: UInt64 = (1 << 48) - 1

    /// The PIDs with their counts, by PID.
    public var pairs: [(pid: UInt16, count: UInt64)] {
        packed.map { (UInt16($0 >> 48), $0 & Self.countMask) }
    }

    /// Whether the span holds no packet.
    public var isEmpty: Bool { packed.isEmpty }

    /// The packets of `pid` (for PID 0, the PAT packets that start a section).
    public subscript(pid: UInt16) -> UInt64 {
        packed.first { UInt16($0 >> 48) == pid & 0x1FFF }.map { $0 & Self.countMask } ?? 0
    }

    /// The packets `filter` keeps from the span: its program's PIDs and one rewritten PAT per section start.
    public func packets(keptBy filter: ProgramFilter) -> UInt64 {
        var total: UInt64 = 0
        for entry in packed {
            let pid = UInt16(entry >> 48)
            if pid == 0 || filter.keeps(pid) { total &+= entry & Self.countMask }
        }
        return total
    }
}

/// Counts the packets of each PID per keyframe span while a ``TSIndexer`` reads a file: the packets from the start
/// of the file to the first keyframe, then from each keyframe to the next (and the last to the end). It reads the
/// same whole packets the demuxer read (the packet runs), in the bytes of each chunk after the demuxer has seen them,
/// so the keyframes of the chunk are known; a packet that starts a PES of the keyframe stream (every keyframe does)
/// closes a small pending span, and the pending spans are folded into the keyframe spans as the keyframes arrive.
/// One counter array; nothing per packet but a PID read and an increment.
struct SpanPacketCounter: Sendable {
    /// Closed keyframe spans: the head span, then one per keyframe folded so far but the last.
    private(set) var closed: [PIDPacketCounts] = []
    /// The keyframes folded so far.
    private(set) var keyframesFolded = 0
    /// False once the counts cannot be exact (a run began in bytes no longer held): the index then has none.
    private(set) var isValid = true

    /// Counts since the last candidate (a PES start of the keyframe stream), by PID, and which PIDs were touched.
    private var open = [UInt32](repeating: 0, count: 8192)
    private var openTouched: [UInt16] = []
    private var openOffset: UInt64 = 0
    /// Closed candidate spans not yet folded: their start offsets and packed entries (`pid << 32 | count`).
    private var pendingOffsets: [UInt64] = []
    private var pendingEnds: [Int] = []
    private var pendingEntries: [UInt64] = []
    /// The keyframe span being gathered.
    private var current = [UInt64](repeating: 0, count: 8192)
    private var currentTouched: [UInt16] = []
    /// File offset up to which whole packets were counted, and the bytes from there to the end read so far.
    private var countedTo: UInt64 = 0
    private var tail: [UInt8] = []
    /// Index of the first run that may still hold packets to count.
    private var runCursor = 0

    /// Bytes kept while no packet run covers them, at most (a longer stretch of garbage ends the counting).
    static let tailLimit = 8 << 20

    /// Counts the whole packets of `runs` that lie in the bytes read so far (`chunk` the newest, ending at `end`),
    /// then folds the pending spans up to each new keyframe. `candidatePID` is the keyframe stream when known and
    /// fixed (nil: every PES start is a candidate).
    mutating func count(
        chunk: UnsafeRawBufferPointer, end: UInt64, runs: [PacketRun], candidatePID: UInt16?, keyframes: [Keyframe]
    ) {
        guard isValid else { return }
        let chunkStart = end - UInt64(chunk.count)
        let tailStart = chunkStart - UInt64(tail.count)
        guard tailStart == countedTo else {
            isValid = false
            return
        }
        func byte(_ offset: UInt64) -> UInt8 {
            offset >= chunkStart ? chunk[Int(offset - chunkStart)] : tail[Int(offset - tailStart)]
        }
        var counted = countedTo
        var cursor = runCursor
        while cursor < runs.count {
            let run = runs[cursor]
            let size = UInt64(run.packetSize)
            let runEnd = run.fileOffset + run.packets * size
            if runEnd <= counted {
                cursor += 1
                continue
            }
            // A run the count is inside must be on the packet grid of what was counted (runs never begin before
            // the packets already counted: the demuxer read those whole and found their sync bytes).
            if run.fileOffset < counted && (counted - run.fileOffset) % size != 0 {
                isValid = false
                return
            }
            var packet = Swift.max(run.fileOffset, counted)
            let stop = Swift.min(runEnd, end)
            let sync = UInt64(run.syncOffset)
            while packet + size <= stop {
                let header = packet + sync
                let byte1: UInt8
                let byte2: UInt8
                if header >= chunkStart {
                    let at = Int(header - chunkStart)
                    byte1 = chunk[at + 1]
                    byte2 = chunk[at + 2]
                } else {
                    byte1 = byte(header + 1)
                    byte2 = byte(header + 2)
                }
                let pid = UInt16(byte1 & 0x1F) << 8 | UInt16(byte2)
                let unitStart = byte1 & 0x40 != 0
                if pid == 0 {
                    if unitStart { add(0) }
                } else {
                    if unitStart && (candidatePID.map { $0 == pid } ?? (pid >= 0x20 && pid != 0x1FFF)) {
                        closeCandidate(at: packet)
                    }
                    add(pid)
                }
                packet += size
            }
            counted = packet
            cursor += 1
        }
        // The last run may be the open one, which grows with the next bytes: it is looked at again.
        runCursor = Swift.max(0, Swift.min(cursor, runs.count - 1))
        // Keep the bytes from the last counted packet on (a run may yet begin there).
        let keepFrom = counted
        if end - keepFrom > UInt64(Self.tailLimit) {
            isValid = false
            tail = []
            return
        }
        var kept: [UInt8] = []
        kept.reserveCapacity(Int(end - keepFrom))
        if keepFrom < chunkStart {
            kept.append(contentsOf: tail[Int(keepFrom - tailStart)...])
            kept.append(contentsOf: chunk)
        } else {
            kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[Int(keepFrom - chunkStart)...]))
        }
        tail = kept
        countedTo = keepFrom
        fold(keyframes: keyframes)
    }

    @inline(__always)
    private mutating func add(_ pid: UInt16) {
        let slot = Int(pid)
        if open[slot] == 0 { openTouched.append(pid) }
        open[slot] &+= 1
    }

    /// A PES start of the keyframe stream at `offset`: the open candidate span ends there.
    private mutating func closeCandidate(at offset: UInt64) {
        pendingOffsets.append(openOffset)
        for pid in openTouched {
            pendingEntries.append(UInt64(pid) << 32 | UInt64(open[Int(pid)]))
            open[Int(pid)] = 0
        }
        pendingEnds.append(pendingEntries.count)
        openTouched.removeAll(keepingCapacity: true)
        openOffset = offset
    }

    /// Folds the pending spans that end at or before each keyframe not yet folded into the keyframe span, and
    /// closes that span at the keyframe. A keyframe past the packets counted waits.
    private mutating func fold(keyframes: [Keyframe]) {
        var first = 0
        var entry = 0
        while keyframesFolded < keyframes.count {
            guard let offset = UInt64(exactly: keyframes[keyframesFolded].offset), offset < countedTo else { break }
            while first < pendingOffsets.count && pendingOffsets[first] < offset {
                while entry < pendingEnds[first] {
                    let value = pendingEntries[entry]
                    let pid = Int(value >> 32)
                    if current[pid] == 0 { currentTouched.append(UInt16(pid)) }
                    current[pid] &+= value & 0xFFFF_FFFF
                    entry += 1
                }
                first += 1
            }
            // The next span must start at the keyframe (its PES start is a candidate unless the stream changed).
            guard (first < pendingOffsets.count ? pendingOffsets[first] : openOffset) == offset else {
                isValid = false
                return
            }
            closed.append(takeCurrent())
            keyframesFolded += 1
        }
        if first > 0 {
            pendingOffsets.removeFirst(first)
            pendingEntries.removeFirst(entry)
            pendingEnds = pendingEnds.dropFirst(first).map { $0 - entry }
        }
    }

    private mutating func takeCurrent() -> PIDPacketCounts {
        let counts = PIDPacketCounts(currentTouched.map { (pid: $0, count: current[Int($0)]) })
        for pid in currentTouched { current[Int(pid)] = 0 }
        currentTouched.removeAll(keepingCapacity: true)
        return counts
    }

    /// The spans of `keyframes` (the head span, then one per keyframe), the last up to the packets counted; empty
    /// when the counts are not exact or a keyframe is not folded yet.
    func spans(keyframes: Int) -> [PIDPacketCounts] {
        guard isValid, keyframesFolded == keyframes else { return [] }
        var pairs = currentTouched.map { (pid: $0, count: current[Int($0)]) }
        for value in pendingEntries { pairs.append((UInt16(value >> 32), value & 0xFFFF_FFFF)) }
        for pid in openTouched { pairs.append((pid, UInt64(open[Int(pid)]))) }
        return closed + [PIDPacketCounts(pairs)]
    }
}
