import FileRange
import HTTPWire

/// A file version's validators as header values: the strong `ETag` and the `Last-Modified` date.
struct FileValidators: Sendable, Equatable {
    var entityTag: String
    var lastModified: String

    /// Formats them (what the cache saves).
    init(size: UInt64, seconds: Int64, nanoseconds: Int64) {
        entityTag = HTTPResponse.entityTag(size: size, seconds: seconds, nanoseconds: nanoseconds)
        lastModified = HTTPDate(secondsSince1970: seconds).imfFixdate
    }
}

/// The validators of the files served lately, one entry per file (device and inode) with the version (size and
/// modification time) they were formatted for: a Range request into a file costs a lookup instead of formatting
/// two strings. Never stale: the values depend on the version alone, and a version that differs from the entry's
/// (the file was written, or the inode now names another file) is formatted anew and replaces it. Bounded; shared
/// by the event loops, so behind a lock.
final class FileValidatorCache: Sendable {
    static let shared = FileValidatorCache()

    struct Version: Equatable {
        var size: UInt64
        var seconds: Int64
        var nanoseconds: Int64
    }

    private struct Entry {
        var version: Version
        var validators: FileValidators
        /// The response fields for this version and a content type, made on first use (``fields(for:contentType:)``).
        var fields: (contentType: String, headers: HTTPHeaders)?
    }

    private let table = LockedValue<[FileIdentity: Entry]>([:])
    let capacity: Int

    init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

    /// The validators for the file version `status` describes.
    func validators(for status: FileStatus) -> FileValidators {
        let identity = FileIdentity(device: status.device, inode: status.inode)
        let version = Version(size: status.size, seconds: status.seconds, nanoseconds: status.nanoseconds)
        let cached = table.withLock { table -> FileValidators? in
            guard let entry = table[identity], entry.version == version else { return nil }
            return entry.validators
        }
        if let cached { return cached }
        let validators = FileValidators(size: version.size, seconds: version.seconds, nanoseconds: version.nanoseconds)
        table.withLock { table in
            if table.count >= capacity, table[identity] == nil { table.removeAll(keepingCapacity: true) }
            table[identity] = Entry(version: version, validators: validators)
        }
        return validators
    }

    /// The header fields of a response with the file version `status` describes: `Content-Type`, `ETag`,
    /// `Last-Modified`, `Cache-Control: no-cache` and `Accept-Ranges: bytes`, in that order. Made once per version
    /// and content type and shared by every response (a copy of the list is one retain, not five fields appended).
    func fields(for status: FileStatus, contentType: String) -> HTTPHeaders {
        let identity = FileIdentity(device: status.device, inode: status.inode)
        let version = Version(size: status.size, seconds: status.seconds, nanoseconds: status.nanoseconds)
        let cached = table.withLock { table -> HTTPHeaders? in
            guard let entry = table[identity], entry.version == version, let fields = entry.fields,
                fields.contentType == contentType
            else { return nil }
            return fields.headers
        }
        if let cached { return cached }
        let validators = validators(for: status)
        var headers = HTTPHeaders(reservingCapacity: 5)
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "ETag", value: validators.entityTag)
        headers.add(name: "Last-Modified", value: validators.lastModified)
        // Local media can change (a recording that grows): caches must revalidate, which the validators make cheap.
        headers.add(name: "Cache-Control", value: "no-cache")
        headers.add(name: "Accept-Ranges", value: "bytes")
        table.withLock { table in
            if table[identity]?.version == version { table[identity]?.fields = (contentType, headers) }
        }
        return headers
    }

    /// The number of files held (for tests).
    var count: Int { table.withLock { $0.count } }
}
