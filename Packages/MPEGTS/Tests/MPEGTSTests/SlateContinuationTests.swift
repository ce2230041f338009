import Testing

@testable import MPEGTS

/// Slates that continue an anchor segment (what the ad-stripping proxy puts in place of live ad segments), made by the
/// same builder as the template's.
@Suite struct SlateContinuationTests {
    @Test func aSlateContinuesTheAnchorsProgramTimelineAndCounters() throws {
        let anchor = StreamBuilder.typical(frames: 12, startPTS: 90_000)
        let builder = try SlateBuilder(continuing: anchor)
        #expect(builder.frameTicks == 3600)
        let offset = Int64(12 * 3600)
        let slate = try #require(builder.continuation(durationTicks: 2 * 90_000, offsetTicks: offset))
        #expect(slate.count % 188 == 0)
        // Through one demuxer after the anchor: no errors, no continuity errors across the join.
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true))
        let anchorEvents = demuxer.feed(anchor)
        let events = demuxer.feed(slate) + demuxer.finish()
        #expect((anchorEvents + events).errors.isEmpty, "\((anchorEvents + events).errors)")
        #expect(demuxer.statistics.continuityErrors == 0)
        #expect(demuxer.programMaps[1]?.streams.map(\.pid) == [0x100, 0x101])
        let video = events.pes.filter { $0.pid == 0x100 && $0.pts.map { $0.value >= 97_200 + 43_200 } == true }
        let audio = events.pes.filter { $0.pid == 0x101 && $0.pts.map { $0.value >= 90_000 + 43_200 } == true }
        // 2 s at the anchor's 25 fps, from its first PTS (97200) plus the offset; every picture a keyframe.
        #expect(video.count == 50)
        #expect(video.first?.pts?.value == 97_200 + 43_200)
        #expect(zip(video, video.dropFirst()).allSatisfy { a, b in a.pts.map { $0.distance(to: b.pts ?? $0) } == 3600 })
        #expect(video.allSatisfy { $0.isKeyframe })
        // Silent audio on the anchor's audio frame grid (its 12 frames end at 113040): the grid frames that start
        // within the slot (140400 to 320400), frames 15 to 107, 93 frames, five 1024-sample frames per PES: 19.
        #expect(audio.first?.pts?.value == 113_040 + 15 * 1920)
        #expect(audio.count == 19)
        #expect(zip(audio, audio.dropFirst()).allSatisfy { a, b in a.pts.map { $0.distance(to: b.pts ?? $0) } == 9600 })
    }

    @Test func anHEVCAnchorGivesHEVCSlatesOnItsStreamType() throws {
        let anchor = StreamBuilder.typical(frames: 8, startPTS: 90_000, videoType: .hevc)
        let slate = try #require(
            try SlateBuilder(continuing: anchor).continuation(durationTicks: 90_000, offsetTicks: 8 * 3600))
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true))
        let events = demuxer.feed(slate) + demuxer.finish()
        #expect(events.errors.isEmpty)
        #expect(demuxer.programMaps[1]?.streams.first?.streamType == .hevc)
        let video = events.pes.filter { $0.pid == 0x100 }
        #expect(video.count == 25)
        #expect(video.allSatisfy { $0.isKeyframe })
    }

    @Test func whatCannotBeContinuedIsATypedErrorOrNil() throws {
        #expect(throws: MPEGTSError.self) { try SlateBuilder(continuing: [0x47, 1, 2]) }
        var builder = StreamBuilder()
        builder.tables()
        #expect(throws: MPEGTSError.self) { try SlateBuilder(continuing: builder.bytes) }
        // A template builder has no anchor to continue.
        #expect(try SlateBuilder().continuation(durationTicks: 90_000, offsetTicks: 0) == nil)
    }

    @Test func theCountersThatContinueAStreamAreThoseItsPacketizerEndedWith() {
        var builder = StreamBuilder()
        builder.packetizer = Packetizer(continuityCounters: [0x100: 9, 0x101: 15, 0: 3])
        builder.tables()
        for frame in 0..<5 {
            builder.video(pts: 90_000 + UInt64(frame) * 3600, keyframe: frame == 0)
            builder.audio(pts: 90_000 + UInt64(frame) * 1920)
        }
        let bytes = [0x00, 0x01] + builder.bytes
        #expect(TSRewriter.continuityCounters(following: bytes) == builder.packetizer.continuityCounters)
        #expect(TSRewriter.continuityCounters(following: []) == [:])
    }
}
