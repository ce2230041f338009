import FileRange
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The fixed media-type table (the OS table is not trusted: some map `.ts` to Qt translations).
public enum MediaType {
    /// The media type for a file name's extension; `application/octet-stream` when unknown.
    public static func forPath(_ path: some StringProtocol) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return octetStream }
        return forExtension(String(path[path.index(after: dot)...]))
    }

    /// The media type for an extension without the dot, compared case-insensitively.
    public static func forExtension(_ ext: String) -> String {
        switch ext.lowercased() {
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "m3u": return "audio/mpegurl"
        case "ts": return "video/mp2t"
        case "mp4", "m4v": return "video/mp4"
        case "m4s": return "video/iso.segment"
        case "aac": return "audio/aac"
        case "ac3": return "audio/ac3"
        case "ec3": return "audio/eac3"
        case "mp3": return "audio/mpeg"
        case "vtt": return "text/vtt"
        default: return octetStream
        }
    }

    public static let octetStream = "application/octet-stream"
}

/// Serves files below a root directory, and nothing else.
///
/// Route it with a trailing wildcard (`router.add(.get, "/files/**", handler: StaticFileHandler(root:).handler)`).
/// The path segments arrive percent-decoded exactly once (by the router); a segment that is empty, `.` or `..`,
/// or contains `/`, `\`, NUL or another control character is refused with 404, as is an escape that does not
/// decode or invalid (for example overlong) UTF-8. After opening, the file's real path is resolved and must lie
/// inside the root's real path, so a symbolic link that leaves the root is refused. Directories are never listed.
public struct StaticFileHandler: Sendable {
    /// The root as given.
    public let root: String
    private let realRoot: String?
    private let verified = VerifiedFiles()

    public init(root: String) {
        self.root = root
        self.realRoot = StaticFileHandler.realPath(root)
    }

    /// The handler to route (runs on the event loop: `open` and `fstat` of a local file do not block for long).
    public var handler: HTTPHandler {
        .immediate { request in self.respond(to: request) }
    }

    /// Answers a request whose `wildcardSegments` name the file.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard let realRoot, let relative = StaticFileHandler.safeRelativePath(request.wildcardSegments) else {
            return .error(.notFound)
        }
        let path = realRoot == "/" ? "/" + relative : realRoot + "/" + relative
        let file: FileStreamer
        do {
            file = try FileStreamer(path: path)
        } catch {
            if error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem {
                // Out of descriptors is the server's momentary problem, not a missing file.
                var busy = HTTPResponse.error(.serviceUnavailable)
                busy.headers.add(name: "Retry-After", value: "1")
                return busy
            }
            return .error(.notFound)
        }
        let status: FileStatus
        do {
            status = try HTTPResponse.fileStatus(file)
        } catch {
            return .error(.internalServerError)
        }
        // Resolve after opening: the descriptor's real path must lie inside the root. A path whose file (device
        // and inode) was verified before needs no new resolution: if the path now leads to another file, its
        // identity differs and the check runs again.
        let identity = FileIdentity(device: status.device, inode: status.inode)
        if verified.contains(path: path, identity: identity) == false {
            guard let opened = StaticFileHandler.realPath(ofOpen: file, path: path),
                opened.hasPrefix(realRoot == "/" ? "/" : realRoot + "/")
            else {
                return .error(.notFound)
            }
            verified.insert(path: path, identity: identity)
        }
        return HTTPResponse.file(file, status: status, contentType: MediaType.forPath(relative))
    }

    /// Joins decoded segments, or nil when any is unsafe.
    static func safeRelativePath(_ segments: [String]) -> String? {
        guard !segments.isEmpty else { return nil }
        for segment in segments {
            if segment.isEmpty || segment == "." || segment == ".." { return nil }
            for byte in segment.utf8
            where byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") {
                return nil
            }
        }
        return segments.joined(separator: "/")
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func realPath(ofOpen file: FileStreamer, path: String) -> String? {
        #if os(Linux)
            let link: String?
            do {
                link = try file.withFileDescriptor { (fd: Int32) -> String? in
                    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                    let count = readlink("/proc/self/fd/\(fd)", &buffer, Int(PATH_MAX))
                    guard count > 0 else { return nil }
                    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            } catch {
                return nil
            }
            return link ?? realPath(path)
        #else
            do {
                return try file.withFileDescriptor { (fd: Int32) -> String? in
                    var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
                    guard fcntl(fd, F_GETPATH, &buffer) == 0 else { return nil }
                    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
                    return String(decoding: bytes, as: UTF8.self)
                }
            } catch {
                return nil
            }
        #endif
    }
}

/// A file's identity on its file system.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// Paths whose opened file was found inside the root, with that file's identity (bounded; shared by the event
/// loops, so behind a `Mutex`).
final class VerifiedFiles: Sendable {
    private let table = Mutex<[String: FileIdentity]>([:])
    private static let capacity = 4096

    func contains(path: String, identity: FileIdentity) -> Bool {
        table.withLock { $0[path] == identity }
    }

    func insert(path: String, identity: FileIdentity) {
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[path] = identity
        }
    }
}
