import TextCodecs

/// The checks added when every MUST of RFC 8216bis was gone through one by one: bytes of the file, attribute values
/// a schema type cannot express, rendition groups, date-range relations, interstitials and the
/// live-update rules that need the previous poll. Lint.swift calls them from its passes.
extension LintContext {
    /// RFC 8216bis 4.1: no BOM; no control characters but CR and LF (tab is let through: the spec itself makes
    /// RECENTLY-REMOVED-DATERANGES tab-delimited).
    mutating func fileBytes() {
        if playlist.hasByteOrderMark { add(.byteOrderMark, 0, "the playlist starts with a byte order mark") }
        for (index, line) in playlist.lines.enumerated() {
            var previous: UInt8 = 0
            var column = 0
            for b in line.bytes {
                column += 1
                let control = (b < 0x20 && b != 0x09) || b == 0x7F || (previous == 0xC2 && b >= 0x80 && b <= 0x9F)
                previous = b
                if control {
                    add(.byteOrderMark, index, column: column, "control character \(hex(b)) in the playlist")
                    break
                }
            }
        }
    }

    private func hex(_ b: UInt8) -> String { "0x" + Hex.encode([b], uppercase: true) }

    /// Without the multivariant playlist or the playlist's URL, EXT-X-DEFINE IMPORT and QUERYPARAM cannot be
    /// checked: each such define gets an info finding, and a stand-in value lets the rest of the playlist (its
    /// variable references included) be checked as usual.
    mutating func standIns(url: String?, parent: Variables?) -> (url: String?, parent: Variables?) {
        var imports: [String: String] = [:]
        var query: [String] = []
        for (index, line) in playlist.lines.enumerated() where line.knownTag == .define {
            guard let a = line.attributeListValue else { continue }
            if parent == nil, playlist.kind == .media, let n = a.quotedString("IMPORT") {
                imports[n] = "unchecked"
                add(
                    .variablesUnchecked, index, column: column(of: "IMPORT", inLine: index),
                    "EXT-X-DEFINE IMPORT=\"\(n)\" could not be checked without the multivariant playlist (--parent)")
            }
            if url == nil, let n = a.quotedString("QUERYPARAM") {
                query.append(n)
                add(
                    .variablesUnchecked, index, column: column(of: "QUERYPARAM", inLine: index),
                    "EXT-X-DEFINE QUERYPARAM=\"\(n)\" could not be checked without the playlist's URL (--url)")
            }
        }
        let standInURL =
            url
            ?? (query.isEmpty
                ? nil
                : "https://unchecked.invalid/playlist.m3u8?" + query.map { $0 + "=unchecked" }.joined(separator: "&"))
        return (standInURL, parent ?? (imports.isEmpty ? nil : Variables(imports)))
    }

    /// Checks of one tag that its attribute schema cannot express.
    mutating func tagConformance(_ known: KnownTag, _ tag: Tag, _ index: Int) {
        if known == .extinf, let e = tag.extinf, !e.hasComma {
            add(
                .extinfSyntax, index, column: 9 + e.durationText.utf8.count,
                "EXTINF needs a comma after the duration (#EXTINF:<duration>,[<title>])")
        }
        guard let a = tag.attributes else { return }
        switch known {
        case .key, .sessionKey:
            if let iv = a["IV"], let bytes = iv.hexadecimalSequence, bytes.count != 16 || iv.rawValue.utf8.count != 34 {
                add(
                    .keyAttributes, index, column: column(of: "IV", inLine: index),
                    "IV must be a 128-bit hexadecimal-sequence (0x and 32 hex digits)")
            }
            // RFC 8216bis 4.4.4.4: AES-256-GCM segments carry their own IV, and SAMPLE-AES-CTR has none.
            if a["IV"] != nil, let method = a["METHOD"]?.rawValue, method == "AES-256-GCM" || method == "SAMPLE-AES-CTR"
            {
                add(
                    .keyAttributes, index, column: column(of: "IV", inLine: index),
                    "METHOD=\(method) must not have an IV attribute")
            }
            if let versions = a.quotedString("KEYFORMATVERSIONS") {
                let parts = versions.split(separator: "/", omittingEmptySubsequences: false)
                if parts.contains(where: { p in Numbers.decimalInteger(Array(p.utf8)).map { $0 == 0 } ?? true }) {
                    add(
                        .keyAttributes, index, column: column(of: "KEYFORMATVERSIONS", inLine: index),
                        "KEYFORMATVERSIONS \"\(versions)\" must be positive integers separated by /")
                }
            }
        case .map:
            // RFC 8216bis 4.4.4.5: the EXT-X-BYTERANGE format, except that the offset is REQUIRED (an
            // initialization section has no previous sub-range to continue from).
            if let range = a.quotedString("BYTERANGE"), ByteRangeSpec.parse(Array(range.utf8))?.offset == nil {
                add(
                    .mapByteRange, index, column: column(of: "BYTERANGE", inLine: index),
                    "EXT-X-MAP BYTERANGE \"\(range)\" is not <n>@<o> (the offset is required)")
            }
        case .media:
            mediaTag(a, index)
        case .streamInf, .iFrameStreamInf:
            identifiers(a, index, ["STABLE-VARIANT-ID": "+/=", "PATHWAY-ID": ""])
            variantLists(a, index)
        case .contentSteering:
            identifiers(a, index, ["STABLE-VARIANT-ID": "+/=", "PATHWAY-ID": ""])
        case .dateRange:
            dateRangeTag(a, index)
        case .define:
            for name in ["NAME", "IMPORT", "QUERYPARAM"] {
                guard let v = a.quotedString(name) else { continue }
                if v.isEmpty || !v.utf8.allSatisfy({ isAlphanumeric($0) || $0 == 0x2D || $0 == 0x5F }) {
                    add(
                        .variableDefine, index, column: column(of: name, inLine: index),
                        "variable name \"\(v)\" may use only A-Z, a-z, 0-9, - and _")
                }
            }
            if a["IMPORT"] != nil, playlist.kind == .multivariant {
                add(
                    .variableDefine, index, column: column(of: "IMPORT", inLine: index),
                    "EXT-X-DEFINE IMPORT is only for media playlists")
            }
        default: break
        }
    }

    private mutating func mediaTag(_ a: AttributeList, _ index: Int) {
        let type = a["TYPE"]?.rawValue
        if type == "SUBTITLES", a["URI"] == nil {
            add(.mediaSubtitlesURI, index, "a SUBTITLES rendition requires URI")
        }
        if let id = a.quotedString("INSTREAM-ID"), type == "CLOSED-CAPTIONS", !Self.validInstreamID(id) {
            add(
                .mediaInstreamID, index, column: column(of: "INSTREAM-ID", inLine: index),
                "INSTREAM-ID \"\(id)\" is none of CC1-CC4 and SERVICE1-SERVICE63")
        }
        if type == "AUDIO", let channels = a.quotedString("CHANNELS") {
            // RFC 8216bis 4.4.6.1: count / audio coding identifiers (or "-") / channel usage indicators.
            let parameters = channels.split(separator: "/", omittingEmptySubsequences: false)
            let at = column(of: "CHANNELS", inLine: index)
            if parameters.first.flatMap({ Numbers.decimalInteger(Array($0.utf8)) }) == nil {
                add(
                    .mediaChannels, index, column: at,
                    "CHANNELS \"\(channels)\" must start with the channel count as a decimal-integer")
            } else if parameters.count > 1,
                parameters[1].split(separator: ",", omittingEmptySubsequences: false).contains(where: {
                    $0.isEmpty || !$0.utf8.allSatisfy(isLabelCharacter)
                })
            {
                add(
                    .mediaChannels, index, column: at,
                    "CHANNELS \"\(channels)\": the audio coding identifiers \"\(parameters[1])\" may use only A-Z, 0-9 "
                        + "and - (\"-\" alone when the audio is not object-based)")
            } else if parameters.count > 2,
                let bad = parameters[2].split(separator: ",", omittingEmptySubsequences: false).first(where: {
                    !["BINAURAL", "IMMERSIVE", "DOWNMIX"].contains($0)
                })
            {
                add(
                    .mediaChannels, index, column: at,
                    "CHANNELS \"\(channels)\": usage indicator \"\(bad)\" is none of BINAURAL, IMMERSIVE, DOWNMIX")
            }
        }
        // RFC 8216bis 4.4.6.1: BIT-DEPTH, SAMPLE-RATE and CHANNELS MUST NOT be present unless TYPE is AUDIO.
        if let type, type != "AUDIO" {
            for name in ["BIT-DEPTH", "SAMPLE-RATE", "CHANNELS"] where a[name] != nil {
                add(
                    .mediaAudioAttributes, index, column: column(of: name, inLine: index),
                    "\(name) is only for AUDIO renditions, not TYPE=\(type)")
            }
        }
        identifiers(a, index, ["STABLE-RENDITION-ID": "+/="])
    }

    /// RFC 8216bis 4.4.6.2: REQ-VIDEO-LAYOUT is a comma-separated list of view presentation entries, each a
    /// slash-separated list of specifiers (a video channel or a projection specifier); ALLOWED-CPC is a
    /// comma-separated list of entries, each a KEYFORMAT, a colon and slash-separated CPC labels of A-Z, 0-9 and -.
    private mutating func variantLists(_ a: AttributeList, _ index: Int) {
        // Found by name id (no name lookup per variant: most variants have neither).
        if let at = a.firstPosition(ofNameID: Self.layoutID), let layout = a.quotedString(at: at) {
            let specifiers = layout.split(separator: ",", omittingEmptySubsequences: false).flatMap {
                $0.split(separator: "/", omittingEmptySubsequences: false)
            }
            if let bad = specifiers.first(where: { !Self.videoLayoutSpecifiers.contains(String($0)) }) {
                add(
                    .videoLayout, index, column: column(of: "REQ-VIDEO-LAYOUT", inLine: index),
                    "REQ-VIDEO-LAYOUT specifier \"\(bad)\" is none of "
                        + Self.videoLayoutSpecifiers.joined(separator: ", "))
            }
        }
        if let at = a.firstPosition(ofNameID: Self.allowedCPCID), let cpc = a.quotedString(at: at) {
            for entry in cpc.split(separator: ",", omittingEmptySubsequences: false) {
                // A KEYFORMAT may hold colons itself (urn:uuid:...): the labels follow the last one.
                let colon = entry.lastIndex(of: ":")
                let labels = colon.map {
                    entry[entry.index(after: $0)...].split(separator: "/", omittingEmptySubsequences: false)
                }
                let good =
                    colon.map { $0 > entry.startIndex } == true
                    && labels?.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(isLabelCharacter) }) == true
                if !good {
                    add(
                        .allowedCPC, index, column: column(of: "ALLOWED-CPC", inLine: index),
                        "ALLOWED-CPC entry \"\(entry)\" is not KEYFORMAT:LABEL[/LABEL...] with labels of A-Z, 0-9 and -"
                    )
                    break
                }
            }
        }
    }

    private static let layoutID = AttributeNames.id("REQ-VIDEO-LAYOUT")
    private static let allowedCPCID = AttributeNames.id("ALLOWED-CPC")

    /// The specifiers of REQ-VIDEO-LAYOUT: video channels (4.4.6.2), then projections.
    static let videoLayoutSpecifiers = [
        "CH-STEREO", "CH-MONO", "PROJ-RECT", "PROJ-EQUI", "PROJ-HEQU", "PROJ-PRIM", "PROJ-AIV",
    ]

    static func validInstreamID(_ id: String) -> Bool {
        if id.hasPrefix("CC") { return ["CC1", "CC2", "CC3", "CC4"].contains(id) }
        guard id.hasPrefix("SERVICE") else { return false }
        let digits = Array(id.utf8.dropFirst(7))
        guard digits.first != 0x30, let n = Numbers.decimalInteger(digits) else { return false }
        return n >= 1 && n <= 63
    }

    /// Attributes limited to letters, digits, `.`, `-`, `_` and the extra characters given per name.
    private mutating func identifiers(_ a: AttributeList, _ index: Int, _ extras: [String: String]) {
        for (name, extra) in extras.sorted(by: { $0.key < $1.key }) {
            guard let v = a.quotedString(name) else { continue }
            let allowed = Set((".-_" + extra).utf8)
            if v.isEmpty || !v.utf8.allSatisfy({ isAlphanumeric($0) || allowed.contains($0) }) {
                add(
                    .identifierCharacters, index, column: column(of: name, inLine: index),
                    "\(name) \"\(v)\" may use only letters, digits and \(Array(".-_" + extra).map(String.init))")
            }
        }
    }

    private mutating func dateRangeTag(_ a: AttributeList, _ index: Int) {
        if let cue = a.quotedString("CUE") {
            let values = cue.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if let bad = values.first(where: { !["PRE", "POST", "ONCE"].contains($0) }) {
                add(
                    .dateRangeCue, index, column: column(of: "CUE", inLine: index),
                    "CUE value \"\(bad)\" is none of PRE, POST and ONCE")
            } else if values.contains("PRE"), values.contains("POST") {
                add(
                    .dateRangeCue, index, column: column(of: "CUE", inLine: index),
                    "CUE cannot be both PRE and POST")
            }
        }
        if let planned = a["PLANNED-DURATION"]?.signedDecimalFloat, planned < 0 {
            add(
                .dateRangeDates, index, column: column(of: "PLANNED-DURATION", inLine: index),
                "PLANNED-DURATION is negative")
        }
        if let start = a.quotedString("START-DATE").flatMap({ DateTime($0) }),
            let end = a.quotedString("END-DATE").flatMap({ DateTime($0) }), let duration = a.decimalFloat("DURATION"),
            abs(end.secondsSince1970 - start.secondsSince1970 - duration) > 0.0005
        {
            add(
                .dateRangeDuration, index, column: column(of: "DURATION", inLine: index),
                "DURATION \(Numbers.formatShort(duration)) disagrees with END-DATE, which is "
                    + "\(Numbers.formatShort(end.secondsSince1970 - start.secondsSince1970)) s after START-DATE")
        }
    }

    /// Interstitials (RFC 8216bis appendix D): judged on the attributes of every tag with one ID taken together.
    mutating func interstitials(_ media: MediaPlaylist) {
        var merged: [String: (first: Int, attributes: [String: Attribute])] = [:]
        var order: [String] = []
        for d in media.dateRanges {
            if merged[d.id] == nil {
                merged[d.id] = (d.lineIndex, [:])
                order.append(d.id)
            }
            for a in d.attributes where merged[d.id]?.attributes[a.name] == nil {
                merged[d.id]?.attributes[a.name] = a
            }
        }
        let enumerations: [String: [String]] = [
            "X-SNAP": ["OUT", "IN"], "X-RESTRICT": ["SKIP", "JUMP"], "X-TIMELINE-OCCUPIES": ["POINT", "RANGE"],
            "X-TIMELINE-STYLE": ["HIGHLIGHT", "PRIMARY"], "X-CONTENT-MAY-VARY": ["YES", "NO"],
        ]
        for id in order {
            guard let (line, attributes) = merged[id], attributes["CLASS"]?.quotedString == "com.apple.hls.interstitial"
            else { continue }
            if (attributes["X-ASSET-URI"] == nil) == (attributes["X-ASSET-LIST"] == nil) {
                add(.interstitial, line, "an interstitial needs exactly one of X-ASSET-URI and X-ASSET-LIST")
            }
            for (name, allowed) in enumerations.sorted(by: { $0.key < $1.key }) {
                guard let a = attributes[name] else { continue }
                let multiple = name == "X-SNAP" || name == "X-RESTRICT"
                let values = multiple ? a.text.split(separator: ",").map(String.init) : [a.text]
                if let bad = values.first(where: { !allowed.contains($0) }) ?? (values.isEmpty ? "" : nil) {
                    add(
                        .interstitial, line, column: column(of: name, inLine: line),
                        "\(name) value \"\(bad)\" is none of \(allowed.joined(separator: ", "))")
                }
            }
            if let a = attributes["X-RESUME-OFFSET"], a.signedDecimalFloat == nil {
                add(
                    .interstitial, line, column: column(of: "X-RESUME-OFFSET", inLine: line),
                    "X-RESUME-OFFSET=\(a.rawValue) is not a signed-decimal-floating-point")
            }
            // Appendix D.2 makes X-PLAYOUT-LIMIT a decimal-floating-point of seconds and asks nothing more: 0 is not
            // reported.
            if let a = attributes["X-PLAYOUT-LIMIT"], a.decimalFloat == nil {
                add(
                    .interstitial, line, column: column(of: "X-PLAYOUT-LIMIT", inLine: line),
                    "X-PLAYOUT-LIMIT=\(a.rawValue) is not a decimal-floating-point")
            }
        }
    }

    /// An EXT-X-MAP under an AES-128 key needs that key to have an IV. A part's BYTERANGE without an offset needs the part before it to be a sub-range of the same resource.
    mutating func mediaConformance() {
        var aesWithoutIV = false
        var previousPart: (uri: String?, ranged: Bool)?
        for (index, line) in playlist.lines.enumerated() {
            guard let known = line.knownTag, let a = line.attributeListValue else { continue }
            if known == .part {
                let uri = a.quotedString("URI")
                if let text = a.quotedString("BYTERANGE"), let spec = ByteRangeSpec.parse(Array(text.utf8)) {
                    if spec.offset == nil, previousPart.map({ !$0.ranged || $0.uri != uri }) ?? true {
                        add(
                            .byteRangeOffset, index, column: column(of: "BYTERANGE", inLine: index),
                            "EXT-X-PART BYTERANGE without an offset must follow a part that is a sub-range of the "
                                + "same resource")
                    }
                    previousPart = (uri, true)
                } else {
                    previousPart = (uri, false)
                }
            } else if known == .key {
                aesWithoutIV = a["METHOD"]?.valueIs("AES-128") == true && a["IV"] == nil
            } else if known == .map, aesWithoutIV {
                add(.mapIV, index, "EXT-X-MAP is encrypted with AES-128, so its EXT-X-KEY needs an IV")
            }
        }
    }

    /// Rendition groups and the tags of which no two may be alike.
    mutating func multivariantConformance(_ m: MultivariantPlaylist) {
        var defaults: [String: Int] = [:]
        var autoselected: [String: Int] = [:]
        for r in m.renditions {
            let group = r.type + "\u{1}" + r.groupID
            if r.isDefault {
                if let first = defaults[group] {
                    add(
                        .mediaDefaultUnique, r.lineIndex, column: column(of: "DEFAULT", inLine: r.lineIndex),
                        "group \"\(r.groupID)\" already has a DEFAULT=YES rendition on line \(first + 1)")
                } else {
                    defaults[group] = r.lineIndex
                }
            }
            if r.autoselect {
                let key = [
                    group, r.language ?? "", r.assocLanguage ?? "", r.forced ? "F" : "", r.characteristics ?? "",
                ]
                .joined(separator: "\u{1}")
                if let first = autoselected[key] {
                    add(
                        .mediaAutoselectUnique, r.lineIndex, column: column(of: "AUTOSELECT", inLine: r.lineIndex),
                        "AUTOSELECT=YES rendition like the one on line \(first + 1) (same LANGUAGE, ASSOC-LANGUAGE, "
                            + "FORCED and CHARACTERISTICS)")
                } else {
                    autoselected[key] = r.lineIndex
                }
            }
        }
        if let none = m.variants.first(where: { $0.attributes["CLOSED-CAPTIONS"]?.valueIs("NONE") == true }) {
            for v in m.variants where v.attributes["CLOSED-CAPTIONS"]?.valueIs("NONE") != true {
                add(
                    .closedCaptionsNone, v.lineIndex,
                    "line \(none.lineIndex + 1) has CLOSED-CAPTIONS=NONE, so every EXT-X-STREAM-INF must have it")
            }
        }
        var sessionData: [String: Int] = [:]
        var sessionKeys: [String: Int] = [:]
        for (index, line) in playlist.lines.enumerated() {
            guard let a = line.attributeListValue else { continue }
            if line.knownTag == .sessionData, let id = a.quotedString("DATA-ID") {
                let key = id + "\u{1}" + (a.quotedString("LANGUAGE") ?? "")
                if let first = sessionData[key] {
                    add(
                        .sessionDataDuplicate, index,
                        "DATA-ID \"\(id)\" with this LANGUAGE already appeared on line \(first + 1)")
                } else {
                    sessionData[key] = index
                }
            } else if line.knownTag == .sessionKey {
                let key = ["METHOD", "URI", "IV", "KEYFORMAT", "KEYFORMATVERSIONS"].map { a[$0]?.rawValue ?? "" }
                    .joined(separator: "\u{1}")
                if let first = sessionKeys[key] {
                    add(.sessionKeyDuplicate, index, "the same EXT-X-SESSION-KEY already appeared on line \(first + 1)")
                } else {
                    sessionKeys[key] = index
                }
            }
        }
    }

    /// With the previous poll: the playlist type's promise, and the three-target-duration window.
    mutating func liveConformance(_ current: MediaPlaylist, previous: MediaPlaylist, _ previousPlaylist: Playlist) {
        let lines = playlist.lines
        let typeLine = lines.firstIndex { $0.knownTag == .playlistType } ?? 0
        if previous.playlistType == "VOD", !previous.endList, playlist.write() != previousPlaylist.write() {
            add(.livePlaylistType, typeLine, "a VOD playlist changed since the previous poll")
        }
        if previous.playlistType == "EVENT", current.skippedSegments == nil {
            let kept = zip(previous.segments, current.segments).allSatisfy { $0.uri == $1.uri }
            if current.mediaSequence != previous.mediaSequence || current.segments.count < previous.segments.count
                || !kept
            {
                add(.livePlaylistType, typeLine, "an EVENT playlist lost or changed segments since the previous poll")
            }
        }
        if !current.endList, current.skippedSegments == nil, current.mediaSequence > previous.mediaSequence,
            let target = current.targetDuration
        {
            let total = current.segments.reduce(0) { $0 + $1.duration }
            if total < 3 * Double(target) - 1e-9 {
                let line = lines.firstIndex { $0.knownTag == .mediaSequence } ?? 0
                add(
                    .liveShortWindow, line,
                    "segments were removed, leaving \(Numbers.formatShort(total)) s: less than three target "
                        + "durations (\(3 * target) s)")
            }
        }
    }
}

/// A character of a CPC label or an audio coding identifier: A-Z, 0-9 or -.
private func isLabelCharacter(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || b == 0x2D
}

private func isAlphanumeric(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
}
