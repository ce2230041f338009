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
    private let records: LockedValue<[String: CachedResource]>

    init(directory: String, maxBytes: UInt64) throws(CachingProxyError) {
        self.directory = directory
        self.maxBytes = maxBytes
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CachingProxyError(.cannotOpenCache, detail: "cannot create \(directory): \(error)")
        }
        var found: [String: CachedResource] = [:]
        for resource in CacheIndex.scan(directory) { found[resource.key] = resource }
        records = LockedValue(found)
    }

    /// The resources held in `directory`, most recently used first.
    static func scan(_ directory: String) -> [CachedResource] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var list: [CachedResource] = []
        for name in names where name.hasSuffix(".media.ranges") {
            let key = String(name.dropLast(".media.ranges".count))
            guard let cache = try? SparseRangeCache(dataPath: directory + "/" + key + ".media") else { continue }
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
        records.withLock { table in
            var record =
                table[key] ?? CachedResource(url: url, length: length, heldBytes: held, lastAccess: 0, key: key)
            record.heldBytes = held
            if let length { record.length = length }
            if let access { record.lastAccess = access }
            table[key] = record
        }
    }

    /// The total bytes held by every entry.
    var totalBytes: UInt64 {
        records.withLock { table in table.values.reduce(0) { $0 + $1.heldBytes } }
    }

    /// Removes whole least-recently-used entries, never one in `active`, until the total fits the budget. Returns
    /// the keys removed.
    @discardableResult
    func evict(keeping active: Set<String>) -> [String] {
        var removed: [String] = []
        while true {
            let victim = records.withLock { table -> String? in
                let total = table.values.reduce(0) { $0 + $1.heldBytes }
                guard total > maxBytes else { return nil }
                let candidates = table.values.filter { !active.contains($0.key) }
                guard let oldest = candidates.min(by: { $0.lastAccess < $1.lastAccess }) else { return nil }
                table[oldest.key] = nil
                return oldest.key
            }
            guard let victim else { return removed }
            let data = dataPath(for: victim)
            // The map first: without it the data file claims nothing.
            try? FileManager.default.removeItem(atPath: data + ".ranges")
            try? FileManager.default.removeItem(atPath: data)
            removed.append(victim)
        }
    }
}
