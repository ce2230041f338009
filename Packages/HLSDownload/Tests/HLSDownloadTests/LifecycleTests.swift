import FileRange
import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct LifecycleTests {
    static let base = FaultTests.base

    static func waitFor(_ condition: () async -> Bool) async throws {
        for _ in 0..<2000 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(2))
        }
        Issue.record("condition not reached")
    }

    @Test func crashLeavesTheTaskPausedAndResumeFetchesOnlyWhatIsMissing() async throws {
        let files = FaultTests.stream()
        let s2 = try #require(files[Self.base + "s2.ts"])
        let hanging = FakeOrigin(files: files) { request, _ in
            guard request.url == Self.base + "s2.ts" else { return nil }
            return FakeReply(
                status: 200,
                headers: [
                    HTTPHeaders.Field(name: "ETag", value: "\"v1\""),
                    HTTPHeaders.Field(name: "Content-Length", value: "\(s2.count)"),
                ], chunks: [Array(s2[0..<1000])], hang: true)
        }
        let root = Fixtures.temporaryFolder()
        let first = try Fixtures.manager(hanging, root: root)
        let created = try await first.createTask(url: Self.base + "index.m3u8", metadata: ["k": "v"])
        let folder = created.folder
        try await Self.waitFor {
            ["seg00000.ts", "seg00001.ts", "seg00003.ts"].allSatisfy {
                FileManager.default.fileExists(atPath: folder + "/" + $0)
            }
                && (try? FileManager.default.attributesOfItem(atPath: folder + "/seg00002.ts.part")[.size] as? Int)
                    == 1000
        }
        #expect(await first.task(created.id)?.state == .downloading)

        // What a process killed between steps leaves beside files: a finished segment's partial file and validator
        // (killed right after the rename), a validator's temporary file (killed while writing it: named with the
        // writer's PID, here one no process can have; and the fixed-name form of older versions).
        for leftover in [
            "seg00000.ts.part", "seg00000.ts.validator", "seg00000.ts.validator.tmp",
            "seg00002.ts.validator.tmp4194305-7", "index.m3u8.tmp4194305-1",
        ] {
            try Data("stale".utf8).write(to: URL(fileURLWithPath: folder + "/" + leftover))
        }

        // A second process opens the same store while the first one is "dead": its locks go as the kernel drops a
        // dead process's locks.
        await first.abandonLocks()
        let origin = FakeOrigin(files: files)
        let second = try Fixtures.manager(origin, root: root)
        let restored = try #require(await second.task(created.id))
        #expect(restored.state == .paused)
        #expect(restored.metadata == ["k": "v"])
        try await second.resume(created.id)
        let info = try #require(await second.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(folder + "/seg00002.ts") == s2)
        #expect(origin.requests.map(\.url) == [Self.base + "s2.ts"])
        #expect(origin.requests.first?.header("Range") == "bytes=1000-")
        #expect(origin.requests.first?.header("If-Range") == "\"v1\"")
        #expect(origin.bytesSent == s2.count - 1000)
        // Nothing partial or temporary is left once the task is complete.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(names.filter { $0.hasSuffix(".part") || $0.hasSuffix(".validator") || $0.contains(".tmp") }.isEmpty)

        // The store holds paths relative to its root.
        let store = Fixtures.text(root + "/tasks.json")
        #expect(!store.contains(root))
        #expect(store.contains("\"folder\":\"\(created.id)\""))
        let third = try Fixtures.manager(FakeOrigin(), root: root)
        #expect(await third.completedTasks().map(\.id) == [created.id])
        #expect(await third.playlistPath(forTask: created.id) == folder + "/index.m3u8")
        try await first.pause(created.id)
    }

    @Test func pauseResumeAndDelete() async throws {
        let files = FaultTests.stream()
        let origin = FakeOrigin(files: files) { request, count in
            request.url == Self.base + "s1.ts" && count == 1 ? FakeReply(hang: true) : nil
        }
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(id: "movie", url: Self.base + "index.m3u8")
        try await Self.waitFor { origin.requests(for: Self.base + "s1.ts").count == 1 }
        try await manager.pause("movie")
        #expect(await manager.task("movie")?.state == .paused)
        #expect(await manager.waitUntilSettled("movie")?.state == .paused)
        try await manager.resume("movie")
        let info = try #require(await manager.waitUntilSettled("movie"))
        #expect(info.state == .completed)
        #expect(origin.requests(for: Self.base + "index.m3u8").count == 1)
        try await manager.delete("movie")
        #expect(await manager.allTasks().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: created.folder))
        await #expect(throws: DownloadError.self) { try await manager.resume("movie") }
    }

    @Test func taskAndRequestLimitsAndCreationOrder() async throws {
        var files = FaultTests.stream(segments: 12)
        files["http://other.test/index.m3u8"] = Array(
            Fixtures.mediaPlaylist((0..<12).map { Self.base + "s\($0).ts" }).utf8)
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin) {
            $0.maxConcurrentTasks = 1
            $0.maxConcurrentRequests = 2
        }
        let a = try await manager.createTask(id: "a", url: Self.base + "index.m3u8", start: false)
        #expect(a.state == .notReady)
        let b = try await manager.createTask(id: "b", url: "http://other.test/index.m3u8")
        try await manager.resume("a")
        #expect(await manager.task("a")?.state == .ready)
        #expect(await manager.allTasks().map(\.id) == ["a", "b"])
        _ = b
        let infoB = try #require(await manager.waitUntilSettled("b"))
        let infoA = try #require(await manager.waitUntilSettled("a"))
        #expect(infoA.state == .completed && infoB.state == .completed)
        #expect(origin.state.withLock { $0.maxInFlight } <= 2)
        #expect(await manager.completedTasks().map(\.id) == ["a", "b"])
        #expect(await manager.downloadingTasks().isEmpty)
    }

    @Test func eventsReportStatesInOrderAndProgress() async throws {
        let origin = FakeOrigin(files: FaultTests.stream(segments: 6))
        let manager = try Fixtures.manager(origin)
        let collector = Task {
            var seen: [DownloadTaskInfo] = []
            for await event in manager.events {
                seen.append(event)
                if event.state == .completed || event.state == .stopped { break }
            }
            return seen
        }
        _ = try await manager.createTask(url: Self.base + "index.m3u8")
        let events = await collector.value
        var states: [DownloadState] = []
        for event in events where states.last != event.state { states.append(event.state) }
        #expect(states == [.ready, .starting, .downloading, .completed])
        let progress = events.filter { $0.state == .downloading }.map(\.filesDone)
        #expect(progress == progress.sorted())
        #expect(events.last?.bytesTotal == events.last?.bytesDone)
        #expect(events.last?.progress == 1)
    }
}

@Suite struct PolicyTests {
    @Test func backoffDoublesUpToTheCapAndHonoursRetryAfter() {
        let policy = RetryPolicy()
        #expect(policy.delay(attempt: 1, jitter: 1, retryAfter: nil) == 0.5)
        #expect(policy.delay(attempt: 1, jitter: 0, retryAfter: nil) == 0.25)
        #expect(policy.delay(attempt: 4, jitter: 1, retryAfter: nil) == 4)
        #expect(policy.delay(attempt: 40, jitter: 1, retryAfter: nil) == 30)
        #expect(policy.delay(attempt: 1, jitter: 1, retryAfter: 10) == 10)
        #expect(policy.delay(attempt: 1, jitter: 1, retryAfter: 1e9) == 120)
    }

    @Test func argumentsParse() {
        #expect(VariantPolicy(argument: "best") == .best)
        #expect(VariantPolicy(argument: "1280x720") == .resolution(width: 1280, height: 720))
        #expect(VariantPolicy(argument: "800000") == .bandwidth(800_000))
        #expect(VariantPolicy(argument: "codec:hvc1") == .codec("hvc1"))
        #expect(VariantPolicy(argument: "huge") == nil)
        #expect(RenditionPolicy(argument: "all") == .all)
        #expect(RenditionPolicy(argument: "en") == .language("en"))
        #expect(
            HTTPHeaders.Field(line: "Referer:  http://a/ ") == HTTPHeaders.Field(name: "Referer", value: "http://a/"))
        #expect(HTTPHeaders.Field(line: "no colon") == nil)
        #expect(HTTPHeaders.Field(line: "Bad Name: x") == nil)
    }

    @Test func fakeHeaderDetection() {
        let ts = Fixtures.ts(packets: 4, seed: 0)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47] + [UInt8](repeating: 0x47, count: 3) + [0]
        #expect(TSIntegrity.fakeHeaderLength((png + ts)[...], totalLength: UInt64(png.count + ts.count)) == 8)
        #expect(TSIntegrity.fakeHeaderLength(ts[...], totalLength: UInt64(ts.count)) == nil)
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
        #expect(TSIntegrity.fakeHeaderLength((jpeg + ts)[...], totalLength: UInt64(jpeg.count + ts.count)) == 4)
    }
}
