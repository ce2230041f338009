import Testing

@testable import MPEGTS

@Suite struct DemuxerTests {
    @Test func typicalStreamEvents() throws {
        let events = demux(StreamBuilder.typical())
        #expect(events.errors.isEmpty, "\(events.errors)")
        guard case .synchronized(let size, let offset) = try #require(events.first) else {
            Issue.record("first event \(events.first.map { "\($0)" } ?? "none")")
            return
        }
        #expect(size == .standard && offset == 0)
        let pats = events.compactMap { if case .programAssociation(let pat, _) = $0 { pat } else { nil } }
        #expect(pats.count == 1, "repeated identical PAT is reported once")
        let pmts = events.compactMap { if case .programMap(let pmt, let pid, _) = $0 { (pmt, pid) } else { nil } }
        #expect(pmts.count == 1)
        #expect(pmts.first?.1 == 0x1000)
        #expect(pmts.first?.0.streams.map(\.pid) == [0x100, 0x101])
        #expect(pmts.first?.0.streams.last?.languages == ["eng"])
        let video = events.pes.filter { $0.pid == 0x100 }
        let audio = events.pes.filter { $0.pid == 0x101 }
        #expect(video.count == 12)
        #expect(audio.count == 12)
        let expectedKeyframes: [Bool] = (0..<12).map { $0 % 4 == 0 }
        #expect(video.map(\.isKeyframe) == expectedKeyframes)
        let expectedDTS: [UInt64] = (0..<12).map { 90_000 + UInt64($0) * 3600 }
        let expectedPTS: [UInt64] = expectedDTS.map { $0 + 7200 }
        #expect(video.compactMap { $0.dts?.value } == expectedDTS)
        #expect(video.compactMap { $0.pts?.value } == expectedPTS)
        #expect(audio.allSatisfy { $0.isKeyframe })
        // Offsets point at packets that start the PES on that PID.
        let bytes = StreamBuilder.typical()
        for info in video {
            let start = Int(info.offset)
            #expect(bytes[start] == 0x47 && bytes[start + 1] & 0x40 != 0 && bytes[start + 2] == 0x00)
        }
    }

    @Test func multiSectionPATAndPMTAreMerged() {
        // PAT in two sections (program 1 in section 0, program 2 in section 1); program 1's PMT in two sections
        // (video in section 0, audio in section 1). Only the complete sets are reported.
        var builder = StreamBuilder()
        func patSection(_ number: UInt8, program: UInt16, pmtPID: UInt16) -> [UInt8] {
            PSISection.make(
                tableID: 0, tableIDExtension: 7, version: 3, sectionNumber: number, lastSectionNumber: 1,
                body: [UInt8(program >> 8), UInt8(program & 0xFF), 0xE0 | UInt8(pmtPID >> 8), UInt8(pmtPID & 0xFF)])
        }
        func pmtSection(_ number: UInt8, type: UInt8, pid: UInt16) -> [UInt8] {
            PSISection.make(
                tableID: 2, tableIDExtension: 1, version: 3, sectionNumber: number, lastSectionNumber: 1,
                body: [0xE1, 0x00, 0xF0, 0x00, type, 0xE0 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0xF0, 0x00])
        }
        for _ in 0..<2 {
            builder.bytes += builder.packetizer.packets(section: patSection(0, program: 1, pmtPID: 0x1000), pid: 0)
            builder.bytes += builder.packetizer.packets(section: patSection(1, program: 2, pmtPID: 0x1001), pid: 0)
            builder.bytes += builder.packetizer.packets(section: pmtSection(0, type: 0x1B, pid: 0x100), pid: 0x1000)
            builder.bytes += builder.packetizer.packets(section: pmtSection(1, type: 0x0F, pid: 0x101), pid: 0x1000)
        }
        for frame in 0..<4 {
            builder.video(pts: 90_000 + UInt64(frame) * 3600, keyframe: frame == 0)
            builder.audio(pts: 90_000 + UInt64(frame) * 1920)
        }
        let events = demux(builder.bytes)
        #expect(events.errors.isEmpty, "\(events.errors)")
        let pats = events.compactMap { if case .programAssociation(let pat, _) = $0 { pat } else { nil } }
        #expect(pats.count == 1)
        #expect(pats.first?.programs.map(\.programNumber) == [1, 2])
        #expect(pats.first?.programs.map(\.pmtPID) == [0x1000, 0x1001])
        let pmts = events.compactMap { if case .programMap(let pmt, _, _) = $0 { pmt } else { nil } }
        #expect(pmts.count == 1)
        #expect(pmts.first?.pcrPID == 0x100)
        #expect(pmts.first?.streams.map(\.pid) == [0x100, 0x101])
        #expect(pmts.first?.streams.map(\.codec) == [.h264, .aac])
        #expect(events.pes.filter { $0.pid == 0x101 }.count == 4, "audio listed in the second PMT section is read")
        // A section missing from the set: nothing is reported from an incomplete PAT.
        var partial = StreamBuilder()
        partial.bytes += partial.packetizer.packets(section: patSection(1, program: 2, pmtPID: 0x1001), pid: 0)
        let partialEvents = demux(partial.bytes)
        #expect(!partialEvents.contains { if case .programAssociation = $0 { true } else { false } })
    }

    @Test func mpeg2KeyframesFromPictureHeaders() {
        // MPEG-2 video: I after a sequence header (keyframe), P, B, I without a sequence/GOP header (not), I after
        // a GOP header only (keyframe). The random-access indicator is never set, so the flag comes from the bytes.
        var packetizer = Packetizer()
        var bytes: [UInt8] = []
        bytes += packetizer.packets(
            section: ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
                .sectionBytes, pid: 0)
        bytes += packetizer.packets(
            section: ProgramMapTable(
                programNumber: 1, pcrPID: 0x100, streams: [ElementaryStream(streamType: .mpeg2Video, pid: 0x100)]
            ).sectionBytes, pid: 0x1000)
        let sequenceHeader: [UInt8] = [0, 0, 1, 0xB3, 0x14, 0x00, 0xF0, 0x13, 0xFF, 0xFF, 0xE0, 0x18]
        let gopHeader: [UInt8] = [0, 0, 1, 0xB8, 0x00, 0x08, 0x00, 0x00]
        func picture(type: UInt8) -> [UInt8] { [0, 0, 1, 0x00, 0x00, type << 3, 0xFF, 0xF8] + [0, 0, 1, 0x01] }
        let units: [[UInt8]] = [
            sequenceHeader + gopHeader + picture(type: 1), picture(type: 2), picture(type: 3), picture(type: 1),
            gopHeader + picture(type: 1),
        ]
        for (index, unit) in units.enumerated() {
            let header = PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: UInt64(90_000 + index * 3600)))
            bytes += packetizer.packets(pes: header, payload: unit + Array(repeating: 0x55, count: 400), pid: 0x100)
        }
        let events = demux(bytes)
        #expect(events.errors.isEmpty, "\(events.errors)")
        #expect(events.pes.map(\.isKeyframe) == [true, false, false, false, true])
        #expect(events.pes.allSatisfy { !$0.randomAccessIndicator })
        // The same, one byte at a time (a picture header split across feeds).
        let dripped = demux(bytes, chunkSizes: [1])
        #expect(dripped.pes.map(\.isKeyframe) == [true, false, false, false, true])
    }

    @Test func dripFeedGivesSameEvents() {
        let bytes = StreamBuilder.typical()
        let oneShot = demux(bytes)
        #expect(demux(bytes, chunkSizes: [1]) == oneShot, "one byte at a time")
        var generator = SplitMix64(seed: 42)
        for round in 0..<20 {
            let sizes = (0..<50).map { _ in Int.random(in: 1...700, using: &generator) }
            #expect(demux(bytes, chunkSizes: sizes) == oneShot, "round \(round) sizes \(sizes.prefix(5))")
        }
    }

    @Test(arguments: [PacketSize.standard, .m2ts, .fec])
    func packetSizesGiveSameTimestamps(size: PacketSize) {
        let plain = StreamBuilder.typical()
        let bytes = size == .standard ? plain : repacketize(plain, size: size)
        let events = demux(bytes)
        #expect(events.errors.isEmpty)
        #expect(events.pes.map(\.pts) == demux(plain).pes.map(\.pts))
        #expect(events.pes.first.map { $0.offset % Int64(size.length) } == 0)
        var generator = SplitMix64(seed: UInt64(size.length))
        let sizes = (0..<40).map { _ in Int.random(in: 1...300, using: &generator) }
        #expect(demux(bytes, chunkSizes: sizes) == events)
        #expect(demux(bytes, chunkSizes: [1]) == events)
    }

    @Test func truncatedPrefixesNeverTrap() async {
        // Every prefix demuxed, seconds in a debug build: off Swift's cooperative threads.
        await blocking {
            let bytes = Array(StreamBuilder.typical(frames: 3))
            let full = demux(bytes)
            for length in 0..<bytes.count {
                let events = demux(Array(bytes[..<length]))
                let last = events.errors.last
                if length == 0 {
                    #expect(last?.code == .noSync)
                } else if length % 188 != 0 && length > 188 * 5 {
                    #expect(events.errors.contains { $0.code == .truncated }, "prefix \(length)")
                }
                // Every PES reported from a prefix is reported the same way (or as undecided) from the whole.
                for info in events.pes {
                    #expect(full.pes.contains { $0.offset == info.offset && $0.pts == info.pts }, "prefix \(length)")
                }
            }
        }
    }

    @Test func garbageIsSkippedAndCounted() {
        let clean = StreamBuilder.typical()
        var dirty = clean
        let garbage: [UInt8] = (0..<333).map { UInt8(truncatingIfNeeded: $0 &* 7) | 0x01 }
        dirty.insert(contentsOf: garbage, at: 188 * 10)
        dirty.insert(contentsOf: [0x00, 0x47, 1, 2, 0x47], at: 188 * 20 + 333)
        var demuxer = Demuxer()
        var events = demuxer.feed(dirty)
        events += demuxer.finish()
        #expect(demuxer.statistics.syncLosses == 2)
        #expect(demuxer.statistics.skippedBytes == 338)
        #expect(demuxer.statistics.packets == Int64(clean.count / 188))
        #expect(events.pes.map(\.pts) == demux(clean).pes.map(\.pts))
        let lostAt: [Int64?] = events.errors.filter { $0.code == .syncLost }.map { $0.offset }
        let expectedLost: [Int64?] = [1880, 4093]
        #expect(lostAt == expectedLost)
        var generator = SplitMix64(seed: 7)
        let sizes = (0..<40).map { _ in Int.random(in: 1...400, using: &generator) }
        #expect(demux(dirty, chunkSizes: sizes) == events)
    }

    @Test func continuityErrorsCountedWithOffsets() {
        var bytes = StreamBuilder.typical()
        // Drop the 12th packet (a video or audio packet) entirely.
        let dropped = 12
        let droppedPID = UInt16(bytes[dropped * 188 + 1] & 0x1F) << 8 | UInt16(bytes[dropped * 188 + 2])
        bytes.removeSubrange((dropped * 188)..<((dropped + 1) * 188))
        // Duplicate packet 20 once: allowed.
        bytes.insert(contentsOf: Array(bytes[(20 * 188)..<(21 * 188)]), at: 21 * 188)
        var demuxer = Demuxer()
        let events = demuxer.feed(bytes) + demuxer.finish()
        let errors = events.errors.filter { $0.code == .continuity }
        #expect(errors.count == 1)
        #expect(errors.first?.pid == droppedPID)
        // Reported on the next packet of that PID.
        let next = (dropped..<(bytes.count / 188)).first { index in
            UInt16(bytes[index * 188 + 1] & 0x1F) << 8 | UInt16(bytes[index * 188 + 2]) == droppedPID
        }
        #expect(errors.first?.offset == next.map { Int64($0 * 188) })
        #expect(demuxer.statistics(pid: droppedPID).continuityErrors == 1)
        #expect(demuxer.statistics.firstContinuityErrors.first?.offset == next.map { Int64($0 * 188) })
    }

    /// A packet that repeats its PID's continuity counter but not its bytes is a new packet, not a duplicate (ISO/IEC
    /// 13818-1 2.4.3.3: a duplicate repeats every byte but the PCR): two recordings joined end to end meet like this
    /// one time in sixteen. It is read (the PES it starts is reported, keyframe included) and counted as one
    /// continuity error at its offset; a true duplicate is still dropped silently.
    @Test func aRepeatedCounterWithOtherBytesIsANewPacket() {
        var bytes = StreamBuilder.typical()
        let count = bytes.count / 188
        func pid(_ packet: Int) -> UInt16 {
            UInt16(bytes[packet * 188 + 1] & 0x1F) << 8 | UInt16(bytes[packet * 188 + 2])
        }
        let video = (0..<count).filter { pid($0) == 0x100 }
        // The fifth video PES's first packet (a keyframe's) gets the counter of the video packet before it; the video
        // packets after it keep counting on from there.
        let starts = video.filter { bytes[$0 * 188 + 1] & 0x40 != 0 }
        let repeated = starts[4]
        for packet in video where packet >= repeated {
            bytes[packet * 188 + 3] = bytes[packet * 188 + 3] & 0xF0 | (bytes[packet * 188 + 3] &- 1) & 0x0F
        }
        let previous = video.last { $0 < repeated }!
        #expect(bytes[previous * 188 + 3] & 0x0F == bytes[repeated * 188 + 3] & 0x0F)
        // And a true duplicate of a later packet, which is dropped without an error.
        let copied = video.last!
        bytes.insert(contentsOf: Array(bytes[(copied * 188)..<((copied + 1) * 188)]), at: (copied + 1) * 188)
        for chunkSizes in [nil, [188 * 3 + 7, 1000, 64]] {
            let events = demux(bytes, chunkSizes: chunkSizes)
            let pes = events.pes.filter { $0.pid == 0x100 }
            #expect(pes.count == 12 && pes.map(\.isKeyframe) == (0..<12).map { $0 % 4 == 0 }, "\(pes.map(\.offset))")
            #expect(pes.contains { $0.offset == Int64(repeated * 188) })
            let errors = events.errors.filter { $0.code == .continuity }
            #expect(errors.map(\.offset) == [Int64(repeated * 188)] && errors.first?.pid == 0x100, "\(errors)")
        }
    }

    @Test func ptsWrapAndHEVC() {
        let start = (UInt64(1) << 33) - 4 * 3600
        let events = demux(StreamBuilder.typical(frames: 8, startPTS: start, videoType: .hevc))
        #expect(events.errors.isEmpty)
        let video = events.pes.filter { $0.pid == 0x100 }
        #expect(video.map(\.isKeyframe) == [true, false, false, false, true, false, false, false])
        #expect(video[4].dts?.value == 0)
        #expect(video[3].dts.map { $0.distance(to: video[4].dts ?? $0) } == 3600)
    }

    @Test func versionChangeAndSeveralPrograms() {
        var builder = StreamBuilder()
        builder.tables()
        builder.video(pts: 1000, keyframe: true)
        // A second program appears, and program 1 gains a stream (version 1).
        let pat = ProgramAssociationTable(
            transportStreamID: 1, version: 1,
            programs: [.init(programNumber: 1, pmtPID: 0x1000), .init(programNumber: 2, pmtPID: 0x1001)])
        builder.bytes += builder.packetizer.packets(section: pat.sectionBytes, pid: 0)
        let pmt1 = ProgramMapTable(
            programNumber: 1, version: 1, pcrPID: 0x100,
            streams: [ElementaryStream(streamType: .h264, pid: 0x100), ElementaryStream(streamType: .ac3, pid: 0x102)])
        let pmt2 = ProgramMapTable(
            programNumber: 2, pcrPID: 0x200, streams: [ElementaryStream(streamType: .hevc, pid: 0x200)])
        builder.bytes += builder.packetizer.packets(section: pmt1.sectionBytes, pid: 0x1000)
        builder.bytes += builder.packetizer.packets(section: pmt2.sectionBytes, pid: 0x1001)
        builder.bytes += builder.packetizer.packets(
            pes: PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: UInt64(5000))),
            payload: StreamBuilder.hevcAccessUnit(keyframe: true), pid: 0x200)
        builder.bytes += builder.packetizer.packets(
            pes: PESHeader(streamID: 0xBD, pts: Timestamp(wrapping: UInt64(6000))), payload: [0x0B, 0x77, 1, 2],
            pid: 0x102)
        var demuxer = Demuxer()
        let events = demuxer.feed(builder.bytes) + demuxer.finish()
        #expect(events.errors.isEmpty)
        let maps = events.compactMap { if case .programMap(let pmt, _, _) = $0 { pmt } else { nil } }
        #expect(maps.map(\.version) == [0, 1, 0])
        #expect(demuxer.programMaps.keys.sorted() == [1, 2])
        #expect(events.pes.map(\.pid) == [0x100, 0x200, 0x102])
        #expect(events.pes.map(\.isKeyframe) == [true, true, true])
    }

    @Test func badCRCIsCountedAndNotTrusted() {
        var builder = StreamBuilder()
        builder.tables()
        var bytes = builder.bytes
        bytes[188 + 20] ^= 0xFF  // inside the PMT section
        var demuxer = Demuxer()
        let events = demuxer.feed(bytes) + demuxer.finish()
        #expect(demuxer.statistics.crcErrors == 1)
        #expect(events.errors.first?.code == .crcMismatch)
        #expect(events.errors.first?.pid == 0x1000)
        #expect(demuxer.programMaps.isEmpty)
    }

    @Test func reassemblyGivesWholePayloads() {
        var builder = StreamBuilder()
        builder.tables()
        builder.video(pts: 1000, keyframe: true, padding: 700)
        builder.audio(pts: 2000, frames: 3)
        let events = demux(builder.bytes, options: DemuxOptions(reassemblePES: true))
        let packets = events.compactMap { if case .pesPacket(let packet) = $0 { packet } else { nil } }
        #expect(
            packets.map(\.payload) == [
                StreamBuilder.h264AccessUnit(keyframe: true, padding: 700), Array(packets.last?.payload ?? []),
            ])
        #expect(packets.last?.payload.count == 81)
        #expect(packets.first?.info.isKeyframe == true)
    }

    /// The keyframe flag, on `.pes` and on the reassembled `.pesPacket`, wherever the first slice's NAL header
    /// falls: in the first TS packet (a small access unit, decided from the PES's first bytes), on the packet
    /// boundary (start code or NAL header split), or in a later packet; one shot and drip fed.
    @Test(arguments: [StreamType.h264, .hevc])
    func keyframeFlagWhereverTheSliceStarts(videoType: StreamType) async {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        await blocking {
            // The first packet carries 162 bytes of the access unit (8 bytes of adaptation field, a 14-byte PES
            // header); paddings 100...140 move the slice's start code and NAL header across that boundary.
            for padding in [0] + Array(100...140) + [400] {
                var builder = StreamBuilder()
                builder.videoType = videoType
                builder.tables()
                for frame in 0..<4 {
                    builder.video(pts: 90_000 + UInt64(frame) * 3600, keyframe: frame % 2 == 0, padding: padding)
                }
                let expected = [true, false, true, false]
                for chunks in [nil, [1], [7, 188, 13]] {
                    let events = demux(builder.bytes, chunkSizes: chunks, options: DemuxOptions(reassemblePES: true))
                    let packets = events.compactMap { if case .pesPacket(let packet) = $0 { packet } else { nil } }
                    let label = "\(videoType) padding \(padding) chunks \(String(describing: chunks))"
                    #expect(events.pes.map(\.isKeyframe) == expected, "\(label)")
                    #expect(packets.map(\.info.isKeyframe) == expected, "\(label)")
                    #expect(
                        packets.count == 4 && packets[0].payload == builder.videoUnit(keyframe: true, padding: padding))
                    #expect(events.errors.isEmpty, "\(label): \(events.errors)")
                }
            }
        }
    }

    @Test func notTransportStream() {
        let events = demux(Array(repeating: 0x00, count: 5000))
        #expect(events.errors.map(\.code) == [.noSync])
    }
}
