import Testing

@testable import MPEGTS

/// The index's packets per PID per keyframe span (``TSIndex/spanPacketCounts``) against what a ``ProgramFilter``
/// really keeps from each span's bytes, for 188-, 192- and 204-byte packets, a file that begins mid-packet with
/// garbage between packets and another program's packets, fed in one piece and in odd chunks.
struct PacketCountTests {
    /// The test file: the typical stream with a second program's packets (PID 0x777) after every seventh packet.
    static func file(packetSize: Int) -> (bytes: [UInt8], packets: Int) {
        let built = StreamBuilder.typical(frames: 24)
        let count = built.count / 188
        var packets: [ArraySlice<UInt8>] = []
        for packet in 0..<count {
            packets.append(built[(packet * 188)..<(packet * 188 + 188)])
            if packet % 7 == 3 {
                packets.append(ArraySlice([0x47, 0x47, 0x77, 0x10] + Array(repeating: 0xAA, count: 184)))
            }
        }
        var file: [UInt8] = Array(repeating: 0x11, count: 100)
        for (number, packet) in packets.enumerated() {
            if number == packets.count / 3 { file += Array(repeating: 0x55, count: 1000) }
            if packetSize == 192 { file += [0x01, 0x02, 0x03, UInt8(number & 0xFF)] }
            file += packet
            if packetSize == 204 { file += Array(repeating: 0xEE, count: 16) }
        }
        file += Array(repeating: 0x47, count: 50)
        return (file, packets.count)
    }

    static func index(_ file: [UInt8], chunk: Int?) -> TSIndex {
        var indexer = TSIndexer()
        var position = 0
        while position < file.count {
            let end = chunk.map { min(file.count, position + $0 + position % 777) } ?? file.count
            file[position..<end].withUnsafeBytes { indexer.consume($0) }
            position = end
        }
        indexer.finish()
        return indexer.index(fileSize: UInt64(file.count), modificationTime: (0, 0))
    }

    /// The packets `filter` keeps from the file's packets between file offsets `start` and `end`, read through the
    /// layout as the server reads them.
    static func kept(
        _ file: [UInt8], _ layout: PacketLayout, _ filter: ProgramFilter, from start: UInt64, to end: UInt64
    )
        -> Int
    {
        var position = layout.servedOffset(ofFileOffset: start)
        let stop = layout.servedOffset(ofFileOffset: end)
        var total = 0
        var output: [UInt8] = []
        while position < stop, let found = layout.locate(servedOffset: position) {
            let packets = Int(min(found.packetsLeft, (stop - position) / 188))
            let from = Int(found.packetOffset)
            total += file[from..<(from + packets * found.packetSize)].withUnsafeBytes {
                filter.append(
                    $0, packetSize: found.packetSize, syncOffset: found.packetSize == 192 ? 4 : 0, to: &output)
            }
            position += UInt64(packets * 188)
        }
        return total
    }

    @Test(arguments: [188, 192, 204])
    func spanCountsAreWhatTheFilterKeeps(packetSize: Int) throws {
        let (file, _) = Self.file(packetSize: packetSize)
        let index = Self.index(file, chunk: nil)
        #expect(index.keyframes.count == 6)
        #expect(index.spanPacketCounts.count == index.keyframes.count + 1)
        for chunk in [1000, 4096, 187] {
            #expect(Self.index(file, chunk: chunk).spanPacketCounts == index.spanPacketCounts, "chunk \(chunk)")
        }
        // Every PID's packets, added over the spans, are the demuxer's count (PID 0: the PAT section starts).
        var demuxer = Demuxer()
        _ = demuxer.feed(file)
        _ = demuxer.finish()
        for statistics in demuxer.pidStatistics where statistics.pid != 0 {
            let total = index.spanPacketCounts.reduce(UInt64(0)) { $0 + $1[statistics.pid] }
            #expect(total == UInt64(statistics.packets), "PID \(statistics.pid)")
        }
        let layout = index.layout
        let starts = [UInt64(0)] + index.keyframes.map { UInt64($0.offset) }
        let ends = index.keyframes.map { UInt64($0.offset) } + [UInt64(file.count)]
        let filters = [
            ProgramFilter(programNumber: 1, pmtPID: 0x1000, pids: [0x100, 0x101]),
            ProgramFilter(programNumber: 1, pmtPID: 0x1000, pids: [0x100]),
            ProgramFilter(programNumber: 2, pmtPID: 0x1001, pids: [0x777]),
        ]
        for filter in filters {
            for (span, counts) in index.spanPacketCounts.enumerated() {
                let expected = Self.kept(file, layout, filter, from: starts[span], to: ends[span])
                #expect(counts.packets(keptBy: filter) == UInt64(expected), "span \(span)")
            }
        }
        #expect(try TSIndex(serialized: index.serialized()) == index)
    }

    /// A file of garbage longer than the counter keeps: the index has no span counts, never wrong ones.
    @Test func noCountsWhenTheyCannotBeExact() {
        let built = StreamBuilder.typical(frames: 4)
        let file = Array(repeating: UInt8(0x00), count: SpanPacketCounter.tailLimit + 4096) + built
        let index = Self.index(file, chunk: 1 << 20)
        #expect(index.spanPacketCounts.isEmpty)
    }

    @Test func countsByPID() {
        let counts = PIDPacketCounts([(pid: 0x101, count: 3), (pid: 0, count: 1), (pid: 0x101, count: 2)])
        #expect(counts.pairs.map(\.pid) == [0, 0x101] && counts[0x101] == 5 && counts[0x200] == 0)
        let filter = ProgramFilter(programNumber: 1, pmtPID: 0x1000, pids: [0x101])
        #expect(counts.packets(keptBy: filter) == 6)
        #expect(PIDPacketCounts().isEmpty)
    }
}
