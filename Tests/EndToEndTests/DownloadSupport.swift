// Support for the HLSDownload end-to-end tests: ffmpeg-made HLS fixtures (built once per run) and helpers to compare
// a task folder with the origin (the origin itself is NginxOrigin).
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The HLS fixtures, made by ffmpeg once per test run under one temporary folder (`www`).
struct DownloadFixtures: Sendable {
    let root: URL
    var www: URL { root.appendingPathComponent("www") }

    /// The fixtures, or the reason they could not be made.
    static var shared: Result<DownloadFixtures, FixtureError> { get async { await sharedFixture.value } }
    private static let sharedFixture = SharedFixture<Result<DownloadFixtures, FixtureError>> {
        await make()
    }

    struct FixtureError: Error, CustomStringConvertible {
        var description: String
    }

    static func get(sourceLocation: SourceLocation = #_sourceLocation) async -> DownloadFixtures? {
        switch await shared {
        case .success(let fixtures): return fixtures
        case .failure(let error):
            Issue.record("fixtures: \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    private static func make() async -> Result<DownloadFixtures, FixtureError> {
        guard let ffmpeg = ExternalProgram.find("ffmpeg") else {
            return .failure(FixtureError(description: "ffmpeg is not installed; run Scripts/deps.sh"))
        }
        let root = TemporaryFolders.makeShared(prefix: "dl-e2e-")
        let www = root.appendingPathComponent("www")
        for folder in ["ts", "fmp4", "br", "mv", "aes", "small"] {
            try? FileManager.default.createDirectory(
                at: www.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let video = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=20"]
        let audio = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]
        let h264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        let hls = ["-f", "hls", "-hls_playlist_type", "vod"]
        var runs: [[String]] = [
            // A 600-segment TS VOD (0.1 s segments).
            video + audio + ["-t", "60"] + h264 + ["-crf", "20", "-g", "2", "-c:a", "aac", "-b:a", "64k"] + hls
                + ["-hls_time", "0.1", "-hls_segment_filename", "ts/s%03d.ts", "ts/index.m3u8"],
            // A small TS VOD for fault and interruption tests.
            video + ["-t", "8"] + h264 + ["-g", "10"] + hls
                + ["-hls_time", "0.5", "-hls_segment_filename", "small/s%03d.ts", "small/index.m3u8"],
            video + audio + ["-t", "6"] + h264 + ["-g", "20", "-c:a", "aac"] + hls
                + [
                    "-hls_time", "1", "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                    "-hls_segment_filename", "fmp4/s%03d.m4s", "fmp4/index.m3u8",
                ],
            video + ["-t", "6"] + h264 + ["-g", "20"] + hls + [
                "-hls_time", "1", "-hls_flags", "single_file",
                "br/index.m3u8",
            ],
            video + video + audio + ["-t", "6", "-map", "0:v", "-map", "1:v", "-map", "2:a"] + h264
                + ["-g", "20", "-s:v:0", "320x240", "-s:v:1", "160x120", "-b:v:0", "500k", "-b:v:1", "200k"]
                + ["-c:a", "aac"] + hls
                + [
                    "-hls_time", "1", "-master_pl_name", "master.m3u8", "-var_stream_map",
                    "v:0,agroup:aud v:1,agroup:aud a:0,agroup:aud,language:en,default:yes",
                    "-hls_segment_filename", "mv/%v/s%03d.ts", "mv/%v/index.m3u8",
                ],
        ]
        // AES-128 with key rotation: two halves with their own keys, joined with a discontinuity.
        for half in 0..<2 {
            let key = Data((0..<16).map { UInt8($0 * 7 + half * 3) })
            let keyPath = www.appendingPathComponent("aes/k\(half).key")
            try? key.write(to: keyPath)
            let info = "k\(half).key\n\(keyPath.path)\n\(half == 0 ? "0123456789abcdef0123456789abcdef" : "")\n"
            try? Data(info.utf8).write(to: root.appendingPathComponent("keyinfo\(half)"))
            runs.append(
                video + ["-t", "3"] + h264 + ["-g", "20"] + hls
                    + [
                        "-hls_time", "1", "-hls_key_info_file", root.appendingPathComponent("keyinfo\(half)").path,
                        "-hls_segment_filename", "aes/h\(half)_%02d.ts", "aes/half\(half).m3u8",
                    ])
        }
        for arguments in runs {
            let result: ProcessResult
            do {
                result = try await EndToEnd.run(
                    ffmpeg, ["-loglevel", "error", "-y"] + arguments, currentDirectory: www)
            } catch {
                return .failure(FixtureError(description: "ffmpeg: \(error)"))
            }
            guard result.status == 0 else {
                return .failure(FixtureError(description: "ffmpeg \(arguments.joined(separator: " ")): \(result.err)"))
            }
        }
        // Join the two encrypted halves into one playlist with a key change and a discontinuity.
        var joined = ""
        for half in 0..<2 {
            let text =
                (try? String(contentsOf: www.appendingPathComponent("aes/half\(half).m3u8"), encoding: .utf8)) ?? ""
            var lines = text.split(separator: "\n").map(String.init)
            lines.removeAll { $0.hasPrefix("#EXT-X-ENDLIST") }
            if half == 0 {
                joined = lines.joined(separator: "\n") + "\n"
            } else {
                let body = lines.drop { !$0.hasPrefix("#EXT-X-KEY") && !$0.hasPrefix("#EXTINF") }
                joined += "#EXT-X-DISCONTINUITY\n" + body.joined(separator: "\n") + "\n"
            }
        }
        joined += "#EXT-X-ENDLIST\n"
        try? Data(joined.utf8).write(to: www.appendingPathComponent("aes/index.m3u8"))
        return .success(DownloadFixtures(root: root))
    }

    /// The URIs of a playlist's URI lines and EXT-X-MAP / EXT-X-KEY URI attributes, in order.
    static func references(_ playlist: URL) -> [String] {
        let text = (try? String(contentsOf: playlist, encoding: .utf8)) ?? ""
        var out: [String] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MAP") || line.hasPrefix("#EXT-X-KEY") {
                if let start = line.range(of: "URI=\"") {
                    let rest = line[start.upperBound...]
                    if let end = rest.firstIndex(of: "\"") { out.append(String(rest[..<end])) }
                }
            } else if !line.hasPrefix("#") && !line.isEmpty {
                out.append(String(line))
            }
        }
        return out
    }

    /// The ordered list of distinct files an origin playlist and a local playlist reference, side by side.
    static func pairs(origin: URL, local: URL) -> [(origin: URL, local: URL)] {
        var seen: Set<String> = []
        var originFiles: [URL] = []
        for name in references(origin) where seen.insert(name).inserted {
            originFiles.append(origin.deletingLastPathComponent().appendingPathComponent(name))
        }
        seen = []
        var localFiles: [URL] = []
        for name in references(local) where seen.insert(name).inserted {
            localFiles.append(local.deletingLastPathComponent().appendingPathComponent(name))
        }
        return Array(zip(originFiles, localFiles))
    }

    /// Records an issue for every file of `local` that differs from its origin file; returns the number compared.
    @discardableResult
    static func expectIdentical(
        origin: URL, local: URL, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int {
        let pairs = pairs(origin: origin, local: local)
        #expect(
            references(origin).count == references(local).count, "reference counts differ",
            sourceLocation: sourceLocation)
        for pair in pairs {
            let a = try? Data(contentsOf: pair.origin)
            let b = try? Data(contentsOf: pair.local)
            #expect(
                a != nil && a == b, "\(pair.local.lastPathComponent) differs from \(pair.origin.path)",
                sourceLocation: sourceLocation)
        }
        return pairs.count
    }
}

enum DownloadTool {
    /// Runs `tsplayer download` (or another tsplayer subcommand) to completion.
    static func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> ProcessResult?
    {
        guard let tool = EndToEnd.product("tsplayer", sourceLocation: sourceLocation) else { return nil }
        return try await EndToEnd.run(tool, arguments)
    }

    /// A new store folder that the running test removes when it ends (its suite must be marked `.temporaryFolders`).
    static func temporaryStore(sourceLocation: SourceLocation = #_sourceLocation) -> URL {
        TemporaryFolders.make(prefix: "dl-store-", sourceLocation: sourceLocation)
    }

    /// The number of decoded video frames ffprobe counts in `url`.
    static func frameCount(_ url: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int? {
        guard let ffprobe = EndToEnd.tool("ffprobe", sourceLocation: sourceLocation) else { return nil }
        let result = try await EndToEnd.run(
            ffprobe,
            [
                "-v", "error", "-allowed_extensions", "ALL", "-count_frames", "-select_streams", "v:0",
                "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", url,
            ])
        // HLS input lists the stream under its program too: the first number is the count.
        return result.out.split(separator: "\n").lazy.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first
    }

    /// Runs `tsplayer tasks play <id>`, hands its playlist URL to `body`, then interrupts it (exit 0 expected).
    static func withPlay(
        store: String, id: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (String) async throws -> Void
    ) async throws {
        guard let tool = EndToEnd.product("tsplayer", sourceLocation: sourceLocation) else { return }
        let play = try await ChildProcess(tool, ["tasks", "play", id, "--store", store], stopSignal: SIGINT)
        let url = await play.lines(1, within: 20).first ?? ""
        #expect(url.hasPrefix("http://127.0.0.1:"), "tasks play printed \(url)", sourceLocation: sourceLocation)
        // Stopped, and its exit checked, however the body ends (a defer cannot await the stop).
        let outcome: Result<Void, any Error>
        do {
            try await body(url)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await play.stop(grace: 2)
        #expect(play.process.terminationStatus == 0, sourceLocation: sourceLocation)
        try outcome.get()
    }
}
