import Foundation
import Testing

@testable import MPEGTS

/// Silent AAC frames for every channel configuration a slate can continue (1 to 7: mono to 7.1): the table against a
/// naive model built element by element from the bit syntax (ISO/IEC 14496-3 4.4.2.1), and slates continuing
/// ffmpeg-made 5.1 and 7.1 anchors decoded by ffmpeg itself: no errors, the anchor's channel layout, silence.
@Suite(.temporaryFolders) struct SlateMultichannelTests {
    /// One configuration's raw data block, built bit by bit: per element its id (SCE 0, CPE 1, LFE 3), its instance
    /// tag, then a silent channel stream (global gain 100; long window, one band of the zero codebook; no pulse,
    /// TNS or gain control), a CPE with a common window (its one band not M/S coded); END (7) and zero padding.
    static func model(_ configuration: Int) -> [UInt8] {
        var bits: [Bool] = []
        func put(_ value: Int, _ count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> shift & 1 == 1) }
        }
        func icsInfo() {
            put(0, 1)  // ics_reserved_bit
            put(0, 2)  // window_sequence: ONLY_LONG
            put(0, 1)  // window_shape
            put(1, 6)  // max_sfb
            put(0, 1)  // predictor_data_present
        }
        func channelStream(commonWindow: Bool) {
            put(100, 8)  // global_gain
            if !commonWindow { icsInfo() }
            put(0, 4)  // sect_cb: ZERO_HCB
            put(1, 5)  // sect_len
            put(0, 3)  // pulse, TNS, gain control absent
        }
        let layouts = [1: "S", 2: "C", 3: "SC", 4: "SCS", 5: "SCC", 6: "SCCL", 7: "SCCCL"]
        var tags: [Character: Int] = [:]
        for element in layouts[configuration] ?? "" {
            put(element == "S" ? 0 : element == "C" ? 1 : 3, 3)
            put(tags[element, default: 0], 4)
            tags[element, default: 0] += 1
            if element == "C" {
                put(1, 1)  // common_window
                icsInfo()
                put(1, 2)  // ms_mask_present: per band
                put(0, 1)  // ms_used: not for the one band
                channelStream(commonWindow: true)
                channelStream(commonWindow: true)
            } else {
                channelStream(commonWindow: false)
            }
        }
        put(7, 3)  // ID_END
        while bits.count % 8 != 0 { bits.append(false) }
        return stride(from: 0, to: bits.count, by: 8).map { i in
            bits[i..<i + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
    }

    @Test func theSilentFramesAreTheBitSyntaxOfEachConfiguration() {
        #expect(Set(SlateBuilder.silentAAC.keys) == Set(1...7))
        for configuration in 1...7 {
            #expect(
                SlateBuilder.silentAAC[configuration] == Self.model(configuration), "configuration \(configuration)")
        }
    }

    /// An ffmpeg-made 2 s anchor (H.264 and AAC-LC in `layout`), then three 2 s slates continuing it: ffmpeg decodes
    /// the whole without an error, ffprobe sees the anchor's channel count on the slates alone, and they are silent.
    @Test(arguments: [("5.1", 6), ("7.1", 8)]) func multichannelAnchorsGetSilentSlatesFFmpegDecodes(
        layout: String, channels: Int
    ) async throws {
        guard let ffmpeg = ExternalProgram.find("ffmpeg"), let ffprobe = ExternalProgram.find("ffprobe") else { return }
        let folder = TemporaryFolderURLs.make(prefix: "slate-")
        let anchorFile = folder.appendingPathComponent("anchor.ts").path
        let made = try await ExternalProgram.run(
            ffmpeg,
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-filter_complex", "[1:a]pan=\(layout)|c0=c0[a]", "-map", "0:v",
                "-map", "[a]", "-t", "2", "-c:v", "libx264", "-g", "50", "-c:a", "aac", "-f", "mpegts", anchorFile,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.err)")
        let anchor = [UInt8](try Data(contentsOf: URL(fileURLWithPath: anchorFile)))
        let builder = try SlateBuilder(continuing: anchor)
        #expect(builder.audioOmitted == nil)
        #expect(
            builder.audioFrames.first.map { Array($0.dropFirst(7)) } == SlateBuilder.silentAAC[channels == 8 ? 7 : 6])
        var slates: [UInt8] = []
        for n in 0..<3 {
            slates += try #require(
                builder.continuation(durationTicks: 2 * 90_000, offsetTicks: Int64(n + 1) * 2 * 90_000))
        }
        let slatesFile = folder.appendingPathComponent("slates.ts").path
        let joinedFile = folder.appendingPathComponent("joined.ts").path
        try Data(slates).write(to: URL(fileURLWithPath: slatesFile))
        try Data(anchor + slates).write(to: URL(fileURLWithPath: joinedFile))
        let decode = try await ExternalProgram.run(ffmpeg, ["-v", "error", "-i", joinedFile, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        let probe = try await ExternalProgram.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name,channels", "-of",
                "csv=p=0", slatesFile,
            ])
        // (ffprobe lists the stream under its program too.)
        let streams = Set(probe.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(streams == ["aac,\(channels)"], "\(probe.out) \(probe.err)")
        let peak = try await ExternalProgram.decodedAudio(ffmpeg, slatesFile)?.peak
        #expect(peak == 0, "peak sample \(peak.map(String.init) ?? "none")")
    }

    /// An anchor whose audio cannot be given silence without an encoder (MPEG audio from ffmpeg):
    /// the slates say so (``SlateBuilder/audioOmitted`` names the codec and PID) and carry video only, which ffmpeg
    /// decodes without an error after the anchor. A mono/stereo AAC anchor has nothing to report.
    @Test(arguments: [("mp2", "MPEG audio")])
    func audioThatCannotBeSilencedIsReported(encoder: String, name: String) async throws {
        #expect(try SlateBuilder(continuing: StreamBuilder.typical()).audioOmitted == nil)
        guard let ffmpeg = ExternalProgram.find("ffmpeg") else { return }
        let folder = TemporaryFolderURLs.make(prefix: "slate-")
        let anchorFile = folder.appendingPathComponent("anchor.ts").path
        let made = try await ExternalProgram.run(
            ffmpeg,
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:v", "libx264", "-g", "50", "-c:a", encoder,
                "-f", "mpegts", anchorFile,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.err)")
        let anchor = [UInt8](try Data(contentsOf: URL(fileURLWithPath: anchorFile)))
        let builder = try SlateBuilder(continuing: anchor)
        #expect(
            builder.audioOmitted
                == "the anchor's audio (PID 257) is \(name): slates carry no audio (silence for it needs an encoder)")
        let slate = try #require(builder.continuation(durationTicks: 2 * 90_000, offsetTicks: 2 * 90_000))
        var demuxer = Demuxer()
        let events = demuxer.feed(slate) + demuxer.finish()
        #expect(events.pes.allSatisfy { $0.pid == 0x100 } && !events.pes.isEmpty)
        let joinedFile = folder.appendingPathComponent("joined.ts").path
        try Data(anchor + slate).write(to: URL(fileURLWithPath: joinedFile))
        let decode = try await ExternalProgram.run(ffmpeg, ["-v", "error", "-i", joinedFile, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
    }
}
