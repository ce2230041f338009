// A file that is several recordings (issue 29, item 2): two ffmpeg recordings joined end to end, the second on
// another program number, PMT PID and stream PIDs, with another H.264 profile, other pictures and another tone.
// `tsplayer serve` plays it as one presentation with a discontinuity at the cut; `tsinspect` reports the parts.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct JoinedRecordingTests {
    /// 4 s of H.264 High + AAC on program 1 (PIDs 0x100, 0x101), then 4 s of H.264 Main + AAC on program 2, PMT PID
    /// 0x1100, PIDs 0x200 and 0x201. The AAC has no noise substitution (`-aac_pns 0`): its decoder's noise generator
    /// runs on through a continuous decode, so the second part's samples would differ by a few LSB from its own.
    static var joined: URL? { get async { await joinedFixture.value } }
    private static let joinedFixture = SharedFixture<URL?> {
        await join(
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "4"] + FragmentedFixtures.x264
                + ["-profile:v", "high", "-c:a", "aac", "-aac_pns", "0"],
            second: ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + FragmentedFixtures.tone(550) + [
                "-t", "4",
            ]
                + FragmentedFixtures.x264
                + [
                    "-profile:v", "main", "-c:a", "aac", "-aac_pns", "0", "-mpegts_service_id", "2",
                    "-mpegts_pmt_start_pid", "0x1100",
                ]
                + ["-mpegts_start_pid", "0x200"])
    }

    /// 4 s of H.264 High + AAC padded with null packets to 6 Mbit/s (about 2.9 MB: the second part begins past the
    /// file's first 2 MiB), then 4 s of H.264 Constrained Baseline + AC-3 on the same program and PIDs (the audio
    /// PID's stream type changes).
    static var joinedPastHead: URL? { get async { await joinedPastHeadFixture.value } }
    private static let joinedPastHeadFixture = SharedFixture<URL?> {
        await join(
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "4"] + FragmentedFixtures.x264
                + ["-profile:v", "high", "-c:a", "aac", "-muxrate", "6000000"],
            second: ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + FragmentedFixtures.tone(550) + [
                "-t", "4",
            ]
                + FragmentedFixtures.x264 + ["-profile:v", "baseline", "-c:a", "ac3"],
            name: "joined-past-head")
    }

    /// The two recordings, made by ffmpeg, and the file of both (`cat a.ts b.ts`).
    static func join(first: [String], second: [String], name: String = "joined-new-program") async -> URL? {
        let url = PlaybackFixtures.folder.appendingPathComponent("\(name).ts")
        guard
            let a = await PlaybackFixtures.make("\(name)-a.ts", arguments: { first + ["-f", "mpegts", $0] }),
            let b = await PlaybackFixtures.make("\(name)-b.ts", arguments: { second + ["-f", "mpegts", $0] }),
            let partA = try? Data(contentsOf: a), let partB = try? Data(contentsOf: b)
        else { return nil }
        if !FileManager.default.fileExists(atPath: url.path) {
            guard (try? (partA + partB).write(to: url)) != nil else { return nil }
        }
        return url
    }

    static func part(_ name: String, of file: String = "joined-new-program") -> String {
        PlaybackFixtures.folder.appendingPathComponent("\(file)-\(name).ts").path
    }

    /// ffprobe's duration of a file (its format's), in seconds.
    func duration(_ path: String) async throws -> Double {
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let result = try await EndToEnd.run(
            ffprobe, ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path])
        return try #require(Double(result.out.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    func durations(_ playlist: String) -> [Double] {
        playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.compactMap {
            Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," })
        }
    }

    /// Served as TS: one presentation on the first part's program and PIDs, a discontinuity at the cut in the media
    /// and I-frame playlists, CODECS naming each codec once, the declared duration the parts' within a frame; ffmpeg
    /// decodes the served HLS to the frames and samples of the first part then the second; seeking past the cut
    /// lands in the second part; every playlist lints clean; GStreamer plays it to the end.
    @Test func servedAsOnePresentation() async throws {
        let file = try #require(await Self.joined)
        let server = try await ServerProcess(arguments: [file.path, "--segment-duration", "1", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + "index.m3u8")
        #expect(media.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(media)")
        let total = durations(media).reduce(0, +)
        let content = try await duration(Self.part("a")) + duration(Self.part("b"))
        #expect(abs(total - content) <= 0.04, "declared \(total) s, content \(content) s")
        var text = try await fetch(master)
        for _ in 0..<50 where !text.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            text = try await fetch(master)
        }
        let variant = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? ""
        let codecs = variant.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
        let list = codecs.split(separator: ",").map(String.init)
        #expect(Set(list).count == list.count && list.count == 3, "\(text)")
        #expect(list.filter { $0.hasPrefix("avc1.") }.count == 2 && list.contains("mp4a.40.2"), "\(text)")
        let iFrames = try await fetch(base + "iframes.m3u8")
        #expect(iFrames.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(iFrames)")
        let check = FragmentedPlaybackTests()
        let video = try await check.frameHashes(Self.part("a"), "v:0") + check.frameHashes(Self.part("b"), "v:0")
        #expect(video.count == 200)
        #expect(try await check.frameHashes(master, "v:0") == video)
        // Audio: every frame the same but the second part's first, which an AAC decoder overlaps with the frame
        // before it (the first part's last, where decoding the part alone overlaps it with silence).
        let first = try await check.frameHashes(Self.part("a"), "a:0")
        let second = try await check.frameHashes(Self.part("b"), "a:0")
        let served = try await check.frameHashes(master, "a:0")
        #expect(served.count == first.count + second.count && first.count > 100, "\(served.count)")
        if served.count == first.count + second.count {
            #expect(Array(served.prefix(first.count)) == first)
            #expect(Array(served.suffix(second.count - 1)) == Array(second.dropFirst()))
        }
        // Seeking to 5.5 s lands in the second part: the segment the playlist's durations put 5.5 s in decodes to the
        // second part's pictures. (ffmpeg's own -ss on the served HLS gives no picture there: its HLS reader drops
        // every packet whose time stamp, which restarts in the second part, lies before the time sought.)
        let lines = media.split(separator: "\n").map(String.init)
        var elapsed = 0.0
        var sought: String?
        for (number, line) in lines.enumerated() where line.hasPrefix("#EXTINF:") {
            let length = Double(line.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
            if elapsed <= 5.5 && 5.5 < elapsed + length {
                sought = lines[(number + 1)...].first { !$0.hasPrefix("#") }
            }
            elapsed += length
        }
        let segment = try #require(sought)
        let pictures = try await check.frameHashes(base + segment, "v:0")
        let secondPictures = try await check.frameHashes(Self.part("b"), "v:0")
        #expect(!pictures.isEmpty && pictures.allSatisfy { secondPictures.contains($0) }, "\(segment)")
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try await check.lint(url) }
        let played = try await gstreamerPlayback(master)
        #expect(played.status == 0, "\(played.log)")
        #expect(played.videoFrames == 200, "\(played.videoFrames) frames")
        #expect(abs(played.audioSeconds - content) < 0.2, "\(played.audioSeconds) s of audio")
    }

    /// A second part that begins past the file's first 2 MiB, with another H.264 profile and another audio codec,
    /// served as TS: CODECS names the codecs of both parts, each once (read from where each part begins, not from
    /// the file's head alone); the I-frame variant's CODECS names both video codecs; every playlist lints clean.
    @Test func codecsOfAPartPastTheHead() async throws {
        let file = try #require(await Self.joinedPastHead)
        let first = try #require(
            try FileManager.default.attributesOfItem(atPath: Self.part("a", of: "joined-past-head"))[.size] as? Int)
        #expect(first > 2 << 20, "the first part has \(first) bytes")
        let server = try await ServerProcess(arguments: [file.path, "--segment-duration", "1", "--container", "ts"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + "index.m3u8")
        #expect(media.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(media)")
        var text = try await fetch(master)
        for _ in 0..<50 where !text.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            text = try await fetch(master)
        }
        func codecs(_ prefix: String) -> [String] {
            let line = text.split(separator: "\n").first { $0.hasPrefix(prefix) } ?? ""
            let value = line.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
            return value.split(separator: ",").map(String.init)
        }
        let list = codecs("#EXT-X-STREAM-INF:")
        #expect(Set(list).count == list.count && list.count == 4, "\(text)")
        // High (avc1.64…) in the first part, Constrained Baseline (avc1.42…) in the second; AAC-LC, then AC-3.
        #expect(list.contains { $0.hasPrefix("avc1.64") } && list.contains { $0.hasPrefix("avc1.42") }, "\(text)")
        #expect(list.contains("mp4a.40.2") && list.contains("ac-3"), "\(text)")
        let iFrameList = codecs("#EXT-X-I-FRAME-STREAM-INF:")
        #expect(iFrameList.count == 2 && iFrameList.allSatisfy { $0.hasPrefix("avc1.") }, "\(text)")
        let check = FragmentedPlaybackTests()
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try await check.lint(url) }
    }

    /// `tsinspect --json` reports the two parts: their programs, PIDs and durations, which add up to the file's.
    @Test func tsinspectReportsTheParts() async throws {
        let file = try #require(await Self.joined)
        let tool = try #require(EndToEnd.product("tsinspect"))
        // Exit 1: the continuity counters of the PAT and SDT jump at the cut, which tsinspect reports as errors.
        let result = try await EndToEnd.run(tool, ["--json", file.path])
        #expect(result.status == 0 || result.status == 1, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let parts = try #require(json["parts"] as? [[String: Any]])
        #expect(parts.count == 2, "\(parts)")
        #expect(parts.map { $0["programNumber"] as? Int } == [1, 2])
        #expect(parts.map { $0["pmtPid"] as? Int } == [0x1000, 0x1100])
        #expect(parts.map { $0["streams"] as? [Int] } == [[0x100, 0x101], [0x200, 0x201]])
        let seconds = parts.compactMap { $0["durationSeconds"] as? Double }
        let total = try #require(json["durationSeconds"] as? Double)
        #expect(seconds.count == 2 && abs(seconds.reduce(0, +) - total) < 0.05, "\(seconds) \(total)")
        for (second, name) in zip(seconds, ["a", "b"]) {
            await #expect(abs(second - (try duration(Self.part(name)))) <= 0.04, "\(name): \(second)")
        }
        let text = try await EndToEnd.run(tool, [file.path])
        #expect(text.status == result.status)
        #expect(text.out.contains("Parts:         2 recordings joined end to end\n"), "\(text.out)")
    }
}
