import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// LoopbackHTTP's platform layer: the file calls whose names, types or semantics differ between Darwin and Glibc, so
// that the rest of the package is written once. Sockets, the poller (epoll, kqueue), sendfile and splice are the
// Sockets package's.

enum Platform {
    @inline(__always)
    static func close(_ fd: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }

    /// The path the kernel has for an open descriptor (after symbolic links), or nil. Linux: the
    /// `/proc/self/fd/N` link; Darwin: `fcntl(fd, F_GETPATH, buffer)`, whose buffer must hold `MAXPATHLEN` bytes
    /// (fcntl(2)).
    static func path(ofOpen fd: Int32) -> String? {
        #if canImport(Darwin)
            var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
            guard fcntl(fd, F_GETPATH, &buffer) != -1 else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink("/proc/self/fd/\(fd)", &buffer, Int(PATH_MAX))
            guard count > 0 else { return nil }
            return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #endif
    }

    /// Whether ``path(ofOpen:)`` can fail for want of the facility rather than because of the file: Linux
    /// containers may have no `/proc`, and then a path is resolved by name instead. Darwin's `F_GETPATH` has no such
    /// gap, so a failure there refuses the file.
    static var openPathMayBeUnavailable: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    /// A `stat`'s modification time: `st_mtimespec` on Darwin, `st_mtim` on Linux.
    static func modificationTime(of info: stat) -> (seconds: Int64, nanoseconds: Int64) {
        #if canImport(Darwin)
            (Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec))
        #else
            (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
        #endif
    }
}

/// `stat` fields the server needs, in one call.
struct FileStatus: Equatable {
    var size: UInt64
    var seconds: Int64
    var nanoseconds: Int64
    var device: UInt64
    var inode: UInt64
    /// The number of links to the file (0 once it was deleted or renamed over while open).
    var links: UInt64 = 1

    static func of(_ fd: Int32) -> FileStatus? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let (seconds, nanoseconds) = Platform.modificationTime(of: info)
        return FileStatus(
            size: UInt64(max(0, info.st_size)), seconds: seconds, nanoseconds: nanoseconds,
            device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino),
            links: UInt64(truncatingIfNeeded: info.st_nlink))
    }
}

func closeDescriptor(_ fd: Int32) { Platform.close(fd) }
