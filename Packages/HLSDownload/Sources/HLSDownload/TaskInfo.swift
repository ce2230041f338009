/// Where a task is in its life.
public enum DownloadState: String, Hashable, Sendable, Codable {
    /// Created but not queued; ``DownloadManager/resume(_:)`` queues it.
    case notReady
    /// Queued: it starts when a slot frees.
    case ready
    /// Fetching and choosing playlists.
    case starting
    /// Fetching media.
    case downloading
    /// Paused by the caller, by a restart, or by a full disk (see ``DownloadTaskInfo/error``).
    case paused
    /// Stopped by an error that retrying does not fix (see ``DownloadTaskInfo/error``).
    case stopped
    /// Every file is in place and the local playlists are written.
    case completed

    /// Whether the task is running (holding a slot).
    public var isRunning: Bool { self == .starting || self == .downloading }
}

/// A snapshot of one task.
public struct DownloadTaskInfo: Hashable, Sendable {
    public var id: String
    public var url: String
    public var state: DownloadState
    /// Why the task stopped or paused itself.
    public var error: DownloadError?
    /// The fraction done, 0...1.
    public var progress: Double
    public var bytesDone: UInt64
    /// The total bytes, estimated from the sizes seen so far until every size is known.
    public var bytesTotal: UInt64?
    public var totalIsEstimate: Bool
    /// Bytes per second over the last few seconds.
    public var speed: Double
    /// Seconds left at the current speed.
    public var eta: Double?
    public var filesDone: Int
    public var filesTotal: Int
    /// The task's folder (absolute).
    public var folder: String
    /// The local playlist to play: `master.m3u8` when renditions were downloaded, else `index.m3u8`.
    public var playlistPath: String?
    public var metadata: [String: String]
    /// Seconds since 1970 when the task was created.
    public var createdAt: Double
    /// The process that runs the task when it is another one: the progress figures are then the ones that process
    /// last wrote to the task's status file (at most about a second old), and ``state`` is its state.
    public var runnerPID: Int32?
}

/// A task's record in the store (paths relative to the store root).
struct TaskRecord: Codable, Sendable {
    var id: String
    var url: String
    var order: Int
    var createdAt: Double
    var metadata: [String: String]
    var options: DownloadOptions
    var folder: String
    var state: DownloadState
    var error: DownloadError?
    var sources: Sources?
    var skipped: [String]
    var bytesDone: UInt64
    var bytesTotal: UInt64?
    var filesDone: Int
    var filesTotal: Int
    var playlist: String?
    /// Where the recording of a live playlist stands.
    var live: LiveState?
}

/// The JSON document of the task store.
struct StoreDocument: Codable, Sendable {
    var version: Int
    var nextOrder: Int
    var tasks: [TaskRecord]
}

/// What the process running a task writes to the task's status file (`.status.json`) about once a second and on
/// every state change, for other processes (`tsplayer tasks list`) to show while the task's lock is held.
struct TaskStatus: Codable, Sendable {
    var pid: Int32
    var state: DownloadState
    var bytesDone: UInt64
    var bytesTotal: UInt64?
    var totalIsEstimate: Bool
    var filesDone: Int
    var filesTotal: Int
    var speed: Double
    /// Seconds since 1970 when it was written.
    var updatedAt: Double
}
