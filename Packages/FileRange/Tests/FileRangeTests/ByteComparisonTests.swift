import FileRange
import Testing

/// ByteComparison against the naive model: every length from 0 to 200 (both sides of the 8-byte loop and of the
/// memcmp path from 64 bytes), equal buffers, and one byte changed at each position; the failure names the case.
@Suite struct ByteComparisonTests {
    @Test func matchesTheNaiveModelAtEveryLengthAndPosition() {
        var generator = SplitMix64(seed: 0x5EED)
        for length in 0...200 {
            let a = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var b = a
            #expect(Self.equal(a, b), "length \(length), equal")
            for position in 0..<length {
                b[position] &+= 1
                #expect(!Self.equal(a, b), "length \(length), byte \(position) changed")
                b[position] &-= 1
            }
            #expect(!Self.equal(a, b + [0]), "lengths \(length) and \(length + 1)")
        }
    }

    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let result = a.withUnsafeBytes { x in b.withUnsafeBytes { y in ByteComparison.equal(x, y) } }
        #expect(result == (a == b), "ByteComparison disagrees with the model on \(a.count) and \(b.count) bytes")
        return result
    }
}
