import FileRange
// Local playback end to end: `tsplayer serve` (and the session API) against ffmpeg/ffprobe as a real HLS client,
// on fixtures made by ffmpeg in a temporary folder.
import Foundation
import LoopbackHTTP
import TSPlayerKit
import Testing

/// A running `tsplayer serve`: the URLs it printed, and its request log as it grows.
final class ServerProcess: Sendable {
    let child: ChildProcess
    let lines: [String]

    /// Starts `tsplayer serve` and waits (20 s at most) until it has printed `expectedLines` lines on stdout.
    init(arguments: [String], expectedLines: Int = 1) async throws {
        guard let tsplayer = EndToEnd.product("tsplayer") else { throw CocoaError(.fileNoSuchFile) }
        child = try await ChildProcess(tsplayer, ["serve"] + arguments, stopSignal: SIGINT)
        lines = await child.lines(expectedLines, within: 20)
    }

    var process: Process { child.process }

    /// Everything logged on stderr so far.
    var logText: String { child.stderr }

    /// Interrupts the server (as Ctrl-C does) and waits for it to exit.
    func stop() async { await child.stop() }
    func stop() { child.stop() }
}

/// Media fixtures made once per test process with ffmpeg.
enum PlaybackFixtures {
    static let folder = TemporaryFolders.makeShared(prefix: "playback-fixtures-")

    /// 8 s of H.264 + AAC, a keyframe every second.
    static var movie: URL? { get async { await movieFixture.value } }
    private static let movieFixture = SharedFixture<URL?> {
        await make("movie.ts") { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "8", "-c:v", "libx264", "-preset", "veryfast", "-g", "25",
                "-keyint_min", "25", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", path,
            ]
        }
    }

    /// 40 s of the same, for seeking: twenty 2 s segments.
    static var longMovie: URL? { get async { await longMovieFixture.value } }
    private static let longMovieFixture = SharedFixture<URL?> {
        await make("long.ts") { path in
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "40", "-c:v", "libx264", "-preset", "veryfast", "-g",
                "25",
                "-keyint_min", "25", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", path,
            ]
        }
    }

    /// The fixture `name`, made once per process: tests running at once that ask for the same name await the one
    /// ffmpeg run (a second run, or a look at the file while the first still writes it, would see a partial file).
    static func make(_ name: String, arguments: (String) -> [String]) async -> URL? {
        let url = folder.appendingPathComponent(name)
        let command = arguments(url.path)
        let fixture = made.withLock { made in
            if let fixture = made[name] { return fixture }
            let fixture = SharedFixture<URL?> {
                if FileManager.default.fileExists(atPath: url.path) { return url }
                guard let ffmpeg = EndToEnd.tool("ffmpeg"),
                    let result = try? await EndToEnd.run(ffmpeg, ["-v", "error", "-y"] + command), result.status == 0
                else { return nil }
                return url
            }
            made[name] = fixture
            return fixture
        }
        return await fixture.value
    }
    private static let made = Locked<[String: SharedFixture<URL?>]>([:])
}

/// Frame counts per stream type as ffprobe decodes them.
func decodedFrames(_ input: String) async throws -> [String: Int] {
    guard let ffprobe = EndToEnd.tool("ffprobe") else { return [:] }
    let result = try await EndToEnd.run(
        ffprobe,
        ["-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "json", input])
    #expect(result.status == 0, "ffprobe \(input): \(result.err)")
    let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
    var counts: [String: Int] = [:]
    for stream in object?["streams"] as? [[String: Any]] ?? [] {
        if let type = stream["codec_type"] as? String, let count = Int(stream["nb_read_frames"] as? String ?? "") {
            counts[type, default: 0] += count
        }
    }
    return counts
}

/// What GStreamer's playbin (hlsdemux, the libav decoders) decodes from `url` when it plays it as fast as it can:
/// its exit status (0 only when the pipeline reached its end without an error), the number of video frames and the
/// seconds of audio its sinks received. The sinks write the decoded media to files (video as 16x16 grey pictures,
/// audio as 8 kHz mono 16-bit samples), so the counts come from bytes, not from gst-launch's wording.
func gstreamerPlayback(_ url: String) async throws -> (
    status: Int32, videoFrames: Int, audioSeconds: Double, log: String
) {
    let gst = try #require(EndToEnd.tool("gst-launch-1.0"))
    let folder = TemporaryFolders.make(prefix: "gst-")
    let video = folder.appendingPathComponent("video.gray").path
    let audio = folder.appendingPathComponent("audio.s16").path
    let result = try await EndToEnd.run(
        gst,
        [
            "-q", "playbin", "uri=\(url)",
            "video-sink=videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=16,height=16 ! filesink location=\(video)",
            "audio-sink=audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=8000,channels=1 ! filesink location=\(audio)",
        ], timeout: 120)
    let videoBytes = (try? FileManager.default.attributesOfItem(atPath: video)[.size] as? Int) ?? 0
    let audioBytes = (try? FileManager.default.attributesOfItem(atPath: audio)[.size] as? Int) ?? 0
    return (result.status, videoBytes / 256, Double(audioBytes) / 16_000, result.out + result.err)
}

/// The timestamp (input timeline) of the first video frame ffmpeg decodes after seeking to `time`: read from the
/// frame list of ffmpeg's `framemd5` output in the input's time base.
func seekedFrameTime(_ input: String, at time: Double) async throws -> Double? {
    guard let ffmpeg = EndToEnd.tool("ffmpeg") else { return nil }
    let result = try await EndToEnd.run(
        ffmpeg,
        [
            "-v", "error", "-copyts", "-ss", String(time), "-i", input, "-frames:v", "1", "-an", "-enc_time_base", "-1",
            "-f", "framemd5", "-",
        ])
    #expect(result.status == 0, "ffmpeg seek \(time) on \(input): \(result.err)")
    return FrameList(framemd5: result.out).times.first
}

/// The frames of one stream in ffmpeg's `framemd5` output (`#tb 0: 1/90000`, then `stream, dts, pts, duration,
/// size, hash` a line): their presentation times in seconds.
struct FrameList {
    var times: [Double] = []

    init(framemd5 text: String) {
        var timeBase = 0.0
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#tb 0:") {
                let fraction = line.dropFirst("#tb 0:".count).split(separator: "/")
                if fraction.count == 2, let n = Double(fraction[0].trimmingCharacters(in: .whitespaces)),
                    let d = Double(fraction[1].trimmingCharacters(in: .whitespaces)), d > 0
                {
                    timeBase = n / d
                }
                continue
            }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !line.hasPrefix("#"), fields.count == 6, fields[0] == "0", let pts = Double(fields[2]) else {
                continue
            }
            times.append(pts * timeBase)
        }
    }
}

/// The start time ffprobe reports for a file's first stream.
func startTime(_ path: String) async throws -> Double? {
    guard let ffprobe = EndToEnd.tool("ffprobe") else { return nil }
    let result = try await EndToEnd.run(
        ffprobe, ["-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", path])
    return Double(result.out.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Fetches a URL's body.
func fetch(_ url: String) async throws -> String {
    guard let curl = EndToEnd.tool("curl") else { return "" }
    let result = try await EndToEnd.run(curl, ["-sS", "--max-time", "10", url])
    #expect(result.status == 0, "curl \(url): \(result.err)")
    return result.out
}

/// Waits until the media playlist is final (the index is complete).
func waitForEndList(_ url: String) async throws -> String {
    var text = ""
    for _ in 0..<100 {
        text = try await fetch(url)
        if text.contains("#EXT-X-ENDLIST") { return text }
        await suspend(0.1)
    }
    Issue.record("playlist never ended: \(text)")
    return text
}

@Suite(.serialized, .temporaryFolders) struct PlaybackEndToEndTests {
    @Test func servedFileDecodesFrameForFrameLikeTheSource() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "2", "--json", "-v"])
        defer { server.stop() }
        let json = try #require(server.lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let input = try #require((object["inputs"] as? [[String: Any]])?.first)
        let master = try #require(input["playlist"] as? String)
        let media = try #require(input["media"] as? String)
        #expect(master.hasPrefix("http://127.0.0.1:") && master.hasSuffix("/master.m3u8"))
        // The variant is described from the stream itself.
        let variant = try await fetch(master)
        #expect(variant.contains("CODECS=\"avc1.") && variant.contains(",mp4a.40.2\""), "\(variant)")
        #expect(variant.contains("RESOLUTION=320x180") && variant.contains("FRAME-RATE=25"), "\(variant)")
        #expect((input["duration"] as? Double).map { abs($0 - 8) < 0.2 } == true, "\(input)")

        let playlist = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "index.m3u8"))
        #expect(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD"))
        // The durations add up to ffprobe's duration of the file, within one frame.
        let total = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst(8).prefix { $0 != "," }) }.reduce(0, +)
        let probed = try await TSProbeDuration.of(movie.path)
        #expect(probed > 0 && abs(total - probed) <= 0.04, "playlist \(total) s, ffprobe \(probed) s")
        #expect(playlist.components(separatedBy: "#EXT-X-BYTERANGE:").count - 1 == 4, "\(playlist)")

        let source = try await decodedFrames(movie.path)
        #expect(source["video"] == 200 && source["audio"] != nil, "\(source)")
        await #expect(try decodedFrames(master) == source)
        await #expect(try decodedFrames(media) == source)  // the raw file URL, for players that read TS
        // The session token never reaches the log.
        let token = master.split(separator: "/")[2]
        #expect(!server.logText.contains(token) && server.logText.contains("/{token}/index.m3u8"), "\(server.logText)")
    }

    /// Seeking through HLS lands on the frame ffmpeg finds in the source file (or, where ffmpeg's own seek in the raw
    /// file lands late, on the exact frame asked for), within one frame, and reads only a few segments.
    @Test func seekingLandsOnTheRightFrameAndReadsOnlyWhatItNeeds() async throws {
        let movie = try #require(await PlaybackFixtures.longMovie)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: movie.path)[.size] as? Int)
        let start = try await #require(try startTime(movie.path))
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "2", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        _ = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "index.m3u8"))
        let frame = 1.0 / 25
        for time in [5.3, 12.7, 23.1, 31.9] {
            let before = server.logText.count
            let served = try await #require(try seekedFrameTime(master, at: time))
            let direct = try await #require(try seekedFrameTime(movie.path, at: time))
            let error = min(abs(served - direct), abs(served - (start + time)))
            #expect(
                error <= frame + 0.002, "seek \(time)s: HLS frame at \(served), file \(direct), exact \(start + time)")
            await suspend(0.2)
            // Bytes of media sent for this seek, from the server's log: a small part of the file.
            let lines = server.logText.dropFirst(before).split(separator: "\n").filter { $0.contains("media.ts") }
            let bytes = lines.compactMap { line in line.split(separator: " ").dropFirst(3).first.flatMap { Int($0) } }
                .reduce(0, +)
            #expect(bytes > 0 && bytes < size / 4, "seek to \(time)s read \(bytes) of \(size) bytes: \(lines)")
        }
    }

    /// `tsplayer serve` behaves like an argument-parser tool: help on stdout with exit 0, a usage mistake on stderr
    /// with exit 64, a missing file exits 1 with an error, and Ctrl-C stops the server with exit 0.
    @Test func serveCommandLine() async throws {
        let tool = try #require(EndToEnd.product("tsplayer"))
        let help = try await EndToEnd.run(tool, ["serve", "--help"])
        #expect(help.status == 0 && help.err.isEmpty)
        #expect(help.out.hasPrefix("OVERVIEW: Serve MPEG-TS files as HLS on a loopback port."), "\(help.out)")
        for heading in ["USAGE: tsplayer serve", "ARGUMENTS:", "OPTIONS:", "--segment-duration", "--cors", "--json"] {
            #expect(help.out.contains(heading), "help mentions \(heading)")
        }
        let unknown = try await EndToEnd.run(tool, ["serve", "--bogus"])
        #expect(unknown.status == 64 && unknown.out.isEmpty)
        #expect(
            unknown.err.hasPrefix("Error: unknown option '--bogus'\nUSAGE: tsplayer serve [<file> ...]"),
            "\(unknown.err)")
        let badPort = try await EndToEnd.run(tool, ["serve", "--port", "70000"])
        #expect(badPort.status == 64 && badPort.err.hasPrefix("Error: invalid port '70000'"), "\(badPort.err)")
        let missing = try await EndToEnd.run(tool, ["serve", "/no/such/file.ts"])
        #expect(
            missing.status == 2 && missing.err.hasPrefix("Error: cannot open input '/no/such/file.ts'"),
            "\(missing.err)")
        let top = try await EndToEnd.run(tool, ["--help"])
        #expect(top.status == 0 && top.out.contains("SUBCOMMANDS:") && top.out.contains("  serve "), "\(top.out)")
        let none = try await EndToEnd.run(tool, [])
        #expect(none.status == 64 && none.err.hasPrefix("Error: missing subcommand"), "\(none.err)")

        // The built-in sample is served with no argument, and Ctrl-C ends the process cleanly.
        let server = try await ServerProcess(arguments: [])
        let url = try #require(server.lines.first)
        await #expect(try fetch(url).contains("#EXT-X-STREAM-INF:"))
        await server.stop()
        #expect(server.process.terminationStatus == 0 && server.process.terminationReason == .exit)
    }

    /// A second real client: GStreamer's playbin (hlsdemux, libav decoders) plays the served playlist to the end.
    @Test func gstreamerPlaysToTheEnd() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "2", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        _ = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "index.m3u8"))
        // Played to the end: every video frame of the file decoded, and its audio to within a frame's length.
        let played = try await gstreamerPlayback(master)
        let source = try await decodedFrames(movie.path)
        #expect(played.status == 0, "\(played.log)")
        #expect(played.videoFrames == source["video"], "\(played.videoFrames) frames of \(source)")
        #expect(abs(played.audioSeconds - 8) < 0.1, "\(played.audioSeconds) s of audio")
        // It read the media through the session's byte ranges: every segment once at least.
        #expect(server.logText.components(separatedBy: "media.ts 206").count - 1 >= 4, "\(server.logText)")
    }

    /// The I-frame playlist lists each keyframe's I-frame exactly: decoded through HLS, each byte range gives one
    /// video frame, one per second of the 1 s GOP fixture.
    @Test func iFramePlaylistHoldsOneFramePerRange() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let session = try TSPlaybackSession(tsFile: movie.path, options: .init(writesSidecar: false))
        let server = PlaybackServer()
        let base = try await server.add(session)
        await session.waitUntilIndexed()
        let master = try await fetch(base + "master.m3u8")
        #expect(master.contains("#EXT-X-I-FRAME-STREAM-INF:") && master.contains("URI=\"iframes.m3u8\""), "\(master)")
        let iframes = try await fetch(base + "iframes.m3u8")
        #expect(iframes.contains("#EXT-X-I-FRAMES-ONLY"), "\(iframes)")
        let ranges = iframes.components(separatedBy: "#EXT-X-BYTERANGE:").count - 1
        #expect(ranges == 8, "\(iframes)")
        let frames = try await decodedFrames(base + "iframes.m3u8")
        #expect(frames["video"] == ranges, "\(frames)")
        await server.remove(session)
    }

    /// m3u8lint finds no error and no warning in what the session serves (informational notes only).
    @Test func servedPlaylistsPassTheLinter() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let lint = try #require(EndToEnd.product("m3u8lint"))
        let server = try await ServerProcess(arguments: [movie.path])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        let mediaText = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "index.m3u8"))
        var masterText = try await fetch(master)
        for _ in 0..<50 where !masterText.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            masterText = try await fetch(master)
        }
        let iFrameText = try await fetch(master.replacingOccurrences(of: "master.m3u8", with: "iframes.m3u8"))
        for text in [masterText, mediaText, iFrameText] {
            let result = try await EndToEnd.run(lint, ["-"], input: Data(text.utf8))
            #expect(result.status == 0, "\(result.out)\n\(text)")
            #expect(!result.out.contains(": error:") && !result.out.contains(": warning:"), "\(result.out)")
        }
    }

    /// Modes 2 and 3: the movie cut into 2 s pieces by ffmpeg's segment muxer, then served as one concatenated
    /// file with the pieces' byte ranges, and as a folder of pieces.
    @Test func concatenatedFileAndFolderOfPieces() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let pieces = PlaybackFixtures.folder.appendingPathComponent("pieces-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: pieces, withIntermediateDirectories: true)
        let cut = try await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-i", movie.path, "-c", "copy", "-f", "segment", "-segment_time", "2",
                "-segment_format", "mpegts", pieces.appendingPathComponent("piece%d.ts").path,
            ])
        #expect(cut.status == 0, "\(cut.err)")
        let names = try FileManager.default.contentsOfDirectory(atPath: pieces.path).sorted {
            (Int($0.dropFirst(5).dropLast(3)) ?? 0) < (Int($1.dropFirst(5).dropLast(3)) ?? 0)
        }
        #expect(names.count == 4, "\(names)")
        let source = try await decodedFrames(movie.path)

        // Mode 3: the folder, discovered in natural name order.
        let folderServer = try await ServerProcess(arguments: [pieces.path])
        let folderURL = try #require(folderServer.lines.first)
        await #expect(try decodedFrames(folderURL) == source)
        await folderServer.stop()

        // Mode 2: the pieces concatenated, with their byte ranges and durations given.
        var joined = Data()
        var segments: [SegmentInfo] = []
        for name in names {
            let data = try Data(contentsOf: pieces.appendingPathComponent(name))
            let probe = try await TSProbeDuration.of(pieces.appendingPathComponent(name).path)
            segments.append(SegmentInfo(offset: UInt64(joined.count), duration: probe, length: UInt64(data.count)))
            joined += data
        }
        let joinedURL = pieces.appendingPathComponent("joined.bin")
        try joined.write(to: joinedURL)
        let session = try TSPlaybackSession(tsFile: joinedURL.path, segments: segments)
        let server = PlaybackServer()
        let base = try await server.add(session)
        let playlist = try await fetch(base + "index.m3u8")
        #expect(playlist.contains("#EXT-X-ENDLIST") && playlist.components(separatedBy: "#EXTINF").count == 5)
        await #expect(try decodedFrames(base + "master.m3u8") == source)
        await server.remove(session)
        // The routes are gone (and with no session left, so is the server).
        let curl = try #require(EndToEnd.tool("curl"))
        let after = try await EndToEnd.run(curl, ["-s", "--max-time", "5", base + "index.m3u8"])
        #expect(!after.out.contains("#EXTM3U"))
    }

    /// After the server is stopped (as when an app was in the background), revival brings the same sessions back on
    /// the same port when it is free, and on a new port, with the new URLs published, when it is not.
    @Test func revivedServerKeepsSessions() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let session = try TSPlaybackSession(tsFile: movie.path)
        let server = PlaybackServer()
        let base = try await server.add(session)
        await session.waitUntilIndexed()
        await #expect(try fetch(base + "index.m3u8").contains("#EXT-X-ENDLIST"))
        let port = try #require(server.boundPort)
        #expect(try await server.revive() == port)
        #expect(server.baseURL(for: session) == base)
        await #expect(try fetch(base + "index.m3u8").contains("#EXT-X-ENDLIST"))

        // Someone else takes the port while the server is down: revival moves to a new port.
        let other = PlaybackServer(
            configuration: {
                var c = HTTPServerConfiguration()
                c.port = port
                return c
            }())
        let squatter = try TSPlaybackSession(tsFile: movie.path)
        await server.remove(session)
        _ = try await other.add(squatter)
        _ = try await server.add(session)  // the port is taken, so the server binds a new one
        let moved = try #require(server.baseURL(for: session))
        #expect(moved != base && moved.hasSuffix("/\(session.token.value)/"))
        await #expect(try fetch(moved + "index.m3u8").contains("#EXT-X-ENDLIST"))
        #expect(try await server.revive() != port)
        await other.remove(squatter)
        await server.remove(session)
    }

    /// Mode 4: a folder holding an fMP4 HLS presentation, served as it is.
    @Test func hlsFolderIsServedAsItIs() async throws {
        let movie = try #require(await PlaybackFixtures.movie)
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let folder = PlaybackFixtures.folder.appendingPathComponent("fmp4-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let made = try await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-i", movie.path, "-c", "copy", "-bsf:a", "aac_adtstoasc", "-f", "hls", "-hls_time", "2",
                "-hls_playlist_type", "vod",
                "-hls_segment_type", "fmp4", folder.appendingPathComponent("index.m3u8").path,
            ])
        #expect(made.status == 0, "\(made.err)")
        let server = try await ServerProcess(arguments: [folder.path])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        #expect(url.hasSuffix("/index.m3u8"))
        await #expect(try decodedFrames(url) == decodedFrames(movie.path))
        // Nothing outside the folder is reachable.
        let curl = try #require(EndToEnd.tool("curl"))
        let base = url.replacingOccurrences(of: "index.m3u8", with: "")
        for attack in ["../movie.ts", "%2e%2e/movie.ts", "..%2fmovie.ts", "sub/../../movie.ts"] {
            let result = try await EndToEnd.run(
                curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--path-as-is", base + attack])
            #expect(result.out == "404", "\(attack) -> \(result.out)")
        }
    }
}

/// The duration ffprobe reports for a file.
enum TSProbeDuration {
    static func of(_ path: String) async throws -> Double {
        guard let ffprobe = EndToEnd.tool("ffprobe") else { return 0 }
        let result = try await EndToEnd.run(
            ffprobe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        return Double(result.out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}
