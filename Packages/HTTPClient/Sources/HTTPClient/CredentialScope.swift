public import HTTPWire

/// Where a caller's credentials may go: the one rule for every request the toolkit makes on a user's behalf
/// (redirects followed by the client, and the segments, keys, maps and playlists that a playlist names on other
/// hosts).
///
/// The secret fields are `Authorization`, `Proxy-Authorization` and `Cookie`, and any the user marks as secret
/// (`X-Api-Key`, say). They are sent only to the origin's host (the host of the URL the user gave, any port) and to
/// the hosts the user allowed by name; never over plain http when the origin was https. Every other field
/// (`User-Agent`, `Referer`, `Origin`...) goes everywhere. Host names are compared case-insensitively, IPv6 literals
/// without their brackets; a name and its address are different hosts (`localhost` is not `127.0.0.1`).
public struct CredentialScope: Sendable, Hashable {
    /// The fields that always carry credentials.
    public static let standardSecretFields = ["Authorization", "Proxy-Authorization", "Cookie"]

    /// The origin's host (lowercased, without brackets); nil when the origin URL had none, and then no host is
    /// trusted but those allowed.
    public private(set) var originHost: String?
    /// Whether the origin was https: credentials then never go over plain http.
    public private(set) var originIsSecure: Bool
    /// Hosts the user allowed besides the origin's (lowercased, without brackets).
    public private(set) var allowedHosts: [String]
    /// Fields the user marked as secret, besides ``standardSecretFields``.
    public private(set) var extraSecretFields: [String]

    /// The scope of credentials given with `origin`: sent to its host and to `allowedHosts`, the standard secret
    /// fields and `secretFields` withheld from every other host.
    public init(origin: String, allowedHosts: [String] = [], secretFields: [String] = []) {
        let parts = Self.hostAndScheme(of: origin)
        originHost = parts?.host
        originIsSecure = parts?.secure ?? false
        self.allowedHosts = allowedHosts.map(Self.normalised)
        extraSecretFields = secretFields
    }

    /// Whether a field carries a credential (a standard secret field or one the user marked), case-insensitively.
    public func isSecret(_ name: String) -> Bool {
        Self.standardSecretFields.contains { HTTPHeaders.equalNames($0, name) }
            || extraSecretFields.contains { HTTPHeaders.equalNames($0, name) }
    }

    /// Whether credentials may be sent with a request for `url`.
    public func allows(_ url: String) -> Bool {
        guard let target = Self.hostAndScheme(of: url) else { return false }
        if originIsSecure && !target.secure { return false }
        return target.host == originHost || allowedHosts.contains(target.host)
    }

    /// `fields` as they may go with a request for `url`: all of them where ``allows(_:)``, else without the secret
    /// ones.
    public func fields(_ fields: HTTPHeaders, for url: String) -> HTTPHeaders {
        if allows(url) { return fields }
        return withoutSecrets(fields)
    }

    /// `fields` without the secret ones.
    public func withoutSecrets(_ fields: HTTPHeaders) -> HTTPHeaders {
        HTTPHeaders(fields: fields.filter { !isSecret($0.name) })
    }

    /// A host name as the scope compares it: lowercased, brackets and a trailing dot removed.
    static func normalised(_ host: String) -> String {
        var h = Substring(host.lowercased())
        if h.hasPrefix("["), h.hasSuffix("]") { h = h.dropFirst().dropLast() }
        if h.hasSuffix("."), h.count > 1 { h = h.dropLast() }
        return String(h)
    }

    /// The host and whether the scheme is https, of an http(s) URL.
    static func hostAndScheme(of url: String) -> (host: String, secure: Bool)? {
        guard let target = try? Target(url) else { return nil }
        return (normalised(target.host), target.secure)
    }
}
