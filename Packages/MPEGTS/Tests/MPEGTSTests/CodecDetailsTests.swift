import Testing

@testable import MPEGTS

private func bytes(hex: String) -> [UInt8] {
    var output: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        output.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return output
}

@Suite struct CodecDetailsTests {
    /// x264 SPS of a 320x240 25 fps High profile level 1.3 stream (with emulation prevention bytes).
    static let h264SPS = "6764000dacd94141fb011000000300100000030320f142996000"
    /// x265 SPS of a 320x240 Main profile level 2 stream.
    static let hevcSPS = "42010101600000030090000003000003003ca00a080f16595952930bc05a02000003000200000300321000"

    @Test func h264SPS() throws {
        let payload = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1] + bytes(hex: Self.h264SPS) + [0, 0, 1, 0x68, 0xEB]
        let details = try #require(CodecDetails.parse(codec: .h264, payload: payload))
        #expect(details.codecString == "avc1.64000d")
        #expect(details.profile == 100 && details.level == 13)
        #expect(details.width == 320 && details.height == 240)
        #expect(details.frameRate == 25)
    }

    @Test func hevcSPS() throws {
        let payload = [0, 0, 0, 1] + bytes(hex: Self.hevcSPS)
        let details = try #require(CodecDetails.parse(codec: .hevc, payload: payload))
        #expect(details.codecString == "hvc1.1.6.L60.90")
        #expect(details.profile == 1 && details.level == 60)
        #expect(details.width == 320 && details.height == 240)
        // x265's VUI: num_units_in_tick 1, time_scale 25.
        #expect(details.frameRate == 25)
        // Every prefix: the frame rate is either the right one or absent, and size and profile stay.
        let sps = bytes(hex: Self.hevcSPS)
        for length in 20..<sps.count {
            let cut = CodecDetails.parse(codec: .hevc, payload: [0, 0, 1] + sps[..<length])
            #expect(cut?.frameRate == nil || cut?.frameRate == 25, "prefix \(length)")
        }
    }

    @Test func audioHeaders() throws {
        // ADTS: AAC LC, 48 kHz, 2 channels.
        let adts = try #require(CodecDetails.parse(codec: .aac, payload: [0xFF, 0xF1, 0x4C, 0x80, 0x03, 0x7F, 0xFC]))
        #expect(adts.codecString == "mp4a.40.2")
        #expect(adts.sampleRate == 48000 && adts.channels == 2)
        // AC-3 from ffmpeg: 48 kHz mono.
        let ac3 = try #require(CodecDetails.parse(codec: .ac3, payload: bytes(hex: "0b77480d0c402f842bc1c77aaf5e1be7")))
        #expect(ac3.codecString == "ac-3")
        #expect(ac3.sampleRate == 48000 && ac3.channels == 1)
        #expect(CodecDetails.parse(codec: .aac, payload: [0xFF, 0xF1]) == nil)
    }

    @Test func truncatedParameterSetsNeverTrap() {
        let sps = bytes(hex: Self.h264SPS)
        for length in 0..<sps.count {
            _ = CodecDetails.parse(codec: .h264, payload: [0, 0, 1] + sps[..<length])
        }
        let hevc = bytes(hex: Self.hevcSPS)
        for length in 0..<hevc.count {
            _ = CodecDetails.parse(codec: .hevc, payload: [0, 0, 1] + hevc[..<length])
        }
    }

    @Test func demuxerReportsDetails() {
        var builder = StreamBuilder()
        builder.tables()
        let unit = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1] + bytes(hex: Self.h264SPS) + [0, 0, 1, 0x65, 0x88, 0x84]
        builder.bytes += builder.packetizer.packets(
            pes: PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: UInt64(100))), payload: unit, pid: 0x100)
        builder.audio(pts: 100)
        builder.video(pts: 3700, keyframe: false)
        let events = demux(builder.bytes)
        let details = events.compactMap { event -> (UInt16, String?)? in
            if case .codecDetails(let details, let pid) = event { (pid, details.codecString) } else { nil }
        }
        #expect(details.map(\.0) == [0x101, 0x100])
        #expect(details.map(\.1) == ["mp4a.40.2", "avc1.64000d"])
    }
}
