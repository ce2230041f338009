import Testing

@testable import MPEGTS

@Suite struct WritingTests {
    @Test func slateHasContinuousTimestampsAcrossLoopsAndWrap() throws {
        let builder = try SlateBuilder()
        #expect(builder.videoFrames.count == 8)
        #expect(builder.audioFrames.count >= 15)
        let start = Timestamp(wrapping: (UInt64(1) << 33) - 90_000)
        var counters: [UInt16: UInt8] = [0x100: 5, 0x101: 9, 0: 3, 0x1000: 15]
        let slate = builder.make(durationTicks: 2 * 90_000, startPTS: start, continuityCounters: &counters)
        var demuxer = Demuxer()
        let events = demuxer.feed(slate) + demuxer.finish()
        #expect(events.errors.isEmpty, "\(events.errors)")
        let video = events.pes.filter { $0.pid == 0x100 }
        let audio = events.pes.filter { $0.pid == 0x101 }
        #expect(video.count == 50)
        #expect(audio.count == 93)  // 2 s / (1024 / 48000 s), rounded down
        #expect(video.first?.pts == start)
        #expect(audio.first?.pts == start)
        for (a, b) in zip(video, video.dropFirst()) { #expect(a.pts.map { $0.distance(to: b.pts ?? $0) } == 3600) }
        for (a, b) in zip(audio, audio.dropFirst()) { #expect(a.pts.map { $0.distance(to: b.pts ?? $0) } == 1920) }
        #expect(video.map(\.isKeyframe) == (0..<50).map { $0 % 8 == 0 })
        // The counters continue from the given state: the first video packet has CC 5.
        let firstVideo = try #require(video.first)
        #expect(slate[Int(firstVideo.offset) + 3] & 0x0F == 5)
        // A second slate continues the first: no continuity errors across the join.
        let next = builder.make(
            durationTicks: 90_000, startPTS: start.advanced(by: 2 * 90_000), continuityCounters: &counters)
        var joined = Demuxer()
        let joinedEvents = joined.feed(slate + next) + joined.finish()
        #expect(joinedEvents.errors.isEmpty)
        #expect(joined.statistics.continuityErrors == 0)
        #expect(joinedEvents.pes.filter { $0.pid == 0x100 }.count == 75)
    }

    /// Template slates chained on one audio grid (`audioOrigin`): each slot carries the grid's frames that start
    /// within it, so across 30 slots (2 s, and 2.5 s and 6.006 s, which are not whole AAC frames) every join is
    /// 0 ticks, the audio never drifts from the slots, and a slot's audio ends under a frame after it; also
    /// across the 33-bit wrap. Continuity counters carry across the chain.
    @Test(arguments: [Int64(180_000), 225_000, 540_540])
    func chainedTemplateSlatesTileTheAudioGrid(slotTicks: Int64) async throws {
        // 31 slates made and demuxed: off Swift's cooperative threads.
        try await blocking {
            let builder = try SlateBuilder()
            let origin = Timestamp(wrapping: (UInt64(1) << 33) - 10 * 90_000)
            var counters: [UInt16: UInt8] = [:]
            var joined: [UInt8] = []
            var previousEnd: Timestamp?
            var audioTotal: Int64 = 0
            for slot in 0..<30 {
                let start = origin.advanced(by: Int64(slot) * slotTicks)
                let slate = builder.make(
                    durationTicks: slotTicks, startPTS: start, audioOrigin: origin, continuityCounters: &counters)
                joined += slate
                var demuxer = Demuxer()
                let audio = (demuxer.feed(slate) + demuxer.finish()).pes.filter { $0.pid == 0x101 }.compactMap(\.pts)
                let first = try #require(audio.first, "slot \(slot) has no audio")
                let last = try #require(audio.last)
                for (a, b) in zip(audio, audio.dropFirst()) { #expect(a.distance(to: b) == 1920, "slot \(slot)") }
                // The join: this slot's first frame starts where the last one's audio ended.
                if let previousEnd { #expect(previousEnd.distance(to: first) == 0, "join before slot \(slot)") }
                if slot == 0 { #expect(first == start) }
                // The slot's audio starts within a frame after its start and ends within a frame after its end.
                let end = last.advanced(by: 1920)
                #expect((0..<1920).contains(start.distance(to: first)), "slot \(slot) starts at \(first)")
                #expect(
                    (0..<1920).contains(start.advanced(by: slotTicks).distance(to: end)), "slot \(slot) ends at \(end)")
                audioTotal += Int64(audio.count) * 1920
                previousEnd = end
            }
            // No drift: 30 slots' audio is 30 slots' time within a frame.
            #expect(abs(audioTotal - 30 * slotTicks) < 1920, "\(audioTotal) ticks of audio for \(30 * slotTicks)")
            var demuxer = Demuxer()
            let events = demuxer.feed(joined) + demuxer.finish()
            #expect(events.errors.isEmpty, "\(events.errors)")
            #expect(demuxer.statistics.continuityErrors == 0)
            // The first slot alone on the grid holds the frames that start within it: ceil(slot / frame).
            var fresh: [UInt16: UInt8] = [:]
            var single = Demuxer()
            let lone = builder.make(
                durationTicks: slotTicks, startPTS: origin, audioOrigin: origin, continuityCounters: &fresh)
            let count = (single.feed(lone) + single.finish()).pes.filter { $0.pid == 0x101 }.count
            #expect(count == Int((slotTicks + 1919) / 1920))
        }
    }

    @Test func slateOnOtherPIDs() throws {
        let layout = SlateBuilder.Layout(programNumber: 7, pmtPID: 0x30, videoPID: 0x31, audioPID: 0x34)
        var counters: [UInt16: UInt8] = [:]
        let slate = try SlateBuilder().make(
            durationTicks: 3600, startPTS: Timestamp(wrapping: UInt64(0)), layout: layout, continuityCounters: &counters
        )
        var demuxer = Demuxer()
        let events = demuxer.feed(slate) + demuxer.finish()
        #expect(demuxer.programMaps[7]?.streams.map(\.pid) == [0x31, 0x34])
        #expect(events.pes.filter { $0.pid == 0x31 }.count == 1)
    }

    @Test func rewriterRemapsShiftsAndContinues() {
        let source = StreamBuilder.typical(frames: 8, startPTS: 90_000)
        let target = ProgramMapTable(
            programNumber: 3, pcrPID: 0x200,
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x200), ElementaryStream(streamType: .aacADTS, pid: 0x201),
            ])
        let offset = Int64(Timestamp.modulus) - 100_000  // moves 90000 to just below the wrap
        var rewriter = TSRewriter(
            configuration: .init(
                pidMap: [0x100: 0x200, 0x101: 0x201], timestampOffset: offset, program: target, pmtPID: 0x50),
            continuityCounters: [0x200: 11, 0x201: 2, 0: 7, 0x50: 1])
        let output = rewriter.rewrite(source)
        var demuxer = Demuxer(options: DemuxOptions(reportPCR: true))
        let events = demuxer.feed(output) + demuxer.finish()
        #expect(events.errors.isEmpty, "\(events.errors)")
        #expect(demuxer.programMaps[3] == target)
        let original = demux(source).pes
        let rewritten = events.pes
        #expect(rewritten.map(\.pid) == original.map { $0.pid + 0x100 })
        for (a, b) in zip(original, rewritten) {
            #expect(a.pts.map { $0.advanced(by: offset) } == b.pts)
            #expect(a.dts.map { $0.advanced(by: offset) } == b.dts)
            #expect(a.isKeyframe == b.isKeyframe)
        }
        // PCRs moved by the same time, in 27 MHz.
        let originalPCR = demux(source, options: DemuxOptions(reportPCR: true)).compactMap { event -> PCR? in
            if case .pcr(let pcr, _, _) = event { pcr } else { nil }
        }
        let rewrittenPCR = events.compactMap { event -> PCR? in if case .pcr(let pcr, _, _) = event { pcr } else { nil }
        }
        #expect(rewrittenPCR == originalPCR.map { $0.advanced(by: offset * 300) })
        #expect(!rewrittenPCR.isEmpty)
        // Continuity counters continue from the given state.
        let firstVideo = output.indices.first { index in
            index % 188 == 0 && output[index + 1] & 0x1F == 0x02 && output[index + 2] == 0x00
        }
        #expect(firstVideo.map { output[$0 + 3] & 0x0F } == 11)
        #expect(output.count % 188 == 0)
    }
}
