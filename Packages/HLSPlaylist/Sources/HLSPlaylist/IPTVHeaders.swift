import TextCodecs

/// The request headers an IPTV list gives a channel, wherever the list puts them: `#EXTVLCOPT:http-user-agent=` and
/// `http-referrer=`, `#EXTHTTP:{...}`, and Kodi's `url|User-Agent=...&Referer=...` after the URL.
extension IPTVChannel {
    /// The headers every request for this channel must carry, in order: `User-Agent`, `Referer`, then the other
    /// `#EXTHTTP` and URL-suffix headers (one value per name, compared case-insensitively; the first kept).
    public var requestHeaders: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        var seen: Set<String> = []
        func add(_ name: String, _ value: String) {
            guard seen.insert(name.lowercased()).inserted else { return }
            out.append((name, value))
        }
        if let userAgent { add("User-Agent", userAgent) }
        if let referrer { add("Referer", referrer) }
        for (name, value) in httpHeaders {
            switch name.lowercased() {
            case "user-agent", "referer", "referrer": continue
            default: add(name, value)
            }
        }
        return out
    }

    /// The channel's own `tvg-shift` in hours (the list's header may give one for every channel:
    /// ``IPTVHeader/tvgShift``).
    public var tvgShift: Double? { self["tvg-shift"].flatMap(IPTVHeader.hours) }

    /// Records a request header: `User-Agent` and `Referer` (or `Referrer`) also set ``userAgent`` and
    /// ``referrer``, replacing an earlier value only when `overriding`.
    mutating func setHeader(_ name: String, _ value: String, overriding: Bool) {
        switch name.lowercased() {
        case "user-agent": if overriding || userAgent == nil { userAgent = value }
        case "referer", "referrer": if overriding || referrer == nil { referrer = value }
        default: break
        }
        if overriding, let index = httpHeaders.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) {
            httpHeaders[index].value = value
        } else {
            httpHeaders.append((name, value))
        }
    }
}

extension IPTVHeader {
    /// The programme guide URLs of `url-tvg` and `x-tvg-url` (each may hold several, separated by commas), in
    /// order, without repeats.
    public var guideURLs: [String] {
        var out: [String] = []
        for (name, value) in attributes where name == "url-tvg" || name == "x-tvg-url" {
            for part in value.split(separator: ",") {
                let url = String(part.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
                if !url.isEmpty && !out.contains(url) { out.append(url) }
            }
        }
        return out
    }

    /// The list-wide `tvg-shift` in hours (`+1`, `-2.5`), nil when absent or not a number.
    public var tvgShift: Double? { self["tvg-shift"].flatMap(Self.hours) }

    static func hours(_ text: String) -> Double? {
        let trimmed = text.hasPrefix("+") ? String(text.dropFirst()) : text
        guard let value = Double(trimmed), value.isFinite, abs(value) <= 48 else { return nil }
        return value
    }
}

/// The URL line of an IPTV entry.
enum IPTVURL {
    /// Splits Kodi's `url|Name=value&Name=value` form into the URL and its headers, names and values decoded as
    /// Kodi decodes them (``kodiDecoded(_:)``). A `|` is not allowed unencoded in a URL (RFC 3986 §2), so the first
    /// one with a `Name=` after it starts the headers; `&` and further `|` separate them.
    static func split(_ line: ArraySlice<UInt8>) -> (url: String, headers: [(String, String)]) {
        guard let bar = line.firstIndex(of: 0x7C) else { return (String(decoding: line, as: UTF8.self), []) }
        var headers: [(String, String)] = []
        for field in line[(bar + 1)...].split(whereSeparator: { $0 == 0x26 || $0 == 0x7C }) {
            guard let equals = field.firstIndex(of: asciiEquals), equals > field.startIndex else { continue }
            let name = kodiDecoded(field[..<equals])
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != asciiColon }) else {
                continue
            }
            headers.append((name, kodiDecoded(field[(equals + 1)...])))
        }
        guard !headers.isEmpty else { return (String(decoding: line, as: UTF8.self), []) }
        var url = line[..<bar]
        while let last = url.last, ASCII.isWhitespace(last) { url = url.dropLast() }
        return (String(decoding: url, as: UTF8.self), headers)
    }

    /// A name or value of a Kodi header suffix as Kodi reads it: `%XX` escapes decoded (a malformed escape is kept
    /// as it is) and `+` read as a space (Kodi's `CURL::Decode`); then one pair of double quotes around the whole
    /// value, as lists write `User-Agent="Mozilla/5.0 (...)"`, is taken off, so the quotes do not go upstream.
    static func kodiDecoded(_ bytes: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == 0x25, i + 2 < bytes.endIndex, let high = Hex.value(of: bytes[i + 1]),
                let low = Hex.value(of: bytes[i + 2])
            {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i] == 0x2B ? asciiSpace : bytes[i])
                i += 1
            }
        }
        if out.count >= 2, out[0] == asciiQuote, out[out.count - 1] == asciiQuote {
            return String(decoding: out[1..<(out.count - 1)], as: UTF8.self)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A name for a channel that has none: the URL's last path segment without its query, or the URL.
    static func displayName(_ url: String) -> String {
        var path = Substring(url)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        while path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return url }
        let last = path[path.index(after: slash)...]
        return last.isEmpty || path[..<slash].hasSuffix("/") ? url : String(last)
    }
}
