#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed file-system call: the errno and the path it failed on (which, for ``FileSystem/createFolders(_:)``, is
/// the folder that could not be made, not the one asked for).
public struct FileSystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var errno: Errno
    public var path: String

    public init(_ errno: Errno, path: String) {
        self.errno = errno
        self.path = path
    }

    public var description: String { "\(path): \(errno.message)" }
}

/// The file-system calls the packages above the floor need, so that none of them makes a system call itself:
/// existence and size, folders, removal, rename, whole-file reads and flushes. `EINTR` is retried everywhere.
public enum FileSystem {
    /// Whether anything exists at `path` (a dangling symbolic link counts as missing).
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The permission bits of `path` (`0o644`), or nil when it does not exist.
    public static func permissions(_ path: String) -> UInt16? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt16(truncatingIfNeeded: info.st_mode & 0o7777)
    }

    /// Sets the permission bits of `path`.
    public static func setPermissions(_ path: String, _ mode: UInt16) throws(FileSystemError) {
        guard chmod(path, mode_t(mode & 0o7777)) == 0 else { throw FileSystemError(Errno.current, path: path) }
    }

    /// The size of the regular file at `path`, or nil when there is none.
    public static func regularFileSize(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(clamping: info.st_size)
    }

    /// Creates `path` and every missing folder above it (`mkdir -p`), each with permissions `mode` less the umask
    /// (`0o700` for a folder that holds credentials); folders that exist keep theirs.
    public static func createFolders(_ path: String, mode: UInt16 = 0o755) throws(FileSystemError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, mode_t(mode & 0o777)) != 0 {
                let error = Errno.current
                if error != .fileExists { throw FileSystemError(error, path: current) }
            }
        }
    }

    /// Removes the file (or empty folder's link) at `path`; a missing file is not an error.
    public static func removeFile(_ path: String) {
        _ = unlink(path)
    }

    /// Removes a folder and everything in it; symbolic links are removed, never followed.
    public static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            _ = unlink(path)
            return
        }
        for name in entries(in: path) ?? [] { removeTree(path + "/" + name) }
        _ = rmdir(path)
    }

    /// The names in `folder` (without `.` and `..`), sorted; nil when it cannot be read.
    public static func entries(in folder: String) -> [String]? {
        guard let directory = opendir(folder) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Renames `from` over `to` (atomic within one file system).
    public static func rename(_ from: String, to: String) throws(FileSystemError) {
        do {
            _ = try retryingOnInterrupt { systemRename(from, to) }
        } catch {
            throw FileSystemError(error, path: to)
        }
    }

    /// Reads a whole small file; a file longer than `limit` bytes fails with `EFBIG`.
    public static func readFile(_ path: String, limit: Int = 64 << 20) throws(FileSystemError) -> [UInt8] {
        let fd: Int32
        do {
            fd = try retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw FileSystemError(error, path: path)
        }
        defer { _ = systemClose(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read: Result<Int, Errno> = buffer.withUnsafeMutableBytes { raw in
                do throws(Errno) {
                    return .success(try retryingOnInterrupt { systemRead(fd, raw.baseAddress, raw.count) })
                } catch {
                    return .failure(error)
                }
            }
            let count: Int
            switch read {
            case .success(let n): count = n
            case .failure(let error): throw FileSystemError(error, path: path)
            }
            if count == 0 { return result }
            result.append(contentsOf: buffer[0..<count])
            if result.count > limit { throw FileSystemError(.fileTooLarge, path: path) }
        }
    }

    /// Flushes the file or folder at `path` to storage (``syncToStorage(_:)``).
    public static func sync(_ path: String) throws(FileSystemError) {
        do {
            let fd = try retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
            defer { _ = systemClose(fd) }
            try syncToStorage(fd)
        } catch {
            throw FileSystemError(error, path: path)
        }
    }

    /// This process's ID.
    public static var processID: Int32 { getpid() }

    /// Whether a process with this ID is running (it may belong to another user).
    public static func processIsAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || Errno.current == .operationNotPermitted
    }
}

/// A file written from its end, sequentially: the downloader's segment and key files.
public final class SequentialFileWriter {
    public let path: String
    private var fd: Int32

    /// Opens (creating) `path` for writing at its end, or emptied first when `truncate`. The file gets permissions
    /// `mode` whatever the umask (`0o600` for a secret, such as a downloaded AES-128 key), an existing one included.
    public init(path: String, truncate: Bool, mode: UInt16 = 0o644) throws(FileSystemError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND)
        do {
            fd = try retryingOnInterrupt { open(path, flags, mode_t(mode & 0o777)) }
        } catch {
            throw FileSystemError(error, path: path)
        }
        if mode & 0o777 != 0o644 {
            // An existing file keeps its permissions through open: narrow them (best effort, as above).
            _ = fchmod(fd, mode_t(mode & 0o777))
        }
    }

    /// Writes every byte, looping over short writes.
    public func write(_ bytes: ArraySlice<UInt8>) throws(FileSystemError) {
        let failure = bytes.withUnsafeBytes { (raw) -> Errno? in
            guard let base = raw.baseAddress else { return nil }
            var done = 0
            while done < raw.count {
                do throws(Errno) {
                    done += try retryingOnInterrupt { systemWrite(fd, base + done, raw.count - done) }
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw FileSystemError(failure, path: path) }
    }

    /// Cuts the file to `size` bytes.
    public func truncate(to size: UInt64) throws(FileSystemError) {
        do {
            _ = try retryingOnInterrupt { ftruncate(fd, off_t(clamping: size)) }
        } catch {
            throw FileSystemError(error, path: path)
        }
    }

    /// Makes what was written durable (``syncToStorage(_:)``).
    public func sync() throws(FileSystemError) {
        do {
            try syncToStorage(fd)
        } catch {
            throw FileSystemError(error, path: path)
        }
    }

    /// Closes the file; later calls do nothing.
    public func close() {
        if fd >= 0 {
            _ = systemClose(fd)
            fd = -1
        }
    }

    deinit { close() }
}

/// A file read from its start in chunks, or standard input (`-`): the tools' streaming input.
public final class SequentialFileReader {
    /// The path as given (`-` for standard input).
    public let path: String
    private var fd: Int32

    /// Opens `path` for reading; `-` reads standard input.
    public init(path: String) throws(FileSystemError) {
        self.path = path
        if path == "-" {
            fd = 0
            return
        }
        do {
            fd = try retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw FileSystemError(error, path: path)
        }
    }

    /// Reads the next bytes into `buffer`; 0 at the end.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(FileSystemError) -> Int {
        do {
            return try retryingOnInterrupt { systemRead(fd, buffer.baseAddress, buffer.count) }
        } catch {
            throw FileSystemError(error, path: path)
        }
    }

    /// Reads the rest, failing with `EFBIG` past `limit` bytes.
    public func readAll(limit: Int) throws(FileSystemError) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let result: Result<Int, FileSystemError> = chunk.withUnsafeMutableBytes { raw in
                do throws(FileSystemError) {
                    return .success(try read(into: raw))
                } catch {
                    return .failure(error)
                }
            }
            let count: Int
            switch result {
            case .success(let n): count = n
            case .failure(let error): throw error
            }
            if count == 0 { return out }
            out.append(contentsOf: chunk[0..<count])
            if out.count > limit { throw FileSystemError(.fileTooLarge, path: path) }
        }
    }

    /// Goes back to the start (a file; standard input cannot).
    public func rewind() throws(FileSystemError) {
        guard lseek(fd, 0, SEEK_SET) >= 0 else { throw FileSystemError(.current, path: path) }
    }

    /// Closes the file (never standard input); later calls do nothing.
    public func close() {
        if fd > 0 { _ = systemClose(fd) }
        fd = -1
    }

    deinit { close() }
}
