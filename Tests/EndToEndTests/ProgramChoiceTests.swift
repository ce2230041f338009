// Program choice in a file of several programs (issue 29, item 3): `tsplayer serve` plays the first program with
// video, or the one `--program` names, as fragmented MP4 of that program alone; an unknown number is a usage error
// that lists the programs. Checked against ffmpeg's decode of that program of the file, and m3u8lint.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct ProgramChoiceTests {
    /// Two programs, each H.264 + AAC: 1 is 320x180 at 25 fps with 48 kHz audio, 2 is 160x120 at 30 fps with
    /// 44.1 kHz audio.
    static var programs: URL? { get async { await programsFixture.value } }
    private static let programsFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("programs-two.ts") { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-f",
                "lavfi", "-i", "sine=frequency=880:sample_rate=44100", "-t", "4", "-map", "0:v", "-map", "1:a", "-map",
                "2:v", "-map", "3:a", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-keyint_min", "25",
                "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "48k", "-program",
                "program_num=1:title=One:st=0:st=1", "-program", "program_num=2:title=Two:st=2:st=3", "-f", "mpegts",
                path,
            ]
        }
    }

    /// The same two programs in 192-byte packets (M2TS: a 4-byte arrival timecode before each packet; ffmpeg writes
    /// one program only in M2TS mode, so the timecodes are put in here, one packet's time at 1 MB/s apart).
    static var programsM2TS: URL? { get async { await programsM2TSFixture.value } }
    private static let programsM2TSFixture = SharedFixture<URL?> {
        guard let source = await programs, let plain = try? Data(contentsOf: source) else { return nil }
        let url = PlaybackFixtures.folder.appendingPathComponent("programs-two.m2ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        var output = Data(capacity: plain.count / 188 * 192)
        for packet in 0..<(plain.count / 188) {
            let time = UInt32(packet * 188 * 27) & 0x3FFF_FFFF
            output.append(contentsOf: [
                UInt8(time >> 24), UInt8((time >> 16) & 0xFF), UInt8((time >> 8) & 0xFF), UInt8(time & 0xFF),
            ])
            output.append(plain[(plain.startIndex + packet * 188)..<(plain.startIndex + packet * 188 + 188)])
        }
        return (try? output.write(to: url)) == nil ? nil : url
    }

    /// Serves the file (with `--program` when given) and checks the served HLS: fMP4 of that program alone (one
    /// video and one audio codec in CODECS, its picture size), decoded by ffmpeg to the frames and samples of that
    /// program of the file, every playlist lint-clean, and the choice said on stderr.
    func checkProgram(_ number: Int, asked: Bool, resolution: String) async throws {
        let file = try #require(await Self.programs)
        let server = try await ServerProcess(
            arguments: [file.path, "--segment-duration", "1", "-v"] + (asked ? ["--program", "\(number)"] : []))
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        _ = try await waitForEndList(base + "video.m3u8")
        let text = try await fetch(master)
        let variant = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? ""
        let codecs = variant.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
        let list = codecs.split(separator: ",")
        #expect(list.count == 2 && list[0].hasPrefix("avc1.") && list[1] == "mp4a.40.2", "\(text)")
        #expect(variant.contains("RESOLUTION=\(resolution)"), "\(text)")
        #expect(text.components(separatedBy: "TYPE=AUDIO").count - 1 == 1, "\(text)")
        let check = FragmentedPlaybackTests()
        for (source, served) in [("p:\(number):v", "v:0"), ("p:\(number):a", "a:0")] {
            let frames = try await check.frameHashes(file.path, source)
            #expect(!frames.isEmpty)
            #expect(try await check.frameHashes(master, served) == frames, "program \(number) \(source)")
        }
        try await check.lintServed(master)
        #expect(server.logText.contains("program \(number) of 2 is played"), "\(server.logText)")
    }

    @Test func firstProgramWithVideoByDefault() async throws {
        try await checkProgram(1, asked: false, resolution: "320x180")
    }

    @Test func programAskedFor() async throws {
        try await checkProgram(2, asked: true, resolution: "160x120")
    }

    /// A number the file does not have: exit 64 (usage), the message lists the programs there are; nothing served.
    @Test func unknownProgramIsAUsageError() async throws {
        let file = try #require(await Self.programs)
        let tool = try #require(EndToEnd.product("tsplayer"))
        let result = try await EndToEnd.run(tool, ["serve", file.path, "--program", "9"], timeout: 30)
        #expect(result.status == 64 && result.out.isEmpty, "\(result.status) \(result.out) \(result.err)")
        #expect(
            result.err.hasPrefix(
                "Error: \(file.path): program 9 is not in the file; its programs: 1 (h264, aac), 2 (h264, aac)\n"),
            "\(result.err)")
        let bad = try await EndToEnd.run(tool, ["serve", file.path, "--program", "x"], timeout: 30)
        #expect(bad.status == 64, "\(bad.err)")
    }

    /// Served as TS (`--container ts`): each segment is its own resource holding program 2's packets alone, every
    /// PAT naming program 2 alone; ffmpeg decodes the served HLS to program 2's frames and samples; lint-clean.
    @Test func programServedAsFilteredTS() async throws {
        try await checkFilteredTS(try #require(await Self.programs))
    }

    /// The same from 192-byte packets: the segments are plain 188-byte TS of program 2 alone.
    @Test func programOfM2TSServedAsFilteredTS() async throws {
        try await checkFilteredTS(try #require(await Self.programsM2TS))
    }

    /// A GET of `url` (with `range`, a `Range` value, when given): the status, the headers (names in lower case)
    /// and the body.
    func get(_ url: String, range: String? = nil) async throws -> (
        status: Int, headers: [String: String], body: [UInt8]
    ) {
        let curl = try #require(EndToEnd.tool("curl"))
        let body = TemporaryFolders.make(prefix: "filtered-").appendingPathComponent("body").path
        let result = try await EndToEnd.run(
            curl,
            ["-sS", "--max-time", "10", "-D", "-", "-o", body] + (range.map { ["-H", "Range: \($0)"] } ?? []) + [url])
        #expect(result.status == 0, "curl \(url): \(result.err)")
        var lines = result.out.split(separator: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        lines.removeFirst(min(1, lines.count))
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (status, headers, [UInt8](try Data(contentsOf: URL(fileURLWithPath: body))))
    }

    func checkFilteredTS(_ file: URL) async throws {
        let server = try await ServerProcess(
            arguments: [file.path, "--segment-duration", "1", "--container", "ts", "--program", "2", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let playlist = try await waitForEndList(base + "index.m3u8")
        let uris = playlist.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(uris.count >= 3 && uris.allSatisfy { $0.hasPrefix("program/") }, "\(playlist)")
        let durations = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map {
            Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
        }
        #expect(durations.count == uris.count && durations.allSatisfy { $0 > 0 }, "\(playlist)")
        // The file's PIDs: program 1 has PMT 0x1000, streams 0x100 and 0x101; program 2 PMT 0x1001, 0x102, 0x103.
        var pids = Set<Int>()
        var sizes: [Int] = []
        for uri in uris {
            let whole = try await get(base + uri)
            let bytes = whole.body
            sizes.append(bytes.count)
            #expect(
                whole.status == 200 && whole.headers["content-length"] == "\(bytes.count)", "\(uri) \(whole.headers)")
            #expect(!bytes.isEmpty && bytes.count % 188 == 0 && bytes.first == 0x47, "\(uri)")
            var position = 0
            while position + 188 <= bytes.count {
                #expect(bytes[position] == 0x47, "\(uri) at \(position)")
                let pid = Int(bytes[position + 1] & 0x1F) << 8 | Int(bytes[position + 2])
                pids.insert(pid)
                if pid == 0 {
                    // pointer 0, table 0, section_length 13: one program, number 2, on PMT PID 0x1001.
                    #expect(bytes[position + 7] == 13 && bytes[position + 13] == 0 && bytes[position + 14] == 2)
                    #expect(bytes[position + 15] & 0x1F == 0x10 && bytes[position + 16] == 0x01)
                }
                position += 188
            }
            // A range inside the filtered segment is exactly those bytes of it.
            let count = bytes.count
            for (value, from, to) in [
                ("bytes=0-187", 0, 188), ("bytes=1000-\(count / 2)", 1000, count / 2 + 1),
                ("bytes=-500", count - 500, count),
                ("bytes=\(count - 189)-", count - 189, count),
            ] {
                let part = try await get(base + uri, range: value)
                #expect(part.status == 206 && part.body == Array(bytes[from..<to]), "\(uri) \(value) \(part.headers)")
                #expect(part.headers["content-range"] == "bytes \(from)-\(to - 1)/\(count)", "\(uri) \(value)")
                #expect(part.headers["content-length"] == "\(to - from)", "\(uri) \(value)")
            }
            #expect(try await get(base + uri, range: "bytes=\(count)-").status == 416, "\(uri)")
        }
        #expect(
            pids.isSuperset(of: [0, 0x1001, 0x102, 0x103]) && pids.isDisjoint(with: [0x1000, 0x100, 0x101]), "\(pids)")
        // BANDWIDTH is the peak of the filtered segments' bit rates, AVERAGE-BANDWIDTH their average (the whole
        // file's rate, both programs, is well above either).
        let variant = try await fetch(master).split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? ""
        func attribute(_ name: String) async -> Double {
            let after = [":", ","].lazy.compactMap {
                variant.components(separatedBy: $0 + name + "=").dropFirst().first
            }
            return Double(after.first?.prefix { $0.isNumber } ?? "") ?? 0
        }
        let rates = zip(sizes, durations).map { Double($0 * 8) / $1 }
        let peak = rates.max() ?? 0
        let average = Double(sizes.reduce(0, +) * 8) / durations.reduce(0, +)
        let bandwidth = await attribute("BANDWIDTH")
        #expect(bandwidth >= peak.rounded(.down) && bandwidth <= peak * 1.01 + 1, "\(variant) peak \(peak)")
        #expect(
            await abs(attribute("AVERAGE-BANDWIDTH") - average) <= average * 0.01 + 1, "\(variant) average \(average)")
        let fileRate = try #require(
            (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int).map { Double($0 * 8) / 4 })
        #expect(bandwidth < fileRate, "\(variant) file \(fileRate)")
        var text = try await fetch(master)
        for _ in 0..<50 where !text.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            text = try await fetch(master)
        }
        #expect(text.contains("RESOLUTION=160x120"), "\(text)")
        // The I-frame playlist: one resource per keyframe (PAT, PMT, the picture), one picture each.
        let iFrames = try await fetch(base + "iframes.m3u8")
        let iFrameURIs = iFrames.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(iFrameURIs.count >= 4 && iFrameURIs.allSatisfy { $0.hasPrefix("program-iframe/") }, "\(iFrames)")
        #expect(try await decodedFrames(base + "iframes.m3u8")["video"] == iFrameURIs.count)
        // The I-frame variant's BANDWIDTH is the peak of the I-frame resources' bit rates as served (each resource's
        // bits over its EXTINF duration: RFC 8216 4.3.4.2 and 4.3.4.3), within 10 % of it, not the file's ranges
        // (both programs' packets, which overstate); AVERAGE-BANDWIDTH their total bits over their total duration.
        let iFrameDurations = iFrames.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map {
            Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
        }
        #expect(iFrameDurations.count == iFrameURIs.count && iFrameDurations.allSatisfy { $0 > 0 }, "\(iFrames)")
        var iFrameSizes: [Int] = []
        for uri in iFrameURIs { iFrameSizes.append(try await get(base + uri).body.count) }
        let iFrameRates = zip(iFrameSizes, iFrameDurations).map { Double($0 * 8) / $1 }
        let iFramePeak = try #require(iFrameRates.max())
        let iFrameAverage = Double(iFrameSizes.reduce(0, +) * 8) / iFrameDurations.reduce(0, +)
        let iFrameVariant = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") } ?? ""
        func iFrameAttribute(_ name: String) -> Double {
            let after = [":", ","].lazy.compactMap {
                iFrameVariant.components(separatedBy: $0 + name + "=").dropFirst().first
            }
            return Double(after.first?.prefix { $0.isNumber } ?? "") ?? 0
        }
        let iFrameBandwidth = iFrameAttribute("BANDWIDTH")
        #expect(
            iFrameBandwidth >= iFramePeak.rounded(.down) && iFrameBandwidth <= iFramePeak * 1.1,
            "\(iFrameVariant) peak \(iFramePeak)")
        #expect(
            abs(iFrameAttribute("AVERAGE-BANDWIDTH") - iFrameAverage) <= iFrameAverage * 0.01 + 1,
            "\(iFrameVariant) average \(iFrameAverage)")
        let check = FragmentedPlaybackTests()
        for (source, served) in [("p:2:v", "v:0"), ("p:2:a", "a:0")] {
            let frames = try await check.frameHashes(file.path, source)
            #expect(!frames.isEmpty)
            #expect(try await check.frameHashes(master, served) == frames, "program 2 \(source)")
        }
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try await check.lint(url) }
        #expect(server.logText.contains("TS segments carry program 2 alone"), "\(server.logText)")
    }
}
