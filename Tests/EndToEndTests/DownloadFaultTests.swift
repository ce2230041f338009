// `tsplayer download` against Tests/Origins/download_origin.py, a separate origin process that injects 500s,
// resets, truncated bodies, wrong Content-Length, 1 byte/s stalls, corrupt TS and 404s at seeded random: every
// task ends completed and byte-identical, or stopped with the right error; never a corrupt segment marked done.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.temporaryFolders) struct DownloadFaultTests {
    @Test(arguments: [1, 2, 3])
    func seededFaultsEndCompletedOrStoppedWithTheRightError(seed: Int) async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let origin = try await FaultOrigin(root: fixtures.www, arguments: ["--seed", "\(seed)", "--rate", "0.3"])
        else { return }
        defer { origin.stop() }
        let store = DownloadTool.temporaryStore()
        guard
            let result = try await DownloadTool.run([
                "download", origin.url("small/index.m3u8"), "-o", store.path, "--id", "f", "--stall-timeout", "1",
            ])
        else { return }
        let faults = origin.faults
        #expect(faults.contains { $0 != "none" }, "seed \(seed) injected no fault")
        if result.status == 0 {
            DownloadFixtures.expectIdentical(
                origin: fixtures.www.appendingPathComponent("small/index.m3u8"),
                local: store.appendingPathComponent("f/index.m3u8"))
        } else {
            // A network failure is unreadable input: exit 2 (before the CLI toolkit, 1).
            #expect(result.status == 2)
            #expect(
                result.err.contains("gave up after retries") || result.err.contains("integrity check failed"),
                "\(result.err)")
        }
        // Whatever happened, every segment in place is exactly the origin's.
        for pair in DownloadFixtures.pairs(
            origin: fixtures.www.appendingPathComponent("small/index.m3u8"),
            local: store.appendingPathComponent("f/index.m3u8"))
        where FileManager.default.fileExists(atPath: pair.local.path) {
            #expect((try? Data(contentsOf: pair.local)) == (try? Data(contentsOf: pair.origin)))
        }
    }

    @Test func notFoundStopsAndSkippingCompletesWithAGap() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let origin = try await FaultOrigin(
                root: fixtures.www, arguments: ["--rate", "0", "--not-found", "/small/s003.ts"])
        else { return }
        defer { origin.stop() }
        let store = DownloadTool.temporaryStore()
        let stopped = try await DownloadTool.run([
            "download", origin.url("small/index.m3u8"), "-o", store.path, "--id", "a",
        ])
        #expect(stopped?.status == 2)
        #expect(
            stopped?.err.contains("s003.ts: the origin has no such file (404 Not Found); --skip-missing") == true,
            "\(stopped?.err ?? "")")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("a/index.m3u8").path))
        let skipped = try await DownloadTool.run([
            "download", origin.url("small/index.m3u8"), "-o", store.path, "--id", "b", "--skip-missing",
        ])
        #expect(skipped?.status == 0)
        let text = (try? String(contentsOf: store.appendingPathComponent("b/index.m3u8"), encoding: .utf8)) ?? ""
        #expect(text.contains("#EXT-X-GAP\nseg00003.ts\n"))
    }
}
