// Configuration changes part way through a stream: what a later part's own sample entry values are
// (TSProgramLayout.codecs(limit:read:)), and TSRemuxer's refusal of a change its one sample entry per track cannot
// describe, naming the PID and the byte offset.
import MPEGTS
import Testing

@testable import FragmentedMP4

@Suite struct ConfigurationChangeTests {
    /// The whole of `ts` remuxed; the error thrown, if any.
    func remux(_ bytes: [UInt8]) throws -> FragmentedMP4Error? {
        let remuxer = TSRemuxer(layout: try TSProgramLayout(head: bytes))
        do {
            try remuxer.remux(
                fileSize: Int64(bytes.count),
                read: { offset, length in
                    guard offset < Int64(bytes.count) else { return [] }
                    return Array(bytes[Int(offset)..<min(bytes.count, Int(offset) + length)])
                }, write: { _ in })
        } catch let error as FragmentedMP4Error {
            return error
        }
        return nil
    }

    /// An ADTS frame, AAC LC at 48 kHz, with `channels` (1 or 2) and a 2-byte body.
    func adts(channels: UInt8, _ body: UInt8) -> [UInt8] {
        let frame = adtsFrame([body, 1])
        return [frame[0], frame[1], frame[2], (frame[3] & 0x3F) | (channels << 6)] + frame[4...]
    }

    @Test func anAACChannelChangeIsReadAndRefusedWithItsOffset() throws {
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .aacADTS, pid: 0x101)])
        for number in 0..<4 {
            ts.pes(pid: 0x101, streamID: 0xC0, pts: UInt64(number) * 1920, payload: adts(channels: 2, UInt8(number)))
        }
        let change = ts.bytes.count
        for number in 4..<8 {
            ts.pes(pid: 0x101, streamID: 0xC0, pts: UInt64(number) * 1920, payload: adts(channels: 1, UInt8(number)))
        }
        let layout = try TSProgramLayout(head: Array(ts.bytes[..<change]))
        guard case .aac(let first) = try #require(layout.codecs[0x101]) else { return #expect(Bool(false)) }
        #expect(first.channelConfiguration == 2)
        // From the change on, in reads of any size: the later part's own configuration.
        let later = Array(ts.bytes[change...])
        var asked: [Int] = []
        let found = layout.codecs(limit: 1 << 20) { offset, length in
            asked.append(offset)
            return Array(later[min(offset, later.count)..<min(later.count, offset + length)])
        }
        guard case .aac(let second) = try #require(found[0x101]) else { return #expect(Bool(false)) }
        #expect(second.channelConfiguration == 1 && !found[0x101]!.hasSameConfiguration(as: layout.codecs[0x101]!))
        #expect(asked == [0, later.count], "reads follow on until the end: \(asked)")
        #expect(layout.codecs(limit: 1 << 20) { _, _ in [] }.isEmpty)
        let error = try #require(try remux(ts.bytes))
        #expect(error.code == .configurationChange && error.offset == change, "\(error)")
        #expect(
            error.detail.hasPrefix("PID 257 (aac): the audio configuration changes at byte offset \(change) "),
            "\(error.detail)")
        // Without the change, no refusal.
        #expect(try remux(Array(ts.bytes[..<change])) == nil)
    }

    /// Frames whose configuration differs from the sample entry's (stereo in a mono track: a later range's frames
    /// muxed before its first keyframe) are left out and counted; the frame before each gap lasts the gap's time
    /// too, so the frames after it keep their decode times (inside a fragment audio runs on frame by frame).
    @Test func audioFramesOfAnotherConfigurationAreLeftOutAndTheRestKeepTheirTimes() throws {
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .aacADTS, pid: 0x101)])
        for number in 0..<3 {
            ts.pes(pid: 0x101, streamID: 0xC0, pts: UInt64(number) * 1920, payload: adts(channels: 1, UInt8(number)))
        }
        let mono = ts.bytes.count
        // A stereo PES of two frames; then a PES with a stereo frame between two mono ones.
        ts.pes(pid: 0x101, streamID: 0xC0, pts: 3 * 1920, payload: adts(channels: 2, 3) + adts(channels: 2, 4))
        ts.pes(
            pid: 0x101, streamID: 0xC0, pts: 5 * 1920,
            payload: adts(channels: 1, 5) + adts(channels: 2, 6) + adts(channels: 1, 7))
        let layout = try TSProgramLayout(head: Array(ts.bytes[..<mono]))
        var fragmenter = try layout.fragmenter()
        fragmenter.beginRange(start: 0, end: Int64(ts.bytes.count))
        fragmenter.feed(ts.bytes)
        fragmenter.finish()
        #expect(fragmenter.otherConfigurationFrames == [0x101: 3])
        let fragments = fragmenter.takeFragments(
            timeline: TSTimeline(anchor: Timestamp(wrapping: UInt64(0)), anchorTime: 0))
        let fragment: TrackFragment = try #require(fragments[0x101])
        // The five mono frames' bodies (ADTS headers stripped), each at its own time (frame number x 1024 at 48 kHz).
        #expect(fragment.samples.map(\.data) == [[0, 1], [1, 1], [2, 1], [5, 1], [7, 1]])
        #expect(fragment.baseMediaDecodeTime == 0)
        let starts = fragment.samples.indices.map { index in
            fragment.samples[..<index].reduce(UInt64(0)) { $0 + UInt64($1.duration) }
        }
        #expect(starts == [0, 1024, 2048, 5 * 1024, 7 * 1024], "\(fragment.samples.map(\.duration))")
        #expect(fragment.samples.last?.duration == 1024)
    }

    @Test func anHEVCParameterSetChangeIsRefusedAndH264IsNot() throws {
        let idr: [UInt8] = [0x26, 0x01, 0xAF, 0x10]
        let otherPPS: [UInt8] = [0x44, 0x01, 0xC1, 0x73, 0xB4, 0x62, 0x40]
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .hevc, pid: 0x200)])
        ts.pes(
            pid: 0x200, streamID: 0xE0, pts: 900_000,
            payload: annexB([Fixtures.hevcVPS, Fixtures.hevcSPS, Fixtures.hevcPPS, idr]))
        // The same parameter sets again: no change.
        ts.pes(
            pid: 0x200, streamID: 0xE0, pts: 903_600,
            payload: annexB([Fixtures.hevcVPS, Fixtures.hevcSPS, Fixtures.hevcPPS, idr]))
        let same = try remux(ts.bytes)
        #expect(same == nil, "\(String(describing: same))")
        let change = ts.bytes.count
        ts.pes(
            pid: 0x200, streamID: 0xE0, pts: 907_200,
            payload: annexB([Fixtures.hevcVPS, Fixtures.hevcSPS, otherPPS, idr]))
        let error = try #require(try remux(ts.bytes))
        #expect(error.code == .configurationChange && error.offset == change, "\(error)")
        #expect(error.detail.hasPrefix("PID 512 (hevc): the parameter sets change at byte offset \(change) "))

        // H.264 keeps its parameter sets in the samples: another PPS is no refusal.
        var h264 = TSBuilder(streams: [ElementaryStream(streamType: .h264, pid: 0x100)])
        let slice: [UInt8] = [0x65, 0x88, 0x84, 0x21]
        h264.pes(pid: 0x100, streamID: 0xE0, pts: 0, payload: annexB([Fixtures.h264SPS, Fixtures.h264PPS, slice]))
        h264.pes(
            pid: 0x100, streamID: 0xE0, pts: 3600, payload: annexB([Fixtures.h264SPS, [0x68, 0xCE, 0x38], slice]))
        #expect(try remux(h264.bytes) == nil)
    }
}
