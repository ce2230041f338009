/// A consuming cursor over borrowed bytes: every read checks the remaining length first and throws
/// ``MPEGTSError/Code/truncated`` (with the offset) instead of reading past the end.
///
/// The cursor never copies; ``readBytes(_:)`` returns a view into the same memory, valid as long as the
/// buffer the cursor was made from.
struct ByteCursor {
    let base: UnsafeRawBufferPointer
    private(set) var position: Int
    let end: Int
    /// Added to local positions when an error reports its offset.
    let baseOffset: Int64

    init(_ base: UnsafeRawBufferPointer, baseOffset: Int64 = 0) {
        self.base = base
        self.position = 0
        self.end = base.count
        self.baseOffset = baseOffset
    }

    private init(base: UnsafeRawBufferPointer, position: Int, end: Int, baseOffset: Int64) {
        self.base = base
        self.position = position
        self.end = end
        self.baseOffset = baseOffset
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position >= end }
    /// The stream offset of the next byte.
    var offset: Int64 { baseOffset + Int64(position) }

    func truncated(_ what: String) -> MPEGTSError {
        MPEGTSError(.truncated, offset: offset, what)
    }

    private func need(_ count: Int, _ what: String) throws(MPEGTSError) {
        guard count >= 0, count <= remaining else { throw truncated(what) }
    }

    mutating func readUInt8(_ what: String = "byte") throws(MPEGTSError) -> UInt8 {
        try need(1, what)
        let value = base[position]
        position += 1
        return value
    }

    mutating func readUInt16(_ what: String = "16-bit field") throws(MPEGTSError) -> UInt16 {
        try need(2, what)
        let value = UInt16(base[position]) << 8 | UInt16(base[position + 1])
        position += 2
        return value
    }

    mutating func readUInt24(_ what: String = "24-bit field") throws(MPEGTSError) -> UInt32 {
        try need(3, what)
        let value = UInt32(base[position]) << 16 | UInt32(base[position + 1]) << 8 | UInt32(base[position + 2])
        position += 3
        return value
    }

    mutating func readUInt32(_ what: String = "32-bit field") throws(MPEGTSError) -> UInt32 {
        try need(4, what)
        var value: UInt32 = 0
        for index in 0..<4 { value = value << 8 | UInt32(base[position + index]) }
        position += 4
        return value
    }

    /// Reads `count` bytes (at most 8) as a big-endian unsigned integer.
    mutating func readBigEndian(_ count: Int, _ what: String) throws(MPEGTSError) -> UInt64 {
        try need(count, what)
        var value: UInt64 = 0
        for index in 0..<min(count, 8) { value = value << 8 | UInt64(base[position + index]) }
        position += count
        return value
    }

    /// A view of the next `count` bytes; the cursor moves past them.
    mutating func readBytes(_ count: Int, _ what: String = "bytes") throws(MPEGTSError) -> UnsafeRawBufferPointer {
        try need(count, what)
        let view = UnsafeRawBufferPointer(rebasing: base[position..<(position + count)])
        position += count
        return view
    }

    /// A cursor over the next `count` bytes (keeping stream offsets); this cursor moves past them.
    mutating func subCursor(_ count: Int, _ what: String) throws(MPEGTSError) -> ByteCursor {
        try need(count, what)
        let sub = ByteCursor(base: base, position: position, end: position + count, baseOffset: baseOffset)
        position += count
        return sub
    }

    mutating func skip(_ count: Int, _ what: String = "bytes") throws(MPEGTSError) {
        try need(count, what)
        position += count
    }

    /// The bytes left, as a view; the cursor moves to the end.
    mutating func readRest() -> UnsafeRawBufferPointer {
        let view = UnsafeRawBufferPointer(rebasing: base[position..<end])
        position = end
        return view
    }

    func peekUInt8(at index: Int = 0) -> UInt8? {
        let at = position + index
        guard index >= 0, at < end else { return nil }
        return base[at]
    }
}

/// Reads bit fields MSB first from a byte array, with Exp-Golomb codes for H.264/HEVC parameter sets.
struct BitReader {
    private let bytes: [UInt8]
    private(set) var bitPosition: Int = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var bitsRemaining: Int { bytes.count * 8 - bitPosition }

    mutating func bit() throws(MPEGTSError) -> UInt32 {
        guard bitPosition < bytes.count * 8 else { throw MPEGTSError(.truncated, "bit field") }
        let byte = bytes[bitPosition >> 3]
        let value = UInt32(byte >> (7 - UInt8(bitPosition & 7))) & 1
        bitPosition += 1
        return value
    }

    mutating func bits(_ count: Int) throws(MPEGTSError) -> UInt32 {
        guard count <= 32 else { throw MPEGTSError(.invalidLength, "bit field wider than 32") }
        var value: UInt32 = 0
        for _ in 0..<count { value = value << 1 | (try bit()) }
        return value
    }

    mutating func bits64(_ count: Int) throws(MPEGTSError) -> UInt64 {
        guard count <= 64 else { throw MPEGTSError(.invalidLength, "bit field wider than 64") }
        var value: UInt64 = 0
        for _ in 0..<count { value = value << 1 | UInt64(try bit()) }
        return value
    }

    mutating func skip(_ count: Int) throws(MPEGTSError) {
        guard count >= 0, count <= bitsRemaining else { throw MPEGTSError(.truncated, "bit field") }
        bitPosition += count
    }

    /// Unsigned Exp-Golomb, ue(v); at most 31 leading zeros.
    mutating func ue() throws(MPEGTSError) -> UInt32 {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            guard zeros < 32 else { throw MPEGTSError(.invalidValue, "Exp-Golomb code too long") }
        }
        if zeros == 0 { return 0 }
        let suffix = try bits(zeros)
        return UInt32((UInt64(1) << UInt64(zeros)) - 1 + UInt64(suffix))
    }

    /// Signed Exp-Golomb, se(v).
    mutating func se() throws(MPEGTSError) -> Int32 {
        let code = try ue()
        let magnitude = Int32(truncatingIfNeeded: (UInt64(code) + 1) / 2)
        return code & 1 == 1 ? magnitude : -magnitude
    }
}

/// Calls `body` with the bytes of `array`, keeping the typed error (Array.withUnsafeBytes rethrows untyped).
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(MPEGTSError) -> R) throws(MPEGTSError)
    -> R
{
    let result: Result<R, MPEGTSError> = array.withUnsafeBytes { raw in
        do throws(MPEGTSError) {
            return .success(try body(raw))
        } catch {
            return .failure(error)
        }
    }
    switch result {
    case .success(let value): return value
    case .failure(let error): throw error
    }
}
