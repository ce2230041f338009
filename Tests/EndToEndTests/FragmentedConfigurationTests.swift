// Concatenations of two different encodings, served as fragmented MP4: the range after the time stamp reset gets
// an init segment of its own where its parameter sets or audio configuration differ (the playlists name it in a
// second EXT-X-MAP after the EXT-X-DISCONTINUITY), ffmpeg decodes the served HLS to the source's frames past the
// reset, m3u8lint finds nothing in the playlists, and `tsplayer remux` refuses, naming the PID and the offset.
import Foundation
import LoopbackHTTP
import TSPlayerKit
import Testing

enum ConfigurationFixtures {
    static let x265 = [
        "-c:v", "libx265", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:keyint=25:bframes=3:open-gop=1",
    ]

    /// Two recordings joined end to end (`cat a.ts b.ts`), made with `first` and `second` (ffmpeg arguments before
    /// the output path); `dropFromSecond` packets are cut from the second's start after its PAT and PMT (to start
    /// it inside a GOP). Returns the file and the offset of the second's first video PES.
    static func joined(
        _ name: String, first: [String], second: [String], dropFromSecond: Int = 0
    ) async -> (url: URL, videoStart: Int)? {
        let url = PlaybackFixtures.folder.appendingPathComponent(name + ".ts")
        guard
            let a = await PlaybackFixtures.make(name + "-a.ts", arguments: { first + ["-f", "mpegts", $0] }),
            let b = await PlaybackFixtures.make(name + "-b.ts", arguments: { second + ["-f", "mpegts", $0] }),
            let partA = try? Data(contentsOf: a), var partB = try? Data(contentsOf: b)
        else { return nil }
        if dropFromSecond > 0 {
            // Keep the tables (PAT, PMT, SDT: the packets before the first PES), drop the next packets.
            guard let tables = firstPES(partB, pid: nil) else { return nil }
            partB = partB.prefix(tables) + partB.dropFirst(tables + dropFromSecond * 188)
        }
        guard let start = firstPES(partB, pid: 256) else { return nil }
        if !FileManager.default.fileExists(atPath: url.path) {
            guard (try? (partA + partB).write(to: url)) != nil else { return nil }
        }
        return (url, partA.count + start)
    }

    /// The offset of the first 188-byte packet that starts a PES (payload_unit_start_indicator on a PID other than
    /// the PAT, PMT and SDT ones) on `pid`, or on any PID when nil.
    static func firstPES(_ bytes: Data, pid: UInt16?) -> Int? {
        let data = [UInt8](bytes)
        var offset = 0
        while offset + 188 <= data.count, data[offset] == 0x47 {
            let packetPID = UInt16(data[offset + 1] & 0x1F) << 8 | UInt16(data[offset + 2])
            let starts = data[offset + 1] & 0x40 != 0
            if starts, packetPID >= 0x100, pid == nil || packetPID == pid { return offset }
            offset += 188
        }
        return nil
    }

    /// HEVC + AAC, 320x180 for 3 s then 480x270 for 4 s: the second part's VPS, SPS and PPS differ.
    static var hevcResolution: (url: URL, videoStart: Int)? { get async { await hevcResolutionFixture.value } }
    private static let hevcResolutionFixture = SharedFixture<(url: URL, videoStart: Int)?> {
        await joined(
            "config-hevc-resolution",
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "3"] + x265 + ["-c:a", "aac"],
            second: ["-f", "lavfi", "-i", "smptebars=size=480x270:rate=25"] + FragmentedFixtures.tone(550)
                + ["-t", "4"] + x265 + ["-c:a", "aac"])
    }

    /// H.264 + AAC, 320x180 for 3 s then 480x270 for 4 s.
    static var h264Resolution: (url: URL, videoStart: Int)? { get async { await h264ResolutionFixture.value } }
    private static let h264ResolutionFixture = SharedFixture<(url: URL, videoStart: Int)?> {
        await joined(
            "config-h264-resolution",
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "3"] + FragmentedFixtures.x264
                + ["-c:a", "aac"],
            second: ["-f", "lavfi", "-i", "smptebars=size=480x270:rate=25"] + FragmentedFixtures.tone(550)
                + ["-t", "4"] + FragmentedFixtures.x264 + ["-c:a", "aac"])
    }

    /// H.264 + AAC, mono AAC for 3 s then stereo for 4 s (the same picture size and encoder settings).
    static var aacChannels: (url: URL, videoStart: Int)? { get async { await aacChannelsFixture.value } }
    private static let aacChannelsFixture = SharedFixture<(url: URL, videoStart: Int)?> {
        await joined(
            "config-aac-channels",
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "3"] + FragmentedFixtures.x264
                + ["-c:a", "aac", "-ac", "1"],
            second: ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + FragmentedFixtures.tone(550)
                + ["-t", "4"] + FragmentedFixtures.x264 + ["-c:a", "aac", "-ac", "2"])
    }

    /// H.264 + AAC, 48 kHz for 3 s then 44.1 kHz for 4 s.
    static var aacRate: (url: URL, videoStart: Int)? { get async { await aacRateFixture.value } }
    private static let aacRateFixture = SharedFixture<(url: URL, videoStart: Int)?> {
        await joined(
            "config-aac-rate",
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "3"] + FragmentedFixtures.x264
                + ["-c:a", "aac"],
            second: ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + FragmentedFixtures.tone(550, rate: 44100)
                + ["-t", "4"] + FragmentedFixtures.x264 + ["-c:a", "aac"])
    }

    /// ``aacChannels`` (mono, then stereo) with the second part's first audio PES (8 stereo frames) moved before its
    /// first video PES: frames of the new configuration precede the reset's first keyframe, so they lie in the bytes
    /// of the range before it. Returns the file and the moved PES's offset; `config-audio-before-keyframe-rest.ts`
    /// is the second part without that PES.
    static var audioBeforeKeyframe: (url: URL, audioStart: Int)? {
        get async { await audioBeforeKeyframeFixture.value }
    }
    private static let audioBeforeKeyframeFixture = SharedFixture<(url: URL, audioStart: Int)?> {
        let folder = PlaybackFixtures.folder
        guard await aacChannels != nil,
            let first = try? Data(contentsOf: folder.appendingPathComponent("config-aac-channels-a.ts")),
            let second = try? Data(contentsOf: folder.appendingPathComponent("config-aac-channels-b.ts")),
            let video = firstPES(second, pid: 256), let audio = firstPES(second, pid: 257), audio > video
        else { return nil }
        let bytes = [UInt8](second)
        let count = bytes.count / 188
        func pid(_ packet: Int) -> Int { Int(bytes[packet * 188 + 1] & 0x1F) << 8 | Int(bytes[packet * 188 + 2]) }
        // The packets of the audio PID from its first PES start up to its second.
        var moved: [Int] = []
        for packet in (audio / 188)..<count where pid(packet) == 257 {
            if !moved.isEmpty, bytes[packet * 188 + 1] & 0x40 != 0 { break }
            moved.append(packet)
        }
        let movedSet = Set(moved)
        var order = Array(0..<(video / 188)) + moved
        order += ((video / 188)..<count).filter { !movedSet.contains($0) }
        let reordered = order.flatMap { bytes[($0 * 188)..<($0 * 188 + 188)] }
        let rest = (0..<count).filter { !movedSet.contains($0) }.flatMap { bytes[($0 * 188)..<($0 * 188 + 188)] }
        let url = folder.appendingPathComponent("config-audio-before-keyframe.ts")
        guard (try? (first + Data(reordered)).write(to: url)) != nil,
            (try? Data(rest).write(to: folder.appendingPathComponent("config-audio-before-keyframe-rest.ts"))) != nil
        else { return nil }
        return (url, first.count + video)
    }

    /// H.264 + AAC (no B-frames, a keyframe every 25 pictures) whose second part starts 40 packets into its first
    /// GOP: the reset falls between two keyframes, and the second part's first pictures have no keyframe to
    /// start from.
    static var midGOPReset: (url: URL, videoStart: Int)? { get async { await midGOPResetFixture.value } }
    private static let midGOPResetFixture = SharedFixture<(url: URL, videoStart: Int)?> {
        await joined(
            "config-mid-gop-reset",
            first: FragmentedFixtures.video + FragmentedFixtures.tone(330) + ["-t", "3"]
                + ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "25", "-bf", "0"]
                + ["-c:a", "aac"],
            second: ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + FragmentedFixtures.tone(550)
                + ["-t", "4"] + [
                    "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "25", "-bf", "0",
                ]
                + ["-c:a", "aac"],
            dropFromSecond: 40)
    }
}

@Suite(.serialized) struct FragmentedConfigurationTests {
    let playback = FragmentedPlaybackTests()

    /// The URIs of a playlist's EXT-X-MAP tags, in order, and whether each follows an EXT-X-DISCONTINUITY.
    func maps(_ playlist: String) -> [(uri: String, afterDiscontinuity: Bool)] {
        let lines = playlist.split(separator: "\n").map(String.init)
        return lines.indices.compactMap { index in
            guard lines[index].hasPrefix("#EXT-X-MAP:URI=\"") else { return nil }
            let uri = String(lines[index].dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" })
            return (uri, index > 0 && lines[index - 1] == "#EXT-X-DISCONTINUITY")
        }
    }

    /// ffprobe's `entries` (`width,height`, `channels`) of every decoded frame of `stream` of `input`.
    func frameEntries(_ input: String, _ stream: String, _ entries: String) async throws -> [String] {
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let result = try await EndToEnd.run(
            ffprobe,
            ["-v", "error", "-select_streams", stream, "-show_entries", "frame=" + entries, "-of", "csv=p=0", input])
        #expect(result.status == 0, "ffprobe \(input): \(result.err)")
        // One line per frame; a frame with side data ends its line with a comma.
        return result.out.split(separator: "\n").map {
            String($0.trimmingCharacters(in: CharacterSet(charactersIn: ",")))
        }
    }

    /// The playlist URI of the audio rendition in `master`.
    func audioPlaylist(_ master: String) throws -> String {
        try #require(
            master.split(separator: "\n").first { $0.contains("TYPE=AUDIO") }?.components(separatedBy: "URI=\"").last?
                .prefix { $0 != "\"" }.description)
    }

    /// Runs `tsplayer remux` of `movie` and expects it to refuse, naming `pid` and `offset`.
    func expectRemuxRefused(_ movie: URL, pid: Int, offset: Int, what: String) async throws {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent(movie.lastPathComponent + ".mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output])
        #expect(result.status == 1, "remux \(movie.lastPathComponent): \(result.status) \(result.err)")
        #expect(
            result.err.contains("PID \(pid)") && result.err.contains("\(what) at byte offset \(offset) "),
            "\(result.err)")
        #expect(
            !FileManager.default.fileExists(atPath: output)
                && !FileManager.default.fileExists(atPath: output + ".partial"))
    }

    /// One file per `EXT-X-MAP` of the playlist at `base + name`: that init segment and the segments after it, up
    /// to the next map.
    func filesByInitSegment(_ base: String, _ name: String, label: String) async throws -> [URL] {
        let playlist = try await fetch(base + name)
        var parts: [Data] = []
        for line in playlist.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                parts.append(
                    try await fetchBytes(base + line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" }))
            } else if !line.hasPrefix("#"), !parts.isEmpty {
                parts[parts.count - 1] += try await fetchBytes(base + line)
            }
        }
        return try parts.enumerated().map { number, bytes in
            let url = PlaybackFixtures.folder.appendingPathComponent("\(label)-\(number).mp4")
            try bytes.write(to: url)
            return url
        }
    }

    @Test func hevcWithOtherParameterSetsAfterTheResetGetsItsOwnInitSegment() async throws {
        let (movie, videoStart) = try #require(await ConfigurationFixtures.hevcResolution)
        // The audio (the same AAC on both sides) decodes through the served HLS to the source's frames, and every
        // playlist lints clean.
        let (master, _, _) = try await playback.checkServed(movie, streams: ["a:0"])
        // The first session wrote the index's sidecar: this one opens from it, with the same init segments.
        #expect(FileManager.default.fileExists(atPath: movie.path + ".tsindex"))
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let video = try await waitForEndList(base + "video.m3u8")
        let videoMaps = maps(video)
        #expect(
            videoMaps.map(\.uri) == ["video-init.mp4", "video-init-1.mp4"]
                && videoMaps.last?.afterDiscontinuity == true,
            "\(video)")
        let iFrames = try await waitForEndList(base + "iframes.m3u8")
        let iFrameMaps = maps(iFrames)
        #expect(
            iFrameMaps.map(\.uri) == ["video-init.mp4", "video-init-1.mp4"]
                && iFrameMaps.last?.afterDiscontinuity == true, "\(iFrames)")
        // The audio's configuration is the same on both sides: one init segment.
        let audio = try await fetch(base + audioPlaylist(master))
        #expect(maps(audio).count == 1, "\(audio)")
        // Both parts' codec strings, and the larger picture.
        let variant = master.split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") }.map(String.init) ?? ""
        #expect(
            variant.components(separatedBy: "hvc1.").count == 3 && variant.contains("RESOLUTION=480x270"), "\(master)")
        // ffmpeg's HLS reader hands a changed EXT-X-MAP to its MP4 reader, which skips the second `moov`: so each
        // range is decoded from its own init segment and segments, as a player that follows EXT-X-MAP does. Each
        // decodes to the frames of its part of the source, at its own picture size.
        let parts = try await filesByInitSegment(base, "video.m3u8", label: "config-hevc-video")
        #expect(parts.count == 2)
        let sources = ["config-hevc-resolution-a.ts", "config-hevc-resolution-b.ts"].map {
            PlaybackFixtures.folder.appendingPathComponent($0).path
        }
        for (part, (source, size)) in zip(parts, zip(sources, ["320,180", "480,270"])) {
            let served = try await playback.frameHashes(part.path, "v:0")
            let expected = try await playback.frameHashes(source, "v:0")
            #expect(
                !served.isEmpty && served == expected,
                "\(part.lastPathComponent): \(served.count) frames, \(expected.count)")
            let sizes = await Set(try frameEntries(part.path, "v:0", "width,height"))
            #expect(sizes == [size], "\(part.lastPathComponent): \(sizes)")
        }
        // The I-frames of each range decode from their own init segment too.
        let iFrameParts = try await filesByInitSegment(base, "iframes.m3u8", label: "config-hevc-iframes")
        #expect(iFrameParts.count == 2)
        for (part, size) in zip(iFrameParts, ["320,180", "480,270"]) {
            let sizes = try await frameEntries(part.path, "v:0", "width,height")
            #expect(!sizes.isEmpty && Set(sizes) == [size], "\(part.lastPathComponent): \(sizes)")
        }
        try await expectRemuxRefused(movie, pid: 256, offset: videoStart, what: "the parameter sets change")
    }

    /// H.264 keeps its SPS and PPS in the samples: the served HLS decodes through the reset even in ffmpeg (which
    /// keeps the first init segment), and `remux` is not refused: its output decodes to the source's frames, each
    /// at its own size.
    @Test func h264WithAnotherPictureSizeAfterTheReset() async throws {
        let (movie, _) = try #require(await ConfigurationFixtures.h264Resolution)
        try await playback.checkServed(movie, streams: ["v:0", "a:0"])
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let video = try await waitForEndList(base + "video.m3u8")
        #expect(maps(video).map(\.uri) == ["video-init.mp4", "video-init-1.mp4"], "\(video)")
        let master = try await fetch(url)
        #expect(master.contains("RESOLUTION=480x270"), "\(master)")
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent("config-h264-resolution.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output])
        #expect(result.status == 0, "\(result.err)")
        for stream in ["v:0", "a:0"] {
            await #expect(
                try playback.frameHashes(output, stream) == playback.frameHashes(movie.path, stream), "\(stream)")
        }
        let sizes = try await frameEntries(output, "v:0", "width,height")
        await #expect(
            sizes == (try frameEntries(movie.path, "v:0", "width,height")) && Set(sizes) == ["320,180", "480,270"])
    }

    /// ``ConfigurationFixtures/aacChannels`` joined again with the second part's continuity counters moved so that its
    /// first packet on each PID repeats the counter of the first part's last packet there, as one real join in
    /// sixteen does (the encoder's output, and so the counters at the end of a part, can differ from run to run).
    /// Such a packet is not a duplicate: nothing is lost. The second part begins at its first video PES, as in the
    /// plain join, `tsinspect` gives it its whole duration, and the served HLS decodes to every frame and sample of
    /// the source.
    @Test func aJoinWhoseCountersRepeatAtTheCutLosesNothing() async throws {
        let (plain, videoStart) = try #require(await ConfigurationFixtures.aacChannels)
        let folder = PlaybackFixtures.folder
        let first = [UInt8](try Data(contentsOf: folder.appendingPathComponent("config-aac-channels-a.ts")))
        var second = [UInt8](try Data(contentsOf: folder.appendingPathComponent("config-aac-channels-b.ts")))
        func packets(_ bytes: [UInt8], pid: Int) -> [Int] {
            stride(from: 0, to: bytes.count - 187, by: 188).filter {
                Int(bytes[$0 + 1] & 0x1F) << 8 | Int(bytes[$0 + 2]) == pid && bytes[$0 + 3] & 0x10 != 0
            }
        }
        for pid in [256, 257] {
            let last = try #require(packets(first, pid: pid).last)
            let ours = packets(second, pid: pid)
            let start = try #require(ours.first)
            let shift = (first[last + 3] &- second[start + 3]) & 0x0F
            for offset in stride(from: 0, to: second.count - 187, by: 188)
            where Int(second[offset + 1] & 0x1F) << 8 | Int(second[offset + 2]) == pid {
                second[offset + 3] = second[offset + 3] & 0xF0 | (second[offset + 3] &+ shift) & 0x0F
            }
            #expect(first[last + 3] & 0x0F == second[start + 3] & 0x0F)
        }
        let movie = folder.appendingPathComponent("config-repeated-counters.ts")
        try Data(first + second).write(to: movie)
        #expect(try Data(contentsOf: movie).count == (try Data(contentsOf: plain)).count)
        let tool = try #require(EndToEnd.product("tsinspect"))
        let inspected = try await EndToEnd.run(tool, ["--json", movie.path])
        #expect(inspected.status == 1, "\(inspected.err)")  // the counters jump at the cut
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspected.out.utf8)) as? [String: Any])
        let parts = try #require(json["parts"] as? [[String: Any]])
        #expect(parts.map { $0["offset"] as? Int } == [0, videoStart], "\(parts)")
        let seconds = try #require(parts.last?["durationSeconds"] as? Double)
        await #expect(
            abs(
                seconds
                    - (try JoinedRecordingTests().duration(
                        folder.appendingPathComponent("config-aac-channels-b.ts").path))) <= 0.04,
            "\(seconds)")
        _ = try await playback.checkServed(movie, streams: ["v:0", "a:0"])
    }

    @Test func aacWithAnotherChannelCountAfterTheResetGetsItsOwnAudioInit() async throws {
        let (movie, _) = try #require(await ConfigurationFixtures.aacChannels)
        let (master, _, _) = try await playback.checkServed(movie, streams: ["v:0", "a:0"])
        #expect(master.contains("CHANNELS=\"2\""), "\(master)")
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let name = try audioPlaylist(master)
        let audio = try await waitForEndList(base + name)
        let audioMaps = maps(audio)
        let stem = String(name.dropLast(".m3u8".count))
        #expect(
            audioMaps.map(\.uri) == [stem + "-init.mp4", stem + "-init-1.mp4"]
                && audioMaps.last?.afterDiscontinuity == true, "\(audio)")
        // The same encoder settings and picture size on both sides: the video keeps one init segment.
        let video = try await fetch(base + "video.m3u8")
        #expect(maps(video).count == 1, "\(video)")
        // Through the HLS, every frame decodes with its own channel count, as from the source (ffmpeg's AAC decoder
        // follows the frames' channel elements even where it keeps the first init segment).
        let channels = try await frameEntries(url, "a:0", "channels")
        let source = try await frameEntries(movie.path, "a:0", "channels")
        #expect(channels == source, "served \(channels.count) frames, source \(source.count)")
        #expect(Set(channels) == ["1", "2"] && channels.first == "1" && channels.last == "2", "\(Set(channels))")
        // Each range from its own init segment: the init segment says mono, then stereo, and the frames decode to
        // those of that part of the source.
        let parts = try await filesByInitSegment(base, name, label: "config-aac-audio")
        let sources = ["config-aac-channels-a.ts", "config-aac-channels-b.ts"].map {
            PlaybackFixtures.folder.appendingPathComponent($0).path
        }
        #expect(parts.count == 2)
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        for (part, (source, count)) in zip(parts, zip(sources, ["1", "2"])) {
            let probed = try await EndToEnd.run(
                ffprobe, ["-v", "error", "-show_entries", "stream=channels", "-of", "csv=p=0", part.path])
            #expect(
                probed.out.trimmingCharacters(in: .whitespacesAndNewlines) == count,
                "\(part.lastPathComponent): \(probed.out)")
            let served = try await playback.frameHashes(part.path, "a:0")
            let expected = try await playback.frameHashes(source, "a:0")
            #expect(
                !served.isEmpty && served == expected,
                "\(part.lastPathComponent): \(served.count) frames, \(expected.count)")
        }
        let audioPID = Int(stem.dropFirst("audio-".count)) ?? 0
        let audioStart = try #require(
            ConfigurationFixtures.firstPES(
                try Data(contentsOf: PlaybackFixtures.folder.appendingPathComponent("config-aac-channels-b.ts")),
                pid: UInt16(audioPID)))
        let first = try Data(contentsOf: PlaybackFixtures.folder.appendingPathComponent("config-aac-channels-a.ts"))
        try await expectRemuxRefused(
            movie, pid: audioPID, offset: first.count + audioStart, what: "the audio configuration changes")
    }

    /// A few frames of the new audio configuration muxed before the reset's first keyframe (in the bytes of the
    /// range before, whose init segment says mono): they are left out, so that no frame is decoded with another
    /// configuration than its own. Each range decodes from its own init segment to the frames of its part of the
    /// source (the second without the frames left out). The session and `tsplayer serve` (on stderr) name them.
    @Test func audioOfTheNextConfigurationBeforeTheResetKeyframeIsLeftOut() async throws {
        let (movie, audioStart) = try #require(await ConfigurationFixtures.audioBeforeKeyframe)
        let (master, _, _) = try await playback.checkServed(movie, streams: ["v:0"])
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let name = try audioPlaylist(master)
        let stem = String(name.dropLast(".m3u8".count))
        let audio = try await waitForEndList(base + name)
        #expect(maps(audio).count == 2 && maps(audio).last?.afterDiscontinuity == true, "\(audio)")
        let parts = try await filesByInitSegment(base, name, label: "config-audio-first")
        #expect(parts.count == 2)
        // The second part's source without the PES left out: ffmpeg's AAC encoder uses noise substitution, whose
        // decoder draws from a generator that runs on from the first frame, so a part decodes to the same samples
        // only from a source that starts where it does.
        let sources = ["config-aac-channels-a.ts", "config-audio-before-keyframe-rest.ts"].map {
            PlaybackFixtures.folder.appendingPathComponent($0).path
        }
        for (number, (part, source)) in zip(parts, sources).enumerated() {
            let channels = try await frameEntries(part.path, "a:0", "channels")
            #expect(!channels.isEmpty && Set(channels) == [number == 0 ? "1" : "2"], "\(part.lastPathComponent)")
            let served = try await playback.frameHashes(part.path, "a:0")
            let expected = try await playback.frameHashes(source, "a:0")
            #expect(
                !served.isEmpty && served == expected,
                "\(part.lastPathComponent): \(served.count) frames, \(expected.count)")
        }
        // The PES left out held 8 frames: the second part's source has 8 more.
        let whole = try await playback.frameHashes(
            PlaybackFixtures.folder.appendingPathComponent("config-aac-channels-b.ts").path, "a:0")
        let rest = try await playback.frameHashes(sources[1], "a:0")
        #expect(whole.count == rest.count + 8, "\(whole.count) frames, \(rest.count) without the PES")
        try await expectRemuxRefused(movie, pid: 257, offset: audioStart, what: "the audio configuration changes")
        // In process: the session names the frames left out, with the segment's offset.
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .fmp4))
        await session.waitUntilIndexed()
        #expect(session.servingDiagnostics.isEmpty)
        for number in session.segments.indices {
            var request = HTTPRequest(method: .get, target: "/\(session.token.value)/\(stem)/\(number).m4s")
            request.wildcardSegments = [stem, "\(number).m4s"]
            #expect(session.respond(to: request).status.code == 200)
        }
        let before = try #require(session.segments.last { $0.offset < UInt64(audioStart) })
        let diagnostic =
            "PID 257: 8 audio frames in the segment at byte offset \(before.offset) left out: their configuration "
            + "is not their range's (muxed before the next range's keyframe)"
        #expect(session.servingDiagnostics == [diagnostic], "\(session.servingDiagnostics)")
        // `tsplayer serve`, which served every segment above, prints it on stderr, naming the file, once: the
        // segments served again add no line.
        let line = "\(movie.path): \(diagnostic)\n"
        await DownloadProcessesTests.waitFor("serve to print \(line)") { server.logText.contains(line) }
        _ = try await filesByInitSegment(base, name, label: "config-audio-first-again")
        try await Task.sleep(for: .seconds(1))
        #expect(server.logText.components(separatedBy: line).count == 2, "\(server.logText)")
    }

    /// An AAC sample rate change: the later range's init segment has the new rate as its timescale, its frames
    /// decode to the source's, and its first decode time (in seconds) is where the range before ended.
    @Test func aacWithAnotherSampleRateAfterTheResetChangesTimescale() async throws {
        let (movie, _) = try #require(await ConfigurationFixtures.aacRate)
        // The video decodes through the served HLS, and every playlist lints clean. (The audio is compared range by
        // range below: ffmpeg's HLS reader would keep the first range's 48 kHz entry.)
        try await playback.checkServed(movie, streams: ["v:0"])
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        let name = try audioPlaylist(master)
        let audio = try await waitForEndList(base + name)
        #expect(maps(audio).count == 2 && maps(audio).last?.afterDiscontinuity == true, "\(audio)")
        let parts = try await filesByInitSegment(base, name, label: "config-aac-rate")
        try #require(parts.count == 2)
        let sources = ["config-aac-rate-a.ts", "config-aac-rate-b.ts"].map {
            PlaybackFixtures.folder.appendingPathComponent($0).path
        }
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        var ends: [Double] = []
        var starts: [Double] = []
        for (part, (source, rate)) in zip(parts, zip(sources, [48000, 44100])) {
            let probed = try await EndToEnd.run(
                ffprobe, ["-v", "error", "-show_entries", "stream=sample_rate,time_base", "-of", "csv=p=0", part.path])
            #expect(
                probed.out.trimmingCharacters(in: .whitespacesAndNewlines) == "\(rate),1/\(rate)",
                "\(part.lastPathComponent): \(probed.out)")
            let served = try await playback.frameHashes(part.path, "a:0")
            let expected = try await playback.frameHashes(source, "a:0")
            #expect(
                !served.isEmpty && served == expected, "\(part.lastPathComponent): \(served.count), \(expected.count)")
            let times = try await packetTimes(part.path, "a:0")
            expectContinuous(times, part.lastPathComponent)
            let first = try #require(times.first, "\(part.lastPathComponent): no audio packets")
            let last = try #require(times.last)
            let lastDuration = try #require(last.duration, "\(part.lastPathComponent): the last packet's duration")
            starts.append(Double(first.dts) / Double(rate))
            ends.append(Double(last.dts + lastDuration) / Double(rate))
        }
        // Within one sample: the end is rescaled from 48 kHz ticks to 44.1 kHz ones.
        #expect(
            abs(starts[1] - ends[0]) <= 1 / 44100.0,
            "the second range starts at \(starts[1]) s, the first ends at \(ends[0]) s")
    }

    /// A reset inside a GOP: the second part lost its first keyframe (and the pictures cut with it), so its first
    /// pictures have no keyframe to start from.
    @Test func resetInsideAGOPKeepsKeyframeAlignedSegments() async throws {
        let (movie, _) = try #require(await ConfigurationFixtures.midGOPReset)
        let second = PlaybackFixtures.folder.appendingPathComponent("config-mid-gop-reset-b.ts")
        // What the source decode gives: the first part's 75 pictures; then the second part's pictures before its
        // first remaining keyframe, predicted from the first part's last picture (the static bars' P pictures
        // only copy it), so each decodes to that picture again; then from the keyframe on, the second part's own
        // pictures as it decodes alone from its keyframe at picture 25.
        let source = try await playback.frameHashes(movie.path, "v:0")
        let alone = try await playback.frameHashes(second.path, "v:0")
        let leading = source.count - 75 - (alone.count - 25)
        #expect(leading > 0 && leading < 25, "\(source.count) pictures, \(alone.count) in the second part")
        #expect(
            source[75..<75 + leading].allSatisfy { $0 == source[74] },
            "the pictures before the second part's keyframe: \(source[74..<75 + leading])")
        #expect(Array(source[(75 + leading)...]) == Array(alone[25...]))
        // The served HLS decodes to exactly those frames (checked frame by frame), and lints clean.
        try await playback.checkServed(movie, streams: ["v:0", "a:0"])
        // Every served video segment starts with a keyframe; the discontinuity goes on the keyframe's segment.
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let video = try await waitForEndList(base + "video.m3u8")
        #expect(video.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 2, "\(video)")
        let count = video.components(separatedBy: "#EXTINF:").count - 1
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let initBytes = try await fetchBytes(base + "video-init.mp4")
        for number in 0..<count {
            let file = PlaybackFixtures.folder.appendingPathComponent("config-mid-gop-\(number).mp4")
            try await (initBytes + fetchBytes(base + "video/\(number).m4s")).write(to: file)
            let result = try await EndToEnd.run(
                ffprobe,
                ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags", "-of", "csv=p=0", file.path])
            #expect(result.out.hasPrefix("K"), "segment \(number) starts with \(result.out.prefix(8))")
        }
    }
}
