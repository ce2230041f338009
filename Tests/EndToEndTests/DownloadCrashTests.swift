// Crash safety of `tsplayer download`: the process is killed with SIGKILL at random moments and restarted; the
// result is always byte-identical to the origin, and the bytes nginx sent in total stay under 1.1x the stream.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.temporaryFolders) struct DownloadCrashTests {
    /// Kills per run: 20, or DOWNLOAD_CRASH_KILLS when CI asks for fewer.
    static var kills: Int {
        ProcessInfo.processInfo.environment["DOWNLOAD_CRASH_KILLS"].flatMap(Int.init) ?? 20
    }

    @Test func sigkillAtRandomMomentsThenResume() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let nginx = try await NginxOrigin(root: fixtures.root, slowRate: "300k"),
            let tool = EndToEnd.product("tsplayer")
        else { return }
        defer { nginx.stop() }
        let store = DownloadTool.temporaryStore()
        let arguments = ["download", nginx.url("slow/www/ts/index.m3u8"), "-o", store.path, "--id", "crash"]
        var generator = SystemRandomNumberGenerator()
        var killed = 0
        for _ in 0..<Self.kills {
            let download = try await ChildProcess(tool, arguments, stopSignal: SIGKILL)
            await suspend(Double.random(in: 0.05...0.4, using: &generator))
            if download.isRunning { killed += 1 }
            await download.stop(grace: 0)
        }
        #expect(killed >= Self.kills / 2, "the download finished before most kills: slow the origin down")
        let final = try await EndToEnd.run(tool, arguments)
        #expect(final.status == 0, "\(final.err)")
        let origin = fixtures.www.appendingPathComponent("ts/index.m3u8")
        #expect(
            DownloadFixtures.expectIdentical(origin: origin, local: store.appendingPathComponent("crash/index.m3u8"))
                == 600)
        // No partial or temporary file survives the final run.
        let names =
            (try? FileManager.default.contentsOfDirectory(atPath: store.appendingPathComponent("crash").path)) ?? []
        let leftovers = names.filter { $0.hasSuffix(".part") || $0.hasSuffix(".validator") || $0.contains(".tmp") }
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")

        var streamSize = 0
        let folder = fixtures.www.appendingPathComponent("ts")
        for name in DownloadFixtures.references(origin) + ["index.m3u8"] {
            streamSize +=
                (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[
                    .size] as? Int) ?? 0
        }
        let fetched = await nginx.requests().filter { $0.uri.hasPrefix("/slow/") }.reduce(0) { $0 + $1.bytes }
        #expect(Double(fetched) < 1.1 * Double(streamSize), "fetched \(fetched) bytes for a \(streamSize)-byte stream")
        print(
            "download crash test: \(killed) kills, fetched \(fetched) bytes for a \(streamSize)-byte stream ("
                + String(format: "%.3f", Double(fetched) / Double(max(1, streamSize))) + "x)")
    }
}
