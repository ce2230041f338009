#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed step of a ``DurableFile``: which step, the errno, the file being replaced and the temporary file the
/// bytes went to (removed by the time this is thrown; the file at ``path`` is untouched unless the step is
/// ``Step/syncFolder``, when the new file is in place but its rename may not survive a power loss).
public struct DurableFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The step that failed. New steps may be added; switch over them with a default.
    public struct Step: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case open = "creating the temporary file"
            case write = "writing"
            case sync = "flushing to storage"
            case close = "closing"
            case rename = "renaming into place"
            case syncFolder = "flushing the folder"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// Creating the temporary file (a missing folder, no permission, no space for an entry).
        public static let open = Step(.open)
        /// Writing a chunk to the temporary file (disk full, quota, I/O error).
        public static let write = Step(.write)
        /// Flushing the temporary file to storage (``syncToStorage(_:)``).
        public static let sync = Step(.sync)
        /// Closing the temporary file (some file systems report deferred write errors here).
        public static let close = Step(.close)
        /// Renaming the temporary file over the target (a folder in the way, another file system).
        public static let rename = Step(.rename)
        /// Flushing the folder after the rename: the new file is in place.
        public static let syncFolder = Step(.syncFolder)

        public var description: String { value.rawValue }
    }

    /// The step that failed.
    public var step: Step
    /// What the system said.
    public var errno: Errno
    /// The file being replaced.
    public var path: String
    /// The temporary file the bytes went to.
    public var temporaryPath: String

    public init(_ step: Step, _ errno: Errno, path: String, temporaryPath: String) {
        self.step = step
        self.errno = errno
        self.path = path
        self.temporaryPath = temporaryPath
    }

    public var description: String { "\(path): \(step) failed: \(errno.message)" }
}

/// The toolkit's one durable writer: replaces the file at ``path`` with bytes written in chunks, so that a crash or
/// a power loss at any moment leaves either the old file or the new one, whole, never a mix.
///
/// The bytes go to a temporary file beside ``path`` (same folder, so the rename stays on one file system) whose name
/// holds this process's ID and a counter, so that two processes or threads replacing the same file never share one.
/// ``commit()`` flushes it to storage (``syncToStorage(_:)``), renames it over ``path``, and flushes the folder so
/// that the rename itself survives. ``discard()``, a failed step, or the object going away uncommitted removes the
/// temporary file and leaves ``path`` untouched. A process killed before the rename leaves its temporary file
/// behind: ``removeAtomicWriteLeftovers(in:)`` clears those of processes that are gone, and no reader takes it for
/// data (it never has the target's name).
///
/// With `durable` false nothing is flushed: the replacement is still all-or-nothing for readers, but a power loss may
/// lose it (for hints whose loss only costs work, such as a resume validator or a progress figure).
///
/// ``writeFileAtomically(_:to:durable:mode:)`` is this with one chunk. Not thread-safe: one writer per instance.
public final class DurableFile {
    /// A point in a durable write, as told to a step observer (the crash test stops its writer at each one).
    package enum Step: Hashable, Sendable {
        /// The temporary file exists, empty.
        case opened
        /// A chunk was written; `total` bytes so far.
        case wrote(total: UInt64)
        /// The temporary file is flushed to storage (or would be, when not durable).
        case synced
        /// The temporary file has the target's name.
        case renamed
        /// The folder is flushed: the write is complete.
        case folderSynced
    }

    /// The file this replaces.
    public let path: String
    /// The temporary file the bytes go to until ``commit()``.
    public let temporaryPath: String
    /// Whether ``commit()`` flushes the file and its folder.
    public let durable: Bool
    private var fd: Int32
    private var written: UInt64 = 0
    private let observer: ((Step) -> Void)?

    /// Creates the temporary file beside `path`, with permissions `mode` (`0o644` by default; `0o600` for a file
    /// that holds a secret) whatever the umask, from its creation on.
    public convenience init(replacing path: String, durable: Bool = true, mode: UInt16 = 0o644)
        throws(DurableFileError)
    {
        try self.init(replacing: path, durable: durable, mode: mode, observer: nil)
    }

    /// As ``init(replacing:durable:mode:)``, telling `observer` each step once it is done (tests only).
    package init(replacing path: String, durable: Bool = true, mode: UInt16 = 0o644, observer: ((Step) -> Void)?)
        throws(DurableFileError)
    {
        self.path = path
        self.durable = durable
        self.observer = observer
        let temporary = path + atomicWriteMarker + "\(getpid())-\(AtomicFileCounter.next())"
        temporaryPath = temporary
        let permissions = mode_t(mode & 0o777)
        do throws(Errno) {
            fd = try retryingOnInterrupt { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions) }
        } catch {
            throw DurableFileError(.open, error, path: path, temporaryPath: temporary)
        }
        // The umask may have narrowed the mode (never widened it): set it exactly. Best effort: a file system
        // without permissions (FAT) refuses, and has nothing to protect with them.
        _ = fchmod(fd, permissions)
        observer?(.opened)
    }

    deinit { discard() }

    /// The bytes written so far.
    public var count: UInt64 { written }

    /// Appends `bytes` to the temporary file, looping over short writes. On failure the write is discarded.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(DurableFileError) {
        guard fd >= 0 else { throw finished(.write) }
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            do throws(Errno) {
                done += try retryingOnInterrupt { systemWrite(fd, base + done, bytes.count - done) }
            } catch {
                discard()
                throw DurableFileError(.write, error, path: path, temporaryPath: temporaryPath)
            }
        }
        written += UInt64(bytes.count)
        observer?(.wrote(total: written))
    }

    /// Appends `bytes` to the temporary file.
    public func write(_ bytes: ArraySlice<UInt8>) throws(DurableFileError) {
        let failure = bytes.withUnsafeBytes { raw -> DurableFileError? in
            do throws(DurableFileError) {
                try write(raw)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Appends `bytes` to the temporary file.
    public func write(_ bytes: [UInt8]) throws(DurableFileError) {
        try write(bytes[...])
    }

    /// Flushes the temporary file, renames it over ``path`` and flushes the folder. Before the rename, a failure
    /// removes the temporary file and leaves ``path`` as it was; a failure of the folder's flush leaves the new file
    /// in place (it is thrown all the same: the replacement may not survive a power loss).
    public func commit() throws(DurableFileError) {
        guard fd >= 0 else { throw finished(.sync) }
        if durable {
            do {
                try syncToStorage(fd)
            } catch {
                discard()
                throw DurableFileError(.sync, error, path: path, temporaryPath: temporaryPath)
            }
        }
        observer?(.synced)
        let descriptor = fd
        fd = -1
        guard systemClose(descriptor) == 0 else {
            let error = Errno.current
            _ = unlink(temporaryPath)
            throw DurableFileError(.close, error, path: path, temporaryPath: temporaryPath)
        }
        do {
            _ = try retryingOnInterrupt { systemRename(temporaryPath, path) }
        } catch {
            _ = unlink(temporaryPath)
            throw DurableFileError(.rename, error, path: path, temporaryPath: temporaryPath)
        }
        observer?(.renamed)
        if durable {
            do {
                try syncFolder(of: path)
            } catch {
                throw DurableFileError(.syncFolder, error, path: path, temporaryPath: temporaryPath)
            }
        }
        observer?(.folderSynced)
    }

    /// Closes and removes the temporary file, leaving ``path`` as it was; nothing after a commit. Later calls do
    /// nothing.
    public func discard() {
        guard fd >= 0 else { return }
        _ = systemClose(fd)
        fd = -1
        _ = unlink(temporaryPath)
    }

    /// The error for a call after the write was committed or discarded.
    private func finished(_ step: DurableFileError.Step) -> DurableFileError {
        DurableFileError(step, .badFileDescriptor, path: path, temporaryPath: temporaryPath)
    }

    /// Puts a file that was written in place of its own (a resumable download's partial file, which keeps a fixed
    /// name so that a later run finds it) at `path` with the same last steps as ``commit()``: flushes `staged`,
    /// renames it over `path`, flushes the folder. On failure before the rename, `staged` stays where it is.
    public static func install(_ staged: String, as path: String, durable: Bool = true) throws(DurableFileError) {
        if durable {
            do {
                let fd = try retryingOnInterrupt { open(staged, O_RDONLY | O_CLOEXEC) }
                defer { _ = systemClose(fd) }
                try syncToStorage(fd)
            } catch {
                throw DurableFileError(.sync, error, path: path, temporaryPath: staged)
            }
        }
        do {
            _ = try retryingOnInterrupt { systemRename(staged, path) }
        } catch {
            throw DurableFileError(.rename, error, path: path, temporaryPath: staged)
        }
        if durable {
            do {
                try syncFolder(of: path)
            } catch {
                throw DurableFileError(.syncFolder, error, path: path, temporaryPath: staged)
            }
        }
    }
}

/// Distinct temporary names within one process.
enum AtomicFileCounter {
    static let value = LockedValue<UInt64>(0)
    static func next() -> UInt64 {
        value.withLock { count in
            count &+= 1
            return count
        }
    }
}
