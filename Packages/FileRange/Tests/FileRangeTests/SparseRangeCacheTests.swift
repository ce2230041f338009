import FileRange
import Foundation
import Testing

/// Each test's folder goes with it, also when the test fails or throws (TestSupport's temporary folders; Swift Testing
/// makes one instance per test).
@Suite(.temporaryFolders) final class SparseRangeCacheTests {
    let folder = URL(fileURLWithPath: TemporaryFolders.make(prefix: "SparseCache-"))

    var dataPath: String { folder.appendingPathComponent("entry.data").path }

    @Test func writeReadAndGaps() throws {
        let cache = try SparseRangeCache(dataPath: dataPath)
        try cache.write([1, 2, 3, 4], at: 10)
        try cache.write([5, 6], at: 20)
        #expect(try cache.read(#require(ByteRange(offset: 10, length: 4))) == [1, 2, 3, 4])
        #expect(try cache.read(#require(ByteRange(offset: 12, length: 2))) == [3, 4])
        #expect(try cache.read(#require(ByteRange(offset: 12, length: 9))) == nil)  // bytes 14..<20 are missing
        #expect(
            cache.missing(in: try #require(ByteRange(offset: 0, length: 30)))
                == [
                    ByteRange(offset: 0, length: 10), ByteRange(offset: 14, length: 6),
                    ByteRange(offset: 22, length: 8),
                ].compactMap { $0 })
        try cache.write([9, 9, 9, 9, 9, 9], at: 14)
        #expect(cache.available.ranges == [ByteRange(offset: 10, length: 12)].compactMap { $0 })
    }

    @Test func persistsRangesAndMetadataAcrossReopen() throws {
        do {
            let cache = try SparseRangeCache(dataPath: dataPath)
            cache.setMetadata(["etag": "\"v1\"", "content-type": "video/mp2t", "odd key": "line\nbreak %"])
            try cache.write([UInt8](repeating: 7, count: 1000), at: 5000)
            try cache.write([UInt8](repeating: 8, count: 10), at: 0, commit: false)  // never committed
            cache.close()
        }
        let reopened = try SparseRangeCache(dataPath: dataPath)
        #expect(reopened.available.ranges == [ByteRange(offset: 5000, length: 1000)].compactMap { $0 })
        #expect(reopened.metadata == ["etag": "\"v1\"", "content-type": "video/mp2t", "odd key": "line\nbreak %"])
        #expect(try reopened.read(#require(ByteRange(offset: 5500, length: 3))) == [7, 7, 7])
    }

    @Test func distrustsCorruptMapsAndTruncatedData() throws {
        do {
            let cache = try SparseRangeCache(dataPath: dataPath)
            try cache.write([UInt8](repeating: 1, count: 100), at: 0)
            try cache.write([UInt8](repeating: 2, count: 100), at: 200)
        }
        // The data file loses its tail: ranges past the new end are dropped on open.
        try FileHandle(forWritingTo: URL(fileURLWithPath: dataPath)).truncate(atOffset: 250)
        #expect(
            try SparseRangeCache(dataPath: dataPath).available.ranges
                == [ByteRange(offset: 0, length: 100), ByteRange(offset: 200, length: 50)].compactMap { $0 })
        // A map whose checksum no longer matches is not trusted at all.
        let mapURL = URL(fileURLWithPath: dataPath + ".ranges")
        var map = try Data(contentsOf: mapURL)
        map[map.startIndex + 20] ^= 0x01
        try map.write(to: mapURL)
        #expect(try SparseRangeCache(dataPath: dataPath).available.isEmpty)
    }

    @Test func removeAllForgetsEverything() throws {
        let cache = try SparseRangeCache(dataPath: dataPath)
        try cache.write([1, 2, 3], at: 0)
        cache.setMetadata(["etag": "a"])
        try cache.removeAll()
        #expect(cache.available.isEmpty && cache.metadata.isEmpty)
        #expect(try SparseRangeCache(dataPath: dataPath).available.isEmpty)
    }

    @Test func unwritableLocationIsATypedError() {
        let error = #expect(throws: SparseRangeCacheError.self) {
            try SparseRangeCache(dataPath: folder.path + "/missing/folder/entry.data")
        }
        #expect(error?.code == .cannotOpen)
        #expect(error?.errno == .noSuchFile)
    }

    /// A writer process is killed with SIGKILL at random moments, over and over, on the same cache. After every
    /// kill, the reopened cache must hold every byte it claims, with the writer's pattern.
    @Test func survivesSigkillAtRandomMoments() async throws {
        let writer = try Self.crashWriterURL()
        var generator = SystemRandomNumberGenerator()
        var claimedAfterKills: [UInt64] = []
        for round in 0..<25 {
            let child = try await ChildProcess(writer, [dataPath, String(round + 1)], stopSignal: SIGKILL)
            // Wait for "ready" (its first write is durable), then let it write for a random while before killing it.
            _ = await child.lines(1, within: 20)
            await suspend(Double.random(in: 0.002...0.06, using: &generator))
            await child.stop(grace: 0)
            #expect(child.process.terminationReason == .uncaughtSignal, "round \(round): the writer ended by itself")

            // Every claimed byte checked (seconds in a debug build): off the cooperative threads, which the tests
            // running beside this one need.
            let dataPath = dataPath
            let claimed = try await blocking { () throws -> UInt64? in
                let cache = try SparseRangeCache(dataPath: dataPath)
                defer { cache.close() }
                for range in cache.available {
                    let bytes = try #require(try cache.read(range))
                    for (index, byte) in bytes.enumerated()
                    where byte != Self.patternByte(at: range.offset + UInt64(index)) {
                        Issue.record("round \(round): claimed byte \(range.offset + UInt64(index)) is \(byte)")
                        return nil
                    }
                }
                return cache.available.totalLength
            }
            guard let claimed else { return }
            claimedAfterKills.append(claimed)
        }
        // Every round's first write was committed before the kill, so every reopened cache holds something.
        #expect(claimedAfterKills.allSatisfy { $0 > 0 }, "\(claimedAfterKills)")
    }

    /// The pattern SparseCacheCrashWriter writes.
    static func patternByte(at offset: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: (offset &* 0x9E37_79B1) >> 11) | 1
    }

    static func crashWriterURL() throws -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        while folder.pathExtension == "xctest" || ["MacOS", "Contents"].contains(folder.lastPathComponent) {
            folder = folder.deletingLastPathComponent()
        }
        let url = folder.appendingPathComponent("SparseCacheCrashWriter")
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
        return url
    }
}
