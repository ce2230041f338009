/// An error from the download manager: an opaque ``Code`` plus the context that explains it.
public struct DownloadError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, Codable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable, Codable {
            case httpStatus, notFound, unauthorized, keyUnavailable, integrity, contentLength, diskFull
            case fileSystem, invalidPlaylist, noVariant, unsupported, transport, tooManyRetries, invalidURL
            case locked, tooLarge, overBudget
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The origin answered with an unexpected HTTP status.
        public static let httpStatus = Code(.httpStatus)
        /// A VOD resource answered 404 or 410.
        public static let notFound = Code(.notFound)
        /// The origin answered 401 or 403: the credentials or headers are not accepted.
        public static let unauthorized = Code(.unauthorized)
        /// An AES-128 key could not be fetched or is not 16 bytes long; the task cannot play offline.
        public static let keyUnavailable = Code(.keyUnavailable)
        /// A body failed an integrity check (TS sync bytes).
        public static let integrity = Code(.integrity)
        /// A body was shorter or longer than its Content-Length.
        public static let contentLength = Code(.contentLength)
        /// The disk is full; the task is paused and ``DownloadError/path`` names the file.
        public static let diskFull = Code(.diskFull)
        /// A file-system call failed.
        public static let fileSystem = Code(.fileSystem)
        /// A playlist could not be parsed or is not usable.
        public static let invalidPlaylist = Code(.invalidPlaylist)
        /// No variant matches the selection.
        public static let noVariant = Code(.noVariant)
        /// The stream uses something this version does not download (live playlists, DRM key systems).
        public static let unsupported = Code(.unsupported)
        /// The connection failed (reset, refused, timed out, stalled).
        public static let transport = Code(.transport)
        /// A transient failure persisted through every retry.
        public static let tooManyRetries = Code(.tooManyRetries)
        /// A URL is not an absolute http(s) URL.
        public static let invalidURL = Code(.invalidURL)
        /// Another process runs the task (``DownloadError/pid`` names it, when known), or this process no longer holds
        /// the task's lock: nothing was written.
        public static let locked = Code(.locked)
        /// A resource (a segment, key or map) is larger than the task's per-resource limit
        /// (``DownloadOptions/maxResourceBytes``): its partial file is removed.
        public static let tooLarge = Code(.tooLarge)
        /// The task's files would pass its byte budget (``DownloadOptions/maxBytes``) before a VOD download is
        /// complete: the file being written is removed and the task stops.
        public static let overBudget = Code(.overBudget)

        public var description: String { value.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation.
    public var message: String
    /// The remote URL involved, if any.
    public var url: String?
    /// The local path involved, if any (relative to the store root when it lies inside it).
    public var path: String?
    /// The HTTP status involved, if any.
    public var status: Int?
    /// The system error number involved, if any.
    public var errno: Int32?
    /// The process involved, if any (the one that holds a task's lock).
    public var pid: Int32?

    /// An error with context.
    public init(
        _ code: Code, _ message: String, url: String? = nil, path: String? = nil, status: Int? = nil,
        errno: Int32? = nil, pid: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.url = url
        self.path = path
        self.status = status
        self.errno = errno
        self.pid = pid
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let status { text += " (HTTP \(status))" }
        if let url { text += " [\(url)]" }
        if let path { text += " at \(path)" }
        return text
    }
}
