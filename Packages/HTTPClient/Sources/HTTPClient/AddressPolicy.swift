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
    /// Whether loopback, private (RFC 1918, CGNAT, ULA), link-local, multicast, unspecified and the other non-public
    /// addresses of ``isPrivate(_:)`` may be used.
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

    /// Whether a numeric address is not a public unicast address (refused unless ``allowsPrivate``); anything that
    /// is not a readable numeric address counts as private. One rule for both families:
    ///
    /// - IPv4: `0.0.0.0/8`, loopback `127/8`, RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), CGNAT `100.64/10`,
    ///   link-local `169.254/16`, `192.0.0/24`, the documentation ranges (`192.0.2/24`, `198.51.100/24`,
    ///   `203.0.113/24`), benchmarking `198.18/15`, multicast `224/4` and reserved `240/4` (broadcast included).
    /// - IPv6 forms that carry an IPv4 address are judged by it: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
    ///   `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96` and 6to4 `2002::/16`.
    /// - IPv6: unspecified `::`, loopback `::1`, unique-local `fc00::/7`, site-local `fec0::/10`, link-local
    ///   `fe80::/10`, multicast `ff00::/8`, local-use NAT64 `64:ff9b:1::/48`, discard-only `100::/64`,
    ///   documentation `2001:db8::/32`.
    ///
    /// A zone (`fe80::1%eth0`) is ignored.
    public static func isPrivate(_ address: String) -> Bool {
        guard let bytes = IPAddress.parse(address) else { return true }
        return IPAddress.isPrivate(bytes)
    }
}

/// Numeric IP addresses as bytes (4 for IPv4, 16 for IPv6), and the address rule over them.
enum IPAddress {
    /// The bytes of a numeric address: dotted-quad IPv4 (four decimal parts, no leading zeros, so no octal
    /// ambiguity) or any RFC 4291 text form of IPv6 (`::` compression, a trailing dotted quad, a `%zone`, brackets).
    /// Nil for anything else.
    static func parse(_ text: String) -> [UInt8]? {
        var a = Substring(text)
        if a.hasPrefix("["), a.hasSuffix("]") { a = a.dropFirst().dropLast() }
        if let percent = a.firstIndex(of: "%") { a = a[..<percent] }
        if a.contains(":") { return parseIPv6(a) }
        return parseIPv4(a)
    }

    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                part == "0" || !part.hasPrefix("0"), let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        var head: [UInt8] = []
        var tail: [UInt8] = []
        var compressed = false
        var rest = text
        if rest.hasPrefix("::") {
            compressed = true
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix(":") {
            return nil
        }
        while !rest.isEmpty {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            let group = rest[..<end]
            var next = rest[end...]
            if group.contains(".") {
                // A dotted quad only as the last 32 bits.
                guard next.isEmpty, let v4 = parseIPv4(group) else { return nil }
                if compressed { tail += v4 } else { head += v4 }
                break
            }
            // Hex digits only (`UInt16(_:radix:)` alone would take a sign).
            let hex = group.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
            guard !group.isEmpty, group.count <= 4, hex, let value = UInt16(group, radix: 16) else { return nil }
            let pair = [UInt8(value >> 8), UInt8(value & 0xFF)]
            if compressed { tail += pair } else { head += pair }
            if next.hasPrefix("::") {
                guard !compressed else { return nil }
                compressed = true
                next = next.dropFirst(2)
            } else if next.hasPrefix(":") {
                next = next.dropFirst()
                guard !next.isEmpty else { return nil }
            }
            rest = next
            guard head.count + tail.count <= 16 else { return nil }
        }
        let filled = head.count + tail.count
        if compressed {
            // `::` stands for one or more zero groups.
            guard filled <= 14 else { return nil }
            return head + [UInt8](repeating: 0, count: 16 - filled) + tail
        }
        return filled == 16 ? head : nil
    }

    /// Whether 4 or 16 address bytes are not a public unicast address (the rule of
    /// ``UpstreamAddressPolicy/isPrivate(_:)``).
    static func isPrivate(_ b: [UInt8]) -> Bool {
        if b.count == 4 { return isPrivateIPv4(b[0], b[1], b[2]) }
        guard b.count == 16 else { return true }
        let zeros80 = b[0..<10].allSatisfy { $0 == 0 }
        // Forms that carry an IPv4 address in their last 32 bits.
        let lastFour = [b[12], b[13], b[14], b[15]]
        if zeros80, b[10] == 0xFF, b[11] == 0xFF { return isPrivate(lastFour) }  // ::ffff:a.b.c.d (mapped)
        if b[0..<8].allSatisfy({ $0 == 0 }), b[8] == 0xFF, b[9] == 0xFF, b[10] == 0, b[11] == 0 {
            return isPrivate(lastFour)  // ::ffff:0:a.b.c.d (translated, RFC 2765)
        }
        // ::a.b.c.d (IPv4-compatible, deprecated); `::` and `::1` are 0.0.0.0 and 0.0.0.1 here, private too.
        if zeros80, b[10] == 0, b[11] == 0 { return isPrivate(lastFour) }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B {
            if b[4..<12].allSatisfy({ $0 == 0 }) { return isPrivate(lastFour) }  // 64:ff9b::/96 (NAT64)
            if b[4] == 0, b[5] == 1 { return true }  // 64:ff9b:1::/48, local-use NAT64 (RFC 8215)
        }
        if b[0] == 0x20, b[1] == 0x02 { return isPrivate([b[2], b[3], b[4], b[5]]) }  // 2002::/16 (6to4)
        if b[0] & 0xFE == 0xFC { return true }  // fc00::/7, unique-local
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return true }  // fe80::/10, link-local
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return true }  // fec0::/10, site-local (deprecated)
        if b[0] == 0xFF { return true }  // ff00::/8, multicast
        if b[0] == 0x01, b[1] == 0x00, b[2..<8].allSatisfy({ $0 == 0 }) { return true }  // 100::/64, discard-only
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return true }  // 2001:db8::/32, documentation
        return false
    }

    private static func isPrivateIPv4(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Bool {
        switch (a, b, c) {
        case (0, _, _), (10, _, _), (127, _, _): return true
        case (100, 64...127, _), (169, 254, _), (172, 16...31, _), (192, 168, _): return true
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113), (198, 18...19, _): return true
        case (224...255, _, _): return true
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
