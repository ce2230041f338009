import Foundation
import Testing

@testable import FragmentedMP4

/// fMP4 slate silence on multichannel AAC, read by ffmpeg: a 5.1 and a 7.1 AAC-LC fragmented MP4 made by ffmpeg
/// (94 whole frames, as a segment cut from a stream has: a file's last frame is otherwise trimmed in its trun),
/// then 94 silent frames continuing it on its own track (as a slate after that content): ffmpeg decodes the whole
/// without an error, ffprobe sees the content's channel count, and the first silent packet starts where the
/// content's audio ended (a 0-tick join) with every packet one 1024-sample frame after the one before.
@Suite(.temporaryFolders) struct SlateAudioFFmpegTests {
    @Test(arguments: [("5.1", 6), ("7.1", 8)]) func silenceAfterMultichannelContentDecodesAndJoins(
        layout: String, channels: Int
    ) throws {
        guard let ffmpeg = ExternalProgram.find("ffmpeg"), let ffprobe = ExternalProgram.find("ffprobe") else { return }
        let folder = TemporaryFolderURLs.make(prefix: "fmp4-slate-")
        let content = folder.appendingPathComponent("content.mp4").path
        let made = try ExternalProgram.run(
            ffmpeg,
            [
                "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-af",
                "pan=\(layout)|c0=c0,atrim=end_sample=96256", "-c:a", "aac", "-movflags",
                "frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "500000", "-f", "mp4", content,
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
        #expect(audio.channelConfiguration == (channels == 8 ? 7 : 6))
        let end = try #require(FragmentedSlateTemplate.audioEnd(segment: fragments, track: audio))
        let silence = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: end, frames: 94, sequence: 10_000)
        let joined = folder.appendingPathComponent("joined.mp4").path
        try Data(initSection + fragments + silence).write(to: URL(fileURLWithPath: joined))
        let decode = try ExternalProgram.run(ffmpeg, ["-v", "error", "-i", joined, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        let probe = try ExternalProgram.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a", "-show_entries", "stream=channels:packet=pts,duration", "-of",
                "csv=p=0", joined,
            ])
        let lines = probe.out.split(separator: "\n")
        let packets = lines.compactMap { line -> (pts: Int64, duration: Int64)? in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let pts = Int64(fields[0]), let duration = Int64(fields[1]) else { return nil }
            return (pts, duration)
        }
        #expect(lines.contains { $0.trimmingCharacters(in: .whitespaces) == "\(channels)" }, "\(probe.out)")
        try #require(packets.count > 94, "\(probe.err)")
        let silent = packets.suffix(94)
        let last = packets[packets.count - 95]
        #expect(silent.first.map { $0.pts - (last.pts + last.duration) } == 0, "the join")
        #expect(zip(silent, silent.dropFirst()).allSatisfy { $1.pts - $0.pts == 1024 })
    }
}
