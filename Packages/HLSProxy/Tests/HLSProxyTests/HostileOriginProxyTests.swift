import FileRange
import Foundation
import HTTPClient
import TestSupport
import Testing

@testable import HLSProxy

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The ad-stripping proxy's upstream bodies against an origin that stalls after the head (issue 31; the caching
/// proxy's are MediaCache's `HostileOriginCacheTests`).
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
}
