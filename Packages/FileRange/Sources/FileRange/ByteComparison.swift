// The one byte comparison of the packages above the floor (MPEGTS's demuxer, the proxy's route table): the standard
// library only, eight bytes at a time, no C call (memcmp is a system-layer call the packages above may not make).

/// Comparison of raw byte buffers.
public enum ByteComparison {
    /// Whether two buffers hold the same bytes (false when their lengths differ).
    @inlinable
    public static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
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
}
