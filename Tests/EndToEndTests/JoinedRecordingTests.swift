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

    /// The same join in HEVC (x265, the same settings on both sides), which `auto` serves as fragmented MP4.
    static var joinedHEVC: URL? { get async { await joinedHEVCFixture.value } }
    private static let joinedHEVCFixture = SharedFixture<URL?> {
        await join(
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "4"]
                + FragmentedFixtures.x265 + ["-c:a", "aac", "-aac_pns", "0"],
            second: FragmentedFixtures.video + FragmentedFixtures.tone(550) + ["-t", "4"] + FragmentedFixtures.x265
                + [
                    "-c:a", "aac", "-aac_pns", "0", "-mpegts_service_id", "2", "-mpegts_pmt_start_pid", "0x1100",
                    "-mpegts_start_pid", "0x200",
                ],
            name: "joined-hevc")
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

    /// The codecs of CODECS on the first line of `text` that starts with `prefix`.
    func codecs(_ prefix: String, in text: String) -> [String] {
        let line = text.split(separator: "\n").first { $0.hasPrefix(prefix) } ?? ""
        let value = line.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
        return value.split(separator: ",").map(String.init)
    }

    /// ffmpeg decodes `input` (a served multivariant playlist, or a remuxed file) to both parts of `join`: every
    /// picture, and every audio frame but the second part's first, which an AAC decoder overlaps with the frame before
    /// it (the first part's last, where decoding the part alone overlaps it with silence).
    func expectDecodesToBothParts(_ input: String, join: String = "joined-new-program", label: String = "") async throws
    {
        let check = FragmentedPlaybackTests()
        let video =
            try await check.frameHashes(Self.part("a", of: join), "v:0")
            + check.frameHashes(Self.part("b", of: join), "v:0")
        #expect(video.count == 200)
        #expect(try await check.frameHashes(input, "v:0") == video, "\(label)")
        let first = try await check.frameHashes(Self.part("a", of: join), "a:0")
        let second = try await check.frameHashes(Self.part("b", of: join), "a:0")
        let decoded = try await check.frameHashes(input, "a:0")
        #expect(decoded.count == first.count + second.count && first.count > 100, "\(label): \(decoded.count)")
        if decoded.count == first.count + second.count {
            #expect(Array(decoded.prefix(first.count)) == first)
            #expect(Array(decoded.suffix(second.count - 1)) == Array(second.dropFirst()))
        }
    }

    /// GStreamer plays `master` to the end: 200 pictures, and `seconds` of audio within 0.2 s.
    func expectGStreamerPlays(_ master: String, seconds: Double) async throws {
        let played = try await gstreamerPlayback(master)
        #expect(played.status == 0, "\(played.log)")
        #expect(played.videoFrames == 200, "\(played.videoFrames) frames")
        #expect(abs(played.audioSeconds - seconds) < 0.2, "\(played.audioSeconds) s of audio")
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
        let list = codecs("#EXT-X-STREAM-INF:", in: text)
        #expect(Set(list).count == list.count && list.count == 3, "\(text)")
        #expect(list.filter { $0.hasPrefix("avc1.") }.count == 2 && list.contains("mp4a.40.2"), "\(text)")
        let iFrames = try await fetch(base + "iframes.m3u8")
        #expect(iFrames.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(iFrames)")
        try await expectDecodesToBothParts(master)
        let check = FragmentedPlaybackTests()
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
        try await expectGStreamerPlays(master, seconds: content)
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
        let list = codecs("#EXT-X-STREAM-INF:", in: text)
        #expect(Set(list).count == list.count && list.count == 4, "\(text)")
        // High (avc1.64…) in the first part, Constrained Baseline (avc1.42…) in the second; AAC-LC, then AC-3.
        #expect(list.contains { $0.hasPrefix("avc1.64") } && list.contains { $0.hasPrefix("avc1.42") }, "\(text)")
        #expect(list.contains("mp4a.40.2") && list.contains("ac-3"), "\(text)")
        let iFrameList = codecs("#EXT-X-I-FRAME-STREAM-INF:", in: text)
        #expect(iFrameList.count == 2 && iFrameList.allSatisfy { $0.hasPrefix("avc1.") }, "\(text)")
        let check = FragmentedPlaybackTests()
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try await check.lint(url) }
    }

    /// Served as fragmented MP4 (`--container fmp4`): the second part, on other PIDs, goes on in the first part's
    /// tracks. One discontinuity in each playlist at the cut, a second init segment for the video there (H.264 Main
    /// after High) and one for the audio (the same AAC), CODECS naming each codec once, the declared duration the
    /// parts'; ffmpeg decodes the served HLS to both parts' frames and samples, and each init segment with its
    /// segments to its part's frames; the segment at 5.5 s is the second part's; every playlist lints clean;
    /// GStreamer plays it to the end.
    @Test func servedAsOnePresentationInFragmentedMP4() async throws {
        let file = try #require(await Self.joined)
        let server = try await ServerProcess(arguments: [
            file.path, "--segment-duration", "1", "--container", "fmp4", "-v",
        ])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + "video.m3u8")
        let audioList = try await waitForEndList(base + "audio-257.m3u8")
        let iFrames = try await waitForEndList(base + "iframes.m3u8")
        func maps(_ playlist: String) -> [String] {
            playlist.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MAP:") }.map(String.init)
        }
        for playlist in [media, audioList, iFrames] {
            #expect(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(playlist)")
        }
        // The video's configuration changes at the cut: its own init segment after the discontinuity.
        #expect(maps(media).count == 2 && maps(media).last?.contains("video-init-1.mp4") == true, "\(media)")
        #expect(maps(iFrames).count == 2 && maps(iFrames).last?.contains("video-init-1.mp4") == true, "\(iFrames)")
        #expect(maps(audioList).count == 1, "\(audioList)")
        let mapLine = media.components(separatedBy: "#EXT-X-DISCONTINUITY\n").last ?? ""
        #expect(mapLine.hasPrefix("#EXT-X-MAP:"), "\(media)")
        let total = durations(media).reduce(0, +)
        let content = try await duration(Self.part("a")) + duration(Self.part("b"))
        #expect(abs(total - content) <= 0.04, "declared \(total) s, content \(content) s")
        let text = try await fetch(master)
        let list = codecs("#EXT-X-STREAM-INF:", in: text)
        #expect(Set(list).count == list.count && list.count == 3, "\(text)")
        #expect(list.filter { $0.hasPrefix("avc1.") }.count == 2 && list.contains("mp4a.40.2"), "\(text)")
        try await expectDecodesToBothParts(master)
        let check = FragmentedPlaybackTests()
        // A player that follows EXT-X-MAP: each init segment with its segments decodes to its own part's frames, and
        // the segment the playlist's durations put 5.5 s in, after the second init segment, to the second part's.
        let byInit = try await FragmentedConfigurationTests().filesByInitSegment(
            base, "video.m3u8", label: "joined-fmp4")
        #expect(byInit.count == 2)
        for (file, part) in zip(byInit, ["a", "b"]) {
            #expect(
                try await check.frameHashes(file.path, "v:0") == check.frameHashes(Self.part(part), "v:0"), "\(part)")
        }
        var elapsed = 0.0
        var sought: (map: String, segment: String)?
        var map = ""
        var length = 0.0
        for line in media.split(separator: "\n").map(String.init) {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                map = String(line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" })
            } else if line.hasPrefix("#EXTINF:") {
                length = Double(line.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
            } else if !line.hasPrefix("#") {
                if elapsed <= 5.5 && 5.5 < elapsed + length { sought = (map, line) }
                elapsed += length
            }
        }
        let target = try #require(sought)
        #expect(target.map == "video-init-1.mp4", "\(target)")
        let soughtFile = PlaybackFixtures.folder.appendingPathComponent("joined-fmp4-sought.mp4")
        try await (fetchBytes(base + target.map) + fetchBytes(base + target.segment)).write(to: soughtFile)
        let pictures = try await check.frameHashes(soughtFile.path, "v:0")
        let secondPictures = try await check.frameHashes(Self.part("b"), "v:0")
        #expect(!pictures.isEmpty && pictures.allSatisfy { secondPictures.contains($0) }, "\(target)")
        for url in [master, base + "video.m3u8", base + "audio-257.m3u8", base + "iframes.m3u8"] {
            try await check.lint(url)
        }
        try await expectGStreamerPlays(master, seconds: content)
    }

    /// HEVC joined (served as fragmented MP4 by `auto`), the second part on program 2, PMT PID 0x1100 and PIDs
    /// 0x200/0x201: one discontinuity in each playlist, the same parameter sets on both sides so one init segment per
    /// track, CODECS naming each codec once, the declared duration the parts'; ffmpeg decodes the served HLS to both
    /// parts' frames and samples; every playlist lints clean; GStreamer plays it to the end.
    @Test func hevcJoinServedAsFragmentedMP4() async throws {
        let file = try #require(await Self.joinedHEVC)
        let server = try await ServerProcess(arguments: [file.path, "--segment-duration", "1", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + "video.m3u8")
        let audioList = try await waitForEndList(base + "audio-257.m3u8")
        let iFrames = try await waitForEndList(base + "iframes.m3u8")
        for playlist in [media, audioList, iFrames] {
            #expect(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count - 1 == 1, "\(playlist)")
            #expect(playlist.components(separatedBy: "#EXT-X-MAP:").count - 1 == 1, "\(playlist)")
        }
        let text = try await fetch(master)
        let list = codecs("#EXT-X-STREAM-INF:", in: text)
        #expect(Set(list).count == list.count && list.contains { $0.hasPrefix("hvc1.") }, "\(text)")
        #expect(list.count == 2 && list.contains("mp4a.40.2"), "\(text)")
        let total = durations(media).reduce(0, +)
        let content =
            try await duration(Self.part("a", of: "joined-hevc")) + duration(Self.part("b", of: "joined-hevc"))
        #expect(abs(total - content) <= 0.04, "declared \(total) s, content \(content) s")
        try await expectDecodesToBothParts(master, join: "joined-hevc")
        let check = FragmentedPlaybackTests()
        for url in [master, base + "video.m3u8", base + "audio-257.m3u8", base + "iframes.m3u8"] {
            try await check.lint(url)
        }
        try await expectGStreamerPlays(master, seconds: content)
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
    /// `tsplayer remux` of `input`: the output's video frames are both parts' (ffmpeg's framemd5), and its audio is
    /// the first part's samples then the second's (but the second part's first frame, which a continuous AAC decode
    /// overlaps with the frame before).
    func expectRemuxFollowsTheParts(_ input: URL, join: String, label: String) async throws {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent("\(label).mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", input.path, output])
        #expect(result.status == 0, "\(result.err)")
        try await expectDecodesToBothParts(output, join: join, label: label)
    }

    /// `tsplayer remux` follows the parts: the second part, on another program, PMT PID and stream PIDs, goes on in
    /// the first part's tracks (before, the file was read with the head's last tables, the second recording's, so
    /// the first part's frames were lost). The H.264 join (Main after High, which remux does not refuse: the SPS and
    /// PPS are in the samples) and the HEVC join (the same parameter sets on both sides).
    @Test func remuxFollowsTheParts() async throws {
        try await expectRemuxFollowsTheParts(
            try #require(await Self.joined), join: "joined-new-program", label: "joined-remux")
        try await expectRemuxFollowsTheParts(
            try #require(await Self.joinedHEVC), join: "joined-hevc", label: "joined-hevc-remux")
    }

    /// The same with 12 MiB of null packets between the parts: the cut lies past the head read for the layout and past
    /// the bytes the remux's index reads ahead at its start, so the parts are found while the remux goes on.
    @Test func remuxFollowsAPartFoundAsItGoesOn() async throws {
        let file = try #require(await Self.joined)
        let null: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + Array(repeating: 0xFF, count: 184)
        let first = try Data(contentsOf: URL(fileURLWithPath: Self.part("a")))
        let second = try Data(contentsOf: URL(fileURLWithPath: Self.part("b")))
        #expect(try Data(contentsOf: file) == first + second)
        let padded = PlaybackFixtures.folder.appendingPathComponent("joined-padded.ts")
        let padding = Data((0..<((12 << 20) / 188)).flatMap { _ in null })
        try (first + padding + second).write(to: padded)
        try await expectRemuxFollowsTheParts(padded, join: "joined-new-program", label: "joined-padded-remux")
    }
}
