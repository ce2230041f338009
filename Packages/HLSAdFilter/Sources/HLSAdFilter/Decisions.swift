public import HLSPlaylist

/// The rule that decided a segment: an opaque identifier over a private enum, so rules can be added later.
public struct AdRule: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable, CaseIterable {
        case content = "content"
        case cueOut = "EXT-X-CUE-OUT"
        case cueOutCont = "EXT-X-CUE-OUT-CONT"
        case adobeCue = "EXT-X-CUE"
        case oatcls = "EXT-OATCLS-SCTE35"
        case scte35Tag = "EXT-X-SCTE35"
        case splicePoint = "EXT-X-SPLICEPOINT-SCTE35"
        case dateRangeSCTE35 = "EXT-X-DATERANGE:SCTE35"
        case twitchDateRange = "EXT-X-DATERANGE:twitch-stitched-ad"
        case adDateRange = "EXT-X-DATERANGE:ad"
        case twitchTitle = "EXTINF:title"
        case originChange = "origin-change"
        case adHost = "ad-host"
        case pathChange = "path-change"
        case durationHeuristic = "duration-heuristic"
        case carriedOver = "previous-poll"
    }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Not an ad.
    public static let content = AdRule(.content)
    /// EXT-X-CUE-OUT (bare, `DURATION=`, or with an SCTE35 payload) up to EXT-X-CUE-IN or the duration.
    public static let cueOut = AdRule(.cueOut)
    /// EXT-X-CUE-OUT-CONT (attribute or `elapsed/duration` form) met without a CUE-OUT in the window.
    public static let cueOutCont = AdRule(.cueOutCont)
    /// Adobe-style EXT-X-CUE TYPE="SpliceOut" with DURATION.
    public static let adobeCue = AdRule(.adobeCue)
    /// EXT-OATCLS-SCTE35 with an out-of-network payload (and EXT-X-ASSET).
    public static let oatcls = AdRule(.oatcls)
    /// EXT-X-SCTE35 with CUE-OUT=YES or an out-of-network payload.
    public static let scte35Tag = AdRule(.scte35Tag)
    /// EXT-X-SPLICEPOINT-SCTE35 with an out-of-network payload.
    public static let splicePoint = AdRule(.splicePoint)
    /// EXT-X-DATERANGE with SCTE35-OUT or an advertisement SCTE35-CMD, paired by ID or bounded by its duration.
    public static let dateRangeSCTE35 = AdRule(.dateRangeSCTE35)
    /// EXT-X-DATERANGE with CLASS `twitch-stitched-ad` or an ID starting `stitched-ad-`.
    public static let twitchDateRange = AdRule(.twitchDateRange)
    /// EXT-X-DATERANGE describing one ad by the ad creative signaling attribute `X-AD-CREATIVE-SIGNALING` (ad
    /// stitchers write one per stitched ad), over its duration.
    public static let adDateRange = AdRule(.adDateRange)
    /// An EXTINF title other than `live` in a stream whose content segments are titled `live`.
    public static let twitchTitle = AdRule(.twitchTitle)
    /// A discontinuity-bounded run served from another origin than the content around it.
    public static let originChange = AdRule(.originChange)
    /// A discontinuity-bounded run served from a known ad host.
    public static let adHost = AdRule(.adHost)
    /// A discontinuity-bounded pod served from the content's own host under another path (a stitcher that lists
    /// or redirects its ad pods under its own paths, DAI style), with content from the content's path on both
    /// sides.
    public static let pathChange = AdRule(.pathChange)
    /// A discontinuity-bounded run with an ad-like total duration (off by default).
    public static let durationHeuristic = AdRule(.durationHeuristic)
    /// Decided in an earlier poll (live), kept so the segment's URI never changes.
    public static let carriedOver = AdRule(.carriedOver)

    /// The rule's identifier (the tag or heuristic name).
    public var id: String { base.rawValue }
    public var description: String { base.rawValue }

    /// The rule with identifier `id`.
    public init?(id: String) {
        guard let b = Base(rawValue: id) else { return nil }
        base = b
    }
}

/// The decision for one media segment.
public struct SegmentDecision: Sendable, Hashable {
    /// The media sequence number.
    public var mediaSequence: UInt64
    /// The segment URI, resolved against the playlist URL.
    public var uri: String
    public var duration: Double
    /// Whether the segment is an ad.
    public var isAd: Bool
    /// Why, in words.
    public var reason: String
    /// The tag or heuristic that decided it.
    public var rule: AdRule
    /// The ad break the segment belongs to (an ID from the markers, or one made up from the first sequence number).
    public var breakID: String?

    public init(
        mediaSequence: UInt64, uri: String, duration: Double, isAd: Bool, reason: String, rule: AdRule,
        breakID: String?
    ) {
        self.mediaSequence = mediaSequence
        self.uri = uri
        self.duration = duration
        self.isAd = isAd
        self.reason = reason
        self.rule = rule
        self.breakID = breakID
    }
}

/// A host or path pattern naming an ad server. Patterns match whole host labels or path components, never
/// substrings: `ads.` matches `ads.example.com` but not `uploads.example.com`.
public struct AdHostPattern: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        /// `doubleclick.net`: the host or any subdomain of it.
        case domain([Substring])
        /// `ads.`: a host label.
        case label(Substring)
        /// `/ads/`: a path component.
        case pathComponent(Substring)
    }
    let kind: Kind
    public let description: String

    /// `example.com` (a domain and its subdomains), `ads.` (a host label) or `/ads/` (a path component).
    public init?(_ text: String) {
        description = text
        let lower = text.lowercased()
        if lower.hasPrefix("/") {
            let name = lower.split(separator: "/")
            guard name.count == 1, let first = name.first else { return nil }
            kind = .pathComponent(first)
        } else if lower.hasSuffix(".") {
            let labels = lower.split(separator: ".")
            guard labels.count == 1, let first = labels.first else { return nil }
            kind = .label(first)
        } else {
            let labels = lower.split(separator: ".", omittingEmptySubsequences: false)
            guard !labels.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
            kind = .domain(labels)
        }
    }

    /// Whether the pattern looks at path components (rather than the host).
    public var needsPath: Bool {
        if case .pathComponent = kind { return true }
        return false
    }

    /// Whether a URL with this host and path matches.
    public func matches(host: String, path: String) -> Bool {
        let h = host.lowercased()
        switch kind {
        case .domain(let labels):
            let hostLabels = h.split(separator: ".", omittingEmptySubsequences: false)
            guard hostLabels.count >= labels.count else { return false }
            return Array(hostLabels.suffix(labels.count)) == labels
        case .label(let label):
            return h.split(separator: ".").contains(label)
        case .pathComponent(let component):
            return path.lowercased().split(separator: "/").contains(component)
        }
    }

    /// A small default list of ad-serving hosts.
    public static let defaults: [AdHostPattern] = [
        "doubleclick.net", "2mdn.net", "googlesyndication.com", "ads.", "adserver.", "/ads/",
    ].compactMap { AdHostPattern($0) }
}

/// What the filter looks for and how it cleans.
public struct AdFilterOptions: Sendable, Hashable {
    /// Ad-serving host and path patterns for server-side insertion without markers.
    public var adHosts: [AdHostPattern] = AdHostPattern.defaults
    /// Detect server-side insertion by an origin change across discontinuities.
    public var detectOriginChange: Bool = true
    /// Treat discontinuity-bounded runs of typical ad lengths as ads (off by default; never used on a stream with
    /// markers).
    public var durationHeuristics: Bool = false
    /// A break with no duration and no end marker ends after this many seconds.
    public var maximumBreakDuration: Double = 600

    public init() {}
}

/// One ad break found in a playlist.
public struct AdBreak: Sendable, Hashable {
    public var id: String
    public var rule: AdRule
    public var firstMediaSequence: UInt64
    public var lastMediaSequence: UInt64
    public var duration: Double
}

/// A slate that stands in for one ad segment in a live playlist.
public struct SlateSlot: Sendable, Hashable {
    /// The media sequence number of the ad segment (and of the slate).
    public var mediaSequence: UInt64
    /// The slate's duration (the ad segment's EXTINF).
    public var duration: Double
    /// The URI of the last content segment before the slate (resolved), when the window has one.
    public var anchorURI: String?
    /// Its media sequence number.
    public var anchorMediaSequence: UInt64?
    /// Seconds from the anchor segment's start to the slate's start (the anchor's duration plus any slates between).
    public var offsetFromAnchor: Double
    /// Whether the segments around are fMP4 (EXT-X-MAP) rather than MPEG-TS.
    public var isFragmentedMP4: Bool
    /// fMP4: the URI of the anchor segment's initialization section (EXT-X-MAP, resolved), which holds the
    /// timescale its decode times count in.
    public var anchorMapURI: String?
    /// When the anchor segment is AES-128 encrypted: its key's URI (resolved) and IV (explicit, or the media sequence
    /// number as a 16-byte big-endian integer), so a slate maker can decrypt it.
    public var anchorKeyURI: String?
    public var anchorIV: [UInt8]?

    public init(
        mediaSequence: UInt64, duration: Double, anchorURI: String?, anchorMediaSequence: UInt64?,
        offsetFromAnchor: Double, isFragmentedMP4: Bool, anchorMapURI: String? = nil, anchorKeyURI: String? = nil,
        anchorIV: [UInt8]? = nil
    ) {
        self.anchorKeyURI = anchorKeyURI
        self.anchorIV = anchorIV
        self.mediaSequence = mediaSequence
        self.duration = duration
        self.anchorURI = anchorURI
        self.anchorMediaSequence = anchorMediaSequence
        self.offsetFromAnchor = offsetFromAnchor
        self.isFragmentedMP4 = isFragmentedMP4
        self.anchorMapURI = anchorMapURI
    }
}

/// The result of filtering one playlist.
public struct AdFilterResult: Sendable {
    /// The cleaned playlist.
    public var playlist: Playlist
    /// One decision per segment of the input, in order.
    public var decisions: [SegmentDecision]
    public var breaks: [AdBreak]
    /// Live: the slates in the output, by media sequence number.
    public var slates: [SlateSlot]
    /// Things a user should know (an all-ad VOD left as it was, an unterminated break, ...).
    public var warnings: [String]
}
