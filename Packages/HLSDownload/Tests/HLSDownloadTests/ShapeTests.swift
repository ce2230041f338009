import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct ShapeTests {
    static let base = "http://origin.test/vod/"

    @Test func tsVODWithHeadersOnEveryRequest() async throws {
        let segments = (0..<5).map { Fixtures.ts(packets: 20 + $0, seed: UInt8($0)) }
        var files: [String: [UInt8]] = [
            Self.base + "index.m3u8": Array(Fixtures.mediaPlaylist((0..<5).map { "s\($0).ts" }).utf8)
        ]
        for (i, s) in segments.enumerated() { files[Self.base + "s\(i).ts"] = s }
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin)
        var options = DownloadOptions()
        options.headers = [
            HTTPHeaders.Field(name: "Authorization", value: "Bearer t"), HTTPHeaders.Field(name: "X-A", value: "1"),
        ]
        options.userAgent = "TestAgent/1"
        let created = try await manager.createTask(
            url: Self.base + "index.m3u8", metadata: ["title": "T"], options: options)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(info.progress == 1)
        #expect(info.metadata == ["title": "T"])
        #expect(info.bytesDone == UInt64(segments.reduce(0) { $0 + $1.count }))
        for (i, s) in segments.enumerated() {
            #expect(Fixtures.read(info.folder + "/seg0000\(i).ts") == s)
        }
        let local = Fixtures.text(info.folder + "/index.m3u8")
        #expect(local == Fixtures.mediaPlaylist((0..<5).map { "seg0000\($0).ts" }))
        #expect(info.playlistPath == info.folder + "/index.m3u8")
        #expect(origin.requests.count == 6)
        for request in origin.requests {
            #expect(request.header("Authorization") == "Bearer t")
            #expect(request.header("X-A") == "1")
            #expect(request.header("User-Agent") == "TestAgent/1")
        }
        // No partial or temporary files stay behind.
        let names = try FileManager.default.contentsOfDirectory(atPath: info.folder)
        #expect(names.allSatisfy { !$0.hasSuffix(".part") && !$0.contains(".tmp") && !$0.hasSuffix(".validator") })
    }

    /// Export streams the segments into one file through FileRange's durable writer: the old file at the
    /// destination is replaced whole, no temporary file stays beside it, and a task that cannot be exported leaves
    /// the destination as it was.
    @Test func exportReplacesTheDestinationWholeAndLeavesNoTemporaryFile() async throws {
        let segments = (0..<4).map { Fixtures.ts(packets: 30 + $0, seed: UInt8(10 + $0)) }
        var files: [String: [UInt8]] = [
            Self.base + "index.m3u8": Array(Fixtures.mediaPlaylist((0..<4).map { "s\($0).ts" }).utf8),
            Self.base + "f.m3u8": Array(
                Fixtures.mediaPlaylist(["a.m4s"], extra: [0: "#EXT-X-MAP:URI=\"init.mp4\""]).utf8),
            Self.base + "init.mp4": [UInt8](repeating: 0x11, count: 100),
            Self.base + "a.m4s": [UInt8](repeating: 0x22, count: 100),
        ]
        for (i, s) in segments.enumerated() { files[Self.base + "s\(i).ts"] = s }
        let manager = try Fixtures.manager(FakeOrigin(files: files))
        let ts = try await manager.createTask(url: Self.base + "index.m3u8")
        let fmp4 = try await manager.createTask(url: Self.base + "f.m3u8")
        #expect(await manager.waitUntilSettled(ts.id)?.state == .completed)
        #expect(await manager.waitUntilSettled(fmp4.id)?.state == .completed)
        let out = TemporaryFolders.make(prefix: "Export-")
        let destination = out + "/joined.ts"
        try Data("an older export".utf8).write(to: URL(fileURLWithPath: destination))
        try await manager.export(ts.id, to: destination)
        #expect(Fixtures.read(destination) == segments.flatMap { $0 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["joined.ts"])
        do {
            try await manager.export(fmp4.id, to: destination)
            Issue.record("an fMP4 task was exported")
        } catch {
            #expect(error.code == .unsupported)
        }
        #expect(Fixtures.read(destination) == segments.flatMap { $0 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["joined.ts"])
    }

    @Test func fmp4WithMapAndDiscontinuity() async throws {
        let initBytes = [UInt8](repeating: 0x11, count: 600)
        let media = (0..<3).map { [UInt8](repeating: UInt8(0x20 + $0), count: 1000 + $0) }
        let playlist = Fixtures.mediaPlaylist(
            ["a.m4s", "b.m4s", "c.m4s"], extra: [0: "#EXT-X-MAP:URI=\"init.mp4\"", 2: "#EXT-X-DISCONTINUITY"])
        let origin = FakeOrigin(files: [
            Self.base + "f.m3u8": Array(playlist.utf8), Self.base + "init.mp4": initBytes,
            Self.base + "a.m4s": media[0], Self.base + "b.m4s": media[1], Self.base + "c.m4s": media[2],
        ])
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "f.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed)
        #expect(Fixtures.read(info.folder + "/init0.mp4") == initBytes)
        #expect(Fixtures.read(info.folder + "/seg00001.m4s") == media[1])
        let local = Fixtures.text(info.folder + "/index.m3u8")
        #expect(local.contains("#EXT-X-MAP:URI=\"init0.mp4\"\n"))
        #expect(local.contains("#EXT-X-DISCONTINUITY\n#EXTINF:4.0,\nseg00002.m4s\n"))
    }

    @Test func aes128KeyRotationStoresKeysBesideMedia() async throws {
        let k1 = [UInt8](repeating: 1, count: 16)
        let k2 = [UInt8](repeating: 2, count: 16)
        let playlist = Fixtures.mediaPlaylist(
            ["e0.ts", "e1.ts", "e2.ts"],
            extra: [
                0: "#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.test/k1\",IV=0x00000000000000000000000000000001",
                2: "#EXT-X-KEY:METHOD=AES-128,URI=\"k2.bin\"",
            ])
        let enc = (0..<3).map { [UInt8](repeating: UInt8($0), count: 32 * ($0 + 1)) }
        let origin = FakeOrigin(files: [
            Self.base + "e.m3u8": Array(playlist.utf8), "https://keys.test/k1": k1, Self.base + "k2.bin": k2,
            Self.base + "e0.ts": enc[0], Self.base + "e1.ts": enc[1], Self.base + "e2.ts": enc[2],
        ])
        let manager = try Fixtures.manager(origin)
        var options = DownloadOptions()
        options.headers = [HTTPHeaders.Field(name: "Cookie", value: "c=1")]
        let created = try await manager.createTask(url: Self.base + "e.m3u8", options: options)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(Fixtures.read(info.folder + "/key0.key") == k1)
        #expect(Fixtures.read(info.folder + "/key1.key") == k2)
        #expect(Fixtures.read(info.folder + "/seg00002.ts") == enc[2])
        let local = Fixtures.text(info.folder + "/index.m3u8")
        #expect(local.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"key0.key\",IV=0x00000000000000000000000000000001\n"))
        #expect(local.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"key1.key\"\n"))
        // The cookie is the origin's: the key on its own host gets it, the key on another host does not.
        #expect(origin.requests(for: Self.base + "k2.bin").first?.header("Cookie") == "c=1")
        #expect(origin.requests(for: "https://keys.test/k1").first.map { $0.header("Cookie") == nil } == true)
    }

    @Test func unfetchableKeyStopsTheTask() async throws {
        let playlist = Fixtures.mediaPlaylist(["e0.ts"], extra: [0: "#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\""])
        let origin = FakeOrigin(files: [Self.base + "e.m3u8": Array(playlist.utf8), Self.base + "e0.ts": [1, 2, 3]])
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "e.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .stopped)
        #expect(info.error?.code == .keyUnavailable)
        #expect(info.error?.status == 404)
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/index.m3u8"))
    }

    @Test func byteRangesFetchOnlyTheRangesIntoOneSharedFile() async throws {
        let whole = Fixtures.ts(packets: 30, seed: 9)
        // Three ranges covering packets 0-9, 10-19 and 25-29 (20-24 are not used by the playlist).
        let playlist = Fixtures.mediaPlaylist(
            ["all.ts", "all.ts", "all.ts"],
            extra: [0: "#EXT-X-BYTERANGE:1880@0", 1: "#EXT-X-BYTERANGE:1880", 2: "#EXT-X-BYTERANGE:940@4700"])
        let origin = FakeOrigin(files: [Self.base + "b.m3u8": Array(playlist.utf8), Self.base + "all.ts": whole])
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.base + "b.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(Fixtures.read(info.folder + "/media0.ts") == Array(whole[0..<3760] + whole[4700..<5640]))
        let ranges = origin.requests(for: Self.base + "all.ts").compactMap { $0.header("Range") }.sorted()
        #expect(ranges == ["bytes=0-1879", "bytes=1880-3759", "bytes=4700-5639"])
        let local = Fixtures.text(info.folder + "/index.m3u8")
        #expect(local.contains("#EXT-X-BYTERANGE:1880@0\n#EXTINF:4.0,\nmedia0.ts\n"))
        #expect(local.contains("#EXT-X-BYTERANGE:1880@1880\n"))
        #expect(local.contains("#EXT-X-BYTERANGE:940@3760\n"))
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/.pieces"))
    }

    @Test func multivariantSelectionAndAlternateAudio() async throws {
        let master = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="en/a.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="French",LANGUAGE="fr",URI="fr/a.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,AUDIO="aud"
            low/v.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=3000000,RESOLUTION=1280x720,AUDIO="aud"
            high/v.m3u8

            """
        var files: [String: [UInt8]] = [Self.base + "master.m3u8": Array(master.utf8)]
        for path in ["low", "high", "en", "fr"] {
            let name = path == "low" || path == "high" ? "v.m3u8" : "a.m3u8"
            files[Self.base + "\(path)/\(name)"] = Array(Fixtures.mediaPlaylist(["0.ts", "1.ts"]).utf8)
            files[Self.base + "\(path)/0.ts"] = Fixtures.ts(packets: 3, seed: UInt8(path.count))
            files[Self.base + "\(path)/1.ts"] = Fixtures.ts(packets: 4, seed: UInt8(path.count))
        }
        let origin = FakeOrigin(files: files)
        let manager = try Fixtures.manager(origin)
        var options = DownloadOptions()
        options.variant = .worst
        options.audio = .language("fr")
        let created = try await manager.createTask(url: Self.base + "master.m3u8", options: options)
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(origin.requests(for: Self.base + "high/v.m3u8").isEmpty)
        #expect(origin.requests(for: Self.base + "en/a.m3u8").isEmpty)
        #expect(Fixtures.read(info.folder + "/audio0/seg00001.ts") == files[Self.base + "fr/1.ts"])
        #expect(Fixtures.read(info.folder + "/seg00000.ts") == files[Self.base + "low/0.ts"])
        #expect(info.playlistPath == info.folder + "/master.m3u8")
        #expect(
            Fixtures.text(info.folder + "/master.m3u8") == """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="French",LANGUAGE="fr",URI="audio0/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,AUDIO="aud"
                index.m3u8

                """)
        // The same request derives the same id; another selection another one.
        #expect(DownloadManager.stableID(url: Self.base + "master.m3u8", options: options) == created.id)
        options.variant = .best
        #expect(DownloadManager.stableID(url: Self.base + "master.m3u8", options: options) != created.id)
    }

    @Test func nonHTTPIsRefused() async throws {
        let manager = try Fixtures.manager(FakeOrigin())
        await #expect(throws: DownloadError.self) { try await manager.createTask(url: "file:///etc/passwd") }
    }
}
