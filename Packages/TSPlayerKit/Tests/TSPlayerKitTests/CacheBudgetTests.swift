import Foundation
import TestSupport
import Testing

@testable import TSPlayerKit

/// The cache's size budget (issue 31): one resource larger than the budget is streamed through and never kept;
/// several smaller ones read in turn leave the cache within the budget plus one fetch window.
@Suite("Cache budget", .temporaryFolders)
struct CacheBudgetTests {
    static let budget: UInt64 = 4 << 20
    static let window: UInt64 = 1 << 20

    func makeProxy(_ directory: String) throws -> CachingMediaProxy {
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        options.fetchWindow = Self.window
        options.maxCacheBytes = Self.budget
        return try CachingMediaProxy(options: options)
    }

    /// Bytes the cache folder's files take (their lengths, which bound their allocated blocks).
    func cached(_ directory: String) -> UInt64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? UInt64
            return total + (size ?? 0)
        }
    }

    func collect(_ read: CachedRead) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in read.bytes { bytes += chunk }
        return bytes
    }

    @Test func oneResourceLargerThanTheBudgetIsStreamedThroughAndNotKept() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        let size = 12_000_000
        let whole = try await collect(try await proxy.read(origin.url("/huge/\(size)")))
        #expect(whole.count == size)
        #expect(whole.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: $0.offset % 251) })
        let part = try await collect(try await proxy.read(origin.url("/huge/\(size)"), from: 7_000_000, length: 500))
        #expect(part == (7_000_000..<7_000_500).map { UInt8(truncatingIfNeeded: $0 % 251) })
        #expect(cached(directory) <= Self.budget + Self.window + (64 << 10), "\(cached(directory)) bytes kept")
    }

    @Test func resourcesReadInTurnKeepTheCacheWithinItsBudgetAndOneWindow() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        for n in 0..<4 {
            let size = 3_000_000 + n
            let bytes = try await collect(try await proxy.read(origin.url("/huge/\(size)")))
            #expect(bytes.count == size)
            let held = cached(directory)
            #expect(held <= Self.budget + Self.window + (64 << 10), "after resource \(n): \(held) bytes")
        }
    }
}
