import Testing

@testable import TSPlayback

/// The fMP4 segment cache of a ``FragmentedPresentation``: most recently used first, bounded in bytes.
@Suite struct SegmentCacheTests {
    static func key(_ number: Int, pid: UInt16 = 256, iFrame: Bool = false) -> SegmentCache.Key {
        SegmentCache.Key(number: number, pid: pid, iFrame: iFrame)
    }

    /// A 1 MiB segment whose bytes all hold its number (mod 256), and whose tag names its number and size, so a
    /// wrong entry is told apart.
    static func segment(_ number: Int, size: Int = 1 << 20) -> MadeSegment {
        MadeSegment(
            bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: size),
            entityTag: "\"\(number)-\(size)\"")
    }

    /// The presentation's cache of 48 MiB, filled with 1 MiB segments past its limit: every put leaves at most
    /// 48 MiB held; the least recently used segments go first (one read again stays), the rest come back intact.
    @Test func evictsTheLeastRecentlyUsedAndStaysUnderItsLimit() async {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        await blocking {
            let limit = FragmentedPresentation.segmentCacheLimit
            #expect(limit == 48 << 20)
            let cache = SegmentCache(limit: limit)
            for number in 0..<48 { cache.put(Self.key(number), Self.segment(number)) }
            #expect(cache.byteCount == limit)
            #expect((0..<48).allSatisfy { cache.get(Self.key($0)) == Self.segment($0) })
            // Segment 0 read again: now the most recently used, so 1, 2, ... go before it.
            #expect(cache.get(Self.key(0)) == Self.segment(0))
            for number in 48..<60 {
                cache.put(Self.key(number), Self.segment(number))
                #expect(cache.byteCount <= limit, "after segment \(number): \(cache.byteCount) bytes held")
            }
            #expect(cache.byteCount == limit)
            let evicted = (0..<60).filter { cache.get(Self.key($0)) == nil }
            #expect(evicted == Array(1...12), "evicted \(evicted)")
            #expect(cache.get(Self.key(0)) == Self.segment(0) && cache.get(Self.key(59)) == Self.segment(59))
            // A 10 MiB segment makes room for itself by evicting the ten least recently used.
            cache.put(Self.key(1000), Self.segment(1000, size: 10 << 20))
            #expect(cache.byteCount == limit, "\(cache.byteCount)")
            #expect(cache.get(Self.key(1000))?.bytes.count == 10 << 20)
            let afterLarge = (0..<60).filter { cache.get(Self.key($0)) != nil }
            #expect(afterLarge.count == 38 && !afterLarge.contains(13), "kept \(afterLarge)")
        }
    }

    /// A segment put again under its key replaces the old bytes (counted once); one larger than the whole limit
    /// is not kept and evicts nothing; keys differ by PID and by I-frame.
    @Test func replacesAndRefusesWhatCannotFit() {
        let cache = SegmentCache(limit: 4 << 20)
        cache.put(Self.key(0), Self.segment(0))
        cache.put(Self.key(0), Self.segment(7, size: 2 << 20))
        #expect(cache.byteCount == 2 << 20 && cache.get(Self.key(0)) == Self.segment(7, size: 2 << 20))
        cache.put(Self.key(0, pid: 257), Self.segment(1))
        cache.put(Self.key(0, iFrame: true), Self.segment(2, size: 1000))
        #expect(cache.byteCount == (3 << 20) + 1000)
        cache.put(Self.key(9), Self.segment(9, size: (4 << 20) + 1))
        #expect(cache.get(Self.key(9)) == nil && cache.byteCount == (3 << 20) + 1000)
        #expect(cache.get(Self.key(0, pid: 257)) == Self.segment(1))
        #expect(cache.get(Self.key(0, iFrame: true)) == Self.segment(2, size: 1000))
    }
}
