#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An error from ``FileStreamer``: an opaque ``Code`` plus the context that explains it.
public struct FileStreamerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case cannotOpen, systemError, offsetOutOfRange, closed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The file could not be opened (missing, unreadable, or not a regular file).
        public static let cannotOpen = Code(.cannotOpen)
        /// A system call failed; ``FileStreamerError/errno`` says why.
        public static let systemError = Code(.systemError)
        /// The offset lies past the end of the file, or does not fit the platform's file offsets.
        public static let offsetOutOfRange = Code(.offsetOutOfRange)
        /// The streamer was closed.
        public static let closed = Code(.closed)

        public var description: String {
            switch value {
            case .cannotOpen: "cannot open file"
            case .systemError: "system error"
            case .offsetOutOfRange: "offset out of range"
            case .closed: "file streamer closed"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The file's path.
    public var path: String?
    /// The system error, when a system call failed.
    public var errno: Errno?
    /// The offset that was asked for.
    public var offset: UInt64?
    /// The file's size when the error was found.
    public var fileSize: UInt64?
    /// Where in the toolkit the error was raised.
    public var sourceLocation: String

    /// An error with context.
    public init(
        _ code: Code, path: String? = nil, errno: Errno? = nil, offset: UInt64? = nil, fileSize: UInt64? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.path = path
        self.errno = errno
        self.offset = offset
        self.fileSize = fileSize
        self.sourceLocation = "\(file):\(line)"
    }

    public var description: String {
        var text = "\(code)"
        if let path { text += " '\(path)'" }
        if let offset { text += " at offset \(offset)" }
        if let fileSize { text += " (file size \(fileSize))" }
        if let errno { text += ": \(errno)" }
        return text
    }
}

/// A read-only file read at absolute offsets with `pread`: concurrent readers share no file position (a lock only
/// counts the calls in flight), so one streamer serves any number of Range requests at once.
///
/// The size is read from the file on every call to ``size()``: a file that grows while it is served is seen growing.
/// ``close()`` while calls are in flight lets them finish on the file they started on: the descriptor is closed when
/// the last of them ends, so none of them can run on a descriptor number the process has since given to another file.
public final class FileStreamer: Sendable {
    /// The path the file was opened from.
    public let path: String
    private let descriptor: LockedValue<Descriptor>

    /// The descriptor, the calls using it now, and whether ``close()`` was called.
    private struct Descriptor {
        var fd: Int32
        var users = 0
        var closing = false
    }

    /// Opens `path` read-only.
    public init(path: String) throws(FileStreamerError) {
        self.path = path
        let fd: Int32
        do {
            fd = try retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw FileStreamerError(.cannotOpen, path: path, errno: error)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            let error = Errno.current
            _ = systemClose(fd)
            throw FileStreamerError(
                .cannotOpen, path: path, errno: (info.st_mode & S_IFMT) == S_IFDIR ? .isDirectory : error)
        }
        self.descriptor = LockedValue(Descriptor(fd: fd))
    }

    deinit {
        close()
    }

    /// Starts a use of the descriptor, which stays open until the matching ``release()`` even if ``close()`` is
    /// called meanwhile; throws `closed` once ``close()`` was called.
    private func acquire() throws(FileStreamerError) -> Int32 {
        let fd = descriptor.withLock { state -> Int32 in
            guard !state.closing else { return -1 }
            state.users += 1
            return state.fd
        }
        guard fd >= 0 else { throw FileStreamerError(.closed, path: path) }
        return fd
    }

    /// Ends a use of the descriptor; the last one after ``close()`` closes it.
    private func release() {
        let toClose = descriptor.withLock { state -> Int32 in
            state.users -= 1
            guard state.closing, state.users == 0 else { return -1 }
            defer { state.fd = -1 }
            return state.fd
        }
        if toClose >= 0 { _ = systemClose(toClose) }
    }

    /// The file's current size in bytes.
    public func size() throws(FileStreamerError) -> UInt64 {
        let info = try status()
        return UInt64(max(0, info.st_size))
    }

    /// The file's current modification time.
    public func modificationTime() throws(FileStreamerError) -> (seconds: Int64, nanoseconds: Int64) {
        fileModificationTime(of: try status())
    }

    private func status() throws(FileStreamerError) -> stat {
        let fd = try acquire()
        defer { release() }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FileStreamerError(.systemError, path: path, errno: .current)
        }
        return info
    }

    /// Reads into `buffer` from `offset`, filling it unless the file ends first, and returns the number of bytes
    /// read. Reading at the end of the file returns 0; reading past it throws `offsetOutOfRange`.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileStreamerError) -> Int {
        let fd = try acquire()
        defer { release() }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        var done = 0
        while done < buffer.count {
            guard let position = off_t(exactly: offset &+ UInt64(done)), offset <= UInt64.max - UInt64(done) else {
                throw FileStreamerError(.offsetOutOfRange, path: path, offset: offset)
            }
            let count: Int
            do {
                count = try retryingOnInterrupt { pread(fd, base + done, buffer.count - done, position) }
            } catch {
                throw FileStreamerError(.systemError, path: path, errno: error, offset: offset)
            }
            if count == 0 {
                if done == 0 {
                    let size = try size()
                    if offset > size {
                        throw FileStreamerError(.offsetOutOfRange, path: path, offset: offset, fileSize: size)
                    }
                }
                break
            }
            done += count
        }
        return done
    }

    /// ``read(at:length:)`` on the shared ``BlockingPool``, for async code: a read may wait on the disk, and must not
    /// hold one of Swift's cooperative threads while it does.
    public func readOnPool(at offset: UInt64, length: Int) async throws(FileStreamerError) -> [UInt8] {
        try await BlockingPool.shared.run { () throws(FileStreamerError) -> [UInt8] in
            try self.read(at: offset, length: length)
        }
    }

    /// Reads up to `length` bytes from `offset` into a new array, shorter only where the file ends.
    public func read(at offset: UInt64, length: Int) throws(FileStreamerError) -> [UInt8] {
        guard length > 0 else {
            if length < 0 { throw FileStreamerError(.offsetOutOfRange, path: path, offset: offset) }
            return []
        }
        var failure: FileStreamerError?
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            do throws(FileStreamerError) {
                initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Calls `body` with the open file descriptor, for calls such as `sendfile`. The descriptor stays owned by the
    /// streamer: do not close it or move its file position expectations beyond the call.
    /// Throws `closed` when the streamer was closed, or what `body` throws. The descriptor stays open until `body`
    /// returns, even if ``close()`` is called meanwhile.
    public func withFileDescriptor<R>(_ body: (Int32) throws -> R) throws -> R {
        let fd = try acquire()
        defer { release() }
        return try body(fd)
    }

    /// Closes the file: at once, or when the last call in flight ends. Later calls throw `closed`; closing twice is
    /// harmless.
    public func close() {
        // Closing counts as one more use, whose release closes the descriptor if no other use is left.
        let first = descriptor.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.closing = true
            state.users += 1
            return true
        }
        if first { release() }
    }
}
