import FileRange
import HTTPWire
import TextCodecs

// The origin-fetching layer the proxies share (HLSProxy's ad-stripping proxy, MediaCache's caching proxy): here, in
// the client, so that the caching proxy does not depend on the ad-stripping one. What needs playlists (parsing them,
// the `#EXTM3U` check) or the server (relaying a body by splice) is HLSProxy's, in extensions of these types.

/// An error from fetching upstream for the proxies: an opaque ``Code`` plus the URL and what the lower layer said.
/// Both proxies throw it; its name, and its ``Code/notAPlaylist`` and ``Code/serverFailed`` codes, come from the
/// ad-stripping proxy (HLSProxy), where it was declared before this layer moved here.
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
    /// The client's verdict on the failure underneath (a refusal, an unknown host or a TLS failure is not worth a
    /// retry, though its code here is ``Code/connectionFailed``); nil when the error did not come from the client.
    var clientSaysTransient: Bool?

    public init(_ code: Code, url: String, status: Int? = nil, detail: String) {
        self.code = code
        self.url = url
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(code): \(detail) (\(url))" }

    /// Whether trying again may help (timeouts, lost connections, 5xx, 429); never a refused connection, an
    /// unknown host or a TLS failure.
    public var isTransient: Bool {
        if let clientSaysTransient { return clientSaysTransient }
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
    /// Those that carry credentials (`Authorization`, `Proxy-Authorization`, `Cookie` and ``secretHeaders``) go only
    /// to the host of ``credentialOrigin`` and to ``credentialHosts`` (see `CredentialScope`); the others go
    /// everywhere.
    public var headers: [(name: String, value: String)] = []
    /// Header names that carry credentials besides `Authorization`, `Proxy-Authorization` and `Cookie` (an
    /// `X-Api-Key`, say): withheld like them from other hosts.
    public var secretHeaders: [String] = []
    /// Hosts that get the credentials too, besides the origin's (names as in URLs: `cdn.example.com`, `[::1]`).
    public var credentialHosts: [String] = []
    /// The URL the credentials were given for: its host gets them. The ad-stripping proxy sets it to the stream's
    /// URL when it makes its fetcher; nil: each request's own URL (so only a redirect to another host drops them).
    public var credentialOrigin: String?
    /// Seconds without a response or data before a request fails.
    public var timeout: Double = 10
    /// Seconds one upstream request may take in all, retries and the wait for a slot to its host included: until
    /// the head of a segment, until the whole body of a playlist or key (the client's
    /// ``HTTPClientConfiguration/deadline``). Past it the player gets `504 Gateway Timeout`, however slowly the
    /// upstream trickles.
    public var deadline: Double = 15
    /// Seconds from an upstream request's start to the end of its streamed body (a relayed segment, a caching
    /// fetch, a window of a resource streamed through), however the upstream trickles or stalls after its head
    /// (``HTTPClientRequest/bodyDeadline``): past it the player's connection ends after the bytes it got (its
    /// status line was already sent), and a cache fill fails.
    public var bodyDeadline: Double = 60
    /// Upstream requests under way per host and port; more wait in a queue (no thread each) until a slot frees or
    /// their ``deadline`` passes (``HTTPClientConfiguration/maxConnectionsPerHost``).
    public var maxRequestsPerHost: Int = 16
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
    /// Told about each retry of an upstream request before its delay (`retrying in 2 s (3/8): connection reset`),
    /// for a caller that shows retries as they happen; every request the proxies make reports here.
    public var onRetry: (@Sendable (RetryEvent) -> Void)?
    /// Seconds the first fetch of a stream may take in all, retries included (the ad-stripping proxy's first
    /// multivariant playlist, the caching proxy's first content information), so that a dead or silent upstream is
    /// reported quickly; later fetches have ``timeout`` per attempt.
    public var firstFetchTimeout: Double = 8

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
        headers.first { HTTPASCII.equalsIgnoringCase($0.name.utf8, name.utf8) }?.value
    }
}

/// Fetches playlists, keys and segments from upstream for the proxies, with the toolkit's one client
/// (``HTTPClient``): the caller's headers on every request, timeouts, retries with backoff for transient failures (the
/// client's retry policy), http(s) only, bounded redirects (each target checked), size caps, and loopback/private
/// upstreams refused unless allowed (checked before each request and again at connect time on the addresses actually
/// used).
///
/// This package holds the generic fetches (``fetchSmall(_:maxBytes:extraHeaders:)``, ``open(_:headers:)``);
/// HLSProxy adds the playlist ones (`fetchPlaylist(_:)`, `fetchPlaylistBytes(_:)` and their first-fetch and
/// blocking forms), which check and parse what they fetch.
public final class RemotePlaylistFetcher: Sendable {
    public let options: RemoteFetchOptions
    let client: HTTPClient
    let policy: UpstreamPolicy
    /// The credential scope of ``RemoteFetchOptions/credentialOrigin``, when set.
    let originScope: CredentialScope?

    public init(options: RemoteFetchOptions = RemoteFetchOptions()) {
        self.options = options
        self.originScope = options.credentialOrigin.map {
            CredentialScope(origin: $0, allowedHosts: options.credentialHosts, secretFields: options.secretHeaders)
        }
        self.policy = UpstreamPolicy(allowPrivate: options.allowPrivateUpstreams)
        var configuration = HTTPClientConfiguration()
        configuration.idleTimeout = options.timeout
        configuration.connectTimeout = options.timeout
        configuration.maxRedirects = options.maxRedirects
        configuration.addressPolicy = options.allowPrivateUpstreams ? .any : .publicOnly
        configuration.retry = RetryPolicy(
            maxAttempts: max(0, options.retries) + 1, baseDelay: options.retryBackoff * 1.5,
            maxDelay: max(options.retryBackoff * 64, 1))
        configuration.maxConnectionsPerHost = options.maxRequestsPerHost
        configuration.deadline = options.deadline
        configuration.upstreamProxy = options.upstreamProxy
        self.client = HTTPClient(configuration: configuration)
    }

    /// Runs `work`, failing with ``ProxyError/Code/timedOut`` when it has not finished within
    /// ``RemoteFetchOptions/firstFetchTimeout`` (the work is cancelled then, which closes its connection).
    public func withinFirstFetchTimeout<Value: Sendable>(
        _ url: String, _ work: @escaping @Sendable () async throws(ProxyError) -> Value
    ) async throws(ProxyError) -> Value {
        let seconds = max(0.01, options.firstFetchTimeout)
        do {
            return try await HTTPClient.within(seconds: seconds, url: url) { try await work() }
        } catch {
            throw Self.map(error, url: url)
        }
    }

    /// `8 s`, `0.5 s`: as the client words its deadlines.
    static func seconds(_ value: Double) -> String { RetryEvent.seconds(value) }

    /// ``fetchSmall(_:maxBytes:extraHeaders:)`` in one blocking call on the calling thread and one attempt, which
    /// must be a thread that may block (a dispatch queue's or the blocking pool's, never Swift's cooperative pool).
    /// Nil when the async path is needed: the URL is not plain http (``fetchesBlocking(_:)``) or the answer is a
    /// redirect. The head's ``RemoteHead/finalURL`` is `url`.
    public func fetchSmallBlocking(_ url: String, maxBytes: Int) throws(ProxyError) -> (RemoteHead, [UInt8])? {
        guard fetchesBlocking(url) else { return nil }
        try policy.check(url)
        let answer: HTTPWholeResponse?
        do {
            answer = try client.fetchBlocking(request(url, []), maxBytes: maxBytes)
        } catch {
            throw Self.map(error, url: url)
        }
        guard let response = answer, ![301, 302, 303, 307, 308].contains(response.status) else { return nil }
        if let error = Self.statusError(response.status, url: url) { throw error }
        return (Self.head(response.status, response.headers, url: url), response.body)
    }

    /// Whether ``fetchSmallBlocking(_:maxBytes:)`` can fetch a URL (plain http, no upstream proxy).
    public func fetchesBlocking(_ url: String) -> Bool { client.usesSockets(url) }

    /// Checks a URL as every fetch does before it starts (http(s) only; unless private upstreams are allowed, no
    /// loopback name and no host that resolves to a non-public address), for a caller that sends a player there
    /// itself (a redirect) instead of fetching.
    public func checkUpstream(_ url: String) throws(ProxyError) { try policy.check(url) }

    /// The error for an upstream answer that is not 2xx (nil for 2xx).
    public static func statusError(_ status: Int, url: String) -> ProxyError? {
        guard !(200..<300).contains(status) else { return nil }
        return ProxyError(
            .httpStatus, url: url, status: status, detail: "upstream answered \(HTTPClientError.inWords(status))")
    }

    /// Fetches a small body (a playlist or a key) whole, retrying transient failures.
    public func fetchSmall(_ url: String, maxBytes: Int, extraHeaders: [(name: String, value: String)] = [])
        async throws(ProxyError) -> (RemoteHead, [UInt8])
    {
        try await retrying(url) { (left) async throws(ProxyError) -> RetryPolicy.Step<Answer> in
            do throws(ProxyError) {
                let (head, bytes) = try await fetchSmallOnce(
                    url, maxBytes: maxBytes, extraHeaders: extraHeaders, seconds: left)
                return .success(Answer(head: head, bytes: bytes))
            } catch  where error.isTransient {
                return .retry(after: nil, failure: error)
            }
        }.pair
    }

    /// A small body and its head, sendable through the retry loop.
    struct Answer: Sendable {
        var head: RemoteHead
        var bytes: [UInt8]
        var pair: (RemoteHead, [UInt8]) { (head, bytes) }
    }

    func fetchSmallOnce(
        _ url: String, maxBytes: Int, extraHeaders: [(name: String, value: String)], seconds: Double? = nil
    ) async throws(ProxyError) -> (RemoteHead, [UInt8]) {
        try policy.check(url)
        let response: HTTPWholeResponse
        do {
            var request = request(url, extraHeaders)
            request.deadline = seconds
            response = try await client.fetch(request, maxBytes: maxBytes)
        } catch {
            throw Self.map(error, url: url)
        }
        if let error = Self.statusError(response.status, url: url) { throw error }
        return (Self.head(response.status, response.headers, url: response.url ?? url), response.body)
    }

    /// Opens a streamed GET (for segments), retrying transient failures until the head arrives. The caller
    /// consumes or cancels the body.
    public func open(_ url: String, headers: [(name: String, value: String)] = []) async throws(ProxyError)
        -> RemoteStream
    {
        var attempt = 0
        let attempts = client.configuration.retry.maxAttempts
        return try await retrying(url) { (left) async throws(ProxyError) -> RetryPolicy.Step<RemoteStream> in
            attempt += 1
            do throws(ProxyError) {
                let response = try await send(url, headers: headers, seconds: left)
                let status = response.head.status
                // A busy upstream's answer is retried while attempts are left; the last one is relayed as it is.
                if status >= 500 || status == 429, attempt < attempts {
                    response.cancel()
                    return .retry(
                        after: nil,
                        failure: ProxyError(
                            .httpStatus, url: url, status: status,
                            detail: "upstream answered \(HTTPClientError.inWords(status))"))
                }
                return .success(response)
            } catch  where error.isTransient {
                return .retry(after: nil, failure: error)
            }
        }
    }

    /// One GET: returns when the response head arrives.
    func send(_ url: String, headers: [(name: String, value: String)], seconds: Double? = nil)
        async throws(ProxyError) -> RemoteStream
    {
        try policy.check(url)
        do {
            var request = request(url, headers)
            request.deadline = seconds
            request.bodyDeadline = max(0.01, options.bodyDeadline)
            let response = try await client.send(request)
            // Dropping the body (the last reference to the stream) ends the transfer and closes its connection.
            return RemoteStream(
                head: Self.head(response.status, response.headers, url: response.url ?? url), body: response.body,
                cancelTask: {}, socketBody: response.socketBody)
        } catch {
            throw Self.map(error, url: url)
        }
    }

    /// Runs `attempt` with the client's retry policy (the last failure is thrown when the attempts run out).
    /// Attempts share ``RemoteFetchOptions/deadline``: each has what is left of it, and a retry that cannot start
    /// before it is not made.
    private func retrying<Value: Sendable>(
        _ url: String, _ attempt: (_ secondsLeft: Double) async throws(ProxyError) -> RetryPolicy.Step<Value>
    ) async throws(ProxyError) -> Value {
        let clock = SystemRetryClock()
        let deadline = clock.now() + max(0.01, options.deadline)
        do {
            return try await client.configuration.retry.run(
                url: url, clock: clock, onRetry: options.onRetry, deadline: deadline
            ) {
                let left = deadline - clock.now()
                guard left > 0 else {
                    throw ProxyError(
                        .timedOut, url: url, detail: "no complete answer within \(Self.seconds(options.deadline))")
                }
                return try await attempt(left)
            }
        } catch {
            throw Self.map(error, url: url)
        }
    }

    /// The head of an answer as the proxies use it.
    static func head(_ status: Int, _ headers: HTTPHeaders, url: String) -> RemoteHead {
        RemoteHead(status: status, headers: headers.map { (name: $0.name, value: $0.value) }, finalURL: url)
    }

    /// A GET of `url` with ``requestFields(_:)`` and the credential scope of the options.
    func request(_ url: String, _ headers: [(name: String, value: String)]) -> HTTPClientRequest {
        HTTPClientRequest(url: url, headers: requestFields(headers), credentials: credentialScope(for: url))
    }

    /// Where the credentials among the configured headers may go, for a request of `url`.
    func credentialScope(for url: String) -> CredentialScope {
        originScope
            ?? CredentialScope(origin: url, allowedHosts: options.credentialHosts, secretFields: options.secretHeaders)
    }

    /// The header fields of a request: the user agent, the configured headers, then the caller's (a later field
    /// replaces an earlier one of the same name).
    func requestFields(_ headers: [(name: String, value: String)]) -> HTTPHeaders {
        var fields: HTTPHeaders = ["User-Agent": options.userAgent]
        for field in options.headers + headers { fields.replaceOrAdd(name: field.name, value: field.value) }
        return fields
    }

    /// A client error as the proxy reports it.
    static func map(_ error: any Error, url: String) -> ProxyError {
        if let error = error as? ProxyError { return error }
        guard let error = error as? HTTPClientError else {
            return ProxyError(.connectionFailed, url: url, detail: "\(error)")
        }
        let code: ProxyError.Code =
            switch error.code {
            case .timedOut: .timedOut
            case .tooLarge: .tooLarge
            case .addressRefused: .addressNotAllowed
            case .tooManyRedirects: .tooManyRedirects
            case .invalidURL: .invalidURL
            case .httpStatus: .httpStatus
            default: .connectionFailed
            }
        var mapped = ProxyError(
            code, url: error.url.isEmpty ? url : error.url, status: error.status, detail: error.message)
        mapped.clientSaysTransient = error.isTransient
        return mapped
    }
}
/// A streamed upstream response: its head and its body chunks.
public struct RemoteStream: Sendable {
    public var head: RemoteHead
    public var body: AsyncThrowingStream<[UInt8], any Error>
    let cancelTask: @Sendable () -> Void
    /// The body as the upstream socket (plain http with a known length), for a relay inside the kernel.
    public internal(set) var socketBody: SocketBody?

    /// Stops the transfer.
    public func cancel() { cancelTask() }

}

/// Which upstream addresses the proxies may fetch: the check made before each request (scheme, loopback names,
/// what the host resolves to, remembered for a while), on the client's address rule; the client checks again at
/// connect time on the addresses it actually uses.
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
            let found = UpstreamAddressPolicy.resolve(host).first(where: UpstreamAddressPolicy.isPrivate)
            table.withLock { entries in
                if entries.count >= 256 { entries = entries.filter { $0.value.until > now } }
                if entries.count < 256 { entries[host] = (found, now + UpstreamPolicy.verdictLifetime) }
            }
            return found
        }
    }

    /// Checks a URL's scheme and (unless private upstreams are allowed) every address its host resolves to.
    func check(_ original: String) throws(ProxyError) {
        guard let scheme = URIReference(original).scheme?.lowercased() else {
            throw ProxyError(.invalidURL, url: original, detail: "no scheme")
        }
        guard scheme == "http" || scheme == "https" else {
            throw ProxyError(.schemeNotAllowed, url: original, detail: "only http and https are fetched, not \(scheme)")
        }
        let host: String
        do {
            host = try Target(original).host  // without the brackets of an IPv6 literal
        } catch {
            throw ProxyError(.invalidURL, url: original, detail: error.message)
        }
        if allowPrivate { return }
        let lower = host.lowercased()
        if UpstreamAddressPolicy.isLoopbackName(lower) {
            throw ProxyError(.addressNotAllowed, url: original, detail: "\(host) is a loopback name")
        }
        if let address = verdicts.verdict(lower) {
            throw ProxyError(
                .addressNotAllowed, url: original, detail: "\(host) resolves to \(address), a non-public address")
        }
    }
}
