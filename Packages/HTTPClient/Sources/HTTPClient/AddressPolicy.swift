import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which upstream addresses the client may connect to. Checked at connect time on every numeric address a host
/// resolves to (so a name that resolves to a public address once and a private one the next time cannot slip past),
/// and for https before the request is handed to URLSession.
public struct UpstreamAddressPolicy: Sendable {
    /// Whether loopback, private (RFC 1918, CGNAT, ULA), link-local and unspecified addresses may be used.
    public var allowsPrivate: Bool
    /// A caller's own rule, asked about each numeric address instead of the private-address rule.
    private var refuses: (@Sendable (String) -> Bool)?

    public init(allowsPrivate: Bool) { self.allowsPrivate = allowsPrivate }

    /// A policy that refuses the numeric addresses `refuses` answers true for (asked right before each connect).
    public init(refusing refuses: @escaping @Sendable (String) -> Bool) {
        self.allowsPrivate = false
        self.refuses = refuses
    }

    /// Whether host names such as `localhost` are refused before any lookup.
    var refusesLoopbackNames: Bool { !allowsPrivate && refuses == nil }

    /// Whether every address is allowed with no check at all.
    var checksNothing: Bool { allowsPrivate && refuses == nil }

    /// Every address allowed (a download manager fetching from a local server, a lint of a local playlist).
    public static let any = UpstreamAddressPolicy(allowsPrivate: true)
    /// Only public addresses (a proxy fetching on behalf of a player).
    public static let publicOnly = UpstreamAddressPolicy(allowsPrivate: false)

    /// Whether a numeric address may be connected to.
    public func allows(_ address: String) -> Bool {
        if let refuses { return !refuses(address) }
        return allowsPrivate || !Self.isPrivate(address)
    }

    /// Whether a host name is a loopback name (`localhost`, `*.localhost`), refused without a lookup.
    public static func isLoopbackName(_ host: String) -> Bool {
        let lower = host.lowercased()
        return lower == "localhost" || lower.hasSuffix(".localhost")
    }

    /// Checks a host before a request is handed to a lower layer that connects by itself (URLSession): every
    /// address it resolves to now must be allowed.
    func check(host: String, url: String) throws(HTTPClientError) {
        guard !checksNothing else { return }
        if refusesLoopbackNames, Self.isLoopbackName(host) {
            throw HTTPClientError(.addressRefused, "\(host) is a loopback name (a private upstream)", url: url)
        }
        let addresses = Resolver.addresses(of: host)
        if let refused = addresses.first(where: { !allows($0) }) {
            throw HTTPClientError(
                .addressRefused, "\(host) resolves to \(refused), a non-public address", url: url)
        }
    }

    /// The numeric addresses a host resolves to now (an IP literal is its own address); empty when it does not
    /// resolve.
    public static func resolve(_ host: String) -> [String] { Resolver.addresses(of: host) }

    /// Loopback, unspecified, RFC 1918, CGNAT, link-local, ULA and IPv4-mapped forms of those; anything that is not
    /// a readable numeric address counts as private.
    public static func isPrivate(_ address: String) -> Bool {
        var a = address.lowercased()
        if let percent = a.firstIndex(of: "%") { a = String(a[..<percent]) }
        if a.hasPrefix("::ffff:"), a.contains(".") { a = String(a.dropFirst(7)) }
        if a.contains(":") {
            if a == "::1" || a == "::" { return true }
            if a.hasPrefix("fc") || a.hasPrefix("fd") { return true }
            if a.hasPrefix("fe8") || a.hasPrefix("fe9") || a.hasPrefix("fea") || a.hasPrefix("feb") { return true }
            return false
        }
        let parts = a.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        guard parts.count == 4 else { return true }
        switch (parts[0], parts[1]) {
        case (127, _), (10, _), (0, _): return true
        case (172, 16...31), (192, 168), (169, 254): return true
        case (100, 64...127): return true
        default: return false
        }
    }
}

/// Name resolution (`getaddrinfo`), the one place the toolkit looks names up.
enum Resolver {
    /// The numeric addresses of a host (an IP literal is its own address); empty when it does not resolve.
    static func addresses(of host: String) -> [String] {
        (try? withAddresses(host, port: 0) { list in
            var out: [String] = []
            var node: UnsafeMutablePointer<addrinfo>? = list
            while let n = node, out.count < 64 {
                if let text = numericAddress(n.pointee.ai_addr, n.pointee.ai_addrlen) { out.append(text) }
                node = n.pointee.ai_next
            }
            return out
        }) ?? []
    }

    /// Resolves `host` for a stream connection and runs `body` on the list (freed afterwards).
    static func withAddresses<T>(
        _ host: String, port: UInt16, _ body: (UnsafeMutablePointer<addrinfo>) throws(HTTPClientError) -> T
    ) throws(HTTPClientError) -> T {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
            hints.ai_socktype = SOCK_STREAM
        #else
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            if status == EAI_AGAIN {
                throw HTTPClientError(.connectionFailed, "the name \(host) could not be resolved now (try again)")
            }
            throw HTTPClientError(.noSuchHost, "no such host: \(host)")
        }
        defer { freeaddrinfo(first) }
        return try body(first)
    }

    /// The numeric text of a socket address (`getnameinfo` with NI_NUMERICHOST).
    static func numericAddress(_ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t) -> String? {
        guard let address else { return nil }
        var host = [CChar](repeating: 0, count: 64)
        guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
