import FileRange
import Foundation
import Testing

@testable import MPEGTS

/// Files that are several recordings joined end to end: the index cuts them into parts where the followed
/// program's streams change or its time stamps break, and its timeline runs on through each cut.
@Suite(.temporaryFolders) struct RecordingPartTests {
    /// A recording of `frames` frames (a keyframe every 4, 3600 ticks each) from `startPTS`, on the given program
    /// number and PIDs.
    static func recording(
        frames: Int = 12, startPTS: UInt64 = 90_000, program: UInt16 = 1, pmtPID: UInt16 = 0x1000,
        videoPID: UInt16 = 0x100, audioPID: UInt16 = 0x101, tablesVersion: UInt8 = 0, repeatTables: UInt8? = nil
    ) -> [UInt8] {
        var builder = StreamBuilder()
        builder.programNumber = program
        builder.pmtPID = pmtPID
        builder.videoPID = videoPID
        builder.audioPID = audioPID
        builder.tables(version: tablesVersion)
        for frame in 0..<frames {
            if frame == frames / 2 { builder.tables(version: repeatTables ?? tablesVersion) }
            let dts = startPTS + UInt64(frame) * 3600
            builder.video(pts: dts + 7200, dts: dts, keyframe: frame % 4 == 0)
            builder.audio(pts: startPTS + UInt64(frame) * 1920)
        }
        return builder.bytes
    }

    func index(_ bytes: [UInt8], program: UInt16? = nil) throws -> TSIndex {
        let path = TemporaryFolders.make(prefix: "mpegts-parts-") + "/joined.ts"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try FileStreamer(path: path)
        defer { file.close() }
        var indexer = TSIndexer(program: program)
        try indexer.scan(file, bufferSize: 4096)
        return indexer.index(fileSize: UInt64(bytes.count), modificationTime: (0, 0))
    }

    /// The second recording brings a new PAT, program number, PMT PID and stream PIDs, and starts its time stamps
    /// over: two parts; the second begins at its PAT, follows program 2, and its keyframes run on after the first's.
    @Test func newProgramAndPIDsMakeASecondPart() throws {
        let first = Self.recording()
        let second = Self.recording(program: 2, pmtPID: 0x1100, videoPID: 0x200, audioPID: 0x201)
        let index = try index(first + second)
        #expect(index.parts.count == 2, "\(index.parts)")
        let (one, two) = (index.parts[0], index.parts[1])
        #expect(one.offset == 0 && one.cause == .start && one.programNumber == 1 && one.pids == [0x100, 0x101])
        #expect(two.offset == Int64(first.count) && two.cause == .streamsChanged, "\(two)")
        #expect(
            two.programNumber == 2 && two.pmtPID == 0x1100 && two.pids == [0x200, 0x201] && two.keyframePID == 0x200)
        // Six keyframes, the last three on PID 0x200 (their PTS restart), their ticks still increasing.
        #expect(index.keyframes.count == 6)
        #expect(index.keyframes.map(\.pts.value) == [97_200, 111_600, 126_000, 97_200, 111_600, 126_000])
        let ticks = index.keyframes.map(\.ticks)
        #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $0 < $1 }, "\(ticks)")
        #expect(index.keyframePID(at: index.keyframes[2].offset) == 0x100)
        #expect(index.keyframePID(at: index.keyframes[3].offset) == 0x200)
        // The parts tile the timeline and sum to the whole: the first from its audio's start (7200 before its first
        // picture) to its video's end, the second from its first picture (where it is placed) to its video's end.
        #expect(one.endTicks == two.startTicks && one.startTicks == 0)
        #expect(one.durationTicks == 7200 + 12 * 3600, "\(one)")
        #expect(two.durationTicks == 12 * 3600, "\(two)")
        #expect(index.durationTicks == one.durationTicks + two.durationTicks, "\(index.durationTicks ?? -1)")
        // The sidecar keeps the parts.
        #expect(try TSIndex(serialized: index.serialized()) == index)
    }

    /// The same program and PIDs with time stamps that start over: a part cut by the break, at the PES where it is.
    @Test func timestampBreakMakesAPart() throws {
        let part = Self.recording()
        let index = try index(part + part)
        #expect(index.parts.map(\.cause) == [.start, .timestampBreak], "\(index.parts)")
        #expect(index.parts.allSatisfy { $0.programNumber == 1 && $0.pids == [0x100, 0x101] })
        #expect(index.parts[1].offset > Int64(part.count) && index.parts[1].offset < Int64(part.count) + 4 * 188 * 4)
        #expect(index.parts[0].endTicks == index.parts[1].startTicks)
        #expect(index.parts[1].endTicks == index.durationTicks)
    }

    /// A PMT whose version changes but lists the same streams is no cut; a PMT that changes a stream type is.
    @Test func pmtVersionAloneIsNoCut() throws {
        let same = try index(Self.recording(tablesVersion: 0, repeatTables: 1))
        #expect(same.parts.count == 1 && same.parts[0].cause == .start)
        var builder = StreamBuilder()
        builder.tables()
        for frame in 0..<8 {
            if frame == 4 {
                builder.videoType = .hevc
                builder.tables(version: 1)
            }
            let dts = 90_000 + UInt64(frame) * 3600
            builder.video(pts: dts + 7200, dts: dts, keyframe: frame % 4 == 0)
        }
        let changed = try index(builder.bytes)
        #expect(changed.parts.map(\.cause) == [.start, .streamsChanged], "\(changed.parts)")
        #expect(changed.parts.last?.streams.first?.streamType == .hevc)
    }

    /// A program asked for is followed while a PAT lists it; where the recording goes on in another program, the
    /// new PAT's first program with video is followed.
    @Test func requestedProgramFollowsTheRecording() throws {
        let first = Self.recording()
        let second = Self.recording(program: 7, pmtPID: 0x1100, videoPID: 0x200, audioPID: 0x201)
        let index = try index(first + second, program: 1)
        #expect(index.parts.map(\.programNumber) == [1, 7])
        #expect(index.keyframes.count == 6)
    }

    /// Every prefix of a joined file, and the joined file with bytes at the cut overwritten at random, index without
    /// a trap: the parts stay in order, tile the timeline, and the sidecar round-trips them.
    @Test func damagedCutsIndexWithoutATrap() async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            let first = Self.recording(frames: 8)
            let joined = first + Self.recording(frames: 8, program: 2, pmtPID: 0x1100, videoPID: 0x200, audioPID: 0x201)
            var generator = SplitMix64(seed: 29)
            var inputs: [[UInt8]] = stride(from: first.count - 188 * 3, to: first.count + 188 * 6, by: 61).map {
                Array(joined.prefix($0))
            }
            for _ in 0..<40 {
                var bytes = joined
                for _ in 0..<8 {
                    bytes[first.count - 376 + Int.random(in: 0..<1200, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
                inputs.append(bytes)
            }
            for bytes in inputs {
                let index = try index(bytes)
                #expect(zip(index.parts, index.parts.dropFirst()).allSatisfy { $0.offset <= $1.offset })
                #expect(zip(index.parts, index.parts.dropFirst()).allSatisfy { $0.endTicks == $1.startTicks })
                #expect(try TSIndex(serialized: index.serialized()) == index)
            }
        }
    }

    /// The fuzz target's inputs (Tests/Fuzz/Crashers/FuzzDemuxer, `seed-joined.ts` the start of one ffmpeg recording
    /// and the start of another on program 2 and PIDs 0x200, 0x201; its first PAT repeats the continuity counter of the
    /// first's, but not its bytes, so it is read and the part begins there): their parts are the same drip-fed as in
    /// one shot, in order and tiling the timeline, and remapping each onto the first writes whole packets.
    @Test func fuzzInputsGiveOrderedParts() throws {
        var sawJoined = false
        for url in FuzzRegressionTests.inputs("FuzzDemuxer") {
            let bytes = [UInt8](try Data(contentsOf: url))
            var oneShot = TSIndexer()
            bytes.withUnsafeBytes { oneShot.consume($0) }
            oneShot.finish()
            var chunked = TSIndexer()
            var position = 0
            while position < bytes.count {
                let end = min(bytes.count, position + 1 + position % 997)
                bytes[position..<end].withUnsafeBytes { chunked.consume($0) }
                position = end
            }
            chunked.finish()
            let index = oneShot.index(fileSize: UInt64(bytes.count), modificationTime: (0, 0))
            let name = url.lastPathComponent
            #expect(
                index.parts == chunked.index(fileSize: UInt64(bytes.count), modificationTime: (0, 0)).parts, "\(name)")
            #expect(zip(index.parts, index.parts.dropFirst()).allSatisfy { $0.endTicks == $1.startTicks }, "\(name)")
            if name == "seed-joined.ts" {
                sawJoined = true
                #expect(
                    index.parts.map(\.programNumber) == [1, 2]
                        && (index.parts.last?.offset).map { $0 > 30 * 188 && $0 < 70 * 188 } == true, "\(index.parts)")
            }
            guard let first = index.parts.first else { continue }
            for (number, part) in index.parts.enumerated() {
                var output: [UInt8] = []
                let written = bytes.withUnsafeBytes {
                    PartRemapper(from: part, to: first, version: number).append(
                        $0, packetSize: index.packetSize, syncOffset: index.layout.syncOffset, to: &output)
                }
                #expect(output.count == written * 188, "\(name)")
                // The remapped part names program 1 and the first part's PIDs alone.
                var offset = 0
                while offset + 188 <= output.count {
                    let pid = UInt16(output[offset + 1] & 0x1F) << 8 | UInt16(output[offset + 2])
                    #expect(pid == 0 || pid == first.pmtPID || first.pids.contains(pid) || !part.pids.contains(pid))
                    offset += 188
                }
            }
        }
        #expect(sawJoined)
    }

    /// A sidecar whose part lines are malformed is refused with a typed error naming the line.
    @Test func malformedPartLinesAreRefused() throws {
        let index = try index(Self.recording() + Self.recording(program: 2, pmtPID: 0x1100, videoPID: 0x200))
        let text = String(decoding: index.serialized(), as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        let partLine = try #require(lines.firstIndex { $0.hasPrefix("part ") && !$0.hasPrefix("part 0 ") })
        for bad in [
            "part x 2 2 4352 512 512 0 10 512:27", "part 10 9 2 4352 512 512 0 10 512:27",
            "part 10 2 2 4352 512 512 0 10 9999:27", "part 10 2 2 4352", "part -1 2 2 4352 512 512 0 10 -",
        ] {
            var changed = lines
            changed[partLine] = bad
            let error = #expect(throws: TSFileError.self) {
                try TSIndex(serialized: Array((changed.joined(separator: "\n") + "\n").utf8))
            }
            #expect(error?.code == .invalidSidecar, "\(bad)")
            #expect(error?.detail.hasPrefix("line \(partLine + 1):") == true, "\(bad): \(error?.detail ?? "")")
        }
    }

    /// The one rule for a broken timeline: back by more than 1 ms, forward by more than 30 s.
    @Test func oneBreakRule() {
        #expect(TimelineBreak.isBreak(-91) && !TimelineBreak.isBreak(-90) && !TimelineBreak.isBreak(0))
        #expect(!TimelineBreak.isBreak(30 * 90_000) && TimelineBreak.isBreak(30 * 90_000 + 1))
    }
}
