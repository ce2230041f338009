// Files whose packets are not plain 188-byte TS from byte 0 (192-byte M2TS from ffmpeg, 204-byte DVB packets and a
// file cut in the middle of a packet, both written here from an ffmpeg file), served by `tsplayer serve` as plain
// 188-byte TS: checked against ffmpeg, GStreamer and m3u8lint, never against their wording.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct PacketSizeTests {
    /// 6 s of H.264 + AAC, a keyframe every second: plain 188-byte TS, and the same muxed by ffmpeg as M2TS.
    static func encode(_ name: String, _ extra: [String]) async -> URL? {
        await PlaybackFixtures.make(name) { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "6", "-c:v", "libx264", "-preset", "veryfast", "-g", "25",
                "-keyint_min", "25", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k",
            ] + extra + ["-f", "mpegts", path]
        }
    }
    static var plain: URL? { get async { await plainFixture.value } }
    private static let plainFixture = SharedFixture<URL?> { await encode("packets-plain.ts", []) }
    static var m2ts: URL? { get async { await m2tsFixture.value } }
    private static let m2tsFixture = SharedFixture<URL?> {
        await encode("packets-m2ts.m2ts", ["-mpegts_m2ts_mode", "1"])
    }

    /// The shapes: the file, and the plain 188-byte TS its served `media.ts` must be.
    static func shape(_ name: String) async throws -> (file: URL, plain: Data) {
        let folder = PlaybackFixtures.folder
        switch name {
        case "192":
            let file = try #require(await m2ts)
            let bytes = try Data(contentsOf: file)
            var plain = Data(capacity: bytes.count)
            var position = bytes.startIndex
            while position + 192 <= bytes.endIndex {
                plain.append(bytes[(position + 4)..<(position + 192)])
                position += 192
            }
            return (file, plain)
        case "204":
            // Each packet followed by 16 bytes of "parity" (bytes that must not reach the player).
            let plain = try Data(contentsOf: try #require(await Self.plain))
            var bytes = Data(capacity: plain.count / 188 * 204)
            var position = plain.startIndex
            while position + 188 <= plain.endIndex {
                bytes.append(plain[position..<(position + 188)])
                bytes.append(Data((0..<16).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ position) }))
                position += 188
            }
            let file = folder.appendingPathComponent("packets-dvb.ts")
            try bytes.write(to: file)
            return (file, plain)
        default:
            // A recording that begins 100 bytes into its first packet.
            let plain = try Data(contentsOf: try #require(await Self.plain))
            let file = folder.appendingPathComponent("packets-cut.ts")
            try plain.dropFirst(100).write(to: file)
            return (file, plain.dropFirst(188))
        }
    }

    /// The byte ranges (offset, length) of a media playlist's segments.
    func byteRanges(_ playlist: String) -> [(offset: Int, length: Int)] {
        playlist.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-BYTERANGE:") }.compactMap { line in
            let fields = line.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@")
            guard fields.count == 2, let length = Int(fields[0]), let offset = Int(fields[1]) else { return nil }
            return (offset, length)
        }
    }

    /// `tsplayer serve` serves the file as plain 188-byte TS: `media.ts` is exactly the file's packets without their
    /// extra bytes (whole, Range requests, 416 past the end), every segment and I-frame range starts on a packet
    /// boundary with a sync byte, the durations add up to the file's within a frame, ffmpeg decodes the served HLS to
    /// the source's video frames and audio samples, each I-frame range to one picture, `remux` to the source's frames,
    /// and m3u8lint finds nothing in any served playlist.
    @Test(arguments: ["192", "204", "cut"])
    func servedAsPlainTS(_ name: String) async throws {
        let (file, plain) = try await Self.shape(name)
        let server = try await ServerProcess(arguments: [
            file.path, "--segment-duration", "2", "--container", "ts", "-v",
        ])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let playlist = try await waitForEndList(base + "index.m3u8")

        let served = try await fetchBytes(base + "media.ts")
        #expect(served == plain, "\(name): media.ts is \(served.count) bytes, the plain packets \(plain.count)")
        let ranges = byteRanges(playlist)
        #expect(ranges.count == 3, "\(playlist)")
        #expect(ranges.last.map { $0.offset + $0.length } == plain.count, "\(playlist)")
        for range in ranges {
            #expect(range.offset % 188 == 0 && range.length % 188 == 0, "\(range)")
            #expect(plain[plain.startIndex + range.offset] == 0x47, "\(range)")
        }
        let total = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst(8).prefix { $0 != "," }) }.reduce(0, +)
        let probed = try await TSProbeDuration.of(file.path)
        #expect(probed > 0 && abs(total - probed) <= 0.04, "playlist \(total) s, ffprobe \(probed) s")

        // Range requests are answered from the plain packets.
        let curl = try #require(EndToEnd.tool("curl"))
        for (first, last) in [(0, 187), (1000, 50_000), (plain.count - 10, plain.count - 1)] {
            let result = try await EndToEnd.run(
                curl, ["-sS", "-r", "\(first)-\(last)", "-w", "%{http_code}", base + "media.ts"])
            let status = String(decoding: result.stdout.suffix(3), as: UTF8.self)
            #expect(status == "206", "\(first)-\(last): \(status)")
            #expect(result.stdout.dropLast(3) == plain[(plain.startIndex + first)...(plain.startIndex + last)])
        }
        let past = try await EndToEnd.run(
            curl, ["-sS", "-o", "/dev/null", "-r", "\(plain.count)-", "-w", "%{http_code}", base + "media.ts"])
        #expect(past.out == "416", "\(past.out)")

        // ffmpeg decodes the served HLS to the source's frames and samples.
        let check = FragmentedPlaybackTests()
        for stream in ["v:0", "a:0"] {
            let source = try await check.frameHashes(file.path, stream)
            #expect(!source.isEmpty)
            #expect(try await check.frameHashes(master, stream) == source, "\(name) \(stream)")
        }
        // Each I-frame range is one picture, on a packet boundary.
        var masterText = try await fetch(master)
        for _ in 0..<50 where !masterText.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            masterText = try await fetch(master)
        }
        let iFrames = try await fetch(base + "iframes.m3u8")
        let iFrameRanges = byteRanges(iFrames)
        #expect(iFrameRanges.count == 6, "\(iFrames)")
        #expect(iFrameRanges.allSatisfy { $0.offset % 188 == 0 && plain[plain.startIndex + $0.offset] == 0x47 })
        await #expect(try decodedFrames(base + "iframes.m3u8")["video"] == iFrameRanges.count)
        for url in [master, base + "index.m3u8", base + "iframes.m3u8"] { try await check.lint(url) }

        // remux reads the file's packets as they are.
        let tool = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent("packets-\(name).mp4").path
        let remux = try await EndToEnd.run(tool, ["remux", file.path, output], timeout: 60)
        #expect(remux.status == 0, "\(remux.err)")
        #expect(try await check.frameHashes(output, "v:0") == (try check.frameHashes(file.path, "v:0")))
    }

    /// GStreamer's playbin plays the served M2TS file to its end: every video frame, and the audio. The audio is
    /// AC-3, as on AVCHD camcorders and Blu-ray (GStreamer reads no AAC from an M2TS file ffmpeg writes, where it
    /// is private data, from the file itself either).
    @Test func gstreamerPlaysM2TSToTheEnd() async throws {
        let file = try #require(
            await Self.encode("packets-ac3.m2ts", ["-c:a", "ac3", "-b:a", "96k", "-mpegts_m2ts_mode", "1"]))
        let server = try await ServerProcess(arguments: [file.path, "--segment-duration", "2", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        _ = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "index.m3u8"))
        let played = try await gstreamerPlayback(master)
        let source = try await decodedFrames(file.path)
        #expect(played.status == 0, "\(played.log)")
        #expect(played.videoFrames == source["video"], "\(played.videoFrames) frames of \(source)")
        #expect(abs(played.audioSeconds - 6) < 0.1, "\(played.audioSeconds) s of audio")
    }
}
