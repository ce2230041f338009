#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Replaces the file at `path` with `bytes` so that a crash or power loss at any moment leaves either the old file
/// or the new one, never a mix: ``DurableFile`` with one chunk (the sparse cache's map, the MPEG-TS index sidecar,
/// the download store).
///
/// The bytes go to a temporary file beside `path` whose name holds this process's ID and a counter (so two processes
/// or threads writing the same file never share one), which is flushed to storage (``syncToStorage(_:)``), renamed
/// over `path`, and whose folder is then flushed so that the rename itself survives. On failure the temporary file is
/// removed and `path` is untouched. A process killed mid-write leaves its temporary file behind:
/// ``removeAtomicWriteLeftovers(in:)`` clears those of processes that are gone.
///
/// With `durable` false nothing is flushed: the replacement is still all-or-nothing for readers, but a power loss may
/// lose it (for hints whose loss only costs work, such as a resume validator or a progress figure).
///
/// The new file has permissions `mode` (`0o644` by default; `0o600` for a file that holds credentials) whatever the
/// process's umask, from its creation on, so replacing a file also replaces looser permissions it had. Throws the
/// errno of the step that failed (``DurableFile`` says which step).
public func writeFileAtomically(_ bytes: [UInt8], to path: String, durable: Bool = true, mode: UInt16 = 0o644)
    throws(Errno)
{
    do throws(DurableFileError) {
        let file = try DurableFile(replacing: path, durable: durable, mode: mode)
        try file.write(bytes)
        try file.commit()
    } catch {
        throw error.errno
    }
}

/// What ``DurableFile`` puts between a file's name and the writer's PID in its temporary name.
let atomicWriteMarker = ".tmp"

/// Removes from `folder` the temporary files ``DurableFile`` left when its process died mid-write
/// (those of processes still running are in use and kept), and `name.tmp` files of the fixed-name form older versions
/// wrote. Returns the names removed.
@discardableResult
public func removeAtomicWriteLeftovers(in folder: String) -> [String] {
    var removed: [String] = []
    for name in FileSystem.entries(in: folder) ?? [] {
        let bytes = Array(name.utf8)
        let marker = Array(atomicWriteMarker.utf8)
        var start = bytes.count - marker.count
        while start > 0 && !bytes[start..<(start + marker.count)].elementsEqual(marker) { start -= 1 }
        guard start > 0 else { continue }
        let tail = bytes[(start + marker.count)...]
        if !tail.isEmpty {
            let parts = tail.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
            guard parts.count == 2, let pid = Int32(String(decoding: parts[0], as: UTF8.self)),
                UInt64(String(decoding: parts[1], as: UTF8.self)) != nil, pid > 0, pid != getpid(),
                !FileSystem.processIsAlive(pid)
            else { continue }
        }
        FileSystem.removeFile(folder + "/" + name)
        removed.append(name)
    }
    return removed
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
