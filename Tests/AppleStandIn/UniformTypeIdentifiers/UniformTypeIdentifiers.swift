// Test-only stand-in for Apple's UniformTypeIdentifiers, compiled only on Linux (the module is named
// `UniformTypeIdentifiers` so that TSPlayerKit's Apple glue compiles there unchanged). It declares only the subset of
// the API that the glue uses, spelled as Apple's current documentation declares it (the 2026 pages, which already
// list symbols of the 27-series SDKs): `UTType` is a `Sendable`, `Hashable` structure with a failable
// `init?(mimeType:conformingTo:)` whose supertype defaults to `.data`, and `identifier`/`preferredMIMEType` getters.
//
// Where the stand-in cannot match Apple:
// - There is no system type database on Linux. The stand-in knows a handful of types (below); for any other MIME
//   type it returns nil, where Apple would return a dynamic (`dyn.`) type for a well-formed MIME type.
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

    private init(_ identifier: String, mimeType: String? = nil, conformsTo supertypes: [UTType] = []) {
        self.identifier = identifier
        self.preferredMIMEType = mimeType
        self.conformances = supertypes.reduce(into: [identifier]) { $0.formUnion($1.conformances) }
    }

    /// The known type whose MIME type is `mimeType` (compared case-insensitively), if it conforms to `supertype`.
    public init?(mimeType: String, conformingTo supertype: UTType = .data) {
        let wanted = mimeType.lowercased()
        guard let type = Self.known.first(where: { $0.preferredMIMEType == wanted }),
            type.conformances.contains(supertype.identifier)
        else { return nil }
        self = type
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
        UTType("public.mpeg-2-transport-stream", mimeType: "video/mp2t", conformsTo: [.movie])
    }
    /// An MPEG-4 movie (`public.mpeg-4`, `video/mp4`).
    public static var mpeg4Movie: UTType { UTType("public.mpeg-4", mimeType: "video/mp4", conformsTo: [.movie]) }

    private static var known: [UTType] { [.mpeg2TransportStream, .mpeg4Movie] }
}
