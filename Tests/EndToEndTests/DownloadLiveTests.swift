import FileRange
// End-to-end tests of live recording with `tsplayer download`: a publisher thread slides a live window over the
// ffmpeg-made small TS stream (one segment every 0.5 s) in a playlist that nginx serves; the recording is
// byte-identical to the origin's segments and ends as a VOD playlist at EXT-X-ENDLIST or at --max-duration.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct DownloadLiveTests {
    /// The small stream's segments: EXTINF duration and file name.
    static func segments(_ fixtures: DownloadFixtures) -> [(duration: String, name: String)] {
        let text =
            (try? String(contentsOf: fixtures.www.appendingPathComponent("small/index.m3u8"), encoding: .utf8)) ?? ""
        var result: [(String, String)] = []
        var duration: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXTINF:") {
                duration = String(line.dropFirst(8).prefix { $0 != "," })
            } else if !line.hasPrefix("#"), let d = duration {
                result.append((d, String(line)))
                duration = nil
            }
        }
        return result
    }

    /// Publishes a live window of `window` segments in `folder/live.m3u8`, one more segment every `step` seconds
    /// from `first` segments on; with `ends`, EXT-X-ENDLIST follows the last segment, else the window stops growing
    /// there. Runs until `stop` is set.
    final class Publisher: Sendable {
        let stop = LockedValue(false)
        let folder: URL
        let segments: [(duration: String, name: String)]

        init(folder: URL, segments: [(duration: String, name: String)]) {
            self.folder = folder
            self.segments = segments
        }

        func write(through last: Int, window: Int, ended: Bool) {
            let first = max(0, last - window + 1)
            let text = MediaPlaylistText(
                targetDuration: 1, mediaSequence: first,
                segments: (first...last).map {
                    .init(duration: segments[$0].duration, uri: "../www/small/\(segments[$0].name)")
                },
                ended: ended
            ).text
            let path = folder.appendingPathComponent("live.m3u8")
            try? Data(text.utf8).write(to: folder.appendingPathComponent("live.tmp"))
            _ = rename(folder.appendingPathComponent("live.tmp").path, path.path)
        }

        func start(first: Int, window: Int, step: Double, ends: Bool) {
            write(through: first - 1, window: window, ended: false)
            Thread.detachNewThread { [self] in
                var last = first - 1
                while !stop.withLock({ $0 }) {
                    Thread.sleep(forTimeInterval: step)
                    if last + 1 < segments.count {
                        last += 1
                        write(through: last, window: window, ended: ends && last + 1 == segments.count)
                    }
                }
            }
        }
    }

    static func liveFolder(_ fixtures: DownloadFixtures) -> (url: URL, served: String) {
        let name = "live-\(UUID().uuidString)"
        let url = fixtures.root.appendingPathComponent(name)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return (url, name)
    }

    /// The local playlist's segment names and durations.
    static func recorded(_ playlist: URL) -> [(duration: Double, name: String)] {
        let text = (try? String(contentsOf: playlist, encoding: .utf8)) ?? ""
        var result: [(Double, String)] = []
        var duration: Double?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXTINF:") {
                duration = Double(line.dropFirst(8).prefix { $0 != "," })
            } else if !line.hasPrefix("#"), let d = duration {
                result.append((d, String(line)))
                duration = nil
            }
        }
        return result
    }

    @Test func liveWindowIsRecordedUntilEndList() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let segments = Self.segments(fixtures)
        #expect(segments.count >= 10)
        let live = Self.liveFolder(fixtures)
        let publisher = Publisher(folder: live.url, segments: segments)
        publisher.start(first: 3, window: 6, step: 0.5, ends: true)
        defer { publisher.stop.withLock { $0 = true } }
        let store = DownloadTool.temporaryStore()
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url(live.served + "/live.m3u8"), "-o", store.path, "--id", "live",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let local = store.appendingPathComponent("live/index.m3u8")
        let text = (try? String(contentsOf: local, encoding: .utf8)) ?? ""
        #expect(text.contains("#EXT-X-PLAYLIST-TYPE:VOD\n"))
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(!text.contains("#EXT-X-DISCONTINUITY"), "a segment was missed:\n\(text)")
        let recorded = Self.recorded(local)
        #expect(recorded.count == segments.count)
        for (n, entry) in recorded.enumerated() where n < segments.count {
            let origin = try Data(contentsOf: fixtures.www.appendingPathComponent("small/" + segments[n].name))
            let copy = try Data(contentsOf: store.appendingPathComponent("live/" + entry.name))
            #expect(origin == copy, "segment \(n)")
        }
        // Every segment fetched once.
        let fetched = await nginx.requests().filter { $0.uri.hasSuffix(".ts") }.map(\.uri)
        #expect(fetched.count == segments.count)
        #expect(Set(fetched).count == segments.count)
    }

    @Test func maxDurationEndsARecordingThatNeverEnds() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let segments = Self.segments(fixtures)
        let live = Self.liveFolder(fixtures)
        let publisher = Publisher(folder: live.url, segments: segments)
        publisher.start(first: 2, window: 4, step: 0.5, ends: false)
        defer { publisher.stop.withLock { $0 = true } }
        let store = DownloadTool.temporaryStore()
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url(live.served + "/live.m3u8"), "-o", store.path, "--id", "cut",
                "--max-duration", "2",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let local = store.appendingPathComponent("cut/index.m3u8")
        #expect(result.out == local.path + "\n")
        let text = (try? String(contentsOf: local, encoding: .utf8)) ?? ""
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
        let recorded = Self.recorded(local)
        let total = recorded.map(\.duration).reduce(0, +)
        let longest = segments.compactMap { Double($0.duration) }.max() ?? 1
        #expect(total >= 2 && total < 2 + longest, "recorded \(total) s")
        #expect(recorded.count < segments.count)

        let bad = try await DownloadTool.run(["download", nginx.url("x.m3u8"), "--max-duration", "-1"])
        #expect(bad?.status == 64)
        #expect(bad?.err.hasPrefix("Error: max duration must be a positive number of seconds") == true)
    }
}
