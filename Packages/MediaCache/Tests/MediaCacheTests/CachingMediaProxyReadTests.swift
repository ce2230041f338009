import Foundation
import HTTPClient
import LoopbackHTTP
import Testing

@testable import MediaCache

/// `CachingMediaProxy.read`: the in-process route (what the Apple resource-loader bridge calls) over the same cache
/// and origin fetches as the loopback URLs.
@Suite("CachingMediaProxy in-process reads", .temporaryFolders)
struct CachingMediaProxyReadTests {
    static let auth = "Bearer r3ad"

    func makeProxy(_ directory: String, window: UInt64 = 128 << 10) throws -> CachingMediaProxy {
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.fetchWindow = window
        return try CachingMediaProxy(options: options)
    }

    func collect(_ read: CachedRead) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in read.bytes { bytes += chunk }
        return bytes
    }

    @Test("content information and a range, with the caller's header, without starting the server")
    func rangeWithInfo() async throws {
        let origin = try await CachingTestOrigin(requiredAuthorization: Self.auth)
        let body = cachingTestBytes(700_001, seed: 11)
        origin.set("/track.m4a", .init(body: body, contentType: "audio/mp4", etag: "\"t1\""))
        let proxy = try makeProxy(cachingTestDirectory())
        let read = try await proxy.read(
            origin.url("/track.m4a"), headers: [("Authorization", Self.auth)], from: 300_000, length: 1_000)
        #expect(read.info.length == 700_001)
        #expect(read.info.contentType == "audio/mp4")
        #expect(read.info.entityTag == "\"t1\"")
        #expect(read.offset == 300_000)
        #expect(read.length == 1_000)
        #expect(try await collect(read) == Array(body[300_000..<301_000]))
        #expect(proxy.boundPort == nil)
        #expect(origin.log.allSatisfy { $0.authorization == Self.auth })
        #expect(origin.bytesSent("/track.m4a") <= 128 << 10)

        // To the end, then again from the cache alone.
        let tail = try await proxy.read(origin.url("/track.m4a"), headers: [("Authorization", Self.auth)], from: 0)
        #expect(tail.length == 700_001)
        #expect(try await collect(tail) == body)
        origin.clearLog()
        let cached = try await proxy.read(
            origin.url("/track.m4a"), headers: [("Authorization", Self.auth)], from: 699_990)
        #expect(try await collect(cached) == Array(body[699_990...]))
        // Only the one-byte revalidation probe went to the origin.
        #expect(origin.log.allSatisfy { $0.range == "bytes=0-0" && $0.bytes <= 1 })
        await origin.stop()
    }

    @Test("a length past the end is clipped; an offset past the end is a typed error")
    func clippingAndPastTheEnd() async throws {
        let origin = try await CachingTestOrigin()
        let body = cachingTestBytes(5_000, seed: 12)
        origin.set("/clip.mp3", .init(body: body, etag: "\"c\""))
        let proxy = try makeProxy(cachingTestDirectory())
        let clipped = try await proxy.read(origin.url("/clip.mp3"), from: 4_990, length: 100)
        #expect(clipped.length == 10)
        #expect(try await collect(clipped) == Array(body[4_990...]))
        await #expect(throws: CachingProxyError.self) {
            _ = try await proxy.read(origin.url("/clip.mp3"), from: 5_000)
        }
        do {
            _ = try await proxy.read(origin.url("/clip.mp3"), from: 9_999)
            Issue.record("a read past the end succeeded")
        } catch {
            #expect(error.code == .rangeNotSatisfiable)
            #expect(error.detail.contains("9999"))
        }
        await origin.stop()
    }

    @Test("the origin's refusal arrives as originFailed with its status")
    func originRefusal() async throws {
        let origin = try await CachingTestOrigin(requiredAuthorization: Self.auth)
        origin.set("/locked.mp4", .init(body: cachingTestBytes(1_000, seed: 13), etag: "\"l\""))
        let proxy = try makeProxy(cachingTestDirectory())
        do {
            _ = try await proxy.read(origin.url("/locked.mp4"), headers: [("Authorization", "Bearer wrong")])
            Issue.record("a refused read succeeded")
        } catch {
            #expect(error.code == .originFailed)
            #expect(error.status == 403 || error.status == 401)
        }
        do {
            _ = try await proxy.read("ftp://example.com/a.mp3")
            Issue.record("an ftp URL was read")
        } catch {
            #expect(error.code == .invalidURL)
        }
        await origin.stop()
    }
}
