import FileRange
import Foundation
import HTTPClient
import TestSupport
import Testing

@testable import MediaCache

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The caching proxy's upstream bodies against an origin that stalls after the head, and its files at rest (issue
/// 31; moved from TSPlayerKit's `HostileOriginProxyTests`, whose relayed-segment test is HLSProxy's).
@Suite("Hostile origins (caching proxy)", .temporaryFolders)
struct HostileOriginCacheTests {
    static func options(bodyDeadline: Double) -> RemoteFetchOptions {
        var options = RemoteFetchOptions()
        options.allowPrivateUpstreams = true
        options.retries = 0
        options.bodyDeadline = bodyDeadline
        return options
    }

    /// The caching proxy's reader of a resource whose origin drips after its head: each fetch ends at the body
    /// deadline (1 s), and after the third failure the read ends with `readFailed`, having yielded what came.
    @Test func aCachedReadOfADrippingOriginEndsAfterItsFetchesDeadlines() async throws {
        let origin = try HostileOrigin(trickleInterval: 0.05)
        defer { origin.stop() }
        var options = CachingMediaProxy.Options(cacheDirectory: cachingTestDirectory())
        options.fetch = Self.options(bodyDeadline: 1)
        let proxy = try CachingMediaProxy(options: options)
        let start = ContinuousClock.now
        let read = try await proxy.read(origin.url("/drip/100000"))
        #expect(read.info.length == 100_000)
        var bytes: [UInt8] = []
        var failure: (any Error)?
        do {
            for try await chunk in read.bytes { bytes += chunk }
        } catch {
            failure = error
        }
        let elapsed = start.duration(to: .now)
        #expect((failure as? CachingProxyError)?.code == .readFailed, "\(String(describing: failure))")
        #expect(!bytes.isEmpty && bytes.count < 100_000)
        #expect(HostileOrigin.isHugeBody(bytes))
        #expect(elapsed < .seconds(10), "the read ended after \(elapsed)")
    }

    /// Under umask 022, the cache folder the proxy creates is `0700` and every file in it `0600`: its metadata
    /// holds each resource's URL, whose query may carry a token.
    @Test func theCacheFolderAndItsFilesAreOwnerOnly() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let directory = cachingTestDirectory() + "/fresh/cache"
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        options.fetch = Self.options(bodyDeadline: 10)
        let proxy = try CachingMediaProxy(options: options)
        let read = try await proxy.read(origin.url("/huge/300000?token=secret"))
        var count = 0
        for try await chunk in read.bytes { count += chunk.count }
        #expect(count == 300_000)
        await proxy.stop()
        #expect(FileSystem.permissions(directory) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.count >= 2, "\(names)")
        for name in names {
            #expect(FileSystem.permissions(directory + "/" + name) == 0o600, "\(name)")
        }
    }
}
