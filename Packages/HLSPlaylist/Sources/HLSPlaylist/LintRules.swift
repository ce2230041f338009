/// One rule of the linter: a value with its stable id, its severity, the section of RFC 8216bis (or of Apple's HLS
/// authoring specification) it comes from, and what it checks. Findings carry the rule itself, so nothing downstream
/// classifies a finding by its id or its message text.
public struct LintRule: Sendable, Hashable, CustomStringConvertible {
    public var id: String
    public var severity: LintSeverity
    public var section: String
    public var summary: String

    public init(id: String, severity: LintSeverity, section: String, summary: String) {
        self.id = id
        self.severity = severity
        self.section = section
        self.summary = summary
    }

    public var description: String { id }
}

extension LintRule {
    public static let header = LintRule(
        id: "HLS-HEADER", severity: .error, section: "4.4.1.1",
        summary: "the first line is #EXTM3U")
    public static let utf8 = LintRule(
        id: "HLS-UTF8", severity: .error, section: "4.1",
        summary: "the playlist is UTF-8")
    public static let tagValue = LintRule(
        id: "HLS-TAG-VALUE", severity: .error, section: "4.4",
        summary: "a tag's value has its type")
    public static let attributeSyntax = LintRule(
        id: "HLS-ATTR-SYNTAX", severity: .error, section: "4.2",
        summary: "attribute lists follow §4.2")
    public static let mixed = LintRule(
        id: "HLS-MIXED", severity: .error, section: "4.1",
        summary: "no media and multivariant tags together")
    public static let segmentURI = LintRule(
        id: "HLS-SEGMENT-URI", severity: .error, section: "4.4.4.1",
        summary: "EXTINF is followed by a URI")
    public static let variantURI = LintRule(
        id: "HLS-VARIANT-URI", severity: .error, section: "4.4.6.2",
        summary: "EXT-X-STREAM-INF is followed by a URI")
    public static let variableUndefined = LintRule(
        id: "HLS-VAR-UNDEFINED", severity: .error, section: "4.3",
        summary: "referenced variables are defined")
    public static let variableDefine = LintRule(
        id: "HLS-VAR-DEFINE", severity: .error, section: "4.4.2.3",
        summary: "EXT-X-DEFINE is well formed")
    public static let attributeDuplicate = LintRule(
        id: "HLS-ATTR-DUPLICATE", severity: .error, section: "4.2",
        summary: "no attribute appears twice")
    public static let attributeRequired = LintRule(
        id: "HLS-ATTR-REQUIRED", severity: .error, section: "4.4",
        summary: "required attributes are present")
    public static let attributeType = LintRule(
        id: "HLS-ATTR-TYPE", severity: .error, section: "4.2",
        summary: "attribute values have their type")
    public static let attributeEnumeration = LintRule(
        id: "HLS-ATTR-ENUM", severity: .error, section: "4.4",
        summary: "enumerated attribute values and EXT-X-PLAYLIST-TYPE are allowed ones")
    public static let tagOnce = LintRule(
        id: "HLS-TAG-ONCE", severity: .error, section: "4.4",
        summary: "single-use tags appear once")
    public static let targetDurationMissing = LintRule(
        id: "HLS-TARGETDURATION-MISSING", severity: .error, section: "4.4.3.1",
        summary: "media playlists have EXT-X-TARGETDURATION")
    public static let extinfTarget = LintRule(
        id: "HLS-EXTINF-TARGET", severity: .error, section: "4.4.3.1",
        summary: "rounded EXTINF does not exceed the target duration")
    public static let extinfMissing = LintRule(
        id: "HLS-EXTINF-MISSING", severity: .error, section: "4.4.4.1",
        summary: "every segment has EXTINF")
    public static let mediaSequencePosition = LintRule(
        id: "HLS-MEDIA-SEQUENCE-POSITION", severity: .error, section: "4.4.3.2",
        summary: "EXT-X-MEDIA-SEQUENCE comes before the first segment")
    public static let discontinuitySequencePosition = LintRule(
        id: "HLS-DISCONTINUITY-SEQUENCE-POSITION", severity: .error, section: "4.4.3.3",
        summary: "EXT-X-DISCONTINUITY-SEQUENCE comes before segments and discontinuities")
    public static let version = LintRule(
        id: "HLS-VERSION", severity: .error, section: "8",
        summary: "EXT-X-VERSION covers the features used")
    public static let byteRangeOffset = LintRule(
        id: "HLS-BYTERANGE-OFFSET", severity: .error, section: "4.4.4.2",
        summary: "an implicit offset follows a sub-range of the same resource")
    public static let keyNone = LintRule(
        id: "HLS-KEY-NONE", severity: .error, section: "4.4.4.4",
        summary: "METHOD=NONE has no other attributes; other methods have a URI")
    public static let mediaNameUnique = LintRule(
        id: "HLS-MEDIA-NAME-UNIQUE", severity: .error, section: "4.4.6.1.1",
        summary: "renditions of a group have different names")
    public static let mediaClosedCaptions = LintRule(
        id: "HLS-MEDIA-CLOSED-CAPTIONS", severity: .error, section: "4.4.6.1",
        summary: "INSTREAM-ID only and always for CLOSED-CAPTIONS, which have no URI")
    public static let mediaDefaultAutoselect = LintRule(
        id: "HLS-MEDIA-DEFAULT-AUTOSELECT", severity: .error, section: "4.4.6.1",
        summary: "AUTOSELECT is YES when DEFAULT is YES")
    public static let mediaForced = LintRule(
        id: "HLS-MEDIA-FORCED", severity: .error, section: "4.4.6.1",
        summary: "FORCED only for SUBTITLES")
    public static let groupUndefined = LintRule(
        id: "HLS-GROUP-UNDEFINED", severity: .error, section: "4.4.6.2",
        summary: "AUDIO/VIDEO/SUBTITLES/CLOSED-CAPTIONS name a group of that type")
    public static let partInfMissing = LintRule(
        id: "HLS-PART-INF-MISSING", severity: .error, section: "4.4.3.7",
        summary: "EXT-X-PART needs EXT-X-PART-INF")
    public static let partDuration = LintRule(
        id: "HLS-PART-DURATION", severity: .error, section: "4.4.4.9",
        summary: "a part's duration does not exceed PART-TARGET")
    public static let dateRangeDates = LintRule(
        id: "HLS-DATERANGE-DATES", severity: .error, section: "4.4.5.1",
        summary: "END-DATE is not before START-DATE; DURATION is not negative")
    public static let dateRangeEndOnNext = LintRule(
        id: "HLS-DATERANGE-END-ON-NEXT", severity: .error, section: "4.4.5.1",
        summary: "END-ON-NEXT needs CLASS and excludes DURATION and END-DATE")
    public static let dateRangeProgramDateTime = LintRule(
        id: "HLS-DATERANGE-PDT", severity: .error, section: "4.4.5.1",
        summary: "a playlist with EXT-X-DATERANGE has EXT-X-PROGRAM-DATE-TIME")
    public static let serverControl = LintRule(
        id: "HLS-SERVER-CONTROL", severity: .error, section: "4.4.3.8",
        summary: "HOLD-BACK ≥ 3×target, PART-HOLD-BACK ≥ 2×part target, CAN-SKIP-UNTIL ≥ 6×target")
    public static let sessionData = LintRule(
        id: "HLS-SESSION-DATA", severity: .error, section: "4.4.6.4",
        summary: "EXT-X-SESSION-DATA has exactly one of VALUE and URI")
    public static let sessionKeyNone = LintRule(
        id: "HLS-SESSION-KEY-NONE", severity: .error, section: "4.4.6.5",
        summary: "EXT-X-SESSION-KEY METHOD is not NONE")
    public static let dateRangeIDConflict = LintRule(
        id: "HLS-DATERANGE-ID-CONFLICT", severity: .error, section: "4.4.5.1",
        summary: "EXT-X-DATERANGE tags with one ID give shared attributes the same value")
    public static let skipCanSkip = LintRule(
        id: "HLS-SKIP-CAN-SKIP", severity: .error, section: "6.2.5.1",
        summary: "EXT-X-SKIP only with CAN-SKIP-UNTIL and without EXT-X-ENDLIST; skipped date ranges need "
            + "CAN-SKIP-DATERANGES=YES")
    public static let canSkipDateRanges = LintRule(
        id: "HLS-CAN-SKIP-DATERANGES", severity: .error, section: "4.4.3.8",
        summary: "CAN-SKIP-DATERANGES requires CAN-SKIP-UNTIL")
    public static let preloadHintEndList = LintRule(
        id: "HLS-PRELOAD-HINT-ENDLIST", severity: .error, section: "4.4.5.3",
        summary: "a playlist with EXT-X-ENDLIST has no EXT-X-PRELOAD-HINT")
    public static let preloadHintPartInf = LintRule(
        id: "HLS-PRELOAD-HINT-PART-INF", severity: .error, section: "4.4.3.7",
        summary: "a TYPE=PART preload hint needs EXT-X-PART-INF")
    public static let renditionReportURI = LintRule(
        id: "HLS-RENDITION-REPORT-URI", severity: .error, section: "4.4.5.4",
        summary: "an EXT-X-RENDITION-REPORT URI is relative to the playlist's URI (no scheme)")
    public static let iFramesOnlyParts = LintRule(
        id: "HLS-IFRAMES-ONLY-PARTS", severity: .warning, section: "4.4.4.9",
        summary: "EXT-X-I-FRAMES-ONLY playlists do not use partial segments")
    public static let preloadHintDuplicate = LintRule(
        id: "HLS-PRELOAD-HINT-DUPLICATE", severity: .warning, section: "6.2.6",
        summary: "at most one EXT-X-PRELOAD-HINT of each TYPE")
    public static let partTagOrder = LintRule(
        id: "HLS-PART-TAG-ORDER", severity: .error, section: "4.4.4.9",
        summary: "EXT-X-DISCONTINUITY, KEY, MAP and PROGRAM-DATE-TIME of a segment come before its first EXT-X-PART")
    public static let partDurationMin = LintRule(
        id: "HLS-PART-DURATION-MIN", severity: .error, section: "4.4.4.9",
        summary: "a part lasts at least 85% of PART-TARGET (independent, gap, before-gap and final parts excepted)")
    public static let iFrameAttributes = LintRule(
        id: "HLS-IFRAME-ATTR", severity: .error, section: "4.4.6.3",
        summary: "EXT-X-I-FRAME-STREAM-INF has no FRAME-RATE, AUDIO, SUBTITLES or CLOSED-CAPTIONS")
    public static let vodEndList = LintRule(
        id: "HLS-VOD-ENDLIST", severity: .warning, section: "4.4.3.5",
        summary: "a VOD playlist ends with EXT-X-ENDLIST")
    public static let appleCodecs = LintRule(
        id: "APPLE-CODECS", severity: .warning, section: "Apple HLS authoring 9.1",
        summary: "variants declare CODECS")
    public static let appleResolution = LintRule(
        id: "APPLE-RESOLUTION", severity: .warning, section: "Apple HLS authoring 9.2",
        summary: "video variants declare RESOLUTION")
    public static let appleFrameRate = LintRule(
        id: "APPLE-FRAME-RATE", severity: .warning, section: "Apple HLS authoring 9.3",
        summary: "video variants declare FRAME-RATE")
    public static let appleAverageBandwidth = LintRule(
        id: "APPLE-AVERAGE-BANDWIDTH", severity: .warning, section: "Apple HLS authoring 9.4",
        summary: "variants declare AVERAGE-BANDWIDTH")
    public static let appleIndependentSegments = LintRule(
        id: "APPLE-INDEPENDENT-SEGMENTS", severity: .warning, section: "Apple HLS authoring 6.5",
        summary: "multivariant playlists declare EXT-X-INDEPENDENT-SEGMENTS")
    public static let appleTargetDuration = LintRule(
        id: "APPLE-TARGET-DURATION", severity: .warning, section: "Apple HLS authoring 6.1",
        summary: "the target duration is 6 seconds or less")
    public static let appleIFrame = LintRule(
        id: "APPLE-IFRAME", severity: .info, section: "Apple HLS authoring 6.15",
        summary: "multivariant playlists with video offer I-frame playlists")
    public static let liveMediaSequence = LintRule(
        id: "LIVE-MEDIA-SEQUENCE", severity: .error, section: "6.2.1",
        summary: "the media sequence number never decreases")
    public static let liveURISequence = LintRule(
        id: "LIVE-URI-SEQUENCE", severity: .error, section: "6.2.1",
        summary: "a segment keeps its media sequence number")
    public static let liveDiscontinuitySequence = LintRule(
        id: "LIVE-DISCONTINUITY-SEQUENCE", severity: .error, section: "6.2.1",
        summary: "the discontinuity sequence counts the removed discontinuities")
    public static let liveSegmentRemoved = LintRule(
        id: "LIVE-SEGMENT-REMOVED", severity: .error, section: "6.2.2",
        summary: "segments leave only from the start of the playlist")
    public static let liveEndList = LintRule(
        id: "LIVE-ENDLIST", severity: .error, section: "6.2.1",
        summary: "a playlist with EXT-X-ENDLIST does not change")
    public static let liveTargetDuration = LintRule(
        id: "LIVE-TARGETDURATION", severity: .error, section: "6.2.1",
        summary: "EXT-X-TARGETDURATION does not change")

    public static let byteOrderMark = LintRule(
        id: "HLS-BOM", severity: .error, section: "4.1",
        summary: "no byte order mark and no control characters other than CR and LF")
    public static let extinfSyntax = LintRule(
        id: "HLS-EXTINF-SYNTAX", severity: .error, section: "4.4.4.1",
        summary: "EXTINF is <duration>,[<title>]: the comma is there")
    public static let keyAttributes = LintRule(
        id: "HLS-KEY-ATTR", severity: .error, section: "4.4.4.4",
        summary:
            "IV is a 128-bit hexadecimal-sequence, absent with AES-256-GCM and SAMPLE-AES-CTR; KEYFORMATVERSIONS is "
            + "positive integers joined by /")
    public static let mapIV = LintRule(
        id: "HLS-MAP-IV", severity: .error, section: "4.4.4.5",
        summary: "an EXT-X-MAP under an AES-128 key has a key with an IV")
    public static let mapByteRange = LintRule(
        id: "HLS-MAP-BYTERANGE", severity: .error, section: "4.4.4.5",
        summary: "an EXT-X-MAP BYTERANGE is <n>@<o>: its offset is always written")
    public static let mediaSubtitlesURI = LintRule(
        id: "HLS-MEDIA-SUBTITLES-URI", severity: .error, section: "4.4.6.1",
        summary: "SUBTITLES renditions have a URI")
    public static let mediaInstreamID = LintRule(
        id: "HLS-MEDIA-INSTREAM-ID", severity: .error, section: "4.4.6.1",
        summary: "INSTREAM-ID is CC1 to CC4 or SERVICE1 to SERVICE63")
    public static let mediaChannels = LintRule(
        id: "HLS-MEDIA-CHANNELS", severity: .error, section: "4.4.6.1",
        summary:
            "an AUDIO rendition's CHANNELS starts with a decimal-integer channel count; its audio coding identifiers "
            + "use A-Z, 0-9 and -; its usage indicators are BINAURAL, IMMERSIVE and DOWNMIX")
    public static let mediaDefaultUnique = LintRule(
        id: "HLS-MEDIA-DEFAULT-UNIQUE", severity: .error, section: "4.4.6.1.1",
        summary: "at most one rendition of a group has DEFAULT=YES")
    public static let mediaAutoselectUnique = LintRule(
        id: "HLS-MEDIA-AUTOSELECT-UNIQUE", severity: .warning, section: "4.4.6.1.1",
        summary: "AUTOSELECT=YES renditions of a group differ in LANGUAGE, ASSOC-LANGUAGE, FORCED or CHARACTERISTICS")
    public static let closedCaptionsNone = LintRule(
        id: "HLS-CLOSED-CAPTIONS-NONE", severity: .error, section: "4.4.6.2",
        summary: "when one EXT-X-STREAM-INF has CLOSED-CAPTIONS=NONE, every one has it")
    public static let identifierCharacters = LintRule(
        id: "HLS-ID-CHARS", severity: .error, section: "4.4.6.2",
        summary: "STABLE-VARIANT-ID, STABLE-RENDITION-ID and PATHWAY-ID use only their allowed characters")
    public static let sessionDataDuplicate = LintRule(
        id: "HLS-SESSION-DATA-DUPLICATE", severity: .error, section: "4.4.6.4",
        summary: "no two EXT-X-SESSION-DATA tags with the same DATA-ID and LANGUAGE")
    public static let sessionKeyDuplicate = LintRule(
        id: "HLS-SESSION-KEY-DUPLICATE", severity: .error, section: "4.4.6.5",
        summary: "no two EXT-X-SESSION-KEY tags with the same METHOD, URI, IV, KEYFORMAT and KEYFORMATVERSIONS")
    public static let dateRangeDuration = LintRule(
        id: "HLS-DATERANGE-DURATION", severity: .error, section: "4.4.5.1",
        summary: "with both DURATION and END-DATE, END-DATE is START-DATE plus DURATION")
    public static let dateRangeCue = LintRule(
        id: "HLS-DATERANGE-CUE", severity: .error, section: "4.4.5.1",
        summary: "CUE lists PRE, POST and ONCE, never PRE and POST together")
    public static let interstitial = LintRule(
        id: "HLS-INTERSTITIAL", severity: .error, section: "D.2",
        summary: "an interstitial date range has exactly one of X-ASSET-URI and X-ASSET-LIST and valid X- values")
    public static let variablesUnchecked = LintRule(
        id: "HLS-VAR-UNCHECKED", severity: .info, section: "4.4.2.3",
        summary: "EXT-X-DEFINE IMPORT or QUERYPARAM could not be checked without the parent playlist or the URL")
    public static let livePlaylistType = LintRule(
        id: "LIVE-PLAYLIST-TYPE", severity: .error, section: "4.4.3.5",
        summary: "a VOD playlist does not change; an EVENT playlist only grows at its end")
    public static let liveShortWindow = LintRule(
        id: "LIVE-SHORT-WINDOW", severity: .error, section: "6.2.2",
        summary: "removing segments leaves at least three target durations in a live playlist")
    public static let liveUnchecked = LintRule(
        id: "LIVE-UNCHECKED", severity: .info, section: "6.2.1",
        summary: "the live-update rules could not be checked without the previous poll")
    public static let valuePositive = LintRule(
        id: "HLS-VALUE-POSITIVE", severity: .error, section: "4.4",
        summary: "EXT-X-TARGETDURATION is at least 1; SCORE is positive")
    public static let videoLayout = LintRule(
        id: "HLS-VIDEO-LAYOUT", severity: .error, section: "4.4.6.2",
        summary:
            "REQ-VIDEO-LAYOUT entries are /-separated specifiers: CH-STEREO, CH-MONO, PROJ-RECT, PROJ-EQUI, PROJ-HEQU, "
            + "PROJ-PRIM, PROJ-AIV")
    public static let allowedCPC = LintRule(
        id: "HLS-ALLOWED-CPC", severity: .error, section: "4.4.6.2",
        summary: "ALLOWED-CPC entries are a KEYFORMAT, a colon and /-separated CPC labels of A-Z, 0-9 and -")
    public static let mediaAudioAttributes = LintRule(
        id: "HLS-MEDIA-AUDIO-ATTR", severity: .error, section: "4.4.6.1",
        summary: "BIT-DEPTH, SAMPLE-RATE and CHANNELS only for AUDIO renditions")

    /// Every rule, in the order the documentation lists them.
    static let all: [LintRule] = [
        .header, .utf8, .tagValue, .attributeSyntax, .mixed, .segmentURI, .variantURI, .variableUndefined,
        .variableDefine, .attributeDuplicate, .attributeRequired, .attributeType, .attributeEnumeration, .tagOnce,
        .targetDurationMissing, .extinfTarget, .extinfMissing, .mediaSequencePosition, .discontinuitySequencePosition,
        .version, .byteRangeOffset, .keyNone, .mediaNameUnique, .mediaClosedCaptions, .mediaDefaultAutoselect,
        .mediaForced, .groupUndefined, .partInfMissing, .partDuration, .dateRangeDates, .dateRangeEndOnNext,
        .dateRangeProgramDateTime, .serverControl, .sessionData, .sessionKeyNone, .dateRangeIDConflict, .skipCanSkip,
        .canSkipDateRanges, .preloadHintEndList, .preloadHintPartInf, .renditionReportURI, .iFramesOnlyParts,
        .preloadHintDuplicate, .partTagOrder, .partDurationMin, .iFrameAttributes, .vodEndList, .appleCodecs,
        .appleResolution, .appleFrameRate, .appleAverageBandwidth, .appleIndependentSegments, .appleTargetDuration,
        .appleIFrame, .liveMediaSequence, .liveURISequence, .liveDiscontinuitySequence, .liveSegmentRemoved,
        .liveEndList, .liveTargetDuration, .byteOrderMark, .extinfSyntax, .keyAttributes, .mapIV, .mapByteRange,
        .mediaSubtitlesURI, .mediaInstreamID, .mediaChannels, .mediaDefaultUnique, .mediaAutoselectUnique,
        .closedCaptionsNone, .identifierCharacters, .sessionDataDuplicate, .sessionKeyDuplicate, .dateRangeDuration,
        .dateRangeCue, .interstitial, .variablesUnchecked, .livePlaylistType, .liveShortWindow,
        .liveUnchecked, .valuePositive, .mediaAudioAttributes, .videoLayout, .allowedCPC,
    ]
}
