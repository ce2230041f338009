/// An error from a playback session (TSPlayback) or from the server it is added to (``PlaybackServer``): an opaque
/// ``Code`` plus context.
public struct PlaybackError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case cannotOpen, notTransportStream, serverFailed, emptySegments, missingFileField, invalidSegment
            case unknownProgram
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The input could not be opened or read.
        public static let cannotOpen = Code(.cannotOpen)
        /// The input is not an MPEG transport stream.
        public static let notTransportStream = Code(.notTransportStream)
        /// The loopback server could not start.
        public static let serverFailed = Code(.serverFailed)
        /// A session was given an empty list of segments, or a folder with no media.
        public static let emptySegments = Code(.emptySegments)
        /// A folder session was given a segment without a `file`.
        public static let missingFileField = Code(.missingFileField)
        /// A given segment lies outside its file, overlaps another, or has no positive duration.
        public static let invalidSegment = Code(.invalidSegment)
        /// The program asked for (TSPlayback's `TSPlaybackSession.Options.program`) is not in the file; the detail
        /// lists the programs there are.
        public static let unknownProgram = Code(.unknownProgram)

        public var description: String {
            switch value {
            case .cannotOpen: "cannot open input"
            case .notTransportStream: "not an MPEG transport stream"
            case .serverFailed: "loopback server failed"
            case .emptySegments: "no segments"
            case .missingFileField: "segment without a file"
            case .invalidSegment: "invalid segment"
            case .unknownProgram: "no such program"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The input's path, when there is one.
    public var path: String?
    /// What the lower layer said.
    public var detail: String
    /// For a segment outside its file: the segment's first byte.
    public var offset: UInt64?
    /// For a segment outside its file: the file's size.
    public var fileSize: UInt64?

    /// An error with context.
    public init(_ code: Code, path: String? = nil, detail: String) {
        self.code = code
        self.path = path
        self.detail = detail
    }

    public var description: String {
        "\(code)" + (path.map { " '\($0)'" } ?? "") + ": \(detail)"
    }
}
