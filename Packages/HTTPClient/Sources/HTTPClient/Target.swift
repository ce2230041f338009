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
        let parts = URLParts(url)
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

/// The five parts of a URI reference (RFC 3986 §3) and reference resolution (§5.2), for redirects.
struct URLParts: Sendable, Hashable {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    init(scheme: String?, authority: String?, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// Splits a reference (RFC 3986 appendix B).
    init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isASCII, first.isLetter,
            rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        {
            scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        path = String(rest)
    }

    var text: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// This reference resolved against `base` (RFC 3986 §5.2.2, strict).
    func resolved(against base: URLParts) -> URLParts {
        if scheme != nil {
            return URLParts(
                scheme: scheme, authority: authority, path: Self.removeDotSegments(path), query: query,
                fragment: fragment)
        }
        if authority != nil {
            return URLParts(
                scheme: base.scheme, authority: authority, path: Self.removeDotSegments(path), query: query,
                fragment: fragment)
        }
        if path.isEmpty {
            return URLParts(
                scheme: base.scheme, authority: base.authority, path: base.path, query: query ?? base.query,
                fragment: fragment)
        }
        let merged: String
        if path.hasPrefix("/") {
            merged = path
        } else if base.authority != nil && base.path.isEmpty {
            merged = "/" + path
        } else if let slash = base.path.lastIndex(of: "/") {
            merged = String(base.path[...slash]) + path
        } else {
            merged = path
        }
        return URLParts(
            scheme: base.scheme, authority: base.authority, path: Self.removeDotSegments(merged), query: query,
            fragment: fragment)
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }

    /// `location` resolved against `url`, as text.
    static func resolve(_ location: String, against url: String) -> String {
        URLParts(location).resolved(against: URLParts(url)).text
    }
}
