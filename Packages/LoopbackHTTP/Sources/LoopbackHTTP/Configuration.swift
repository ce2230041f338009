/// Cross-origin resource sharing (off unless set).
public import HTTPWire

public struct CORSOptions: Sendable, Hashable {
    /// The allowed origin, or `*`.
    public var allowedOrigin: String
    /// How long a browser may cache a preflight answer.
    public var maxAgeSeconds: Int = 600
    public init(allowedOrigin: String, maxAgeSeconds: Int = 600) {
        self.allowedOrigin = allowedOrigin
        self.maxAgeSeconds = maxAgeSeconds
    }
}

/// One finished exchange, for the access-log hook. The path never contains a session token, nor a byte a terminal
/// or a log reader could take for anything but text.
public struct AccessLogEntry: Sendable {
    public var method: String
    /// The path (without the query) as it travels: percent-encoded, every byte outside visible ASCII and every `%`
    /// of a decoded segment escaped as `%XX` (a `%0a` or `%1b` the client sent is logged as such, never as a line
    /// break or an escape sequence), and any segment that is a session token, or shaped like one (32 hex digits,
    /// also when percent-encoded), replaced by `{token}`, whatever the answer (a 421 for a foreign `Host`, a 400).
    public var path: String
    public var status: Int
    /// Body bytes written.
    public var bytesSent: UInt64
    public var duration: Duration
    public var remoteAddress: String

    init(method: String, path: String, status: Int, bytesSent: UInt64, duration: Duration, remoteAddress: String) {
        self.method = Self.loggable(method)
        self.path = Self.loggable(path: path)
        self.status = status
        self.bytesSent = bytesSent
        self.duration = duration
        self.remoteAddress = Self.loggable(remoteAddress)
    }

    /// A path in its wire form as the log shows it: token-shaped segments as `{token}`, and any byte outside
    /// visible ASCII as `%XX` (a path that arrived on the wire has none; a caller's decoded one may).
    static func loggable(path: String) -> String {
        var out = ""
        var first = true
        for segment in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if !first { out += "/" }
            first = false
            if isTokenShaped(segment) {
                out += "{token}"
            } else {
                out += escaped(segment, escapingPercent: false)
            }
        }
        return out
    }

    /// A decoded path segment in wire form: bytes outside visible ASCII, `%` and `/` as `%XX`.
    static func encoded(segment: String) -> String {
        escaped(segment.utf8, escapingPercent: true, escapingSlash: true)
    }

    /// Text with every byte outside visible ASCII as `%XX`.
    static func loggable(_ text: String) -> String { escaped(text.utf8, escapingPercent: false) }

    private static func escaped(
        _ bytes: some Collection<UInt8>, escapingPercent: Bool, escapingSlash: Bool = false
    ) -> String {
        let plain = { (byte: UInt8) -> Bool in
            byte > 0x20 && byte < 0x7F && !(escapingPercent && byte == 0x25) && !(escapingSlash && byte == 0x2F)
        }
        if bytes.allSatisfy(plain) { return String(decoding: bytes, as: UTF8.self) }
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        for byte in bytes {
            if plain(byte) {
                out.append(byte)
            } else {
                out += [0x25, digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether a segment is 32 hex digits (either case), as itself or once percent-decoded.
    private static func isTokenShaped(_ segment: some Collection<UInt8>) -> Bool {
        let isHex = { (byte: UInt8) -> Bool in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
        }
        if segment.count == 32 { return segment.allSatisfy(isHex) }
        guard segment.count > 32, segment.count <= 96, segment.contains(0x25) else { return false }
        var decoded: [UInt8] = []
        var iterator = segment.makeIterator()
        while let byte = iterator.next() {
            if byte == 0x25 {
                guard let high = iterator.next(), let low = iterator.next(), isHex(high), isHex(low) else {
                    return false
                }
                let value = { (b: UInt8) -> UInt8 in b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10 }
                decoded.append(value(high) << 4 | value(low))
            } else {
                decoded.append(byte)
            }
        }
        return decoded.count == 32 && decoded.allSatisfy(isHex)
    }
}

/// How a ``HTTPServer`` binds, what it accepts and how it answers.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric addresses to bind. By default the IPv4 and IPv6 loopback addresses; `::1` is skipped when the
    /// host has no IPv6 loopback.
    public var bindAddresses: [String] = ["127.0.0.1", "::1"]
    /// The port; 0 picks a free ephemeral port (read it back from ``HTTPServer/start()``).
    public var port: UInt16 = 0
    /// Required to bind any non-loopback address: every request's first path segment must then be this token, or
    /// the live session token of a route registered under a ``SessionToken`` or a ``SessionTokenSet`` (which the
    /// router checks anyway); anything else is a 404.
    public var nonLoopbackToken: SessionToken?
    /// Also accept connections from the device's local network (off by default), for AirPlay: an Apple TV that
    /// plays a stream the app hands to it fetches the URLs itself, and cannot reach `127.0.0.1` on the phone.
    ///
    /// IPv4 only: the IPv4 loopback address in ``bindAddresses`` is replaced by the wildcard `0.0.0.0` (which also
    /// answers on loopback and follows the device from one network to the next), so ``nonLoopbackToken`` must be
    /// set, and every request's first path segment must be that token or the session token of a route under one.
    /// A connection that arrives on a non-loopback address is served only when its peer is on the subnet of the
    /// interface it arrived on (other devices on the same Wi-Fi or Ethernet); others — routed peers, and peers
    /// reaching a cellular or VPN address — are closed at once, as are connections to any IPv6 address other than
    /// `::1`. `Host` may then also be the address the connection arrived on. Build the URLs you hand out with
    /// ``HTTPServer/localNetworkAddresses()``.
    ///
    /// - Important: This exposes the server to every device on the local network, including untrusted ones on a
    ///   public Wi-Fi. The session token is then the only thing between them and what the server serves, and it
    ///   travels in clear text (plain HTTP) to anyone who can watch the network. Turn it on only while an AirPlay
    ///   route is active, and off again afterwards. See the LoopbackHTTP threat model.
    public var listensOnLocalNetwork = false
    /// `Host` values accepted in addition to `127.0.0.1`, `localhost` and `[::1]` (each with or without the
    /// port). Anything else is answered 421, which stops DNS-rebinding attacks.
    public var additionalAllowedHosts: [String] = []
    public var limits = HTTPParserLimits()
    public var timeouts = HTTPTimeouts()
    /// Open connections beyond this are answered 503 with `Retry-After` and closed.
    public var maxConnections = 4096
    public var retryAfterSeconds = 1
    /// More range specifiers than this in one `Range` header make the server send the whole representation.
    public var maxRanges = 16
    public var cors: CORSOptions?
    /// Called after every response (on an event-loop thread: keep it quick).
    public var accessLog: (@Sendable (AccessLogEntry) -> Void)?
    /// Event-loop threads (each runs its own epoll/kqueue loop and accepts from the shared listeners).
    public var eventLoopThreads = 2
    public var listenBacklog: Int32 = 1024

    public init() {}
}
