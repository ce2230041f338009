import Foundation
import Testing

@testable import MPEGTS

/// Silent AC-3 and E-AC-3 frames (``SilentAC3``, ``SilentEAC3``): each rate, bit rate or size and layout gives a frame
/// of the right length whose CRCs check, whose header reads back; ffmpeg decodes them with its CRC check on, without a
/// word, as silence of the right channel count and rate; and TS slates continuing an ffmpeg-made AC-3 or E-AC-3
/// anchor carry them on the anchor's own grid, joining with no audio hole.
@Suite(.temporaryFolders) struct SilentAC3Tests {
    /// The remainder of A/52's CRC over `bytes`, computed bit by bit from the generator x^16 + x^15 + x^2 + 1.
    static func remainder(_ bytes: ArraySlice<UInt8>) -> Int {
        var register = 0
        for byte in bytes {
            for shift in stride(from: 7, through: 0, by: -1) {
                let top = (register >> 15 & 1) ^ (Int(byte) >> shift & 1)
                register = (register << 1) & 0xFFFF
                if top == 1 { register ^= 0x8005 }
            }
        }
        return register
    }

    @Test func everyRateBitRateAndLayoutGivesAFrameWhoseCRCsCheck() async throws {
        // Every code's frame, its CRCs checked bit by bit: off Swift's cooperative threads.
        try await blocking {
            for rateCode in 0..<3 {
                for sizeCode in 0..<38 {
                    for mode in 1...7 {
                        for lfe in [false, true] {
                            let format = SilentAC3(
                                sampleRateCode: rateCode, frameSizeCode: sizeCode, codingMode: mode, lfe: lfe)
                            let name = "fscod \(rateCode) frmsizecod \(sizeCode) acmod \(mode) lfe \(lfe)"
                            let frame = try #require(format.frame, "\(name)")
                            let layout = try #require(AudioFrameLayout.ac3(frame, at: 0))
                            #expect(frame.count == layout.length && layout.samples == 1536, "\(name)")
                            let words = frame.count / 2
                            let fiveEighths = (words / 2 + words / 8) * 2
                            #expect(Self.remainder(frame[2..<fiveEighths]) == 0, "CRC1 of \(name)")
                            #expect(Self.remainder(frame[fiveEighths...]) == 0, "CRC2 of \(name)")
                            #expect(SilentAC3(header: frame) == format, "\(name)")
                        }
                    }
                }
            }
            // Dual mono and reserved codes have no frame.
            #expect(SilentAC3(sampleRateCode: 0, frameSizeCode: 0, codingMode: 0, lfe: false).frame == nil)
            #expect(SilentAC3(sampleRateCode: 3, frameSizeCode: 0, codingMode: 2, lfe: false).frame == nil)
            #expect(SilentAC3(sampleRateCode: 0, frameSizeCode: 38, codingMode: 2, lfe: false).frame == nil)
            #expect(SilentAC3(header: [0x0B, 0x77, 0, 0, 0, 16 << 3, 0x40, 0]) == nil, "E-AC-3 (bsid 16) is not AC-3")
        }
    }

    @Test func everyEAC3RateSizeAndLayoutGivesAFrameWhoseCRCChecks() async throws {
        // Every code's frame, its CRCs checked bit by bit: off Swift's cooperative threads.
        try await blocking {
            for rateCode in 0..<3 {
                for bytes in [128, 256, 770, 1536, 4096] {
                    for mode in 1...7 {
                        for lfe in [false, true] {
                            let format = SilentEAC3(
                                sampleRateCode: rateCode, frameBytes: bytes, codingMode: mode, lfe: lfe)
                            let name = "fscod \(rateCode) \(bytes) bytes acmod \(mode) lfe \(lfe)"
                            let frame = try #require(format.frame, "\(name)")
                            let layout = try #require(AudioFrameLayout.ac3(frame, at: 0))
                            #expect(frame.count == bytes && layout.length == bytes && layout.samples == 1536, "\(name)")
                            #expect(layout.sampleRate == format.sampleRate, "\(name)")
                            #expect(Self.remainder(frame[2...]) == 0, "CRC of \(name)")
                            #expect(SilentEAC3(header: frame) == format, "\(name)")
                            #expect(
                                SilentAC3(header: frame) == nil && SlateBuilder.hasDependentSubstream(frame) == false)
                        }
                    }
                }
            }
            #expect(SilentEAC3(sampleRateCode: 0, frameBytes: 1536, codingMode: 0, lfe: false).frame == nil)
            #expect(SilentEAC3(sampleRateCode: 3, frameBytes: 1536, codingMode: 2, lfe: false).frame == nil)
            #expect(SilentEAC3(sampleRateCode: 0, frameBytes: 1535, codingMode: 2, lfe: false).frame == nil)
            // Too small for 5.1's blocks.
            #expect(SilentEAC3(sampleRateCode: 0, frameBytes: 64, codingMode: 7, lfe: true).frame == nil)
            // A dependent substream's header is not one to continue, and a payload with one is seen.
            var dependent = try #require(
                SilentEAC3(sampleRateCode: 0, frameBytes: 256, codingMode: 2, lfe: false).frame)
            dependent[2] |= 0x40
            #expect(SilentEAC3(header: dependent) == nil)
            let independent = try #require(
                SilentEAC3(sampleRateCode: 0, frameBytes: 256, codingMode: 7, lfe: true).frame)
            #expect(SlateBuilder.hasDependentSubstream(independent + dependent))
            // A frame of fewer blocks stands for its share of 1536 samples: two blocks of 256 bytes, 768 for six.
            var twoBlocks = independent
            twoBlocks[4] = twoBlocks[4] & 0xCF | 1 << 4
            #expect(SilentEAC3(header: twoBlocks)?.frameBytes == 768)
        }
    }

    /// 100 frames of each rate and layout in a raw `.ac3` file.
    @Test(arguments: [(0, 48000), (1, 44100), (2, 32000)])
    func ffmpegDecodesTheFramesAsSilenceWithItsCRCCheckOn(rateCode: Int, rate: Int) async throws {
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let folder = TemporaryFolderURLs.make(prefix: "ac3-")
        for (mode, lfe, channels) in [(1, false, 1), (2, false, 2), (7, true, 6)] {
            // 192 kbit/s (a 44.1 kHz frame of the larger size).
            let format = SilentAC3(sampleRateCode: rateCode, frameSizeCode: 21, codingMode: mode, lfe: lfe)
            let file = folder.appendingPathComponent("silent-\(mode).ac3").path
            try Data([[UInt8]](repeating: try #require(format.frame), count: 100).flatMap { $0 })
                .write(to: URL(fileURLWithPath: file))
            let decode = try await ExternalProgram.run(
                ffmpeg, ["-v", "error", "-err_detect", "crccheck+bitstream+careful", "-i", file, "-f", "null", "-"])
            #expect(decode.status == 0 && decode.err.isEmpty, "acmod \(mode) at \(rate): \(decode.err)")
            let probe = try await ExternalProgram.run(
                ffprobe,
                ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", file])
            #expect(probe.out.trimmingCharacters(in: .whitespacesAndNewlines) == "ac3,\(rate),\(channels)")
            let peak = try await ExternalProgram.decodedAudio(ffmpeg, file)?.peak
            #expect(peak == 0, "acmod \(mode) at \(rate): peak sample \(peak.map(String.init) ?? "none")")
        }
    }

    /// The same for E-AC-3: 100 frames of each rate and layout in a raw `.eac3` file (768 bytes, 384 kbit/s at 48
    /// kHz).
    @Test(arguments: [(0, 48000), (1, 44100), (2, 32000)])
    func ffmpegDecodesTheEAC3FramesAsSilenceWithItsCRCCheckOn(rateCode: Int, rate: Int) async throws {
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let folder = TemporaryFolderURLs.make(prefix: "eac3-")
        for (mode, lfe, channels) in [(1, false, 1), (2, false, 2), (7, true, 6)] {
            let format = SilentEAC3(sampleRateCode: rateCode, frameBytes: 768, codingMode: mode, lfe: lfe)
            let file = folder.appendingPathComponent("silent-\(mode).eac3").path
            try Data([[UInt8]](repeating: try #require(format.frame), count: 100).flatMap { $0 })
                .write(to: URL(fileURLWithPath: file))
            let decode = try await ExternalProgram.run(
                ffmpeg, ["-v", "error", "-err_detect", "crccheck+bitstream+careful", "-i", file, "-f", "null", "-"])
            #expect(decode.status == 0 && decode.err.isEmpty, "acmod \(mode) at \(rate): \(decode.err)")
            let probe = try await ExternalProgram.run(
                ffprobe,
                ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", file])
            #expect(probe.out.trimmingCharacters(in: .whitespacesAndNewlines) == "eac3,\(rate),\(channels)")
            let peak = try await ExternalProgram.decodedAudio(ffmpeg, file)?.peak
            #expect(peak == 0, "acmod \(mode) at \(rate): peak sample \(peak.map(String.init) ?? "none")")
        }
    }

    /// ffprobe's audio packets of a TS file: PTS and duration in 90 kHz ticks.
    static func audioPackets(_ ffprobe: URL, _ file: String) async throws -> [(pts: Int64, duration: Int64)] {
        let result = try await ExternalProgram.run(
            ffprobe,
            ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts,duration", "-of", "csv=p=0", file])
        return result.out.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let pts = Int64(fields[0]), let duration = Int64(fields[1]) else { return nil }
            return (pts, duration)
        }
    }

    /// An ffmpeg-made 2 s anchor (H.264 and AC-3 or E-AC-3 in `layout` at `rate`), then three 2 s slates continuing
    /// it: the slates carry the anchor's codec, rate and channels on its PID, ffmpeg decodes anchor and slates joined without
    /// an error, the slates are silent, the audio joins with no gap (anchor to slate, slate to slate) and each slot
    /// holds 2 s of audio within one frame.
    @Test(arguments: [
        ("ac3", "stereo", 48000, 2), ("ac3", "5.1", 44100, 6), ("ac3", "mono", 32000, 1), ("eac3", "5.1", 48000, 6),
        ("eac3", "stereo", 44100, 2),
    ])
    func ac3AnchorsGetSilentSlatesThatJoinWithoutAHole(codec: String, layout: String, rate: Int, channels: Int)
        async throws
    {
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let folder = TemporaryFolderURLs.make(prefix: "slate-ac3-")
        let anchorFile = folder.appendingPathComponent("anchor.ts").path
        let made = try await ExternalProgram.run(
            ffmpeg,
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=\(rate)", "-filter_complex", "[1:a]pan=\(layout)|c0=c0[a]", "-map",
                "0:v", "-map", "[a]", "-t", "2", "-c:v", "libx264", "-g", "50", "-c:a", codec, "-f", "mpegts",
                anchorFile,
            ])
        try #require(made.status == 0, "ffmpeg: \(made.err)")
        let anchor = [UInt8](try Data(contentsOf: URL(fileURLWithPath: anchorFile)))
        let builder = try SlateBuilder(continuing: anchor)
        #expect(builder.audioOmitted == nil)
        #expect(builder.samplesPerFrame == 1536 && builder.sampleRate == rate)
        var slates: [[UInt8]] = []
        for n in 0..<3 {
            slates.append(
                try #require(builder.continuation(durationTicks: 2 * 90_000, offsetTicks: Int64(n + 1) * 2 * 90_000)))
        }
        var files: [String] = []
        for (n, slate) in slates.enumerated() {
            files.append(folder.appendingPathComponent("slate\(n).ts").path)
            try Data(slate).write(to: URL(fileURLWithPath: files[n]))
        }
        let joinedFile = folder.appendingPathComponent("joined.ts").path
        try Data(anchor + slates.flatMap { $0 }).write(to: URL(fileURLWithPath: joinedFile))
        let decode = try await ExternalProgram.run(
            ffmpeg, ["-v", "error", "-err_detect", "crccheck", "-i", joinedFile, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        let slatesFile = folder.appendingPathComponent("slates.ts").path
        try Data(slates.flatMap { $0 }).write(to: URL(fileURLWithPath: slatesFile))
        let probe = try await ExternalProgram.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name,sample_rate,channels,id",
                "-of", "csv=p=0", slatesFile,
            ])
        let streams = Set(probe.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(streams == ["\(codec),\(rate),\(channels),0x101"], "\(probe.out) \(probe.err)")
        let peak = try await ExternalProgram.decodedAudio(ffmpeg, slatesFile)?.peak
        #expect(peak == 0, "peak sample \(peak.map(String.init) ?? "none")")

        // The joins and each slot's audio, as the AAC slates' end-to-end test measures them.
        let frame = Int64(1536 * 90_000 / rate)
        var previousEnd = try await #require(Self.audioPackets(ffprobe, anchorFile).last.map { $0.pts + $0.duration })
        for (n, file) in files.enumerated() {
            let packets = try await Self.audioPackets(ffprobe, file)
            let first = try #require(packets.first, "slate \(n) has no audio")
            // Within the rounding of a PTS and of ffprobe's whole-tick frame duration (3134.69 ticks at 44.1 kHz).
            #expect(abs(first.pts - previousEnd) <= 2, "slate \(n) starts \(first.pts - previousEnd) ticks off")
            let sum = packets.reduce(Int64(0)) { $0 + $1.duration }
            #expect(abs(sum - 2 * 90_000) < frame, "slate \(n) holds \(sum) ticks of audio")
            previousEnd = try #require(packets.last.map { $0.pts + $0.duration })
        }
    }
}
