import LoopbackHTTP

/// A segment the caller describes: a byte range of a file and its duration, and for folder sessions the file.
public struct SegmentInfo: Hashable, Sendable, Codable {
    /// The segment's file, relative to the folder (folder sessions only).
    public var file: String?
    /// The first byte of the segment in its file (0 for a whole file).
    public var offset: UInt64
    /// The segment's length in bytes; nil for "to the end of the file".
    public var length: UInt64?
    /// The segment's duration in seconds.
    public var duration: Double

    /// A segment: `length` bytes from `offset` (to the end of the file when nil), playing for `duration` seconds,
    /// in `file` for folder sessions. The labels are the seed library's, in its order.
    public init(offset: UInt64 = 0, duration: Double, length: UInt64? = nil, file: String? = nil) {
        self.file = file
        self.offset = offset
        self.length = length
        self.duration = duration
    }

    /// Checks segments of one file of `fileSize` bytes and returns them as planned segments sorted by offset.
    static func validated(_ segments: [SegmentInfo], fileSize: UInt64, path: String) throws(PlaybackError)
        -> [PlannedSegment]
    {
        var planned: [PlannedSegment] = []
        for (number, segment) in segments.enumerated() {
            let length = segment.length ?? (fileSize >= segment.offset ? fileSize - segment.offset : 0)
            // At least one 90 kHz tick (a shorter one made the variant's bandwidth infinite) and less than the 33-bit
            // time stamp circle (a longer one trapped in whole ticks): durations may come from a playlist or a file.
            guard segment.duration * 90_000 >= 1, segment.duration * 90_000 < 0x1p33 else {
                throw PlaybackError(
                    .invalidSegment, path: path, detail: "segment \(number) has duration \(segment.duration)")
            }
            guard length > 0, segment.offset < fileSize, length <= fileSize - segment.offset else {
                var error = PlaybackError(
                    .invalidSegment, path: path,
                    detail: "segment \(number) (offset \(segment.offset), length \(length)) is outside the file "
                        + "of \(fileSize) bytes")
                error.offset = segment.offset
                error.fileSize = fileSize
                throw error
            }
            planned.append(PlannedSegment(offset: segment.offset, length: length, duration: segment.duration))
        }
        planned.sort { $0.offset < $1.offset }
        for (previous, next) in zip(planned, planned.dropFirst()) where previous.offset + previous.length > next.offset
        {
            throw PlaybackError(
                .invalidSegment, path: path,
                detail: "segments at offsets \(previous.offset) and \(next.offset) overlap")
        }
        return planned
    }
}
