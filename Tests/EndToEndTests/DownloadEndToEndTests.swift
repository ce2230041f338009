// End-to-end tests of `tsplayer download` and `tsplayer tasks` against nginx serving ffmpeg-made HLS: every stream
// shape downloads byte-identical to the origin's files, and ffprobe decodes the local playlists (served back by the
// same nginx) to the same frame count as the origin.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.serialized, .temporaryFolders) struct DownloadEndToEndTests {
    /// A store folder inside the served root, so nginx serves the downloaded tasks back.
    static func store(_ fixtures: DownloadFixtures) -> (url: URL, served: String) {
        let name = "stores/\(UUID().uuidString)"
        let url = fixtures.root.appendingPathComponent(name)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return (url, name)
    }

    @Test func tsVOD600SegmentsWithHeaders() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/ts/index.m3u8"), "-o", store.url.path, "--id", "ts", "-H", "X-Test: yes",
                "--user-agent", "DLTest/1",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let local = store.url.appendingPathComponent("ts/index.m3u8")
        #expect(result.out == local.path + "\n")
        let origin = fixtures.www.appendingPathComponent("ts/index.m3u8")
        #expect(DownloadFixtures.expectIdentical(origin: origin, local: local) == 600)
        let requests = await nginx.requests().filter { $0.uri.hasPrefix("/www/") }
        #expect(requests.count == 601)
        #expect(requests.allSatisfy { $0.agent == "DLTest/1" && $0.test == "yes" && $0.status == 200 })
        let originFrames = try await DownloadTool.frameCount(nginx.url("www/ts/index.m3u8"))
        let localFrames = try await DownloadTool.frameCount(nginx.url(store.served + "/ts/index.m3u8"))
        #expect(originFrames != nil && originFrames == localFrames)
        // The same through `tsplayer tasks play`, the loopback server of TSPlayerKit.
        try await DownloadTool.withPlay(store: store.url.path, id: "ts") { url in
            #expect(url.hasSuffix("/index.m3u8"))
            let frames = try await DownloadTool.frameCount(url)
            #expect(frames == originFrames)
        }
    }

    @Test func fmp4VOD() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/fmp4/index.m3u8"), "-o", store.url.path,
                "--id", "f",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let local = store.url.appendingPathComponent("f/index.m3u8")
        let count = DownloadFixtures.expectIdentical(
            origin: fixtures.www.appendingPathComponent("fmp4/index.m3u8"), local: local)
        #expect(count == 7)  // the init segment and six media segments
        let originFrames = try await DownloadTool.frameCount(nginx.url("www/fmp4/index.m3u8"))
        let localFrames = try await DownloadTool.frameCount(nginx.url(store.served + "/f/index.m3u8"))
        #expect(originFrames != nil && originFrames == localFrames)
    }

    @Test func aes128WithKeyRotation() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/aes/index.m3u8"), "-o", store.url.path,
                "--id", "aes", "-H", "X-Test: key",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let local = store.url.appendingPathComponent("aes/index.m3u8")
        DownloadFixtures.expectIdentical(origin: fixtures.www.appendingPathComponent("aes/index.m3u8"), local: local)
        let text = (try? String(contentsOf: local, encoding: .utf8)) ?? ""
        #expect(text.contains("URI=\"key0.key\""))
        #expect(text.contains("URI=\"key1.key\""))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n"))
        #expect(
            (try? Data(contentsOf: store.url.appendingPathComponent("aes/key1.key")))
                == (try? Data(contentsOf: fixtures.www.appendingPathComponent("aes/k1.key"))))
        let keyRequests = await nginx.requests().filter { $0.uri.hasSuffix(".key") }
        #expect(keyRequests.count == 2 && keyRequests.allSatisfy { $0.test == "key" })
        let originFrames = try await DownloadTool.frameCount(nginx.url("www/aes/index.m3u8"))
        let localFrames = try await DownloadTool.frameCount(nginx.url(store.served + "/aes/index.m3u8"))
        #expect(originFrames != nil && originFrames == localFrames)
    }

    @Test func byteRangeVODFetchesOnlyRanges() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/br/index.m3u8"), "-o", store.url.path,
                "--id", "br",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        // The ranges cover the origin file back to back, so the one local file equals it.
        #expect(
            (try? Data(contentsOf: store.url.appendingPathComponent("br/media0.ts")))
                == (try? Data(contentsOf: fixtures.www.appendingPathComponent("br/index.ts"))))
        let ranged = await nginx.requests().filter { $0.uri == "/www/br/index.ts" }
        #expect(ranged.count == DownloadFixtures.references(fixtures.www.appendingPathComponent("br/index.m3u8")).count)
        #expect(ranged.allSatisfy { $0.status == 206 })
        let originFrames = try await DownloadTool.frameCount(nginx.url("www/br/index.m3u8"))
        let localFrames = try await DownloadTool.frameCount(nginx.url(store.served + "/br/index.m3u8"))
        #expect(originFrames != nil && originFrames == localFrames)
    }

    @Test func multivariantWithAlternateAudio() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/mv/master.m3u8"), "-o", store.url.path,
                "--id", "mv", "--variant", "worst", "--audio", "en",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let folder = store.url.appendingPathComponent("mv")
        #expect(result.out == folder.appendingPathComponent("master.m3u8").path + "\n")
        DownloadFixtures.expectIdentical(
            origin: fixtures.www.appendingPathComponent("mv/1/index.m3u8"),
            local: folder.appendingPathComponent("index.m3u8"))
        DownloadFixtures.expectIdentical(
            origin: fixtures.www.appendingPathComponent("mv/2/index.m3u8"),
            local: folder.appendingPathComponent("audio0/index.m3u8"))
        #expect(await nginx.requests().filter { $0.uri.hasPrefix("/www/mv/0/") }.isEmpty)
        let master = (try? String(contentsOf: folder.appendingPathComponent("master.m3u8"), encoding: .utf8)) ?? ""
        #expect(master.contains("URI=\"audio0/index.m3u8\""))
        #expect(master.contains("RESOLUTION=160x120"))
        let originFrames = try await DownloadTool.frameCount(nginx.url("www/mv/1/index.m3u8"))
        let localFrames = try await DownloadTool.frameCount(nginx.url(store.served + "/mv/master.m3u8"))
        #expect(originFrames != nil && originFrames == localFrames)
        try await DownloadTool.withPlay(store: store.url.path, id: "mv") { url in
            #expect(url.hasSuffix("/master.m3u8"))
            let frames = try await DownloadTool.frameCount(url)
            #expect(frames == originFrames)
        }
    }

    @Test func jsonLinesTasksListExportAndDelete() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        guard
            let result = try await DownloadTool.run([
                "download", nginx.url("www/small/index.m3u8"), "-o", store.url.path,
                "--json",
            ])
        else { return }
        #expect(result.status == 0, "\(result.err)")
        let events = result.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.count == result.out.split(separator: "\n").count)
        #expect(events.last?["event"] as? String == "completed")
        #expect(events.last?["progress"] as? Double == 1)
        let id = try #require(events.last?["id"] as? String)
        #expect(id.count == 16)

        // Running the same command again finds the completed task and fetches nothing.
        let before = await nginx.requests().count
        let again = try await DownloadTool.run(["download", nginx.url("www/small/index.m3u8"), "-o", store.url.path])
        #expect(again?.status == 0)
        #expect(await nginx.requests().count == before)

        let list = try await DownloadTool.run(["tasks", "list", "--store", store.url.path, "--json"])
        let tasks = (try? JSONSerialization.jsonObject(with: list?.stdout ?? Data())) as? [[String: Any]]
        #expect(tasks?.map { $0["id"] as? String } == [id])
        #expect(tasks?.first?["state"] as? String == "completed")

        let exported = store.url.appendingPathComponent("all.ts")
        let export = try await DownloadTool.run(["tasks", "export", id, exported.path, "--store", store.url.path])
        #expect(export?.status == 0, "\(export?.err ?? "")")
        var concatenated = Data()
        for name in DownloadFixtures.references(fixtures.www.appendingPathComponent("small/index.m3u8")) {
            concatenated += (try? Data(contentsOf: fixtures.www.appendingPathComponent("small/" + name))) ?? Data()
        }
        #expect((try? Data(contentsOf: exported)) == concatenated)

        let delete = try await DownloadTool.run(["tasks", "delete", id, "--store", store.url.path])
        #expect(delete?.status == 0)
        #expect(!FileManager.default.fileExists(atPath: store.url.appendingPathComponent(id).path))
        let empty = try await DownloadTool.run(["tasks", "--store", store.url.path])
        #expect(empty?.out == "")
        let unknown = try await DownloadTool.run(["tasks", "frobnicate", "--store", store.url.path])
        #expect(unknown?.status == 64)
        #expect(unknown?.err.hasPrefix("Error: unknown action 'frobnicate'") == true)
    }

    @Test func interruptPausesAndRerunningResumes() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let nginx = try await NginxOrigin(root: fixtures.root, slowRate: "500k"),
            let tool = EndToEnd.product("tsplayer")
        else { return }
        defer { nginx.stop() }
        let store = Self.store(fixtures)
        let arguments = ["download", nginx.url("slow/www/ts/index.m3u8"), "-o", store.url.path, "--id", "int"]
        let download = try await ChildProcess(tool, arguments, stopSignal: SIGINT)
        // Interrupted once it writes segments (its SIGINT handler is in place by then; a fixed 0.5 s was too short
        // on a loaded machine, where SIGINT found the default action and the status was 2), at least 0.5 s in.
        await suspend(0.5)
        let folder = store.url.appendingPathComponent("int").path
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, download.isRunning,
            !((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains(where: {
                $0.hasSuffix(".ts")
            })
        {
            await suspend(0.05)
        }
        await download.stop()
        #expect(download.process.terminationStatus == 130)
        let list = try await DownloadTool.run(["tasks", "--store", store.url.path, "--json"])
        let tasks = (try? JSONSerialization.jsonObject(with: list?.stdout ?? Data())) as? [[String: Any]]
        #expect(tasks?.first?["state"] as? String == "paused")
        // A task that has not finished is not exported, as MP4 or as TS: the error names the task, nothing is
        // written.
        for name in ["int.mp4", "int.ts"] {
            let destination = store.url.appendingPathComponent(name).path
            let export = try await DownloadTool.run(["tasks", "export", "int", destination, "--store", store.url.path])
            #expect(export?.status == 1, "\(name): \(export?.status ?? -1) \(export?.err ?? "")")
            #expect(
                export?.err.contains("task 'int'") == true
                    && export?.err.contains("only completed tasks can be exported; this one is paused") == true,
                "\(name): \(export?.err ?? "")")
            #expect(!FileManager.default.fileExists(atPath: destination), "\(name)")
            #expect(!FileManager.default.fileExists(atPath: destination + ".ts.partial"), "\(name)")
        }
        let resumed = try await DownloadTool.run(arguments)
        #expect(resumed?.status == 0)
        DownloadFixtures.expectIdentical(
            origin: fixtures.www.appendingPathComponent("ts/index.m3u8"),
            local: store.url.appendingPathComponent("int/index.m3u8"))
        #expect(await nginx.requests().filter { $0.uri.hasSuffix(".m3u8") }.count == 1)
    }

    @Test func usageErrors() async throws {
        let missing = try await DownloadTool.run(["download"])
        #expect(missing?.status == 64)
        #expect(missing?.err.hasPrefix("Error: missing <url>\nUSAGE: tsplayer download <url> [-o <dir>]") == true)
        #expect(missing?.err.hasSuffix("\n  See 'tsplayer download --help' for more information.\n") == true)
        let badVariant = try await DownloadTool.run(["download", "http://127.0.0.1:1/x.m3u8", "--variant", "huge"])
        #expect(badVariant?.status == 64)
        #expect(badVariant?.err.hasPrefix("Error: invalid variant policy 'huge'") == true)
        let help = try await DownloadTool.run(["download", "--help"])
        #expect(help?.status == 0)
        #expect(help?.out.hasPrefix("OVERVIEW: Download an HLS stream for offline playback.") == true)
        let notHTTP = try await DownloadTool.run([
            "download", "file:///etc/passwd", "-o", DownloadTool.temporaryStore().path,
        ])
        // A <url> that is not http(s) is a usage error, as in proxy and cache-proxy (before the CLI toolkit: exit 1
        // and the library's message).
        #expect(notHTTP?.status == 64)
        #expect(notHTTP?.err.hasPrefix("Error: <url> must be an absolute http or https URL\nUSAGE:") == true)
    }
}
