@testable import MPEGTS

/// Builds small synthetic transport streams for tests: PAT, PMT, H.264 video PES with IDR / non-IDR access
/// units, AAC audio PES, with PCR on the video PID.
struct StreamBuilder {
    var packetizer = Packetizer()
    var bytes: [UInt8] = []
    var videoPID: UInt16 = 0x100
    var audioPID: UInt16 = 0x101
    var pmtPID: UInt16 = 0x1000
    var programNumber: UInt16 = 1
    var videoType: StreamType = .h264

    mutating func tables(version: UInt8 = 0, extraStreams: [ElementaryStream] = []) {
        let pat = ProgramAssociationTable(
            transportStreamID: 1, version: version, programs: [.init(programNumber: programNumber, pmtPID: pmtPID)])
        bytes += packetizer.packets(section: pat.sectionBytes, pid: 0)
        let pmt = ProgramMapTable(
            programNumber: programNumber, version: version, pcrPID: videoPID,
            streams: [
                ElementaryStream(streamType: videoType, pid: videoPID),
                ElementaryStream(
                    streamType: .aacADTS, pid: audioPID,
                    descriptors: [Descriptor(tag: 0x0A, data: Array("eng".utf8) + [0])]),
            ] + extraStreams)
        bytes += packetizer.packets(section: pmt.sectionBytes, pid: pmtPID)
    }

    /// An H.264 access unit: AUD, (SPS, PPS for keyframes), filler SEI of `padding` bytes, then a slice.
    static func h264AccessUnit(keyframe: Bool, padding: Int = 0) -> [UInt8] {
        var unit: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0]
        if keyframe { unit += [0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1F, 0xAC] + [0, 0, 0, 1, 0x68, 0xEE, 0x3C, 0x80] }
        if padding > 0 { unit += [0, 0, 1, 0x06, 0x05] + Array(repeating: 0x11, count: padding) }
        unit += [0, 0, 1, keyframe ? 0x65 : 0x41, 0x88, 0x84] + Array(repeating: 0x5A, count: 300)
        return unit
    }

    /// An HEVC access unit: AUD, (VPS, SPS for keyframes), prefix SEI of `padding` bytes, then a slice.
    static func hevcAccessUnit(keyframe: Bool, padding: Int = 0) -> [UInt8] {
        var unit: [UInt8] = [0, 0, 0, 1, 35 << 1, 1, 0x50]  // AUD
        if keyframe { unit += [0, 0, 1, 32 << 1, 1, 0x0C] + [0, 0, 1, 33 << 1, 1, 0x01] }
        if padding > 0 { unit += [0, 0, 1, 39 << 1, 1, 0x05] + Array(repeating: 0x11, count: padding) }
        unit += [0, 0, 1, (keyframe ? 19 : 1) << 1, 1, 0xAF] + Array(repeating: 0x3C, count: 200)
        return unit
    }

    /// The access unit ``video(pts:dts:keyframe:padding:)`` writes for ``videoType``.
    func videoUnit(keyframe: Bool, padding: Int = 0) -> [UInt8] {
        videoType == .hevc
            ? Self.hevcAccessUnit(keyframe: keyframe, padding: padding)
            : Self.h264AccessUnit(keyframe: keyframe, padding: padding)
    }

    mutating func video(pts: UInt64, dts: UInt64? = nil, keyframe: Bool, padding: Int = 0) {
        let unit = videoUnit(keyframe: keyframe, padding: padding)
        let header = PESHeader(
            streamID: 0xE0, pts: Timestamp(wrapping: pts), dts: dts.map { Timestamp(wrapping: $0) })
        bytes += packetizer.packets(
            pes: header, payload: unit, pid: videoPID, pcr: PCR(base: (dts ?? pts) &- 9000, extension: 0),
            randomAccess: keyframe)
    }

    mutating func audio(pts: UInt64, frames: Int = 1) {
        var payload: [UInt8] = []
        for _ in 0..<frames {
            // ADTS header: AAC LC, 48 kHz, 2 channels, frame length 7 + 20.
            let length = 27
            payload += [
                0xFF, 0xF1, 0x4C, 0x80 | UInt8(length >> 11), UInt8((length >> 3) & 0xFF),
                UInt8((length & 7) << 5) | 0x1F, 0xFC,
            ]
            payload += Array(repeating: 0x21, count: 20)
        }
        let header = PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: pts))
        bytes += packetizer.packets(pes: header, payload: payload, pid: audioPID)
    }

    /// A typical stream: tables, then `frames` video frames (keyframe every 4) interleaved with audio,
    /// starting at `startPTS` (which may sit just below 2^33 to test the wrap).
    static func typical(frames: Int = 12, startPTS: UInt64 = 90_000, videoType: StreamType = .h264) -> [UInt8] {
        var builder = StreamBuilder()
        builder.videoType = videoType
        builder.tables()
        for frame in 0..<frames {
            if frame == frames / 2 { builder.tables() }
            let dts = startPTS + UInt64(frame) * 3600
            builder.video(pts: dts + 7200, dts: dts, keyframe: frame % 4 == 0, padding: frame == 0 ? 400 : 0)
            builder.audio(pts: startPTS + UInt64(frame) * 1920)
        }
        return builder.bytes
    }
}

/// Splits bytes into M2TS (192) or FEC (204) packets.
func repacketize(_ bytes: [UInt8], size: PacketSize) -> [UInt8] {
    var output: [UInt8] = []
    var index = 0
    var packetNumber: UInt32 = 0
    while index + 188 <= bytes.count {
        if size == .m2ts {
            let timecode = packetNumber &* 1000
            output += [
                UInt8(timecode >> 24) & 0x3F, UInt8(truncatingIfNeeded: timecode >> 16),
                UInt8(truncatingIfNeeded: timecode >> 8), UInt8(truncatingIfNeeded: timecode),
            ]
        }
        output += bytes[index..<(index + 188)]
        if size == .fec { output += Array(repeating: 0xA5, count: 16) }
        index += 188
        packetNumber += 1
    }
    return output
}

/// Demuxes `bytes` in chunks of the given sizes (cycled) and returns every event.
func demux(_ bytes: [UInt8], chunkSizes: [Int]? = nil, options: DemuxOptions = DemuxOptions()) -> [DemuxEvent] {
    var demuxer = Demuxer(options: options)
    var events: [DemuxEvent] = []
    guard let chunkSizes, !chunkSizes.isEmpty else {
        events += demuxer.feed(bytes)
        events += demuxer.finish()
        return events
    }
    var index = 0
    var chunk = 0
    while index < bytes.count {
        let size = max(1, chunkSizes[chunk % chunkSizes.count])
        let end = min(bytes.count, index + size)
        events += demuxer.feed(bytes[index..<end])
        index = end
        chunk += 1
    }
    events += demuxer.finish()
    return events
}

extension [DemuxEvent] {
    var pes: [PESInfo] {
        compactMap { if case .pes(let info) = $0 { info } else { nil } }
    }
    var errors: [MPEGTSError] {
        compactMap { if case .error(let error) = $0 { error } else { nil } }
    }
}
