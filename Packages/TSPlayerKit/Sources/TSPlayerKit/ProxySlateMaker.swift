import Foundation
public import HLSAdFilter
import MPEGTS

/// The default slate source: a freeze frame of the last content segment, placed on the content's own timeline.
///
/// MPEGTS has no `SlateBuilder` yet, so this builds the slate from the anchor segment (the last content segment
/// before the break): its PAT and PMT (same PIDs and stream types), its first keyframe repeated at the content's
/// frame interval (every picture is an independent IDR, DTS = PTS), silent AAC frames on its ADTS audio stream (mono
/// or stereo AAC-LC; other audio is left out), PCR on the PCR PID, and continuity counters that continue the
/// anchor's. The first PTS is the anchor's first PTS plus the slot's offset (the anchor's duration and any slates
/// between), so the player sees one continuous timeline across content, slates and content again.
public struct ProxySlateMaker: ProxySlateSource {
    public init() {}

    public func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]? {
        guard let anchor, !slot.isFragmentedMP4 else { return nil }
        return ProxySlateMaker.make(duration: slot.duration, offset: slot.offsetFromAnchor, anchor: anchor)
    }

    /// Silent AAC-LC raw data blocks (one 1024-sample frame), by channel count.
    static let silentAAC: [Int: [UInt8]] = [
        1: [0x00, 0xC8, 0x00, 0x80, 0x23, 0x80],
        2: [0x21, 0x00, 0x49, 0x90, 0x02, 0x19, 0x00, 0x23, 0x80],
    ]
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// Builds a slate of `duration` seconds starting `offset` seconds after the anchor segment's first PTS.
    public static func make(duration: Double, offset: Double, anchor: [UInt8]) -> [UInt8]? {
        guard duration > 0, duration < 600, offset >= 0, offset < 3600 else { return nil }
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
        var pat: ProgramAssociationTable?
        var pmt: (table: ProgramMapTable, pid: UInt16)?
        var packets: [UInt16: [PESPacket]] = [:]
        let handle: (DemuxEvent) -> Void = { event in
            switch event {
            case .programAssociation(let table, _): if pat == nil { pat = table }
            case .programMap(let table, let pid, _): if pmt == nil { pmt = (table, pid) }
            case .pesPacket(let packet):
                if packets[packet.info.pid, default: []].count < 2000 {
                    packets[packet.info.pid, default: []].append(packet)
                }
            default: break
            }
        }
        demuxer.feed(anchor, handle)
        demuxer.finish(handle)
        guard let pat, let pmt else { return nil }
        let videoStream = pmt.table.streams.first { $0.codec == .h264 || $0.codec == .hevc }
        guard let video = videoStream, let videoPackets = packets[video.pid], !videoPackets.isEmpty,
            let key = videoPackets.first(where: { isKeyframe($0, hevc: video.codec == .hevc) }),
            let firstPTS = videoStart(videoPackets)
        else { return nil }

        // The content's frame interval: the most common PTS step between consecutive pictures in display order.
        let times = videoPackets.compactMap { $0.info.pts }.map { firstPTS.distance(to: $0) }.sorted()
        var steps: [Int64: Int] = [:]
        for (a, b) in zip(times, times.dropFirst()) where b > a && b - a < 9000 { steps[b - a, default: 0] += 1 }
        let frame = steps.max { $0.value < $1.value || $0.value == $1.value && $0.key > $1.key }?.key ?? 3003
        let start = firstPTS.advanced(by: Int64((offset * 90_000).rounded()))
        let total = Int64((duration * 90_000).rounded())
        let frames = max(1, Int((Double(total) / Double(frame)).rounded()))

        // Continuity counters continue the anchor's.
        var counters: [UInt16: UInt8] = [:]
        var index = 0
        while index + 188 <= anchor.count {
            if anchor[index] == 0x47 {
                let pid = UInt16(anchor[index + 1] & 0x1F) << 8 | UInt16(anchor[index + 2])
                if anchor[index + 3] & 0x10 != 0 { counters[pid] = (anchor[index + 3] & 0x0F) &+ 1 & 0x0F }
                index += 188
            } else {
                index += 1
            }
        }
        var packetizer = Packetizer(continuityCounters: counters)
        var out: [UInt8] = []
        out.reserveCapacity(frames * (key.payload.count + 400))
        out += packetizer.packets(section: pat.sectionBytes, pid: 0)
        out += packetizer.packets(section: pmt.table.sectionBytes, pid: pmt.pid)

        // Audio: silent ADTS frames on the first AAC stream when its layout is mono or stereo AAC-LC.
        var audio: [(pts: Timestamp, payload: [UInt8])] = []
        var audioPID: UInt16?
        var audioStreamID: UInt8 = 0xC0
        if let stream = pmt.table.streams.first(where: { $0.codec == .aac }), let first = packets[stream.pid]?.first,
            first.payload.count >= 7, first.payload[0] == 0xFF, first.payload[1] & 0xF0 == 0xF0,
            let audioPTS = first.info.pts
        {
            let header = first.payload
            let profile = header[2] >> 6
            let rateIndex = Int((header[2] >> 2) & 0x0F)
            let channels = Int((header[2] & 0x01) << 2 | header[3] >> 6)
            if profile == 1, rateIndex < sampleRates.count, let silent = silentAAC[channels] {
                audioPID = stream.pid
                audioStreamID = first.header.streamID
                let length = 7 + silent.count
                let adts: [UInt8] = [
                    0xFF, 0xF1, header[2], (header[3] & 0xC0) | UInt8(length >> 11 & 0x03), UInt8(length >> 3 & 0xFF),
                    UInt8((length & 7) << 5) | 0x1F, 0xFC,
                ]
                let rate = Double(sampleRates[rateIndex])
                let audioStart = audioPTS.advanced(by: Int64((offset * 90_000).rounded()))
                let count = Int((duration * rate / 1024).rounded(.up))
                var i = 0
                while i < count {
                    // Five frames per PES, as muxers commonly do.
                    var payload: [UInt8] = []
                    let pts = audioStart.advanced(by: Int64((Double(i) * 1024 * 90_000 / rate).rounded()))
                    for _ in 0..<min(5, count - i) { payload += adts + silent }
                    audio.append((pts, payload))
                    i += 5
                }
            }
        }

        let pcrPID = pmt.table.pcrPID
        var audioIndex = 0
        for f in 0..<frames {
            let pts = start.advanced(by: Int64(f) * frame)
            while audioIndex < audio.count, audio[audioIndex].pts.distance(to: pts) >= 0, let pid = audioPID {
                let a = audio[audioIndex]
                let header = PESHeader(streamID: audioStreamID, pts: a.pts, dataAlignment: true)
                let pcr =
                    pid == pcrPID && pid != video.pid ? PCR(base: a.pts.advanced(by: -63_000).value, extension: 0) : nil
                out += packetizer.packets(pes: header, payload: a.payload, pid: pid, pcr: pcr)
                audioIndex += 1
            }
            let header = PESHeader(streamID: key.header.streamID, pts: pts, dataAlignment: true)
            let pcr = video.pid == pcrPID ? PCR(base: pts.advanced(by: -63_000).value, extension: 0) : nil
            out += packetizer.packets(pes: header, payload: key.payload, pid: video.pid, pcr: pcr, randomAccess: true)
        }
        while audioIndex < audio.count, let pid = audioPID {
            let a = audio[audioIndex]
            out += packetizer.packets(
                pes: PESHeader(streamID: audioStreamID, pts: a.pts, dataAlignment: true), payload: a.payload, pid: pid)
            audioIndex += 1
        }
        return out
    }

    /// Whether a video PES holds an IDR (H.264 NAL type 5) or IRAP (HEVC NAL types 16-23) picture.
    static func isKeyframe(_ packet: PESPacket, hevc: Bool) -> Bool {
        if packet.info.isKeyframe { return true }
        let p = packet.payload
        var i = 0
        var zeros = 0
        var scanned = 0
        while i < p.count, scanned < 4096 {
            let b = p[i]
            if b == 1, zeros >= 2, i + 1 < p.count {
                let header = p[i + 1]
                if hevc {
                    let type = (header >> 1) & 0x3F
                    if (16...23).contains(type) { return true }
                    if type < 32 { return false }
                } else {
                    let type = header & 0x1F
                    if type == 5 { return true }
                    if type == 1 { return false }
                }
            }
            zeros = b == 0 ? zeros + 1 : 0
            i += 1
            scanned += 1
        }
        return false
    }

    /// The earliest video PTS of a segment (wrap-aware).
    static func videoStart(_ packets: [PESPacket]) -> Timestamp? {
        var best: Timestamp?
        for p in packets {
            guard let pts = p.info.pts else { continue }
            if let b = best, b.distance(to: pts) >= 0 { continue }
            best = pts
        }
        return best
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
