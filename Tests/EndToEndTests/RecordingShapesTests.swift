// Recordings as people have them (issue 29, item 5): interlaced H.264 (MBAFF, as x264 makes it), a recording that
// begins in the middle of a packet and of a GOP, and program map tables that list a PID that never appears. Each is
// made here with ffmpeg (the cut and the ghost PIDs written by the test) and served by `tsplayer serve` as TS and as
// fragmented MP4; ffmpeg decodes the served HLS to the frames and samples it decodes from the file.
import Foundation
import MPEGTS
import TSPlayerKit
import Testing

@Suite(.serialized, .temporaryFolders) struct RecordingShapesTests {
    static var interlaced: URL? { get async { await interlacedFixture.value } }
    private static let interlacedFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("shapes-mbaff.ts") { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "veryfast",
                "-flags", "+ildct+ilme", "-x264-params", "interlaced=1:keyint=25:min-keyint=25:scenecut=0",
                "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", path,
            ]
        }
    }
    static var plain: URL? { get async { await plainFixture.value } }
    private static let plainFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("shapes-plain.ts") { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "6", "-c:v", "libx264", "-preset", "veryfast", "-g", "25",
                "-keyint_min", "25", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", path,
            ]
        }
    }

    /// The plain file cut 100 bytes into a packet a third of the way in (inside a GOP).
    static func cutMidGOP() async throws -> URL {
        let bytes = try Data(contentsOf: try #require(await plain))
        let start = bytes.count / 188 / 3 * 188 + 100
        let file = PlaybackFixtures.folder.appendingPathComponent("shapes-midgop.ts")
        try bytes.dropFirst(start).write(to: file)
        return file
    }

    /// The plain file with its PMT listing one more stream, of `streamType` on PID 0x1FF0, that never appears: after
    /// the others, or (`first`) before them.
    static func ghost(streamType: UInt8, first: Bool) async throws -> URL {
        var bytes = [UInt8](try Data(contentsOf: try #require(await plain)))
        var position = 0
        var rewritten = 0
        while position + 188 <= bytes.count {
            let pid = Int(bytes[position + 1] & 0x1F) << 8 | Int(bytes[position + 2])
            let unitStart = bytes[position + 1] & 0x40 != 0
            // ffmpeg's PMT: PID 0x1000, no adaptation field, pointer_field 0, one section in one packet.
            if pid == 0x1000 && unitStart && bytes[position + 3] & 0x30 == 0x10 && bytes[position + 4] == 0 {
                let section = position + 5
                let length = Int(bytes[section + 1] & 0x0F) << 8 | Int(bytes[section + 2])
                let programInfo = Int(bytes[section + 10] & 0x0F) << 8 | Int(bytes[section + 11])
                let end = section + 3 + length
                guard bytes[section] == 0x02, end + 5 <= position + 188 else { break }
                let insertAt = first ? section + 12 + programInfo : end - 4
                let entry: [UInt8] = [streamType, 0xFF, 0xF0, 0xF0, 0x00]
                var packet = Array(bytes[position..<(end - 4)])
                packet.insert(contentsOf: entry, at: insertAt - position)
                let newLength = length + 5
                packet[section - position + 1] = (packet[section - position + 1] & 0xF0) | UInt8(newLength >> 8)
                packet[section - position + 2] = UInt8(newLength & 0xFF)
                let crc = CRC32MPEG2.checksum(packet[(section - position)...])
                packet += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
                packet += Array(repeating: 0xFF, count: 188 - packet.count)
                bytes.replaceSubrange(position..<(position + 188), with: packet)
                rewritten += 1
            }
            position += 188
        }
        #expect(rewritten > 0)
        let file = PlaybackFixtures.folder.appendingPathComponent(
            "shapes-ghost-\(streamType)-\(first ? "first" : "last").ts")
        try Data(bytes).write(to: file)
        return file
    }

    /// Serves `file` with `container` and checks: ffmpeg decodes the served HLS to the file's video frames and audio
    /// samples, the served playlists lint clean, `CODECS` names one video and one audio codec, and the playlist has
    /// more than one segment (the keyframes were found). Returns the multivariant playlist's text.
    @discardableResult
    func checkServed(
        _ file: URL, container: String, sourceVideo: String = "v:0", servedTSVideo: String = "v:0"
    ) async throws -> String {
        let server = try await ServerProcess(
            arguments: [file.path, "--segment-duration", "1", "--container", container, "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let base = String(master.dropLast("master.m3u8".count))
        let media = container == "ts" ? "index.m3u8" : "video.m3u8"
        let playlist = try await waitForEndList(base + media)
        #expect(playlist.components(separatedBy: "#EXTINF:").count - 1 >= 3, "\(playlist)")
        let check = FragmentedPlaybackTests()
        // A TS file (and TS served) with a ghost video listed first: ffmpeg's first video stream is the ghost, so
        // the real one is chosen by its PID in the file, and as the second video stream through HLS (whose reader
        // gives its streams no PID).
        for (source, served) in [(sourceVideo, container == "ts" ? servedTSVideo : "v:0"), ("a:0", "a:0")] {
            let frames = try await check.frameHashes(file.path, source)
            #expect(!frames.isEmpty)
            #expect(
                try await check.frameHashes(master, served) == frames,
                "\(file.lastPathComponent) \(container) \(source)")
        }
        let text = try await fetch(master)
        let variant = text.split(separator: "\n").first { $0.hasPrefix("#EXT-X-STREAM-INF:") } ?? ""
        let codecs = variant.components(separatedBy: "CODECS=\"").dropFirst().first?.prefix { $0 != "\"" }
        let list = codecs.map { $0.split(separator: ",").map(String.init) } ?? []
        #expect(list.count == 2 && list[0].hasPrefix("avc1.") && list[1] == "mp4a.40.2", "\(text)")
        if container == "ts" {
            for url in [master, base + "index.m3u8"] { try await check.lint(url) }
        } else {
            try await check.lintServed(master)
        }
        return text
    }

    @Test(arguments: ["ts", "fmp4"])
    func interlacedH264(_ container: String) async throws {
        try await checkServed(try #require(await Self.interlaced), container: container)
    }

    @Test(arguments: ["ts", "fmp4"])
    func recordingThatBeginsMidPacketAndMidGOP(_ container: String) async throws {
        try await checkServed(try await Self.cutMidGOP(), container: container)
    }

    /// A PMT that lists an AAC PID or an H.264 PID (before the real video) that never appears: the file plays as
    /// if it were not listed, `auto` serves it as TS (one audio track is there), and the ghost is in no CODECS.
    @Test(arguments: [(UInt8(0x0F), false), (UInt8(0x1B), true)])
    func ghostPID(_ streamType: UInt8, _ first: Bool) async throws {
        let file = try await Self.ghost(streamType: streamType, first: first)
        let video = streamType == 0x1B ? "i:256" : "v:0"
        try await checkServed(
            file, container: "ts", sourceVideo: video, servedTSVideo: streamType == 0x1B ? "v:1" : "v:0")
        try await checkServed(file, container: "fmp4", sourceVideo: video)
        let session = try TSPlaybackSession(tsFile: file.path, options: .init(writesSidecar: false))
        defer { session.close() }
        #expect(session.container == .ts, "\(session.diagnostics)")
        #expect(session.diagnostics.contains { $0.hasPrefix("PID 8176: ") }, "\(session.diagnostics)")
    }
}
