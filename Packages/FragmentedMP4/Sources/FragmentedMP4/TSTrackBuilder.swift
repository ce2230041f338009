// The bridge from MPEG-TS to fragmented MP4 (the TS*.swift files are the only ones in this package that import MPEGTS):
// the PES packets of one elementary stream become the samples of one track.
public import MPEGTS

/// A 90 kHz media timeline through 33-bit PTS/DTS wraps: a time stamp maps to the media time nearest to an
/// anchor, so decode times keep increasing where the time stamps wrap.
public struct TSTimeline: Hashable, Sendable {
    /// A time stamp whose media time is known.
    public var anchor: Timestamp
    /// The media time of `anchor`, in 90 kHz ticks.
    public var anchorTime: Int64

    public init(anchor: Timestamp, anchorTime: Int64) {
        self.anchor = anchor
        self.anchorTime = anchorTime
    }

    /// The timeline of a file whose first time stamp is `first`: media time ≡ PTS (mod 2^33), starting at the
    /// first time stamp's value, or 2^33 above it when that is under 10 s, so that decode times before the first
    /// presentation time (B-frames) are never negative.
    public init(firstTimestamp first: Timestamp) {
        anchor = first
        let value = Int64(first.value)
        anchorTime = value < 10 * Timestamp.ticksPerSecond ? value + Int64(Timestamp.modulus) : value
    }

    /// The media time of `timestamp` in 90 kHz ticks (the one within 2^32 ticks of the anchor), at least 0.
    public func time(_ timestamp: Timestamp) -> Int64 {
        max(0, anchorTime + anchor.distance(to: timestamp))
    }

    /// The media time of `timestamp` in `timescale` ticks, rounded to the nearest.
    public func time(_ timestamp: Timestamp, timescale: UInt32) -> UInt64 {
        UInt64(Self.rescale(time(timestamp), to: timescale))
    }

    /// `ticks` of `timescale` in 90 kHz ticks.
    static func rescale(_ ticks: Int64, from timescale: UInt32) -> Int64 {
        timescale == 90_000 || timescale == 0 ? ticks : ticks * 90_000 / Int64(timescale)
    }

    static func rescale(_ ticks: Int64, to timescale: UInt32) -> Int64 {
        if timescale == 90_000 { return ticks }
        let scale = Int64(timescale)
        return (ticks / 90_000) * scale + ((ticks % 90_000) * scale + 45_000) / 90_000
    }
}

/// The samples of one elementary stream, gathered from its PES packets: video access units (Annex-B to
/// length-prefixed NAL units, delimiters and for HEVC parameter sets left out), or audio frames split one per
/// sample (ADTS headers left out; for LATM, the raw access units). The sample entry comes from the stream's own
/// parameter sets, frame headers or StreamMuxConfig.
public struct TSTrackBuilder: Sendable {
    /// The kinds of stream the bridge carries.
    public enum Kind: Hashable, Sendable {
        case video(NALSyntax)
        case audio(AudioFrameFormat)
    }

    struct AccessUnit: Sendable {
        var pts: Timestamp
        var dts: Timestamp
        var bytes: [UInt8]
        var keyframe: Bool
        /// The PES's offset, as the demuxer counts it.
        var offset: Int64
    }

    struct AudioFrame: Sendable {
        var data: [UInt8]
        var samples: Int
        /// The PES's time stamp and the samples before this frame in that PES; nil before any time stamp.
        var pts: Timestamp?
        var samplesBefore: Int
    }

    public let pid: UInt16
    public let kind: Kind
    /// The track's sample entry values, once the stream showed them (parameter sets, or a first frame header).
    public internal(set) var codec: TrackCodec? {
        didSet {
            // Set from an earlier pass, a LATM configuration also serves the frames before the range's first
            // StreamMuxConfig.
            if case .audio(.latm) = kind, loas.configuration == nil, case .aac(let config) = codec,
                let bytes = config.carriedBytes, let seeded = try? LOASReader(audioSpecificConfig: bytes)
            {
                loas = seeded
            }
        }
    }
    /// For video: the caption services (CEA-608, CEA-708) its SEI carried.
    public private(set) var captions: CaptionServices = []
    /// For video: whether an SEI carried CEA-608/708 captions.
    public var hasCaptions: Bool { !captions.isEmpty }
    /// Frames, or pictures, dropped because they could not be read.
    public internal(set) var droppedBytes = 0
    /// Whether HEVC parameter sets and audio frame headers are compared with the sample entry (for one
    /// file, whose one entry per track must hold for every sample); off by default. H.264 is not compared: its
    /// samples keep their parameter sets in band (`avc1`), so a decoder meets new ones where they change.
    public var detectsConfigurationChanges = false
    /// With ``detectsConfigurationChanges``: the offset (as the demuxer counts it) of the first PES whose parameter
    /// sets or audio configuration differ from the sample entry's (for video, known once its fragment is taken).
    public internal(set) var configurationChange: Int64?
    /// Audio frames left out because their header's configuration differs from the sample entry's (with
    /// ``detectsConfigurationChanges`` as well: the first one's PES is ``configurationChange``).
    public internal(set) var otherConfigurationFrames = 0
    /// Whether the last independent audio frame was left out (its dependent frames go with it).
    var droppingFrame = false
    /// The samples of the frames left out since the last frame kept in this fragment: once a frame follows them, the
    /// frame before the gap lasts their time too, so that the frames after it keep theirs (inside a fragment audio
    /// runs on frame by frame). A gap at a fragment's start or end needs none: each fragment starts at its first
    /// frame's own time, and the previous range's last frame does not stretch over the next range's frames.
    var gapSamples = 0

    var units: [AccessUnit] = []
    var frames: [AudioFrame] = []
    var carry: [UInt8] = []
    var carryPTS: Timestamp?
    var carrySamplesBefore = 0
    /// For LATM: the reader, which keeps the last StreamMuxConfig.
    var loas = LOASReader()
    /// For LATM: the first error met reading a frame (its offset the PES's), so that a stream none of whose frames
    /// reads is reported with the reason.
    public internal(set) var frameError: MPEGTSError?
    var sps: [[UInt8]] = []
    var pps: [[UInt8]] = []
    var vps: [[UInt8]] = []
    var inspected = 0
    /// Whether pictures are searched for caption SEI: not once the sample entry was set from an earlier pass
    /// (which found the captions, if any).
    var searchesCaptions = true
    /// What the fragments taken so far ended with, so that the next one follows on: whether a sync sample was
    /// given (pictures before the first one are dropped), the last decode time and duration given (in the track's
    /// timescale), and the shift that closes up the time stamp resets met so far.
    var gaveSync = false
    var lastDecodeTime: Int64?
    var lastDuration: Int64 = 0
    var shift: Int64 = 0
    /// How many pictures are searched for caption SEI.
    static let captionSearchPictures = 250

    /// A builder for the stream on `pid` with `codec`; throws ``FragmentedMP4Error/Code/unsupportedCodec`` naming
    /// the PID for a codec fragmented MP4 cannot carry here (MPEG-1/2 and MPEG-4 part 2 video, data).
    public init(pid: UInt16, codec: Codec) throws(FragmentedMP4Error) {
        self.pid = pid
        switch codec {
        case .h264: kind = .video(.h264)
        case .hevc: kind = .video(.hevc)
        case .aac: kind = .audio(.adts)
        case .ac3: kind = .audio(.ac3)
        case .eac3: kind = .audio(.eac3)
        case .mpegAudio: kind = .audio(.mpegAudio)
        case .aacLATM: kind = .audio(.latm)
        default:
            throw FragmentedMP4Error(
                .unsupportedCodec, "PID \(pid) (\(codec.name)): this codec cannot be carried in fragmented MP4")
        }
    }

    /// Whether the builder can carry `codec`.
    public static func carries(_ codec: Codec) -> Bool {
        [.h264, .hevc, .aac, .ac3, .eac3, .mpegAudio, .aacLATM].contains(codec)
    }

    public var isVideo: Bool {
        if case .video = kind { return true }
        return false
    }

    /// The media timescale: 90 kHz for video, the sample rate for audio (48 kHz until a frame was seen).
    public var timescale: UInt32 { codec?.timescale ?? (isVideo ? 90_000 : 48_000) }

    /// Adds one PES packet's payload.
    public mutating func append(_ packet: PESPacket) {
        switch kind {
        case .video(let syntax): appendVideo(packet, syntax: syntax)
        case .audio(let format): appendAudio(packet, format: format)
        }
    }

    /// Whether samples are waiting.
    public var isEmpty: Bool { units.isEmpty && frames.isEmpty }

    mutating func appendVideo(_ packet: PESPacket, syntax: NALSyntax) {
        guard let pts = packet.info.pts ?? packet.info.dts else {
            // A PES without time stamps continues the access unit before it.
            if !units.isEmpty { units[units.count - 1].bytes += packet.payload }
            return
        }
        units.append(
            AccessUnit(
                pts: pts, dts: packet.info.dts ?? pts, bytes: packet.payload, keyframe: packet.info.isKeyframe,
                offset: packet.info.offset))
        // Parameter sets until the sample entry is known; captions are looked for in the first pictures only (each
        // look is a second pass over the picture).
        inspected += 1
        if codec == nil
            || (searchesCaptions && captions != [.cea608, .cea708] && inspected <= Self.captionSearchPictures)
        {
            inspect(packet.payload, syntax: syntax)
        }
    }

    /// Collects parameter sets until the sample entry can be built; looks for captions.
    mutating func inspect(_ payload: [UInt8], syntax: NALSyntax) {
        for unit in AnnexB.units(payload) {
            guard let type = syntax.type(of: unit) else { continue }
            if codec == nil {
                let bytes = Array(unit)
                switch (syntax, type) {
                case (.h264, 7), (.hevc, 33): if !sps.contains(bytes) { sps.append(bytes) }
                case (.h264, 8), (.hevc, 34): if !pps.contains(bytes) { pps.append(bytes) }
                case (.hevc, 32): if !vps.contains(bytes) { vps.append(bytes) }
                default: break
                }
            }
            if captions != [.cea608, .cea708], syntax.isSEI(type) {
                captions.formUnion(AnnexB.captionServices(sei: unit, syntax: syntax))
            }
        }
        guard codec == nil, !sps.isEmpty, !pps.isEmpty, syntax == .h264 || !vps.isEmpty else { return }
        let details = CodecDetails.parse(
            codec: syntax == .h264 ? .h264 : .hevc, payload: sps.flatMap { [0, 0, 1] + $0 })
        let width = UInt16(clamping: details?.width ?? 0)
        let height = UInt16(clamping: details?.height ?? 0)
        let candidate: TrackCodec =
            syntax == .h264
            ? .avc(sps: sps, pps: pps, width: width, height: height)
            : .hevc(vps: vps, sps: sps, pps: pps, width: width, height: height)
        if (try? candidate.sampleEntry()) != nil { codec = candidate }
    }

    mutating func appendAudio(_ packet: PESPacket, format: AudioFrameFormat) {
        if format == .latm { return appendLATM(packet) }
        let bytes = carry.isEmpty ? packet.payload : carry + packet.payload
        let carried = carry.count
        carry = []
        var position = 0
        var samplesBefore = 0
        while position < bytes.count {
            guard let header = AudioFrameHeader.parse(format, bytes, at: position) else {
                // Not a frame start: could it be one whose header is cut by the end of the PES?
                if bytes.count - position < 9, bytes[position] == 0xFF || bytes[position] == 0x0B { break }
                position += 1
                droppedBytes += 1
                continue
            }
            guard position + header.length <= bytes.count else { break }
            // A frame cut by the previous PES keeps that PES's time.
            let fromCarry = position < carried
            let pts = fromCarry ? carryPTS : packet.info.pts
            let before = fromCarry ? carrySamplesBefore : samplesBefore
            let data = Array(bytes[position + header.strippedLength..<position + header.length])
            if codec == nil || !header.isDependent { checkConfiguration(header.codec, at: packet.info.offset) }
            if droppingFrame {
                // Another configuration than the sample entry's (a frame of the range after a reset, muxed before
                // that range's first keyframe): decoded with this entry it would play wrong, so it is left out.
                if !header.isDependent {
                    otherConfigurationFrames += 1
                    gapSamples += header.samples
                    if fromCarry { carrySamplesBefore += header.samples } else { samplesBefore += header.samples }
                }
                position += header.length
                continue
            }
            if header.isDependent, !frames.isEmpty {
                frames[frames.count - 1].data += data
            } else {
                appendFrame(AudioFrame(data: data, samples: header.samples, pts: pts, samplesBefore: before))
                if fromCarry { carrySamplesBefore += header.samples } else { samplesBefore += header.samples }
            }
            position += header.length
        }
        carryRest(
            bytes, from: position, carried: carried, pts: packet.info.pts, samplesBefore: samplesBefore, limit: 8192)
    }

    /// Takes `frameCodec` as the sample entry's when there is none yet; else decides whether the frame is of another
    /// configuration and left out (``droppingFrame``), noting the first such change's PES offset when changes are
    /// looked for.
    mutating func checkConfiguration(_ frameCodec: TrackCodec, at offset: Int64) {
        guard let codec else {
            codec = frameCodec
            return
        }
        droppingFrame = !frameCodec.hasSameConfiguration(as: codec)
        if droppingFrame, detectsConfigurationChanges, configurationChange == nil {
            configurationChange = offset
        }
    }

    /// Appends a kept audio frame; the frames left out before it lengthen the previous kept one, so time runs on.
    mutating func appendFrame(_ frame: AudioFrame) {
        if gapSamples > 0, !frames.isEmpty { frames[frames.count - 1].samples += gapSamples }
        gapSamples = 0
        frames.append(frame)
    }

    /// Keeps the bytes of `bytes` from `position` on (a frame cut by the end of the PES, at most `limit` bytes) for
    /// the next PES, with the time of the PES they came from; longer, they are dropped and counted.
    mutating func carryRest(
        _ bytes: [UInt8], from position: Int, carried: Int, pts: Timestamp?, samplesBefore: Int, limit: Int
    ) {
        guard position < bytes.count else { return }
        guard bytes.count - position <= limit else {
            droppedBytes += bytes.count - position
            return
        }
        carry = Array(bytes[position...])
        carryPTS = position < carried ? carryPTS : pts
        carrySamplesBefore = position < carried ? carrySamplesBefore : samplesBefore
    }

    /// The samples gathered so far as one track fragment, and clears them. Video starts at its first sync sample
    /// (pictures before it cannot be decoded; later fragments of the same builder follow on from the last one);
    /// the last sample lasts until `nextTimestamp` (the next access unit's DTS, or audio PES's PTS, when known),
    /// else as long as the one before it. Nil when there is no sample.
    ///
    /// Decode times only grow: where the time stamps reset (go back, or jump more than 30 s forward; see
    /// `StreamSummary.isReset`), the samples after the reset follow on from the one before it, in this fragment
    /// and in the later fragments of the same builder.
    public mutating func takeFragment(
        trackID: UInt32, timeline: TSTimeline, nextTimestamp: Timestamp? = nil
    ) -> TrackFragment? {
        defer {
            units = []
            frames = []
            gapSamples = 0
        }
        switch kind {
        case .video(let syntax):
            return videoFragment(trackID: trackID, timeline: timeline, next: nextTimestamp, syntax: syntax)
        case .audio:
            return audioFragment(trackID: trackID, timeline: timeline)
        }
    }

    mutating func videoFragment(trackID: UInt32, timeline: TSTimeline, next: Timestamp?, syntax: NALSyntax)
        -> TrackFragment?
    {
        var samples: [Sample] = []
        var decodeTimes: [Int64] = []
        // With detectsConfigurationChanges: the HEVC parameter sets of the sample entry, which `hvc1` samples
        // cannot add to (they are dropped from the samples below).
        var entrySets: [[UInt8]]?
        if detectsConfigurationChanges, configurationChange == nil, case .hevc(let vps, let sps, let pps, _, _) = codec
        {
            entrySets = vps + sps + pps
        }
        for unit in units {
            var kept: [ArraySlice<UInt8>] = []
            var randomAccess = false
            for nal in AnnexB.units(unit.bytes) {
                guard let type = syntax.type(of: nal), !syntax.isDelimiter(type) else { continue }
                if syntax == .hevc, syntax.isParameterSet(type) {
                    if let sets = entrySets, !sets.contains(where: { $0.elementsEqual(nal) }) {
                        configurationChange = unit.offset
                        entrySets = nil
                    }
                    continue
                }
                if syntax.isRandomAccess(type) { randomAccess = true }
                kept.append(nal)
            }
            let sync = randomAccess || unit.keyframe
            if samples.isEmpty, !sync, !gaveSync { continue }
            guard !kept.isEmpty else { continue }
            var dts = timeline.time(unit.dts) + shift
            if let last = decodeTimes.last ?? lastDecodeTime, dts <= last || StreamSummary.isReset(dts - last) {
                // A reset: this sample follows the one before by that one's step.
                let step = decodeTimes.count > 1 ? last - decodeTimes[decodeTimes.count - 2] : lastDuration
                let next = last + (step > 0 ? step : 3003)
                shift += next - dts
                dts = next
            }
            let offset = unit.dts.distance(to: unit.pts)
            samples.append(
                Sample(
                    data: AnnexB.lengthPrefixed(kept), duration: 0, isSync: sync,
                    compositionTimeOffset: Int32(clamping: offset)))
            decodeTimes.append(dts)
        }
        guard let first = decodeTimes.first else { return nil }
        for index in samples.indices {
            let duration: Int64
            if index + 1 < decodeTimes.count {
                duration = decodeTimes[index + 1] - decodeTimes[index]
            } else if let next, case let step = timeline.time(next) + shift - decodeTimes[index],
                !StreamSummary.isReset(step), step > 0
            {
                duration = step
            } else if index > 0 {
                duration = Int64(samples[index - 1].duration)
            } else {
                duration = 3003
            }
            samples[index].duration = UInt32(clamping: max(1, duration))
        }
        if next == nil, samples.count > 1, let last = samples.last, last.duration == 1 {
            samples[samples.count - 1].duration = samples[samples.count - 2].duration
        }
        gaveSync = true
        lastDecodeTime = decodeTimes.last
        lastDuration = Int64(samples.last?.duration ?? 0)
        return TrackFragment(trackID: trackID, baseMediaDecodeTime: UInt64(first), samples: samples)
    }

    mutating func audioFragment(trackID: UInt32, timeline: TSTimeline) -> TrackFragment? {
        guard let firstTimed = frames.firstIndex(where: { $0.pts != nil }), let pts = frames[firstTimed].pts else {
            return nil
        }
        let scale = timescale
        // Frames before the first time stamp are dropped; the rest run on from it, frame by frame.
        let timed = frames[firstTimed...]
        var start = Int64(timeline.time(pts, timescale: scale)) + Int64(timed.first?.samplesBefore ?? 0) + shift
        if let last = lastDecodeTime {
            // Audio runs on frame by frame inside a fragment; between fragments a jump back by more than a tenth of
            // a second or forward by a reset's length is a reset: follow on from the fragment before.
            let end = last + lastDuration
            let step = start - end
            if step < -Int64(scale / 10) || StreamSummary.isReset(TSTimeline.rescale(step, from: scale)) {
                shift -= step
                start = end
            }
        }
        let samples = timed.map { Sample(data: $0.data, duration: UInt32($0.samples)) }
        let total = timed.reduce(Int64(0)) { $0 + Int64($1.samples) }
        lastDecodeTime = max(0, start) + total - Int64(timed.last?.samples ?? 0)
        lastDuration = Int64(timed.last?.samples ?? 0)
        return TrackFragment(trackID: trackID, baseMediaDecodeTime: UInt64(max(0, start)), samples: samples)
    }
}
