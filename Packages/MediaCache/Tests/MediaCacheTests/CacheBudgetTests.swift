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

    /// Bytes the cache folder's files occupy on the disk (their allocated blocks, as `du` counts them).
    func allocated(_ directory: String) -> UInt64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            var info = stat()
            guard stat(directory + "/" + name, &info) == 0 else { return total }
            return total + UInt64(max(0, info.st_blocks)) * 512
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
        #expect(HostileOrigin.isHugeBody(whole))
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

    /// Several fills at once share the one budget: five readers fill five 3 MB resources (15 MB against a 4 MiB
    /// budget) at the same time. Each fetch reserves its window before writing; what finds no room is read from the
    /// origin uncached. The folder, sampled every few milliseconds during the reads and after them, never occupies
    /// more than the budget plus one window on the disk, and every reader gets every byte right. What is measured is
    /// the files' allocated blocks: a fill that starts at 1 MB writes a sparse file whose length counts the hole
    /// before it, which takes no disk.
    @Test func resourcesFilledAtOnceKeepTheCacheWithinItsBudgetAndOneWindow() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let directory = cachingTestDirectory()
        let proxy = try makeProxy(directory)
        let bound = Self.budget + Self.window
        let samples = Locked<(peak: UInt64, count: Int)>((0, 0))
        let sampler = Task.detached {
            while !Task.isCancelled {
                let now = allocated(directory)
                samples.withLock { $0 = (max($0.peak, now), $0.count + 1) }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        let started = ContinuousClock.now
        let sizes = (0..<5).map { 3_000_000 + $0 }
        let results = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for size in sizes {
                group.addTask {
                    // Each resource read twice at once, so that two readers share its fills.
                    async let first = collect(try await proxy.read(origin.url("/huge/\(size)")))
                    async let second = collect(try await proxy.read(origin.url("/huge/\(size)"), from: 1_000_000))
                    let (a, b) = try await (first, second)
                    let right =
                        a.count == size && b.count == size - 1_000_000 && HostileOrigin.isHugeBody(a)
                        && HostileOrigin.isHugeBody(b, from: 1_000_000)
                    return (size, right)
                }
            }
            var results: [(Int, Bool)] = []
            for try await result in group { results.append(result) }
            return results
        }
        let elapsed = ContinuousClock.now - started
        sampler.cancel()
        _ = await sampler.value
        let (peak, count) = samples.withLock { $0 }
        let after = allocated(directory)
        print("cache fills at once: peak \(peak) bytes in \(count) samples, \(after) after, in \(elapsed)")
        #expect(results.count == sizes.count && results.allSatisfy { $0.1 }, "\(results)")
        #expect(peak <= bound, "peak \(peak) bytes > \(bound)")
        #expect(after <= bound, "\(after) bytes after the reads")
        #expect(proxy.index.totalBytes <= Self.budget)
        #expect(elapsed < .seconds(60))
    }
}
