/// A media segment of a playlist that describes one `.ts` file: a byte range of the file and its true duration.
public struct PlannedSegment: Hashable, Sendable {
    /// The first byte of the segment in the file.
    public var offset: UInt64
    /// The segment's length in bytes.
    public var length: UInt64
    /// The segment's duration in seconds, from the timestamps of the keyframes that bound it.
    public var duration: Double

    /// A segment.
    public init(offset: UInt64, length: UInt64, duration: Double) {
        self.offset = offset
        self.length = length
        self.duration = duration
    }
}

/// Cuts a file into keyframe-aligned byte-range segments of about a target duration.
public enum SegmentPlanner {
    /// A place where a segment may start: the byte offset of the packet that starts a keyframe's PES, and the
    /// keyframe's time in 90 kHz ticks from the start of the file's timeline.
    public struct Cut: Hashable, Sendable {
        /// The byte offset.
        public var offset: UInt64
        /// The time, in 90 kHz ticks from the file's first timestamp.
        public var ticks: Int64

        /// A cut point.
        public init(offset: UInt64, ticks: Int64) {
            self.offset = offset
            self.ticks = ticks
        }
    }

    /// Plans segments.
    ///
    /// The first segment starts at byte 0 (so it carries the PAT and PMT) and time 0; each later one starts at the
    /// first keyframe at least `targetDuration` after the previous start. While the file is still being indexed
    /// (`endTicks` nil), only segments closed by a later cut are returned, so every returned segment is final.
    /// Once it is indexed, the last segment runs to `fileSize` and to `endTicks`. Keyframes whose offset or time
    /// does not increase are ignored, so a broken file never produces an empty or negative segment.
    public static func plan(
        keyframes: [Cut], fileSize: UInt64, endTicks: Int64?, targetDuration: Double
    ) -> [PlannedSegment] {
        let target = Int64(max(0.5, targetDuration) * 90_000)
        var cuts = [Cut(offset: 0, ticks: 0)]
        for keyframe in keyframes {
            guard let last = cuts.last, keyframe.offset > last.offset, keyframe.offset < fileSize,
                keyframe.ticks - last.ticks >= target
            else { continue }
            cuts.append(keyframe)
        }
        var segments: [PlannedSegment] = []
        for (start, end) in zip(cuts, cuts.dropFirst()) {
            segments.append(
                PlannedSegment(
                    offset: start.offset, length: end.offset - start.offset,
                    duration: Double(end.ticks - start.ticks) / 90_000))
        }
        if let endTicks, let last = cuts.last, fileSize > last.offset {
            let duration = Double(endTicks - last.ticks) / 90_000
            if duration > 0 {
                segments.append(PlannedSegment(offset: last.offset, length: fileSize - last.offset, duration: duration))
            } else if let previous = segments.popLast() {
                // A last keyframe with no time after it joins the segment before it.
                segments.append(
                    PlannedSegment(
                        offset: previous.offset, length: fileSize - previous.offset, duration: previous.duration))
            }
        }
        return segments
    }
}
