/// Byte search eight bytes at a time, in the standard library only: the one fast search of the toolkit's parsers
/// (line feeds in playlists and M3U lists, attribute delimiters).
public enum ByteSearch {
    /// The high bit of each byte of `word` that equals `byte`, exactly (no false positives, so the lowest set bit
    /// marks the first match on a little-endian load and a popcount counts the matches).
    @inlinable @inline(__always)
    public static func matches(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        let low: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let x = word ^ (0x0101_0101_0101_0101 &* UInt64(byte))
        return ~(((x & low) &+ low) | x | low)
    }

    /// The index of the first `byte` at or after `from` in `buffer`, or `buffer.count` when there is none.
    @inlinable @inline(__always)
    public static func firstIndex(of byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        var i = max(from, 0)
        let n = buffer.count
        #if _endian(little)
            if let start = buffer.baseAddress {
                let raw = UnsafeRawPointer(start)
                let pattern = 0x0101_0101_0101_0101 &* UInt64(byte)
                while i &+ 8 <= n {
                    let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ pattern
                    // A zero byte of x is a match; a borrow can flag bytes above a true zero, never below it, so the
                    // lowest flagged byte is the first match.
                    let found = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
                    if found != 0 { return i &+ (found.trailingZeroBitCount >> 3) }
                    i &+= 8
                }
            }
        #endif
        while i < n, buffer[i] != byte { i &+= 1 }
        return i
    }

    /// The index of the first `byte` or `other` at or after `from` in `buffer`, or `buffer.count` when there is
    /// neither (the end of an attribute name or an unquoted value).
    @inlinable @inline(__always)
    public static func firstIndex(
        of byte: UInt8, or other: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from: Int
    ) -> Int {
        var i = max(from, 0)
        let n = buffer.count
        #if _endian(little)
            if let start = buffer.baseAddress {
                let raw = UnsafeRawPointer(start)
                while i &+ 8 <= n {
                    let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    let found = matches(word, byte) | matches(word, other)
                    if found != 0 { return i &+ (found.trailingZeroBitCount >> 3) }
                    i &+= 8
                }
            }
        #endif
        while i < n, buffer[i] != byte, buffer[i] != other { i &+= 1 }
        return i
    }
}
