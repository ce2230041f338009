/// An error found while reading ISO BMFF boxes or building them from caller-supplied configuration.
///
/// `code` is an opaque struct so that new kinds of error can be added without breaking callers; compare it with
/// the static members of ``FragmentedMP4Error/Code``. `offset` is the byte offset in the parsed buffer and `path` the
/// types of the boxes from the outermost to the one where the problem was found.
public struct FragmentedMP4Error: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of error.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case truncated
            case invalidSize
            case tooDeep
            case tooManyBoxes
            case invalidValue
            case unsupportedCodec
            case missingConfiguration
            case configurationChange
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The input ended inside a box (its header, or before the size it declares).
        public static let truncated = Code(.truncated)
        /// A box's size is smaller than its header or runs past the box that contains it.
        public static let invalidSize = Code(.invalidSize)
        /// Boxes are nested deeper than ``BoxLimits/maximumDepth``.
        public static let tooDeep = Code(.tooDeep)
        /// The input holds more boxes than ``BoxLimits/maximumBoxCount``.
        public static let tooManyBoxes = Code(.tooManyBoxes)
        /// A field or a configuration value holds something the format does not allow.
        public static let invalidValue = Code(.invalidValue)

        /// A stream whose codec fragmented MP4 cannot carry (the detail names its PID).
        public static let unsupportedCodec = Code(.unsupportedCodec)
        /// A stream showed no parameter sets or frame header to build its sample entry from.
        public static let missingConfiguration = Code(.missingConfiguration)
        /// A stream's parameter sets or audio configuration change part way, where the output can hold only one
        /// (the detail names its PID and the byte offset).
        public static let configurationChange = Code(.configurationChange)

        public var description: String {
            switch kind {
            case .truncated: "truncated"
            case .invalidSize: "invalidSize"
            case .tooDeep: "tooDeep"
            case .tooManyBoxes: "tooManyBoxes"
            case .invalidValue: "invalidValue"
            case .unsupportedCodec: "unsupportedCodec"
            case .missingConfiguration: "missingConfiguration"
            case .configurationChange: "configurationChange"
            }
        }
    }

    /// The kind of error.
    public var code: Code
    /// The byte offset in the input where the problem was found, when it comes from input.
    public var offset: Int?
    /// The box types from the outermost box down to the one involved.
    public var path: [FourCC]
    /// A short human-readable detail.
    public var detail: String

    public init(_ code: Code, offset: Int? = nil, path: [FourCC] = [], _ detail: String = "") {
        self.code = code
        self.offset = offset
        self.path = path
        self.detail = detail
    }

    public var description: String {
        var text = "\(code)"
        if let offset { text += " at offset \(offset)" }
        if !path.isEmpty { text += " in " + path.map(\.description).joined(separator: "/") }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}
