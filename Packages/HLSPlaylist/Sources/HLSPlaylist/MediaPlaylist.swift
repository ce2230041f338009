/// An absolute byte range in a resource: `length` bytes starting at `offset`.
public struct ByteRange: Sendable, Hashable {
    public var length: UInt64
    public var offset: UInt64
    public init(length: UInt64, offset: UInt64) {
        self.length = length
        self.offset = offset
    }
    /// The offset just past the range (saturating).
    public var end: UInt64 { offset.addingReportingOverflow(length).overflow ? UInt64.max : offset + length }
}

/// An EXT-X-KEY or EXT-X-SESSION-KEY (RFC 8216bis §4.4.4.4, §4.4.6.5) with its URI resolved.
public struct Key: Sendable, Hashable {
    public var method: String
    public var uri: String?
    public var iv: [UInt8]?
    public var keyFormat: String
    public var keyFormatVersions: String?
    public var attributes: AttributeList

    init(_ a: AttributeList, resolve: (String) -> String) {
        attributes = a
        method = a.enumeratedString("METHOD") ?? a["METHOD"]?.text ?? ""
        uri = a.quotedString("URI").map(resolve)
        iv = a.hexadecimalSequence("IV")
        keyFormat = a.quotedString("KEYFORMAT") ?? "identity"
        keyFormatVersions = a.quotedString("KEYFORMATVERSIONS")
    }
}

/// An EXT-X-MAP (RFC 8216bis §4.4.4.5): the media initialization section, URI resolved, range absolute.
public struct MediaInitialization: Sendable, Hashable {
    public var uri: String
    public var byteRange: ByteRange?
}

/// An EXT-X-DATERANGE (RFC 8216bis §4.4.5.1).
public struct DateRange: Sendable, Hashable {
    public var id: String
    public var classAttribute: String?
    public var startDate: DateTime?
    public var cue: String?
    public var endDate: DateTime?
    public var duration: Double?
    public var plannedDuration: Double?
    public var endOnNext: Bool
    public var scte35Command: [UInt8]?
    public var scte35Out: [UInt8]?
    public var scte35In: [UInt8]?
    /// The `X-` client attributes in order.
    public var clientAttributes: [Attribute]
    public var attributes: AttributeList
    /// 0-based index of the tag's line in ``Playlist/lines``.
    public var lineIndex: Int

    init(_ a: AttributeList, lineIndex: Int) {
        attributes = a
        self.lineIndex = lineIndex
        id = a.quotedString("ID") ?? ""
        classAttribute = a.quotedString("CLASS")
        startDate = a.quotedString("START-DATE").flatMap { DateTime($0) }
        cue = a.quotedString("CUE")
        endDate = a.quotedString("END-DATE").flatMap { DateTime($0) }
        duration = a.decimalFloat("DURATION")
        plannedDuration = a.decimalFloat("PLANNED-DURATION")
        endOnNext = a.yesNo("END-ON-NEXT") ?? false
        scte35Command = a.hexadecimalSequence("SCTE35-CMD")
        scte35Out = a.hexadecimalSequence("SCTE35-OUT")
        scte35In = a.hexadecimalSequence("SCTE35-IN")
        clientAttributes = a.attributes.filter { $0.name.hasPrefix("X-") }
    }
}

/// An EXT-X-PART (RFC 8216bis §4.4.4.9) with everything in effect for it.
public struct PartialSegment: Sendable, Hashable {
    public var uri: String
    public var duration: Double
    public var independent: Bool
    public var byteRange: ByteRange?
    public var gap: Bool
    /// The media sequence number of the parent segment.
    public var mediaSequence: UInt64
    public var keys: [Key]
    public var map: MediaInitialization?
    public var lineIndex: Int
}

/// One media segment with every tag in effect for it resolved.
public struct MediaSegment: Sendable, Hashable {
    /// The URI, variables substituted, resolved against the playlist URL.
    public var uri: String {
        get { location.resolved }
        set { location.resolved = newValue }
    }
    /// The URI line as written (trimmed).
    public var rawURI: String {
        get { location.rawText }
        set { location.rawText = newValue }
    }
    /// Both URIs; the resolved one is built when first read.
    var location: LazyURI
    public var duration: Double
    public var title: String
    /// The absolute byte range (an implicit offset made explicit), when the segment is a sub-range.
    public var byteRange: ByteRange?
    /// The keys in effect (one per KEYFORMAT); empty when the segment is not encrypted.
    public var keys: [Key]
    public var map: MediaInitialization?
    /// Whether EXT-X-DISCONTINUITY precedes this segment.
    public var discontinuity: Bool
    public var discontinuitySequence: UInt64
    public var mediaSequence: UInt64
    /// The date of the segment's first sample: its own EXT-X-PROGRAM-DATE-TIME or one derived from the last one
    /// before it plus the durations since (nil when there is none, or a discontinuity came after it).
    public var programDateTime: DateTime?
    /// Whether ``programDateTime`` is the segment's own EXT-X-PROGRAM-DATE-TIME rather than derived.
    public var hasOwnProgramDateTime: Bool
    public var gap: Bool
    /// The EXT-X-BITRATE in effect (kbit/s); nil for a segment with EXT-X-BYTERANGE, to which it does not apply
    /// (RFC 8216bis 4.4.4.8).
    public var bitrate: UInt64?
    public var parts: [PartialSegment]
    /// 0-based line indices from the first line that belongs to the segment through its URI line.
    public var lineRange: Range<Int>
}

/// The resolved view of a media playlist.
public struct MediaPlaylist: Sendable, Hashable {
    public var version: UInt64?
    public var targetDuration: UInt64?
    public var mediaSequence: UInt64
    public var discontinuitySequence: UInt64
    public var endList: Bool
    public var playlistType: String?
    public var iFramesOnly: Bool
    public var independentSegments: Bool
    public var start: AttributeList?
    public var partTarget: Double?
    public var serverControl: AttributeList?
    /// SKIPPED-SEGMENTS of EXT-X-SKIP.
    public var skippedSegments: UInt64?
    public var recentlyRemovedDateRanges: [String]
    public var segments: [MediaSegment]
    /// Parts after the last full segment (the segment being produced).
    public var trailingParts: [PartialSegment]
    public var dateRanges: [DateRange]
    public var preloadHints: [AttributeList]
    public var renditionReports: [AttributeList]
    public var variables: Variables
    /// Problems found while resolving (undefined variables, unusable values).
    public var diagnostics: [ParseDiagnostic]

    /// Total number of EXT-X-PART tags.
    public var partCount: Int { segments.reduce(trailingParts.count) { $0 + $1.parts.count } }
    /// The sum of segment durations.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }
}

extension Playlist {
    /// The resolved media playlist view: URIs substituted and resolved against `url`, byte ranges made absolute,
    /// and the key, map, sequence numbers and program date time in effect for each segment and part.
    /// `parent` holds the variables of the multivariant playlist for EXT-X-DEFINE IMPORT.
    public func media(url: String? = nil, parent: Variables? = nil) -> MediaPlaylist {
        // One pass reads the playlist-wide tags and the segments together. The tags that change how segments are
        // numbered or resolved (EXT-X-MEDIA-SEQUENCE, EXT-X-DISCONTINUITY-SEQUENCE, EXT-X-DEFINE) normally come
        // before the first segment; when one comes later, the pass gives up and the playlist-wide tags are read
        // in a pass of their own first.
        if let result = resolveMedia(url: url, parent: parent, prescan: false) { return result }
        return resolveMedia(url: url, parent: parent, prescan: true) ?? MediaPlaylist.empty
    }

    /// Reads a playlist-wide tag into `result` (and EXT-X-DEFINE into `defines`). Returns whether the tag is one
    /// that must be known before the first segment is resolved.
    private func readPlaylistTag(
        _ known: KnownTag, _ t: Tag, _ index: Int, _ result: inout MediaPlaylist,
        _ defines: inout [(index: Int, attributes: AttributeList)]
    ) -> Bool {
        switch known {
        case .version: result.version = t.decimalInteger
        case .targetDuration: result.targetDuration = t.decimalInteger
        case .mediaSequence:
            result.mediaSequence = t.decimalInteger ?? 0
            return true
        case .discontinuitySequence:
            result.discontinuitySequence = t.decimalInteger ?? 0
            return true
        case .endList: result.endList = true
        case .playlistType: result.playlistType = t.enumeratedString
        case .iFramesOnly: result.iFramesOnly = true
        case .independentSegments: result.independentSegments = true
        case .start: result.start = t.attributes
        case .partInf: result.partTarget = t.attributes?.decimalFloat("PART-TARGET")
        case .serverControl: result.serverControl = t.attributes
        case .define:
            if let a = t.attributes { defines.append((index, a)) }
            return true
        default: break
        }
        return false
    }

    /// The resolution; nil when `prescan` is false and a tag that must come first came after a segment.
    private func resolveMedia(url: String?, parent: Variables?, prescan: Bool) -> MediaPlaylist? {
        var result = MediaPlaylist.empty
        let lines = self.lines
        var defines: [(index: Int, attributes: AttributeList)] = []
        if prescan {
            // Playlist-wide tags first: their values apply from the first segment wherever they appear.
            for index in lines.indices {
                guard let known = lines[index].storedKnownTag, known.scope != .mediaSegment else { continue }
                guard case .tag(let t) = lines[index].content else { continue }
                _ = readPlaylistTag(known, t, index, &result, &defines)
            }
        }
        var variables = Variables()
        var diagnostics: [ParseDiagnostic] = []
        let resolver = URIResolver(base: url)
        // Whether the variables and the starting sequence numbers have been fixed (at the first line that needs
        // them, or at the end).
        var started = false
        func substitute(_ raw: String, _ lineIndex: Int) -> String {
            guard let (s, undefined) = variables.substitute(raw) else {
                diagnostics.append(ParseDiagnostic(PlaylistError(.substitutionTooLong, line: lineIndex + 1, column: 1)))
                return raw
            }
            for name in undefined {
                diagnostics.append(
                    ParseDiagnostic(
                        PlaylistError(
                            .undefinedVariable, line: lineIndex + 1, column: 1, "undefined variable {$\(name)}")
                    ))
            }
            return s
        }
        func resolve(_ raw: String, _ lineIndex: Int) -> String {
            let scan = URIScan(raw)
            if scan.hasBrace { return resolver.resolve(substitute(raw, lineIndex)) }
            return resolver.resolve(raw, shape: scan.shape)
        }

        var segments: [MediaSegment] = []
        segments.reserveCapacity(lines.count / 2)
        var sequence: UInt64 = 0
        var discontinuitySequence: UInt64 = 0
        func start() {
            started = true
            let (collected, problems) = Variables.collect(defines: defines, url: url, parent: parent)
            variables = collected
            diagnostics = problems
            sequence = result.mediaSequence
            discontinuitySequence = result.discontinuitySequence
        }
        var keys: [Key] = []
        var map: MediaInitialization?
        var bitrate: UInt64?
        var extinfDuration: Double?
        var extinfTitle = ""
        var byteRangeSpec: ByteRangeSpec?
        var discontinuity = false
        var gap = false
        var ownDate: DateTime?
        var nextDate: Double?
        var parts: [PartialSegment] = []
        var firstLine: Int?
        // The end of the previous segment's byte range, when it had one (its URI is the last segment's).
        var previousRangeEnd: UInt64?
        var previousPartRange: (uri: String, end: UInt64)?
        var directoryMemo = URIResolver.DirectoryMemo()

        for index in lines.indices {
            if lines[index].storedIsURI {
                // The segment's URI line; handled after the switch.
                if !started { start() }
            } else if let known = lines[index].storedKnownTag {
                let scope = known.scope
                if scope == .mediaSegment || scope == .adMarker {
                    if firstLine == nil { firstLine = index }
                }
                if known == .extinf {
                    // The most common tag: only its duration and title are read.
                    (extinfDuration, extinfTitle) = lines.withUnsafeBufferPointer {
                        PlaylistLine.extinf(in: $0, at: index)
                    }
                    continue
                }
                if !known.usedByMediaResolution {
                    if !prescan, scope != .mediaSegment, case .tag(let t) = lines[index].content,
                        readPlaylistTag(known, t, index, &result, &defines), started
                    {
                        return nil
                    }
                    continue
                }
                if known == .byteRange || known == .programDateTime {
                    // One per segment in byte-range and dated playlists: read in place, not through a copy of the tag.
                    if !started { start() }
                    if known == .byteRange {
                        byteRangeSpec = lines.withUnsafeBufferPointer { PlaylistLine.byteRange(in: $0, at: index) }
                    } else {
                        ownDate = lines.withUnsafeBufferPointer { PlaylistLine.dateTime(in: $0, at: index) }
                    }
                    continue
                }
                guard case .tag(let t) = lines[index].content else { continue }
                if !started { start() }
                switch known {
                case .byteRange: byteRangeSpec = t.byteRange
                case .discontinuity:
                    discontinuity = true
                    nextDate = nil
                case .gap: gap = true
                case .bitrate: bitrate = t.decimalInteger
                case .programDateTime: ownDate = t.dateTime
                case .key:
                    guard let a = t.attributes else { break }
                    let key = Key(a, resolve: { resolve($0, index) })
                    if key.method == "NONE" {
                        keys = []
                    } else {
                        keys.removeAll { $0.keyFormat == key.keyFormat }
                        keys.append(key)
                    }
                case .map:
                    guard let a = t.attributes, let uri = a.quotedString("URI") else { break }
                    var range: ByteRange?
                    if let spec = a.quotedString("BYTERANGE").flatMap({ ByteRangeSpec.parse($0.utf8) }) {
                        range = ByteRange(length: spec.length, offset: spec.offset ?? 0)
                    }
                    map = MediaInitialization(uri: resolve(uri, index), byteRange: range)
                case .part:
                    guard let a = t.attributes, let uri = a.quotedString("URI") else { break }
                    let resolved = resolve(uri, index)
                    var range: ByteRange?
                    if let spec = a.quotedString("BYTERANGE").flatMap({ ByteRangeSpec.parse($0.utf8) }) {
                        let offset =
                            spec.offset ?? (previousPartRange?.uri == resolved ? previousPartRange?.end ?? 0 : 0)
                        range = ByteRange(length: spec.length, offset: offset)
                        previousPartRange = (resolved, range?.end ?? 0)
                    }
                    parts.append(
                        PartialSegment(
                            uri: resolved, duration: a.decimalFloat("DURATION") ?? 0,
                            independent: a.yesNo("INDEPENDENT") ?? false, byteRange: range,
                            gap: a.yesNo("GAP") ?? false, mediaSequence: sequence, keys: keys, map: map,
                            lineIndex: index))
                case .dateRange:
                    if let a = t.attributes { result.dateRanges.append(DateRange(a, lineIndex: index)) }
                case .skip:
                    if let a = t.attributes {
                        let skipped = a.decimalInteger("SKIPPED-SEGMENTS") ?? 0
                        result.skippedSegments = skipped
                        sequence = sequence &+ skipped
                        if let removed = a.quotedString("RECENTLY-REMOVED-DATERANGES") {
                            result.recentlyRemovedDateRanges = removed.split(separator: "\t").map(String.init)
                        }
                    }
                case .preloadHint: if let a = t.attributes { result.preloadHints.append(a) }
                case .renditionReport: if let a = t.attributes { result.renditionReports.append(a) }
                default: break
                }
                continue
            } else {
                if firstLine == nil, case .tag = lines[index].content { firstLine = index }
                continue
            }
            do {
                let location = resolver.lazy(
                    lines[index].uriBytes ?? [], substitute: { substitute($0, index) }, memo: &directoryMemo)
                if discontinuity { discontinuitySequence = discontinuitySequence &+ 1 }
                var range: ByteRange?
                if let spec = byteRangeSpec {
                    var offset: UInt64 = 0
                    if let o = spec.offset {
                        offset = o
                    } else if let end = previousRangeEnd, !segments.isEmpty,
                        segments[segments.count - 1].location.resolvesLike(location)
                    {
                        offset = end
                    }
                    let r = ByteRange(length: spec.length, offset: offset)
                    range = r
                    previousRangeEnd = r.end
                } else if previousRangeEnd != nil {
                    previousRangeEnd = nil
                }
                let duration = extinfDuration ?? 0
                var date: DateTime?
                if let ownDate {
                    date = ownDate
                } else if let nextDate {
                    date = DateTime(secondsSince1970: nextDate)
                }
                nextDate = date.map { $0.secondsSince1970 + duration }
                for i in parts.indices { parts[i].mediaSequence = sequence }
                // The title and parts are moved out with swap, which leaves them empty for the next segment, not with
                // `consume`: any `consume` in this function crashes Swift 6.3's type checker when the standard
                // library is the iOS 16/17 SDKs' (Scripts/check-ios-sdk.sh). `location` and `date` end here.
                var title = ""
                swap(&title, &extinfTitle)
                var segmentParts: [PartialSegment] = []
                swap(&segmentParts, &parts)
                segments.append(
                    MediaSegment(
                        location: location, duration: duration, title: title, byteRange: range,
                        keys: keys, map: map, discontinuity: discontinuity,
                        discontinuitySequence: discontinuitySequence, mediaSequence: sequence,
                        programDateTime: date, hasOwnProgramDateTime: ownDate != nil, gap: gap,
                        bitrate: byteRangeSpec == nil ? bitrate : nil, parts: segmentParts,
                        lineRange: (firstLine ?? index)..<(index + 1)))
                sequence = sequence &+ 1
                extinfDuration = nil
                byteRangeSpec = nil
                discontinuity = false
                gap = false
                if ownDate != nil { ownDate = nil }
                if previousPartRange != nil { previousPartRange = nil }
                firstLine = nil
            }
        }
        if !started { start() }
        result.variables = variables
        result.trailingParts = parts
        result.segments = segments
        result.diagnostics = diagnostics
        return result
    }
}

extension MediaPlaylist {
    static var empty: MediaPlaylist {
        MediaPlaylist(
            version: nil, targetDuration: nil, mediaSequence: 0, discontinuitySequence: 0, endList: false,
            playlistType: nil, iFramesOnly: false, independentSegments: false, start: nil, partTarget: nil,
            serverControl: nil, skippedSegments: nil, recentlyRemovedDateRanges: [], segments: [],
            trailingParts: [], dateRanges: [], preloadHints: [], renditionReports: [], variables: Variables(),
            diagnostics: [])
    }
}
