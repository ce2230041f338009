import FileRange
import Foundation
import Testing

@testable import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.temporaryFolders) struct TemporaryFoldersTests {
    @Test("a folder made in a test exists, empty, in the temporary directory, and goes when the test ends")
    func removedAtTheEnd() async throws {
        let test = try #require(Test.current)
        let made = Locked<URL?>(nil)
        try await TemporaryFoldersTrait().provideScope(for: test, testCase: nil) {
            let url = TemporaryFolderURLs.make(prefix: "support-self-")
            made.withLock { $0 = url }
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue)
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty)
            #expect(url.lastPathComponent.hasPrefix("support-self-"))
            try Data("x".utf8).write(to: url.appendingPathComponent("file"))
        }
        let url = try #require(made.withLock { $0 })
        #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.path) is still there")
    }

    @Test("paths and URLs name the same kind of folder")
    func pathsAndURLs() {
        let path = TemporaryFolderPaths.make(prefix: "support-path-")
        let url = TemporaryFolderURLs.make(prefix: "support-url-")
        #expect(path.hasPrefix(NSTemporaryDirectory()))
        #expect(url.path.hasPrefix(URL(fileURLWithPath: NSTemporaryDirectory()).path))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(path != url.path)
    }
}

@Suite(.temporaryFolders) struct NginxOriginTests {
    @Test("nginx serves the root at / and /slow/, logs each request, and is gone after stop()")
    func servesAndLogs() async throws {
        let root = TemporaryFolderURLs.make(prefix: "support-nginx-root-")
        let body = Data((0..<10_000).map { UInt8($0 % 251) })
        try body.write(to: root.appendingPathComponent("a.ts"))
        guard let origin = try await NginxOrigin(root: root) else { return }
        let fetched = try Data(contentsOf: try #require(URL(string: origin.url("a.ts"))))
        #expect(fetched == body)
        let slow = try Data(contentsOf: try #require(URL(string: origin.url("slow/a.ts"))))
        #expect(slow == body)
        let log = await origin.requests(atLeast: 2)
        #expect(log.map(\.uri) == ["/a.ts", "/slow/a.ts"])
        #expect(log.map(\.status) == [200, 200])
        #expect(log.map(\.bytes) == [10_000, 10_000])
        await origin.stop()
        #expect(!NginxOrigin.connects(origin.port), "nginx still answers on port \(origin.port)")
    }

    @Test("with a required Authorization, other requests get 403")
    func requiresAuthorization() async throws {
        let root = TemporaryFolderURLs.make(prefix: "support-nginx-auth-")
        try Data("#EXTM3U\n".utf8).write(to: root.appendingPathComponent("a.m3u8"))
        guard let origin = try await NginxOrigin(root: root, requiredAuthorization: "Bearer t") else { return }
        defer { origin.stop() }
        #expect((try? Data(contentsOf: try #require(URL(string: origin.url("a.m3u8"))))) == nil)
        #expect(await origin.requests(atLeast: 1).map(\.status) == [403])
    }
}

@Suite struct MediaPlaylistTextTests {
    @Test("a live window is written line by line, tags before their segment")
    func window() {
        let text = MediaPlaylistText.window(
            first: 7, count: 3, targetDuration: 2, duration: "2.000", uri: { "s\($0).ts" },
            tags: { $0 == 8 ? "#EXT-X-DISCONTINUITY\n" : "" }
        ).text
        #expect(
            text
                == "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n"
                + "#EXTINF:2.000,\ns7.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:2.000,\ns8.ts\n#EXTINF:2.000,\ns9.ts\n")
    }

    @Test("a VOD playlist: no version or media sequence when nil, the header, EXT-X-ENDLIST")
    func vod() {
        let playlist = MediaPlaylistText(
            version: nil, targetDuration: 4, header: "#EXT-X-PLAYLIST-TYPE:VOD\n",
            segments: [.init(duration: "4.0", uri: "a.ts")], ended: true)
        #expect(
            playlist.text
                == "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4.0,\na.ts\n#EXT-X-ENDLIST\n")
        #expect(playlist.bytes == Array(playlist.text.utf8))
    }
}

@Suite(.serialized) struct SharedFoldersTests {
    @Test("a shared folder exists, empty, outside any test's registry, and is listed for removal at exit")
    func sharedFolder() throws {
        let url = TemporaryFolderURLs.makeShared(prefix: "support-shared-")
        let path = TemporaryFolderPaths.makeShared(prefix: "support-shared-")
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
        #expect(url.lastPathComponent.hasPrefix("support-shared-") && url.path != path)
    }
}

@Suite struct SplitMix64Tests {
    @Test("SplitMix64 gives the reference sequence for seed 0 and replays any seed exactly")
    func referenceAndReplay() {
        var zero = SplitMix64(seed: 0)
        #expect(
            [zero.next(), zero.next(), zero.next()] == [
                0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F,
            ])
        var a = SplitMix64(seed: 0x5EED)
        var b = SplitMix64(seed: 0x5EED)
        var c = SplitMix64(seed: 0x5EEE)
        let first = (0..<100).map { _ in a.next() }
        #expect(first == (0..<100).map { _ in b.next() })
        #expect(first != (0..<100).map { _ in c.next() })
        #expect(Set(first).count == 100)
    }
}

@Suite struct LoopbackTCPTests {
    @Test("a listener takes a port that accepts connections until it closes; an unused port accepts none")
    func listenerAndUnusedPort() throws {
        let fd = LoopbackTCP.listener()
        try #require(fd >= 0)
        let port = LoopbackTCP.localPort(fd)
        #expect(port != 0)
        #expect(LoopbackTCP.accepts(port))
        close(fd)
        #expect(!LoopbackTCP.accepts(port))
        let unused = LoopbackTCP.unusedPort()
        #expect(unused != 0)
        #expect(!LoopbackTCP.accepts(unused))
    }
}

@Suite struct ExternalProgramTests {
    @Test("a program runs to completion with its stdin, stdout, stderr and exit status")
    func runsToCompletion() async throws {
        let sh = try #require(ExternalProgram.find("sh"))
        let result = try await ExternalProgram.run(
            sh, ["-c", "tr a-z A-Z; echo oops >&2; exit 3"], input: Data("quiet\n".utf8), timeout: 30)
        #expect(result.status == 3)
        #expect(result.out == "QUIET\n")
        #expect(String(decoding: result.stderr, as: UTF8.self) == "oops\n")
    }

    @Test("a program still running after its timeout is killed, and the hang is said")
    func aHangIsKilled() async throws {
        let sleep = try #require(ExternalProgram.find("sleep"))
        let start = Date()
        let (result, timedOut) = try await ExternalProgram.runWithin(
            0.5, sleep, ["60"], input: nil, environment: nil, currentDirectory: nil)
        #expect(timedOut)
        #expect(Date().timeIntervalSince(start) < 20)
        #expect(result.status == SIGKILL)
        let (quick, quickTimedOut) = try await ExternalProgram.runWithin(
            30, sleep, ["0"], input: nil, environment: nil, currentDirectory: nil)
        #expect(!quickTimedOut)
        #expect(quick.status == 0)
    }
}

@Suite struct ServeConnectionsTests {
    @Test("a stopped raw origin's accepting thread closes its listener itself and accepts nothing more")
    func stoppingLeavesTheListenerToItsThread() async throws {
        let listener = LoopbackTCP.listener()
        try #require(listener >= 0)
        let port = LoopbackTCP.localPort(listener)
        let served = Locked(0)
        LoopbackTCP.serveConnections(on: listener) { client in
            served.withLock { $0 += 1 }
            close(client)
        }
        #expect(LoopbackTCP.accepts(port))
        for _ in 0..<100 where served.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(served.withLock { $0 } == 1)
        // Which socket the descriptor is: with tests running in parallel, its number may name another file as soon
        // as it is closed.
        func identity() -> (dev_t, ino_t)? {
            var info = stat()
            return fstat(listener, &info) == 0 ? (info.st_dev, info.st_ino) : nil
        }
        let socket = try #require(identity())
        LoopbackTCP.stopServing(listener)
        // The descriptor is closed by the thread once accept fails, not by the caller.
        var closed = false
        for _ in 0..<100 {
            if let now = identity(), now == socket {
                try await Task.sleep(for: .milliseconds(10))
                continue
            }
            closed = true
            break
        }
        #expect(closed)
        #expect(!LoopbackTCP.accepts(port))
    }
}

/// `blocking { }`: a thread of its own per call, neither a cooperative thread nor one of FileRange's pool.
@Suite struct BlockingHopTests {
    /// More blocked test clients than FileRange's pool has threads leave the pool free: a job given to it starts at
    /// once. (On the pool, as `blocking` ran before, the job waited behind them: a client's deadline fired late.)
    @Test func blockedCallsLeaveTheLibrarysPoolFree() async {
        let count = BlockingPool.shared.maximumThreads + 6
        let release = DispatchSemaphore(value: 0)
        let arrived = Locked(0)
        let allArrived = Completion()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask {
                    await blocking {
                        if arrived.withLock({ value -> Bool in
                            value += 1
                            return value == count
                        }) {
                            allArrived.signal()
                        }
                        _ = release.wait(timeout: .now() + 20)
                    }
                }
            }
            #expect(await allArrived.wait(within: 20), "\(arrived.withLock { $0 }) of \(count) calls started")
            let start = ContinuousClock.now
            let waited = await BlockingPool.shared.run { start.duration(to: .now) }
            #expect(waited < .seconds(1), "a job on the pool started after \(waited)")
            for _ in 0..<count { release.signal() }
        }
    }

    /// Computations given to `blocking`, twice as many as cores, leave Swift's cooperative threads to other tasks:
    /// a 50 ms sleep meanwhile ends well within a second. (Run in the tests' tasks, they held every cooperative
    /// thread until they ended, and the sleep took the whole second.)
    @Test func computationsLeaveTheCooperativeThreadsFree() async {
        let spinUntil = ContinuousClock.now + .seconds(1)
        let computations = 2 * ProcessInfo.processInfo.activeProcessorCount
        async let spun: Void = withTaskGroup(of: Void.self) { group in
            for _ in 0..<computations {
                group.addTask {
                    await blocking {
                        var count = 0
                        while ContinuousClock.now < spinUntil { count &+= 1 }
                        _ = count
                    }
                }
            }
        }
        await suspend(0.1)
        let start = ContinuousClock.now
        await suspend(0.05)
        let slept = start.duration(to: .now)
        await spun
        #expect(slept < .milliseconds(600), "a 50 ms sleep took \(slept)")
    }
}

@Suite struct HugeBodyTests {
    @Test("isHugeBody accepts /huge/'s pattern from any offset, across its blocks, and refuses one changed byte")
    func patternChecks() {
        let offset = 70_000
        var body = (offset..<offset + 200_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        #expect(HostileOrigin.isHugeBody(body, from: offset))
        #expect(HostileOrigin.isHugeBody([]))
        #expect(!HostileOrigin.isHugeBody(body, from: offset + 1))
        body[150_000] &+= 1
        #expect(!HostileOrigin.isHugeBody(body, from: offset))
    }
}
