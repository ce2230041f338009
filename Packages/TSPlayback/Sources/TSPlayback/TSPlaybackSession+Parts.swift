import MPEGTS

/// The parts of a joined recording (`MPEGTS.RecordingPart`) and the time stamp resets, as the playlists mark them:
/// where each range of segments starts and which segments and I-frames follow an `EXT-X-DISCONTINUITY`.
extension TSPlaybackSession {
    /// Where each range of segments after a discontinuity starts: the keyframes where the index's ticks and the PTS
    /// disagree (a time stamp reset, closed up by the index) and the first keyframe of each later part, each moved to
    /// its part's tables where its streams changed (``partStarts(_:)``).
    static func resetOffsets(_ index: TSIndex) -> [UInt64] {
        let starts = partStarts(index)
        let resets = zip(index.keyframes, index.keyframes.dropFirst()).compactMap { previous, keyframe in
            previous.pts.distance(to: keyframe.pts) == keyframe.ticks - previous.ticks
                ? nil : UInt64(exactly: keyframe.offset)
        }
        // Every part after the first is a discontinuity, at its first keyframe (or, where its streams changed, at the
        // tables before it), even where its time stamps happen to run on.
        var result = Set(resets.map { starts[$0] ?? $0 })
        for part in index.parts.dropFirst() {
            guard let keyframe = index.keyframes.first(where: { $0.offset >= part.offset }),
                keyframe.offset > (index.keyframes.first?.offset ?? 0), let offset = UInt64(exactly: keyframe.offset)
            else { continue }
            result.insert(starts[offset] ?? offset)
        }
        return result.sorted()
    }

    /// For the first keyframe of each part whose streams changed: the offset of the tables that begin the part (its
    /// range starts there, so its first segment carries the new PAT and PMT).
    static func partStarts(_ index: TSIndex) -> [UInt64: UInt64] {
        var result: [UInt64: UInt64] = [:]
        for (number, part) in index.parts.enumerated() where number > 0 && part.cause == .streamsChanged {
            let end = number + 1 < index.parts.count ? index.parts[number + 1].offset : Int64.max
            guard let keyframe = index.keyframes.first(where: { $0.offset >= part.offset && $0.offset < end }),
                let offset = UInt64(exactly: keyframe.offset), let start = UInt64(exactly: part.offset)
            else { continue }
            result[offset] = start
        }
        return result
    }

    /// The I-frames that follow a discontinuity: each first I-frame at or after a reset offset.
    static func iFrameDiscontinuities(_ frames: [PlannedSegment], resets: Set<UInt64>) -> Set<UInt64> {
        guard !resets.isEmpty else { return [] }
        var result: Set<UInt64> = []
        var previous: UInt64?
        for frame in frames {
            if let previous, resets.contains(where: { $0 > previous && $0 <= frame.offset }) {
                result.insert(frame.offset)
            }
            previous = frame.offset
        }
        return result
    }
}
