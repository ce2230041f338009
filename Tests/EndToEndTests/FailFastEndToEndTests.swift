// Failing fast and saying what is happening, end to end with the built tools: a closed port, a server that accepts
// and never answers, a 404 and a server that drops its first connections, each through `tsplayer download`,
// `tsplayer proxy`, `tsplayer cache-proxy` and `m3u8lint URL` (m3u8lint's refused port, silent server and 404 are
// in M3U8LintFetchTests); and the headers of a Kodi `url|User-Agent=..&Referer=..` suffix on every request the
// downloader and the proxy make, against an origin that refuses any request without them.
import FileRange
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.serialized, .temporaryFolders) struct FailFastEndToEndTests {
    static let playlist = Array("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nseg.ts\n#EXT-X-ENDLIST\n".utf8)
    /// Ten MPEG-TS null packets: a segment that is TS-shaped.
    static let segment: [UInt8] = (0..<10).flatMap { _ in
        [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)
    }

    static func response(_ status: String, _ body: [UInt8] = []) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    /// Runs a built tool; its result and the seconds it took.
    func timed(_ name: String, _ arguments: [String]) async throws -> (result: ProcessResult, seconds: Double)? {
        guard let tool = EndToEnd.product(name) else { return nil }
        let start = ContinuousClock.now
        let result = try await EndToEnd.run(tool, arguments)
        return (result, Self.seconds(since: start))
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func store() -> String {
        // The store's root does not exist yet (tsplayer makes it), inside a folder the running test removes.
        TemporaryFolders.make(prefix: "failfast-").appendingPathComponent("store").path
    }

    // MARK: tsplayer download

    /// Nothing listens: the error names the URL and comes at once (no retry).
    @Test func downloadOfAClosedPortFailsWithinASecond() async throws {
        let port = ScriptedOrigin.unusedPort()
        let url = "http://127.0.0.1:\(port)/index.m3u8"
        let (result, seconds) = try #require(try await timed("tsplayer", ["download", url, "-o", Self.store()]))
        #expect(result.status == 2)
        #expect(result.err.hasPrefix("Error: \(url): "), "\(result.err)")
        #expect(result.err.contains("ECONNREFUSED") || result.err.contains("refused"), "\(result.err)")
        #expect(!result.err.contains("retrying"))
        #expect(seconds < 1.5, "took \(seconds) s")
    }

    /// A server that accepts and never answers: the first playlist fetch gives up after its own 8 s.
    @Test func downloadFromASilentServerFailsWithinTheFirstFetchTimeout() async throws {
        let origin = try ScriptedOrigin { _ in nil }
        let url = origin.url("/silent.m3u8")
        let (result, seconds) = try #require(try await timed("tsplayer", ["download", url, "-o", Self.store()]))
        #expect(result.status == 2)
        #expect(result.err == "Error: \(url): no complete answer within 8 s\n")
        #expect(seconds >= 8 && seconds < 9.5, "took \(seconds) s")
    }

    /// A 404 is said in words, asked once, at once.
    @Test func downloadOfAMissingPlaylistSays404NotFound() async throws {
        let origin = try ScriptedOrigin { _ in Self.response("404 Not Found") }
        let url = origin.url("/missing.m3u8")
        let (result, seconds) = try #require(try await timed("tsplayer", ["download", url, "-o", Self.store()]))
        #expect(result.status == 2)
        #expect(result.err.hasPrefix("Error: \(url): "), "\(result.err)")
        #expect(result.err.contains("404 Not Found"), "\(result.err)")
        #expect(origin.paths.withLock { $0 } == ["/missing.m3u8"])
        #expect(seconds < 1.5, "took \(seconds) s")
    }

    /// The first two connections are dropped without an answer: each retry is shown on stderr as it happens (delay,
    /// attempt, reason, URL), then the download completes.
    @Test func downloadShowsRetriesAsTheyHappenThenSucceeds() async throws {
        let asked = LockedValue(0)
        let origin = try ScriptedOrigin { path in
            if path == "/seg.ts" { return Self.response("200 OK", Self.segment) }
            let n = asked.withLock { n -> Int in
                n += 1
                return n
            }
            return n <= 2 ? [] : Self.response("200 OK", Self.playlist)
        }
        let url = origin.url("/live.m3u8")
        let (result, _) = try #require(try await timed("tsplayer", ["download", url, "-o", Self.store(), "--id", "r"]))
        #expect(result.status == 0, "\(result.err)")
        let retries = result.err.split(separator: "\n").filter { $0.hasPrefix("retrying in ") }
        #expect(retries.count == 2, "\(result.err)")
        #expect(retries.first?.contains(" (2/8): ") == true && retries.last?.contains(" (3/8): ") == true)
        #expect(retries.allSatisfy { $0.hasSuffix(" (\(url))") }, "\(retries)")
        #expect(!result.err.contains("HTTPClientError") && !result.err.contains("DownloadError"))
        #expect(origin.paths.withLock { $0 }.filter { $0 == "/live.m3u8" }.count == 3)
    }

    // MARK: m3u8lint URL

    /// The same dropped connections through m3u8lint: two retry lines, then the lint.
    @Test func m3u8lintShowsRetriesAsTheyHappen() async throws {
        let asked = LockedValue(0)
        let origin = try ScriptedOrigin { _ in
            let n = asked.withLock { n -> Int in
                n += 1
                return n
            }
            return n <= 2 ? [] : Self.response("200 OK", Self.playlist)
        }
        let url = origin.url("/x.m3u8")
        let (result, seconds) = try #require(try await timed("m3u8lint", [url]))
        #expect(result.status == 0, "\(result.err)")
        let retries = result.err.split(separator: "\n").filter { $0.hasPrefix("retrying in ") }
        #expect(retries.count == 2, "\(result.err)")
        #expect(retries.first?.contains(" (2/3): ") == true && retries.last?.contains(" (3/3): ") == true)
        #expect(retries.allSatisfy { $0.hasSuffix(" (\(url))") }, "\(retries)")
        #expect(seconds < 3, "took \(seconds) s")
    }

    // MARK: tsplayer proxy and cache-proxy

    /// The proxy's first playlist request against a silent upstream is answered 504 within the first-fetch
    /// timeout (the door check before it gives up sooner and only warns).
    @Test func proxysFirstRequestToASilentServerFailsWithinTheFirstFetchTimeout() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let curl = EndToEnd.tool("curl") else { return }
        let origin = try ScriptedOrigin { _ in nil }
        let url = origin.url("/silent.m3u8")
        let proxy = try await ProxyTestProcess(tsplayer, ["proxy", url, "--allow-private"])
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasSuffix("/master.m3u8"), "\(proxy.stderr)")
        let start = ContinuousClock.now
        let answer = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", proxy.firstLine])
        let seconds = Self.seconds(since: start)
        #expect(answer.out.hasSuffix("\n504"), "\(answer.out)")
        #expect(answer.out.contains("no complete answer within 8 s"), "\(answer.out)")
        #expect(seconds >= 8 && seconds < 9.5, "took \(seconds) s")
        let deadline = Date().addingTimeInterval(2)
        while !proxy.stderr.contains("upstream error"), Date() < deadline { await suspend(0.02) }
        #expect(proxy.stderr.contains("upstream error: \(url): "), "\(proxy.stderr)")
    }

    /// A closed port through the proxy: its first request is answered 502 at once, naming the URL.
    @Test func proxysFirstRequestToAClosedPortFailsAtOnce() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let curl = EndToEnd.tool("curl") else { return }
        let url = "http://127.0.0.1:\(ScriptedOrigin.unusedPort())/index.m3u8"
        let proxy = try await ProxyTestProcess(tsplayer, ["proxy", url, "--allow-private"])
        defer { proxy.stop() }
        let start = ContinuousClock.now
        let answer = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", proxy.firstLine])
        let seconds = Self.seconds(since: start)
        #expect(answer.out.hasSuffix("\n502"), "\(answer.out)")
        #expect(answer.out.contains("ECONNREFUSED") || answer.out.contains("refused"), "\(answer.out)")
        #expect(seconds < 1, "took \(seconds) s")
        // A refusal is final: neither the start-up check nor the request retried it.
        #expect(!proxy.stderr.contains("retrying"), "\(proxy.stderr)")
    }

    /// A busy upstream (503 twice, then the playlist): the proxy shows its retry on stderr and answers 200.
    @Test func proxyShowsRetriesAsTheyHappen() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let curl = EndToEnd.tool("curl") else { return }
        let asked = LockedValue(0)
        let origin = try ScriptedOrigin { _ in
            let n = asked.withLock { n -> Int in
                n += 1
                return n
            }
            return n <= 2 ? Self.response("503 Service Unavailable") : Self.response("200 OK", Self.playlist)
        }
        let url = origin.url("/busy.m3u8")
        let proxy = try await ProxyTestProcess(tsplayer, ["proxy", url, "--allow-private"])
        defer { proxy.stop() }
        // The door check (one try) took the first 503; the player's request retries past the second.
        let answer = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", proxy.firstLine])
        #expect(answer.out.hasPrefix("#EXTM3U") && answer.out.hasSuffix("\n200"), "\(answer.out)")
        let retries = proxy.stderr.split(separator: "\n").filter { $0.hasPrefix("retrying in ") }
        #expect(retries.count == 1, "\(proxy.stderr)")
        #expect(
            retries.first
                == "retrying in \(Self.delay(retries.first)) (2/3): upstream answered 503 Service Unavailable (\(url))")
    }

    /// The delay a retry line names (`0.3 s`), for comparing the rest of the line exactly.
    static func delay(_ line: Substring?) -> String {
        guard let line, let open = line.firstIndex(of: "(") else { return "" }
        return String(line.dropFirst("retrying in ".count)[..<open].dropLast())
    }

    /// The caching proxy's first read of a resource whose origin never answers fails within the first-fetch
    /// timeout.
    @Test func cacheProxysFirstReadFromASilentServerFailsWithinTheFirstFetchTimeout() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let curl = EndToEnd.tool("curl") else { return }
        let origin = try ScriptedOrigin { _ in nil }
        let url = origin.url("/movie.ts")
        let proxy = try await ProxyTestProcess(
            tsplayer, ["cache-proxy", url, "--allow-private", "--cache-dir", Self.store()])
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasPrefix("http://127.0.0.1:"), "\(proxy.stderr)")
        let start = ContinuousClock.now
        let answer = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", proxy.firstLine])
        let seconds = Self.seconds(since: start)
        #expect(answer.out.hasSuffix("\n504") || answer.out.hasSuffix("\n502"), "\(answer.out)")
        #expect(answer.out.contains("within 8 s"), "\(answer.out)")
        #expect(seconds >= 8 && seconds < 9.5, "took \(seconds) s")
    }

    // MARK: Headers from a Kodi URL suffix

    static let suffix = "|User-Agent=KodiTest%2F1.0&Referer=http%3A%2F%2Freferrer.example%2Fpage"
    static let required = [
        "--require-header", "User-Agent=KodiTest/1.0", "--require-header",
        "Referer=http://referrer.example/page",
    ]

    /// The origin's log: (path, status, fault) per request.
    static func requests(_ origin: FaultOrigin) -> [(path: String, status: String, fault: String)] {
        ((try? String(contentsOf: origin.log, encoding: .utf8)) ?? "").split(separator: "\n").map {
            let fields = $0.split(separator: " ").map(String.init)
            return (fields[0], fields.count > 1 ? fields[1] : "", fields.count > 2 ? fields[2] : "")
        }
    }

    /// `tsplayer download 'URL|User-Agent=..&Referer=..'` of an AES-128 stream with a key change: the playlist,
    /// both keys and every segment carried both headers (the origin answers 403 without them), and the result is
    /// the origin's byte for byte. Without the suffix the origin refuses.
    @Test func downloadSendsTheURLSuffixHeadersOnEveryRequest() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let origin = try await FaultOrigin(root: fixtures.www, arguments: ["--rate", "0"] + Self.required)
        else { return }
        defer { origin.stop() }
        let store = Self.store()
        let plain = try #require(try await DownloadTool.run(["download", origin.url("aes/index.m3u8"), "-o", store]))
        #expect(plain.status == 2)
        #expect(plain.err.contains("403 Forbidden"), "\(plain.err)")
        let refused = Self.requests(origin).count
        #expect(refused == 1)

        let result = try await #require(
            try DownloadTool.run(["download", origin.url("aes/index.m3u8") + Self.suffix, "-o", store, "--id", "k"]))
        #expect(result.status == 0, "\(result.err)")
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        #expect(
            DownloadFixtures.expectIdentical(origin: playlist, local: URL(fileURLWithPath: store + "/k/index.m3u8")) > 0
        )
        let carried = Self.requests(origin).dropFirst(refused)
        #expect(carried.allSatisfy { $0.status == "200" && $0.fault == "none" }, "\(carried)")
        let expected = Set(["/aes/index.m3u8"] + DownloadFixtures.references(playlist).map { "/aes/" + $0 })
        #expect(Set(carried.map(\.path)) == expected)
        #expect(expected.contains { $0.hasSuffix(".key") } && expected.contains { $0.hasSuffix(".ts") })
    }

    /// `tsplayer proxy 'URL|...'` and ffmpeg reading through it: every upstream request (door check, playlist,
    /// keys, segments) carried both headers.
    @Test func proxySendsTheURLSuffixHeadersOnEveryRequest() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let ffmpeg = EndToEnd.tool("ffmpeg"),
            let fixtures = await DownloadFixtures.get(),
            let origin = try await FaultOrigin(root: fixtures.www, arguments: ["--rate", "0"] + Self.required)
        else { return }
        defer { origin.stop() }
        let proxy = try await ProxyTestProcess(
            tsplayer, ["proxy", origin.url("aes/index.m3u8") + Self.suffix, "--allow-private"])
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasSuffix("/master.m3u8"), "\(proxy.stderr)")
        let read = try await EndToEnd.run(
            ffmpeg, ["-nostdin", "-loglevel", "error", "-i", proxy.firstLine, "-c", "copy", "-f", "null", "-"])
        #expect(read.status == 0, "\(read.err)")
        let requests = Self.requests(origin)
        // (ffmpeg asks for segments by Range: 206.)
        #expect(requests.allSatisfy { ["200", "206"].contains($0.status) && $0.fault == "none" }, "\(requests)")
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        let expected = Set(["/aes/index.m3u8"] + DownloadFixtures.references(playlist).map { "/aes/" + $0 })
        #expect(Set(requests.map(\.path)) == expected)
        #expect(!proxy.stderr.contains("upstream error"), "\(proxy.stderr)")
    }
}
