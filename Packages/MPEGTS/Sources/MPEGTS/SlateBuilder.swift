/// Makes slates: black video and silent audio of any duration, on any PIDs, starting at any PTS and continuing
/// given continuity counters, so a slate can stand in for an ad segment on the content's own timeline.
///
/// The slate is made from a built-in 0.32 s template (8 frames of 320x240 H.264 at 25 fps, an IDR and P frames;
/// 15 frames of silent AAC at 48 kHz, which last exactly as long), looped and cut at frame boundaries. Time
/// stamps are computed from frame indices, so they are continuous across loops and wrap correctly past 2^33.
public struct SlateBuilder: Sendable {
    /// Where the slate's program goes.
    public struct Layout: Hashable, Sendable {
        public var transportStreamID: UInt16
        public var programNumber: UInt16
        public var pmtPID: UInt16
        public var videoPID: UInt16
        public var audioPID: UInt16

        public init(
            transportStreamID: UInt16 = 1, programNumber: UInt16 = 1, pmtPID: UInt16 = 0x1000,
            videoPID: UInt16 = 0x100, audioPID: UInt16 = 0x101
        ) {
            self.transportStreamID = transportStreamID
            self.programNumber = programNumber
            self.pmtPID = pmtPID
            self.videoPID = videoPID
            self.audioPID = audioPID
        }
    }

    /// 90 kHz ticks per video frame (25 fps).
    public static let videoFrameTicks: Int64 = 3600
    /// 90 kHz ticks per AAC frame (1024 samples at 48 kHz).
    public static let audioFrameTicks: Int64 = 1920

    /// The template's video access units in decode order, the first an IDR.
    let videoFrames: [[UInt8]]
    /// The template's ADTS frames.
    let audioFrames: [[UInt8]]

    /// Decodes the built-in template.
    public init() throws(MPEGTSError) {
        guard let bytes = Base64.decode(SlateTemplate.base64) else {
            throw MPEGTSError(.invalidValue, "slate template is not base64")
        }
        try self.init(template: bytes)
    }

    /// Uses another template: MPEG-TS with one H.264 stream (starting with an IDR, no B frames, 25 fps) and one
    /// ADTS AAC stream at 48 kHz.
    public init(template: [UInt8]) throws(MPEGTSError) {
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
        var packets: [PESPacket] = []
        var codecs: [UInt16: Codec] = [:]
        let handle: (DemuxEvent) -> Void = { event in
            switch event {
            case .pesPacket(let packet): packets.append(packet)
            case .programMap(let table, _, _): for stream in table.streams { codecs[stream.pid] = stream.codec }
            default: break
            }
        }
        demuxer.feed(template, handle)
        demuxer.finish(handle)
        let video = packets.filter { codecs[$0.info.pid] == .h264 }.map(\.payload)
        var audio: [[UInt8]] = []
        for packet in packets where codecs[packet.info.pid] == .aac {
            var index = 0
            let payload = packet.payload
            while index + 7 <= payload.count, payload[index] == 0xFF, payload[index + 1] & 0xF0 == 0xF0 {
                let length =
                    Int(payload[index + 3] & 0x03) << 11 | Int(payload[index + 4]) << 3 | Int(payload[index + 5] >> 5)
                guard length >= 7, index + length <= payload.count else { break }
                audio.append(Array(payload[index..<(index + length)]))
                index += length
            }
        }
        guard let first = video.first, !audio.isEmpty else {
            throw MPEGTSError(.invalidValue, "slate template needs H.264 video and ADTS audio")
        }
        var scanner = KeyframeScanner(syntax: .h264)
        first.withUnsafeBytes { scanner.scan($0) }
        guard case .keyframe = scanner.result else {
            throw MPEGTSError(.invalidValue, "slate template must start with an IDR frame")
        }
        videoFrames = video
        audioFrames = audio
    }

    /// Frames in one loop of the template (video frames until the next IDR would be needed).
    var loopFrames: Int { videoFrames.count }

    /// A slate lasting `durationTicks` (rounded to whole video frames, at least one), whose first frame has
    /// `startPTS`. `continuityCounters` (by PID) are continued and updated, so consecutive slates, or a slate after
    /// content, stay continuous.
    public func make(
        durationTicks: Int64, startPTS: Timestamp, layout: Layout = Layout(),
        continuityCounters: inout [UInt16: UInt8]
    ) -> [UInt8] {
        var packetizer = Packetizer(continuityCounters: continuityCounters)
        let videoCount = max(1, Int((durationTicks + Self.videoFrameTicks / 2) / Self.videoFrameTicks))
        let totalTicks = Int64(videoCount) * Self.videoFrameTicks
        let audioCount = Int(totalTicks / Self.audioFrameTicks)  // audio never outlasts the video
        let pat = ProgramAssociationTable(
            transportStreamID: layout.transportStreamID,
            programs: [.init(programNumber: layout.programNumber, pmtPID: layout.pmtPID)])
        let pmt = ProgramMapTable(
            programNumber: layout.programNumber, pcrPID: layout.videoPID,
            streams: [
                ElementaryStream(streamType: .h264, pid: layout.videoPID),
                ElementaryStream(streamType: .aacADTS, pid: layout.audioPID),
            ])
        var output: [UInt8] = []
        var video = 0
        var audio = 0
        while video < videoCount || audio < audioCount {
            let videoTime = Int64(video) * Self.videoFrameTicks
            let audioTime = Int64(audio) * Self.audioFrameTicks
            if video < videoCount && (audio >= audioCount || videoTime <= audioTime) {
                let frame = video % loopFrames
                if frame == 0 {
                    output += packetizer.packets(section: pat.sectionBytes, pid: 0)
                    output += packetizer.packets(section: pmt.sectionBytes, pid: layout.pmtPID)
                }
                let pts = startPTS.advanced(by: videoTime)
                output += packetizer.packets(
                    pes: PESHeader(streamID: 0xE0, pts: pts, dataAlignment: true), payload: videoFrames[frame],
                    pid: layout.videoPID, pcr: PCR(base: pts.advanced(by: -9000).value, extension: 0),
                    randomAccess: frame == 0)
                video += 1
            } else {
                let frame = audioFrames[audio % audioFrames.count]
                output += packetizer.packets(
                    pes: PESHeader(streamID: 0xC0, pts: startPTS.advanced(by: audioTime), dataAlignment: true),
                    payload: frame, pid: layout.audioPID)
                audio += 1
            }
        }
        continuityCounters = packetizer.continuityCounters
        return output
    }
}
