/// An error found while reading a playlist: an opaque ``Code`` plus where it happened.
///
/// Codes are static members of a struct over a private enum, so new ones can be added without breaking callers.
public struct PlaylistError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case playlistTooLarge = "playlist too large"
            case lineTooLong = "line too long"
            case tooManyLines = "too many lines"
            case tooManySegments = "too many segments"
            case tooManyVariants = "too many variants"
            case tooManyAttributes = "too many attributes"
            case tooManyVariables = "too many variables"
            case substitutionTooLong = "substituted value too long"
            case missingHeader = "missing #EXTM3U header"
            case malformedTag = "malformed tag"
            case malformedAttributeList = "malformed attribute list"
            case invalidValue = "invalid value"
            case invalidUTF8 = "invalid UTF-8"
            case truncated = "truncated playlist"
            case truncatedVariant = "variant stream without a URI"
            case undefinedVariable = "undefined variable"
            case invalidURI = "invalid URI"
            case mixedPlaylist = "mixed media and multivariant tags"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The input is larger than ``PlaylistLimits/maxBytes``.
        public static let playlistTooLarge = Code(.playlistTooLarge)
        /// One line is longer than ``PlaylistLimits/maxLineLength``.
        public static let lineTooLong = Code(.lineTooLong)
        /// More lines than ``PlaylistLimits/maxLines``.
        public static let tooManyLines = Code(.tooManyLines)
        /// More media segments than ``PlaylistLimits/maxSegments``.
        public static let tooManySegments = Code(.tooManySegments)
        /// More variant streams than ``PlaylistLimits/maxVariants``.
        public static let tooManyVariants = Code(.tooManyVariants)
        /// An attribute list with more than ``PlaylistLimits/maxAttributes`` attributes.
        public static let tooManyAttributes = Code(.tooManyAttributes)
        /// More EXT-X-DEFINE variables than ``PlaylistLimits/maxVariables``.
        public static let tooManyVariables = Code(.tooManyVariables)
        /// Variable substitution produced a value longer than ``PlaylistLimits/maxLineLength``.
        public static let substitutionTooLong = Code(.substitutionTooLong)
        /// The first line is not `#EXTM3U` (RFC 8216bis §4.4.1.1).
        public static let missingHeader = Code(.missingHeader)
        /// A tag line that is not `#EXT<name>[:value]` or whose value does not fit the tag.
        public static let malformedTag = Code(.malformedTag)
        /// An attribute list that does not follow RFC 8216bis §4.2.
        public static let malformedAttributeList = Code(.malformedAttributeList)
        /// A value of the wrong type for its tag or attribute.
        public static let invalidValue = Code(.invalidValue)
        /// Bytes that are not UTF-8 (RFC 8216bis §4.1).
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// The playlist ends inside a media segment (EXTINF and its tags with no URI line after them).
        public static let truncated = Code(.truncated)
        /// The playlist ends after an EXT-X-STREAM-INF with no URI line for it (RFC 8216bis §4.4.6.2).
        public static let truncatedVariant = Code(.truncatedVariant)
        /// A `{$name}` reference to a variable that no EXT-X-DEFINE declares (RFC 8216bis §4.3).
        public static let undefinedVariable = Code(.undefinedVariable)
        /// A URI that cannot be parsed as an RFC 3986 URI reference.
        public static let invalidURI = Code(.invalidURI)
        /// Media segment tags and multivariant tags in the same playlist (RFC 8216bis §4.1).
        public static let mixedPlaylist = Code(.mixedPlaylist)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// 1-based line number (0 when the error concerns the whole input).
    public var line: Int
    /// 1-based column in bytes (0 when the error concerns the whole input).
    public var column: Int
    /// A human-readable explanation.
    public var message: String

    public init(_ code: Code, line: Int = 0, column: Int = 0, _ message: String = "") {
        self.code = code
        self.line = line
        self.column = column
        self.message = message.isEmpty ? code.description : message
    }

    public var description: String { "\(line):\(column): \(message)" }
}

/// Caps that protect the parser against hostile input. Each one, when exceeded, raises its own error code.
public struct PlaylistLimits: Sendable, Hashable {
    /// The largest accepted playlist in bytes.
    public var maxBytes: Int = 64 << 20
    /// The longest accepted line in bytes.
    public var maxLineLength: Int = 1 << 20
    /// The most lines accepted.
    public var maxLines: Int = 4_000_000
    /// The most media segments accepted in one media playlist.
    public var maxSegments: Int = 1_000_000
    /// The most variant streams (EXT-X-STREAM-INF and EXT-X-I-FRAME-STREAM-INF) in a multivariant playlist.
    public var maxVariants: Int = 10_000
    /// The most attributes in one attribute list.
    public var maxAttributes: Int = 256
    /// The most EXT-X-DEFINE variables.
    public var maxVariables: Int = 1_000

    public init() {}

    /// The default caps.
    public static let `default` = PlaylistLimits()
}

/// A finding recorded while parsing in tolerant mode: the playlist line it concerns and what is wrong with it.
public struct ParseDiagnostic: Sendable, Hashable, CustomStringConvertible {
    public var error: PlaylistError
    public init(_ error: PlaylistError) { self.error = error }
    public var line: Int { error.line }
    public var column: Int { error.column }
    public var message: String { error.message }
    public var description: String { error.description }
}
