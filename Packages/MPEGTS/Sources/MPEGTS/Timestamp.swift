/// A 33-bit presentation or decoding time stamp in 90 kHz ticks, with wrap-around arithmetic.
///
/// PTS and DTS values count modulo 2^33 (about 26.5 hours). ``distance(to:)`` returns the shortest signed
/// distance on that circle, so a time stamp just after the wrap is *after* one just before it.
public struct Timestamp: Hashable, Sendable, CustomStringConvertible {
    /// 2^33, the number of distinct time stamps.
    public static let modulus: UInt64 = 1 << 33
    /// Ticks per second.
    public static let ticksPerSecond: Int64 = 90_000

    /// The tick count, always below ``modulus``.
    public let value: UInt64

    /// A time stamp from any tick count, reduced modulo 2^33.
    public init(wrapping ticks: UInt64) {
        value = ticks & (Self.modulus - 1)
    }

    /// A time stamp from a signed tick count, reduced modulo 2^33 (negative values wrap to the top).
    public init(wrapping ticks: Int64) {
        value = UInt64(bitPattern: ticks) & (Self.modulus - 1)
    }

    /// A time stamp, or nil when `ticks` is negative or not below 2^33.
    public init?(exactly ticks: some BinaryInteger) {
        guard let ticks = UInt64(exactly: ticks), ticks < Self.modulus else { return nil }
        value = ticks
    }

    /// This time stamp moved by `ticks` (either sign), wrapping modulo 2^33.
    public func advanced(by ticks: Int64) -> Timestamp {
        Timestamp(wrapping: value &+ UInt64(bitPattern: ticks))
    }

    /// The shortest signed distance from `self` to `other`, in ticks, in the range -2^32 ..< 2^32.
    public func distance(to other: Timestamp) -> Int64 {
        let forward = (other.value &- value) & (Self.modulus - 1)
        let half = Self.modulus / 2
        return forward >= half ? Int64(forward) - Int64(Self.modulus) : Int64(forward)
    }

    /// Whether `self` comes strictly before `other` on the wrap-around circle.
    public func isBefore(_ other: Timestamp) -> Bool { distance(to: other) > 0 }

    /// Seconds since tick zero (no wrap correction).
    public var seconds: Double { Double(value) / Double(Self.ticksPerSecond) }

    /// A duration in ticks expressed in seconds.
    public static func seconds(ticks: Int64) -> Double { Double(ticks) / Double(ticksPerSecond) }

    public var description: String { "\(value)" }
}

/// A program clock reference: a 33-bit base in 90 kHz and a 9-bit extension in 27 MHz (0 ..< 300).
public struct PCR: Hashable, Sendable, CustomStringConvertible {
    /// 2^33 × 300, the number of distinct 27 MHz PCR values.
    public static let modulus: UInt64 = Timestamp.modulus * 300
    /// 27 MHz ticks per second.
    public static let ticksPerSecond: Int64 = 27_000_000

    /// The 90 kHz base.
    public let base: UInt64
    /// The 27 MHz extension, 0 ..< 300 in a valid PCR (up to 511 may appear in damaged input).
    public let `extension`: UInt16

    public init(base: UInt64, extension: UInt16) {
        self.base = base & (Timestamp.modulus - 1)
        self.extension = `extension` & 0x1FF
    }

    /// A PCR from a 27 MHz tick count, reduced modulo 2^33 × 300.
    public init(wrapping27MHz ticks: UInt64) {
        let reduced = ticks % Self.modulus
        base = reduced / 300
        self.extension = UInt16(reduced % 300)
    }

    /// base × 300 + extension.
    public var value27MHz: UInt64 { base * 300 + UInt64(`extension`) }

    /// The base as a 90 kHz time stamp.
    public var timestamp: Timestamp { Timestamp(wrapping: base) }

    /// This PCR moved by `ticks` of 27 MHz, wrapping.
    public func advanced(by ticks: Int64) -> PCR {
        let modulus = Int64(Self.modulus)
        var value = (Int64(value27MHz) + ticks % modulus) % modulus
        if value < 0 { value += modulus }
        return PCR(wrapping27MHz: UInt64(value))
    }

    /// The shortest signed distance in 27 MHz ticks.
    public func distance(to other: PCR) -> Int64 {
        let modulus = Int64(Self.modulus)
        var forward = (Int64(other.value27MHz) - Int64(value27MHz)) % modulus
        if forward < 0 { forward += modulus }
        return forward >= modulus / 2 ? forward - modulus : forward
    }

    public var seconds: Double { Double(value27MHz) / Double(Self.ticksPerSecond) }

    public var description: String { "\(base)*300+\(`extension`)" }
}
