import FileRange
import HLSPlaylist
import MPEGTS

/// The I-frame playlist: each keyframe's I-frame range (measured once the index is complete), the lengths served for
/// them, and the playlist's text.
extension TSPlaybackSession {
    /// The bytes from the packet at `start` (which starts a PES on `pid`) to the next packet that starts a PES on
    /// `pid`, or to the end of the file; nil when `start` is not such a packet.
    static func pesLength(
        _ file: FileStreamer, from start: UInt64, pid: UInt16, packetSize: Int, buffer: UnsafeMutableRawBufferPointer
    ) -> UInt64? {
        let prefix = packetSize == 192 ? 4 : 0
        let limit: UInt64 = 8 << 20
        let perChunk = (buffer.count - 256) / packetSize * packetSize
        var offset = start
        while offset - start < limit {
            guard
                let count = try? file.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<perChunk]), at: offset),
                count >= packetSize
            else { return offset > start ? offset - start : nil }
            var position = 0
            while position + packetSize <= count {
                let header = position + prefix
                guard buffer[header] == 0x47 else {
                    return offset == start && position == 0 ? nil : offset + UInt64(position) - start
                }
                let packetPID = (UInt16(buffer[header + 1] & 0x1F) << 8) | UInt16(buffer[header + 2])
                let startsPES = buffer[header + 1] & 0x40 != 0
                if packetPID == pid && startsPES {
                    if offset == start && position == 0 {
                        // The keyframe's own first packet.
                    } else {
                        return offset + UInt64(position) - start
                    }
                } else if offset == start && position == 0 {
                    return nil
                }
                position += packetSize
            }
            offset += UInt64(position)
        }
        return limit
    }

    /// The I-frames with the lengths of the bytes served for each, in the served view: the resources
    /// `program-iframe/<n>.ts` where they are filtered (measured when the I-frames are), else the byte ranges of
    /// `media.ts` (without the extra bytes of 192- and 204-byte packets). The I-frame variant's BANDWIDTH and
    /// AVERAGE-BANDWIDTH are measured on these.
    func servedIFrames() -> [PlannedSegment]? {
        guard let measured = iFrames.withLock({ $0 }) else { return nil }
        if let lengths = measured.servedLengths, lengths.count == measured.frames.count {
            return zip(measured.frames, lengths).map {
                PlannedSegment(offset: $0.offset, length: $1, duration: $0.duration)
            }
        }
        let layout = servesFileAsIs ? nil : index?.layout
        return measured.frames.map { Self.served($0, layout: layout) }
    }

    /// The I-frame playlist's text (EXT-X-I-FRAMES-ONLY), once the I-frames are measured.
    public func iFramePlaylist() -> String? {
        guard let frames = iFrameSegments, !frames.isEmpty else { return nil }
        var builder = MediaPlaylistBuilder(kind: .vod)
        builder.iFramesOnly = true
        builder.independentSegments = true
        let marks = Self.iFrameDiscontinuities(frames, resets: discontinuities)
        let entry = playlistEntry(resource: "program-iframe")
        builder.segments = frames.enumerated().map { number, frame in
            entry(number, frame, marks.contains(frame.offset))
        }
        return builder.build().text
    }
}
