#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Replaces the file at `path` with `bytes` so that a crash or power loss at any moment leaves either the old file
/// or the new one, never a mix: the toolkit's one atomic writer (the sparse cache's map, the MPEG-TS index sidecar,
/// the download store).
///
/// The bytes go to a temporary file beside `path` whose name holds this process's ID and a counter (so two processes
/// or threads writing the same file never share one), which is flushed to storage (``syncToStorage(_:)``), renamed
/// over `path`, and whose folder is then flushed so that the rename itself survives. On failure the temporary file is
/// removed and `path` is untouched.
public func writeFileAtomically(_ bytes: [UInt8], to path: String) throws(Errno) {
    let temporary = path + ".tmp\(getpid())-\(AtomicFileCounter.next())"
    let fd = try retryingOnInterrupt { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    do throws(Errno) {
        try writeAll(bytes, to: fd)
        try syncToStorage(fd)
    } catch {
        _ = systemClose(fd)
        _ = unlink(temporary)
        throw error
    }
    guard systemClose(fd) == 0 else {
        let error = Errno.current
        _ = unlink(temporary)
        throw error
    }
    do throws(Errno) {
        _ = try retryingOnInterrupt { rename(temporary, path) }
    } catch {
        _ = unlink(temporary)
        throw error
    }
    try syncFolder(of: path)
}

/// Flushes the folder that holds `path` to storage, so that an entry created or renamed in it survives a power loss.
public func syncFolder(of path: String) throws(Errno) {
    var folder = "."
    if let slash = path.lastIndex(of: "/") {
        folder = slash == path.startIndex ? "/" : String(path[..<slash])
    }
    let fd = try retryingOnInterrupt { open(folder, O_RDONLY | O_CLOEXEC) }
    defer { _ = systemClose(fd) }
    try syncToStorage(fd)
}

/// Writes every byte, looping over short writes and retrying `EINTR`.
func writeAll(_ bytes: [UInt8], to fd: Int32) throws(Errno) {
    let failure = bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Errno? in
        guard let base = buffer.baseAddress else { return nil }
        var done = 0
        while done < buffer.count {
            do throws(Errno) {
                done += try retryingOnInterrupt { systemWrite(fd, base + done, buffer.count - done) }
            } catch {
                return error
            }
        }
        return nil
    }
    if let failure { throw failure }
}

/// Distinct temporary names within one process.
private enum AtomicFileCounter {
    static let value = LockedValue<UInt64>(0)
    static func next() -> UInt64 {
        value.withLock { count in
            count &+= 1
            return count
        }
    }
}
