import Testing

@testable import MPEGTS

/// A naive model of 33-bit wrap arithmetic: try the three nearby representatives and keep the one in range.
private func naiveDistance(_ a: Int64, _ b: Int64, modulus: Int64) -> Int64 {
    for candidate in [b - a, b - a + modulus, b - a - modulus]
    where candidate >= -modulus / 2 && candidate < modulus / 2 {
        return candidate
    }
    return .min
}

private func naiveAdvance(_ a: Int64, _ ticks: Int64, modulus: Int64) -> Int64 {
    var value = (a + ticks) % modulus
    if value < 0 { value += modulus }
    return value
}

@Suite struct TimestampTests {
    static let modulus = Int64(1) << 33
    /// Values near zero, near the half-way point and near the top of the 33-bit range.
    static let interesting: [Int64] =
        Array(0...5) + Array((modulus / 2 - 3)...(modulus / 2 + 3))
        + Array((modulus - 6)..<modulus) + [90_000, 1 << 32 - 90_000, 5_000_000_000]

    @Test func distanceMatchesNaiveModelExhaustively() {
        for a in Self.interesting {
            for b in Self.interesting {
                let ours = Timestamp(wrapping: UInt64(a)).distance(to: Timestamp(wrapping: UInt64(b)))
                let expected = naiveDistance(a, b, modulus: Self.modulus)
                #expect(ours == expected, "distance(\(a) -> \(b))")
                // Moving a by the distance lands on b.
                #expect(Timestamp(wrapping: UInt64(a)).advanced(by: ours).value == UInt64(b), "advance \(a) by \(ours)")
            }
        }
    }

    @Test func advanceMatchesNaiveModelExhaustively() {
        let steps: [Int64] = [
            0, 1, -1, 3600, -3600, Self.modulus - 1, -(Self.modulus - 1), Self.modulus, 3 * Self.modulus + 7,
            -5 * Self.modulus - 2, .max / 2, .min / 2,
        ]
        for a in Self.interesting {
            for step in steps {
                let ours = Timestamp(wrapping: UInt64(a)).advanced(by: step)
                #expect(
                    Int64(ours.value) == naiveAdvance(a, step % Self.modulus, modulus: Self.modulus), "\(a) + \(step)")
            }
        }
    }

    @Test func smallModulusModelOfOrdering() {
        // The circle ordering: a is before b when the forward distance is under half the circle.
        for a in Self.interesting {
            for b in Self.interesting {
                let ta = Timestamp(wrapping: UInt64(a))
                let tb = Timestamp(wrapping: UInt64(b))
                let forward = ((b - a) % Self.modulus + Self.modulus) % Self.modulus
                #expect(ta.isBefore(tb) == (forward > 0 && forward < Self.modulus / 2), "\(a) before \(b)")
            }
        }
    }

    @Test func exactInit() {
        #expect(Timestamp(exactly: -1) == nil)
        #expect(Timestamp(exactly: 1 << 33) == nil)
        #expect(Timestamp(exactly: (1 << 33) - 1)?.value == (1 << 33) - 1)
        #expect(Timestamp(wrapping: Int64(-1)).value == (1 << 33) - 1)
    }

    @Test func pcrArithmeticAcrossWrap() {
        let modulus = Int64(PCR.modulus)
        let values: [Int64] = [
            0, 1, 299, 300, 301, modulus / 2 - 1, modulus / 2, modulus / 2 + 1, modulus - 301, modulus - 1,
        ]
        for a in values {
            for b in values {
                let pa = PCR(wrapping27MHz: UInt64(a))
                let pb = PCR(wrapping27MHz: UInt64(b))
                let distance = pa.distance(to: pb)
                #expect(distance == naiveDistance(a, b, modulus: modulus), "pcr \(a) -> \(b)")
                #expect(pa.advanced(by: distance) == pb)
            }
        }
        let pcr = PCR(base: 1234, extension: 299)
        #expect(pcr.value27MHz == 1234 * 300 + 299)
        #expect(pcr.timestamp.value == 1234)
    }
}
