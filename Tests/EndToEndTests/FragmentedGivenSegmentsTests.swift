// Caller-given segments (`TSPlaybackSession(tsFile:segments:)`) served as fragmented MP4: the same frames as the
// source through a real HLS client (ffmpeg), decode times that run on (ffprobe), a discontinuity where the given
// pieces reset their time stamps, and a clear refusal of a segment that does not start with a keyframe.
import Foundation
import TSPlayerKit
import Testing

@Suite(.serialized) struct FragmentedGivenSegmentsTests {
    let checks = FragmentedPlaybackTests()

    /// The pieces of `movie` that ffmpeg's segment muxer cuts at keyframes, joined into one file, with their
    /// byte ranges and durations.
    func joinedPieces(_ movie: URL, name: String) async throws -> (url: URL, segments: [SegmentInfo]) {
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let pieces = PlaybackFixtures.folder.appendingPathComponent("given-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: pieces, withIntermediateDirectories: true)
        let cut = try await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-i", movie.path, "-map", "0", "-c", "copy", "-f", "segment", "-segment_time", "1",
                "-segment_format", "mpegts", pieces.appendingPathComponent("piece%d.ts").path,
            ])
        #expect(cut.status == 0, "\(cut.err)")
        let names = try FileManager.default.contentsOfDirectory(atPath: pieces.path).sorted {
            (Int($0.dropFirst(5).dropLast(3)) ?? 0) < (Int($1.dropFirst(5).dropLast(3)) ?? 0)
        }
        #expect(names.count >= 4, "\(names)")
        return try await join(
            names.map { pieces.appendingPathComponent($0) }, into: pieces.appendingPathComponent("all.bin"))
    }

    func join(_ files: [URL], into url: URL) async throws -> (url: URL, segments: [SegmentInfo]) {
        var joined = Data()
        var segments: [SegmentInfo] = []
        for file in files {
            let data = try Data(contentsOf: file)
            let duration = try await TSProbeDuration.of(file.path)
            segments.append(SegmentInfo(offset: UInt64(joined.count), duration: duration, length: UInt64(data.count)))
            joined += data
        }
        try joined.write(to: url)
        return (url, segments)
    }

    /// Serves the session and checks every stream decodes like `source`, and each track's decode times run on.
    func checkServed(_ session: TSPlaybackSession, source: URL, streams: [String]) async throws -> String {
        #expect(session.container == .fmp4, "\(session.diagnostics)")
        let server = PlaybackServer()
        let base = try await server.add(session)
        let master = try await fetch(base + "master.m3u8")
        for stream in streams {
            let served = try await checks.frameHashes(base + "master.m3u8", stream)
            let expected = try await checks.frameHashes(source.path, stream)
            #expect(!expected.isEmpty && served == expected, "\(stream): \(served.count) served, \(expected.count)")
        }
        let video = try await fetch(base + "video.m3u8")
        #expect(video.contains("#EXT-X-ENDLIST") && video.contains("#EXT-X-MAP:URI="), "\(video)")
        var names = ["video"]
        for line in master.split(separator: "\n") where line.contains("TYPE=AUDIO") {
            if let uri = line.components(separatedBy: "URI=\"").last?.prefix(while: { $0 != "\"" }) {
                names.append(String(uri.dropLast(".m3u8".count)))
            }
        }
        for (number, name) in names.enumerated() {
            let media = try await fetch(base + name + ".m3u8")
            var bytes = try await fetchBytes(base + name + "-init.mp4")
            for segment in 0..<(media.components(separatedBy: "#EXTINF:").count - 1) {
                await bytes += try fetchBytes(base + name + "/\(segment).m4s")
            }
            let joined = PlaybackFixtures.folder.appendingPathComponent("given-\(UUID().uuidString).mp4")
            try bytes.write(to: joined)
            await expectContinuous(try packetTimes(joined.path, number == 0 ? "v:0" : "a:0"), "given \(name)")
        }
        await server.remove(session)
        return video
    }

    @Test func givenSegmentsOfTwoLanguagesServedAsFragmentedMP4() async throws {
        let movie = try #require(await FragmentedFixtures.twoLanguages)
        let (url, segments) = try await joinedPieces(movie, name: "languages")
        // auto picks fMP4 for two audio tracks, as for an indexed file.
        let session = try TSPlaybackSession(tsFile: url.path, segments: segments)
        #expect(session.diagnostics.contains { $0.hasPrefix("served as fragmented MP4") }, "\(session.diagnostics)")
        let video = try await checkServed(session, source: movie, streams: ["v:0", "a:0", "a:1"])
        #expect(!video.contains("#EXT-X-DISCONTINUITY"), "\(video)")
    }

    @Test func givenSegmentsThatResetTheirTimeStampsGetADiscontinuity() async throws {
        let movie = try #require(await FragmentedFixtures.concatenation)
        let parts = ["fmp4-concatenation-a.ts", "fmp4-concatenation-b.ts"].map {
            PlaybackFixtures.folder.appendingPathComponent($0)
        }
        let (url, segments) = try await join(
            parts, into: PlaybackFixtures.folder.appendingPathComponent("given-concatenation.bin"))
        let session = try TSPlaybackSession(
            tsFile: url.path, segments: segments, options: .init(container: .fmp4))
        let video = try await checkServed(session, source: movie, streams: ["v:0", "a:0"])
        #expect(video.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 2, "\(video)")
    }

    @Test func givenSegmentNotStartingOnAKeyframe() async throws {
        let movie = try #require(await FragmentedFixtures.twoLanguages)
        let size = UInt64(try Data(contentsOf: movie).count)
        // The second segment starts at a packet in the middle of the file: not a keyframe's.
        let middle = size / 188 / 2 * 188
        let segments = [
            SegmentInfo(offset: 0, duration: 2.5, length: middle),
            SegmentInfo(offset: middle, duration: 2.5, length: size - middle),
        ]
        do {
            _ = try TSPlaybackSession(tsFile: movie.path, segments: segments, options: .init(container: .fmp4))
            Issue.record("a segment starting mid-GOP was accepted for fMP4")
        } catch {
            #expect(error.code == .invalidSegment)
            #expect(
                "\(error)".contains("segment 1 (offset \(middle)) does not start with a keyframe"), "\(error)")
        }
        // auto falls back to TS and says why.
        let session = try TSPlaybackSession(tsFile: movie.path, segments: segments)
        #expect(session.container == .ts)
        #expect(
            session.diagnostics.contains { $0.contains("segment 1 (offset \(middle)) does not start with a keyframe") },
            "\(session.diagnostics)")
    }
}
