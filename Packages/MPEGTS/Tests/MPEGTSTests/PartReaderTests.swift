import Testing

@testable import MPEGTS

/// ``PartReader``: fragmented MP4 reads a joined recording's later part on the first part's PIDs, every packet in its
/// place, whatever the offset and length asked.
@Suite struct PartReaderTests {
    static func part(_ offset: Int64, program: UInt16, pmt: UInt16, video: UInt16, audio: UInt16) -> RecordingPart {
        RecordingPart(
            offset: offset, cause: offset == 0 ? .start : .streamsChanged, programNumber: program, pmtPID: pmt,
            pcrPID: video,
            streams: [
                RecordingPart.Stream(pid: video, streamType: .h264),
                RecordingPart.Stream(pid: audio, streamType: .aacADTS),
            ], keyframePID: video, startTicks: 0, endTicks: 90_000)
    }

    /// A packet on `pid` whose payload bytes all hold `fill`.
    static func packet(_ pid: UInt16, fill: UInt8) -> [UInt8] {
        [0x47, UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10] + Array(repeating: fill, count: 184)
    }

    static func pid(_ bytes: [UInt8], packet: Int, size: Int = 188, sync: Int = 0) -> UInt16 {
        let start = packet * size + sync
        return UInt16(bytes[start + 1] & 0x1F) << 8 | UInt16(bytes[start + 2])
    }

    /// 10 packets of the first part (0x100, 0x101), then 12 of the second on 0x200, 0x201 and an unknown 0x300, in
    /// packets of `size` bytes (a 4-byte prefix for 192, a 16-byte suffix for 204).
    static func file(size: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        func add(_ packet: [UInt8], number: Int) {
            if size == 192 { bytes += [0, 0, 0, UInt8(number)] }
            bytes += packet
            if size == 204 { bytes += Array(repeating: 0xEE, count: 16) }
        }
        for number in 0..<10 { add(packet(number % 2 == 0 ? 0x100 : 0x101, fill: UInt8(number)), number: number) }
        for number in 10..<22 { add(packet([0x200, 0x201, 0x300][number % 3], fill: UInt8(number)), number: number) }
        return bytes
    }

    /// The bytes of `file` at `offset`, as a file read gives them (fewer at its end, none past it).
    static func reading(_ file: [UInt8]) -> (UInt64, Int) -> [UInt8] {
        { offset, length in
            guard offset < UInt64(file.count) else { return [] }
            let start = Int(offset)
            return Array(file[start..<min(file.count, start + length)])
        }
    }

    @Test(arguments: [188, 192, 204]) func laterPartIsReadOnTheFirstPartsPIDs(size: Int) throws {
        let original = Self.file(size: size)
        let file = Self.reading(original)
        let parts = [
            Self.part(0, program: 1, pmt: 0x1000, video: 0x100, audio: 0x101),
            Self.part(Int64(10 * size), program: 2, pmt: 0x1100, video: 0x200, audio: 0x201),
        ]
        let reader = try #require(PartReader(parts: parts, packetSize: size))
        let whole = reader.read(at: 0, length: original.count, from: file)
        #expect(whole.count == original.count)
        let sync = size == 192 ? 4 : 0
        let pids = (0..<22).map { Self.pid(whole, packet: $0, size: size, sync: sync) }
        let expected: [UInt16] =
            (0..<10).map { $0 % 2 == 0 ? 0x100 : 0x101 } + (10..<22).map { [0x100, 0x101, 0x1FFF][$0 % 3] }
        #expect(pids == expected)
        // The first part is as in the file; a moved packet keeps its payload, prefix and suffix.
        #expect(Array(whole.prefix(10 * size)) == Array(original.prefix(10 * size)))
        for number in 10..<22 where number % 3 != 2 {
            let start = number * size
            #expect(whole[(start + sync + 3)..<(start + size)] == original[(start + sync + 3)..<(start + size)])
            #expect(whole[start..<(start + sync + 1)] == original[start..<(start + sync + 1)])
        }
        // Any offset and length: the same bytes as the whole read's.
        for offset in stride(from: 0, to: original.count, by: 53) {
            for length in [1, 100, 187, 188, size, 500, 3000] {
                let part = reader.read(at: UInt64(offset), length: length, from: file)
                let end = min(original.count, offset + length)
                #expect(part == Array(whole[offset..<end]), "offset \(offset), length \(length)")
            }
        }
        #expect(reader.read(at: UInt64(original.count), length: 10, from: file).isEmpty)
    }

    /// No reader where every part is on the first part's program and PIDs (a time stamp break alone), or one part.
    @Test func noReaderWithoutOtherPIDs() {
        let first = Self.part(0, program: 1, pmt: 0x1000, video: 0x100, audio: 0x101)
        var again = first
        again.offset = 1880
        again.cause = .timestampBreak
        #expect(PartReader(parts: [first], packetSize: 188) == nil)
        #expect(PartReader(parts: [first, again], packetSize: 188) == nil)
        #expect(PartReader(parts: [], packetSize: 188) == nil)
    }

    /// A place in a later part where no packet starts (bytes without sync) is left as it is, for the demuxer to skip;
    /// the packets around it are moved.
    @Test func bytesWithoutSyncAreLeftAsTheyAre() throws {
        let garbage = [UInt8](repeating: 0x00, count: 188)
        let original =
            (0..<4).flatMap { Self.packet(0x100, fill: UInt8($0)) } + Self.packet(0x200, fill: 4) + garbage
            + Self.packet(0x201, fill: 6)
        let parts = [
            Self.part(0, program: 1, pmt: 0x1000, video: 0x100, audio: 0x101),
            Self.part(4 * 188, program: 2, pmt: 0x1100, video: 0x200, audio: 0x201),
        ]
        let reader = try #require(PartReader(parts: parts, packetSize: 188))
        let whole = reader.read(at: 0, length: original.count, from: Self.reading(original))
        #expect(whole.count == original.count)
        #expect(Self.pid(whole, packet: 4) == 0x100 && Self.pid(whole, packet: 6) == 0x101)
        #expect(Array(whole[(5 * 188)..<(6 * 188)]) == garbage)
    }

    /// Parts out of order (damaged input), offsets and lengths at the ends of the range: no trap; fewer bytes at the
    /// end, none past it.
    @Test func damagedPartsAndExtremeOffsets() throws {
        let original = Self.file(size: 188)
        let parts = [
            Self.part(0, program: 1, pmt: 0x1000, video: 0x100, audio: 0x101),
            Self.part(Int64(15 * 188), program: 2, pmt: 0x1100, video: 0x200, audio: 0x201),
            Self.part(Int64(5 * 188 + 7), program: 3, pmt: 0x1200, video: 0x300, audio: 0x301),
        ]
        let reader = try #require(PartReader(parts: parts, packetSize: 188))
        let file = Self.reading(original)
        #expect(reader.read(at: 0, length: original.count, from: file).count == original.count)
        #expect(reader.read(at: .max - 3, length: 100, from: file).isEmpty)
        #expect(reader.read(at: 10, length: 0, from: file).isEmpty)
        #expect(reader.read(at: 10, length: -5, from: file).isEmpty)
        #expect(reader.read(at: UInt64(original.count) - 1, length: .max / 2, from: file).count == 1)
        // A range past the largest offset reads nothing.
        #expect(reader.read(at: UInt64(original.count) - 1, length: .max, from: file).isEmpty)
    }

    /// Two readers of the same parts are the same whatever the parts' times (a growing file's last part ends later
    /// each time it is indexed); another cut, other PIDs or another packet size make another reader.
    @Test func sameParts() throws {
        let first = Self.part(0, program: 1, pmt: 0x1000, video: 0x100, audio: 0x101)
        var second = Self.part(1880, program: 2, pmt: 0x1100, video: 0x200, audio: 0x201)
        let reader = try #require(PartReader(parts: [first, second], packetSize: 188))
        second.endTicks += 90_000
        #expect(try #require(PartReader(parts: [first, second], packetSize: 188)).hasSameParts(as: reader))
        #expect(try !#require(PartReader(parts: [first, second], packetSize: 192)).hasSameParts(as: reader))
        var moved = second
        moved.offset = 3760
        #expect(try !#require(PartReader(parts: [first, moved], packetSize: 188)).hasSameParts(as: reader))
        var other = second
        other.streams[1].pid = 0x202
        #expect(try !#require(PartReader(parts: [first, other], packetSize: 188)).hasSameParts(as: reader))
        let third = Self.part(5640, program: 3, pmt: 0x1200, video: 0x300, audio: 0x301)
        #expect(try !#require(PartReader(parts: [first, second, third], packetSize: 188)).hasSameParts(as: reader))
    }
}
