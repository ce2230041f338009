import TextCodecs

// Long file: the linter's checks, one function per area of the spec (the rules themselves are in LintRules.swift).
/// How serious a lint finding is.
public enum LintSeverity: String, Sendable, Hashable, Comparable {
    /// Breaks a MUST / MUST NOT / REQUIRED of RFC 8216bis.
    case error
    /// Goes against a SHOULD of the spec or Apple's HLS authoring specification.
    case warning
    /// Worth knowing; nothing is wrong.
    case info

    private var rank: Int {
        switch self {
        case .error: return 0
        case .warning: return 1
        case .info: return 2
        }
    }
    public static func < (a: LintSeverity, b: LintSeverity) -> Bool { a.rank < b.rank }
}

/// One finding: which rule, where (1-based line and column), and why.
public struct LintFinding: Sendable, Hashable, CustomStringConvertible {
    public var rule: LintRule
    public var line: Int
    public var column: Int
    public var message: String

    public init(rule: LintRule, line: Int, column: Int, message: String) {
        self.rule = rule
        self.line = line
        self.column = column
        self.message = message
    }

    /// The rule's severity.
    public var severity: LintSeverity { rule.severity }
    /// The spec section the rule comes from.
    public var section: String { rule.section }

    public var description: String {
        "\(line):\(column): \(severity.rawValue): \(message) [\(rule.id)] (\(section))"
    }
}

/// Checks a playlist against the MUST rules of RFC 8216bis that can be judged from its text, the SHOULD rules of
/// Apple's HLS authoring specification (as warnings), and, given the previous poll, the live-update rules.
public struct PlaylistLinter: Sendable {
    /// Every rule, in the order the documentation lists them.
    public static let rules: [LintRule] = LintRule.all

    public var url: String?
    public var parent: Variables?

    public init(url: String? = nil, parent: Variables? = nil) {
        self.url = url
        self.parent = parent
    }

    /// Lints `playlist`; with `previous` (the poll before), the live-update rules run too.
    /// Findings are sorted by line, then column.
    public func lint(_ playlist: Playlist, previous: Playlist? = nil) -> [LintFinding] {
        var context = LintContext(playlist: playlist)
        context.parseDiagnostics()
        context.fileBytes()
        context.structure()
        let (url, parent) = context.standIns(url: url, parent: parent)
        switch playlist.kind {
        case .media:
            let media = playlist.media(url: url, parent: parent)
            context.resolveDiagnostics(media.diagnostics)
            context.mediaRules(media)
            context.mediaConformance()
            context.interstitials(media)
            if let previous {
                let previousMedia = previous.media(url: url, parent: parent)
                context.liveRules(media, previous: previousMedia, previous)
                if media.mediaSequence >= previousMedia.mediaSequence {
                    context.liveConformance(media, previous: previousMedia, previous)
                }
            } else if !media.endList, media.playlistType != "VOD" {
                context.add(
                    .liveUnchecked, 0,
                    "a live playlist: the live-update rules need the previous poll (--previous) and were not checked")
            }
        case .multivariant:
            let multivariant = playlist.multivariant(url: url)
            context.resolveDiagnostics(multivariant.diagnostics)
            context.multivariantRules(multivariant)
            context.multivariantConformance(multivariant)
        case .unknown:
            break
        }
        return context.findings.sorted { ($0.line, $0.column, $0.rule.id) < ($1.line, $1.column, $1.rule.id) }
    }

    static func finding(_ rule: LintRule, line: Int, column: Int, _ message: String) -> LintFinding {
        LintFinding(rule: rule, line: line, column: column, message: message)
    }
}

struct LintContext {
    let playlist: Playlist
    var findings: [LintFinding] = []

    init(playlist: Playlist) { self.playlist = playlist }

    mutating func add(_ rule: LintRule, _ index: Int, column: Int = 1, _ message: String) {
        findings.append(PlaylistLinter.finding(rule, line: index + 1, column: column, message))
    }

    /// 1-based column of `NAME=` in a line (1 when not found).
    func column(of name: String, inLine index: Int) -> Int {
        guard index >= 0, index < playlist.lines.count else { return 1 }
        let bytes = Array(playlist.lines[index].bytes)
        let needle = Array((name + "=").utf8)
        guard needle.count <= bytes.count else { return 1 }
        var i = 0
        while i + needle.count <= bytes.count {
            if i == 0 || bytes[i - 1] == asciiComma || bytes[i - 1] == asciiColon || bytes[i - 1] == asciiSpace,
                bytes[i..<(i + needle.count)].elementsEqual(needle)
            {
                return i + 1
            }
            i += 1
        }
        return 1
    }

    mutating func parseDiagnostics() {
        for d in playlist.diagnostics {
            let rule: LintRule
            switch d.error.code {
            case .missingHeader: rule = .header
            case .invalidUTF8: rule = .utf8
            case .malformedAttributeList: rule = .attributeSyntax
            case .mixedPlaylist: rule = .mixed
            case .truncated: rule = .segmentURI
            case .truncatedVariant: rule = .variantURI
            default: rule = .tagValue
            }
            findings.append(
                PlaylistLinter.finding(rule, line: max(d.line, 1), column: max(d.column, 1), d.message))
        }
    }

    mutating func resolveDiagnostics(_ diagnostics: [ParseDiagnostic]) {
        for d in diagnostics {
            let rule: LintRule = d.error.code == .undefinedVariable ? .variableUndefined : .variableDefine
            findings.append(PlaylistLinter.finding(rule, line: max(d.line, 1), column: max(d.column, 1), d.message))
        }
    }

    /// Rules on single tags: attribute duplicates, requirements, types, enumerations; once-only tags; version.
    mutating func structure() {
        var seen: [KnownTag: Int] = [:]
        var requiredVersion: (UInt64, String, Int) = (1, "", 0)
        func need(_ v: UInt64, _ why: String, _ index: Int) {
            if v > requiredVersion.0 { requiredVersion = (v, why, index) }
        }
        let iFramesOnly = playlist.firstTag(.iFramesOnly) != nil
        var versionLine: Int?
        var declaredVersion: UInt64 = 1
        var defineNames: Set<String> = []
        for (index, line) in playlist.lines.enumerated() {
            if line.isURI, line.bytes.contains(0x7B), line.text.contains("{$") {
                need(8, "variable substitution", index)
            }
            // The most common line, read from its bytes without building its tag: a parsed EXTINF needs version 3
            // for a decimal duration and is checked for its comma (as tagConformance checks a built one).
            if let extinf = line.parsedExtinfShape {
                if extinf.decimal { need(3, "a decimal EXTINF duration", index) }
                if !extinf.hasComma {
                    add(
                        .extinfSyntax, index, column: 9 + extinf.durationLength,
                        "EXTINF needs a comma after the duration (#EXTINF:<duration>,[<title>])")
                }
                continue
            }
            guard case .tag(let tag) = line.content, let known = tag.known else { continue }
            if known.appearsOnce {
                if let first = seen[known] {
                    add(.tagOnce, index, "#\(known.rawValue) already appeared on line \(first + 1)")
                } else {
                    seen[known] = index
                }
            }
            switch known {
            case .version:
                versionLine = index
                declaredVersion = tag.decimalInteger ?? 1
            case .playlistType:
                // RFC 8216bis 4.4.3.5: the value is an enumerated-string, EVENT or VOD.
                if let type = tag.enumeratedString, type != "EVENT", type != "VOD" {
                    add(
                        .attributeEnumeration, index, column: 22,
                        "EXT-X-PLAYLIST-TYPE:\(type) is not one of EVENT, VOD")
                }
            case .extinf:
                if let e = tag.extinf, e.durationText.contains(".") { need(3, "a decimal EXTINF duration", index) }
            case .byteRange: need(4, "EXT-X-BYTERANGE", index)
            case .iFramesOnly: need(4, "EXT-X-I-FRAMES-ONLY", index)
            case .map: need(iFramesOnly ? 5 : 6, "EXT-X-MAP", index)
            case .skip: need(9, "EXT-X-SKIP", index)
            case .define:
                need(8, "EXT-X-DEFINE", index)
                if let a = tag.attributes {
                    let forms = ["NAME", "IMPORT", "QUERYPARAM"].filter { a[$0] != nil }
                    if forms.count != 1 {
                        add(.variableDefine, index, "EXT-X-DEFINE needs exactly one of NAME, IMPORT and QUERYPARAM")
                    }
                    if a["QUERYPARAM"] != nil { need(11, "EXT-X-DEFINE QUERYPARAM", index) }
                    if let name = a.quotedString("NAME") ?? a.quotedString("IMPORT") ?? a.quotedString("QUERYPARAM") {
                        if !defineNames.insert(name).inserted {
                            add(.variableDefine, index, "variable \(name) is defined twice")
                        }
                    }
                }
            default: break
            }
            tagConformance(known, tag, index)
            guard let attributes = tag.attributes else { continue }
            if known == .key || known == .sessionKey {
                if attributes["IV"] != nil { need(2, "the IV attribute", index) }
                if attributes["KEYFORMAT"] != nil || attributes["KEYFORMATVERSIONS"] != nil {
                    need(5, "KEYFORMAT/KEYFORMATVERSIONS", index)
                }
                if attributes["METHOD"]?.valueIs("SAMPLE-AES") == true { need(5, "METHOD=SAMPLE-AES", index) }
            }
            if known == .media, let id = attributes.quotedString("INSTREAM-ID"), id.hasPrefix("SERVICE") {
                need(7, "INSTREAM-ID SERVICE", index)
            }
            if known == .streamInf || known == .iFrameStreamInf, attributes["REQ-VIDEO-LAYOUT"] != nil {
                need(12, "REQ-VIDEO-LAYOUT", index)
            }
            for a in attributes where a.isQuoted && a.rawValue.contains("{$") {
                need(8, "variable substitution", index)
            }
            checkAttributes(known, attributes, index)
        }
        if requiredVersion.0 > declaredVersion {
            let where_ = versionLine ?? requiredVersion.2
            add(
                .version, where_,
                "\(requiredVersion.1) (line \(requiredVersion.2 + 1)) needs EXT-X-VERSION \(requiredVersion.0) or "
                    + "higher; the playlist declares \(versionLine == nil ? "none (version 1)" : String(declaredVersion))"
            )
        }
    }

    mutating func checkAttributes(_ known: KnownTag, _ attributes: AttributeList, _ index: Int) {
        var names: Set<String> = []
        for a in attributes where !names.insert(a.name).inserted {
            add(.attributeDuplicate, index, column: column(of: a.name, inLine: index), "\(a.name) appears twice")
        }
        guard let schema = Schema.attributes[known] else { return }
        for (name, spec) in schema.sorted(by: { $0.key < $1.key }) where spec.required && attributes[name] == nil {
            if known == .key || known == .sessionKey, name == "URI" { continue }
            add(.attributeRequired, index, "#\(known.rawValue) requires \(name)")
        }
        for a in attributes {
            guard let spec = schema[a.name] else { continue }
            if known == .streamInf, a.name == "CLOSED-CAPTIONS", a.rawValue == "NONE" { continue }
            if a.value(as: spec.type) == nil {
                add(
                    .attributeType, index, column: column(of: a.name, inLine: index),
                    "\(a.name)=\(a.rawValue) is not a \(typeName(spec.type))")
            } else if let values = spec.values, !values.contains(a.rawValue) {
                add(
                    .attributeEnumeration, index, column: column(of: a.name, inLine: index),
                    "\(a.name)=\(a.rawValue) is not one of \(values.joined(separator: ", "))")
            }
        }
        // RFC 8216bis 4.2: a quoted-string MUST be non-empty unless its attribute allows it, which only EXT-X-DEFINE
        // VALUE (4.4.2.3) and EXT-X-SKIP RECENTLY-REMOVED-DATERANGES (4.4.5.2) do. Client attributes (X-) of
        // EXT-X-DATERANGE are quoted-strings when quoted, so they count too.
        for a in attributes where a.isQuoted && a.rawValue.utf8.count == 2 {
            let declared = schema[a.name]?.type == .quotedString
            let client = known == .dateRange && a.name.hasPrefix("X-")
            let mayBeEmpty =
                (known == .define && a.name == "VALUE")
                || (known == .skip && a.name == "RECENTLY-REMOVED-DATERANGES")
            if declared || client, !mayBeEmpty {
                add(
                    .attributeType, index, column: column(of: a.name, inLine: index),
                    "\(a.name)=\"\" is an empty quoted-string, which only EXT-X-DEFINE VALUE and "
                        + "RECENTLY-REMOVED-DATERANGES may be")
            }
        }
        switch known {
        case .key:
            if attributes["METHOD"]?.valueIs("NONE") == true {
                if attributes.count > 1 { add(.keyNone, index, "METHOD=NONE allows no other attributes") }
            } else if attributes["URI"] == nil {
                add(.keyNone, index, "#EXT-X-KEY with a METHOD other than NONE requires URI")
            }
        case .sessionKey:
            if attributes["METHOD"]?.valueIs("NONE") == true {
                add(.sessionKeyNone, index, "EXT-X-SESSION-KEY METHOD MUST NOT be NONE")
            } else if attributes["URI"] == nil {
                add(.attributeRequired, index, "#EXT-X-SESSION-KEY requires URI")
            }
        case .streamInf, .iFrameStreamInf:
            // RFC 8216bis 4.4.6.2: SCORE is a positive decimal-floating-point (the type check lets 0 through).
            if let score = attributes["SCORE"], let value = score.decimalFloat, value <= 0 {
                add(
                    .valuePositive, index, column: column(of: "SCORE", inLine: index),
                    "SCORE=\(score.rawValue) is not a positive decimal-floating-point")
            }
        case .sessionData:
            if (attributes["VALUE"] == nil) == (attributes["URI"] == nil) {
                add(.sessionData, index, "EXT-X-SESSION-DATA needs exactly one of VALUE and URI")
            }
        case .media:
            let type = attributes["TYPE"]?.rawValue
            if type == "CLOSED-CAPTIONS" {
                if attributes["URI"] != nil {
                    add(
                        .mediaClosedCaptions, index, column: column(of: "URI", inLine: index),
                        "CLOSED-CAPTIONS renditions have no URI")
                }
                if attributes["INSTREAM-ID"] == nil {
                    add(.mediaClosedCaptions, index, "CLOSED-CAPTIONS renditions require INSTREAM-ID")
                }
            } else if attributes["INSTREAM-ID"] != nil {
                add(
                    .mediaClosedCaptions, index, column: column(of: "INSTREAM-ID", inLine: index),
                    "INSTREAM-ID is only for CLOSED-CAPTIONS")
            }
            if attributes.yesNo("DEFAULT") == true, attributes.yesNo("AUTOSELECT") == false {
                add(
                    .mediaDefaultAutoselect, index, column: column(of: "AUTOSELECT", inLine: index),
                    "AUTOSELECT must be YES when DEFAULT is YES")
            }
            if attributes["FORCED"] != nil, type != "SUBTITLES" {
                add(
                    .mediaForced, index, column: column(of: "FORCED", inLine: index),
                    "FORCED is only for SUBTITLES")
            }
        case .dateRange:
            let start = attributes.quotedString("START-DATE").flatMap { DateTime($0) }
            if let endText = attributes.quotedString("END-DATE") {
                if let end = DateTime(endText), let start, end.secondsSince1970 < start.secondsSince1970 {
                    add(
                        .dateRangeDates, index, column: column(of: "END-DATE", inLine: index),
                        "END-DATE is before START-DATE")
                } else if DateTime(endText) == nil {
                    add(
                        .attributeType, index, column: column(of: "END-DATE", inLine: index),
                        "END-DATE is not an ISO 8601 date")
                }
            }
            if let s = attributes.quotedString("START-DATE"), DateTime(s) == nil {
                add(
                    .attributeType, index, column: column(of: "START-DATE", inLine: index),
                    "START-DATE is not an ISO 8601 date")
            }
            if attributes["END-ON-NEXT"] != nil {
                if attributes["CLASS"] == nil {
                    add(.dateRangeEndOnNext, index, "END-ON-NEXT requires CLASS")
                }
                if attributes["DURATION"] != nil || attributes["END-DATE"] != nil {
                    add(.dateRangeEndOnNext, index, "END-ON-NEXT excludes DURATION and END-DATE")
                }
            }
        default: break
        }
    }

    func typeName(_ t: AttributeType) -> String {
        switch t {
        case .decimalInteger: return "decimal-integer"
        case .hexadecimalSequence: return "hexadecimal-sequence"
        case .decimalFloat: return "decimal-floating-point"
        case .signedDecimalFloat: return "signed-decimal-floating-point"
        case .quotedString: return "quoted-string"
        case .enumeratedString: return "enumerated-string"
        case .decimalResolution: return "decimal-resolution"
        }
    }

    mutating func mediaRules(_ media: MediaPlaylist) {
        let lines = playlist.lines
        var targetLine: Int?
        var partInfLine: Int?
        var firstSegmentLine: Int?
        var firstDiscontinuityLine: Int?
        var sawPDT = false
        var sawExtinf = false
        var previousByteRange: (uri: String, present: Bool)?
        var pendingByteRange: (ByteRangeSpec, Int)?
        var skipLine: Int?
        var endListLine: Int?
        var partInSegment = false
        var preloadHints: [(type: String, index: Int)] = []
        for (index, line) in lines.enumerated() {
            // A parsed EXTINF line only marks its segment as having one (no tag built for it).
            if line.parsedExtinfShape != nil {
                sawExtinf = true
                continue
            }
            switch line.content {
            case .tag(let t):
                switch t.known {
                case .part: partInSegment = true
                case .discontinuity, .key, .map, .programDateTime:
                    if partInSegment, let known = t.known {
                        add(
                            .partTagOrder, index,
                            "#\(known.rawValue) applies to the segment and must come before its first EXT-X-PART")
                    }
                default: break
                }
                switch t.known {
                case .endList: endListLine = index
                case .preloadHint:
                    if let type = t.attributes?["TYPE"]?.rawValue { preloadHints.append((type, index)) }
                case .targetDuration: targetLine = index
                case .partInf: partInfLine = index
                case .programDateTime: sawPDT = true
                case .extinf: sawExtinf = true
                case .skip: skipLine = index
                case .discontinuity: if firstDiscontinuityLine == nil { firstDiscontinuityLine = index }
                case .byteRange: if let b = t.byteRange { pendingByteRange = (b, index) }
                case .mediaSequence:
                    if let f = firstSegmentLine {
                        add(.mediaSequencePosition, index, "must come before the first segment (line \(f + 1))")
                    }
                case .discontinuitySequence:
                    if let f = firstSegmentLine ?? firstDiscontinuityLine {
                        add(
                            .discontinuitySequencePosition, index,
                            "must come before any segment or EXT-X-DISCONTINUITY (line \(f + 1))")
                    }
                default: break
                }
            case .uri:
                if firstSegmentLine == nil { firstSegmentLine = index }
                if !sawExtinf { add(.extinfMissing, index, "media segment without EXTINF") }
                let uri = line.uri ?? ""
                if let (spec, tagIndex) = pendingByteRange {
                    if spec.offset == nil, previousByteRange.map({ !$0.present || $0.uri != uri }) ?? true {
                        add(
                            .byteRangeOffset, tagIndex,
                            "EXT-X-BYTERANGE without an offset must follow a sub-range of the same resource")
                    }
                    previousByteRange = (uri, true)
                } else {
                    previousByteRange = (uri, false)
                }
                pendingByteRange = nil
                sawExtinf = false
                partInSegment = false
            default: break
            }
        }
        if targetLine == nil {
            add(.targetDurationMissing, 0, "media playlists require EXT-X-TARGETDURATION")
        }
        let target = media.targetDuration
        if let target {
            // RFC 8216bis 4.4.3.1: the target duration is at least 1 (a decimal-integer, so 0 is the only way to miss).
            if target < 1, let targetLine {
                add(.valuePositive, targetLine, column: 23, "EXT-X-TARGETDURATION must be at least 1")
            }
            for s in media.segments where s.duration.rounded(.toNearestOrAwayFromZero) > Double(target) {
                let extinfLine = s.lineRange.lowerBound..<s.lineRange.upperBound
                let at = extinfLine.first { lines[$0].knownTag == .extinf } ?? s.lineRange.lowerBound
                add(
                    .extinfTarget, at, column: 9,
                    "EXTINF \(Numbers.formatShort(s.duration)) rounds above the target duration \(target)")
            }
            if target > 6, let targetLine {
                add(.appleTargetDuration, targetLine, column: 23, "target duration \(target) is above 6 seconds")
            }
        }
        if !media.dateRanges.isEmpty, !sawPDT, let first = media.dateRanges.first {
            add(.dateRangeProgramDateTime, first.lineIndex, "EXT-X-DATERANGE requires an EXT-X-PROGRAM-DATE-TIME tag")
        }
        for d in media.dateRanges {
            if let duration = d.attributes["DURATION"], let v = duration.signedDecimalFloat, v < 0 {
                add(.dateRangeDates, d.lineIndex, "DURATION is negative")
            }
        }
        let allParts = media.segments.flatMap(\.parts) + media.trailingParts
        if let firstPart = allParts.first {
            if partInfLine == nil {
                add(.partInfMissing, firstPart.lineIndex, "EXT-X-PART requires EXT-X-PART-INF")
            } else if let partTarget = media.partTarget {
                for p in allParts where p.duration > partTarget {
                    add(
                        .partDuration, p.lineIndex, column: column(of: "DURATION", inLine: p.lineIndex),
                        "part duration \(Numbers.formatShort(p.duration)) exceeds PART-TARGET "
                            + Numbers.formatShort(partTarget))
                }
            }
        }
        // Looked for only in playlists that use it (low-latency ones): a scan of every line otherwise.
        let serverControlLine =
            partInfLine != nil || media.serverControl != nil ? lines.firstIndex { $0.knownTag == .serverControl } : nil
        if let partInfLine, serverControlLine == nil {
            add(
                .serverControl, partInfLine,
                "EXT-X-PART-INF requires PART-HOLD-BACK, and there is no EXT-X-SERVER-CONTROL")
        }
        if let sc = media.serverControl, let scLine = serverControlLine {
            if let t = target, let hb = sc.decimalFloat("HOLD-BACK"), hb < 3 * Double(t) {
                add(
                    .serverControl, scLine, column: column(of: "HOLD-BACK", inLine: scLine),
                    "HOLD-BACK \(Numbers.formatShort(hb)) is less than three target durations")
            }
            if let pt = media.partTarget {
                if let phb = sc.decimalFloat("PART-HOLD-BACK") {
                    if phb < 2 * pt {
                        add(
                            .serverControl, scLine, column: column(of: "PART-HOLD-BACK", inLine: scLine),
                            "PART-HOLD-BACK \(Numbers.formatShort(phb)) is less than twice PART-TARGET")
                    }
                } else {
                    add(.serverControl, scLine, "PART-HOLD-BACK is required with EXT-X-PART-INF")
                }
            }
            if let t = target, let skip = sc.decimalFloat("CAN-SKIP-UNTIL"), skip < 6 * Double(t) {
                add(
                    .serverControl, scLine, column: column(of: "CAN-SKIP-UNTIL", inLine: scLine),
                    "CAN-SKIP-UNTIL \(Numbers.formatShort(skip)) is less than six target durations")
            }
        }
        lowLatencyRules(media, skipLine: skipLine, endListLine: endListLine, preloadHints: preloadHints)
        dateRangeConflicts(media)
        if media.playlistType == "VOD", !media.endList, skipLine == nil,
            let typeLine = lines.firstIndex(where: { $0.knownTag == .playlistType })
        {
            add(.vodEndList, typeLine, "a VOD playlist should end with EXT-X-ENDLIST")
        }
    }

    /// EXT-X-SKIP, EXT-X-PRELOAD-HINT, CAN-SKIP-DATERANGES and the shortest part duration (LL-HLS).
    mutating func lowLatencyRules(
        _ media: MediaPlaylist, skipLine: Int?, endListLine: Int?, preloadHints: [(type: String, index: Int)]
    ) {
        let lines = playlist.lines
        let serverControlLine = lines.firstIndex { $0.knownTag == .serverControl }
        let sc = media.serverControl
        let canSkipUntil = sc?["CAN-SKIP-UNTIL"] != nil
        if let sc, let scLine = serverControlLine, sc["CAN-SKIP-DATERANGES"] != nil, !canSkipUntil {
            add(
                .canSkipDateRanges, scLine, column: column(of: "CAN-SKIP-DATERANGES", inLine: scLine),
                "CAN-SKIP-DATERANGES requires CAN-SKIP-UNTIL")
        }
        if let skipLine {
            if !canSkipUntil {
                add(
                    .skipCanSkip, skipLine,
                    "EXT-X-SKIP (a delta update) needs CAN-SKIP-UNTIL in EXT-X-SERVER-CONTROL")
            }
            if endListLine != nil {
                add(.skipCanSkip, skipLine, "a playlist with EXT-X-ENDLIST is never a delta update")
            }
            let removed = lines[skipLine].attributeListValue?["RECENTLY-REMOVED-DATERANGES"] != nil
            if removed, sc?.yesNo("CAN-SKIP-DATERANGES") != true {
                add(
                    .skipCanSkip, skipLine,
                    column: column(of: "RECENTLY-REMOVED-DATERANGES", inLine: skipLine),
                    "RECENTLY-REMOVED-DATERANGES (skipped date ranges) needs CAN-SKIP-DATERANGES=YES")
            }
        }
        for (index, line) in lines.enumerated() where line.knownTag == .renditionReport {
            guard let uri = line.attributeListValue?.quotedString("URI"), URIReference(uri).scheme != nil else {
                continue
            }
            add(
                .renditionReportURI, index, column: column(of: "URI", inLine: index),
                "the rendition report URI \"\(uri)\" must be relative to this playlist's URI")
        }
        if media.iFramesOnly, let firstPart = (media.segments.flatMap(\.parts) + media.trailingParts).first {
            add(.iFramesOnlyParts, firstPart.lineIndex, "an I-frames-only playlist should not use EXT-X-PART")
        }
        var firstOfType: [String: Int] = [:]
        for hint in preloadHints {
            if endListLine != nil {
                add(.preloadHintEndList, hint.index, "a playlist with EXT-X-ENDLIST must not hint a resource")
            }
            if hint.type == "PART", media.partTarget == nil, lines.allSatisfy({ $0.knownTag != .partInf }) {
                add(.preloadHintPartInf, hint.index, "a TYPE=PART hint needs EXT-X-PART-INF")
            }
            if let first = firstOfType[hint.type] {
                add(
                    .preloadHintDuplicate, hint.index,
                    "a second TYPE=\(hint.type) hint (the first is on line \(first + 1))")
            } else {
                firstOfType[hint.type] = hint.index
            }
        }
        // RFC 8216bis does not ask PART-TARGET to be positive; with PART-TARGET=0 every part longer than 0 already
        // breaks HLS-PART-DURATION, and no duration is below 85% of 0, so a zero target needs no finding of its own.
        guard let partTarget = media.partTarget else { return }
        // Parts of complete segments: the last part of each is exempt; trailing parts: the newest is exempt
        // (it may turn out to be its segment's last).
        for parts in media.segments.map(\.parts) + [media.trailingParts] where !parts.isEmpty {
            for k in 0..<(parts.count - 1) {
                let p = parts[k]
                if p.independent || p.gap || parts[k + 1].gap { continue }
                if p.duration < 0.85 * partTarget - 1e-9 {
                    add(
                        .partDurationMin, p.lineIndex, column: column(of: "DURATION", inLine: p.lineIndex),
                        "part duration \(Numbers.formatShort(p.duration)) is below 85% of PART-TARGET "
                            + Numbers.formatShort(partTarget))
                }
            }
        }
    }

    /// Two EXT-X-DATERANGE tags with one ID must agree on every attribute both carry.
    mutating func dateRangeConflicts(_ media: MediaPlaylist) {
        var firstByID: [String: DateRange] = [:]
        for d in media.dateRanges {
            guard let first = firstByID[d.id] else {
                firstByID[d.id] = d
                continue
            }
            for a in d.attributes {
                guard let earlier = first.attributes[a.name], earlier.rawValue != a.rawValue else { continue }
                add(
                    .dateRangeIDConflict, d.lineIndex, column: column(of: a.name, inLine: d.lineIndex),
                    "\(a.name)=\(a.rawValue) differs from \(earlier.rawValue) in the EXT-X-DATERANGE with the same ID "
                        + "on line \(first.lineIndex + 1)")
            }
        }
    }

    mutating func multivariantRules(_ m: MultivariantPlaylist) {
        var groups: [String: Set<String>] = [:]
        var namesSeen: [String: Int] = [:]
        for r in m.renditions {
            groups[r.type, default: []].insert(r.groupID)
            let key = r.type + "\u{1}" + r.groupID + "\u{1}" + r.name
            if let first = namesSeen[key] {
                add(
                    .mediaNameUnique, r.lineIndex, column: column(of: "NAME", inLine: r.lineIndex),
                    "NAME \"\(r.name)\" already used in group \"\(r.groupID)\" on line \(first + 1)")
            } else {
                namesSeen[key] = r.lineIndex
            }
        }
        for v in m.variants + m.iFrameVariants {
            for (attr, type) in [
                ("AUDIO", "AUDIO"), ("VIDEO", "VIDEO"), ("SUBTITLES", "SUBTITLES"),
                ("CLOSED-CAPTIONS", "CLOSED-CAPTIONS"),
            ] {
                guard let group = v.attributes.quotedString(attr) else { continue }
                if !(groups[type]?.contains(group) ?? false) {
                    add(
                        .groupUndefined, v.lineIndex, column: column(of: attr, inLine: v.lineIndex),
                        "\(attr)=\"\(group)\" names no EXT-X-MEDIA group of TYPE=\(type)")
                }
            }
        }
        for v in m.iFrameVariants {
            for name in ["FRAME-RATE", "AUDIO", "SUBTITLES", "CLOSED-CAPTIONS"] where v.attributes[name] != nil {
                add(
                    .iFrameAttributes, v.lineIndex, column: column(of: name, inLine: v.lineIndex),
                    "EXT-X-I-FRAME-STREAM-INF does not take \(name)")
            }
        }
        func isAudioOnly(_ v: VariantStream) -> Bool {
            v.codecs.map { codecs in
                codecs.split(separator: ",").allSatisfy { c in
                    let t = c.trimmingPrefixSpaces
                    return t.hasPrefix("mp4a") || t.hasPrefix("ac-3") || t.hasPrefix("ec-3") || t.hasPrefix("opus")
                        || t.hasPrefix("fLaC") || t.hasPrefix("alac") || t.hasPrefix("ac-4")
                }
            } ?? false
        }
        for v in m.variants {
            let isAudioOnly = isAudioOnly(v)
            if v.codecs == nil { add(.appleCodecs, v.lineIndex, "variant without CODECS") }
            if v.averageBandwidth == nil {
                add(.appleAverageBandwidth, v.lineIndex, "variant without AVERAGE-BANDWIDTH")
            }
            if !isAudioOnly {
                if v.resolution == nil { add(.appleResolution, v.lineIndex, "video variant without RESOLUTION") }
                if v.frameRate == nil { add(.appleFrameRate, v.lineIndex, "video variant without FRAME-RATE") }
            }
        }
        if !m.independentSegments, !m.variants.isEmpty {
            add(.appleIndependentSegments, 0, "no EXT-X-INDEPENDENT-SEGMENTS")
        }
        // I-frame playlists are for trick play of video: an audio-only presentation (every variant's CODECS audio)
        // has no I-frames to offer.
        if m.iFrameVariants.isEmpty, m.variants.contains(where: { !isAudioOnly($0) }) {
            add(.appleIFrame, 0, "no EXT-X-I-FRAME-STREAM-INF playlists")
        }
    }

    mutating func liveRules(_ current: MediaPlaylist, previous: MediaPlaylist, _ previousPlaylist: Playlist) {
        let lines = playlist.lines
        let sequenceLine = lines.firstIndex { $0.knownTag == .mediaSequence } ?? 0
        if current.mediaSequence < previous.mediaSequence {
            add(
                .liveMediaSequence, sequenceLine,
                "media sequence \(current.mediaSequence) is below the previous poll's \(previous.mediaSequence)")
            return
        }
        if previous.endList {
            if playlist.write() != previousPlaylist.write() {
                add(.liveEndList, 0, "the previous poll had EXT-X-ENDLIST but the playlist changed")
            }
            return
        }
        if let pt = previous.targetDuration, let ct = current.targetDuration, pt != ct {
            let line = lines.firstIndex { $0.knownTag == .targetDuration } ?? 0
            add(.liveTargetDuration, line, "target duration changed from \(pt) to \(ct)")
        }
        var previousBySequence: [UInt64: MediaSegment] = [:]
        var previousByURI: [String: UInt64] = [:]
        for s in previous.segments {
            previousBySequence[s.mediaSequence] = s
            previousByURI[s.uri] = s.mediaSequence
        }
        var currentBySequence: [UInt64: MediaSegment] = [:]
        for s in current.segments {
            currentBySequence[s.mediaSequence] = s
            if let old = previousByURI[s.uri], old != s.mediaSequence {
                add(
                    .liveURISequence, s.lineRange.upperBound - 1,
                    "\(s.rawURI) had media sequence \(old) and now has \(s.mediaSequence)")
            }
        }
        if current.skippedSegments == nil {
            let removed = previous.segments.filter { $0.mediaSequence < current.mediaSequence }
            let expected = removed.last.map { last -> UInt64 in
                // The next segment's discontinuity sequence, after the last removed one.
                if let next = previousBySequence[last.mediaSequence &+ 1] {
                    return next.discontinuitySequence &- (next.discontinuity ? 1 : 0)
                }
                return last.discontinuitySequence
            }
            if let expected, !removed.isEmpty, removed.count < previous.segments.count,
                current.discontinuitySequence != expected
            {
                let line = lines.firstIndex { $0.knownTag == .discontinuitySequence } ?? 0
                add(
                    .liveDiscontinuitySequence, line,
                    "discontinuity sequence is \(current.discontinuitySequence); \(expected) expected after the "
                        + "removed segments")
            }
            for s in previous.segments where s.mediaSequence >= current.mediaSequence {
                if let now = currentBySequence[s.mediaSequence] {
                    if now.uri != s.uri, previousByURI[now.uri] == nil {
                        add(
                            .liveSegmentRemoved, now.lineRange.upperBound - 1,
                            "segment \(s.mediaSequence) was \(s.rawURI) in the previous poll")
                        break
                    }
                } else {
                    let at = current.segments.last.map { $0.lineRange.upperBound - 1 } ?? 0
                    add(
                        .liveSegmentRemoved, at,
                        "segment \(s.mediaSequence) (\(s.rawURI)) is gone but was not at the start of the playlist")
                    break
                }
            }
        }
    }
}

extension Substring {
    fileprivate var trimmingPrefixSpaces: Substring { drop { $0 == " " } }
}
