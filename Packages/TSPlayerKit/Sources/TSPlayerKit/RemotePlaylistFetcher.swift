import FileRange
import Foundation
import HLSDownload
public import HLSPlaylist
import LoopbackHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An error from fetching upstream: an opaque ``Code`` plus the URL and what the lower layer said.
public struct ProxyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidURL, schemeNotAllowed, addressNotAllowed, timedOut, tooManyRedirects, tooLarge, httpStatus
            case notAPlaylist, connectionFailed, serverFailed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The URL cannot be parsed or has no host.
        public static let invalidURL = Code(.invalidURL)
        /// Only http and https upstreams are fetched.
        public static let schemeNotAllowed = Code(.schemeNotAllowed)
        /// The upstream resolves to a loopback, private or link-local address and those are not allowed.
        public static let addressNotAllowed = Code(.addressNotAllowed)
        /// No response (or no data) within the timeout.
        public static let timedOut = Code(.timedOut)
        /// More redirects than allowed, or a redirect to a refused URL.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// The body is larger than the cap.
        public static let tooLarge = Code(.tooLarge)
        /// The upstream answered with an error status.
        public static let httpStatus = Code(.httpStatus)
        /// A 2xx body that is not an HLS playlist (an HTML error page, for example).
        public static let notAPlaylist = Code(.notAPlaylist)
        /// The connection could not be made or was lost.
        public static let connectionFailed = Code(.connectionFailed)
        /// The local proxy server could not start.
        public static let serverFailed = Code(.serverFailed)

        public var description: String {
            switch value {
            case .invalidURL: "invalid URL"
            case .schemeNotAllowed: "scheme not allowed"
            case .addressNotAllowed: "address not allowed"
            case .timedOut: "timed out"
            case .tooManyRedirects: "too many redirects"
            case .tooLarge: "too large"
            case .httpStatus: "upstream error status"
            case .notAPlaylist: "not a playlist"
            case .connectionFailed: "connection failed"
            case .serverFailed: "proxy server failed"
            }
        }
    }

    public var code: Code
    /// The upstream URL.
    public var url: String
    /// The HTTP status, for ``Code/httpStatus``.
    public var status: Int?
    public var detail: String

    public init(_ code: Code, url: String, status: Int? = nil, detail: String) {
        self.code = code
        self.url = url
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(code): \(detail) (\(url))" }

    /// Whether trying again may help (timeouts, lost connections, 5xx, 429).
    public var isTransient: Bool {
        switch code {
        case .timedOut, .connectionFailed: return true
        case .httpStatus: return status.map { $0 >= 500 || $0 == 429 || $0 == 408 } ?? false
        default: return false
        }
    }
}

/// How the proxy talks to upstreams.
public struct RemoteFetchOptions: Sendable {
    /// Sent as `User-Agent` on every request.
    public var userAgent: String = "tsplayer/0.1"
    /// Extra headers (Authorization, Cookie, Referer, ...) sent on every request: playlists, segments, keys, maps.
    public var headers: [(name: String, value: String)] = []
    /// Seconds without a response or data before a request fails.
    public var timeout: Double = 10
    /// Extra attempts for transient failures (before any byte of the body was relayed).
    public var retries: Int = 2
    /// The first retry waits this long; each next one twice as long (plus jitter).
    public var retryBackoff: Double = 0.25
    public var maxRedirects: Int = 5
    /// Playlists larger than this are refused.
    public var maxPlaylistBytes: Int = 16 << 20
    /// Keys and other small bodies larger than this are refused.
    public var maxSmallBodyBytes: Int = 1 << 20
    /// Upstreams on loopback, private (RFC 1918, ULA) or link-local addresses are refused unless this is set.
    public var allowPrivateUpstreams: Bool = false
    /// An HTTP proxy for upstream requests (`host:port`).
    public var upstreamProxy: String?

    public init() {}
}

/// A response head from upstream.
public struct RemoteHead: Sendable {
    public var status: Int
    /// Header fields as received (names as the server wrote them).
    public var headers: [(name: String, value: String)]
    /// The URL after redirects.
    public var finalURL: String

    /// The first value of a header (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// A playlist fetched from upstream.
public struct FetchedPlaylist: Sendable {
    public var bytes: [UInt8]
    public var playlist: Playlist
    /// The URL after redirects (relative URIs resolve against it).
    public var url: String
}

/// Fetches playlists, keys and segments from upstream with URLSession: the caller's headers on every request,
/// timeouts, retries with backoff for transient failures, http(s) only, bounded redirects (each target checked),
/// size caps, and loopback/private upstreams refused unless allowed.
public final class RemotePlaylistFetcher: Sendable {
    public let options: RemoteFetchOptions
    let client: ProxyHTTPClient
    let policy: UpstreamPolicy

    public init(options: RemoteFetchOptions = RemoteFetchOptions()) {
        self.options = options
        self.policy = UpstreamPolicy(allowPrivate: options.allowPrivateUpstreams)
        self.client = ProxyHTTPClient(options: options, policy: policy)
    }

    /// Fetches and parses a playlist. A 2xx body that does not start with `#EXTM3U` (after an optional BOM and
    /// whitespace) is ``ProxyError/Code/notAPlaylist``.
    public func fetchPlaylist(_ url: String) async throws(ProxyError) -> FetchedPlaylist {
        let (bytes, finalURL) = try await fetchPlaylistBytes(url)
        return try Self.parsed(bytes, url: finalURL)
    }

    /// A playlist's bytes, checked as ``fetchPlaylist(_:)`` checks them but not parsed, and the URL that answered
    /// (after redirects).
    public func fetchPlaylistBytes(_ url: String) async throws(ProxyError) -> (bytes: [UInt8], url: String) {
        let (head, bytes) = try await fetchSmall(url, maxBytes: options.maxPlaylistBytes)
        try RemotePlaylistFetcher.checkPlaylist(bytes, url: url, contentType: head.header("Content-Type"))
        return (bytes, head.finalURL)
    }

    /// ``fetchPlaylistBytes(_:)`` in one blocking call on the calling thread, which must be one that may block (a
    /// dispatch queue's, never Swift's cooperative pool). Nil when the async path is needed: the URL is not plain
    /// http, the answer is a redirect, or a failure that a retry may cure (the async path retries with backoff).
    public func fetchPlaylistBytesBlocking(_ url: String) throws(ProxyError) -> (bytes: [UInt8], url: String)? {
        do throws(ProxyError) {
            guard
                let (head, bytes) = try client.fetchWholeBlocking(url, headers: [], maxBytes: options.maxPlaylistBytes)
            else { return nil }
            if let error = Self.statusError(head.status, url: url) { throw error }
            try RemotePlaylistFetcher.checkPlaylist(bytes, url: url, contentType: head.header("Content-Type"))
            return (bytes, head.finalURL)
        } catch {
            if error.isTransient && options.retries > 0 { return nil }
            throw error
        }
    }

    /// The error for an upstream answer that is not 2xx (nil for 2xx).
    static func statusError(_ status: Int, url: String) -> ProxyError? {
        guard !(200..<300).contains(status) else { return nil }
        return ProxyError(.httpStatus, url: url, status: status, detail: "upstream answered \(status)")
    }

    /// Whether ``fetchPlaylistBytesBlocking(_:)`` can fetch a URL (plain http, no upstream proxy).
    public func fetchesBlocking(_ url: String) -> Bool { client.fetchesOverSockets(url) }

    /// Parses checked playlist bytes fetched from `url`.
    static func parsed(_ bytes: [UInt8], url: String) throws(ProxyError) -> FetchedPlaylist {
        do {
            let playlist = try Playlist(bytes: bytes)
            return FetchedPlaylist(bytes: bytes, playlist: playlist, url: url)
        } catch {
            throw ProxyError(.notAPlaylist, url: url, detail: "the playlist cannot be read: \(error)")
        }
    }

    /// Whether bytes look like an HLS playlist; throws a clear error when they do not.
    static func checkPlaylist(_ bytes: [UInt8], url: String, contentType: String?) throws(ProxyError) {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        while let f = body.first, f == 0x20 || f == 0x09 || f == 0x0D || f == 0x0A { body = body.dropFirst() }
        if body.starts(with: Array("#EXTM3U".utf8)) { return }
        let type = contentType.map { " (Content-Type: \($0))" } ?? ""
        if body.first == UInt8(ascii: "<") {
            throw ProxyError(
                .notAPlaylist, url: url, detail: "upstream sent an HTML or XML page, not a playlist\(type)")
        }
        if body.isEmpty { throw ProxyError(.notAPlaylist, url: url, detail: "upstream sent an empty body\(type)") }
        throw ProxyError(.notAPlaylist, url: url, detail: "the body does not start with #EXTM3U\(type)")
    }

    /// Fetches a small body (a playlist or a key) whole, retrying transient failures.
    public func fetchSmall(_ url: String, maxBytes: Int, extraHeaders: [(name: String, value: String)] = [])
        async throws(ProxyError) -> (RemoteHead, [UInt8])
    {
        var attempt = 0
        while true {
            do {
                return try await fetchSmallOnce(url, maxBytes: maxBytes, extraHeaders: extraHeaders)
            } catch {
                guard error.isTransient, attempt < options.retries else { throw error }
                attempt += 1
                await backoff(attempt)
            }
        }
    }

    func fetchSmallOnce(_ url: String, maxBytes: Int, extraHeaders: [(name: String, value: String)])
        async throws(ProxyError) -> (RemoteHead, [UInt8])
    {
        if let (head, bytes) = try await client.fetchWhole(url, headers: extraHeaders, maxBytes: maxBytes) {
            if let error = Self.statusError(head.status, url: url) { throw error }
            return (head, bytes)
        }
        let response = try await client.send(url, headers: extraHeaders)
        if let error = Self.statusError(response.head.status, url: url) {
            response.cancel()
            throw error
        }
        if let length = response.head.header("Content-Length").flatMap({ Int($0) }), length > maxBytes {
            response.cancel()
            throw ProxyError(.tooLarge, url: url, detail: "\(length) bytes; the cap is \(maxBytes)")
        }
        var bytes: [UInt8] = []
        var tooLarge = false
        do {
            for try await chunk in response.body {
                bytes += chunk
                if bytes.count > maxBytes {
                    tooLarge = true
                    break
                }
            }
        } catch let error as ProxyError {
            throw error
        } catch {
            throw ProxyError(.connectionFailed, url: url, detail: "\(error)")
        }
        if tooLarge {
            response.cancel()
            throw ProxyError(.tooLarge, url: url, detail: "more than \(maxBytes) bytes")
        }
        return (response.head, bytes)
    }

    /// Opens a streamed GET (for segments), retrying transient failures until the head arrives. The caller
    /// consumes or cancels the body.
    public func open(_ url: String, headers: [(name: String, value: String)] = []) async throws(ProxyError)
        -> RemoteStream
    {
        var attempt = 0
        while true {
            do {
                let response = try await client.send(url, headers: headers)
                if response.head.status >= 500 || response.head.status == 429, attempt < options.retries {
                    response.cancel()
                    attempt += 1
                    await backoff(attempt)
                    continue
                }
                return response
            } catch {
                guard error.isTransient, attempt < options.retries else { throw error }
                attempt += 1
                await backoff(attempt)
            }
        }
    }

    func backoff(_ attempt: Int) async {
        let delay = options.retryBackoff * Double(1 << min(attempt - 1, 6)) * Double.random(in: 1...1.5)
        try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
    }
}

/// A streamed upstream response: its head and its body chunks.
public struct RemoteStream: Sendable {
    public var head: RemoteHead
    public var body: AsyncThrowingStream<[UInt8], any Error>
    let cancelTask: @Sendable () -> Void
    /// The body as the upstream socket (plain http with a known length), for a relay inside the kernel.
    var socketBody: SocketBody?

    /// Stops the transfer.
    public func cancel() { cancelTask() }

    /// The body of a response that relays this one: moved socket to socket by the server where it can
    /// (`splice`), else pulled chunk by chunk.
    func relayBody(length: UInt64?) -> HTTPResponse.Body {
        if let length, let socketBody, socketBody.length == length {
            return .stream(HTTPResponse.StreamBody(length: length, body, spliceSource: SocketSplice(socketBody)))
        }
        return .stream(HTTPResponse.StreamBody(length: length, body))
    }
}

/// An upstream socket body as a server splice source.
private final class SocketSplice: SpliceSource {
    let body: SocketBody
    init(_ body: SocketBody) { self.body = body }
    func claim() -> (descriptor: Int32, buffered: [UInt8])? { body.claim() }
    func release(complete: Bool) { body.release(complete: complete) }
}

/// Which upstream addresses may be fetched.
struct UpstreamPolicy: Sendable {
    var allowPrivate: Bool
    /// Each host's verdict, kept for ``verdictLifetime``: a playlist poll or a segment then costs no name lookup.
    private let verdicts = HostVerdicts()
    static let verdictLifetime: Duration = .seconds(30)

    init(allowPrivate: Bool) { self.allowPrivate = allowPrivate }

    /// The non-public address a host resolved to (nil: none), remembered for a while, at most 256 hosts.
    final class HostVerdicts: Sendable {
        private let table = LockedValue<[String: (privateAddress: String?, until: ContinuousClock.Instant)]>([:])

        func verdict(_ host: String) -> String? {
            let now = ContinuousClock.now
            if let known = table.withLock({ $0[host] }), known.until > now { return known.privateAddress }
            let found = UpstreamPolicy.resolve(host).first(where: UpstreamPolicy.isPrivate)
            table.withLock { entries in
                if entries.count >= 256 { entries = entries.filter { $0.value.until > now } }
                if entries.count < 256 { entries[host] = (found, now + UpstreamPolicy.verdictLifetime) }
            }
            return found
        }
    }

    /// Checks a URL's scheme and (unless private upstreams are allowed) every address its host resolves to.
    func check(_ url: URL, original: String) throws(ProxyError) {
        guard let scheme = url.scheme?.lowercased() else {
            throw ProxyError(.invalidURL, url: original, detail: "no scheme")
        }
        guard scheme == "http" || scheme == "https" else {
            throw ProxyError(.schemeNotAllowed, url: original, detail: "only http and https are fetched, not \(scheme)")
        }
        guard var host = url.host, !host.isEmpty else {
            throw ProxyError(.invalidURL, url: original, detail: "no host")
        }
        if allowPrivate { return }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") {
            throw ProxyError(.addressNotAllowed, url: original, detail: "\(host) is a loopback name")
        }
        if let address = verdicts.verdict(lower) {
            throw ProxyError(
                .addressNotAllowed, url: original, detail: "\(host) resolves to \(address), a non-public address")
        }
    }

    /// The numeric addresses of a host (an IP literal is its own address).
    static func resolve(_ host: String) -> [String] {
        var hints = addrinfo()
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var out: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        var count = 0
        while let n = node, count < 64 {
            count += 1
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                n.pointee.ai_addr, n.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
                == 0
            {
                out.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            node = n.pointee.ai_next
        }
        return out
    }

    /// Loopback, unspecified, RFC 1918, CGNAT, link-local, ULA and IPv4-mapped forms of those.
    static func isPrivate(_ address: String) -> Bool {
        var a = address.lowercased()
        if let percent = a.firstIndex(of: "%") { a = String(a[..<percent]) }
        if a.hasPrefix("::ffff:"), a.contains(".") { a = String(a.dropFirst(7)) }
        if a.contains(":") {
            if a == "::1" || a == "::" { return true }
            if a.hasPrefix("fc") || a.hasPrefix("fd") { return true }
            if a.hasPrefix("fe8") || a.hasPrefix("fe9") || a.hasPrefix("fea") || a.hasPrefix("feb") { return true }
            return false
        }
        let parts = a.split(separator: ".").compactMap { UInt8($0) }
        guard parts.count == 4 else { return true }
        switch (parts[0], parts[1]) {
        case (127, _), (10, _), (0, _): return true
        case (172, 16...31), (192, 168), (169, 254): return true
        case (100, 64...127): return true
        default: return false
        }
    }
}
