import HLSPlaylist

/// Rewrites playlists into proxy routes: a parsed playlist and a route table in, the bytes the player gets out. Pure:
/// no I/O, no lock, no clock (the time comes in as `now`), so it is tested on its own.
///
/// Multivariant playlists: every variant, rendition and I-frame playlist becomes `p/<id>.m3u8`, session keys
/// `k/<id>.key`, session data and content steering `r/<id>`. Media playlists: segments become `s/<id>.<ext>`, keys
/// `k/<id>.key`, maps `s/<id>.<ext>`; in a live playlist, the `slate/<msn>.<ext>` lines HLSAdFilter put in place of
/// ad segments become `slate/<playlist>/<msn>.<ext>`. EXT-X-DEFINEs that IMPORT or QUERYPARAM a value the player
/// cannot see through the proxy are restated as NAME/VALUE. Every other line is copied as it is.
struct PlaylistRewriter {
    /// `/<token>/`, the start of every route.
    let prefix: [UInt8]
    let prefixText: String
    /// Seconds a route stays valid after the last playlist that referenced it.
    let lifetime: Double

    /// `token`: the session token's text.
    init(token: String, lifetime: Double) {
        prefixText = "/\(token)/"
        prefix = Array(prefixText.utf8)
        self.lifetime = lifetime
    }

    /// How often a reused route's last use is refreshed.
    var refreshEvery: Double { min(10, lifetime / 4) }

    /// Writes a cleaned media playlist with every URI turned into a route of `routes` (the playlist's own table).
    /// Routes of URI lines are cached in `cache` by the line's text, so a poll of a sliding window resolves and maps
    /// only its new segments (a cache made for another base URL or other variables is started afresh); the output
    /// bytes are written directly. `playlistID` names the playlist in its slate routes (`live` playlists only).
    func media(
        _ playlist: Playlist, base: String, variables: Variables, playlistID: String, live: Bool,
        routes: inout RouteTable, cache: inout RouteCache?, now: Double
    ) -> [UInt8] {
        let slatePrefix = prefix + Array("slate/\(playlistID)/".utf8)
        let slateStem = ProxyURIs.slateStem
        let lines = playlist.lines
        var size = 0
        for i in lines.indices { size &+= lines[i].bytes.count &+ 2 }
        var out: [UInt8] = []
        out.reserveCapacity(size + size / 4)
        routes.prune(now: now, lifetime: lifetime)
        var routeCache = cache ?? RouteCache(base: base, variables: variables)
        // Taken out while it changes (a reference left in `cache` would make the first change copy every entry).
        cache = nil
        if routeCache.base != base || routeCache.variables != variables {
            routeCache = RouteCache(base: base, variables: variables)
        }
        let baseReference = URIReference(base)
        // Lines are read in place (a line copied whole costs a retain per field).
        for i in lines.indices {
            if lines[i].isURI {
                if live, lines[i].bytes.starts(with: slateStem) {
                    out += slatePrefix
                    out += lines[i].bytes.dropFirst(slateStem.count)
                } else {
                    appendRoute(
                        lines[i], cache: &routeCache, routes: &routes, into: &out, base: baseReference, now: now)
                }
                ProxyURIs.appendEnding(lines[i].ending, to: &out)
                continue
            }
            switch lines[i].knownTag {
            case .key, .sessionKey, .map, .define: break
            default:
                out += lines[i].bytes
                ProxyURIs.appendEnding(lines[i].ending, to: &out)
                continue
            }
            let line = lines[i]
            guard let tag = line.tag, let known = tag.known, var a = tag.attributes else {
                out += line.bytes
                ProxyURIs.appendEnding(line.ending, to: &out)
                continue
            }
            switch known {
            case .key, .sessionKey, .map:
                guard let raw = a.quotedString("URI") else {
                    out += line.bytes
                    break
                }
                if live, known == .map, raw.hasPrefix("slate/") {
                    // The fMP4 slates' init section (LiveAdFilter's slateMapURI).
                    a.setQuoted("URI", String(decoding: slatePrefix, as: UTF8.self) + raw.dropFirst(6))
                    out += Array(Tag.attributes(known, a).rendered.utf8)
                    break
                }
                let url = ProxyURIs.resolve(raw, variables: variables, base: baseReference)
                let kind: RouteTable.Kind = known == .map ? .segment : .key
                let id = routes.id(for: url, kind: kind, now: now)
                let route =
                    kind == .key
                    ? prefixText + "k/\(id).key"
                    : prefixText + "s/\(id).\(ProxyURIs.extensionOf(url, default: "mp4"))"
                a.setQuoted("URI", route)
                out += Array(Tag.attributes(known, a).rendered.utf8)
            case .define:
                if let defined = ProxyURIs.definition(a, variables: variables) {
                    out += Array(Tag.attributes(.define, defined).rendered.utf8)
                } else {
                    out += line.bytes
                }
            default:
                out += line.bytes
            }
            ProxyURIs.appendEnding(line.ending, to: &out)
        }
        routeCache.trim(now: now, lifetime: lifetime)
        cache = routeCache
        return out
    }

    /// Writes the route of a segment URI line. Looked up by the line's bytes (no String made): only a new URI is
    /// resolved and mapped.
    func appendRoute(
        _ line: PlaylistLine, cache: inout RouteCache, routes: inout RouteTable, into out: inout [UInt8],
        base: URIReference, now: Double
    ) {
        let key = URIKey(line.bytes)
        if let index = cache.entries.index(forKey: key) {
            if RouteCache.reuse(
                &cache.entries.values[index], into: &out, routes: &routes, now: now, every: refreshEvery)
            {
                return
            }
            cache.entries.remove(at: index)
        }
        let url = ProxyURIs.resolve(line.uri ?? "", variables: cache.variables, base: base)
        let (id, ext) = routes.route(for: url, kind: .segment, now: now, defaultExtension: "ts")
        var routeLine = prefix
        routeLine += Array("s/\(id).\(ext)".utf8)
        cache.entries[key.owned] = RouteCache.Route(id: id, line: routeLine, refreshed: now, seen: now)
        out += routeLine
    }

    /// Writes a multivariant playlist with every URI turned into a route of `routes` (the multivariant table).
    func multivariant(_ playlist: Playlist, base: String, variables: Variables, routes: inout RouteTable, now: Double)
        -> [UInt8]
    {
        let baseReference = URIReference(base)
        var lines = playlist.lines
        routes.prune(now: now, lifetime: lifetime)
        for index in lines.indices {
            switch lines[index].content {
            case .uri:
                let url = ProxyURIs.resolve(lines[index].uri ?? "", variables: variables, base: baseReference)
                let id = routes.id(for: url, kind: .playlist, now: now)
                lines[index] = PlaylistLine(uri: prefixText + "p/\(id).m3u8", ending: lines[index].ending)
            case .tag(let tag):
                guard let known = tag.known, var a = tag.attributes else { continue }
                let name: String
                let kind: RouteTable.Kind
                switch known {
                case .media, .iFrameStreamInf:
                    (name, kind) = ("URI", .playlist)
                case .sessionKey:
                    (name, kind) = ("URI", .key)
                case .sessionData:
                    (name, kind) = ("URI", .raw)
                case .contentSteering:
                    (name, kind) = ("SERVER-URI", .raw)
                case .define:
                    if let defined = ProxyURIs.definition(a, variables: variables) {
                        lines[index] = PlaylistLine(tag: .attributes(.define, defined), ending: lines[index].ending)
                    }
                    continue
                default:
                    continue
                }
                guard let raw = a.quotedString(name) else { continue }
                let url = ProxyURIs.resolve(raw, variables: variables, base: baseReference)
                let id = routes.id(for: url, kind: kind, now: now)
                let route: String
                switch kind {
                case .playlist: route = prefixText + "p/\(id).m3u8"
                case .key: route = prefixText + "k/\(id).key"
                default: route = prefixText + "r/\(id)"
                }
                a.setQuoted(name, route)
                lines[index] = PlaylistLine(tag: .attributes(known, a), ending: lines[index].ending)
            default:
                continue
            }
        }
        return Playlist(lines: lines, hasByteOrderMark: false).write()
    }
}
