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

    /// Served as TS (`--container ts`): each segment is its own resource holding program 2's packets alone, every
    /// PAT naming program 2 alone; ffmpeg decodes the served HLS to program 2's frames and samples; lint-clean.
    @Test func programServedAsFilteredTS() throws {
        let file = try #require(Self.programs)
        let server = try ServerProcess(
            arguments: [file.path, "--segment-duration", "1", "--container", "ts", "--program", "2", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let playlist = try waitForEndList(base + "index.m3u8")
        let uris = playlist.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(uris.count >= 3 && uris.allSatisfy { $0.hasPrefix("program/") }, "\(playlist)")
        // The file's PIDs: program 1 has PMT 0x1000, streams 0x100 and 0x101; program 2 PMT 0x1001, 0x102, 0x103.
        var pids = Set<Int>()
        for uri in uris {
            let bytes = [UInt8](try fetchBytes(base + uri))
            #expect(!bytes.isEmpty && bytes.count % 188 == 0, "\(uri)")
            var position = 0
            while position + 188 <= bytes.count {
                #expect(bytes[position] == 0x47, "\(uri) at \(position)")
                let pid = Int(bytes[position + 1] & 0x1F) << 8 | Int(bytes[position + 2])
                pids.insert(pid)
                if pid == 0 {
                    // pointer 0, table 0, section_length 13: one program, number 2.
                    #expect(bytes[position + 7] == 13 && bytes[position + 13] == 0 && bytes[position + 14] == 2)
                }
                position += 188
            }
        }
        #expect(
            pids.isSuperset(of: [0, 0x1001, 0x102, 0x103]) && pids.isDisjoint(with: [0x1000, 0x100, 0x101]), "\(pids)")
        var text = try fetch(master)
        for _ in 0..<50 where !text.contains("I-FRAME-STREAM-INF") {
            usleep(100_000)
            text = try fetch(master)
        }
        #expect(text.contains("RESOLUTION=160x120"), "\(text)")
        // The I-frame playlist: one resource per keyframe (PAT, PMT, the picture), one picture each.
        let iFrames = try fetch(base + "iframes.m3u8")
        let iFrameURIs = iFrames.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(iFrameURIs.count >= 4 && iFrameURIs.allSatisfy { $0.hasPrefix("program-iframe/") }, "\(iFrames)")
        #expect(try decodedFrames(base + "iframes.m3u8")["video"] == iFrameURIs.count)
        let check = FragmentedPlaybackTests()
        for (source, served) in [("p:2:v", "v:0"), ("p:2:a", "a:0")] {
            let frames = try check.frameHashes(file.path, source)
            #expect(!frames.isEmpty)
            #expect(try check.frameHashes(master, served) == frames, "program 2 \(source)")
        }
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try check.lint(url) }
        #expect(server.logText.contains("TS segments carry program 2 alone"), "\(server.logText)")
    }
}
