// Program choice in a file of several programs (issue 29, item 3): `tsplayer serve` plays the first program with
// video, or the one `--program` names, as fragmented MP4 of that program alone; an unknown number is a usage error
// that lists the programs. Checked against ffmpeg's decode of that program of the file, and m3u8lint.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct ProgramChoiceTests {
    /// Two programs, each H.264 + AAC: 1 is 320x180 at 25 fps with 48 kHz audio, 2 is 160x120 at 30 fps with
    /// 44.1 kHz audio.
    static let programs = PlaybackFixtures.make("programs-two.ts") { path in
        [
            "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
            "sine=frequency=330:sample_rate=48000", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-f",
            "lavfi", "-i", "sine=frequency=880:sample_rate=44100", "-t", "4", "-map", "0:v", "-map", "1:a", "-map",
            "2:v", "-map", "3:a", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-keyint_min", "25",
            "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "48k", "-program",
            "program_num=1:title=One:st=0:st=1", "-program", "program_num=2:title=Two:st=2:st=3", "-f", "mpegts", path,
        ]
    }

    /// Serves the file (with `--program` when given) and checks the served HLS: fMP4 of that program alone (one
    /// video and one audio codec in CODECS, its picture size), decoded by ffmpeg to the frames and samples of that
    /// program of the file, every playlist lint-clean, and the choice said on stderr.
    func checkProgram(_ number: Int, asked: Bool, resolution: String) throws {
        let file = try #require(Self.programs)
        let server = try ServerProcess(
            arguments: [file.path, "--segment-duration", "1", "-v"] + (asked ? ["--program", "\(number)"] : []))
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        _ = try waitForEndList(base + "video.m3u8")
        let text = try fetch(master)
        let variant = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? ""
        let codecs = variant.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
        let list = codecs.split(separator: ",")
        #expect(list.count == 2 && list[0].hasPrefix("avc1.") && list[1] == "mp4a.40.2", "\(text)")
        #expect(variant.contains("RESOLUTION=\(resolution)"), "\(text)")
        #expect(text.components(separatedBy: "TYPE=AUDIO").count - 1 == 1, "\(text)")
        let check = FragmentedPlaybackTests()
        for (source, served) in [("p:\(number):v", "v:0"), ("p:\(number):a", "a:0")] {
            let frames = try check.frameHashes(file.path, source)
            #expect(!frames.isEmpty)
            #expect(try check.frameHashes(master, served) == frames, "program \(number) \(source)")
        }
        try check.lintServed(master)
        #expect(server.logText.contains("program \(number) of 2 is played"), "\(server.logText)")
    }

    @Test func firstProgramWithVideoByDefault() throws {
        try checkProgram(1, asked: false, resolution: "320x180")
    }

    @Test func programAskedFor() throws {
        try checkProgram(2, asked: true, resolution: "160x120")
    }

    /// A number the file does not have: exit 64 (usage), the message lists the programs there are; nothing served.
    @Test func unknownProgramIsAUsageError() throws {
        let file = try #require(Self.programs)
        let tool = try #require(EndToEnd.product("tsplayer"))
        let result = try EndToEnd.run(tool, ["serve", file.path, "--program", "9"], timeout: 30)
        #expect(result.status == 64 && result.out.isEmpty, "\(result.status) \(result.out) \(result.err)")
        #expect(
            result.err.hasPrefix(
                "Error: \(file.path): program 9 is not in the file; its programs: 1 (h264, aac), 2 (h264, aac)\n"),
            "\(result.err)")
        let bad = try EndToEnd.run(tool, ["serve", file.path, "--program", "x"], timeout: 30)
        #expect(bad.status == 64, "\(bad.err)")
    }
}
