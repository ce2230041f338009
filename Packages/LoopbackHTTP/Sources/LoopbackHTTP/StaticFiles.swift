import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The fixed media-type table (the OS table is not trusted: some map `.ts` to Qt translations).
public enum MediaType {
    /// The media type for a file name's extension; `application/octet-stream` when unknown.
    public static func forPath(_ path: some StringProtocol) -> String {
        forASCIIPath(path.utf8) ?? forAnyPath(path)
    }

    /// ``forPath(_:)`` for any path: the extension after the last `.` character, Unicode lower-cased.
    static func forAnyPath(_ path: some StringProtocol) -> String {
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

    /// ``forPath(_:)`` for a path of printable ASCII bytes, without building strings (every static file request
    /// asks); nil for any other path, which then takes the general way (Unicode lower-casing, grapheme rules).
    static func forASCIIPath(_ utf8: some Collection<UInt8>) -> String? {
        var key: UInt64 = 0  // the last extension's bytes, lower-cased, packed big-endian (no byte is zero)
        var length = 0
        var sawDot = false
        for byte in utf8 {
            guard byte >= 0x20, byte < 0x7F else { return nil }
            if byte == UInt8(ascii: ".") {
                (key, length, sawDot) = (0, 0, true)
            } else if byte == UInt8(ascii: "/") {
                (key, length, sawDot) = (0, 0, false)
            } else {
                length += 1
                let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                if length <= 8 { key = key << 8 | UInt64(lower) }
            }
        }
        guard sawDot, length <= 8 else { return octetStream }
        return knownExtensions.first { $0.key == key }?.type ?? octetStream
    }

    /// The table of ``forExtension(_:)``, keyed as ``forASCIIPath(_:)`` packs an extension.
    private static let knownExtensions: [(key: UInt64, type: String)] = [
        "m3u8", "m3u", "ts", "mp4", "m4v", "m4s", "aac", "ac3", "ec3", "mp3", "vtt",
    ].map { ext in (ext.utf8.reduce(0) { $0 << 8 | UInt64($1) }, forExtension(ext)) }

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
    /// How long an opened file is reused for later requests of the same path before it is opened anew.
    public let openFileValidity: Duration
    private let realRoot: String?
    private let verified = VerifiedFiles()
    private let validityNanoseconds: UInt64

    /// Serves `root`. An opened file is reused for `openFileValidity` (one second by default; `.zero` opens every
    /// request's file anew), so a burst of Range requests into one file costs no path walk, `open` and `close`
    /// each. A reused descriptor is checked with `fstat` on every request: size, times and validators are always
    /// current, and a file that was deleted or renamed over (no links left) is opened anew at once. Only a path
    /// that comes to name another file while the old one keeps a link (a hard link, a swapped directory) can be
    /// served from the old file, for at most the validity.
    public init(root: String, openFileValidity: Duration = .seconds(1)) {
        self.root = root
        self.openFileValidity = max(openFileValidity, .zero)
        let (seconds, attoseconds) = self.openFileValidity.components
        self.validityNanoseconds =
            UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000).partialValue
            &+ UInt64(attoseconds / 1_000_000_000)
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
        let now = validityNanoseconds > 0 ? monotonicNow() : 0
        let key = OpenFiles.Key(root: realRoot, relative: relative)
        if validityNanoseconds > 0, let reused = OpenFiles.shared.file(key, now: now) {
            if let status = try? HTTPResponse.fileStatus(reused), status.links > 0 {
                return HTTPResponse.file(reused, status: status, contentType: MediaType.forPath(relative))
            }
            OpenFiles.shared.remove(key)
        }
        // One allocation for the path (a chain of `+` makes one per step).
        var path = ""
        path.reserveCapacity(realRoot.utf8.count + 1 + relative.utf8.count)
        if realRoot != "/" { path += realRoot }
        path += "/"
        path += relative
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
        if validityNanoseconds > 0 {
            OpenFiles.shared.insert(key, file: file, expiry: now &+ validityNanoseconds)
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
        return segments.count == 1 ? segments[0] : segments.joined(separator: "/")  // one name: no new string
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func realPath(ofOpen file: FileStreamer, path: String) -> String? {
        let link: String?
        do {
            link = try file.withFileDescriptor { (fd: Int32) -> String? in Platform.path(ofOpen: fd) }
        } catch {
            return nil
        }
        if let link { return link }
        return Platform.openPathMayBeUnavailable ? realPath(path) : nil
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
    private let table = LockedValue<[String: FileIdentity]>([:])
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

/// Files that static-file handlers opened and verified recently, keyed by the root they were verified against and
/// the path below it, until their expiry. Process-wide, so that every event loop's periodic sweep closes what
/// expired even when no request comes (a file is never held open for long after its last use); bounded.
final class OpenFiles: Sendable {
    static let shared = OpenFiles()

    /// A root (real path) and a relative path below it: looked up without joining them into a new string.
    struct Key: Hashable {
        var root: String
        var relative: String
    }

    private struct Entry {
        var file: FileStreamer
        var expiry: UInt64
    }

    private struct Table {
        var entries: [Key: Entry] = [:]
        var earliestExpiry = UInt64.max
    }

    private let table = LockedValue(Table())
    private static let capacity = 256

    /// The file opened for `key`, while it has not expired.
    func file(_ key: Key, now: UInt64) -> FileStreamer? {
        table.withLock { table in
            guard let entry = table.entries[key], now < entry.expiry else { return nil }
            return entry.file
        }
    }

    func insert(_ key: Key, file: FileStreamer, expiry: UInt64) {
        // Descriptors close when the last response using them ends, outside the lock.
        let dropped = table.withLock { table -> [Entry] in
            var dropped: [Entry] = []
            if table.entries.count >= Self.capacity {
                dropped = Array(table.entries.values)
                table.entries.removeAll(keepingCapacity: true)
            }
            if let old = table.entries.updateValue(Entry(file: file, expiry: expiry), forKey: key) {
                dropped.append(old)
            }
            table.earliestExpiry = min(table.earliestExpiry, expiry)
            return dropped
        }
        _ = dropped
    }

    func remove(_ key: Key) {
        let dropped = table.withLock { $0.entries.removeValue(forKey: key) }
        _ = dropped
    }

    /// Drops the entries that expired by `now` (called from every event loop's sweep; cheap when none did).
    func sweep(now: UInt64) {
        let dropped = table.withLock { table -> [Entry] in
            guard now >= table.earliestExpiry else { return [] }
            var dropped: [Entry] = []
            var earliest = UInt64.max
            for (key, entry) in table.entries {
                if now >= entry.expiry {
                    dropped.append(entry)
                    table.entries[key] = nil
                } else {
                    earliest = min(earliest, entry.expiry)
                }
            }
            table.earliestExpiry = earliest
            return dropped
        }
        _ = dropped
    }
}
