/// An error found in MPEG-TS input, with the byte offset (and PID, when known) where it was found.
///
/// `code` is an opaque struct so that new kinds of error can be added without breaking callers; compare it with
/// the static members of ``MPEGTSError/Code``.
public struct MPEGTSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of error.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case truncated
            case noSync
            case syncLost
            case invalidLength
            case invalidMarker
            case crcMismatch
            case continuity
            case invalidValue
            case unsupported
            case scrambled
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The input ended before a complete structure was read.
        public static let truncated = Code(.truncated)
        /// No run of sync bytes (0x47) at a TS packet stride was found.
        public static let noSync = Code(.noSync)
        /// A packet did not start with the sync byte; the reader resynchronised.
        public static let syncLost = Code(.syncLost)
        /// A length field points outside its container.
        public static let invalidLength = Code(.invalidLength)
        /// A marker bit or fixed prefix has the wrong value.
        public static let invalidMarker = Code(.invalidMarker)
        /// A PSI section's CRC-32/MPEG-2 does not match its bytes.
        public static let crcMismatch = Code(.crcMismatch)
        /// A continuity counter skipped a value.
        public static let continuity = Code(.continuity)
        /// A field holds a value that the standard does not allow.
        public static let invalidValue = Code(.invalidValue)
        /// A structure that this library does not decode.
        public static let unsupported = Code(.unsupported)
        /// The payload is scrambled and cannot be read.
        public static let scrambled = Code(.scrambled)

        public var description: String {
            switch kind {
            case .truncated: "truncated"
            case .noSync: "noSync"
            case .syncLost: "syncLost"
            case .invalidLength: "invalidLength"
            case .invalidMarker: "invalidMarker"
            case .crcMismatch: "crcMismatch"
            case .continuity: "continuity"
            case .invalidValue: "invalidValue"
            case .unsupported: "unsupported"
            case .scrambled: "scrambled"
            }
        }
    }

    /// The kind of error.
    public var code: Code
    /// The byte offset in the input (stream offset for the demuxer, or offset within the parsed buffer).
    public var offset: Int64?
    /// The PID of the packet involved, when known.
    public var pid: UInt16?
    /// A short human-readable detail.
    public var detail: String

    public init(_ code: Code, offset: Int64? = nil, pid: UInt16? = nil, _ detail: String = "") {
        self.code = code
        self.offset = offset
        self.pid = pid
        self.detail = detail
    }

    public var description: String {
        var text = "\(code)"
        if let offset { text += " at offset \(offset)" }
        if let pid { text += " on PID \(pid)" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// A copy with the offset moved by `base` (used when a parser's local offsets are placed in a stream).
    func shifted(by base: Int64) -> MPEGTSError {
        var copy = self
        copy.offset = base + (offset ?? 0)
        return copy
    }
}
