import Foundation
public import HLSAdFilter
import MPEGTS

/// The default slate source: a freeze frame of the last content segment, placed on the content's own timeline.
///
/// The TS slate is MPEGTS's ``SlateBuilder`` continuing the anchor segment (the last content segment before the
/// break): its PAT and PMT (same PIDs and stream types), its first keyframe repeated at the content's frame interval
/// (every picture is an independent IDR, DTS = PTS), silent AAC frames on its ADTS audio stream (mono or stereo
/// AAC-LC; other audio is left out), PCR on the PCR PID, and continuity counters that continue the anchor's. The
/// first PTS is the anchor's first PTS plus the slot's offset (the anchor's duration and any slates between), so the
/// player sees one continuous timeline across content, slates and content again.
public struct ProxySlateMaker: ProxySlateSource {
    public init() {}

    public func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]? {
        guard let anchor, !slot.isFragmentedMP4 else { return nil }
        return ProxySlateMaker.make(duration: slot.duration, offset: slot.offsetFromAnchor, anchor: anchor)
    }

    /// Builds a slate of `duration` seconds starting `offset` seconds after the anchor segment's first PTS; nil for a
    /// duration outside 0...600 s, an offset outside 0...3600 s, or an anchor with no program and keyframe to continue.
    public static func make(duration: Double, offset: Double, anchor: [UInt8]) -> [UInt8]? {
        guard duration > 0, duration < 600, offset >= 0, offset < 3600,
            let builder = try? SlateBuilder(continuing: anchor)
        else { return nil }
        return builder.continuation(
            durationTicks: Int64((duration * 90_000).rounded()), offsetTicks: Int64((offset * 90_000).rounded()))
    }
}

// MARK: fMP4 slates

/// fMP4 slates from the shipped template (``ProxySlateTemplate``: an init section and one fragment holding one
/// black IDR frame with in-band parameter sets). A slate is the fragment repeated once per frame, each copy with the
/// next `mfhd` sequence number and a `tfdt` decode time one frame further on; the last copy's sample duration is cut
/// so the slate lasts exactly the ad segment's duration. The slate is made for the content's video track: same
/// track ID and timescale (in its init section and its fragments), so a player that keeps the content's init
/// section across the discontinuity still reads the right times. The first decode time is where the content
/// timeline is: the anchor segment's video `tfdt` plus the slot's offset.
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

    let initBytes: [UInt8]
    let fragment: [UInt8]
    /// The template's own track.
    public let track: Track
    /// The template's frame duration, in seconds.
    let frameSeconds: Double
    /// Offsets in `initBytes` of the tkhd and trex track IDs and the mdhd timescale.
    let initTrackIDOffsets: [Int]
    let initTimescaleOffset: Int
    /// Offsets in `fragment` of the mfhd sequence number, the tfhd track ID and default sample duration, and the
    /// 64-bit tfdt.
    let sequenceOffset: Int
    let fragmentTrackIDOffset: Int
    let durationOffset: Int
    let decodeTimeOffset: Int

    /// The shipped template.
    public static let shipped: FragmentedSlateTemplate? = {
        guard let data = Data(base64Encoded: ProxySlateTemplate.base64) else { return nil }
        return FragmentedSlateTemplate([UInt8](data))
    }()

    /// Reads a template: boxes before the first `moof` are the init section (one video track, version-0 `tkhd`
    /// and `mdhd`, a `trex`); the first `moof` + `mdat` the fragment, which must have a version-1 `tfdt` and a
    /// `tfhd` default sample duration.
    public init?(_ bytes: [UInt8]) {
        let top = MP4Boxes.children(bytes, 0..<bytes.count)
        guard let moofIndex = top.firstIndex(where: { $0.type == "moof" }), moofIndex + 1 < top.count,
            top[moofIndex + 1].type == "mdat"
        else { return nil }
        let moov = top[..<moofIndex].first { $0.type == "moov" }
        guard let moov, let tkhd = MP4Boxes.find(bytes, moov.body, path: ["trak", "tkhd"]),
            let mdhd = MP4Boxes.find(bytes, moov.body, path: ["trak", "mdia", "mdhd"]),
            let trex = MP4Boxes.find(bytes, moov.body, path: ["mvex", "trex"]),
            tkhd.body.count >= 16, bytes[tkhd.body.lowerBound] == 0, mdhd.body.count >= 16,
            bytes[mdhd.body.lowerBound] == 0, trex.body.count >= 8,
            let scale = MP4Boxes.timescale(bytes, mdhd)
        else { return nil }
        let start = top[moofIndex].range.lowerBound
        let end = top[moofIndex + 1].range.upperBound
        let fragment = Array(bytes[start..<end])
        let local = MP4Boxes.children(fragment, 0..<fragment.count)
        guard let moof = local.first, let mfhd = MP4Boxes.find(fragment, moof.body, path: ["mfhd"]),
            let tfhd = MP4Boxes.find(fragment, moof.body, path: ["traf", "tfhd"]),
            let tfdt = MP4Boxes.find(fragment, moof.body, path: ["traf", "tfdt"]),
            mfhd.body.count >= 8, tfdt.body.count >= 12, fragment[tfdt.body.lowerBound] == 1, tfhd.body.count >= 8
        else { return nil }
        // tfhd: version/flags, track_ID, then the optional fields in flag order.
        let flags =
            UInt32(fragment[tfhd.body.lowerBound + 1]) << 16 | UInt32(fragment[tfhd.body.lowerBound + 2]) << 8
            | UInt32(fragment[tfhd.body.lowerBound + 3])
        guard flags & 0x08 != 0 else { return nil }
        var offset = tfhd.body.lowerBound + 8
        if flags & 0x01 != 0 { offset += 8 }
        if flags & 0x02 != 0 { offset += 4 }
        guard offset + 4 <= tfhd.body.upperBound else { return nil }
        let frame = MP4Boxes.uint32(fragment, offset)
        guard frame > 0 else { return nil }
        initBytes = Array(bytes[0..<start])
        self.fragment = fragment
        track = Track(id: MP4Boxes.uint32(bytes, tkhd.body.lowerBound + 12), timescale: scale)
        frameSeconds = Double(frame) / Double(scale)
        initTrackIDOffsets = [tkhd.body.lowerBound + 12, trex.body.lowerBound + 4]
        initTimescaleOffset = mdhd.body.lowerBound + 12
        sequenceOffset = mfhd.body.lowerBound + 4
        fragmentTrackIDOffset = tfhd.body.lowerBound + 4
        durationOffset = offset
        decodeTimeOffset = tfdt.body.lowerBound + 4
    }

    /// The init section of slates for `track` (the template's own when nil).
    public func initSection(for track: Track? = nil) -> [UInt8] {
        guard let track, track != self.track, track.timescale <= UInt64(UInt32.max) else { return initBytes }
        var out = initBytes
        for offset in initTrackIDOffsets { MP4Boxes.put32(&out, offset, track.id) }
        MP4Boxes.put32(&out, initTimescaleOffset, UInt32(track.timescale))
        return out
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
        var out: [UInt8] = []
        out.reserveCapacity(Int(frames) * fragment.count)
        var copy = fragment
        MP4Boxes.put32(&copy, fragmentTrackIDOffset, target.id)
        for i in 0..<frames {
            let length = i == frames - 1 ? total - min(total, (frames - 1) * frameDuration) : frameDuration
            MP4Boxes.put32(&copy, sequenceOffset, UInt32(truncatingIfNeeded: i + 1))
            MP4Boxes.put32(&copy, durationOffset, UInt32(truncatingIfNeeded: max(1, length)))
            MP4Boxes.put64(&copy, decodeTimeOffset, first &+ i &* frameDuration)
            out += copy
        }
        return out
    }

    /// The video track of an init section (the first track when none has a video handler).
    public static func videoTrack(initSection: [UInt8]) -> Track? {
        guard let moov = MP4Boxes.children(initSection, 0..<initSection.count).first(where: { $0.type == "moov" })
        else { return nil }
        var tracks: [(track: Track, video: Bool)] = []
        for trak in MP4Boxes.children(initSection, moov.body) where trak.type == "trak" {
            guard let tkhd = MP4Boxes.find(initSection, trak.body, path: ["tkhd"]), tkhd.body.count >= 4,
                let mdhd = MP4Boxes.find(initSection, trak.body, path: ["mdia", "mdhd"]),
                let scale = MP4Boxes.timescale(initSection, mdhd)
            else { continue }
            let version = initSection[tkhd.body.lowerBound]
            let idOffset = tkhd.body.lowerBound + (version == 1 ? 20 : 12)
            guard idOffset + 4 <= tkhd.body.upperBound else { continue }
            var video = false
            if let hdlr = MP4Boxes.find(initSection, trak.body, path: ["mdia", "hdlr"]), hdlr.body.count >= 12 {
                video = initSection[(hdlr.body.lowerBound + 8)..<(hdlr.body.lowerBound + 12)].elementsEqual("vide".utf8)
            }
            tracks.append((Track(id: MP4Boxes.uint32(initSection, idOffset), timescale: scale), video))
        }
        return (tracks.first(where: \.video) ?? tracks.first)?.track
    }

    /// Where a content segment starts, in seconds: the `tfdt` of its video track divided by that track's timescale.
    public static func contentStart(segment: [UInt8], initSection: [UInt8]) -> Double? {
        guard let track = videoTrack(initSection: initSection) else { return nil }
        for moof in MP4Boxes.children(segment, 0..<segment.count) where moof.type == "moof" {
            for traf in MP4Boxes.children(segment, moof.body) where traf.type == "traf" {
                guard let tfhd = MP4Boxes.find(segment, traf.body, path: ["tfhd"]), tfhd.body.count >= 8,
                    MP4Boxes.uint32(segment, tfhd.body.lowerBound + 4) == track.id,
                    let tfdt = MP4Boxes.find(segment, traf.body, path: ["tfdt"]), tfdt.body.count >= 8
                else { continue }
                let base = tfdt.body.lowerBound + 4
                let time: UInt64
                if segment[tfdt.body.lowerBound] == 1 {
                    guard tfdt.body.count >= 12 else { return nil }
                    time = UInt64(MP4Boxes.uint32(segment, base)) << 32 | UInt64(MP4Boxes.uint32(segment, base + 4))
                } else {
                    time = UInt64(MP4Boxes.uint32(segment, base))
                }
                return Double(time) / Double(track.timescale)
            }
            break
        }
        return nil
    }
}

/// ISO BMFF box walking over bytes: every size checked against what is left, nesting and counts bounded.
enum MP4Boxes {
    struct Box {
        var type: String
        /// The whole box.
        var range: Range<Int>
        /// The payload after the header.
        var body: Range<Int>
    }

    /// The boxes directly inside `range` (stops at the first malformed one; at most 4096).
    static func children(_ bytes: [UInt8], _ range: Range<Int>) -> [Box] {
        var out: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, out.count < 4096 {
            var size = UInt64(uint32(bytes, offset))
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                size = UInt64(uint32(bytes, offset + 8)) << 32 | UInt64(uint32(bytes, offset + 12))
                header = 16
            } else if size == 0 {
                size = UInt64(range.upperBound - offset)
            }
            guard size >= UInt64(header), size <= UInt64(range.upperBound - offset) else { break }
            let end = offset + Int(size)
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            out.append(Box(type: type, range: offset..<end, body: (offset + header)..<end))
            offset = end
        }
        return out
    }

    /// The first box found by following `path` from the boxes in `range`.
    static func find(_ bytes: [UInt8], _ range: Range<Int>, path: [String]) -> Box? {
        var current = range
        var found: Box?
        for name in path.prefix(16) {
            guard let box = children(bytes, current).first(where: { $0.type == name }) else { return nil }
            found = box
            current = box.body
        }
        return found
    }

    /// An `mdhd`'s timescale.
    static func timescale(_ bytes: [UInt8], _ mdhd: Box) -> UInt64? {
        guard mdhd.body.count >= 4 else { return nil }
        let offset = mdhd.body.lowerBound + (bytes[mdhd.body.lowerBound] == 1 ? 20 : 12)
        guard offset + 4 <= mdhd.body.upperBound else { return nil }
        let scale = UInt64(uint32(bytes, offset))
        return scale > 0 ? scale : nil
    }

    static func uint32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
    static func put32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) {
        b[i] = UInt8(v >> 24)
        b[i + 1] = UInt8(v >> 16 & 0xFF)
        b[i + 2] = UInt8(v >> 8 & 0xFF)
        b[i + 3] = UInt8(v & 0xFF)
    }
    static func put64(_ b: inout [UInt8], _ i: Int, _ v: UInt64) {
        put32(&b, i, UInt32(v >> 32))
        put32(&b, i + 4, UInt32(v & 0xFFFF_FFFF))
    }
}

// MARK: AES-128 (to read an encrypted anchor segment)

/// AES-128-CBC decryption (FIPS-197, SP 800-38A) for reading an anchor segment encrypted with HLS's METHOD=AES-128,
/// so a slate can continue its timeline. Table-driven, byte-oriented; slates are cached, so speed matters little.
enum AES128 {
    static let tables: (sbox: [UInt8], inverse: [UInt8]) = {
        var sbox = [UInt8](repeating: 0, count: 256)
        var inverse = [UInt8](repeating: 0, count: 256)
        var p: UInt8 = 1
        var q: UInt8 = 1
        func rotl(_ x: UInt8, _ n: UInt8) -> UInt8 { x << n | x >> (8 - n) }
        repeat {
            // p × 3 and q ÷ 3 in GF(2^8), so q is p's inverse.
            p = p ^ (p << 1) ^ (p & 0x80 != 0 ? 0x1B : 0)
            q ^= q << 1
            q ^= q << 2
            q ^= q << 4
            if q & 0x80 != 0 { q ^= 0x09 }
            let s = q ^ rotl(q, 1) ^ rotl(q, 2) ^ rotl(q, 3) ^ rotl(q, 4) ^ 0x63
            sbox[Int(p)] = s
            inverse[Int(s)] = p
        } while p != 1
        sbox[0] = 0x63
        inverse[0x63] = 0
        return (sbox, inverse)
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var a = a
        var b = b
        var out: UInt8 = 0
        while b != 0 {
            if b & 1 != 0 { out ^= a }
            a = (a << 1) ^ (a & 0x80 != 0 ? 0x1B : 0)
            b >>= 1
        }
        return out
    }

    /// Multiplication tables for InvMixColumns (× 9, 11, 13, 14).
    static let mixing: [[UInt8]] = [9, 11, 13, 14].map { m in (0..<256).map { multiply(UInt8($0), m) } }

    /// The 11 round keys (176 bytes) of a 16-byte key.
    static func expand(_ key: [UInt8]) -> [UInt8] {
        let sbox = tables.sbox
        var w = key
        w.reserveCapacity(176)
        var rcon: UInt8 = 1
        var i = 16
        while i < 176 {
            var t = [w[i - 4], w[i - 3], w[i - 2], w[i - 1]]
            if i % 16 == 0 {
                t = [sbox[Int(t[1])] ^ rcon, sbox[Int(t[2])], sbox[Int(t[3])], sbox[Int(t[0])]]
                rcon = (rcon << 1) ^ (rcon & 0x80 != 0 ? 0x1B : 0)
            }
            for j in 0..<4 { w.append(w[i - 16 + j] ^ t[j]) }
            i += 4
        }
        return w
    }

    /// Decrypts one 16-byte block in place (`block` holds exactly 16 bytes).
    static func decryptBlock(_ block: inout [UInt8], roundKeys w: [UInt8]) {
        let inverse = tables.inverse
        let m9 = mixing[0]
        let m11 = mixing[1]
        let m13 = mixing[2]
        let m14 = mixing[3]
        for i in 0..<16 { block[i] ^= w[160 + i] }
        var round = 9
        while true {
            // InvShiftRows and InvSubBytes.
            var t = block
            for r in 0..<4 {
                for c in 0..<4 { t[r + 4 * ((c + r) % 4)] = inverse[Int(block[r + 4 * c])] }
            }
            for i in 0..<16 { t[i] ^= w[16 * round + i] }
            if round == 0 {
                block = t
                return
            }
            for c in 0..<4 {
                let a0 = Int(t[4 * c])
                let a1 = Int(t[4 * c + 1])
                let a2 = Int(t[4 * c + 2])
                let a3 = Int(t[4 * c + 3])
                block[4 * c] = m14[a0] ^ m11[a1] ^ m13[a2] ^ m9[a3]
                block[4 * c + 1] = m9[a0] ^ m14[a1] ^ m11[a2] ^ m13[a3]
                block[4 * c + 2] = m13[a0] ^ m9[a1] ^ m14[a2] ^ m11[a3]
                block[4 * c + 3] = m11[a0] ^ m13[a1] ^ m9[a2] ^ m14[a3]
            }
            round -= 1
        }
    }

    /// AES-128-CBC decryption; with `unpad`, PKCS#7 padding is checked and removed. Nil for a key or IV that is not
    /// 16 bytes, a length that is not a multiple of 16, or bad padding.
    static func decryptCBC(_ data: [UInt8], key: [UInt8], iv: [UInt8], unpad: Bool = true) -> [UInt8]? {
        guard key.count == 16, iv.count == 16, data.count % 16 == 0, !data.isEmpty else { return nil }
        let w = expand(key)
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var previous = iv
        var block = [UInt8](repeating: 0, count: 16)
        var offset = 0
        while offset < data.count {
            for i in 0..<16 { block[i] = data[offset + i] }
            let cipher = block
            decryptBlock(&block, roundKeys: w)
            for i in 0..<16 { out.append(block[i] ^ previous[i]) }
            previous = cipher
            offset += 16
        }
        guard unpad else { return out }
        guard let last = out.last, (1...16).contains(last), out.suffix(Int(last)).allSatisfy({ $0 == last }) else {
            return nil
        }
        out.removeLast(Int(last))
        return out
    }
}
