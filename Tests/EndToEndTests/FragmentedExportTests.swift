// `tsplayer tasks export ID FILE.mp4`: a real download from a loopback nginx origin (a TS VOD of two recordings
// joined with EXT-X-DISCONTINUITY, their time stamps reset between them), exported as one fragmented MP4 and read
// back by ffprobe and ffmpeg (framemd5 per stream against the source); and the errors for an unknown task and an
// fMP4 download.
import Foundation
import Testing

@Suite(.serialized) struct FragmentedExportTests {
    let checks = FragmentedPlaybackTests()

    /// An origin folder: `reset/index.m3u8` (the concatenation fixture's two parts as HLS, joined with a
    /// discontinuity) and `fmp4/index.m3u8` (the first part as fMP4 HLS).
    func makeOrigin() async throws -> URL {
        _ = try #require(await FragmentedFixtures.concatenation)
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let root = PlaybackFixtures.folder.appendingPathComponent("export-origin-\(UUID().uuidString)")
        let www = root.appendingPathComponent("www")
        for folder in ["reset", "fmp4"] {
            try FileManager.default.createDirectory(
                at: www.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        var playlist = ""
        for (half, name) in ["fmp4-concatenation-a.ts", "fmp4-concatenation-b.ts"].enumerated() {
            let part = PlaybackFixtures.folder.appendingPathComponent(name).path
            let result = try await EndToEnd.run(
                ffmpeg,
                [
                    "-v", "error", "-y", "-i", part, "-map", "0", "-c", "copy", "-f", "hls", "-hls_time", "1",
                    "-hls_playlist_type", "vod", "-hls_segment_filename", "reset/h\(half)_%02d.ts",
                    "reset/half\(half).m3u8",
                ], currentDirectory: www)
            #expect(result.status == 0, "\(result.err)")
            let text = try String(
                contentsOf: www.appendingPathComponent("reset/half\(half).m3u8"), encoding: .utf8)
            var lines = text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#EXT-X-ENDLIST") }
            if half == 0 {
                playlist = lines.joined(separator: "\n") + "\n"
            } else {
                lines = Array(lines.drop { !$0.hasPrefix("#EXTINF") })
                playlist += "#EXT-X-DISCONTINUITY\n" + lines.joined(separator: "\n") + "\n"
            }
        }
        playlist += "#EXT-X-ENDLIST\n"
        try Data(playlist.utf8).write(to: www.appendingPathComponent("reset/index.m3u8"))
        let fmp4 = try await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-y", "-i",
                PlaybackFixtures.folder.appendingPathComponent("fmp4-concatenation-a.ts").path,
                "-c", "copy", "-bsf:a", "aac_adtstoasc", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
                "-hls_segment_type", "fmp4",
                "-hls_segment_filename", "fmp4/s%02d.m4s", "fmp4/index.m3u8",
            ], currentDirectory: www)
        #expect(fmp4.status == 0, "\(fmp4.err)")
        return root
    }

    /// Downloads `url` into `store`; returns the task ID.
    func download(_ url: String, store: URL) async throws -> String {
        let result = try #require(try await DownloadTool.run(["download", url, "-o", store.path, "--json"]))
        #expect(result.status == 0, "\(result.err)")
        let last = result.out.split(separator: "\n").last.map { Data($0.utf8) } ?? Data()
        let event = try JSONSerialization.jsonObject(with: last) as? [String: Any]
        #expect(event?["event"] as? String == "completed", "\(result.out)")
        return try #require(event?["id"] as? String)
    }

    @Test func exportsADownloadedTSTaskAsOneFragmentedMP4() async throws {
        let movie = try #require(await FragmentedFixtures.concatenation)
        let root = try await makeOrigin()
        let nginx = try #require(try await NginxOrigin(root: root))
        defer { nginx.stop() }
        let store = root.appendingPathComponent("store")
        let id = try await download(nginx.url("www/reset/index.m3u8"), store: store)

        let output = root.appendingPathComponent("export.mp4")
        let result = try await #require(
            try DownloadTool.run(["tasks", "export", id, output.path, "--store", store.path]))
        #expect(result.status == 0, "\(result.err)")
        #expect(!FileManager.default.fileExists(atPath: output.path + ".ts.partial"))
        let streams = try await checks.probeStreams(output.path)
        #expect(streams.map(\.tag) == ["avc1", "mp4a"], "\(streams)")
        for stream in ["v:0", "a:0"] {
            let exported = try await checks.frameHashes(output.path, stream)
            let source = try await checks.frameHashes(movie.path, stream)
            #expect(!source.isEmpty && exported == source, "\(stream): \(exported.count) exported, \(source.count)")
            await expectContinuous(try packetTimes(output.path, stream), "export \(stream)")
        }

        // Errors: an unknown task, and a download that is fMP4, not TS.
        let unknown = try await #require(
            try DownloadTool.run(["tasks", "export", "nope", output.path, "--store", store.path]))
        #expect(unknown.status == 1 && unknown.err.contains("no task with id 'nope'"), "\(unknown.err)")
        let fmp4 = try await download(nginx.url("www/fmp4/index.m3u8"), store: store)
        let notTS = try await #require(
            try DownloadTool.run(["tasks", "export", fmp4, output.path + ".2.mp4", "--store", store.path]))
        #expect(
            notTS.status != 0 && notTS.err.contains("task '\(fmp4)'")
                && notTS.err.contains("only unencrypted TS tasks can be exported"), "\(notTS.err)")
        #expect(!FileManager.default.fileExists(atPath: output.path + ".2.mp4"))
    }
}
