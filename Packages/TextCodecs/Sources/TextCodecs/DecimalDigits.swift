/// Decimal digits written straight into bytes: the one place the toolkit formats an unsigned integer for the wire
/// (HTTP status codes, lengths and ranges) without a `String` in between.
public enum DecimalDigits {
    /// Appends the decimal digits of `value`: no sign, no leading zero, `0` for zero.
    @inlinable
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        // Least significant digit first (a division by the constant 10 is a multiplication), then reversed in place.
        let start = bytes.count
        var rest = value
        repeat {
            bytes.append(0x30 &+ UInt8(truncatingIfNeeded: rest % 10))
            rest /= 10
        } while rest > 0
        var low = start
        var high = bytes.count - 1
        while low < high {
            bytes.swapAt(low, high)
            low += 1
            high -= 1
        }
    }
}
