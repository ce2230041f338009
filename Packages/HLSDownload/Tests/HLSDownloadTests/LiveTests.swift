import FileRange
import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct LiveTests {
    static let base = "http://live.test/ch/"
    static let playlistURL = base + "index.m3u8"

    static func segment(_ n: Int) -> [UInt8] { Fixtures.ts(packets: 20 + n, seed: UInt8(n)) }

    /// A live window of 4-second segments `s<n>.ts`, with EXT-X-ENDLIST when `ended`.
    static func window(_ sequences: [Int], ended: Bool = false, discontinuityAt: Int? = nil) -> String {
        MediaPlaylistText(
            targetDuration: 4, mediaSequence: sequences.first ?? 0,
            segments: sequences.map { n in
                MediaPlaylistText.Segment(
                    tags: n == discontinuityAt ? "#EXT-X-DISCONTINUITY\n" : "", duration: "4.0", uri: "s\(n).ts")
            },
            ended: ended
        ).text
    }

    /// An origin with segments 0..<40 whose playlist answers `poll(n)` on its n-th request (1-based); `onPoll`
    /// runs before each playlist reply.
    static func origin(
        poll: @escaping @Sendable (Int) -> String, onPoll: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> FakeOrigin {
        var files: [String: [UInt8]] = [:]
        for n in 0..<40 { files[base + "s\(n).ts"] = segment(n) }
        return FakeOrigin(files: files) { request, count in
            guard request.url == playlistURL else { return nil }
            onPoll(count)
            return FakeReply(status: 200, chunks: [Array(poll(count).utf8)])
        }
    }

    static func expectedPlaylist(_ entries: [String]) -> String {
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
            + entries.joined(separator: "\n") + "\n#EXT-X-ENDLIST\n"
    }

    static func entry(_ n: Int) -> String { "#EXTINF:4.0,\nseg" + String(format: "%05d", n) + ".ts" }

    @Test func slidingWindowIsRecordedUntilEndList() async throws {
        let windows = [[0, 1, 2], [1, 2, 3], [5, 6, 7], [6, 7, 8]]
        let root = Fixtures.temporaryFolder()
        let seen = LockedValue<[Int: String]>([:])
        let origin = Self.origin(
            poll: { n in Self.window(windows[min(n, windows.count) - 1], ended: n >= windows.count) },
            onPoll: { n in
                // What a player would see while recording: the local playlist before poll n.
                let text = (try? String(contentsOfFile: root + "/tv/index.m3u8", encoding: .utf8)) ?? ""
                seen.withLock { $0[n] = text }
            })
        let clock = FakeClock()
        let manager = try Fixtures.manager(origin, root: root, clock: clock)
        try await manager.createTask(id: "tv", url: Self.playlistURL)
        let info = try #require(await manager.waitUntilSettled("tv"))
        #expect(info.state == .completed)
        #expect(info.playlistPath == root + "/tv/index.m3u8")

        // Every segment once, in order; the missed segment 4 becomes a discontinuity.
        let recorded = [0, 1, 2, 3, 5, 6, 7, 8]
        for n in recorded {
            #expect(Fixtures.read(info.folder + "/seg" + String(format: "%05d", n) + ".ts") == Self.segment(n))
            #expect(origin.requests(for: Self.base + "s\(n).ts").count == 1)
        }
        #expect(origin.requests(for: Self.base + "s4.ts").isEmpty)
        #expect(origin.requests(for: Self.playlistURL).count == 4)
        var entries = [0, 1, 2, 3].map(Self.entry)
        entries.append("#EXT-X-DISCONTINUITY")
        entries += [5, 6, 7, 8].map(Self.entry)
        #expect(Fixtures.text(info.folder + "/index.m3u8") == Self.expectedPlaylist(entries))

        // Between polls the local playlist is a growing EVENT playlist without EXT-X-ENDLIST.
        let third = try #require(seen.withLock { $0[3] })
        #expect(third.contains("#EXT-X-PLAYLIST-TYPE:EVENT\n"))
        #expect(third.hasSuffix("seg00002.ts\n#EXTINF:4.0,\nseg00003.ts\n"))
        #expect(!third.contains("ENDLIST"))
        // Polls one target duration apart (each poll brought new segments).
        #expect(clock.sleeps == [4, 4, 4])
        #expect(info.bytesDone == UInt64(recorded.map { Self.segment($0).count }.reduce(0, +)))
    }

    @Test func unchangedPlaylistIsPolledAtHalfTheTargetDuration() async throws {
        let windows = [[0, 1], [0, 1], [1, 2]]
        let origin = Self.origin(poll: { n in
            Self.window(windows[min(n, windows.count) - 1], ended: n >= windows.count)
        })
        let clock = FakeClock()
        let manager = try Fixtures.manager(origin, clock: clock)
        let created = try await manager.createTask(url: Self.playlistURL)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(clock.sleeps == [4, 2])
        #expect(Fixtures.text(info.folder + "/index.m3u8") == Self.expectedPlaylist([0, 1, 2].map(Self.entry)))
    }

    /// EXTINF durations too long for whole seconds in a UInt64 (10^40 s, and 400 digits that read as infinity)
    /// trapped where the local playlist's target duration is raised; they are recorded and leave the target as it was.
    @Test func segmentDurationsBeyondWholeSecondsAreRecorded() async throws {
        let durations = ["4.0", "1" + String(repeating: "0", count: 40), String(repeating: "9", count: 400)]
        let origin = Self.origin(poll: { n in
            MediaPlaylistText(
                targetDuration: 4, mediaSequence: 0,
                segments: durations.indices.map {
                    MediaPlaylistText.Segment(duration: durations[$0], uri: "s\($0).ts")
                },
                ended: n >= 2
            ).text
        })
        let clock = FakeClock()
        let manager = try Fixtures.manager(origin, clock: clock)
        let created = try await manager.createTask(url: Self.playlistURL)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(clock.sleeps == [4])
        let text = Fixtures.text(info.folder + "/index.m3u8")
        #expect(text.contains("#EXT-X-TARGETDURATION:4\n"))
        for n in 0..<3 { #expect(text.contains("seg0000\(n).ts\n")) }
    }

    /// A window whose last media sequence number is 2^64 - 1 trapped working out the next one to fetch; it is an
    /// invalid playlist.
    @Test func mediaSequenceNumbersPastTheLastUInt64AreRefused() async throws {
        let origin = Self.origin(poll: { _ in
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:\(UInt64.max - 1)\n"
                + "#EXTINF:4.0,\ns0.ts\n#EXTINF:4.0,\ns1.ts\n"
        })
        let manager = try Fixtures.manager(origin, clock: FakeClock())
        let created = try await manager.createTask(url: Self.playlistURL)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.error?.code == .invalidPlaylist)
        #expect(info.error?.message == "media sequence numbers run past 18446744073709551614")
    }

    @Test func durationLimitStopsTheRecordingAsVOD() async throws {
        // A window that never ends: poll n shows segments n-1, n, n+1.
        let origin = Self.origin(poll: { n in Self.window([n - 1, n, n + 1]) })
        var options = DownloadOptions()
        options.maxDuration = 18
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.playlistURL, options: options)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        // 4-second segments: the fifth reaches 18 s.
        #expect(Fixtures.text(info.folder + "/index.m3u8") == Self.expectedPlaylist([0, 1, 2, 3, 4].map(Self.entry)))
        #expect(origin.requests(for: Self.playlistURL).count == 3)
        #expect(origin.requests(for: Self.base + "s5.ts").isEmpty)
    }

    @Test func byteLimitStopsTheRecordingBeforeTheSegmentThatWouldPassIt() async throws {
        let origin = Self.origin(poll: { n in Self.window([n - 1, n, n + 1, n + 2]) })
        var options = DownloadOptions()
        options.maxBytes = UInt64(Self.segment(0).count + 1)
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.playlistURL, options: options)
        let info = try #require(await manager.waitUntilSettled(created.id))
        // The budget ends the recording as a complete VOD playlist (the task completes: exit 0 in tsplayer).
        #expect(info.state == .completed)
        #expect(Fixtures.text(info.folder + "/index.m3u8") == Self.expectedPlaylist([0].map(Self.entry)))
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/seg00001.ts"))
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/seg00001.ts.part"))
        #expect(info.bytesDone == UInt64(Self.segment(0).count))
    }

    /// Six 94 kB segments, each arriving in 2 kB chunks, against a budget of two and a half, with six requests
    /// allowed: under a byte budget a recording fetches one resource at a time, in order, each write reserved first,
    /// so the third segment is refused part way (its partial file removed), the recording ends with the first two,
    /// and no later segment is asked for. The media files in the folder, sampled while they are written and after,
    /// never pass the budget.
    @Test func theByteBudgetHoldsWithSegmentsInFlight() async throws {
        let size = 500 * 188
        let segment: @Sendable (Int) -> [UInt8] = { n in Fixtures.ts(packets: 500, seed: UInt8(n)) }
        let origin = FakeOrigin(files: [:]) { request, _ in
            if request.url == Self.playlistURL {
                return FakeReply(status: 200, chunks: [Array(Self.window([0, 1, 2, 3, 4, 5]).utf8)])
            }
            guard let n = Int(request.url.dropFirst(Self.base.count + 1).dropLast(3)) else { return nil }
            let bytes = segment(n)
            return FakeReply(
                status: 200, headers: [HTTPHeaders.Field(name: "Content-Length", value: String(bytes.count))],
                chunks: stride(from: 0, to: bytes.count, by: 2048).map {
                    Array(bytes[$0..<min($0 + 2048, bytes.count)])
                })
        }
        let budget = UInt64(size * 5 / 2)
        var options = DownloadOptions()
        options.maxBytes = budget
        options.maxConcurrentRequests = 6
        let root = Fixtures.temporaryFolder()
        let manager = try Fixtures.manager(origin, root: root)
        let folder = root + "/tv"
        let peak = LockedValue<UInt64>(0)
        let sampler = Task.detached {
            while !Task.isCancelled {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                let media = names.filter { $0.hasSuffix(".ts") || $0.hasSuffix(".ts.part") }
                let bytes = media.reduce(UInt64(0)) { $0 + (FileSystem.regularFileSize(folder + "/" + $1) ?? 0) }
                peak.withLock { $0 = max($0, bytes) }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        try await manager.createTask(id: "tv", url: Self.playlistURL, options: options)
        let info = try #require(await manager.waitUntilSettled("tv"))
        sampler.cancel()
        _ = await sampler.value
        #expect(info.state == .completed)
        #expect(Fixtures.text(folder + "/index.m3u8") == Self.expectedPlaylist([0, 1].map(Self.entry)))
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let left = names.filter { $0.hasSuffix(".ts") || $0.hasSuffix(".part") }.sorted()
        #expect(left == ["seg00000.ts", "seg00001.ts"])
        #expect((3..<6).allSatisfy { origin.requests(for: Self.base + "s\($0).ts").isEmpty })
        #expect(peak.withLock { $0 } <= budget, "peak \(peak.withLock { $0 }) bytes")
        #expect(info.bytesDone <= budget)
    }

    @Test func pausedRecordingResumesAfterTheLastRecordedSegment() async throws {
        let root = Fixtures.temporaryFolder()
        // The first process sees two polls, then stalls on the third until it is paused.
        let first = FakeOrigin(
            files: Dictionary(uniqueKeysWithValues: (0..<40).map { (Self.base + "s\($0).ts", Self.segment($0)) })
        ) { request, count in
            guard request.url == Self.playlistURL else { return nil }
            if count >= 3 { return FakeReply(hang: true) }
            return FakeReply(status: 200, chunks: [Array(Self.window([count - 1, count]).utf8)])
        }
        let manager = try Fixtures.manager(first, root: root)
        try await manager.createTask(id: "rec", url: Self.playlistURL)
        try await LifecycleTests.waitFor { first.requests(for: Self.playlistURL).count == 3 }
        try await manager.pause("rec")
        #expect(await manager.task("rec")?.state == .paused)

        // A new process resumes: the window has moved on to 2...4, then ends.
        let second = Self.origin(poll: { n in Self.window(n == 1 ? [2, 3, 4] : [3, 4, 5], ended: n > 1) })
        let again = try Fixtures.manager(second, root: root)
        try await again.resume("rec")
        let info = try #require(await again.waitUntilSettled("rec"))
        #expect(info.state == .completed)
        #expect(Fixtures.text(info.folder + "/index.m3u8") == Self.expectedPlaylist((0...5).map(Self.entry)))
        #expect(second.requests(for: Self.base + "s2.ts").isEmpty)
        #expect(second.requests(for: Self.base + "s3.ts").count == 1)
    }

    @Test func liveAlternateRenditionsAreRefused() async throws {
        let master = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",LANGUAGE="en",DEFAULT=YES,URI="audio.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1000,AUDIO="a"
            video.m3u8

            """
        let origin = FakeOrigin(files: [
            Self.base + "master.m3u8": Array(master.utf8),
            Self.base + "video.m3u8": Array(Self.window([0, 1]).utf8),
            Self.base + "audio.m3u8": Array(Self.window([0, 1]).utf8),
        ])
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "master.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .stopped)
        #expect(info.error?.code == .unsupported)
    }
}

@Suite(.temporaryFolders) struct QueuedRestartTests {
    @Test func aTaskStoredAsQueuedStartsOnResumeAfterARestart() async throws {
        let files = FaultTests.stream()
        let root = Fixtures.temporaryFolder()
        // Created but not started, then the store is edited to say `ready`, as a process killed between
        // queueing and starting a task leaves it.
        let first = try Fixtures.manager(FakeOrigin(files: files), root: root)
        let created = try await first.createTask(url: FaultTests.base + "index.m3u8", start: false)
        let store = root + "/tasks.json"
        let text = Fixtures.text(store).replacingOccurrences(of: "\"notReady\"", with: "\"ready\"")
        try Data(text.utf8).write(to: URL(fileURLWithPath: store))
        let second = try Fixtures.manager(FakeOrigin(files: files), root: root)
        #expect(await second.task(created.id)?.state == .ready)
        try await second.resume(created.id)
        let info = try #require(await second.waitUntilSettled(created.id))
        #expect(info.state == .completed)
    }
}
