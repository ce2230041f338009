/// Makes slates: video and silent audio of any duration, on any PIDs, starting at any PTS and continuing given
/// continuity counters, so a slate can stand in for an ad segment on the content's own timeline. The one builder of
/// TS slates: `tsinspect --make-slate` and the ad-stripping proxy both make theirs here.
///
/// Its pictures and sound come from one of two places:
/// - the built-in 0.32 s template (``init()``: 8 frames of black 320x240 H.264 at 25 fps, an IDR and P frames; 15
///   frames of silent AAC at 48 kHz, which last exactly as long), looped and cut at frame boundaries, on a ``Layout``
///   of the caller's choice (``make(durationTicks:startPTS:layout:continuityCounters:)``; for a chain of slates,
///   ``make(durationTicks:startPTS:audioOrigin:layout:continuityCounters:)`` keeps the audio on one frame grid
///   across the slots, so they join with no audio hole);
/// - an anchor segment, the last content segment before an ad break (``init(continuing:)``): its first keyframe
///   repeated at the content's frame interval (every picture an independent IDR, DTS = PTS), silent audio frames
///   on its audio stream (ADTS AAC-LC in channel configurations 1 to 7, mono to 7.1, or AC-3 or E-AC-3 at its own
///   rate, bit rate and layout, ``SilentAC3`` and ``SilentEAC3``; other audio is left out), on its own program (PAT, PMT, PIDs, stream
///   types) with its PCR PID, continuity counters continuing its own, from its first PTS plus an offset
///   (``continuation(durationTicks:offsetTicks:)``), so a player sees one timeline across content, slates and
///   content again. The silent audio continues the anchor's audio frame grid from where the anchor's audio ended:
///   each slot gets the grid's frames that start within it, as segmenters cut content audio, so consecutive slates
///   and the content after them tile the grid (no audio hole, no drift from the video); the first slot also takes
///   the frame that starts less than a frame before it, so it starts where the anchor's audio ended.
///
/// Time stamps are computed from frame indices, so they are continuous across loops and wrap correctly past 2^33.
/// A lone template slate's audio never outlasts its video; in a chain (an audio origin given) and in a continuation,
/// a slot's last frame may end up to a frame after the slot, where the next slot's audio begins.
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

    /// 90 kHz ticks per video frame of the template (25 fps).
    public static let videoFrameTicks: Int64 = 3600
    /// 90 kHz ticks per AAC frame of the template (1024 samples at 48 kHz).
    public static let audioFrameTicks: Int64 = 1920

    /// The video access units in decode order, the first an IDR (an anchor's: its keyframe alone).
    let videoFrames: [[UInt8]]
    /// The audio frames: ADTS AAC, or AC-3 or E-AC-3 sync frames (none: the slate has no audio).
    let audioFrames: [[UInt8]]
    /// 90 kHz ticks per video frame.
    let frameTicks: Int64
    /// The audio's sample rate.
    let sampleRate: Int
    /// Samples per audio frame: 1024 for AAC, 1536 for AC-3 and E-AC-3.
    let samplesPerFrame: Int
    /// Audio frames per PES packet.
    let framesPerPES: Int
    let videoStreamType: StreamType
    let videoStreamID: UInt8
    let audioStreamID: UInt8
    /// The anchor's program, when the builder continues one.
    let anchor: Anchor?
    /// Why the slates carry no audio though the anchor has an audio stream (its codec cannot be given silence
    /// without an encoder: MPEG audio, LATM, ADTS AAC of a profile other than LC, AAC in a layout given by a program
    /// config element, AC-3 in dual mono, E-AC-3 with dependent substreams or at a reduced rate); nil when they carry the anchor's audio or it has none. For a diagnostic.
    public let audioOmitted: String?

    /// What a slate continuing an anchor segment is placed on.
    struct Anchor: Sendable {
        var patSection: [UInt8]
        var pmtSection: [UInt8]
        var pmtPID: UInt16
        var videoPID: UInt16
        var audioPID: UInt16?
        var pcrPID: UInt16
        /// The anchor's first video PTS and first audio PTS.
        var videoStart: Timestamp
        var audioStart: Timestamp
        /// Where the anchor's audio ends: its last audio PES packet's PTS plus that packet's frames.
        var audioEnd: Timestamp
        /// The continuity counters after the anchor's last packets.
        var counters: [UInt16: UInt8]
    }

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
        frameTicks = Self.videoFrameTicks
        sampleRate = 48000
        samplesPerFrame = 1024
        framesPerPES = 1
        videoStreamType = .h264
        videoStreamID = 0xE0
        audioStreamID = 0xC0
        anchor = nil
        audioOmitted = nil
    }

    /// Frames in one loop of the pictures (video frames until the next IDR would be needed).
    var loopFrames: Int { videoFrames.count }

    /// A slate lasting `durationTicks` (rounded to whole video frames, at least one), whose first frame has
    /// `startPTS`. `continuityCounters` (by PID) are continued and updated, so consecutive slates, or a slate after
    /// content, stay continuous. The PAT and PMT open every loop of the pictures.
    public func make(
        durationTicks: Int64, startPTS: Timestamp, layout: Layout = Layout(),
        continuityCounters: inout [UInt16: UInt8]
    ) -> [UInt8] {
        let audioCount = audioFrames.isEmpty ? 0 : audioFrameCount(in: Int64(videoCount(durationTicks)) * frameTicks)
        return make(
            durationTicks: durationTicks, startPTS: startPTS, audio: (startPTS, 0, audioCount), layout: layout,
            continuityCounters: &continuityCounters)
    }

    /// A slate of a chain whose silent audio runs on one frame grid from `audioOrigin` (the first slate's
    /// `startPTS`), as ``make(durationTicks:startPTS:layout:continuityCounters:)`` otherwise: the slot
    /// `startPTS ..< startPTS + durationTicks` gets the grid's frames that start within it, as segmenters cut
    /// content audio. Consecutive slots (each starting where the one before ended) then tile the grid: no audio hole
    /// at a join and no drift over a long chain; a slot's last frame may end up to a frame after the slot, where
    /// the next slot's audio begins. A slot that starts before `audioOrigin` has its audio from there.
    public func make(
        durationTicks: Int64, startPTS: Timestamp, audioOrigin: Timestamp, layout: Layout = Layout(),
        continuityCounters: inout [UInt16: UInt8]
    ) -> [UInt8] {
        let fromOrigin = audioOrigin.distance(to: startPTS)
        let first = audioFramesStarting(before: fromOrigin)
        let last = max(first, audioFramesStarting(before: fromOrigin + max(0, durationTicks)))
        return make(
            durationTicks: durationTicks, startPTS: startPTS,
            audio: (audioOrigin, first, audioFrames.isEmpty ? 0 : last - first), layout: layout,
            continuityCounters: &continuityCounters)
    }

    /// A template slate with the audio grid's origin, the first frame's index on it and the frame count given.
    private func make(
        durationTicks: Int64, startPTS: Timestamp, audio: (origin: Timestamp, first: Int, count: Int),
        layout: Layout, continuityCounters: inout [UInt16: UInt8]
    ) -> [UInt8] {
        let pat = ProgramAssociationTable(
            transportStreamID: layout.transportStreamID,
            programs: [.init(programNumber: layout.programNumber, pmtPID: layout.pmtPID)])
        let pmt = ProgramMapTable(
            programNumber: layout.programNumber, pcrPID: layout.videoPID,
            streams: [
                ElementaryStream(streamType: videoStreamType, pid: layout.videoPID),
                ElementaryStream(streamType: .aacADTS, pid: layout.audioPID),
            ])
        let placement = Placement(
            tables: [(pat.sectionBytes, 0), (pmt.sectionBytes, layout.pmtPID)], tablesEveryLoop: true,
            videoPID: layout.videoPID, audioPID: layout.audioPID, pcrPID: layout.videoPID, pcrLead: 9000,
            videoStart: startPTS, audioStart: audio.origin, audioFirst: audio.first, audioCount: audio.count,
            videoCount: videoCount(durationTicks))
        return write(placement, continuityCounters: &continuityCounters)
    }

    /// The video frames a slate of `durationTicks` has: rounded to whole frames, at least one.
    private func videoCount(_ durationTicks: Int64) -> Int {
        max(1, Int((durationTicks + frameTicks / 2) / frameTicks))
    }

    /// Where and when a slate's packets go.
    private struct Placement {
        var tables: [(section: [UInt8], pid: UInt16)]
        /// Whether the tables open every loop of the pictures (else only the slate).
        var tablesEveryLoop: Bool
        var videoPID: UInt16
        var audioPID: UInt16?
        var pcrPID: UInt16
        /// How far a PCR runs ahead of the PTS it goes with (90 kHz ticks).
        var pcrLead: Int64
        var videoStart: Timestamp
        /// The origin of the audio frame grid: frame `n` starts `audioTicks(n)` after it.
        var audioStart: Timestamp
        /// The grid index of the slate's first audio frame, and how many frames it has.
        var audioFirst: Int
        var audioCount: Int
        var videoCount: Int
    }

    /// Whole audio frames in `ticks` (rounded down; none for a negative span).
    private func audioFrameCount(in ticks: Int64) -> Int {
        ticks <= 0 ? 0 : Int(ticks * Int64(sampleRate) / (Int64(samplesPerFrame) * 90_000))
    }

    /// How many frames of a grid start before `ticks` after its origin (none for a span of zero or less).
    private func audioFramesStarting(before ticks: Int64) -> Int {
        let frame = Int64(samplesPerFrame) * 90_000
        return ticks <= 0 ? 0 : Int((ticks * Int64(sampleRate) + frame - 1) / frame)
    }

    /// 90 kHz ticks from the first audio frame to the `index`th.
    private func audioTicks(_ index: Int) -> Int64 {
        Int64((Double(index) * Double(samplesPerFrame) * 90_000 / Double(sampleRate)).rounded())
    }

    /// Writes a slate: video frames and audio PES packets interleaved in time order (video first at equal times).
    private func write(_ placement: Placement, continuityCounters: inout [UInt16: UInt8]) -> [UInt8] {
        var packetizer = Packetizer(continuityCounters: continuityCounters)
        let audioPID = audioFrames.isEmpty ? nil : placement.audioPID
        let audioCount = audioPID == nil ? 0 : placement.audioCount
        let audioPackets = (audioCount + framesPerPES - 1) / framesPerPES
        var output: [UInt8] = []
        output.reserveCapacity(placement.videoCount * ((videoFrames.first?.count ?? 0) + 400))
        let writeTables = { (output: inout [UInt8], packetizer: inout Packetizer) in
            for table in placement.tables { output += packetizer.packets(section: table.section, pid: table.pid) }
        }
        if !placement.tablesEveryLoop { writeTables(&output, &packetizer) }
        var video = 0
        var audio = 0
        while video < placement.videoCount || audio < audioPackets {
            let videoPTS = placement.videoStart.advanced(by: Int64(video) * frameTicks)
            let audioPTS = placement.audioStart.advanced(by: audioTicks(placement.audioFirst + audio * framesPerPES))
            if video < placement.videoCount && (audio >= audioPackets || videoPTS.distance(to: audioPTS) >= 0) {
                let frame = video % loopFrames
                if placement.tablesEveryLoop && frame == 0 { writeTables(&output, &packetizer) }
                let pcr =
                    placement.pcrPID == placement.videoPID
                    ? PCR(base: videoPTS.advanced(by: -placement.pcrLead).value, extension: 0) : nil
                output += packetizer.packets(
                    pes: PESHeader(streamID: videoStreamID, pts: videoPTS, dataAlignment: true),
                    payload: videoFrames[frame], pid: placement.videoPID, pcr: pcr, randomAccess: frame == 0)
                video += 1
            } else if let audioPID {
                let first = audio * framesPerPES
                var payload: [UInt8] = []
                for index in first..<min(first + framesPerPES, audioCount) {
                    payload += audioFrames[index % audioFrames.count]
                }
                let pcr =
                    audioPID == placement.pcrPID && audioPID != placement.videoPID
                    ? PCR(base: audioPTS.advanced(by: -placement.pcrLead).value, extension: 0) : nil
                output += packetizer.packets(
                    pes: PESHeader(streamID: audioStreamID, pts: audioPTS, dataAlignment: true), payload: payload,
                    pid: audioPID, pcr: pcr)
                audio += 1
            }
        }
        continuityCounters = packetizer.continuityCounters
        return output
    }
}

// MARK: Slates that continue an anchor segment

extension SlateBuilder {
    /// Silent AAC-LC raw data blocks (one 1024-sample frame), by MPEG-4 channel configuration (ISO/IEC 14496-3
    /// 1.6.3.5): 1 mono, 2 stereo, 3 to 7 the 3.0, 4.0, 5.0, 5.1 and 7.1 layouts. Each is that configuration's
    /// elements in order (SCE for a single channel, CPE for a pair, LFE), every one with one scale factor band of
    /// the zero codebook (no spectral data, so silence), their instance tags counted per element type, then END.
    /// The one table of silent frames: FragmentedMP4's slates put the same raw blocks in their `mdat`.
    public static let silentAAC: [Int: [UInt8]] = [
        1: [0x00, 0xC8, 0x00, 0x80, 0x23, 0x80],
        2: [0x21, 0x00, 0x49, 0x90, 0x02, 0x19, 0x00, 0x23, 0x80],
        3: [0x00, 0xC8, 0x00, 0x80, 0x20, 0x84, 0x01, 0x26, 0x40, 0x08, 0x64, 0x00, 0x8E],
        4: [
            0x00, 0xC8, 0x00, 0x80, 0x20, 0x84, 0x01, 0x26, 0x40, 0x08, 0x64, 0x00, 0x80, 0x2C, 0x80, 0x08, 0x02, 0x38,
        ],
        5: [
            0x00, 0xC8, 0x00, 0x80, 0x20, 0x84, 0x01, 0x26, 0x40, 0x08, 0x64, 0x00, 0x82, 0x30, 0x04, 0x99, 0x00, 0x21,
            0x90, 0x02, 0x38,
        ],
        6: [
            0x00, 0xC8, 0x00, 0x80, 0x20, 0x84, 0x01, 0x26, 0x40, 0x08, 0x64, 0x00, 0x82, 0x30, 0x04, 0x99, 0x00, 0x21,
            0x90, 0x02, 0x18, 0x32, 0x00, 0x20, 0x08, 0xE0,
        ],
        7: [
            0x00, 0xC8, 0x00, 0x80, 0x20, 0x84, 0x01, 0x26, 0x40, 0x08, 0x64, 0x00, 0x82, 0x30, 0x04, 0x99, 0x00, 0x21,
            0x90, 0x02, 0x09, 0x40, 0x12, 0x64, 0x00, 0x86, 0x40, 0x08, 0x60, 0xC8, 0x00, 0x80, 0x23, 0x80,
        ],
    ]
    /// Names of audio codecs for diagnostics, by ``Codec/name``.
    static let audioNames = ["ac3": "AC-3", "eac3": "E-AC-3", "mp2": "MPEG audio", "aac_latm": "AAC in LATM"]
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// A builder of slates that continue `anchor`, the last content segment before an ad break: its first keyframe
    /// at its frame interval (the most common PTS step between its pictures in display order; 3003 ticks when it has
    /// one picture), silent audio on its first audio stream when that is ADTS AAC-LC in a channel configuration from 1
    /// (mono) to 7 (7.1), AC-3 (any rate, bit rate and layout but dual mono) or E-AC-3 (one independent substream
    /// at 48, 44.1 or 32 kHz, mono to 5.1), its program and PIDs.
    /// Throws when the segment has no PAT, no PMT, no H.264 or HEVC stream or no keyframe on it.
    public init(continuing anchor: [UInt8]) throws(MPEGTSError) {
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
        var pat: ProgramAssociationTable?
        var pmt: (table: ProgramMapTable, pid: UInt16)?
        var packets: [UInt16: [PESPacket]] = [:]
        // Per PID, where its ADTS or AC-3 audio ends (latest PES PTS plus its frames' duration), every PES counted.
        var audioEnds: [UInt16: Timestamp] = [:]
        let handle: (DemuxEvent) -> Void = { event in
            switch event {
            case .programAssociation(let table, _): if pat == nil { pat = table }
            case .programMap(let table, let pid, _): if pmt == nil { pmt = (table, pid) }
            case .pesPacket(let packet):
                if packets[packet.info.pid, default: []].count < 2000 {
                    packets[packet.info.pid, default: []].append(packet)
                }
                if let pts = packet.info.pts,
                    let codec = pmt?.table.streams.first(where: { $0.pid == packet.info.pid })?.codec,
                    codec == .aac || codec == .ac3 || codec == .eac3,
                    let ticks = AudioFrames.ticks(codec: codec, payload: packet.payload),
                    audioEnds[packet.info.pid].map({ $0.distance(to: pts.advanced(by: ticks)) > 0 }) ?? true
                {
                    audioEnds[packet.info.pid] = pts.advanced(by: ticks)
                }
            default: break
            }
        }
        demuxer.feed(anchor, handle)
        demuxer.finish(handle)
        guard let pat, let pmt else {
            throw MPEGTSError(.invalidValue, "the anchor segment has no PAT and PMT to continue")
        }
        let videoStream = pmt.table.streams.first { $0.codec == .h264 || $0.codec == .hevc }
        guard let video = videoStream, let videoPackets = packets[video.pid], !videoPackets.isEmpty else {
            throw MPEGTSError(.invalidValue, "the anchor segment has no H.264 or HEVC pictures")
        }
        guard let key = videoPackets.first(where: \.info.isKeyframe),
            let firstPTS = Self.earliestPTS(videoPackets)
        else {
            throw MPEGTSError(.invalidValue, pid: video.pid, "the anchor segment has no keyframe with a PTS")
        }

        // The content's frame interval: the most common PTS step between consecutive pictures in display order.
        let times = videoPackets.compactMap { $0.info.pts }.map { firstPTS.distance(to: $0) }.sorted()
        var steps: [Int64: Int] = [:]
        for (a, b) in zip(times, times.dropFirst()) where b > a && b - a < 9000 { steps[b - a, default: 0] += 1 }
        frameTicks = steps.max { $0.value < $1.value || $0.value == $1.value && $0.key > $1.key }?.key ?? 3003

        // Audio: silent ADTS frames on the first AAC stream when it is AAC-LC in a channel configuration with a
        // silent frame (1 to 7), else silent AC-3 (or E-AC-3) frames on the first such stream, like its own.
        var audioPID: UInt16?
        var audioStart = firstPTS
        var audioEnd = firstPTS
        var frames: [[UInt8]] = []
        var rate = 48000
        var frameSamples = 1024
        var audioStreamID: UInt8 = 0xC0
        if let stream = pmt.table.streams.first(where: { $0.codec == .aac }), let first = packets[stream.pid]?.first,
            first.payload.count >= 7, first.payload[0] == 0xFF, first.payload[1] & 0xF0 == 0xF0,
            let audioPTS = first.info.pts
        {
            let header = first.payload
            let profile = header[2] >> 6
            let rateIndex = Int((header[2] >> 2) & 0x0F)
            let channels = Int((header[2] & 0x01) << 2 | header[3] >> 6)
            if profile == 1, rateIndex < Self.sampleRates.count, let silent = Self.silentAAC[channels] {
                audioPID = stream.pid
                audioStreamID = first.header.streamID
                audioStart = audioPTS
                audioEnd = audioEnds[stream.pid] ?? audioPTS
                rate = Self.sampleRates[rateIndex]
                let length = 7 + silent.count
                let adts: [UInt8] = [
                    0xFF, 0xF1, header[2], (header[3] & 0xC0) | UInt8(length >> 11 & 0x03), UInt8(length >> 3 & 0xFF),
                    UInt8((length & 7) << 5) | 0x1F, 0xFC,
                ]
                frames = [adts + silent]
            }
        }
        // The first AC-3 stream, else the first E-AC-3 stream: a silent frame of its own format (1536 samples).
        for codec in [Codec.ac3, .eac3] where audioPID == nil {
            guard let stream = pmt.table.streams.first(where: { $0.codec == codec }),
                let first = packets[stream.pid]?.first, let audioPTS = first.info.pts,
                let (silent, formatRate) = Self.silentDolbyFrame(codec, header: first.payload)
            else { continue }
            audioPID = stream.pid
            audioStreamID = first.header.streamID
            audioStart = audioPTS
            audioEnd = audioEnds[stream.pid] ?? audioPTS
            rate = formatRate
            frameSamples = 1536
            frames = [silent]
        }
        if audioPID == nil, let other = pmt.table.streams.first(where: { $0.codec.kind == .audio }) {
            var codec = Self.audioNames[other.codec.name] ?? other.codec.name
            if other.codec == .ac3 { codec = "AC-3 in dual mono or without a readable sync frame" }
            if other.codec == .eac3 {
                codec = "E-AC-3 with dependent substreams, in dual mono, at a reduced sample rate or unreadable"
            }
            if other.codec == .aac, let first = packets[other.pid]?.first, first.payload.count >= 4 {
                let header = first.payload
                let profile = header[2] >> 6
                let configuration = (header[2] & 0x01) << 2 | header[3] >> 6
                codec =
                    profile != 1
                    ? "AAC of ADTS profile \(profile) (not LC)"
                    : configuration == 0 ? "AAC-LC with a program config element layout" : "AAC"
            }
            audioOmitted =
                "the anchor's audio (PID \(other.pid)) is \(codec): slates carry no audio (silence for it needs an "
                + "encoder)"
        } else {
            audioOmitted = nil
        }
        videoFrames = [key.payload]
        audioFrames = frames
        sampleRate = rate
        samplesPerFrame = frameSamples
        // Five frames per PES, as muxers commonly do.
        framesPerPES = 5
        videoStreamType = video.streamType
        videoStreamID = key.header.streamID
        self.audioStreamID = audioStreamID
        self.anchor = Anchor(
            patSection: pat.sectionBytes, pmtSection: pmt.table.sectionBytes, pmtPID: pmt.pid, videoPID: video.pid,
            audioPID: audioPID, pcrPID: pmt.table.pcrPID, videoStart: firstPTS, audioStart: audioStart,
            audioEnd: audioEnd, counters: TSRewriter.continuityCounters(following: anchor))
    }

    /// A slate lasting `durationTicks` (rounded to whole frames, at least one) that starts `offsetTicks` after the
    /// anchor's first PTS (the anchor's duration and any slates between), on the anchor's program, its continuity
    /// counters continuing the anchor's. Nil for a builder made from a template.
    public func continuation(durationTicks: Int64, offsetTicks: Int64) -> [UInt8]? {
        guard let anchor else { return nil }
        let start = anchor.videoStart.advanced(by: offsetTicks)
        // The audio continues the anchor's frame grid from the anchor's audio end: this slot's frames are those
        // that start within it (so consecutive slots, and the content after them, tile the grid); a slot that
        // starts less than a frame after the anchor's audio end is the first and begins right there.
        let fromEnd = anchor.audioEnd.distance(to: start)
        let first = audioFrameCount(in: fromEnd) == 0 ? 0 : audioFramesStarting(before: fromEnd)
        let last = max(first, audioFramesStarting(before: fromEnd + durationTicks))
        let placement = Placement(
            tables: [(anchor.patSection, 0), (anchor.pmtSection, anchor.pmtPID)], tablesEveryLoop: false,
            videoPID: anchor.videoPID, audioPID: anchor.audioPID, pcrPID: anchor.pcrPID, pcrLead: 63_000,
            videoStart: start, audioStart: anchor.audioEnd, audioFirst: first, audioCount: last - first,
            videoCount: videoCount(durationTicks))
        var counters = anchor.counters
        return write(placement, continuityCounters: &counters)
    }

    /// A silent sync frame in the format of the AC-3 or E-AC-3 frame that starts `header`, and its sample rate; nil
    /// when it is not one a slate can carry (E-AC-3 with a dependent substream among them).
    static func silentDolbyFrame(_ codec: Codec, header: [UInt8]) -> (frame: [UInt8], sampleRate: Int)? {
        if codec == .ac3, let format = SilentAC3(header: header), let frame = format.frame,
            let rate = format.sampleRate
        {
            return (frame, rate)
        }
        if codec == .eac3, let format = SilentEAC3(header: header), !hasDependentSubstream(header),
            let frame = format.frame, let rate = format.sampleRate
        {
            return (frame, rate)
        }
        return nil
    }

    /// Whether an E-AC-3 PES payload has a dependent substream frame (strmtyp 1: channels beyond 5.1, which a
    /// slate's independent frames alone would not have). Up to 16 frames are looked at.
    static func hasDependentSubstream(_ payload: [UInt8]) -> Bool {
        var index = 0
        for _ in 0..<16 {
            guard let frame = AudioFrames.ac3(payload, at: index), index + 2 < payload.count else { return false }
            if payload[index + 2] >> 6 == 1 { return true }
            index += frame.length
        }
        return false
    }

    /// The earliest PTS of a stream's packets (wrap-aware).
    static func earliestPTS(_ packets: [PESPacket]) -> Timestamp? {
        var best: Timestamp?
        for p in packets {
            guard let pts = p.info.pts else { continue }
            if let b = best, b.distance(to: pts) >= 0 { continue }
            best = pts
        }
        return best
    }
}
