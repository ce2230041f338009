import HLSAdFilter
import MPEGTS
import Testing

@testable import TSPlayerKit

@Suite struct ProxySlateTests {
    /// A synthetic anchor segment: PAT, PMT (H.264 on 0x100 carrying the PCR, ADTS AAC on 0x101), 50 pictures at
    /// 25 fps from PTS 900000 (the first an IDR), and stereo 48 kHz ADTS audio.
    static func anchor() -> [UInt8] {
        var p = Packetizer(continuityCounters: [0x100: 5, 0x101: 9])
        let pat = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
        let pmt = ProgramMapTable(
            programNumber: 1, pcrPID: 0x100,
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x100),
                ElementaryStream(streamType: StreamType(rawValue: 0x0F), pid: 0x101),
            ])
        var out = p.packets(section: pat.sectionBytes, pid: 0) + p.packets(section: pmt.sectionBytes, pid: 0x1000)
        let idr: [UInt8] =
            [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x65] + [UInt8](repeating: 0xAB, count: 500)
        let p1: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x41] + [UInt8](repeating: 0xCD, count: 200)
        let adts: [UInt8] = [0xFF, 0xF1, 0x4C, 0x80, 0x02, 0x1F, 0xFC] + [UInt8](repeating: 0, count: 9)
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
        audio.removeAll { $0.value < 1_080_000 }
        #expect(errors == 0)
        #expect(demuxer.statistics.continuityErrors == 0)
        #expect(pmtPIDs.isEmpty || pmtPIDs == [0x100, 0x101])
        // 4 s at 25 fps from the anchor's first PTS plus 2 s.
        #expect(video.count == 100)
        #expect(video.first?.value == 900_000 + 180_000)
        #expect(zip(video, video.dropFirst()).allSatisfy { $0.distance(to: $1) == 3600 })
        // Silent audio covers the same span.
        let firstAudio = try #require(audio.first)
        #expect(firstAudio.value == 1_080_000)
        #expect(audio.count >= 37)
    }

    @Test func noAnchorOrFragmentedMP4GivesNoSlate() async {
        let slot = SlateSlot(
            mediaSequence: 1, duration: 2, anchorURI: nil, anchorMediaSequence: nil, offsetFromAnchor: 0,
            isFragmentedMP4: false)
        #expect(await ProxySlateMaker().slate(for: slot, anchor: nil) == nil)
        #expect(ProxySlateMaker.make(duration: 2, offset: 0, anchor: [0x47, 1, 2]) == nil)
        #expect(ProxySlateMaker.make(duration: -1, offset: 0, anchor: Self.anchor()) == nil)
    }
}
