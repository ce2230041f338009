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
