import HLSAdFilter
import MPEGTS
import Testing

@testable import HLSProxy

@Suite struct ProxySlateTests {
    /// The anchors' program: PAT, PMT (H.264 on 0x100 carrying the PCR, ADTS AAC on 0x101).
    static func programTables(_ p: inout Packetizer) -> [UInt8] {
        let pat = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
        let pmt = ProgramMapTable(
            programNumber: 1, pcrPID: 0x100,
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x100),
                ElementaryStream(streamType: StreamType(rawValue: 0x0F), pid: 0x101),
            ])
        return p.packets(section: pat.sectionBytes, pid: 0) + p.packets(section: pmt.sectionBytes, pid: 0x1000)
    }
    /// An IDR picture (with an SPS start), a P picture, and one stereo 48 kHz ADTS frame.
    static let idr: [UInt8] =
        [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x65] + [UInt8](repeating: 0xAB, count: 500)
    static let p1: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x41] + [UInt8](repeating: 0xCD, count: 200)
    static let adts: [UInt8] = [0xFF, 0xF1, 0x4C, 0x80, 0x02, 0x1F, 0xFC] + [UInt8](repeating: 0, count: 9)

    /// A synthetic anchor segment: PAT, PMT (H.264 on 0x100 carrying the PCR, ADTS AAC on 0x101), 50 pictures at
    /// 25 fps from PTS 900000 (the first an IDR), and stereo 48 kHz ADTS audio.
    static func anchor() -> [UInt8] {
        var p = Packetizer(continuityCounters: [0x100: 5, 0x101: 9])
        var out = programTables(&p)
        let (idr, p1, adts) = (Self.idr, Self.p1, Self.adts)
        for f in 0..<50 {
            let pts = Timestamp(wrapping: UInt64(900_000 + f * 3600))
            out += p.packets(
                pes: PESHeader(streamID: 0xE0, pts: pts), payload: f == 0 ? idr : p1, pid: 0x100,
                pcr: PCR(base: pts.value - 63_000, extension: 0), randomAccess: f == 0)
            if f % 2 == 0 {
                out += p.packets(
                    pes: PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: UInt64(900_000 + f * 3600))), payload: adts,
                    pid: 0x101)
            }
        }
        return out
    }

    @Test func theSlateContinuesTheContentTimelinePIDsAndCounters() throws {
        let anchor = Self.anchor()
        let slate = try #require(ProxySlateMaker.make(duration: 4, offset: 2, anchor: anchor))
        #expect(slate.count % 188 == 0)
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
        var video: [Timestamp] = []
        var audio: [Timestamp] = []
        var errors = 0
        var pmtPIDs: [UInt16] = []
        // Continuity is checked across the join: the anchor, then the slate, through one demuxer.
        demuxer.feed(anchor) { _ in }
        demuxer.feed(slate) { event in
            switch event {
            case .pesPacket(let packet):
                if packet.info.pid == 0x100, let pts = packet.info.pts { video.append(pts) }
                if packet.info.pid == 0x101, let pts = packet.info.pts { audio.append(pts) }
            case .programMap(let table, _, _): pmtPIDs = table.streams.map(\.pid)
            case .error: errors += 1
            default: break
            }
        }
        demuxer.finish { event in
            if case .pesPacket(let packet) = event, packet.info.pid == 0x100, let pts = packet.info.pts {
                video.append(pts)
            }
        }
        // The anchor's last PES packets complete only when the slate's first ones start.
        video.removeAll { $0.value < 1_080_000 }
        audio.removeAll { $0.value <= 1_072_800 }
        #expect(errors == 0)
        #expect(demuxer.statistics.continuityErrors == 0)
        #expect(pmtPIDs.isEmpty || pmtPIDs == [0x100, 0x101])
        // 4 s at 25 fps from the anchor's first PTS plus 2 s.
        #expect(video.count == 100)
        #expect(video.first?.value == 900_000 + 180_000)
        #expect(zip(video, video.dropFirst()).allSatisfy { $0.distance(to: $1) == 3600 })
        // Silent audio covers the same span, on the anchor's audio frame grid: its last frame starts at 1 072 800
        // and ends at 1 074 720; the first grid frame within the slate starts at 1 074 720 + 3 × 1920.
        let firstAudio = try #require(audio.first)
        #expect(firstAudio.value == 1_080_480)
        #expect(audio.count >= 37)
    }

    /// An anchor like ffmpeg's 2 s segments: 50 pictures at 25 fps from PTS 900000 and `audioFrames` AAC frames
    /// (1024 samples at 48 kHz, 1920 ticks), five to a PES packet, from `audioStart`.
    static func denseAnchor(audioFrames: Int, audioStart: Int) -> [UInt8] {
        var p = Packetizer(continuityCounters: [:])
        var out = programTables(&p)
        let (idr, p1, adts) = (Self.idr, Self.p1, Self.adts)
        var audio = 0
        for f in 0..<50 {
            let pts = 900_000 + f * 3600
            out += p.packets(
                pes: PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: UInt64(pts))), payload: f == 0 ? idr : p1,
                pid: 0x100, pcr: PCR(base: UInt64(pts - 63_000), extension: 0), randomAccess: f == 0)
            while audio < audioFrames, audioStart + audio * 1920 < pts + 3600 {
                let count = min(5, audioFrames - audio)
                out += p.packets(
                    pes: PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: UInt64(audioStart + audio * 1920))),
                    payload: Array([[UInt8]](repeating: adts, count: count).joined()), pid: 0x101)
                audio += count
            }
        }
        return out
    }

    /// The audio of a slate: each PES packet's PTS and its ADTS frame count.
    static func audioPackets(_ slate: [UInt8]) -> [(pts: Int64, frames: Int)] {
        var demuxer = Demuxer(options: DemuxOptions(reassemblePES: true))
        var packets: [(Int64, Int)] = []
        let handle: (DemuxEvent) -> Void = { event in
            guard case .pesPacket(let packet) = event, packet.info.pid == 0x101, let pts = packet.info.pts else {
                return
            }
            var frames = 0
            var i = 0
            let payload = packet.payload
            while i + 7 <= payload.count, payload[i] == 0xFF {
                let length = Int(payload[i + 3] & 0x03) << 11 | Int(payload[i + 4]) << 3 | Int(payload[i + 5] >> 5)
                guard length >= 7 else { break }
                frames += 1
                i += length
            }
            packets.append((Int64(pts.value), frames))
        }
        demuxer.feed(slate, handle)
        demuxer.finish(handle)
        return packets
    }

    /// Consecutive 2 s slates after content leave no audio hole: the first starts where the anchor's audio ended,
    /// each next one where the one before ended, each slot holds its duration's audio within a frame, and 30 slots
    /// do not drift from the video.
    @Test(arguments: [(93, 900_000), (94, 900_000), (94, 898_000), (93, 901_500)])
    func slatesContinueTheContentAudioWithoutAHole(audioFrames: Int, audioStart: Int) async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            let anchor = Self.denseAnchor(audioFrames: audioFrames, audioStart: audioStart)
            let anchorEnd = Int64(audioStart + audioFrames * 1920)
            var end = anchorEnd
            var total = 0
            for slot in 0..<30 {
                let offset = 2.0 + 2.0 * Double(slot)
                let slate = try #require(ProxySlateMaker.make(duration: 2, offset: offset, anchor: anchor))
                let packets = Self.audioPackets(slate)
                let first = try #require(packets.first, "slot \(slot) has no audio")
                #expect(
                    first.pts == end, "slot \(slot) starts its audio at \(first.pts), the audio before ends at \(end)")
                for (a, b) in zip(packets, packets.dropFirst()) { #expect(b.pts == a.pts + Int64(a.frames) * 1920) }
                let frames = packets.reduce(0) { $0 + $1.frames }
                total += frames
                let slotEnd = Int64(900_000) + Int64((offset + 2) * 90_000)
                end = first.pts + Int64(frames) * 1920
                // The slot is covered: its audio starts less than a frame away from the slot's start (the first slot's
                // where the anchor's ended) and ends at or less than a frame after the slot's end, where the next slot's
                // audio begins; so it holds the slot's 2 s within a frame (the first within two).
                let slotStart = slotEnd - 180_000
                #expect(
                    abs(first.pts - slotStart) < 1920, "slot \(slot) starts its audio at \(first.pts), at \(slotStart)")
                #expect(
                    abs(Int64(frames) * 1920 - 180_000) < (slot == 0 ? 2 : 1) * 1920, "slot \(slot): \(frames) frames")
                #expect(
                    end >= slotEnd && end - slotEnd < 1920,
                    "slot \(slot)'s audio ends at \(end), the slot at \(slotEnd)")
            }
            // No drift: 30 slots (60 s) hold 60 s of audio, give or take the frame at each end.
            #expect(abs(Int64(total) * 1920 - 60 * 90_000) < 2 * 1920, "\(total) frames in 30 slots")
            #expect(abs(end - (900_000 + 62 * 90_000)) < 1920)
        }
    }

    @Test func noAnchorOrFragmentedMP4GivesNoSlate() async {
        let slot = SlateSlot(
            mediaSequence: 1, duration: 2, anchorURI: nil, anchorMediaSequence: nil, offsetFromAnchor: 0,
            isFragmentedMP4: false)
        #expect(await ProxySlateMaker().slate(for: slot, anchor: nil) == nil)
        #expect(ProxySlateMaker.make(duration: 2, offset: 0, anchor: [0x47, 1, 2]) == nil)
        #expect(ProxySlateMaker.make(duration: -1, offset: 0, anchor: Self.anchor()) == nil)
    }

    /// The proxy says when its slates cannot carry the content's audio: a dual-mono AC-3 anchor (PMT stream type
    /// 0x81, A/52 sync frames of acmod 0, which ``SilentAC3`` does not make) is named with its PID; an AAC anchor has
    /// nothing to report, and neither has a slot without an anchor.
    @Test func slatesThatCannotCarryTheContentsAudioSaySo() async throws {
        var p = Packetizer(continuityCounters: [:])
        let pat = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
        let pmt = ProgramMapTable(
            programNumber: 1, pcrPID: 0x100,
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x100),
                ElementaryStream(streamType: StreamType(rawValue: 0x81), pid: 0x101),
            ])
        var ac3 = p.packets(section: pat.sectionBytes, pid: 0) + p.packets(section: pmt.sectionBytes, pid: 0x1000)
        for f in 0..<4 {
            let pts = UInt64(900_000 + f * 3600)
            ac3 += p.packets(
                pes: PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: pts)), payload: f == 0 ? Self.idr : Self.p1,
                pid: 0x100, pcr: PCR(base: pts - 63_000, extension: 0), randomAccess: f == 0)
            ac3 += p.packets(
                pes: PESHeader(streamID: 0xBD, pts: Timestamp(wrapping: pts)),
                payload: [0x0B, 0x77, 0, 0, 0x04, 0x40] + [UInt8](repeating: 0, count: 90), pid: 0x101)
        }
        let proxy = AdStrippingProxy(url: "http://127.0.0.1:1/live.m3u8")
        let slot = SlateSlot(
            mediaSequence: 5, duration: 2, anchorURI: "http://127.0.0.1:1/4.ts", anchorMediaSequence: 4,
            offsetFromAnchor: 0.16, isFragmentedMP4: false)
        #expect(
            await proxy.slateAudioOmission(slot, anchor: ac3)
                == "the anchor's audio (PID 257) is AC-3 in dual mono or without a readable sync frame: slates carry "
                + "no audio (silence for it needs an encoder)")
        // The slate itself is still made, video only.
        #expect(ProxySlateMaker.make(duration: 2, offset: 0.16, anchor: ac3) != nil)
        #expect(await proxy.slateAudioOmission(slot, anchor: Self.anchor()) == nil)
        #expect(await proxy.slateAudioOmission(slot, anchor: nil) == nil)
    }
}
