// Test-only stand-in for Apple's UniformTypeIdentifiers, compiled only on Linux (the module is named
// `UniformTypeIdentifiers` so that TSPlayerKit's Apple glue compiles there unchanged). It declares only the subset of
// the API that the glue uses, as the iOS 17.4 SDK's UniformTypeIdentifiers.swiftinterface and UTType.h declare it:
// `UTType` is a `Sendable`, `Hashable` structure with failable `init?(_ identifier:)`,
// `init?(mimeType:conformingTo:)` and `init?(filenameExtension:conformingTo:)` (supertype defaulting to `.data`),
// `identifier`, `preferredMIMEType` and `isDynamic` getters, and `conforms(to:)`. UTType.h: "If no types are known to
// the system with the specified MIME type and conformance but the inputs were otherwise valid, a dynamic type may be
// provided. If the inputs were not valid, returns nil."; the stand-in returns a dynamic type for every well-formed
// MIME type or extension it does not know (conforming to `public.data`), and nil for malformed ones.
//
// Where the stand-in cannot match Apple:
// - There is no system type database on Linux. The stand-in knows a handful of types (below); a dynamic type's
//   identifier starts with `dyn.` as Apple's do, but the rest is the stand-in's own (Apple's encoding is private).
// - Conformance to `Codable`, `ReferenceConvertible` (there is no `UTTypeReference`) and every other member of
//   `UTType` are left out; equality and hashing use the identifier only.
// - Apple's module re-exports Foundation; this one imports nothing, as nothing here needs Foundation.

/// Stand-in for a uniform type: an identifier, its preferred MIME type and the identifiers it conforms to.
public struct UTType: Sendable, Hashable, CustomStringConvertible {
    /// The type's reverse-DNS uniform type identifier, such as `public.mpeg-2-transport-stream`.
    public let identifier: String
    /// The type's preferred MIME type, if it has one.
    public let preferredMIMEType: String?
    private let conformances: Set<String>

    private init(
        _ identifier: String, mimeType: String? = nil, extensions: [String] = [], conformsTo supertypes: [UTType] = []
    ) {
        self.identifier = identifier
        self.preferredMIMEType = mimeType
        self.extensions = extensions
        self.conformances = supertypes.reduce(into: [identifier]) { $0.formUnion($1.conformances) }
    }

    private let extensions: [String]

    /// The known type with `identifier`, or a type of that identifier conforming to nothing when it is a dynamic one.
    public init?(_ identifier: String) {
        if let type = Self.known.first(where: { $0.identifier == identifier }) {
            self = type
        } else if identifier.hasPrefix("dyn.") {
            self.init(identifier, conformsTo: [.data])
        } else {
            return nil
        }
    }

    /// The type whose MIME type is `mimeType` (compared case-insensitively), if it conforms to `supertype`: a known
    /// type, or a dynamic type for a well-formed MIME type the stand-in does not know; nil for a malformed one.
    public init?(mimeType: String, conformingTo supertype: UTType = .data) {
        let wanted = mimeType.lowercased()
        if let type = Self.known.first(where: { $0.preferredMIMEType == wanted || $0.otherMIMETypes.contains(wanted) })
        {
            guard type.conformances.contains(supertype.identifier) else { return nil }
            self = type
            return
        }
        let parts = wanted.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.isTokenCharacter) }),
            supertype == .data || supertype == .item
        else { return nil }
        self.init("dyn.stand-in-mime-" + wanted, conformsTo: [.data])
    }

    /// The type of files named `*.filenameExtension` (compared case-insensitively), if it conforms to `supertype`:
    /// a known type, or a dynamic type for an extension the stand-in does not know; nil for an empty one.
    public init?(filenameExtension: String, conformingTo supertype: UTType = .data) {
        let wanted = filenameExtension.lowercased()
        if let type = Self.known.first(where: { $0.extensions.contains(wanted) }) {
            guard type.conformances.contains(supertype.identifier) else { return nil }
            self = type
            return
        }
        guard !wanted.isEmpty, !wanted.contains("/"), supertype == .data || supertype == .item else { return nil }
        self.init("dyn.stand-in-extension-" + wanted, conformsTo: [.data])
    }

    /// Whether the type was made up for a MIME type or extension the system does not know.
    public var isDynamic: Bool { identifier.hasPrefix("dyn.") }

    /// Whether the type is `type` or conforms to it.
    public func conforms(to type: UTType) -> Bool { conformances.contains(type.identifier) }

    private var otherMIMETypes: [String] { identifier == "public.data" ? ["application/octet-stream"] : [] }

    private static func isTokenCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || "!#$&^_.+-".contains(character))
    }

    /// The identifier.
    public var description: String { identifier }

    /// Whether both have the same identifier.
    public static func == (lhs: UTType, rhs: UTType) -> Bool {
        lhs.identifier == rhs.identifier
    }

    /// Hashes the identifier.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(identifier)
    }

    /// The base type of everything (`public.item`).
    public static var item: UTType { UTType("public.item") }
    /// The base type of user-viewable content (`public.content`).
    public static var content: UTType { UTType("public.content") }
    /// Any byte stream, including files and in-memory data (`public.data`).
    public static var data: UTType { UTType("public.data", conformsTo: [.item]) }
    /// Audio, video or both (`public.audiovisual-content`).
    public static var audiovisualContent: UTType {
        UTType("public.audiovisual-content", conformsTo: [.data, .content])
    }
    /// A media format that may hold audio, video or both (`public.movie`).
    public static var movie: UTType { UTType("public.movie", conformsTo: [.audiovisualContent]) }
    /// An MPEG-2 transport stream (`public.mpeg-2-transport-stream`, `video/mp2t`).
    public static var mpeg2TransportStream: UTType {
        UTType("public.mpeg-2-transport-stream", mimeType: "video/mp2t", extensions: ["ts"], conformsTo: [.movie])
    }
    /// An MPEG-4 movie (`public.mpeg-4`, `video/mp4`).
    public static var mpeg4Movie: UTType {
        UTType("public.mpeg-4", mimeType: "video/mp4", extensions: ["mp4"], conformsTo: [.movie])
    }
    /// Audio (`public.audio`).
    public static var audio: UTType { UTType("public.audio", conformsTo: [.audiovisualContent]) }
    /// MPEG-1 or -2 layer III audio (`public.mp3`, `audio/mpeg`).
    public static var mp3: UTType {
        UTType("public.mp3", mimeType: "audio/mpeg", extensions: ["mp3"], conformsTo: [.audio])
    }

    private static var known: [UTType] {
        [.item, .content, .data, .audiovisualContent, .movie, .audio, .mpeg2TransportStream, .mpeg4Movie, .mp3]
    }
}
