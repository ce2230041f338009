import FileRange
// End-to-end tests of `tsplayer cache-proxy` against a real origin (nginx on loopback that answers 403 without
// the right Authorization header) and real clients (ffprobe, ffmpeg, curl).
import Foundation
import Testing

/// Media made by ffmpeg once per run: an mp3, an mp4 (moov at the end, so readers seek) and a .ts.
enum CacheProxyFixtures {
    static var folder: URL? { get async { await folderFixture.value } }
    private static let folderFixture = SharedFixture<URL?> {
        await make()
    }
    static let names = ["tone.mp3", "clip.mp4", "clip.ts"]

    private static func make() async -> URL? {
        guard let ffmpeg = EndToEnd.tool("ffmpeg") else { return nil }
        let folder = TemporaryFolders.makeShared(prefix: "cacheproxy-")
        let jobs: [[String]] = [
            ["-f", "lavfi", "-i", "sine=frequency=440:duration=6", "-c:a", "libmp3lame", "-b:a", "128k", "tone.mp3"],
            [
                "-f", "lavfi", "-i", "testsrc=size=640x360:rate=25:duration=4", "-f", "lavfi", "-i",
                "sine=frequency=300:duration=4", "-vf", "noise=alls=30:allf=t", "-c:v", "libx264", "-preset",
                "ultrafast", "-b:v", "6M", "-c:a", "aac",
                "-shortest", "clip.mp4",
            ],
            [
                "-f", "lavfi", "-i", "testsrc=size=640x360:rate=25:duration=4", "-vf", "noise=alls=30:allf=t", "-c:v",
                "libx264", "-preset",
                "ultrafast", "-b:v", "6M", "-f", "mpegts", "clip.ts",
            ],
        ]
        for job in jobs {
            guard
                let result = try? await EndToEnd.run(
                    ffmpeg,
                    ["-v", "error", "-y"] + job.dropLast() + [folder.appendingPathComponent(job.last ?? "").path]),
                result.status == 0
            else { return nil }
        }
        return folder
    }

    static func bytes(_ name: String) async -> Data {
        guard let folder = await folder else { return Data() }
        return (try? Data(contentsOf: folder.appendingPathComponent(name))) ?? Data()
    }
}

/// A digest of the bytes (FNV-1a 64 and the length), so that a failure prints something short.
func cacheProxySHA(_ data: Data) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in data { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return "\(data.count):" + String(hash, radix: 16)
}

/// The origin of these tests: nginx serving the fixtures, 403 unless `Authorization: Bearer <token>`; `/slow/` is
/// throttled.
enum CacheProxyOrigin {
    static let token = "e2e-token-1234"

    static func start(root: URL, sourceLocation: SourceLocation = #_sourceLocation) async throws -> NginxOrigin? {
        try await NginxOrigin(
            root: root, slowRate: "512k", requiredAuthorization: "Bearer \(token)", sourceLocation: sourceLocation)
    }
}

/// A running `tsplayer cache-proxy` and the local URL it printed.
final class CacheProxyProcess {
    let child: ChildProcess
    let localURL: String

    init?(_ url: String, cacheDirectory: URL, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let tool = EndToEnd.product("tsplayer", sourceLocation: sourceLocation) else { return nil }
        child = try await ChildProcess(
            tool,
            [
                "cache-proxy", url, "-H", "Authorization: Bearer \(CacheProxyOrigin.token)", "--cache-dir",
                cacheDirectory.path, "--allow-private",
            ])
        let line = await child.lines(1, within: 20).first ?? ""
        guard line.hasPrefix("http://127.0.0.1:") else {
            Issue.record("cache-proxy printed '\(line)'", sourceLocation: sourceLocation)
            await child.stop(grace: 0)
            return nil
        }
        localURL = line
    }

    func kill9() async { await child.stop(grace: 0) }

    /// Interrupts it (as Ctrl-C does), SIGKILL if it has not ended within 5 s.
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

/// A new cache folder that the running test removes when it ends (its suite must be marked `.temporaryFolders`).
func cacheProxyTempDirectory(sourceLocation: SourceLocation = #_sourceLocation) -> URL {
    TemporaryFolders.make(prefix: "cpcache-", sourceLocation: sourceLocation)
}

/// `curl -s [-r range] url` → body (nil when curl fails).
func cacheProxyCurl(_ url: String, range: String? = nil) async throws -> Data? {
    guard let curl = EndToEnd.tool("curl") else { return nil }
    let result = try await EndToEnd.run(curl, ["-sf"] + (range.map { ["-r", $0] } ?? []) + [url])
    return result.status == 0 ? result.stdout : nil
}

@Suite("tsplayer cache-proxy end to end", .serialized, .temporaryFolders)
struct CacheProxyEndToEndTests {
    /// The MD5 of every demuxed packet, as ffmpeg reports it.
    func packetHash(_ input: String) async throws -> String? {
        guard let ffmpeg = EndToEnd.tool("ffmpeg") else { return nil }
        let result = try await EndToEnd.run(
            ffmpeg, ["-v", "error", "-i", input, "-map", "0", "-c", "copy", "-f", "md5", "-"])
        #expect(result.status == 0, "ffmpeg failed on \(input): \(result.err)")
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func probe(_ input: String) async throws -> String? {
        guard let ffprobe = EndToEnd.tool("ffprobe") else { return nil }
        let result = try await EndToEnd.run(
            ffprobe,
            ["-v", "error", "-show_entries", "format=duration,size:stream=codec_name", "-of", "csv=p=0", input])
        #expect(result.status == 0, "ffprobe failed on \(input): \(result.err)")
        return result.out
    }

    @Test("ffprobe and ffmpeg read an mp3, an mp4 and a .ts through the proxy, with the header, then offline")
    func readsWithHeaderThenOffline() async throws {
        let root = try #require(await CacheProxyFixtures.folder)
        let origin = try await #require(try CacheProxyOrigin.start(root: root))
        let cache = cacheProxyTempDirectory()
        // Without the header the origin refuses.
        await #expect(try cacheProxyCurl(origin.url("tone.mp3")) == nil)

        var expected: [String: (probe: String?, packets: String?)] = [:]
        for name in CacheProxyFixtures.names {
            let local = root.appendingPathComponent(name).path
            expected[name] = await (try probe(local), try packetHash(local))
        }
        var proxies: [String: CacheProxyProcess] = [:]
        for name in CacheProxyFixtures.names {
            let proxy = try await #require(try CacheProxyProcess(origin.url(name), cacheDirectory: cache))
            proxies[name] = proxy
            #expect(proxy.localURL.hasSuffix("/" + name))
            await #expect(try probe(proxy.localURL) == expected[name]?.probe, "\(name)")
            await #expect(try packetHash(proxy.localURL) == expected[name]?.packets, "\(name)")
            let body = try await #require(try cacheProxyCurl(proxy.localURL))
            #expect(await cacheProxySHA(body) == cacheProxySHA(CacheProxyFixtures.bytes(name)), "\(name)")
        }
        let log = await origin.requests()
        #expect(!log.isEmpty)
        for row in log where row.uri != "/tone.mp3" || row.status != 403 {
            #expect(row.authorization == "Bearer \(CacheProxyOrigin.token)", "\(row)")
            #expect(row.status == 206 || row.status == 304, "\(row)")
        }
        // Each file came from the origin once (the later reads were served from the cache).
        for name in CacheProxyFixtures.names {
            let sent = log.filter { $0.uri == "/" + name && $0.status == 206 }.reduce(0) { $0 + $1.bytes }
            #expect(await sent == CacheProxyFixtures.bytes(name).count, "\(name)")
        }

        // The listing shows every file fully held.
        let tool = try #require(EndToEnd.product("tsplayer"))
        let listing = try await EndToEnd.run(tool, ["cache-proxy", "--list", "--cache-dir", cache.path])
        #expect(listing.status == 0)
        for name in CacheProxyFixtures.names {
            let size = await CacheProxyFixtures.bytes(name).count
            #expect(listing.out.contains("100.0%  \(size)"), "\(listing.out)")
            #expect(listing.out.contains(origin.url(name)))
        }

        // Offline: the origin is gone; the same proxies and freshly started ones read the same bytes.
        await origin.stop()
        for name in CacheProxyFixtures.names {
            let running = try #require(proxies[name])
            await #expect(try packetHash(running.localURL) == expected[name]?.packets, "\(name) offline")
            await running.stop()
            let restarted = try await #require(try CacheProxyProcess(origin.url(name), cacheDirectory: cache))
            await #expect(try probe(restarted.localURL) == expected[name]?.probe, "\(name) offline after restart")
            let body = try await #require(try cacheProxyCurl(restarted.localURL))
            #expect(await cacheProxySHA(body) == cacheProxySHA(CacheProxyFixtures.bytes(name)), "\(name) offline")
            await restarted.stop()
        }
    }

    @Test("a Range into the middle of an uncached file fetches only that neighbourhood")
    func seekFetchesNeighbourhood() async throws {
        let root = try #require(await CacheProxyFixtures.folder)
        let origin = try await #require(try CacheProxyOrigin.start(root: root))
        let proxy = try await #require(
            try CacheProxyProcess(origin.url("clip.mp4"), cacheDirectory: cacheProxyTempDirectory()))
        let file = await CacheProxyFixtures.bytes("clip.mp4")
        #expect(file.count > 2_500_000, "fixture too small for a seek test: \(file.count)")
        let start = file.count / 2
        let body = try await #require(try cacheProxyCurl(proxy.localURL, range: "\(start)-\(start + 9999)"))
        #expect(body == file.subdata(in: start..<(start + 10000)))
        let rows = await origin.requests()
        let sent = rows.reduce(0) { $0 + $1.bytes }
        #expect(sent >= 10000 && sent <= 1 << 20, "origin sent \(sent) of \(file.count)")
        #expect(rows.allSatisfy { $0.range.hasPrefix("bytes=\(start)-") }, "\(rows)")
        await proxy.stop()
    }

    @Test("SIGKILL during a fetch never leaves a wrong byte claimed, and the next read completes the file")
    func crashSafety() async throws {
        let root = try #require(await CacheProxyFixtures.folder)
        let origin = try await #require(try CacheProxyOrigin.start(root: root))
        let cache = cacheProxyTempDirectory()
        let url = origin.url("slow/clip.ts")
        let file = await CacheProxyFixtures.bytes("clip.ts")
        let proxy = try await #require(try CacheProxyProcess(url, cacheDirectory: cache))
        let curl = try #require(EndToEnd.tool("curl"))
        let reader = try await ChildProcess(curl, ["-s", "-o", "/dev/null", proxy.localURL])
        // The origin sends 512 KiB/s per connection (the proxy reads ahead on two): kill it mid-transfer.
        await suspend(2.2)
        await proxy.kill9()
        await reader.waitForExit(within: 30)
        await reader.stop()

        // Every range the map claims holds the origin's bytes.
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.path)
        let mapName = try #require(names.first { $0.hasSuffix(".media.ranges") })
        let map = try String(contentsOf: cache.appendingPathComponent(mapName), encoding: .utf8)
        let data = try Data(contentsOf: cache.appendingPathComponent(String(mapName.dropLast(".ranges".count))))
        var claimed = 0
        for line in map.split(separator: "\n") where line.hasPrefix("range ") {
            let fields = line.split(separator: " ")
            let offset = try #require(Int(fields[1]))
            let length = try #require(Int(fields[2]))
            #expect(offset + length <= file.count && offset + length <= data.count)
            #expect(data.subdata(in: offset..<(offset + length)) == file.subdata(in: offset..<(offset + length)))
            claimed += length
        }
        #expect(claimed > 0 && claimed < file.count, "claimed \(claimed) of \(file.count) at the kill")

        let restarted = try await #require(try CacheProxyProcess(url, cacheDirectory: cache))
        let body = try await #require(try cacheProxyCurl(restarted.localURL))
        #expect(cacheProxySHA(body) == cacheProxySHA(file))
        let tool = try #require(EndToEnd.product("tsplayer"))
        let listing = try await EndToEnd.run(tool, ["cache-proxy", "--list", "--cache-dir", cache.path])
        #expect(listing.out.contains("100.0%  \(file.count)"), "\(listing.out)")
        await restarted.stop()
    }

    @Test("8 concurrent readers of overlapping ranges get the right bytes, and nginx sends each byte once")
    func concurrentReaders() async throws {
        let root = try #require(await CacheProxyFixtures.folder)
        let origin = try await #require(try CacheProxyOrigin.start(root: root))
        let cache = cacheProxyTempDirectory()
        let proxy = try await #require(try CacheProxyProcess(origin.url("clip.ts"), cacheDirectory: cache))
        let file = await CacheProxyFixtures.bytes("clip.ts")
        let size = file.count
        let curl = try #require(EndToEnd.tool("curl"))
        let spans: [(Int, Int)] = [
            (0, size), (size / 8, size / 2), (size / 4, size * 3 / 4), (0, size / 3),
            (size / 2, size), (size / 3, size * 5 / 6), (size * 3 / 5, size * 2 / 3), (size / 10, size),
        ]
        let outputs = cacheProxyTempDirectory()
        var readers: [ChildProcess] = []
        for (index, span) in spans.enumerated() {
            readers.append(
                try await ChildProcess(
                    curl,
                    [
                        "-sf", "-r", "\(span.0)-\(span.1 - 1)", "-o", outputs.appendingPathComponent("\(index)").path,
                        proxy.localURL,
                    ]))
        }
        for reader in readers { #expect(await reader.waitForExit(within: 120)) }
        for (index, span) in spans.enumerated() {
            #expect(readers[index].process.terminationStatus == 0)
            let got = try Data(contentsOf: outputs.appendingPathComponent("\(index)"))
            #expect(got == file.subdata(in: span.0..<span.1), "reader \(index) \(span)")
        }
        let sent = await origin.requests().filter { $0.uri == "/clip.ts" }.reduce(0) { $0 + $1.bytes }
        #expect(sent == size, "nginx sent \(sent) bytes for a \(size)-byte file")
        await proxy.stop()

        // The machine-readable listing.
        let tool = try #require(EndToEnd.product("tsplayer"))
        let listing = try await EndToEnd.run(tool, ["cache-proxy", "--list", "--json", "--cache-dir", cache.path])
        #expect(listing.status == 0)
        let objects = try #require(try JSONSerialization.jsonObject(with: listing.stdout) as? [[String: Any]])
        #expect(objects.count == 1)
        #expect(objects.first?["url"] as? String == origin.url("clip.ts"))
        #expect((objects.first?["heldBytes"] as? NSNumber)?.intValue == size)
        #expect((objects.first?["length"] as? NSNumber)?.intValue == size)
        #expect((objects.first?["fractionHeld"] as? NSNumber)?.doubleValue == 1)
    }

    @Test("usage: help on stdout with 0, mistakes on stderr with 64")
    func usage() async throws {
        let tool = try #require(EndToEnd.product("tsplayer"))
        let help = try await EndToEnd.run(tool, ["cache-proxy", "--help"])
        #expect(help.status == 0)
        #expect(help.out.hasPrefix("OVERVIEW: Serve a remote media file on a loopback port, with request headers"))
        #expect(help.out.contains("USAGE: tsplayer cache-proxy <url> [-H <header>]... [--cache-dir <dir>]"))
        let cases: [([String], String)] = [
            (["cache-proxy"], "Error: missing <url>\n"),
            (["cache-proxy", "ftp://example.com/a.mp3"], "Error: <url> must be an absolute http or https URL\n"),
            (
                ["cache-proxy", "http://example.com/a.mp3", "--max-size", "12X"],
                "Error: --max-size expects a size in bytes or with K, M, G, T, e.g. --max-size 500M; got '12X'\n"
            ),
            (
                ["cache-proxy", "http://example.com/a.mp3", "-H", "NoColon"],
                "Error: header 'NoColon' is not 'Name: value'\n"
            ),
            (["cache-proxy", "--list", "http://example.com/a.mp3"], "Error: --list takes no <url>\n"),
        ]
        for (arguments, message) in cases {
            let result = try await EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.err.hasPrefix(message), "\(arguments): \(result.err)")
            #expect(result.err.contains("USAGE: tsplayer cache-proxy"))
            #expect(result.out.isEmpty)
        }
    }
}
