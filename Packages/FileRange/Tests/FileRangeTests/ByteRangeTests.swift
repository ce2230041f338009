import FileRange
import TestSupport
import Testing

@Suite struct ByteRangeTests {
    @Test func constructionRejectsOverflowAndNegatives() {
        #expect(ByteRange(offset: UInt64.max, length: 1) == nil)
        #expect(ByteRange(offset: UInt64.max - 1, length: 1)?.upperBound == UInt64.max)
        #expect(ByteRange(offset: -1, length: 4) == nil)
        #expect(ByteRange(offset: Int64(3), length: Int32(4)) == ByteRange(offset: 3, length: 4))
        #expect(ByteRange(first: 5, last: 4) == nil)
        #expect(ByteRange(first: 0, last: UInt64.max) == nil)
        #expect(ByteRange(first: 5, last: 5)?.length == 1)
        #expect(ByteRange(lowerBound: 9, upperBound: 3) == nil)
    }

    @Test func boundsAndContainment() throws {
        let range = try #require(ByteRange(offset: 10, length: 5))
        #expect(range.upperBound == 15)
        #expect(range.last == 14)
        #expect(range.description == "10-14")
        #expect(range.contains(10) && range.contains(14) && !range.contains(15) && !range.contains(9))
        let empty = try #require(ByteRange(offset: 3, length: 0))
        #expect(empty.isEmpty && empty.last == nil)
        #expect(range.contains(empty))
        #expect(range.intersection(try #require(ByteRange(offset: 14, length: 10))) == ByteRange(offset: 14, length: 1))
        #expect(range.intersection(try #require(ByteRange(offset: 15, length: 10))) == nil)
        #expect(!range.overlaps(try #require(ByteRange(offset: 15, length: 1))))
    }

    /// Every set operation on a 24-byte universe, against a model that keeps one Bool per byte.
    @Test func rangeSetMatchesBitmapModel() async throws {
        try await blocking {
            var generator = SplitMix64(seed: 0x5EED)
            let universe = 24
            for round in 0..<400 {
                var set = ByteRangeSet()
                var model = [Bool](repeating: false, count: universe)
                var log: [String] = []
                for _ in 0..<12 {
                    let offset = Int(generator.next() % UInt64(universe))
                    let length = Int(generator.next() % UInt64(universe - offset + 1))
                    let range = try #require(ByteRange(offset: offset, length: length))
                    if generator.next() % 3 == 0 {
                        set.remove(range)
                        for i in offset..<(offset + length) { model[i] = false }
                        log.append("-\(range)")
                    } else {
                        set.insert(range)
                        for i in offset..<(offset + length) { model[i] = true }
                        log.append("+\(range)")
                    }
                    #expect(set.ranges == Self.runs(model), "round \(round) after \(log)")
                }
                // Queries against the model.
                for offset in 0..<universe {
                    for length in 0...(universe - offset) {
                        let range = try #require(ByteRange(offset: offset, length: length))
                        let expectedContains = model[offset..<(offset + length)].allSatisfy { $0 }
                        #expect(set.contains(range) == expectedContains, "round \(round) contains \(range) in \(set)")
                        let gapModel = model.indices.map { $0 >= offset && $0 < offset + length && !model[$0] }
                        #expect(
                            set.gaps(within: range) == Self.runs(gapModel), "round \(round) gaps \(range) in \(set)")
                    }
                }
                // Binary operations against a second random set.
                var other = ByteRangeSet()
                var otherModel = [Bool](repeating: false, count: universe)
                for _ in 0..<4 {
                    let offset = Int(generator.next() % UInt64(universe))
                    let length = Int(generator.next() % UInt64(universe - offset + 1))
                    other.insert(try #require(ByteRange(offset: offset, length: length)))
                    for i in offset..<(offset + length) { otherModel[i] = true }
                }
                #expect(set.union(other).ranges == Self.runs(zip(model, otherModel).map { $0 || $1 }))
                #expect(set.intersection(other).ranges == Self.runs(zip(model, otherModel).map { $0 && $1 }))
                #expect(set.subtracting(other).ranges == Self.runs(zip(model, otherModel).map { $0 && !$1 }))
                #expect(set.totalLength == UInt64(model.filter { $0 }.count))
            }
        }
    }

    /// The maximal runs of true values, as ranges.
    static func runs(_ bits: [Bool]) -> [ByteRange] {
        var result: [ByteRange] = []
        var start: Int?
        for (index, bit) in (bits + [false]).enumerated() {
            if bit, start == nil { start = index }
            if !bit, let first = start {
                if let range = ByteRange(offset: first, length: index - first) { result.append(range) }
                start = nil
            }
        }
        return result
    }
}
