// The boxes of an init segment (ISO/IEC 14496-12: 4.3 ftyp, 8.2 moov/mvhd, 8.3 trak/tkhd, 8.4 mdia/mdhd/hdlr/minf,
// 8.4.5 vmhd/smhd, 8.7 dinf/dref/stbl tables, 8.8 mvex/trex). Each writes its own body; BoxWriter does the rest.

let unityMatrix: [UInt32] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000]

/// A box that holds other boxes and nothing else.
public struct ContainerBox: MP4Box {
    public var type: FourCC
    public var children: [any MP4Box]

    public init(_ type: FourCC, _ children: [any MP4Box]) {
        self.type = type
        self.children = children
    }

    public func writeBody(to writer: inout BoxWriter) { writer.write(children) }
}

/// `ftyp` (4.3) or `styp` (8.16.2): a major brand, its minor version and the compatible brands.
public struct FileTypeBox: MP4Box {
    public var type: FourCC
    public var majorBrand: FourCC
    public var minorVersion: UInt32
    public var compatibleBrands: [FourCC]

    /// An `ftyp`; pass `segment: true` for the `styp` of a media segment.
    public init(majorBrand: FourCC, minorVersion: UInt32 = 0, compatibleBrands: [FourCC], segment: Bool = false) {
        type = segment ? .styp : .ftyp
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(majorBrand)
        writer.append(minorVersion)
        for brand in compatibleBrands { writer.append(brand) }
    }
}

/// `mvhd` (8.2.2), version 0: timescale, duration (0 for a fragmented movie) and the next track ID.
public struct MovieHeaderBox: MP4Box {
    public var type: FourCC { .mvhd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var timescale: UInt32
    public var duration: UInt32
    public var nextTrackID: UInt32

    public init(timescale: UInt32 = 1000, duration: UInt32 = 0, nextTrackID: UInt32) {
        self.timescale = timescale
        self.duration = duration
        self.nextTrackID = nextTrackID
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(0))  // creation_time
        writer.append(UInt32(0))  // modification_time
        writer.append(timescale)
        writer.append(duration)
        writer.append(UInt32(0x0001_0000))  // rate 1.0
        writer.append(UInt16(0x0100))  // volume 1.0
        writer.appendZeros(2 + 8)  // reserved
        for value in unityMatrix { writer.append(value) }
        writer.appendZeros(24)  // pre_defined
        writer.append(nextTrackID)
    }
}

/// `tkhd` (8.3.2), version 0, flags enabled + in movie: the track ID, the volume (audio) or size (video).
public struct TrackHeaderBox: MP4Box {
    public var type: FourCC { .tkhd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader(flags: 0x000003) }
    public var trackID: UInt32
    public var duration: UInt32
    /// Tracks with the same nonzero group are alternatives to each other (one audio track plays at a time).
    public var alternateGroup: UInt16
    /// 8.8 fixed point; 0x0100 for audio, 0 for video.
    public var volume: UInt16
    /// Whole pixels; written as 16.16 fixed point.
    public var width: UInt16
    public var height: UInt16

    public init(
        trackID: UInt32, duration: UInt32 = 0, alternateGroup: UInt16 = 0, volume: UInt16, width: UInt16 = 0,
        height: UInt16 = 0
    ) {
        self.trackID = trackID
        self.duration = duration
        self.alternateGroup = alternateGroup
        self.volume = volume
        self.width = width
        self.height = height
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(0))  // creation_time
        writer.append(UInt32(0))  // modification_time
        writer.append(trackID)
        writer.append(UInt32(0))  // reserved
        writer.append(duration)
        writer.appendZeros(8)  // reserved
        writer.append(UInt16(0))  // layer
        writer.append(alternateGroup)
        writer.append(volume)
        writer.append(UInt16(0))  // reserved
        for value in unityMatrix { writer.append(value) }
        writer.append(UInt32(width) << 16)
        writer.append(UInt32(height) << 16)
    }
}

/// `mdhd` (8.4.2), version 0: the media timescale and the language as packed ISO-639-2/T.
public struct MediaHeaderBox: MP4Box {
    public var type: FourCC { .mdhd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var timescale: UInt32
    public var duration: UInt32
    /// Three lowercase letters; anything else is written as "und".
    public var language: String

    public init(timescale: UInt32, duration: UInt32 = 0, language: String = "und") {
        self.timescale = timescale
        self.duration = duration
        self.language = language
    }

    /// The language packed as three 5-bit letters (each minus 0x60) after a zero pad bit.
    public static func packedLanguage(_ language: String) -> UInt16 {
        let letters = Array(language.utf8)
        guard letters.count == 3, letters.allSatisfy({ $0 >= 0x61 && $0 <= 0x7A }) else {
            return packedLanguage("und")
        }
        return letters.reduce(UInt16(0)) { $0 << 5 | UInt16($1 - 0x60) }
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(0))  // creation_time
        writer.append(UInt32(0))  // modification_time
        writer.append(timescale)
        writer.append(duration)
        writer.append(Self.packedLanguage(language))
        writer.append(UInt16(0))  // pre_defined
    }
}

/// `hdlr` (8.4.3): the handler type (`vide`, `soun`) and a name.
public struct HandlerBox: MP4Box {
    public var type: FourCC { .hdlr }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var handlerType: FourCC
    public var name: String

    public init(handlerType: FourCC, name: String) {
        self.handlerType = handlerType
        self.name = name
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(0))  // pre_defined
        writer.append(handlerType)
        writer.appendZeros(12)  // reserved
        writer.append(name.utf8.filter { $0 != 0 })
        writer.append(UInt8(0))
    }
}

/// `vmhd` (12.1.2), flags 1: graphics mode copy.
public struct VideoMediaHeaderBox: MP4Box {
    public var type: FourCC { "vmhd" }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader(flags: 1) }
    public init() {}
    public func writeBody(to writer: inout BoxWriter) { writer.appendZeros(8) }
}

/// `smhd` (12.2.2): balance 0.
public struct SoundMediaHeaderBox: MP4Box {
    public var type: FourCC { "smhd" }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public init() {}
    public func writeBody(to writer: inout BoxWriter) { writer.appendZeros(4) }
}

/// `dref` (8.7.2) with one self-contained `url ` entry: the media is in this file.
public struct DataReferenceBox: MP4Box {
    public var type: FourCC { .dref }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public init() {}

    struct SelfContainedURL: MP4Box {
        var type: FourCC { .url }
        var fullBoxHeader: FullBoxHeader? { FullBoxHeader(flags: 1) }
        func writeBody(to writer: inout BoxWriter) {}
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(1))
        writer.write(SelfContainedURL())
    }
}

/// `stsd` (8.5.2): the sample entries.
public struct SampleDescriptionBox: MP4Box {
    public var type: FourCC { .stsd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var entries: [any MP4Box]

    public init(entries: [any MP4Box]) { self.entries = entries }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(UInt32(truncatingIfNeeded: entries.count))
        writer.write(entries)
    }
}

/// An empty sample table (`stts`, `stsc`, `stco`: an entry count of 0; `stsz`: sample size 0 and count 0), as a
/// fragmented file's `stbl` carries: the samples are described in the fragments.
public struct EmptySampleTableBox: MP4Box {
    public var type: FourCC
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }

    public init(_ type: FourCC) { self.type = type }

    public func writeBody(to writer: inout BoxWriter) {
        if type == .stsz { writer.append(UInt32(0)) }
        writer.append(UInt32(0))
    }
}

/// `trex` (8.8.3): per-track defaults for the fragments; sample description 1, and no other defaults.
public struct TrackExtendsBox: MP4Box {
    public var type: FourCC { .trex }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var trackID: UInt32
    public var defaultSampleDuration: UInt32
    public var defaultSampleSize: UInt32
    public var defaultSampleFlags: UInt32

    public init(
        trackID: UInt32, defaultSampleDuration: UInt32 = 0, defaultSampleSize: UInt32 = 0,
        defaultSampleFlags: UInt32 = 0
    ) {
        self.trackID = trackID
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }

    public func writeBody(to writer: inout BoxWriter) {
        writer.append(trackID)
        writer.append(UInt32(1))  // default_sample_description_index
        writer.append(defaultSampleDuration)
        writer.append(defaultSampleSize)
        writer.append(defaultSampleFlags)
    }
}

/// A box written from raw body bytes (for boxes this library has no type for).
public struct RawBox: MP4Box {
    public var type: FourCC
    public var fullBoxHeader: FullBoxHeader?
    public var body: [UInt8]

    public init(_ type: FourCC, fullBoxHeader: FullBoxHeader? = nil, body: [UInt8]) {
        self.type = type
        self.fullBoxHeader = fullBoxHeader
        self.body = body
    }

    public func writeBody(to writer: inout BoxWriter) { writer.append(body) }
}
