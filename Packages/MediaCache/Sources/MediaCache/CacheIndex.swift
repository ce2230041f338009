import FileRange
import Foundation

/// What the caching proxy knows about a remote resource, from the origin's first response; kept in the cache's
/// metadata so that it survives restarts.
public struct CachedContentInfo: Sendable, Hashable {
    /// The complete length in bytes.
    public var length: UInt64
    /// The origin's `Content-Type`.
    public var contentType: String
    /// Whether the origin answered a Range request with 206 (false: it sends the whole body, filled sequentially).
    public var acceptsRanges: Bool
    /// The origin's `ETag`.
    public var entityTag: String?
    /// The origin's `Last-Modified`.
    public var lastModified: String?

    /// Info with every field given.
    public init(
        length: UInt64, contentType: String, acceptsRanges: Bool, entityTag: String? = nil, lastModified: String? = nil
    ) {
        self.length = length
        self.contentType = contentType
        self.acceptsRanges = acceptsRanges
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Whether `other` describes a different version of the resource (a validator or the length changed).
    func differs(from other: CachedContentInfo) -> Bool {
        if length != other.length { return true }
        if let tag = entityTag, let otherTag = other.entityTag { return tag != otherTag }
        if let date = lastModified, let otherDate = other.lastModified { return date != otherDate }
        return false
    }

    var metadata: [String: String] {
        var fields = [
            "length": String(length), "type": contentType, "ranges": acceptsRanges ? "bytes" : "none",
        ]
        if let entityTag { fields["etag"] = entityTag }
        if let lastModified { fields["last-modified"] = lastModified }
        return fields
    }

    init?(metadata: [String: String]) {
        guard let text = metadata["length"], let length = UInt64(text), let type = metadata["type"] else { return nil }
        self.init(
            length: length, contentType: type, acceptsRanges: metadata["ranges"] != "none",
            entityTag: metadata["etag"], lastModified: metadata["last-modified"])
    }
}

/// One resource in a cache folder, as `tsplayer cache-proxy --list` shows it.
public struct CachedResource: Sendable, Hashable {
    /// The remote URL (without credentials).
    public var url: String
    /// The complete length, when known.
    public var length: UInt64?
    /// How many bytes the cache holds.
    public var heldBytes: UInt64
    /// When the resource was last used (seconds since 1970).
    public var lastAccess: Double
    /// The cache key (file stem in the folder).
    public var key: String

    /// The fraction of the resource held, 0...1 (0 when the length is unknown).
    public var fractionHeld: Double {
        guard let length, length > 0 else { return 0 }
        return min(1, Double(heldBytes) / Double(length))
    }
}

/// The cache folder: one `<key>.media` data file and `<key>.media.ranges` map per resource, keyed by the remote URL
/// without credentials; a size budget enforced by evicting whole least-recently-used entries.
final class CacheIndex: Sendable {
    let directory: String
    let maxBytes: UInt64
    /// Permissions of the cache's files and of the folder when the proxy creates it (whatever the umask).
    static let fileMode: UInt16 = 0o600
    static let folderMode: UInt16 = 0o700
    private let records: LockedValue<CacheBooks>

    init(directory: String, maxBytes: UInt64) throws(CachingProxyError) {
        self.directory = directory
        self.maxBytes = maxBytes
        do {
            // Owner-only: the metadata holds each resource's URL, whose query may carry a token.
            try FileSystem.createFolders(directory, mode: CacheIndex.folderMode)
        } catch {
            throw CachingProxyError(.cannotOpenCache, detail: "cannot create \(directory): \(error)")
        }
        var found: [String: CachedResource] = [:]
        for resource in CacheIndex.scan(directory) { found[resource.key] = resource }
        records = LockedValue(CacheBooks(table: found))
    }

    /// The resources held in `directory`, most recently used first.
    static func scan(_ directory: String) -> [CachedResource] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var list: [CachedResource] = []
        for name in names where name.hasSuffix(".media.ranges") {
            let key = String(name.dropLast(".media.ranges".count))
            guard let cache = try? SparseRangeCache(dataPath: directory + "/" + key + ".media", mode: fileMode) else {
                continue
            }
            defer { cache.close() }
            let metadata = cache.metadata
            guard let url = metadata["url"] else { continue }
            list.append(
                CachedResource(
                    url: url, length: metadata["length"].flatMap { UInt64($0) },
                    heldBytes: cache.available.totalLength,
                    lastAccess: metadata["accessed"].flatMap { Double($0) } ?? 0, key: key))
        }
        return list.sorted { $0.lastAccess > $1.lastAccess }
    }

    /// The cache key of a URL: FNV-1a 64 of the URL without user info or fragment, in hex.
    static func key(for url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in canonicalURL(url).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The URL without its credentials (user info) and fragment: what the cache is keyed by.
    static func canonicalURL(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.user = nil
        components.password = nil
        components.fragment = nil
        return components.string ?? url
    }

    func dataPath(for key: String) -> String { directory + "/" + key + ".media" }

    /// Records that `key` (for `url`) now holds `held` bytes and was used at `access` (when given).
    func update(key: String, url: String, length: UInt64?, held: UInt64, access: Double?) {
        records.withLock { books in
            var record =
                books.table[key] ?? CachedResource(url: url, length: length, heldBytes: held, lastAccess: 0, key: key)
            record.heldBytes = held
            if let length { record.length = length }
            if let access { record.lastAccess = access }
            books.table[key] = record
        }
    }

    /// The total bytes held by every entry, and reserved by fills under way.
    var totalBytes: UInt64 {
        records.withLock { $0.total }
    }

    /// Reserves `bytes` for a fill of `key` before it writes them: the one account of every fill, so that fills
    /// running at once never pass the budget together. Whole least-recently-used entries that no fill holds a
    /// reservation on (and not `key`) are evicted, their files removed before this returns, until the held and
    /// reserved bytes plus `bytes` fit; when they cannot, nothing is reserved. Returns whether the bytes were
    /// reserved, and the keys evicted.
    func reserve(_ bytes: UInt64, for key: String) -> (granted: Bool, evicted: [String]) {
        guard bytes <= maxBytes else { return (false, []) }
        let (granted, victims) = records.withLock { books -> (Bool, [String]) in
            var victims: [String] = []
            while books.total > maxBytes || bytes > maxBytes - books.total {
                let candidates = books.table.values.filter { $0.key != key && (books.reserved[$0.key] ?? 0) == 0 }
                guard let oldest = candidates.min(by: { $0.lastAccess < $1.lastAccess }) else {
                    return (false, victims)
                }
                books.table[oldest.key] = nil
                victims.append(oldest.key)
            }
            books.reserved[key, default: 0] += bytes
            return (true, victims)
        }
        for victim in victims { removeFiles(of: victim) }
        return (granted, victims)
    }

    /// Gives back what a fill of `key` reserved, now that it ended; `held` is what the entry holds after it
    /// (nil: the entry was evicted meanwhile, and the folder no longer has its files).
    func release(_ bytes: UInt64, for key: String, url: String, length: UInt64?, held: UInt64?) {
        records.withLock { books in
            let left = (books.reserved[key] ?? 0) - min(books.reserved[key] ?? 0, bytes)
            books.reserved[key] = left == 0 ? nil : left
            guard let held else { return }
            var record =
                books.table[key] ?? CachedResource(url: url, length: length, heldBytes: held, lastAccess: 0, key: key)
            record.heldBytes = held
            if let length { record.length = length }
            books.table[key] = record
        }
    }

    /// Removes whole least-recently-used entries, never one in `active` or with a reservation, until the total
    /// fits the budget (a folder left over budget by a smaller `--max-size`). Returns the keys removed.
    @discardableResult
    func evict(keeping active: Set<String>) -> [String] {
        var removed: [String] = []
        while true {
            let victim = records.withLock { books -> String? in
                guard books.total > maxBytes else { return nil }
                let candidates = books.table.values.filter {
                    !active.contains($0.key) && (books.reserved[$0.key] ?? 0) == 0
                }
                guard let oldest = candidates.min(by: { $0.lastAccess < $1.lastAccess }) else { return nil }
                books.table[oldest.key] = nil
                return oldest.key
            }
            guard let victim else { return removed }
            removeFiles(of: victim)
            removed.append(victim)
        }
    }

    private func removeFiles(of key: String) {
        let data = dataPath(for: key)
        // The map first: without it the data file claims nothing.
        FileSystem.removeFile(data + ".ranges")
        FileSystem.removeFile(data)
    }
}

/// The cache's books: what each entry holds, and what fills under way reserved.
struct CacheBooks {
    var table: [String: CachedResource]
    var reserved: [String: UInt64] = [:]

    var total: UInt64 {
        table.values.reduce(0) { $0 + $1.heldBytes } + reserved.values.reduce(0, +)
    }
}
