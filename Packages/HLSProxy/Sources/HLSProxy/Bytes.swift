/// Byte search for the proxy's hot paths, in the standard library only (eight bytes at a time, no C calls): the
/// umbrella makes no system or C library calls of its own. Comparison is FileRange's ``ByteComparison``.
enum Bytes {
    /// The index of the first LF at or after `from` in `buffer`, or nil.
    static func nextLineFeed(in buffer: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        var i = max(from, 0)
        let n = buffer.count
        if let start = buffer.baseAddress {
            let raw = UnsafeRawPointer(start)
            while i + 8 <= n {
                let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ 0x0A0A_0A0A_0A0A_0A0A
                // A zero byte of x is an LF; the lowest flagged byte is the first one (higher flags may be false).
                if (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 != 0 { break }
                i += 8
            }
        }
        while i < n {
            if buffer[i] == 0x0A { return i }
            i += 1
        }
        return nil
    }
}
