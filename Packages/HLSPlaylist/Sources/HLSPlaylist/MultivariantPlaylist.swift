/// An EXT-X-STREAM-INF variant stream with its URI line (RFC 8216bis §4.4.6.2).
///
/// The typed fields are read from ``attributes`` when asked for (the first attribute of each name wins), so
/// resolving a multivariant playlist creates no string or number per attribute. Setting a field stores the new
/// value beside the attributes; setting ``attributes`` keeps every field's value as it was before (as when the
/// fields were copied out of the list once), so fields and attributes change independently, as they always have.
public struct VariantStream: Sendable, Hashable {
    public var bandwidth: UInt64? {
        get { integer(0) }
        set { setOverride(.integer(0, newValue)) }
    }
    public var averageBandwidth: UInt64? {
        get { integer(1) }
        set { setOverride(.integer(1, newValue)) }
    }
    public var score: Double? {
        get { float(2) }
        set { setOverride(.float(2, newValue)) }
    }
    public var codecs: String? {
        get { string(3) }
        set { setOverride(.string(3, newValue)) }
    }
    public var supplementalCodecs: String? {
        get { string(4) }
        set { setOverride(.string(4, newValue)) }
    }
    public var resolution: Resolution? {
        get {
            for case .resolution(let v) in overrides { return v }
            return position(5).flatMap { storedAttributes.resolution(at: $0) }
        }
        set { setOverride(.resolution(newValue)) }
    }
    public var frameRate: Double? {
        get { float(6) }
        set { setOverride(.float(6, newValue)) }
    }
    public var hdcpLevel: String? {
        get { string(7) }
        set { setOverride(.string(7, newValue)) }
    }
    public var videoRange: String? {
        get { string(8) }
        set { setOverride(.string(8, newValue)) }
    }
    public var audio: String? {
        get { string(9) }
        set { setOverride(.string(9, newValue)) }
    }
    public var video: String? {
        get { string(10) }
        set { setOverride(.string(10, newValue)) }
    }
    public var subtitles: String? {
        get { string(11) }
        set { setOverride(.string(11, newValue)) }
    }
    /// The CLOSED-CAPTIONS group id, or nil (also nil for `NONE`; see ``attributes``).
    public var closedCaptions: String? {
        get { string(12) }
        set { setOverride(.string(12, newValue)) }
    }
    public var pathwayID: String? {
        get { string(13) }
        set { setOverride(.string(13, newValue)) }
    }
    public var stableVariantID: String? {
        get { string(14) }
        set { setOverride(.string(14, newValue)) }
    }
    /// The URI, variables substituted, resolved against the playlist URL.
    public var uri: String {
        get { location.resolved }
        set { location.resolved = newValue }
    }
    public var rawURI: String {
        get { location.rawText }
        set { location.rawText = newValue }
    }
    /// Both URIs; the resolved one is built when first read.
    var location: LazyURI
    /// The tag's attribute list. Setting it leaves the typed fields as they were.
    public var attributes: AttributeList {
        get { storedAttributes }
        set {
            freezeFields()
            storedAttributes = newValue
        }
    }
    /// 0-based index of the tag line; the URI line follows it.
    public var lineIndex: Int
    public var uriLineIndex: Int

    private var storedAttributes: AttributeList
    /// Fields set since the variant was read (empty for a resolved variant, so it costs no allocation).
    private var overrides: [Override]

    /// A field value set by the user: the field's number (see ``nameIDs``) and the value.
    private enum Override: Sendable, Hashable {
        case integer(Int, UInt64?)
        case float(Int, Double?)
        case string(Int, String?)
        case resolution(Resolution?)

        var field: Int {
            switch self {
            case .integer(let f, _), .float(let f, _), .string(let f, _): return f
            case .resolution: return 5
            }
        }
    }

    /// The ``AttributeNames`` id of the attribute behind each field, by field number.
    private static let nameIDs: [Int] = [
        "BANDWIDTH", "AVERAGE-BANDWIDTH", "SCORE", "CODECS", "SUPPLEMENTAL-CODECS", "RESOLUTION", "FRAME-RATE",
        "HDCP-LEVEL", "VIDEO-RANGE", "AUDIO", "VIDEO", "SUBTITLES", "CLOSED-CAPTIONS", "PATHWAY-ID",
        "STABLE-VARIANT-ID",
    ].map { AttributeNames.id($0) }

    init(_ a: consuming AttributeList, location: consuming LazyURI, lineIndex: Int, uriLineIndex: Int) {
        storedAttributes = a
        overrides = []
        self.location = location
        self.lineIndex = lineIndex
        self.uriLineIndex = uriLineIndex
    }

    /// The position of the first attribute behind `field`, or nil.
    private func position(_ field: Int) -> Int? {
        let ids = VariantStream.nameIDs
        guard field >= 0, field < ids.count else { return nil }
        return storedAttributes.firstPosition(ofNameID: ids[field])
    }

    private func integer(_ field: Int) -> UInt64? {
        for case .integer(let f, let v) in overrides where f == field { return v }
        return position(field).flatMap { storedAttributes.decimalInteger(at: $0) }
    }
    private func float(_ field: Int) -> Double? {
        for case .float(let f, let v) in overrides where f == field { return v }
        return position(field).flatMap { storedAttributes.decimalFloat(at: $0) }
    }
    private func string(_ field: Int) -> String? {
        for case .string(let f, let v) in overrides where f == field { return v }
        guard let p = position(field) else { return nil }
        // HDCP-LEVEL and VIDEO-RANGE are enumerated strings, the others quoted strings.
        if field == 7 || field == 8 { return storedAttributes[p].enumeratedString }
        return storedAttributes.quotedString(at: p)
    }

    private mutating func setOverride(_ o: Override) {
        let field = o.field
        if let i = overrides.firstIndex(where: { $0.field == field }) {
            overrides[i] = o
        } else {
            overrides.append(o)
        }
    }

    /// Stores every field's current value as an override, so a new attribute list does not change it.
    private mutating func freezeFields() {
        let values = fieldValues
        overrides = values
    }

    /// Every field's current value, in field order.
    private var fieldValues: [Override] {
        [
            .integer(0, bandwidth), .integer(1, averageBandwidth), .float(2, score), .string(3, codecs),
            .string(4, supplementalCodecs), .resolution(resolution), .float(6, frameRate), .string(7, hdcpLevel),
            .string(8, videoRange), .string(9, audio), .string(10, video), .string(11, subtitles),
            .string(12, closedCaptions), .string(13, pathwayID), .string(14, stableVariantID),
        ]
    }

    public static func == (a: VariantStream, b: VariantStream) -> Bool {
        guard a.lineIndex == b.lineIndex, a.uriLineIndex == b.uriLineIndex, a.location == b.location,
            a.storedAttributes == b.storedAttributes
        else { return false }
        // Without overrides the fields are read from equal attribute lists, so they are equal.
        if a.overrides.isEmpty && b.overrides.isEmpty { return true }
        return a.fieldValues == b.fieldValues
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(lineIndex)
        hasher.combine(uriLineIndex)
        hasher.combine(location)
        hasher.combine(storedAttributes)
        hasher.combine(fieldValues)
    }
}

/// An EXT-X-MEDIA rendition (RFC 8216bis §4.4.6.1).
public struct Rendition: Sendable, Hashable {
    public var type: String
    public var groupID: String
    public var name: String
    public var language: String?
    public var assocLanguage: String?
    public var isDefault: Bool
    public var autoselect: Bool
    public var forced: Bool
    public var instreamID: String?
    public var characteristics: String?
    public var channels: String?
    public var uri: String?
    public var attributes: AttributeList
    public var lineIndex: Int
}

/// An EXT-X-SESSION-DATA (RFC 8216bis §4.4.6.4).
public struct SessionData: Sendable, Hashable {
    public var dataID: String
    public var value: String?
    public var uri: String?
    public var format: String?
    public var language: String?
}

/// The resolved view of a multivariant playlist.
public struct MultivariantPlaylist: Sendable, Hashable {
    public var version: UInt64?
    public var independentSegments: Bool
    public var start: AttributeList?
    public var variants: [VariantStream]
    /// EXT-X-I-FRAME-STREAM-INF tags (their URI is in the URI attribute).
    public var iFrameVariants: [VariantStream]
    public var renditions: [Rendition]
    public var sessionData: [SessionData]
    public var sessionKeys: [Key]
    /// SERVER-URI of EXT-X-CONTENT-STEERING, resolved.
    public var contentSteeringServerURI: String?
    public var contentSteeringPathwayID: String?
    public var variables: Variables
    public var diagnostics: [ParseDiagnostic]
}

extension Playlist {
    /// The resolved multivariant view: variables substituted, URIs resolved against `url`.
    public func multivariant(url: String? = nil) -> MultivariantPlaylist {
        let (variables, variableProblems) = Variables.collect(from: self, url: url, parent: nil)
        var diagnostics = variableProblems
        let resolver = URIResolver(base: url)
        func substitute(_ raw: String, _ index: Int) -> String {
            guard let (s, undefined) = variables.substitute(raw) else {
                diagnostics.append(ParseDiagnostic(PlaylistError(.substitutionTooLong, line: index + 1, column: 1)))
                return raw
            }
            for name in undefined {
                diagnostics.append(
                    ParseDiagnostic(
                        PlaylistError(.undefinedVariable, line: index + 1, column: 1, "undefined variable {$\(name)}")))
            }
            return s
        }
        func resolve(_ raw: String, _ index: Int) -> String { resolver.resolve(substitute(raw, index)) }
        var result = MultivariantPlaylist(
            version: nil, independentSegments: false, start: nil, variants: [], iFrameVariants: [], renditions: [],
            sessionData: [], sessionKeys: [], contentSteeringServerURI: nil, contentSteeringPathwayID: nil,
            variables: variables, diagnostics: [])
        // The line of the EXT-X-STREAM-INF waiting for its URI, or -1 (its list is read when the URI comes, so no
        // list is held between lines).
        var pending = -1
        // The directory resolved last for a URI with dot segments, kept for the next such URI (as segments do).
        var directoryMemo = URIResolver.DirectoryMemo()
        // At most one variant per URI line; reserved once instead of grown by doubling.
        result.variants.reserveCapacity(lines.count / 2)
        for index in lines.indices {
            if let known = lines[index].storedKnownTag {
                if known == .streamInf {
                    // The most common line: only its attribute list is needed.
                    pending = index
                    continue
                }
                guard case .tag(let t) = lines[index].content else { continue }
                switch known {
                case .version: result.version = t.decimalInteger
                case .independentSegments: result.independentSegments = true
                case .start: result.start = t.attributes
                case .iFrameStreamInf:
                    guard let a = t.attributes else { break }
                    let raw = a.quotedString("URI") ?? ""
                    let location = LazyURI(raw: ArraySlice(raw.utf8), resolved: resolve(raw, index))
                    result.iFrameVariants.append(
                        VariantStream(a, location: location, lineIndex: index, uriLineIndex: index))
                case .media:
                    guard let a = t.attributes else { break }
                    result.renditions.append(
                        Rendition(
                            type: a.enumeratedString("TYPE") ?? "", groupID: a.quotedString("GROUP-ID") ?? "",
                            name: a.quotedString("NAME") ?? "", language: a.quotedString("LANGUAGE"),
                            assocLanguage: a.quotedString("ASSOC-LANGUAGE"), isDefault: a.yesNo("DEFAULT") ?? false,
                            autoselect: a.yesNo("AUTOSELECT") ?? false, forced: a.yesNo("FORCED") ?? false,
                            instreamID: a.quotedString("INSTREAM-ID"),
                            characteristics: a.quotedString("CHARACTERISTICS"),
                            channels: a.quotedString("CHANNELS"),
                            uri: a.quotedString("URI").map { resolve($0, index) }, attributes: a, lineIndex: index))
                case .sessionData:
                    guard let a = t.attributes else { break }
                    result.sessionData.append(
                        SessionData(
                            dataID: a.quotedString("DATA-ID") ?? "", value: a.quotedString("VALUE"),
                            uri: a.quotedString("URI").map { resolve($0, index) }, format: a.enumeratedString("FORMAT"),
                            language: a.quotedString("LANGUAGE")))
                case .sessionKey:
                    if let a = t.attributes { result.sessionKeys.append(Key(a, resolve: { resolve($0, index) })) }
                case .contentSteering:
                    result.contentSteeringServerURI = t.attributes?.quotedString("SERVER-URI").map {
                        resolve($0, index)
                    }
                    result.contentSteeringPathwayID = t.attributes?.quotedString("PATHWAY-ID")
                default: break
                }
            } else if lines[index].storedIsURI, pending >= 0 {
                let tagIndex = pending
                pending = -1
                guard let a = lines[tagIndex].attributeListValue else { continue }
                let location = resolver.lazy(
                    lines[index].uriBytes ?? [], substitute: { substitute($0, index) }, memo: &directoryMemo)
                result.variants.append(VariantStream(a, location: location, lineIndex: tagIndex, uriLineIndex: index))
            }
        }
        result.diagnostics = diagnostics
        return result
    }
}
