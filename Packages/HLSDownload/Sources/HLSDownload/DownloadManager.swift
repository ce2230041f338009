// The manager's state and its creation. Its parts, one idea a file: DownloadManager+Tasks (the task API),
// +Control (cross-process locks, control and status files), +Queries (task infos and events), +Export, +Running
// (the queue and the runner's lifecycle) and +Store (tasks.json).
import FileRange
import Foundation
import HLSPlaylist
public import HTTPClient

/// Downloads HLS streams for offline playback: a queue of tasks with bounded concurrency, a persistent task store,
/// resumable and verified transfers.
///
/// The store is one JSON file (`tasks.json`) in the store root, replaced atomically on every change; each task's
/// files live in a folder named after its id beside it. Tasks that were running when the process ended come back
/// `paused` (or `ready` when ``DownloadManagerConfiguration/resumeInterruptedTasks`` is set), and resuming fetches
/// only what is missing.
///
/// Several processes may share a store. A task has one writer: the process that queues or runs it holds an advisory
/// lock on `.lock` in the task's folder (the kernel drops it when the process ends, so a crash never leaves it stale).
/// Another process's ``resume(_:)`` or ``createTask(id:url:metadata:options:start:)`` of that task throws
/// ``DownloadError/Code/locked`` naming the holder's PID and writes nothing; its ``pause(_:)`` and ``delete(_:)``
/// ask the holder through a control file (`.control`) and return once the holder has done it; its task infos carry
/// the holder's live progress, read from the status file (`.status.json`) the holder writes about once a second.
/// Changes to `tasks.json` are read-modify-write under a short lock on `.tasks.lock`, each process writing only the
/// tasks it holds.
///
/// The actor runs on a thread of its own (FileRange's `BlockingSerialExecutor`): its store writes wait on file locks
/// and `fsync`, in order, without holding one of Swift's cooperative threads.
public actor DownloadManager {
    /// The thread the actor's methods run on.
    private nonisolated let executor = BlockingSerialExecutor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The folder that holds the task store and the task folders.
    public nonisolated let storeRoot: String
    /// Task-info updates: every state change, and progress at most every
    /// ``DownloadManagerConfiguration/eventInterval`` per task.
    public nonisolated let events: AsyncStream<DownloadTaskInfo>

    let configuration: DownloadManagerConfiguration
    let transport: any HTTPTransport
    let clock: any RetryClock
    let eventContinuation: AsyncStream<DownloadTaskInfo>.Continuation
    var records: [String: TaskRecord] = [:]
    var nextOrder = 0
    var running: [String: (generation: Int, task: Task<Void, Never>, counters: TaskCounters)] = [:]
    var generation = 0
    var samples: [String: [(time: Double, bytes: UInt64)]] = [:]
    var lastEvent: [String: Double] = [:]
    var waiters: [String: [CheckedContinuation<DownloadTaskInfo, Never>]] = [:]
    /// The locks of the tasks this process queues or runs.
    var locks: [String: FileLock] = [:]
    /// Watches the control files of the tasks in `locks` and writes their status files, while there are any.
    var watcher: Task<Void, Never>?

    static let storeName = "tasks.json"
    /// The store file's permissions: it holds the tasks' headers, credentials among them.
    static let storeFileMode: UInt16 = 0o600
    /// The permissions of a store root this creates.
    static let storeFolderMode: UInt16 = 0o700
    /// A small file kept beside the store so that a pause on a full disk can still be recorded.
    static let reserveName = ".reserve"
    /// The lock that makes a read-modify-write of the store safe between processes.
    static let storeLockName = ".tasks.lock"
    /// In a task's folder: the lock its runner holds, with the runner's PID.
    static let lockName = ".lock"
    /// In a task's folder: a request (`pause` or `delete`) from another process to the runner.
    static let controlName = ".control"
    /// In a task's folder: the runner's progress (``TaskStatus``).
    static let statusName = ".status.json"
    /// How long ``pause(_:)`` and ``delete(_:)`` wait for another process to carry out the request.
    static let answerTimeout: Duration = .seconds(5)

    /// The default transport: the toolkit's client with the configuration's stall timeout (as its idle and
    /// connect timeouts), redirects, and enough https connections per host for every task's requests.
    static func client(_ configuration: DownloadManagerConfiguration) -> HTTPClient {
        var settings = HTTPClientConfiguration()
        settings.idleTimeout = configuration.stallTimeout
        settings.connectTimeout = configuration.stallTimeout
        settings.maxRedirects = configuration.maxRedirects
        settings.retry = configuration.retry
        settings.maxConnectionsPerHost = max(
            16, configuration.maxConcurrentRequests * configuration.maxConcurrentTasks)
        return HTTPClient(configuration: settings)
    }

    /// Opens (creating) the store in `storeRoot` and loads its tasks. Nothing starts until a task is created or
    /// resumed, or ``startQueue()`` is called.
    public init(
        storeRoot: String, configuration: DownloadManagerConfiguration = DownloadManagerConfiguration(),
        transport: (any HTTPTransport)? = nil, clock: any RetryClock = SystemRetryClock()
    ) throws(DownloadError) {
        var root = storeRoot
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        self.storeRoot = root
        self.configuration = configuration
        self.transport = transport ?? Self.client(configuration)
        self.clock = clock
        (events, eventContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
        // The store holds the tasks' request headers (bearer tokens, cookies): a root this creates is the user's
        // alone (0700), and the store file is 0600, also when an older version left it readable by others.
        try Files.makeDirectories(root, mode: Self.storeFolderMode)
        let storePath = root + "/" + Self.storeName
        if let mode = FileSystem.permissions(storePath), mode & 0o077 != 0 {
            try? FileSystem.setPermissions(storePath, Self.storeFileMode)
        }
        removeAtomicWriteLeftovers(in: root)
        Self.ensureReserve(root)
        if let document = try Self.readStore(root) {
            nextOrder = document.nextOrder
            for record in document.tasks {
                records[record.id] = Self.adopt(record, root: root, resume: configuration.resumeInterruptedTasks)
            }
        }
    }
}
