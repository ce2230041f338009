import FileRange
import HLSPlaylist

/// One table of proxy routes: route ID ↔ upstream URL (the whole URL, query included). The multivariant playlist's
/// routes (media playlists, session keys, session data, steering) sit in one table; each media playlist's (its
/// segments, keys and maps) in a table of its own, held with that playlist's state, so polls of different playlists
/// never share one. A table's IDs start with its ``prefix`` (a media playlist's: its own route ID and `-`), so the ID
/// alone names the table that knows it.
struct RouteTable {
    enum Kind: Hashable {
        case playlist, segment, key, raw
    }
    struct Entry {
        var url: String
        var kind: Kind
        var lastUsed: Double
        /// The route's file extension (from the URL's path), computed once.
        var fileExtension: String = ""
    }
    struct RouteKey: Hashable {
        var url: String
        var kind: Kind
    }

    /// What every ID of this table starts with.
    let prefix: String
    var byID: [String: Entry] = [:]
    var byURL: [RouteKey: String] = [:]
    var next: UInt64 = 0
    var lastPrune: Double = 0

    init(prefix: String = "") { self.prefix = prefix }

    /// The table a route ID belongs to: the ID of the media playlist whose table made it, or nil for the multivariant
    /// table.
    static func stream(of id: Substring) -> Substring? {
        guard let dash = id.firstIndex(of: "-") else { return nil }
        return id[..<dash]
    }

    /// The route ID of an upstream URL, made on first use.
    mutating func id(for url: String, kind: Kind, now: Double) -> String {
        let key = RouteKey(url: url, kind: kind)
        if let id = byURL[key] {
            byID[id]?.lastUsed = now
            return id
        }
        next &+= 1
        let id = prefix + String(next, radix: 36)
        byID[id] = Entry(url: url, kind: kind, lastUsed: now)
        byURL[key] = id
        return id
    }

    /// The route ID and file extension of an upstream URL (the extension computed only for a new route).
    mutating func route(for url: String, kind: Kind, now: Double, defaultExtension: String) -> (String, String) {
        let id = id(for: url, kind: kind, now: now)
        if let ext = byID[id]?.fileExtension, !ext.isEmpty { return (id, ext) }
        let ext = ProxyURIs.extensionOf(url, default: defaultExtension)
        byID[id]?.fileExtension = ext
        return (id, ext)
    }

    /// Marks a route as used now; false when it is gone (pruned).
    mutating func touch(_ id: String, now: Double) -> Bool {
        guard let index = byID.index(forKey: id) else { return false }
        byID.values[index].lastUsed = now
        return true
    }

    /// The upstream URL of a route of `kind`.
    func lookup(_ id: String, kind: Kind) -> String? {
        guard let entry = byID[id], entry.kind == kind else { return nil }
        return entry.url
    }

    /// Drops routes no playlist has referenced for `lifetime` seconds (at most every 10 s); playlist routes stay.
    mutating func prune(now: Double, lifetime: Double) {
        guard now - lastPrune >= 10 else { return }
        lastPrune = now
        let stale = byID.filter { now - $0.value.lastUsed > lifetime && $0.value.kind != .playlist }
        for (id, entry) in stale {
            byID[id] = nil
            byURL[RouteKey(url: entry.url, kind: entry.kind)] = nil
        }
    }
}

/// A media playlist's routes by the text of its URI lines, so a poll maps only the segments it has not seen.
struct RouteCache {
    struct Route {
        var id: String
        /// The rewritten URI line (without its line ending).
        var line: [UInt8]
        /// When the route's ``RouteTable/Entry/lastUsed`` was last refreshed.
        var refreshed: Double
        /// When a poll last held this URI.
        var seen: Double
    }
    var base: String
    var variables = Variables()
    var entries: [URIKey: Route] = [:]
    var lastTrim: Double = 0

    /// Writes a cached route's line (read in place, not copied out of the cache) and notes that a poll held it;
    /// false when the route itself was pruned.
    static func reuse(
        _ route: inout Route, into out: inout [UInt8], routes: inout RouteTable, now: Double, every refreshEvery: Double
    ) -> Bool {
        if now - route.refreshed >= refreshEvery {
            // Keeps the route alive (or finds that it was pruned).
            guard routes.touch(route.id, now: now) else { return false }
            route.refreshed = now
        }
        route.seen = now
        out += route.line
        return true
    }

    /// Forgets URIs no poll has held for `lifetime` seconds (checked at most every 10 s).
    mutating func trim(now: Double, lifetime: Double) {
        guard now - lastTrim >= min(10, lifetime / 4) else { return }
        lastTrim = now
        entries = entries.filter { now - $0.value.seen <= lifetime }
    }
}

/// The bytes of a URI line as a dictionary key: hashed once (FNV-1a over 8-byte words, then the Hasher sees one
/// integer), compared eight bytes at a time.
struct URIKey: Hashable {
    var bytes: ArraySlice<UInt8>
    var digest: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        bytes.withUnsafeBytes { raw in
            var i = 0
            let count = raw.count
            while i &+ 8 <= count {
                h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01b3
                i &+= 8
            }
            while i < count {
                h = (h ^ UInt64(raw[i])) &* 0x0000_0100_0000_01b3
                i &+= 1
            }
        }
        digest = Int(truncatingIfNeeded: h ^ UInt64(bytes.count))
    }

    private init(bytes: ArraySlice<UInt8>, digest: Int) {
        self.bytes = bytes
        self.digest = digest
    }

    /// The key with bytes of its own (a view into a poll's buffer would keep the whole buffer alive).
    var owned: URIKey { URIKey(bytes: ArraySlice(Array(bytes)), digest: digest) }

    static func == (a: URIKey, b: URIKey) -> Bool {
        guard a.digest == b.digest, a.bytes.count == b.bytes.count else { return false }
        return a.bytes.withUnsafeBytes { x in b.bytes.withUnsafeBytes { y in ByteComparison.equal(x, y) } }
    }

    func hash(into hasher: inout Hasher) { hasher.combine(digest) }
}

/// What the proxy reads from URIs and bytes: resolution, restated definitions, file extensions, content types.
enum ProxyURIs {
    static let slateStem = Array("slate/".utf8)

    /// Byte equality.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { same(a, a.indices, b, b.indices) }

    /// Byte equality of two ranges.
    static func same(_ a: [UInt8], _ ra: Range<Int>, _ b: [UInt8], _ rb: Range<Int>) -> Bool {
        guard ra.count == rb.count else { return false }
        guard !ra.isEmpty else { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                ByteComparison.equal(UnsafeRawBufferPointer(rebasing: x[ra]), UnsafeRawBufferPointer(rebasing: y[rb]))
            }
        }
    }

    static func appendEnding(_ ending: LineEnding, to out: inout [UInt8]) {
        switch ending {
        case .lf: out.append(0x0A)
        case .crlf:
            out.append(0x0D)
            out.append(0x0A)
        case .none: break
        }
    }

    /// A URI with its `{$name}` variables substituted (RFC 8216bis §4.3), resolved against the playlist's URL.
    static func resolve(_ raw: String, variables: Variables, base: URIReference) -> String {
        let substituted = variables.values.isEmpty ? raw : (variables.substitute(raw)?.text ?? raw)
        return URIReference(substituted).resolved(against: base).description
    }

    /// An EXT-X-DEFINE that takes its value from somewhere the player cannot see through the proxy (IMPORT from
    /// the upstream multivariant playlist, QUERYPARAM of the upstream URL), restated as NAME/VALUE; nil when the
    /// tag can stay as it is.
    static func definition(_ a: AttributeList, variables: Variables) -> AttributeList? {
        let name = a.quotedString("IMPORT") ?? a.quotedString("QUERYPARAM")
        guard let name, let value = variables.values[name], !value.contains("\"") else { return nil }
        return [Attribute(name: "NAME", rawValue: "\"\(name)\""), Attribute(name: "VALUE", rawValue: "\"\(value)\"")]
    }

    /// The file extension of a URL's last path segment (letters and digits only), or `default`.
    static func extensionOf(_ url: String, default fallback: String) -> String {
        // By bytes: the path ends at `?` or `#`; the name starts after the last `/` (after any `//authority`).
        let u = url.utf8
        let end = u.firstIndex { $0 == 0x3F || $0 == 0x23 } ?? u.endIndex
        var start = u.startIndex
        if let scheme = url[..<end].firstRange(of: "://") { start = scheme.upperBound }
        guard let slash = url[start..<end].utf8.lastIndex(of: 0x2F) else { return fallback }
        let name = url[url.utf8.index(after: slash)..<end]
        guard let dot = name.utf8.lastIndex(of: 0x2E) else { return fallback }
        let ext = name.utf8[name.utf8.index(after: dot)...]
        guard !ext.isEmpty, ext.count <= 5,
            ext.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return fallback }
        return String(decoding: ext, as: UTF8.self).lowercased()
    }

    static func contentType(for url: String) -> String {
        switch extensionOf(url, default: "ts") {
        case "ts": return "video/mp2t"
        case "aac": return "audio/aac"
        case "mp4", "m4s", "m4v", "cmfv": return "video/mp4"
        case "m4a", "cmfa": return "audio/mp4"
        case "vtt", "webvtt": return "text/vtt"
        default: return "application/octet-stream"
        }
    }
}
