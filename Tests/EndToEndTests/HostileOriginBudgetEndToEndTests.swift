// The release tools against TestSupport's HostileOrigin (issue 31): a trickled start-up check ends at its
// deadline, a segment that cannot be fetched answers 504 in time, 300 players waiting on a silent origin neither
// grow the proxy's threads nor slow another origin's segment, and downloads and the cache keep to their budgets on
// disk. Assertions are on statuses, exit codes, bytes on disk, elapsed time and /proc thread counts.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
    private let sendBytes = Glibc.send
#elseif canImport(Darwin)
    import Darwin
    private let sendBytes = Darwin.send
#endif

/// A raw HTTP/1.1 exchange with a loopback server: the status, the body and the time it took.
struct RawExchange {
    var status: Int?
    var body: [UInt8]
    var elapsed: Duration

    /// Sends `GET path` with `Connection: close` to 127.0.0.1:`port` and reads to the end (at most `seconds`).
    static func get(port: UInt16, path: String, within seconds: Double = 30) async -> RawExchange {
        let start = ContinuousClock.now
        let fd = send(port: port, path: path)
        guard fd >= 0 else { return RawExchange(status: nil, body: [], elapsed: start.duration(to: .now)) }
        defer { close(fd) }
        let bytes = await readAll(fd, until: start + .milliseconds(Int64(seconds * 1000)))
        return parse(bytes, elapsed: start.duration(to: .now))
    }

    /// A connected socket with the request sent (-1 on failure).
    static func send(port: UInt16, path: String) -> Int32 {
        let fd = LoopbackTCP.socket()
        guard fd >= 0, LoopbackTCP.connect(fd, port: port) else {
            if fd >= 0 { close(fd) }
            return -1
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { sendBytes(fd, $0.baseAddress, $0.count, LoopbackTCP.sendFlags) }
        return fd
    }

    /// Everything the peer sends until it closes or `deadline` passes, read on FileRange's pool.
    static func readAll(_ fd: Int32, until deadline: ContinuousClock.Instant) async -> [UInt8] {
        await blocking { readAllNow(fd, until: deadline) }
    }

    private static func readAllNow(_ fd: Int32, until deadline: ContinuousClock.Instant) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let (whole, fraction) = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = whole * 1000 + fraction / 1_000_000_000_000_000
            guard milliseconds > 0 else { return bytes }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(clamping: milliseconds)) == 1 else { return bytes }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return bytes }
            bytes += buffer[0..<n]
        }
    }

    static func parse(_ bytes: [UInt8], elapsed: Duration) -> RawExchange {
        let text = String(decoding: bytes.prefix(64), as: UTF8.self)
        let status = text.hasPrefix("HTTP/1.1 ") ? Int(text.dropFirst(9).prefix(3)) : nil
        var body: [UInt8] = []
        if let end = bytes.firstRange(of: [13, 10, 13, 10]) { body = Array(bytes[end.upperBound...]) }
        return RawExchange(status: status, body: body, elapsed: elapsed)
    }
}

/// Bytes a folder's files take on disk (allocated blocks), all the way down.
func bytesOnDisk(_ folder: URL) -> UInt64 {
    guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return 0 }
    var total: UInt64 = 0
    for case let name as String in walker {
        var info = stat()
        if lstat(folder.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            total += UInt64(info.st_blocks) * 512
        }
    }
    return total
}

/// A running `tsplayer proxy` and the local URL it printed.
final class HostileProxyProcess {
    let child: ChildProcess
    let localURL: String
    let port: UInt16
    /// Seconds from the start to the local URL.
    let startUp: Duration

    init?(_ url: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let tool = EndToEnd.product("tsplayer", sourceLocation: sourceLocation) else { return nil }
        let start = ContinuousClock.now
        child = try await ChildProcess(tool, ["proxy", url, "--allow-private"])
        let line = await child.lines(1, within: 60).first ?? ""
        startUp = start.duration(to: .now)
        guard line.hasPrefix("http://127.0.0.1:"),
            let port = UInt16(line.dropFirst("http://127.0.0.1:".count).prefix { $0 != "/" })
        else {
            Issue.record("proxy printed '\(line)'", sourceLocation: sourceLocation)
            await child.stop(grace: 0)
            return nil
        }
        localURL = line
        self.port = port
    }

    /// The path of a local URL (what follows host and port).
    func path(_ url: String) -> String {
        String(url.dropFirst("http://127.0.0.1:\(port)".count))
    }

    /// The local playlist's URIs, made absolute.
    func uris(ofPlaylistAt path: String) async -> [String] {
        let answer = await RawExchange.get(port: port, path: path)
        let base = "http://127.0.0.1:\(port)" + path[..<(path.lastIndex(of: "/") ?? path.endIndex)] + "/"
        return String(decoding: answer.body, as: UTF8.self).split(separator: "\n").map(String.init).filter {
            !$0.isEmpty && !$0.hasPrefix("#")
        }.map {
            if $0.hasPrefix("http") { return $0 }
            if $0.hasPrefix("/") { return "http://127.0.0.1:\(port)" + $0 }
            return base + $0
        }
    }

    func stop() async {
        child.send(SIGINT)
        await child.stop()
    }

    /// ``stop()`` from a `defer`: the signal now, the rest on the pool (ChildProcess's synchronous stop).
    func stop() {
        child.send(SIGINT)
        child.stop()
    }
}

@Suite("Hostile origins end to end: deadlines, budgets, fairness", .serialized, .temporaryFolders)
struct HostileOriginBudgetEndToEndTests {
    static let playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n"

    /// The manual's promise: the proxy's start-up check of an upstream that trickles a byte a second ends within
    /// the first fetch's 8 s (it waited 95 s and more), and the player's first request gets 504 within as long.
    @Test func theProxysStartUpCheckEndsAtItsDeadline() async throws {
        let origin = try HostileOrigin(trickleInterval: 1)
        defer { origin.stop() }
        origin.serve("/v.m3u8", Array((Self.playlist + "#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n").utf8))
        guard let proxy = try await HostileProxyProcess(origin.url("/trickle/v.m3u8")) else { return }
        defer { proxy.stop() }
        #expect(proxy.startUp < .seconds(20), "the local URL came after \(proxy.startUp)")
        let first = await RawExchange.get(port: proxy.port, path: proxy.path(proxy.localURL), within: 40)
        #expect(first.status == 504)
        #expect(first.elapsed < .seconds(20), "the player's first request was answered after \(first.elapsed)")
    }

    /// A segment whose origin never answers gets 504 within the fetch deadline (15 s), never a silent close; 300
    /// players waiting on it leave the proxy's threads bounded and another origin's segment as fast as before.
    @Test func threeHundredPlayersOnASilentOriginStarveNoOne() async throws {
        let good = try HostileOrigin()
        let silent = try HostileOrigin()
        defer {
            good.stop()
            silent.stop()
        }
        good.serve("/good.ts", [UInt8](repeating: 0x47, count: 188 * 1000))
        let text =
            Self.playlist + "#EXTINF:4,\n/good.ts\n#EXTINF:4,\n\(silent.url("/silent/a.ts"))\n#EXT-X-ENDLIST\n"
        good.serve("/v.m3u8", Array(text.utf8))
        guard let proxy = try await HostileProxyProcess(good.url("/v.m3u8")) else { return }
        defer { proxy.stop() }
        let segments = await proxy.uris(ofPlaylistAt: proxy.path(proxy.localURL))
        try #require(segments.count == 2)
        let goodPath = proxy.path(segments[0])
        let silentPath = proxy.path(segments[1])

        func goodLatencies() async -> [Duration] {
            var latencies: [Duration] = []
            for _ in 0..<20 {
                let answer = await RawExchange.get(port: proxy.port, path: goodPath)
                #expect(answer.status == 200 && answer.body.count == 188_000)
                latencies.append(answer.elapsed)
            }
            return latencies.sorted()
        }
        let before = await goodLatencies()
        let threadsBefore = HostileOrigin.threadCount(of: proxy.child.pid) ?? 0

        // One player alone: 504 within the deadline.
        let alone = await RawExchange.get(port: proxy.port, path: silentPath, within: 40)
        #expect(alone.status == 504)
        #expect(alone.elapsed < .seconds(25), "a silent segment was answered after \(alone.elapsed)")

        // 300 players at once.
        let start = ContinuousClock.now
        let sockets = (0..<300).map { _ in RawExchange.send(port: proxy.port, path: silentPath) }
        #expect(sockets.allSatisfy { $0 >= 0 })
        try await Task.sleep(for: .seconds(2))
        let during = await goodLatencies()
        let threadsDuring = HostileOrigin.threadCount(of: proxy.child.pid) ?? 0
        let upstream = silent.requests("silent")
        var statuses: [Int?] = []
        for fd in sockets where fd >= 0 {
            let bytes = await RawExchange.readAll(fd, until: start + .seconds(45))
            statuses.append(RawExchange.parse(bytes, elapsed: .zero).status)
            close(fd)
        }
        let allAnswered = start.duration(to: .now)
        let median = { (list: [Duration]) in list[list.count / 2] }
        print(
            "good segment latency: median \(median(before)), max \(before.last ?? .zero) alone; "
                + "median \(median(during)), max \(during.last ?? .zero) beside 300 waiting players; "
                + "proxy threads \(threadsBefore) → \(threadsDuring); silent-origin requests \(upstream); "
                + "all 300 answered after \(allAnswered)")
        #expect(threadsDuring < threadsBefore + 40, "the proxy grew from \(threadsBefore) to \(threadsDuring) threads")
        #expect(upstream <= 1 + 16 * 2, "the silent origin got \(upstream) requests")
        #expect(median(during) < .milliseconds(300) && (during.last ?? .zero) < .seconds(1))
        #expect(statuses.allSatisfy { $0 == 504 || $0 == 502 }, "statuses: \(Set(statuses.map { $0 ?? 0 }))")
        #expect(allAnswered < .seconds(40))
    }

    /// A VOD segment that never ends stops at the task's budget (it wrote 4.5 GB past --max-bytes 10000000) and at
    /// the per-resource limit, leaving no more than that on disk.
    @Test func aDownloadOfAnEndlessSegmentKeepsToItsBudgets() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        origin.serve("/v.m3u8", Array((Self.playlist + "#EXTINF:4,\n/endless/s.ts\n#EXT-X-ENDLIST\n").utf8))
        guard let tool = EndToEnd.product("tsplayer") else { return }
        for (option, limit, code) in [("--max-bytes", 10_000_000, Int32(1)), ("--max-resource-bytes", 5_000_000, 2)] {
            let store = TemporaryFolders.make(prefix: "hostile-dl-")
            let start = ContinuousClock.now
            let result = try await EndToEnd.run(
                tool, ["download", origin.url("/v.m3u8"), "-o", store.path, option, "\(limit)"], timeout: 120)
            let elapsed = start.duration(to: .now)
            #expect(result.status == code, "\(option): exit \(result.status)")
            #expect(elapsed < .seconds(60), "\(option): ran for \(elapsed)")
            let used = bytesOnDisk(store)
            #expect(used <= UInt64(limit) + (1 << 20), "\(option) \(limit): \(used) bytes on disk")
        }
        // A Content-Length over the limit is refused before a byte of its body is written.
        origin.serve("/h.m3u8", Array((Self.playlist + "#EXTINF:4,\n/huge/60000000\n#EXT-X-ENDLIST\n").utf8))
        let store = TemporaryFolders.make(prefix: "hostile-dl-")
        let result = try await EndToEnd.run(
            tool, ["download", origin.url("/h.m3u8"), "-o", store.path, "--max-resource-bytes", "5000000"],
            timeout: 120)
        #expect(result.status == 2)
        #expect(bytesOnDisk(store) < 1 << 20, "\(bytesOnDisk(store)) bytes on disk")
        #expect(origin.requests("huge") == 1)
    }

    /// cache-proxy --max-size holds for one resource larger than the budget (a 1.9 GB one stayed whole with
    /// --max-size 100M): it is streamed through whole, and the cache folder stays within the budget plus a chunk.
    @Test func theCacheKeepsToItsBudgetForOneResourceLargerThanIt() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        guard let tool = EndToEnd.product("tsplayer"), let curl = EndToEnd.tool("curl") else { return }
        let cache = TemporaryFolders.make(prefix: "hostile-cache-")
        let size = 24_000_000
        let child = try await ChildProcess(
            tool,
            [
                "cache-proxy", origin.url("/huge/\(size)"), "--cache-dir", cache.path, "--max-size", "4M",
                "--allow-private",
            ])
        defer {
            child.send(SIGINT)
            child.stop()
        }
        let local = await child.lines(1, within: 20).first ?? ""
        try #require(local.hasPrefix("http://127.0.0.1:"))
        let whole = try await EndToEnd.run(curl, ["-sf", local], timeout: 120)
        #expect(whole.status == 0)
        #expect(whole.stdout.count == size)
        let sample = [0, 1_000_000, size - 1].allSatisfy { whole.stdout[$0] == UInt8(truncatingIfNeeded: $0 % 251) }
        #expect(sample)
        let part = try await EndToEnd.run(curl, ["-sf", "-r", "10000000-10000999", local], timeout: 60)
        #expect(part.stdout.count == 1000 && part.stdout.first == UInt8(truncatingIfNeeded: 10_000_000 % 251))
        let used = bytesOnDisk(cache)
        #expect(used <= (4 << 20) + (1 << 20) + (64 << 10), "the cache holds \(used) bytes with --max-size 4M")
    }
}
