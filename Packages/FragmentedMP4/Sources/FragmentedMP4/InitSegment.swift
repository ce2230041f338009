/// What a track carries, with the configuration values its sample entry is built from.
public enum TrackCodec: Sendable {
    /// H.264: SPS and PPS NAL units (with their NAL header bytes) and the display size.
    case avc(sps: [[UInt8]], pps: [[UInt8]], width: UInt16, height: UInt16)
    /// HEVC: VPS, SPS and PPS NAL units (with their NAL headers) and the display size.
    case hevc(vps: [[UInt8]], sps: [[UInt8]], pps: [[UInt8]], width: UInt16, height: UInt16)
    /// AAC with its AudioSpecificConfig.
    case aac(AudioSpecificConfig)
    /// AC-3 with its `dac3` fields.
    case ac3(AC3SpecificBox, channelCount: UInt16, sampleRate: UInt32)
    /// E-AC-3 with its `dec3` fields.
    case eac3(EC3SpecificBox, channelCount: UInt16, sampleRate: UInt32)
    /// MPEG-1 or MPEG-2 audio layer I–III (`.mp3`, esds object type 0x6B).
    case mp3(channelCount: UInt16, sampleRate: UInt32)

    /// Whether the track is video (`vide`) rather than audio (`soun`).
    public var isVideo: Bool {
        switch self {
        case .avc, .hevc: true
        case .aac, .ac3, .eac3, .mp3: false
        }
    }

    /// The media timescale a track of this codec takes: 90 kHz for video, the sample rate for audio.
    public var timescale: UInt32 {
        switch self {
        case .avc, .hevc: return 90_000
        case .aac(let config): return config.sampleRate ?? 48000
        case .ac3(_, _, let rate), .eac3(_, _, let rate), .mp3(_, let rate): return rate
        }
    }

    /// Whether `other` gives the same sample entry, byte for byte (the same parameter sets, or the same decoder
    /// configuration); false when either cannot make one.
    public func hasSameConfiguration(as other: TrackCodec) -> Bool {
        if case .aac(let mine) = self, case .aac(let theirs) = other { return mine == theirs }
        guard let mine = try? sampleEntry(), let theirs = try? other.sampleEntry() else { return false }
        return mine.serialized() == theirs.serialized()
    }

    /// The sample entry for `stsd`.
    public func sampleEntry() throws(FragmentedMP4Error) -> any MP4Box {
        switch self {
        case .avc(let sps, let pps, let width, let height):
            return VisualSampleEntry(
                format: "avc1", width: width, height: height,
                configuration: try AVCConfigurationBox(sps: sps, pps: pps))
        case .hevc(let vps, let sps, let pps, let width, let height):
            return VisualSampleEntry(
                format: "hvc1", width: width, height: height,
                configuration: try HEVCConfigurationBox(vps: vps, sps: sps, pps: pps))
        case .aac(let config):
            guard let rate = config.sampleRate else {
                throw FragmentedMP4Error(.invalidValue, path: ["mp4a"], "sampling frequency index")
            }
            // ISO/IEC 14496-14 fixes an MP4AudioSampleEntry's channelcount at 2 and samplesize at 16 (templates):
            // the channel configuration is the AudioSpecificConfig's, and readers that trust the entry see 2 even
            // for mono, as they expect.
            return AudioSampleEntry(
                format: "mp4a", channelCount: 2, sampleRate: rate,
                configuration: ElementaryStreamDescriptorBox(
                    objectTypeIndication: 0x40, decoderSpecificInfo: config.bytes))
        case .ac3(let box, let channels, let rate):
            return AudioSampleEntry(format: "ac-3", channelCount: channels, sampleRate: rate, configuration: box)
        case .eac3(let box, let channels, let rate):
            return AudioSampleEntry(format: "ec-3", channelCount: channels, sampleRate: rate, configuration: box)
        case .mp3(let channels, let rate):
            return AudioSampleEntry(
                format: ".mp3", channelCount: channels, sampleRate: rate,
                // MPEG-1 audio (32, 44.1, 48 kHz) is object type 0x6B; the MPEG-2 lower rates are 0x69.
                configuration: ElementaryStreamDescriptorBox(
                    objectTypeIndication: rate >= 32000 ? 0x6B : 0x69, decoderSpecificInfo: nil))
        }
    }
}

/// One track of an init segment.
public struct Track: Sendable {
    /// Nonzero and unique in the movie.
    public var trackID: UInt32
    /// Ticks per second of the track's media time (90000 for video, the sample rate for audio, typically).
    public var timescale: UInt32
    /// ISO-639-2/T, three lowercase letters; "und" when unknown.
    public var language: String
    public var codec: TrackCodec

    public init(trackID: UInt32, timescale: UInt32, language: String = "und", codec: TrackCodec) {
        self.trackID = trackID
        self.timescale = timescale
        self.language = language
        self.codec = codec
    }
}

/// An fMP4 init segment: `ftyp` and a `moov` with one `trak` per track and `mvex` with one `trex` per track.
public struct InitSegment: Sendable {
    public var tracks: [Track]
    public var majorBrand: FourCC
    public var compatibleBrands: [FourCC]

    public init(
        tracks: [Track], majorBrand: FourCC = "iso6", compatibleBrands: [FourCC] = ["iso6", "iso5", "mp41"]
    ) {
        self.tracks = tracks
        self.majorBrand = majorBrand
        self.compatibleBrands = compatibleBrands
    }

    /// The boxes: `ftyp`, then `moov`.
    public func boxes() throws(FragmentedMP4Error) -> [any MP4Box] {
        var ids = Set<UInt32>()
        for track in tracks {
            guard track.trackID != 0, track.timescale != 0, ids.insert(track.trackID).inserted else {
                throw FragmentedMP4Error(
                    .invalidValue, path: [.moov, .trak], "track ID \(track.trackID): zero, repeated, or timescale 0")
            }
        }
        var traks: [any MP4Box] = []
        for track in tracks { traks.append(try trak(track)) }
        let nextTrackID = (ids.max() ?? 0) &+ 1
        let moov = ContainerBox(
            .moov,
            [MovieHeaderBox(nextTrackID: nextTrackID == 0 ? UInt32.max : nextTrackID)] + traks + [
                ContainerBox(.mvex, tracks.map { TrackExtendsBox(trackID: $0.trackID) })
            ])
        return [FileTypeBox(majorBrand: majorBrand, compatibleBrands: compatibleBrands), moov]
    }

    /// The bytes of the init segment.
    public func serialized() throws(FragmentedMP4Error) -> [UInt8] {
        var writer = BoxWriter()
        writer.write(try boxes())
        return writer.bytes
    }

    func trak(_ track: Track) throws(FragmentedMP4Error) -> any MP4Box {
        let video = track.codec.isVideo
        var width: UInt16 = 0
        var height: UInt16 = 0
        switch track.codec {
        case .avc(_, _, let w, let h), .hevc(_, _, _, let w, let h):
            width = w
            height = h
        default: break
        }
        let mediaHeader: any MP4Box = video ? VideoMediaHeaderBox() : SoundMediaHeaderBox()
        let stbl = ContainerBox(
            .stbl,
            [
                SampleDescriptionBox(entries: [try track.codec.sampleEntry()]),
                EmptySampleTableBox(.stts), EmptySampleTableBox(.stsc), EmptySampleTableBox(.stsz),
                EmptySampleTableBox(.stco),
            ])
        let minf = ContainerBox(.minf, [mediaHeader, ContainerBox(.dinf, [DataReferenceBox()]), stbl])
        let mdia = ContainerBox(
            .mdia,
            [
                MediaHeaderBox(timescale: track.timescale, language: track.language),
                HandlerBox(handlerType: video ? "vide" : "soun", name: video ? "VideoHandler" : "SoundHandler"),
                minf,
            ])
        return ContainerBox(
            .trak,
            [
                TrackHeaderBox(
                    trackID: track.trackID, alternateGroup: video ? 0 : 1, volume: video ? 0 : 0x0100, width: width,
                    height: height),
                mdia,
            ])
    }
}
