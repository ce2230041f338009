import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct FaultTests {
    static let base = "http://origin.test/f/"

    /// A 4-segment TS VOD and its files.
    static func stream(segments: Int = 4) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [
            base + "index.m3u8": Array(Fixtures.mediaPlaylist((0..<segments).map { "s\($0).ts" }).utf8)
        ]
        for i in 0..<segments { files[base + "s\(i).ts"] = Fixtures.ts(packets: 50 + i, seed: UInt8(i)) }
        return files
    }

    @Test func transientStatusesAreRetriedHonouringRetryAfter() async throws {
        let files = Self.stream()
        let origin = FakeOrigin(files: files) { request, count in
            if request.url == Self.base + "s1.ts" && count <= 2 {
                return FakeReply(status: 503, headers: [HTTPHeaders.Field(name: "Retry-After", value: "7")])
            }
            if request.url == Self.base + "s2.ts" && count == 1 { return FakeReply(status: 429) }
            return nil
        }
        let clock = FakeClock()
        let manager = try Fixtures.manager(origin, clock: clock)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/seg00001.ts") == files[Self.base + "s1.ts"])
        // Two Retry-After waits of 7 s, one backoff of the base delay (jitter 1 → the full 0.5 s).
        #expect(clock.sleeps.sorted() == [0.5, 7, 7])
    }

    @Test func persistentServerErrorsStopAfterEveryAttempt() async throws {
        let origin = FakeOrigin(files: Self.stream()) { request, _ in
            request.url == Self.base + "s3.ts" ? FakeReply(status: 500) : nil
        }
        let clock = FakeClock()
        let manager = try Fixtures.manager(origin, clock: clock)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .stopped)
        #expect(info.error?.code == .tooManyRetries)
        #expect(origin.requests(for: Self.base + "s3.ts").count == 8)
        #expect(clock.sleeps == [0.5, 1, 2, 4, 8, 16, 30])
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/seg00003.ts"))
    }

    @Test func notFoundStopsUnlessSkipping() async throws {
        var files = Self.stream()
        files[Self.base + "s2.ts"] = nil
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin)
        let stopped = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(stopped.id))
        #expect(info.state == .stopped)
        #expect(info.error?.code == .notFound)
        #expect(info.error?.status == 404)
        #expect(origin.requests(for: Self.base + "s2.ts").count == 1)

        var options = DownloadOptions()
        options.skipMissingSegments = true
        let skipping = try await manager.createTask(id: "skip", url: Self.base + "index.m3u8", options: options)
        let done = try #require(await manager.waitUntilSettled(skipping.id))
        #expect(done.state == .completed)
        #expect(Fixtures.text(done.folder + "/index.m3u8").contains("#EXTINF:4.0,\n#EXT-X-GAP\nseg00002.ts\n"))
    }

    @Test func forbiddenStopsWithAClearError() async throws {
        let origin = FakeOrigin(files: Self.stream()) { request, _ in
            request.url == Self.base + "s0.ts" ? FakeReply(status: 403) : nil
        }
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.error?.code == .unauthorized)
        #expect(info.error?.status == 403)
        #expect(info.error?.url == Self.base + "s0.ts")
    }

    @Test func truncatedBodyIsResumedWithRangeAndIfRange() async throws {
        let files = Self.stream()
        let whole = try #require(files[Self.base + "s1.ts"])
        let origin = FakeOrigin(files: files) { request, count in
            guard request.url == Self.base + "s1.ts", count == 1 else { return nil }
            return FakeReply(
                status: 200,
                headers: [
                    HTTPHeaders.Field(name: "ETag", value: "\"v1\""),
                    HTTPHeaders.Field(name: "Content-Length", value: "\(whole.count)"),
                ],
                chunks: [Array(whole[0..<3000])], failure: HTTPClientError(.connectionReset, "reset"))
        }
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/seg00001.ts") == whole)
        let second = try #require(origin.requests(for: Self.base + "s1.ts").last)
        #expect(second.header("Range") == "bytes=3000-")
        #expect(second.header("If-Range") == "\"v1\"")
    }

    @Test func changedValidatorRestartsThePartialFile() async throws {
        let files = Self.stream()
        let whole = try #require(files[Self.base + "s0.ts"])
        let origin = FakeOrigin(files: files) { request, count in
            guard request.url == Self.base + "s0.ts" else { return nil }
            if count == 1 {
                return FakeReply(
                    status: 200,
                    headers: [
                        HTTPHeaders.Field(name: "ETag", value: "\"old\""),
                        HTTPHeaders.Field(name: "Content-Length", value: "\(whole.count)"),
                    ], chunks: [Array(whole[0..<1000])], failure: HTTPClientError(.timedOut, "stalled"))
            }
            // The resource changed: If-Range does not match, so the whole body comes back with 200.
            return FakeReply(status: 200, headers: [HTTPHeaders.Field(name: "ETag", value: "\"new\"")], chunks: [whole])
        }
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/seg00000.ts") == whole)
        #expect(origin.requests(for: Self.base + "s0.ts").last?.header("If-Range") == "\"old\"")
    }

    @Test func fakeImageHeaderIsStripped() async throws {
        var files = Self.stream()
        let clean = try #require(files[Self.base + "s2.ts"])
        files[Self.base + "s2.ts"] =
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 92) + clean
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/seg00002.ts") == clean)
    }

    @Test func corruptSegmentIsNeverMarkedDone() async throws {
        var files = Self.stream()
        var bad = try #require(files[Self.base + "s1.ts"])
        bad[188 * 3] = 0x00
        files[Self.base + "s1.ts"] = bad
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .stopped)
        #expect(info.error?.code == .integrity)
        #expect(info.error?.message.contains("offset 564") == true)
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/seg00001.ts"))
    }

    @Test func wrongContentLengthIsRetried() async throws {
        let files = Self.stream()
        let whole = try #require(files[Self.base + "s3.ts"])
        let origin = FakeOrigin(files: files) { request, count in
            guard request.url == Self.base + "s3.ts", count == 1 else { return nil }
            return FakeReply(
                status: 200, headers: [HTTPHeaders.Field(name: "Content-Length", value: "\(whole.count - 188)")],
                chunks: [whole])
        }
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/seg00003.ts") == whole)
        #expect(origin.requests(for: Self.base + "s3.ts").count == 2)
    }
}
