/// fMP4 slates from a template (an init section and one fragment holding one frame, typically a black IDR picture
/// with in-band parameter sets). A slate is the fragment repeated once per frame, each copy with the next `mfhd`
/// sequence number and a `tfdt` decode time one frame further on; the last copy's sample duration is cut so the slate
/// lasts exactly the duration asked for. The slate is made for the content's video track: same track ID and
/// timescale (in its init section and its fragments), so a player that keeps the content's init section across the
/// discontinuity still reads the right times. The first decode time is where the content timeline is.
public struct FragmentedSlateTemplate: Sendable {
    /// The content's video track: its ID and timescale.
    public struct Track: Sendable, Hashable {
        public var id: UInt32
        public var timescale: UInt64
        public init(id: UInt32, timescale: UInt64) {
            self.id = id
            self.timescale = timescale
        }
    }

    /// The boxes before the first `moof`, and the first `moof` and the `mdat` after it.
    let initBoxes: [Box]
    let moof: Box
    let mdat: Box
    /// The template's own track.
    public let track: Track
    /// The template's frame duration, in seconds.
    public let frameSeconds: Double

    /// Reads a template: boxes before the first `moof` are the init section (one video track, version-0 `tkhd`
    /// and `mdhd`, a `trex`); the first `moof` + `mdat` the fragment, which must have a version-1 `tfdt` and a
    /// `tfhd` default sample duration.
    public init?(_ bytes: [UInt8]) {
        guard let top = try? BoxReader.parse(bytes),
            let moofIndex = top.firstIndex(where: { $0.type == .moof }), moofIndex + 1 < top.count,
            top[moofIndex + 1].type == .mdat,
            let moov = top[..<moofIndex].first(where: { $0.type == .moov }),
            let tkhd = moov.descendant([.trak, .tkhd])?.data, tkhd.count >= 16, tkhd[0] == 0,
            let mdhd = moov.descendant([.trak, .mdia, .mdhd]), mdhd.data.count >= 16, mdhd.data[0] == 0,
            let trex = moov.descendant([.mvex, .trex])?.data, trex.count >= 8,
            let scale = Self.timescale(mdhd),
            let traf = top[moofIndex].child(.traf),
            let mfhd = top[moofIndex].child(.mfhd)?.data, mfhd.count >= 8,
            let tfdt = traf.child(.tfdt)?.data, tfdt.count >= 12, tfdt[0] == 1,
            let tfhd = traf.child(.tfhd)?.data, let offset = Self.defaultDurationOffset(tfhd)
        else { return nil }
        let frame = Self.uint32(tfhd, offset)
        guard frame > 0 else { return nil }
        initBoxes = Array(top[..<moofIndex])
        moof = top[moofIndex]
        mdat = top[moofIndex + 1]
        track = Track(id: Self.uint32(tkhd, 12), timescale: scale)
        frameSeconds = Double(frame) / Double(scale)
    }

    /// Where a `tfhd` body holds its default sample duration (after version/flags, track_ID and the optional fields
    /// before it), or nil when it has none.
    static func defaultDurationOffset(_ tfhd: [UInt8]) -> Int? {
        guard tfhd.count >= 8 else { return nil }
        let flags = UInt32(tfhd[1]) << 16 | UInt32(tfhd[2]) << 8 | UInt32(tfhd[3])
        guard flags & 0x08 != 0 else { return nil }
        var offset = 8
        if flags & 0x01 != 0 { offset += 8 }
        if flags & 0x02 != 0 { offset += 4 }
        return offset + 4 <= tfhd.count ? offset : nil
    }

    /// The init section of slates for `track` (the template's own when nil).
    public func initSection(for track: Track? = nil) -> [UInt8] {
        var writer = BoxWriter()
        guard let track, track != self.track, let scale = UInt32(exactly: track.timescale) else {
            for box in initBoxes { writer.write(box) }
            return writer.bytes
        }
        for box in initBoxes {
            guard box.type == .moov else {
                writer.write(box)
                continue
            }
            var moov = box
            moov.edit([.trak, .tkhd]) { Self.put32(&$0, 12, track.id) }
            moov.edit([.mvex, .trex]) { Self.put32(&$0, 4, track.id) }
            moov.edit([.trak, .mdia, .mdhd]) { Self.put32(&$0, 12, scale) }
            writer.write(moov)
        }
        return writer.bytes
    }

    /// A slate of `duration` seconds whose first decode time is `start` seconds on the content timeline, for
    /// `track` (the template's own when nil).
    public func slate(duration: Double, start: Double, track: Track? = nil) -> [UInt8]? {
        guard duration > 0, duration < 600, start >= 0, start < 1e9 else { return nil }
        let target = track.flatMap { $0.timescale <= UInt64(UInt32.max) ? $0 : nil } ?? self.track
        let scale = Double(target.timescale)
        let total = UInt64((duration * scale).rounded())
        let frameDuration = max(1, UInt64((frameSeconds * scale).rounded()))
        guard total > 0 else { return nil }
        let frames = max(1, (total + frameDuration / 2) / frameDuration)
        let first = UInt64((start * scale).rounded())
        var writer = BoxWriter()
        var copy = moof
        copy.edit([.traf, .tfhd]) { Self.put32(&$0, 4, target.id) }
        for i in 0..<frames {
            let length = i == frames - 1 ? total - min(total, (frames - 1) * frameDuration) : frameDuration
            copy.edit([.mfhd]) { Self.put32(&$0, 4, UInt32(truncatingIfNeeded: i + 1)) }
            copy.edit([.traf, .tfhd]) { body in
                if let offset = Self.defaultDurationOffset(body) {
                    Self.put32(&body, offset, UInt32(truncatingIfNeeded: max(1, length)))
                }
            }
            copy.edit([.traf, .tfdt]) { Self.put64(&$0, 4, first &+ i &* frameDuration) }
            writer.write(copy)
            writer.write(mdat)
        }
        return writer.bytes
    }

    /// The video track of an init section, or nil when none has a video handler (an audio-only init section:
    /// its slates carry audio only).
    public static func videoTrack(initSection: [UInt8]) -> Track? {
        tracks(initSection: initSection).first(where: \.video)?.track
    }

    /// The tracks of an init section, in order, each with whether it has a video handler.
    static func tracks(initSection: [UInt8]) -> [(track: Track, video: Bool)] {
        guard let moov = (try? BoxReader.parsePrefix(initSection))?.boxes.first(where: { $0.type == .moov }) else {
            return []
        }
        var tracks: [(track: Track, video: Bool)] = []
        for trak in moov.children where trak.type == .trak {
            guard let tkhd = trak.child(.tkhd)?.data, tkhd.count >= 4, let mdhd = trak.descendant([.mdia, .mdhd]),
                let scale = timescale(mdhd)
            else { continue }
            let idOffset = tkhd[0] == 1 ? 20 : 12
            guard idOffset + 4 <= tkhd.count else { continue }
            var video = false
            if let hdlr = trak.descendant([.mdia, .hdlr])?.data, hdlr.count >= 12 {
                video = hdlr[8..<12].elementsEqual("vide".utf8)
            }
            tracks.append((Track(id: uint32(tkhd, idOffset), timescale: scale), video))
        }
        return tracks
    }

    /// Where a content segment starts, in seconds: the `tfdt` of its video track (its first track when it has no
    /// video) divided by that track's timescale. Only the segment's complete boxes are read: a truncated `mdat` does
    /// not hide the `moof` before it.
    public static func contentStart(segment: [UInt8], initSection: [UInt8]) -> Double? {
        let tracks = tracks(initSection: initSection)
        guard let track = (tracks.first(where: \.video) ?? tracks.first)?.track,
            let moof = (try? BoxReader.parsePrefix(segment))?.boxes.first(where: { $0.type == .moof })
        else { return nil }
        for traf in moof.children where traf.type == .traf {
            guard let tfhd = traf.child(.tfhd)?.data, tfhd.count >= 8, uint32(tfhd, 4) == track.id,
                let tfdt = traf.child(.tfdt)?.data, tfdt.count >= 8
            else { continue }
            let time: UInt64
            if tfdt[0] == 1 {
                guard tfdt.count >= 12 else { return nil }
                time = UInt64(uint32(tfdt, 4)) << 32 | UInt64(uint32(tfdt, 8))
            } else {
                time = UInt64(uint32(tfdt, 4))
            }
            return Double(time) / Double(track.timescale)
        }
        return nil
    }

    /// An `mdhd`'s timescale (version 0 or 1), or nil when it is 0 or missing.
    static func timescale(_ mdhd: Box) -> UInt64? {
        let body = mdhd.data
        guard body.count >= 4 else { return nil }
        let offset = body[0] == 1 ? 20 : 12
        guard offset + 4 <= body.count else { return nil }
        let scale = UInt64(uint32(body, offset))
        return scale > 0 ? scale : nil
    }

    /// Four big-endian bytes at `i`, which the caller has checked are there.
    static func uint32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    static func put32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) {
        guard i >= 0, i + 4 <= b.count else { return }
        for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (24 - 8 * k)) }
    }

    static func put64(_ b: inout [UInt8], _ i: Int, _ v: UInt64) {
        put32(&b, i, UInt32(truncatingIfNeeded: v >> 32))
        put32(&b, i + 4, UInt32(truncatingIfNeeded: v))
    }
}

extension Box {
    /// Changes the body of the first box at the end of `path` below this one (a box read as data).
    mutating func edit(_ path: [FourCC], _ change: (inout [UInt8]) -> Void) {
        guard let type = path.first, case .children(var children) = content,
            let index = children.firstIndex(where: { $0.type == type })
        else { return }
        if path.count == 1 {
            guard case .data(var body) = children[index].content else { return }
            change(&body)
            children[index].content = .data(body)
        } else {
            children[index].edit(Array(path.dropFirst()), change)
        }
        content = .children(children)
    }
}
