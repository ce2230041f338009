import TextCodecs

/// Where a request goes: an http(s) URL split into what the connection and the request head need.
struct Target: Sendable, Hashable {
    var secure: Bool
    /// The host without brackets (an IPv6 literal is bare).
    var host: String
    var port: UInt16
    /// Path and query, as sent on the request line.
    var requestTarget: String
    /// The `Host` field: the authority without user information.
    var hostHeader: String
    var key: String { host + "|" + String(port) }

    init(_ url: String) throws(HTTPClientError) {
        let parts = URIReference(url)
        guard let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var authority = parts.authority, !authority.isEmpty
        else {
            throw HTTPClientError(.invalidURL, "not an http(s) URL", url: url)
        }
        secure = scheme == "https"
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        var hostPart = Substring(authority)
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw HTTPClientError(.invalidURL, "bad IPv6 host", url: url)
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { portText = rest.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw HTTPClientError(.invalidURL, "no host", url: url) }
        host = String(hostPart)
        if let portText, !portText.isEmpty {
            guard let number = UInt16(portText), number > 0 else {
                throw HTTPClientError(.invalidURL, "bad port", url: url)
            }
            port = number
        } else {
            port = secure ? 443 : 80
        }
        let path = parts.path.isEmpty ? "/" : parts.path
        requestTarget = path + (parts.query.map { "?" + $0 } ?? "")
        guard requestTarget.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw HTTPClientError(.invalidURL, "the URL holds spaces or control bytes", url: url)
        }
        hostHeader = authority
    }
}

extension URIReference {
    /// `location` resolved against `url` (RFC 3986 §5.2, strict), as text: where a redirect goes.
    static func resolve(_ location: String, against url: String) -> String {
        URIReference(location).resolved(against: URIReference(url)).description
    }
}
