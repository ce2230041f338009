// The one byte comparison of the packages above the floor (MPEGTS's demuxer, the proxy's route table): short buffers
// eight bytes at a time, inlined; long ones (a whole playlist, compared on every poll) through the C library's
// vectorised memcmp, which only the floor may call.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Comparison of raw byte buffers.
public enum ByteComparison {
    /// Whether two buffers hold the same bytes (false when their lengths differ).
    @inlinable
    public static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.count >= 64 { return longEqual(a, b) }
        var offset = 0
        while offset + 8 <= a.count {
            guard
                a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < a.count {
            guard a[offset] == b[offset] else { return false }
            offset += 1
        }
        return true
    }

    /// Equal-length buffers of 64 bytes or more, compared by memcmp (several times faster than the loop on a
    /// playlist of 80 KB).
    @usableFromInline
    static func longEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard let x = a.baseAddress, let y = b.baseAddress else { return a.count == b.count }
        return memcmp(x, y, a.count) == 0
    }
}
