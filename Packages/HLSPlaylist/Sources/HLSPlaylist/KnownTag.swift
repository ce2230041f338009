/// Every tag of RFC 8216bis (LL-HLS included) and the ad-marker tags real streams use.
public enum KnownTag: String, Sendable, Hashable, CaseIterable {
    // Basic tags (§4.4.1)
    case extm3u = "EXTM3U"
    case version = "EXT-X-VERSION"
    // Media or multivariant playlist tags (§4.4.2)
    case independentSegments = "EXT-X-INDEPENDENT-SEGMENTS"
    case start = "EXT-X-START"
    case define = "EXT-X-DEFINE"
    // Media playlist tags (§4.4.3)
    case targetDuration = "EXT-X-TARGETDURATION"
    case mediaSequence = "EXT-X-MEDIA-SEQUENCE"
    case discontinuitySequence = "EXT-X-DISCONTINUITY-SEQUENCE"
    case endList = "EXT-X-ENDLIST"
    case playlistType = "EXT-X-PLAYLIST-TYPE"
    case iFramesOnly = "EXT-X-I-FRAMES-ONLY"
    case partInf = "EXT-X-PART-INF"
    case serverControl = "EXT-X-SERVER-CONTROL"
    // Media segment tags (§4.4.4)
    case extinf = "EXTINF"
    case byteRange = "EXT-X-BYTERANGE"
    case discontinuity = "EXT-X-DISCONTINUITY"
    case key = "EXT-X-KEY"
    case map = "EXT-X-MAP"
    case programDateTime = "EXT-X-PROGRAM-DATE-TIME"
    case gap = "EXT-X-GAP"
    case bitrate = "EXT-X-BITRATE"
    case part = "EXT-X-PART"
    // Media metadata tags (§4.4.5)
    case dateRange = "EXT-X-DATERANGE"
    case skip = "EXT-X-SKIP"
    case preloadHint = "EXT-X-PRELOAD-HINT"
    case renditionReport = "EXT-X-RENDITION-REPORT"
    // Multivariant playlist tags (§4.4.6)
    case media = "EXT-X-MEDIA"
    case streamInf = "EXT-X-STREAM-INF"
    case iFrameStreamInf = "EXT-X-I-FRAME-STREAM-INF"
    case sessionData = "EXT-X-SESSION-DATA"
    case sessionKey = "EXT-X-SESSION-KEY"
    case contentSteering = "EXT-X-CONTENT-STEERING"
    // Ad markers used in the field (not in RFC 8216bis)
    case cueOut = "EXT-X-CUE-OUT"
    case cueOutCont = "EXT-X-CUE-OUT-CONT"
    case cueIn = "EXT-X-CUE-IN"
    case cue = "EXT-X-CUE"
    case scte35 = "EXT-X-SCTE35"
    case oatclsSCTE35 = "EXT-OATCLS-SCTE35"
    case asset = "EXT-X-ASSET"
    case splicePointSCTE35 = "EXT-X-SPLICEPOINT-SCTE35"
    // Legacy (removed from the spec, still met)
    case allowCache = "EXT-X-ALLOW-CACHE"

    /// Where a tag may appear.
    public enum Scope: Sendable, Hashable {
        /// EXTM3U and EXT-X-VERSION.
        case basic
        /// Allowed in either playlist kind (§4.4.2).
        case either
        /// Applies to the whole media playlist (§4.4.3).
        case mediaPlaylist
        /// Applies to the next media segment (§4.4.4).
        case mediaSegment
        /// Media metadata (§4.4.5).
        case mediaMetadata
        /// Multivariant playlist only (§4.4.6).
        case multivariant
        /// Ad markers from outside the spec; they travel with media segments.
        case adMarker
    }

    public var scope: Scope {
        switch self {
        case .extm3u, .version: return .basic
        case .independentSegments, .start, .define: return .either
        case .targetDuration, .mediaSequence, .discontinuitySequence, .endList, .playlistType, .iFramesOnly,
            .partInf, .serverControl, .allowCache:
            return .mediaPlaylist
        case .extinf, .byteRange, .discontinuity, .key, .map, .programDateTime, .gap, .bitrate, .part:
            return .mediaSegment
        case .dateRange, .skip, .preloadHint, .renditionReport: return .mediaMetadata
        case .media, .streamInf, .iFrameStreamInf, .sessionData, .sessionKey, .contentSteering: return .multivariant
        case .cueOut, .cueOutCont, .cueIn, .cue, .scte35, .oatclsSCTE35, .asset, .splicePointSCTE35: return .adMarker
        }
    }

    /// Whether ``Playlist/media(url:parent:)`` reads the tag's value while walking the segments.
    var usedByMediaResolution: Bool {
        switch scope {
        case .mediaSegment, .mediaMetadata: return true
        default: return false
        }
    }

    /// The shape of the value after the colon.
    public enum ValueShape: Sendable, Hashable {
        case none
        case decimalInteger
        case enumeratedString
        case extinf
        case byteRange
        case dateTime
        case attributeList
        /// EXT-X-CUE-OUT and EXT-X-CUE-OUT-CONT: a bare number, `elapsed/duration`, or an attribute list.
        case cueValue
        /// Opaque text (base64 SCTE-35).
        case text
    }

    public var valueShape: ValueShape {
        switch self {
        case .extm3u, .independentSegments, .endList, .iFramesOnly, .discontinuity, .gap, .cueIn: return .none
        case .version, .targetDuration, .mediaSequence, .discontinuitySequence, .bitrate: return .decimalInteger
        case .playlistType, .allowCache: return .enumeratedString
        case .extinf: return .extinf
        case .byteRange: return .byteRange
        case .programDateTime: return .dateTime
        case .start, .define, .partInf, .serverControl, .key, .map, .part, .dateRange, .skip, .preloadHint,
            .renditionReport, .media, .streamInf, .iFrameStreamInf, .sessionData, .sessionKey, .contentSteering,
            .cue, .scte35, .asset:
            return .attributeList
        case .cueOut, .cueOutCont: return .cueValue
        case .oatclsSCTE35, .splicePointSCTE35: return .text
        }
    }

    /// The RFC 8216bis section that defines the tag ("" for tags outside the spec).
    public var section: String {
        switch self {
        case .extm3u: return "4.4.1.1"
        case .version: return "4.4.1.2"
        case .independentSegments: return "4.4.2.1"
        case .start: return "4.4.2.2"
        case .define: return "4.4.2.3"
        case .targetDuration: return "4.4.3.1"
        case .mediaSequence: return "4.4.3.2"
        case .discontinuitySequence: return "4.4.3.3"
        case .endList: return "4.4.3.4"
        case .playlistType: return "4.4.3.5"
        case .iFramesOnly: return "4.4.3.6"
        case .partInf: return "4.4.3.7"
        case .serverControl: return "4.4.3.8"
        case .extinf: return "4.4.4.1"
        case .byteRange: return "4.4.4.2"
        case .discontinuity: return "4.4.4.3"
        case .key: return "4.4.4.4"
        case .map: return "4.4.4.5"
        case .programDateTime: return "4.4.4.6"
        case .gap: return "4.4.4.7"
        case .bitrate: return "4.4.4.8"
        case .part: return "4.4.4.9"
        case .dateRange: return "4.4.5.1"
        case .skip: return "4.4.5.2"
        case .preloadHint: return "4.4.5.3"
        case .renditionReport: return "4.4.5.4"
        case .media: return "4.4.6.1"
        case .streamInf: return "4.4.6.2"
        case .iFrameStreamInf: return "4.4.6.3"
        case .sessionData: return "4.4.6.4"
        case .sessionKey: return "4.4.6.5"
        case .contentSteering: return "4.4.6.6"
        case .cueOut, .cueOutCont, .cueIn, .cue, .scte35, .oatclsSCTE35, .asset, .splicePointSCTE35, .allowCache:
            return ""
        }
    }

    /// Whether the tag may appear at most once in a playlist.
    public var appearsOnce: Bool {
        switch self {
        case .extm3u, .version, .independentSegments, .start, .targetDuration, .mediaSequence,
            .discontinuitySequence, .endList, .playlistType, .iFramesOnly, .partInf, .serverControl, .skip,
            .contentSteering:
            return true
        default: return false
        }
    }

    // Lookup by name bytes without building a String.
    private static let cases = Array(KnownTag.allCases)
    private static let table = WordTable(cases.map(\.rawValue))

    /// Finds the tag whose name is exactly `bytes` (a tag name without the leading `#`).
    static func lookup(_ bytes: ArraySlice<UInt8>) -> KnownTag? {
        bytes.withUnsafeBufferPointer { lookup(in: $0, start: 0, count: $0.count) }
    }

    /// Finds the tag whose name is the `count` bytes at `start` in `buffer` (bytes after the name may be read).
    static func lookup(in buffer: UnsafeBufferPointer<UInt8>, start: Int, count: Int) -> KnownTag? {
        guard start >= 0, count >= 0, start <= buffer.count, count <= buffer.count - start else { return nil }
        let name = UnsafeBufferPointer(rebasing: buffer[start..<(start + count)])
        let id = table.id(of: name, readable: buffer.count - start)
        let cases = KnownTag.cases
        guard id >= 0, id < cases.count else { return nil }
        return cases[id]
    }
}
