import FileRange
import Foundation
import Testing

@testable import MPEGTS

@Suite(.temporaryFolders) struct IndexTests {
    /// A temporary file holding `bytes`, in a folder of its own that goes (with any sidecar beside the file) when the
    /// test ends.
    func temporaryFile(_ bytes: [UInt8], name: String = #function) throws -> String {
        let path = TemporaryFolders.make(prefix: "mpegts-") + "/\(name.filter(\.isLetter)).ts"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func indexOfSyntheticFile() throws {
        let bytes = StreamBuilder.typical(frames: 12)
        let path = try temporaryFile(bytes)
        var progressCalls = 0
        let index = try TSIndex.build(path: path, bufferSize: 4096) { progress in
            progressCalls += 1
            #expect(progress.bytesIndexed <= progress.fileSize)
            return true
        }
        #expect(progressCalls == (bytes.count + 4095) / 4096)
        #expect(index.isComplete)
        #expect(index.fileSize == UInt64(bytes.count))
        #expect(index.bytesIndexed == UInt64(bytes.count))
        #expect(index.packetSize == 188)
        #expect(index.programs.map(\.pmtPID) == [0x1000])
        #expect(index.streams.map(\.pid) == [0x100, 0x101])
        #expect(index.streams.map(\.codec) == [.h264, .aac])
        #expect(index.keyframePID == 0x100)
        // Keyframes at frames 0, 4, 8: PTS = 97200 + n * 3600, ticks from the first PTS (audio at 90000).
        #expect(index.keyframes.map(\.pts.value) == [97_200, 111_600, 126_000])
        #expect(index.keyframes.map(\.ticks) == [7200, 21_600, 36_000])
        for keyframe in index.keyframes {
            let offset = Int(keyframe.offset)
            #expect(bytes[offset] == 0x47 && bytes[offset + 1] & 0x40 != 0)
        }
        // Video runs from 97200 to 97200 + 11 * 3600, plus one frame step; audio ends earlier.
        #expect(index.firstPTS?.value == 90_000)
        let expectedDuration: Int64 = 97_200 + 11 * 3600 + 3600 - 90_000
        #expect(index.durationTicks == expectedDuration)
        #expect(index.bitrate.map { $0 > 0 } == true)
    }

    /// Two copies of a stream joined end to end: the time stamps go back at the second copy, and the index's
    /// ticks run on one frame step later instead (the keyframes keep their own PTS).
    @Test func timestampResetIsClosedUp() throws {
        let part = StreamBuilder.typical(frames: 12)
        let path = try temporaryFile(part + part)
        let index = try TSIndex.build(path: path, bufferSize: 4096) { _ in true }
        #expect(index.keyframes.map(\.pts.value) == [97_200, 111_600, 126_000, 97_200, 111_600, 126_000])
        // 12 frames of 3600 ticks after the first copy's keyframes.
        #expect(index.keyframes.map(\.ticks) == [7200, 21_600, 36_000, 50_400, 64_800, 79_200])
        // From the first audio PES (7200 before the video) to the end of 24 frames of video.
        let duration = try #require(index.durationTicks)
        #expect(duration == Int64(7200 + 24 * 3600), "\(duration)")
        #expect(StreamSummary.isReset(-91) && !StreamSummary.isReset(-90) && !StreamSummary.isReset(30 * 90_000))
        #expect(StreamSummary.isReset(30 * 90_000 + 1))
    }

    @Test func sidecarRoundTripKeyedBySizeAndTime() throws {
        let bytes = StreamBuilder.typical(frames: 8)
        let path = try temporaryFile(bytes)
        let index = try TSIndex.build(path: path)
        #expect(try TSIndex(serialized: index.serialized()) == index)
        #expect(TSIndex.loadSidecar(for: path) == nil)
        try index.saveSidecar(for: path)
        #expect(TSIndex.loadSidecar(for: path) == index)
        // Appending to the media file changes its size: the sidecar no longer applies.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(bytes[0..<188]))
        try handle.close()
        #expect(TSIndex.loadSidecar(for: path) == nil)
    }

    @Test func malformedSidecarsAreRejected() throws {
        let index = try TSIndex(
            serialized: Array("tsindex 4\nsize 10\nrun 4 0 2 192\nrun 600 376 1 188\nn 0:1,256:7\nend\n".utf8))
        #expect(index.fileSize == 10)
        #expect(index.packetRuns.count == 2)
        #expect(index.spanPacketCounts.map { $0.pairs.map(\.count) } == [[1, 7]])
        let bad = [
            // Versions 1 to 3 (keyframe ticks that jump back at a time stamp reset; no packet runs; no parts; no span
            // counts) are refused, so the file is indexed again.
            "", "tsindex 1\nsize 1\nend\n", "tsindex 2\nsize 1\nend\n", "tsindex 3\nsize 1\nend\n",
            "tsindex 5\nsize 1\nend\n",
            "tsindex 4\nsize x\nend\n", "tsindex 4\nsize 1\n", "tsindex 4\nsize 1\nk 5 99999999999 0\nend\n",
            "tsindex 4\nsize 1\nbogus\nend\n",
            // Packet runs whose served offsets do not follow on, or overflow.
            "tsindex 4\nsize 1\nrun 0 188 1 188\nend\n", "tsindex 4\nsize 1\nrun 0 0 2 188\nrun 400 188 1 188\nend\n",
            "tsindex 4\nsize 1\nrun 0 0 18446744073709551615 188\nend\n", "tsindex 4\nsize 1\nrun 0 0 1\nend\n",
            "tsindex 4\nsize 1\nrun 0 0 1 190\nend\n",
            // Span counts: malformed pairs, a PID past 0x1FFF, a count too large, more spans than keyframes allow.
            "tsindex 4\nsize 1\nn 256\nend\n", "tsindex 4\nsize 1\nn 8192:1\nend\n", "tsindex 4\nsize 1\nn 1:x\nend\n",
            "tsindex 4\nsize 1\nn 1:281474976710656\nend\n", "tsindex 4\nsize 1\nn -\nn -\nend\n",
            "tsindex 4\nsize 1\nn 1:2 3:4\nend\n", "tsindex 4\nsize 1\nn 1:2,\nend\n",
        ]
        for text in bad {
            #expect(throws: TSFileError.self, "\(text)") { _ = try TSIndex(serialized: Array(text.utf8)) }
        }
    }

    @Test func indexGrowsWithTheFile() {
        let bytes = StreamBuilder.typical(frames: 12)
        var indexer = TSIndexer()
        let half = bytes.count / 2 + 77
        bytes[..<half].withUnsafeBytes { indexer.consume($0) }
        let partial = indexer.index(fileSize: UInt64(half), modificationTime: (0, 0))
        #expect(!partial.isComplete)
        #expect(partial.bytesIndexed == UInt64(half))
        #expect(partial.keyframes.count >= 1)
        bytes[half...].withUnsafeBytes { indexer.consume($0) }
        indexer.finish()
        let full = indexer.index(fileSize: UInt64(bytes.count), modificationTime: (0, 0))
        #expect(full.isComplete)
        #expect(Array(full.keyframes.prefix(partial.keyframes.count)) == partial.keyframes)
        #expect(full.keyframes.count == 3)
    }

    @Test func lastAudioPESIsMeasuredNotStepped() throws {
        // Audio PES of 3 ADTS frames (5760 ticks apart), the last one holding a single frame (1920 ticks); video
        // ends earlier. The file's end is the last audio frame's end, not one whole PES step after its start.
        var builder = StreamBuilder()
        builder.tables()
        for frame in 0..<10 { builder.video(pts: 900_000 + UInt64(frame) * 3600, keyframe: frame == 0) }
        for pes in 0..<8 { builder.audio(pts: 900_000 + UInt64(pes) * 5760, frames: pes == 7 ? 1 : 3) }
        let bytes = builder.bytes
        let expected: Int64 = 7 * 5760 + 1920
        let path = try temporaryFile(bytes)
        let index = try TSIndex.build(path: path)
        #expect(index.durationTicks == expected)
        #expect(index.streams.first { $0.pid == 0x101 }?.durationTicks == expected)
        #expect(try TSProbe.probe(path: path).durationTicks == expected, "small file: read whole")
        let probe = try TSProbe.probe(path: path, headBytes: 2 << 10, tailBytes: 2 << 10)
        #expect(probe.bytesRead < UInt64(bytes.count), "head and tail only")
        #expect(probe.durationTicks == expected, "tail window")
        // Fed by hand, then measured after finish() (what a caller that reads the file itself does).
        var indexer = TSIndexer()
        bytes.withUnsafeBytes { indexer.consume($0) }
        indexer.finish()
        let file = try FileStreamer(path: path)
        defer { file.close() }
        indexer.measureLastAudioPES(in: file)
        #expect(indexer.index(fileSize: UInt64(bytes.count), modificationTime: (0, 0)).durationTicks == expected)
        // Without the file to read again (a stream), the step between the last two PES stands in.
        var analyzer = TSAnalyzer()
        for event in demux(bytes) { analyzer.consume(event) }
        let stepped: Int64 = 7 * 5760 + 5760
        #expect(analyzer.durationTicks == stepped)
    }

    @Test func headAndTailProbeMatchesFullScan() throws {
        // Enough frames that head and tail are separate reads.
        var builder = StreamBuilder()
        builder.tables()
        for frame in 0..<400 {
            if frame % 50 == 0 { builder.tables() }
            builder.video(pts: 900_000 + UInt64(frame) * 3600, keyframe: frame % 25 == 0, padding: 600)
            builder.audio(pts: 900_000 + UInt64(frame) * 3600)
        }
        let path = try temporaryFile(builder.bytes)
        let index = try TSIndex.build(path: path)
        let probe = try TSProbe.probe(path: path, headBytes: 16 << 10, tailBytes: 16 << 10)
        #expect(probe.bytesRead == 32 << 10)
        #expect(probe.durationTicks == index.durationTicks)
        #expect(probe.firstPTS == index.firstPTS)
        #expect(probe.lastPTS?.value == 900_000 + 399 * 3600)
        #expect(probe.programs.map(\.programNumber) == [1])
    }

    @Test func notTransportStreamFile() throws {
        let path = try temporaryFile(Array(repeating: 0x20, count: 4000))
        #expect { _ = try TSIndex.build(path: path) } throws: { ($0 as? TSFileError)?.code == .notTransportStream }
        #expect { _ = try TSIndex.build(path: path + ".missing") } throws: { ($0 as? TSFileError)?.code == .io }
    }
    /// The served view of a file of 188-, 192- and 204-byte packets, beginning mid-packet and with garbage between
    /// packets, is the source's 188-byte packets, whole, in order; byte ranges map to it and back exactly.
    @Test(arguments: [188, 192, 204])
    func servedViewIsThePlainPackets(packetSize: Int) throws {
        let built = StreamBuilder.typical(frames: 12)
        let count = built.count / 188
        let plain = Array(built[..<(count * 188)])
        var file: [UInt8] = Array(repeating: 0x11, count: 100)  // the end of a packet cut off before the file began
        var expectedFileOffsets: [UInt64] = []
        for packet in 0..<count {
            if packet == count / 3 { file += Array(repeating: 0x55, count: 1000) }  // garbage between packets
            expectedFileOffsets.append(UInt64(file.count))
            if packetSize == 192 { file += [0x01, 0x02, 0x03, UInt8(packet & 0xFF)] }
            file += plain[(packet * 188)..<(packet * 188 + 188)]
            if packetSize == 204 { file += Array(repeating: 0xEE, count: 16) }
        }
        file += Array(repeating: 0x47, count: 50)  // a truncated last packet
        var indexer = TSIndexer()
        // Drip-fed in odd chunks: the runs are the same as in one shot.
        var position = 0
        while position < file.count {
            let end = min(file.count, position + 1000 + position % 777)
            file[position..<end].withUnsafeBytes { indexer.consume($0) }
            position = end
        }
        indexer.finish()
        let layout = indexer.index(fileSize: UInt64(file.count), modificationTime: (0, 0)).layout
        #expect(layout.packetSize == packetSize)
        #expect(layout.runs.count == 2)
        #expect(layout.servedLength == UInt64(count * 188))
        #expect(!layout.isIdentity)
        for (packet, offset) in expectedFileOffsets.enumerated() {
            #expect(layout.servedOffset(ofFileOffset: offset) == UInt64(packet * 188), "packet \(packet)")
            let found = try #require(layout.locate(servedOffset: UInt64(packet * 188 + 7)))
            #expect(found.packetOffset == offset && found.within == 7, "packet \(packet)")
        }
        #expect(layout.servedOffset(ofFileOffset: 0) == 0)
        #expect(layout.servedOffset(ofFileOffset: UInt64(file.count)) == layout.servedLength)
        #expect(layout.locate(servedOffset: layout.servedLength) == nil)
        // Every served range, read through the layout, is that range of the plain packets.
        for (start, length) in [(0, plain.count), (5, 400), (188 * 10 - 3, 188 * 30), (plain.count - 10, 10)] {
            var served: [UInt8] = []
            var at = UInt64(start)
            while served.count < length {
                let found = try #require(layout.locate(servedOffset: at))
                let packets = Int(min(found.packetsLeft, 7))
                let from = Int(found.packetOffset)
                let bytes = Array(file[from..<min(file.count, from + packets * packetSize)])
                let added = bytes.withUnsafeBytes {
                    layout.appendServed(
                        $0, packetSize: found.packetSize, skip: found.within, limit: length - served.count, to: &served)
                }
                #expect(added > 0)
                at += UInt64(added)
            }
            #expect(served == Array(plain[start..<(start + length)]), "\(start) + \(length)")
        }
        // The sidecar keeps the runs.
        let index = indexer.index(fileSize: UInt64(file.count), modificationTime: (0, 0))
        #expect(try TSIndex(serialized: index.serialized()) == index)
    }

    /// A program filter keeps the program's packets, drops another program's, and rewrites the PAT to name the
    /// program alone (a valid section: the demuxer reads it with no CRC error).
    @Test func programFilterKeepsOneProgram() throws {
        let plain = StreamBuilder.typical(frames: 6)
        var demuxer = Demuxer()
        _ = demuxer.feed(plain)
        _ = demuxer.finish()
        let entry = try #require(demuxer.programAssociation?.programs.first)
        let map = try #require(demuxer.programMaps[entry.programNumber])
        let filter = ProgramFilter(
            programNumber: entry.programNumber, pmtPID: entry.pmtPID, pids: map.streams.map(\.pid) + [map.pcrPID])
        // Another program's packet (PID 0x0777) after every tenth packet, and a broken packet without sync.
        var input: [UInt8] = []
        for packet in 0..<(plain.count / 188) {
            input += plain[(packet * 188)..<(packet * 188 + 188)]
            if packet % 10 == 0 { input += [0x47, 0x07, 0x77, 0x10] + Array(repeating: 0xAA, count: 184) }
        }
        input += Array(repeating: 0x00, count: 188)
        var output: [UInt8] = []
        let kept = input.withUnsafeBytes { filter.append($0, packetSize: 188, syncOffset: 0, to: &output) }
        #expect(kept == plain.count / 188 && output.count == plain.count / 188 * 188)
        var check = Demuxer()
        _ = check.feed(output)
        _ = check.finish()
        #expect(check.programAssociation?.programs == [entry])
        #expect(check.statistics.crcErrors == 0)
        #expect(check.statistics(pid: 0x0777).packets == 0)
        #expect(filter.patPacket().count == 188)
    }

    /// A 192-byte recording joined to a 188-byte one (`cat a.m2ts b.ts`): each run keeps its own packet size, and
    /// the served view is both parts' 188-byte packets.
    @Test func servedViewFollowsAPacketSizeChange() throws {
        let built = StreamBuilder.typical(frames: 12)
        let plain = Array(built[..<(built.count / 188 * 188)])
        let count = plain.count / 188
        var file: [UInt8] = []
        for packet in 0..<count {
            if packet < count / 2 { file += [0, 0, 0, 0] }
            file += plain[(packet * 188)..<(packet * 188 + 188)]
        }
        var indexer = TSIndexer()
        file.withUnsafeBytes { indexer.consume($0) }
        indexer.finish()
        let layout = indexer.index(fileSize: UInt64(file.count), modificationTime: (0, 0)).layout
        #expect(layout.runs.map(\.packetSize).first == 192 && layout.runs.map(\.packetSize).last == 188)
        var served: [UInt8] = []
        var at: UInt64 = 0
        while let found = layout.locate(servedOffset: at) {
            let from = Int(found.packetOffset)
            let bytes = Array(file[from..<(from + Int(found.packetsLeft) * found.packetSize)])
            at += UInt64(
                bytes.withUnsafeBytes {
                    layout.appendServed($0, packetSize: found.packetSize, skip: found.within, limit: .max, to: &served)
                })
        }
        // The packet where the size changes is lost to the resynchronisation at most; everything else is there.
        #expect(served.count >= plain.count - 2 * 188 && served.count % 188 == 0)
        #expect(served.prefix(188 * (count / 2 - 1)) == plain.prefix(188 * (count / 2 - 1)))
        #expect(served.suffix(188 * (count / 2 - 1)) == plain.suffix(188 * (count / 2 - 1)))
    }
}
