/// An EXT-X-STREAM-INF variant stream with its URI line (RFC 8216bis §4.4.6.2).
public struct VariantStream: Sendable, Hashable {
    public var bandwidth: UInt64?
    public var averageBandwidth: UInt64?
    public var score: Double?
    public var codecs: String?
    public var supplementalCodecs: String?
    public var resolution: Resolution?
    public var frameRate: Double?
    public var hdcpLevel: String?
    public var videoRange: String?
    public var audio: String?
    public var video: String?
    public var subtitles: String?
    /// The CLOSED-CAPTIONS group id, or nil (also nil for `NONE`; see ``attributes``).
    public var closedCaptions: String?
    public var pathwayID: String?
    public var stableVariantID: String?
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
    public var attributes: AttributeList
    /// 0-based index of the tag line; the URI line follows it.
    public var lineIndex: Int
    public var uriLineIndex: Int

    /// For each ``AttributeNames`` id, the field of a variant it fills (-1 for none).
    private static let fieldByNameID: [Int] = {
        let names = [
            "BANDWIDTH", "AVERAGE-BANDWIDTH", "SCORE", "CODECS", "SUPPLEMENTAL-CODECS", "RESOLUTION", "FRAME-RATE",
            "HDCP-LEVEL", "VIDEO-RANGE", "AUDIO", "VIDEO", "SUBTITLES", "CLOSED-CAPTIONS", "PATHWAY-ID",
            "STABLE-VARIANT-ID",
        ]
        var table = [Int](repeating: -1, count: AttributeNames.all.count)
        for (field, name) in names.enumerated() where AttributeNames.id(name) >= 0 {
            table[AttributeNames.id(name)] = field
        }
        return table
    }()

    init(_ a: AttributeList, location: LazyURI, lineIndex: Int, uriLineIndex: Int) {
        attributes = a
        // One pass over the attributes; the first of each name wins, as with AttributeList's subscript.
        var seen: UInt32 = 0
        let fields = VariantStream.fieldByNameID
        for position in a.indices {
            let id = a.nameID(at: position)
            guard id >= 0, id < fields.count else { continue }
            let field = fields[id]
            guard field >= 0, seen & (1 << field) == 0 else { continue }
            seen |= 1 << field
            switch field {
            case 0: bandwidth = a.decimalInteger(at: position)
            case 1: averageBandwidth = a.decimalInteger(at: position)
            case 2: score = a.decimalFloat(at: position)
            case 3: codecs = a.quotedString(at: position)
            case 4: supplementalCodecs = a.quotedString(at: position)
            case 5: resolution = a.resolution(at: position)
            case 6: frameRate = a.decimalFloat(at: position)
            case 7: hdcpLevel = a[position].enumeratedString
            case 8: videoRange = a[position].enumeratedString
            case 9: audio = a.quotedString(at: position)
            case 10: video = a.quotedString(at: position)
            case 11: subtitles = a.quotedString(at: position)
            case 12: closedCaptions = a.quotedString(at: position)
            case 13: pathwayID = a.quotedString(at: position)
            case 14: stableVariantID = a.quotedString(at: position)
            default: break
            }
        }
        self.location = location
        self.lineIndex = lineIndex
        self.uriLineIndex = uriLineIndex
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
        var pending: (AttributeList, Int)?
        // At most one variant per URI line; reserved once instead of grown by doubling.
        result.variants.reserveCapacity(lines.count / 2)
        for index in lines.indices {
            if let known = lines[index].storedKnownTag {
                guard case .tag(let t) = lines[index].content else { continue }
                switch known {
                case .version: result.version = t.decimalInteger
                case .independentSegments: result.independentSegments = true
                case .start: result.start = t.attributes
                case .streamInf: pending = t.attributes.map { ($0, index) }
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
            } else if lines[index].storedIsURI, let (a, tagIndex) = pending.take() {
                let location = resolver.lazy(lines[index].uriBytes ?? [], substitute: { substitute($0, index) })
                result.variants.append(VariantStream(a, location: location, lineIndex: tagIndex, uriLineIndex: index))
            }
        }
        result.diagnostics = diagnostics
        return result
    }
}
