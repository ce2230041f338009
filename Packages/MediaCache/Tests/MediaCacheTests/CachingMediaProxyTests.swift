import Foundation
import HTTPClient
import LoopbackHTTP
import Testing

@testable import MediaCache

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache folder's index once `settled` holds for it (or after 5 s): a fetch records what it wrote when it ends,
/// which can be a moment after the reader it served has its last byte.
func settledResources(in directory: String, _ settled: ([CachedResource]) -> Bool) async -> [CachedResource] {
    var resources = CachingMediaProxy.cachedResources(in: directory)
    for _ in 0..<100 where !settled(resources) {
        try? await Task.sleep(for: .milliseconds(50))
        resources = CachingMediaProxy.cachedResources(in: directory)
    }
    return resources
}

@Suite("CachingMediaProxy", .temporaryFolders)
struct CachingMediaProxyTests {
    static let auth = "Bearer s3cret"

    func makeProxy(_ directory: String, window: UInt64 = 256 << 10, budget: UInt64 = 1 << 30) throws
        -> CachingMediaProxy
    {
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.fetchWindow = window
        options.maxCacheBytes = budget
        return try CachingMediaProxy(options: options)
    }

    @Test("a full read through the proxy carries the caller's header, matches the origin, then comes from the cache")
    func fullReadThenCache() async throws {
        let origin = try await CachingTestOrigin(requiredAuthorization: Self.auth)
        let body = cachingTestBytes(1_000_003, seed: 1)
        origin.set("/song.mp3", .init(body: body, etag: "\"v1\""))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        let local = try await proxy.localURL(for: origin.url("/song.mp3"), headers: [("Authorization", Self.auth)])
        #expect(local.hasSuffix("/song.mp3"))
        #expect(local.hasPrefix("http://127.0.0.1:"))
        let (status, headers, bytes) = try await cachingTestGet(local)
        #expect(status == 200)
        #expect(headers["content-length"] == "1000003")
        #expect(headers["content-type"] == "audio/mpeg")
        #expect(headers["accept-ranges"] == "bytes")
        #expect(bytes == body)
        #expect(!origin.log.isEmpty)
        #expect(origin.log.allSatisfy { $0.authorization == Self.auth && $0.status == 206 })
        #expect(origin.bytesSent("/song.mp3") == UInt64(body.count))

        // Content info kept with the cache.
        let entry = try #require(
            await settledResources(in: directory) { $0.first?.heldBytes == UInt64(body.count) }.first)
        #expect(entry.length == UInt64(body.count))
        #expect(entry.heldBytes == UInt64(body.count))
        #expect(entry.fractionHeld == 1)

        origin.clearLog()
        let (again, _, cached) = try await cachingTestGet(local, range: "bytes=500000-500099")
        #expect(again == 206)
        #expect(cached == Array(body[500_000..<500_100]))
        #expect(origin.log.isEmpty)
        await proxy.stop()
        await origin.stop()
    }

    @Test("a Range into the middle of an uncached resource fetches only that neighbourhood")
    func seekFetchesNeighbourhood() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(4 << 20, seed: 2)
        origin.set("/movie.mp4", .init(body: body, contentType: "video/mp4", etag: "\"m\""))
        let proxy = try makeProxy(cachingTestDirectory(), window: 128 << 10)
        let local = try await proxy.localURL(for: origin.url("/movie.mp4"))
        let (status, headers, bytes) = try await cachingTestGet(local, range: "bytes=3000000-3000999")
        #expect(status == 206)
        #expect(headers["content-range"] == "bytes 3000000-3000999/4194304")
        #expect(bytes == Array(body[3_000_000..<3_001_000]))
        let sent = origin.bytesSent("/movie.mp4")
        #expect(sent >= 1000 && sent <= 128 << 10, "origin sent \(sent) bytes")
        #expect(origin.log.allSatisfy { $0.range?.hasPrefix("bytes=3000000-") == true })
        await proxy.stop()
        await origin.stop()
    }

    @Test("concurrent overlapping readers get the right bytes and the origin sends each byte once")
    func concurrentReadersCoalesce() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(2 << 20, seed: 3)
        origin.set(
            "/a.ts",
            .init(body: body, contentType: "video/mp2t", etag: "\"t\"", delay: .milliseconds(5), chunkSize: 32 << 10))
        let proxy = try makeProxy(cachingTestDirectory(), window: 256 << 10)
        let local = try await proxy.localURL(for: origin.url("/a.ts"))
        let ranges: [(Int, Int)] = [
            (0, 2 << 20), (100_000, 900_000), (500_000, 1_500_000), (0, 300_000),
            (1_000_000, 2 << 20), (700_000, 1_900_000), (1_500_000, 1_600_000), (250_000, 2 << 20),
        ]
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for (start, end) in ranges {
                group.addTask {
                    let (status, _, bytes) = try await cachingTestGet(local, range: "bytes=\(start)-\(end - 1)")
                    return status == 206 && bytes == Array(body[start..<end])
                }
            }
            for try await correct in group { #expect(correct) }
        }
        #expect(origin.bytesSent("/a.ts") == UInt64(body.count))
        await proxy.stop()
        await origin.stop()
    }

    @Test("an origin that ignores Range is filled sequentially and still served right")
    func originIgnoringRange() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(600_000, seed: 4)
        origin.set("/x.flac", .init(body: body, contentType: "audio/flac", etag: "\"f\"", ignoresRange: true))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory, window: 64 << 10)
        let local = try await proxy.localURL(for: origin.url("/x.flac"))
        let (status, headers, bytes) = try await cachingTestGet(local, range: "bytes=400000-400999")
        #expect(status == 206)
        #expect(headers["content-range"] == "bytes 400000-400999/600000")
        #expect(bytes == Array(body[400_000..<401_000]))
        let (full, _, all) = try await cachingTestGet(local)
        #expect(full == 200)
        #expect(all == body)
        #expect(origin.log.count == 1)
        #expect(origin.log.first?.status == 200)
        await proxy.stop()
        await origin.stop()
    }

    @Test("a changed validator empties the entry and the new version is served")
    func validatorChangeInvalidates() async throws {
        let origin = try await CachingTestOrigin()
        let first = cachingTestBytes(300_000, seed: 5)
        let second = cachingTestBytes(300_000, seed: 6)
        origin.set("/v.m4a", .init(body: first, contentType: "audio/mp4", etag: "\"one\""))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        let local = try await proxy.localURL(for: origin.url("/v.m4a"))
        #expect(try await cachingTestGet(local).2 == first)

        // Unchanged: revalidation is a 304 with no body.
        origin.clearLog()
        _ = try await proxy.localURL(for: origin.url("/v.m4a"))
        #expect(origin.log.map(\.status) == [304])

        origin.set("/v.m4a", .init(body: second, contentType: "audio/mp4", etag: "\"two\""))
        let renewed = try await proxy.localURL(for: origin.url("/v.m4a"))
        #expect(try await cachingTestGet(renewed).2 == second)
        #expect(try await cachingTestGet(local).2 == second)
        let entry = try #require(await settledResources(in: directory) { $0.first?.heldBytes == 300_000 }.first)
        #expect(entry.heldBytes == 300_000)
        await proxy.stop()
        await origin.stop()
    }

    @Test("the cache persists across restarts, keyed without credentials, and serves with the origin gone")
    func persistsAndServesOffline() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(700_000, seed: 7)
        origin.set("/p.mp3", .init(body: body, etag: "\"p\""))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        let local = try await proxy.localURL(for: origin.url("/p.mp3"))
        #expect(try await cachingTestGet(local).2 == body)
        await proxy.stop()
        await origin.stop()

        #expect(
            CachingMediaProxy.cacheKey(for: "http://user:pw@127.0.0.1:\(origin.port)/p.mp3")
                == CachingMediaProxy.cacheKey(for: origin.url("/p.mp3")))
        let restarted = try makeProxy(directory)
        let offline = try await restarted.localURL(for: "http://user:pw@127.0.0.1:\(origin.port)/p.mp3")
        let (status, headers, bytes) = try await cachingTestGet(offline)
        #expect(status == 200)
        #expect(headers["content-type"] == "audio/mpeg")
        #expect(bytes == body)
        let (partial, _, slice) = try await cachingTestGet(offline, range: "bytes=-100")
        #expect(partial == 206)
        #expect(slice == Array(body.suffix(100)))
        let listed = CachingMediaProxy.cachedResources(in: directory)
        #expect(listed.map(\.url) == [origin.url("/p.mp3")])
        await restarted.stop()
    }

    @Test("a size budget evicts whole least-recently-used entries")
    func lruEviction() async throws {
        let origin = try await CachingTestOrigin()
        let a = cachingTestBytes(400_000, seed: 8)
        let b = cachingTestBytes(400_000, seed: 9)
        let c = cachingTestBytes(400_000, seed: 10)
        origin.set("/a.mp3", .init(body: a, etag: "\"a\""))
        origin.set("/b.mp3", .init(body: b, etag: "\"b\""))
        origin.set("/c.mp3", .init(body: c, etag: "\"c\""))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory, budget: 900_000)
        let la = try await proxy.localURL(for: origin.url("/a.mp3"))
        #expect(try await cachingTestGet(la).2 == a)
        try await Task.sleep(for: .milliseconds(20))
        let lb = try await proxy.localURL(for: origin.url("/b.mp3"))
        #expect(try await cachingTestGet(lb).2 == b)
        try await Task.sleep(for: .milliseconds(20))
        // Using a again makes b the least recently used.
        _ = try await proxy.localURL(for: origin.url("/a.mp3"))
        let lc = try await proxy.localURL(for: origin.url("/c.mp3"))
        #expect(try await cachingTestGet(lc).2 == c)
        try await Task.sleep(for: .milliseconds(100))
        let held = Set(CachingMediaProxy.cachedResources(in: directory).map(\.url))
        #expect(held == [origin.url("/a.mp3"), origin.url("/c.mp3")])
        #expect(
            !FileManager.default.fileExists(
                atPath: directory + "/" + CachingMediaProxy.cacheKey(for: origin.url("/b.mp3")) + ".media"))
        // An evicted resource is fetched again when asked for.
        origin.clearLog()
        #expect(try await cachingTestGet(lb).2 == b)
        #expect(origin.bytesSent("/b.mp3") == 400_000)
        await proxy.stop()
        await origin.stop()
    }

    @Test("origin refusals reach the player, and unknown tokens are 404")
    func originErrors() async throws {
        let origin = try await CachingTestOrigin(requiredAuthorization: Self.auth)
        origin.set("/s.mp3", .init(body: cachingTestBytes(1000, seed: 11), etag: "\"s\""))
        let proxy = try makeProxy(cachingTestDirectory())
        let local = try await proxy.localURL(for: origin.url("/s.mp3"), headers: [("Authorization", "Bearer wrong")])
        #expect(try await cachingTestGet(local).0 == 403)
        let port = try #require(proxy.boundPort)
        #expect(try await cachingTestGet("http://127.0.0.1:\(port)/nosuchtoken/s.mp3").0 == 404)
        await #expect(throws: CachingProxyError.self) { try await proxy.localURL(for: "file:///etc/passwd") }
        await proxy.stop()
        await origin.stop()
    }

    @Test("a validator change seen by a gap fetch drops the old bytes; no reader gets a mix of versions")
    func validatorChangeMidway() async throws {
        let origin = try await CachingTestOrigin()
        let first = cachingTestBytes(500_000, seed: 12)
        let second = cachingTestBytes(500_000, seed: 13)
        origin.set("/w.mp3", .init(body: first, etag: "\"1\""))
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory, window: 64 << 10)
        let local = try await proxy.localURL(for: origin.url("/w.mp3"))
        let (_, _, head) = try await cachingTestGet(local, range: "bytes=0-9999")
        #expect(head == Array(first[0..<10_000]))
        origin.set("/w.mp3", .init(body: second, etag: "\"2\""))
        // This request was answered with the old version's head; its body must not mix versions: it either fails
        // (the connection closes) or carries only new bytes.
        if let (_, _, mixed) = try? await cachingTestGet(local, range: "bytes=0-199999") {
            #expect(mixed != Array(first[0..<200_000]) || mixed.count != 200_000)
            #expect(mixed.count < 200_000 || mixed == Array(second[0..<200_000]))
        }
        let (_, _, fresh) = try await cachingTestGet(local)
        #expect(fresh == second)
        await proxy.stop()
        await origin.stop()
    }

    @Test("HEAD gives the length without a body, and an unsatisfiable range is 416")
    func headAndUnsatisfiable() async throws {
        let origin = try await CachingTestOrigin()
        origin.set("/h.mp3", .init(body: cachingTestBytes(5000, seed: 14), etag: "\"h\""))
        let proxy = try makeProxy(cachingTestDirectory())
        let local = try await proxy.localURL(for: origin.url("/h.mp3"))
        var request = URLRequest(url: try #require(URL(string: local)))
        request.httpMethod = "HEAD"
        let (data, response) = try await cachingTestSession.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(http.value(forHTTPHeaderField: "Content-Length") == "5000")
        #expect(data.isEmpty)
        let (status, headers, _) = try await cachingTestGet(local, range: "bytes=9000-")
        #expect(status == 416)
        #expect(headers["content-range"] == "bytes */5000")
        await proxy.stop()
        await origin.stop()
    }
}
