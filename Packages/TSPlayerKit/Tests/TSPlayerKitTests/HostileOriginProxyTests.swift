import FileRange
import Foundation
import TestSupport
import Testing

@testable import TSPlayerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The proxies' upstream bodies against an origin that stalls after the head, and the caching proxy's files at rest
/// (issue 31).
@Suite("Hostile origins (proxies)", .temporaryFolders)
struct HostileOriginProxyTests {
    static func options(bodyDeadline: Double) -> RemoteFetchOptions {
        var options = RemoteFetchOptions()
        options.allowPrivateUpstreams = true
        options.retries = 0
        options.bodyDeadline = bodyDeadline
        return options
    }

    /// A relayed segment (the ad-stripping proxy's upstream stream) whose body stalls or drips after its head ends
    /// by the body deadline with a timeout naming the URL: the player gets the bytes that came, then the end.
    @Test(arguments: ["/stall/100000", "/drip/100000"])
    func aRelayedBodyEndsAtItsDeadline(path: String) async throws {
        let origin = try HostileOrigin(trickleInterval: 0.05)
        defer { origin.stop() }
        let fetcher = RemotePlaylistFetcher(options: Self.options(bodyDeadline: 1.5))
        let start = ContinuousClock.now
        let stream = try await fetcher.open(origin.url(path))
        #expect(stream.head.status == 200)
        var bytes = 0
        var failure: (any Error)?
        do {
            for try await chunk in stream.body { bytes += chunk.count }
        } catch {
            failure = error
        }
        let elapsed = start.duration(to: .now)
        #expect(failure != nil)
        #expect("\(String(describing: failure))".contains(origin.url(path)))
        #expect(bytes < 100_000)
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(4), "the body ended after \(elapsed)")
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
        #expect(bytes.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: $0.offset % 251) })
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
