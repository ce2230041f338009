import Foundation
import Testing

@testable import FragmentedMP4

/// fMP4 slate silence on multichannel AAC (and on AC-3), read by ffmpeg: a 5.1 and a 7.1 AAC-LC fragmented MP4 made by ffmpeg
/// (94 whole frames, as a segment cut from a stream has: a file's last frame is otherwise trimmed in its trun),
/// then 94 silent frames continuing it on its own track (as a slate after that content): ffmpeg decodes the whole
/// without an error, ffprobe sees the content's channel count, and the first silent packet starts where the
/// content's audio ended (a 0-tick join) with every packet one 1024-sample frame after the one before.
@Suite(.temporaryFolders) struct SlateAudioFFmpegTests {
    @Test(arguments: [("5.1", 6), ("7.1", 8)]) func silenceAfterMultichannelContentDecodesAndJoins(
        layout: String, channels: Int
    ) async throws {
        try await check(layout: layout, channels: channels, rate: 48000, codec: "aac", samples: 96256, frame: 1024)
    }

    /// The same for AC-3 and E-AC-3 content (stereo, 5.1, mono; 48, 44.1, 32 kHz): its silent sync frames, made for
    /// its `dac3` or `dec3`, decode without an error (ffmpeg's CRC check on), in its channel count and rate, silent,
    /// 1536 ticks apart from a 0-tick join.
    @Test(arguments: [
        ("ac3", "stereo", 2, 48000), ("ac3", "5.1", 6, 44100), ("ac3", "mono", 1, 32000), ("eac3", "5.1", 6, 48000),
        ("eac3", "stereo", 2, 44100), ("eac3", "mono", 1, 32000),
    ])
    func silenceAfterAC3ContentDecodesAndJoins(codec: String, layout: String, channels: Int, rate: Int) async throws {
        // 94 frames less the encoder's 256 samples of priming.
        try await check(
            layout: layout, channels: channels, rate: rate, codec: codec, samples: 94 * 1536 - 256, frame: 1536)
    }

    /// HE-AAC with explicit signalling (ffmpeg has no HE-AAC encoder, so the content is only its init section):
    /// 94 silent frames, the core's AAC-LC blocks without SBR or PS data, decode without an error at the 48 kHz
    /// output rate (not the 24 kHz core's), in stereo (PS gives stereo from the mono core; ffmpeg also gives SBR on
    /// a mono core two channels), 2048 ticks apart, silent.
    @Test(arguments: [(5, 2), (5, 1), (29, 1)])
    func silentHEAACDecodesAtTheOutputRate(objectType: Int, configuration: Int) async throws {
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let folder = TemporaryFolderURLs.make(prefix: "fmp4-heaac-")
        let initSection = try SlateAudioTests.heAACInit(objectType: objectType, configuration: configuration)
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: initSection))
        let silence = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: 0, frames: 94, sequence: 1)
        let file = folder.appendingPathComponent("slate.mp4").path
        try Data(initSection + silence).write(to: URL(fileURLWithPath: file))
        let decode = try await ExternalProgram.run(ffmpeg, ["-v", "error", "-i", file, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        // What the decoder puts out: every decoded frame in stereo (ffmpeg gives SBR on a mono core two channels,
        // for the PS it may find), at the 48 kHz output rate.
        let decoded = try await ExternalProgram.run(
            ffprobe,
            ["-v", "error", "-select_streams", "a", "-show_entries", "frame=channels", "-of", "csv=p=0", file])
        let frames = decoded.out.split(separator: "\n").map {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: " ,"))
        }
        #expect(frames.count >= 90 && Set(frames) == ["2"], "\(Set(frames)) \(decoded.err)")
        let packets = try await ExternalProgram.run(
            ffprobe, ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts", "-of", "csv=p=0", file])
        let times = packets.out.split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        #expect(times.count == 94 && zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 2048 }, "\(times.prefix(4))")
        // Decoded to 16-bit PCM: silent, at 48 kHz, in stereo.
        let output = try #require(try await ExternalProgram.decodedAudio(ffmpeg, file))
        #expect(output.peak == 0 && output.sampleRate == 48000 && output.channels == 2, "\(output)")
    }

    func check(layout: String, channels: Int, rate: Int, codec: String, samples: Int, frame: Int64) async throws {
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let folder = TemporaryFolderURLs.make(prefix: "fmp4-slate-")
        let content = folder.appendingPathComponent("content.mp4").path
        let made = try await ExternalProgram.run(
            ffmpeg,
            [
                "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate)", "-af",
                "pan=\(layout)|c0=c0,atrim=end_sample=\(samples)", "-c:a", codec, "-movflags",
                "frag_keyframe+empty_moov+default_base_moof" + (codec == "aac" ? "" : "+delay_moov"), "-frag_duration",
                "500000", "-f", "mp4", content,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.err)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: content)))
        // The init section: the top-level boxes through the moov (32-bit sizes, as ffmpeg writes them).
        var moovEnd = 0
        while moovEnd + 8 <= bytes.count {
            let size = Int(FragmentedSlateTemplate.uint32(bytes, moovEnd))
            let type = String(decoding: bytes[(moovEnd + 4)..<(moovEnd + 8)], as: UTF8.self)
            try #require(size >= 8 && moovEnd + size <= bytes.count)
            moovEnd += size
            if type == "moov" { break }
        }
        let initSection = Array(bytes[..<moovEnd])
        let fragments = Array(bytes[moovEnd...])
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: initSection))
        if codec == "aac" { #expect(audio.channelConfiguration == (channels == 8 ? 7 : 6)) }
        let end = try #require(FragmentedSlateTemplate.audioEnd(segment: fragments, track: audio))
        let silence = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: end, frames: 94, sequence: 10_000)
        let joined = folder.appendingPathComponent("joined.mp4").path
        try Data(initSection + fragments + silence).write(to: URL(fileURLWithPath: joined))
        let decode = try await ExternalProgram.run(
            ffmpeg, ["-v", "error", "-err_detect", "crccheck", "-i", joined, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        let probe = try await ExternalProgram.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a", "-show_entries",
                "stream=codec_name,sample_rate,channels:packet=pts,duration", "-of", "csv=p=0", joined,
            ])
        let lines = probe.out.split(separator: "\n")
        let packets = lines.compactMap { line -> (pts: Int64, duration: Int64)? in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let pts = Int64(fields[0]), let duration = Int64(fields[1]) else { return nil }
            return (pts, duration)
        }
        #expect(
            // (ffprobe may end the stream's line with an empty field.)
            lines.contains {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " ,")) == "\(codec),\(rate),\(channels)"
            },
            "\(probe.out)")
        try #require(packets.count > 94, "\(probe.err)")
        let silent = packets.suffix(94)
        let last = packets[packets.count - 95]
        #expect(silent.first.map { $0.pts - (last.pts + last.duration) } == 0, "the join")
        #expect(zip(silent, silent.dropFirst()).allSatisfy { $1.pts - $0.pts == frame })
        // The silence alone (the content's init section, then the silent fragment) is silent.
        let slate = folder.appendingPathComponent("slate.mp4").path
        try Data(initSection + silence).write(to: URL(fileURLWithPath: slate))
        let peak = try await ExternalProgram.decodedAudio(ffmpeg, slate)?.peak
        #expect(peak == 0, "peak sample \(peak.map(String.init) ?? "none")")
    }
}
