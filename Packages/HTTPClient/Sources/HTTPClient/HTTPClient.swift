public import HTTPWire
import TextCodecs

/// Settings of an ``HTTPClient``.
public struct HTTPClientConfiguration: Sendable {
    /// Seconds a connection attempt to one address may take.
    public var connectTimeout: Double = 10
    /// Seconds without any byte from the server (while waiting for a head or a body) before a request fails.
    public var idleTimeout: Double = 20
    /// Seconds one request may take in all, however its server trickles: from its start to its final response
    /// head (the wait for a slot to the host, connection attempts and redirects included) for ``HTTPClient/send(_:)``,
    /// and to the end of the body for a body read whole (``HTTPClient/fetch(_:maxBytes:)``,
    /// ``HTTPClient/fetchBlocking(_:maxBytes:)``). Past it the request fails with
    /// ``HTTPClientError/Code/timedOut`` and its connection is closed. A streamed body then has ``idleTimeout``
    /// between bytes and its reader's byte cap; ``HTTPClient/get(_:headers:maxBytes:timeout:onRetry:)`` has its
    /// own, shorter deadline over all its attempts.
    public var deadline: Double = 30
    /// The shorter deadline of a first playlist fetch (``HTTPClient/get(_:headers:maxBytes:timeout:onRetry:)``
    /// with `timeout` nil uses it), so that a dead or silent server is reported quickly.
    public var firstFetchTimeout: Double = 8
    /// Redirects followed per request (each target is checked against ``addressPolicy``).
    public var maxRedirects: Int = 5
    /// With false, a redirect answer is returned as it is.
    public var followsRedirects = true
    /// The largest body chunk delivered at once over plain http.
    public var chunkSize: Int = 512 << 10
    /// Which upstream addresses may be connected to.
    public var addressPolicy: UpstreamAddressPolicy = .any
    /// How ``HTTPClient/get(_:headers:maxBytes:timeout:onRetry:)`` retries.
    public var retry = RetryPolicy()
    /// Concurrent requests per host and port. Over the sockets (plain http) a slot is held from the request to
    /// the end of its body; further requests wait in a first-come queue, as continuations rather than threads,
    /// until a slot frees or their ``deadline`` passes, so that a silent or trickling host ties up at most this
    /// many threads and delays no other host. For https, URLSession's connections per host.
    public var maxConnectionsPerHost: Int = 16
    /// Caps on response heads.
    public var limits = HTTPParserLimits()
    /// An HTTP proxy (`host:port`) for every request; requests then go through URLSession.
    public var upstreamProxy: String?

    public init() {}
}

/// The toolkit's one HTTP client: HTTP/1.1 over POSIX sockets for `http://` (keep-alive connections pooled per
/// host, bodies read in large chunks, heads and chunked bodies parsed by HTTPWire), URLSession for `https://`; one
/// redirect loop (bounded, http(s) only, each target checked), one retry policy (``get(_:headers:maxBytes:timeout:onRetry:)``),
/// one upstream-address policy checked at connect time, streaming bodies and the splice hand-off (``SocketBody``).
///
/// Blocking socket calls run on FileRange's `BlockingPool`, never on Swift's cooperative pool; cancelling the calling task
/// shuts the connection down, which ends a blocked read at once, and stops a connect under way (sockets come from
/// the Sockets package: close-on-exec, no SIGPIPE, connected without blocking).
public final class HTTPClient: HTTPTransport {
    public let configuration: HTTPClientConfiguration
    private let pool: ConnectionPool
    private let secure: URLSessionBackend
    private let slots: HostSlots

    public init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) {
        var configuration = configuration
        configuration.connectTimeout = max(0.01, configuration.connectTimeout)
        configuration.idleTimeout = max(0.01, configuration.idleTimeout)
        configuration.deadline = max(0.01, configuration.deadline)
        configuration.maxConnectionsPerHost = max(1, configuration.maxConnectionsPerHost)
        configuration.maxRedirects = max(0, configuration.maxRedirects)
        configuration.chunkSize = max(4096, configuration.chunkSize)
        self.configuration = configuration
        self.pool = ConnectionPool(
            connectTimeout: configuration.connectTimeout, idleTimeout: configuration.idleTimeout,
            policy: configuration.addressPolicy, limits: configuration.limits)
        self.secure = URLSessionBackend(configuration: configuration)
        self.slots = HostSlots(limit: configuration.maxConnectionsPerHost)
    }

    /// Sends a request and returns once the final response head arrived (redirects followed); the body streams.
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let deadline = Deadline(seconds: request.deadline ?? configuration.deadline)
        let bodyDeadline = request.bodyDeadline.map { Deadline(seconds: $0) }
        return try await followingRedirects(request) { forwarded in
            var response = try await Self.within(deadline, url: forwarded.url) { [secure] in
                try await secure.send(forwarded, bodyDeadline: bodyDeadline)
            }
            if response.url == nil { response.url = forwarded.url }
            return (response, response.status, response.header("Location"))
        } exchange: { target, forwarded in
            var response = try await exchange(target, forwarded, deadline: deadline, bodyDeadline: bodyDeadline)
            response.url = forwarded.url
            return (response, response.status, response.header("Location"))
        }
    }

    /// A small body whole (a playlist, a key): over plain http the request, the head and up to `maxBytes` of body
    /// are sent and read in one blocking call on a `BlockingPool` thread. Redirects are followed as by
    /// ``send(_:)``. A longer body throws ``HTTPClientError/Code/tooLarge``. Any status is returned.
    public func fetch(_ request: HTTPClientRequest, maxBytes: Int) async throws -> HTTPWholeResponse {
        let deadline = Deadline(seconds: request.deadline ?? configuration.deadline)
        return try await followingRedirects(request) { forwarded in
            var response = try await Self.within(deadline, url: forwarded.url) { [secure] in
                try await HTTPWholeResponse(collecting: try await secure.send(forwarded), maxBytes: maxBytes)
            }
            if response.url == nil { response.url = forwarded.url }
            return (response, response.status, response.header("Location"))
        } exchange: { target, forwarded in
            var response = try await exchangeWhole(target, forwarded, maxBytes: maxBytes, deadline: deadline)
            response.url = forwarded.url
            return (response, response.status, response.header("Location"))
        }
    }

    /// GETs `url` whole with the retry policy: connection refused, no such host, TLS failures, refused addresses
    /// and 4xx answers other than 408/425/429 fail at once; transient failures are retried with backoff, each
    /// retry told to `onRetry` first. Everything must end within `timeout` seconds
    /// (``HTTPClientConfiguration/firstFetchTimeout`` when nil); a retry that could not start in time (a long
    /// Retry-After) is not waited for, the last answer is reported at once. A non-2xx answer throws
    /// ``HTTPClientError/Code/httpStatus`` naming the URL and the status in words (`404 Not Found`).
    public func get(
        _ url: String, headers: HTTPHeaders = [:], maxBytes: Int, timeout: Double? = nil,
        onRetry: (@Sendable (RetryEvent) -> Void)? = nil
    ) async throws -> HTTPWholeResponse {
        let seconds = max(0.01, timeout ?? configuration.firstFetchTimeout)
        let request = HTTPClientRequest(url: url, headers: headers)
        let clock = SystemRetryClock()
        let deadline = clock.now() + seconds
        return try await Self.within(seconds: seconds, url: url) { [self] in
            try await configuration.retry.run(url: url, clock: clock, onRetry: onRetry, deadline: deadline) {
                let response = try await fetch(request, maxBytes: maxBytes)
                if (200..<300).contains(response.status) { return .success(response) }
                var error = HTTPClientError.status(response.status, url: url)
                if let final = response.url, final != url { error.message += " (at \(final))" }
                guard error.isTransient else { throw error }
                return .retry(after: retryAfterSeconds(response.header("Retry-After")), failure: error)
            }
        }
    }

    /// Runs `work`, failing with ``HTTPClientError/Code/timedOut`` ("no complete answer within 8 s") when it has
    /// not finished within `seconds`; the work is cancelled then. The toolkit's one deadline race: the client's
    /// first-fetch deadline and the proxies' use it.
    public static func within<T: Sendable>(
        seconds: Double, url: String, _ work: @escaping @Sendable () async throws -> T
    )
        async throws -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(min(seconds, 86_400) * 1000)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw HTTPClientError(
                    .timedOut, "no complete answer within \(RetryEvent.seconds(seconds))", url: url)
            }
            return value
        }
    }

    /// ``within(seconds:url:_:)`` for what is left of a request's deadline.
    private static func within<T: Sendable>(
        _ deadline: Deadline, url: String, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let left = deadline.remaining
        guard left > 0 else { throw deadline.error.at(url) }
        do {
            return try await within(seconds: left, url: url, work)
        } catch let error as HTTPClientError where error.code == .timedOut && deadline.passed {
            throw deadline.error.at(url)
        }
    }

    /// ``fetch(_:maxBytes:)`` without a task, for a caller already on a thread that may block (a dispatch queue's,
    /// never Swift's cooperative pool): the request, head and body in one blocking call on the calling thread.
    /// Plain `http://` only, and no redirect is followed: nil for an `https://` URL or with an upstream proxy (use
    /// ``fetch(_:maxBytes:)``); a redirect answer is returned as it is. Nil too when every slot to the host is
    /// taken (``HTTPClientConfiguration/maxConnectionsPerHost``): the async path waits for one without a thread.
    public func fetchBlocking(_ request: HTTPClientRequest, maxBytes: Int) throws(HTTPClientError)
        -> HTTPWholeResponse?
    {
        let target = try Target(request.url)
        guard !target.secure, configuration.upstreamProxy == nil else { return nil }
        var request = request
        if let scope = request.credentials, !scope.allows(request.url) {
            request.headers = scope.withoutSecrets(request.headers)
        }
        guard let slot = slots.tryAcquire(target.key) else { return nil }
        defer { slot.release() }
        let deadline = Deadline(seconds: request.deadline ?? configuration.deadline)
        let head = requestHead(target, request)
        var reused = pool.take(target.key)
        while true {
            let connection: Connection
            if let reused {
                connection = reused
            } else {
                connection = try Connection.establish(target, pool: pool, url: request.url, deadline: deadline)
            }
            do throws(HTTPClientError) {
                let (parsed, body, after) = try Self.whole(
                    on: connection, head: head, maxBytes: maxBytes, deadline: deadline)
                settle(connection, after, key: target.key)
                return HTTPWholeResponse(
                    status: parsed.status.code, headers: parsed.headers, body: body, url: request.url)
            } catch {
                connection.close()
                guard reused != nil, error.code == .connectionReset else { throw error.at(request.url) }
                reused = nil
            }
        }
    }

    /// Whether a URL goes over the sockets (plain http, no upstream proxy).
    public func usesSockets(_ url: String) -> Bool {
        configuration.upstreamProxy == nil && (try? Target(url))?.secure == false
    }

    /// How many idle pooled connections wait for the host and port of `url` (for tests and diagnostics).
    public func idleConnections(to url: String) -> Int {
        guard let target = try? Target(url) else { return 0 }
        return pool.idleCount(target.key)
    }

    /// The one redirect loop: runs `exchange` on each plain-http URL, or `secure` on https (and everything with an
    /// upstream proxy), following redirects (when ``HTTPClientConfiguration/followsRedirects``) up to
    /// ``HTTPClientConfiguration/maxRedirects``, to http(s) targets only. The request's ``CredentialScope`` (its own
    /// URL's when it has none) is asked before every exchange: a URL it does not allow gets the request without its
    /// secret fields, and they stay dropped for the rest of the redirects.
    private func followingRedirects<Response>(
        _ request: HTTPClientRequest,
        secure: (HTTPClientRequest) async throws -> (Response, status: Int, location: String?),
        exchange: (Target, HTTPClientRequest) async throws -> (Response, status: Int, location: String?)
    ) async throws -> Response {
        var forwarded = request
        let scope = request.credentials ?? CredentialScope(origin: request.url)
        var redirects = 0
        while true {
            try Task.checkCancellation()
            let target = try Target(forwarded.url)
            if !scope.allows(forwarded.url) { forwarded.headers = scope.withoutSecrets(forwarded.headers) }
            let (response, status, location): (Response, Int, String?)
            do {
                if target.secure || configuration.upstreamProxy != nil {
                    try configuration.addressPolicy.check(host: target.host, url: forwarded.url)
                    (response, status, location) = try await secure(forwarded)
                } else {
                    (response, status, location) = try await exchange(target, forwarded)
                }
            } catch let error as HTTPClientError {
                throw error.at(forwarded.url)
            }
            if configuration.followsRedirects, [301, 302, 303, 307, 308].contains(status), let location {
                redirects += 1
                guard redirects <= configuration.maxRedirects else {
                    throw HTTPClientError(
                        .tooManyRedirects, "more than \(configuration.maxRedirects) redirects", url: request.url)
                }
                let next = URIReference.resolve(location, against: forwarded.url)
                let scheme = URIReference(next).scheme?.lowercased()
                guard scheme == "http" || scheme == "https" else {
                    throw HTTPClientError(
                        .tooManyRedirects, "a redirect to \(next), which is not an http(s) URL", url: request.url)
                }
                forwarded.url = next
                if status == 303 { forwarded.method = .get }
                continue
            }
            return response
        }
    }

    private func exchangeWhole(
        _ target: Target, _ request: HTTPClientRequest, maxBytes: Int, deadline: Deadline
    ) async throws -> HTTPWholeResponse {
        let head = requestHead(target, request)
        let slot = try await slot(target, deadline: deadline, url: request.url)
        defer { slot.release() }
        return try await onPooledConnection(target, url: request.url, deadline: deadline) { connection in
            let (parsed, body, after) = try await Connection.run(connection) {
                () throws(HTTPClientError) -> (HTTPResponseHead, [UInt8], HTTPClientConnectionStateMachine.Action) in
                try Self.whole(on: connection, head: head, maxBytes: maxBytes, deadline: deadline)
            }
            settle(connection, after, key: target.key)
            return HTTPWholeResponse(status: parsed.status.code, headers: parsed.headers, body: body)
        }
    }

    /// Sends a request head and reads the whole answer (blocking); also returns what the connection's state
    /// machine decided at the end (pool or close).
    private static func whole(
        on connection: Connection, head: HTTPRequestHead, maxBytes: Int, deadline: Deadline
    ) throws(HTTPClientError) -> (HTTPResponseHead, [UInt8], HTTPClientConnectionStateMachine.Action) {
        connection.arm(deadline)
        defer { connection.arm(nil) }
        let (parsed, action) = try connection.exchangeHead(head)
        guard case .readBody(let framing) = action else { return (parsed, [], action) }
        let body = try BodyReader.readWhole(connection, framing: framing, maxBytes: maxBytes)
        return (parsed, body, connection.bodyFinished())
    }

    /// A slot to the target's host and port, waiting in its queue until the deadline.
    private func slot(_ target: Target, deadline: Deadline, url: String) async throws -> HostSlot {
        do {
            return try await slots.acquire(target.key, deadline: deadline)
        } catch let error as HTTPClientError {
            throw error.at(url)
        }
    }

    /// Requests under way and requests waiting for the host and port of `url` (for tests and diagnostics).
    public func requestCounts(to url: String) -> (active: Int, waiting: Int) {
        guard let target = try? Target(url) else { return (0, 0) }
        return slots.counts(target.key)
    }

    /// Returns a connection whose answer was read whole to the pool, or closes it, as its state machine decided.
    private func settle(_ connection: Connection, _ action: HTTPClientConnectionStateMachine.Action, key: String) {
        if action == .returnToPool { pool.put(connection, key: key) } else { connection.close() }
    }

    /// One request on a pooled connection; the body is read later, chunk by chunk.
    private func exchange(
        _ target: Target, _ request: HTTPClientRequest, deadline: Deadline, bodyDeadline: Deadline? = nil
    ) async throws -> HTTPClientResponse {
        let head = requestHead(target, request)
        let slot = try await slot(target, deadline: deadline, url: request.url)
        return try await onPooledConnection(target, url: request.url, deadline: deadline) { connection in
            // The slot is given back when the body ends, or when it is dropped on a failure.
            let (parsed, action) = try await Connection.run(connection) {
                () throws(HTTPClientError) -> (HTTPResponseHead, HTTPClientConnectionStateMachine.Action) in
                connection.arm(deadline)
                defer { connection.arm(nil) }
                return try connection.exchangeHead(head)
            }
            var framing = HTTPBodyFraming.none
            if case .readBody(let declared) = action { framing = declared }
            let reader = BodyReader(
                connection: connection, framing: framing, pool: pool, key: target.key,
                chunkSize: configuration.chunkSize, url: request.url, slot: slot, deadline: bodyDeadline)
            let body = AsyncThrowingStream<[UInt8], any Error>(unfolding: { try await reader.next() })
            if framing == .none {
                // The exchange is already over: pool or close as the state machine decided.
                if action == .returnToPool { pool.put(connection, key: target.key) } else { connection.close() }
                reader.markFinished()
            }
            var socketBody: SocketBody?
            if case .length(let length) = framing, length > 0 { socketBody = SocketBody(reader, length) }
            return HTTPClientResponse(
                status: parsed.status.code, headers: parsed.headers, body: body, socketBody: socketBody)
        }
    }

    /// Runs `work` on an idle pooled connection to the target, or a new one. A pooled connection the server had
    /// closed (`connectionReset`) is replaced by a new one once; on any failure the connection is closed.
    private func onPooledConnection<Result>(
        _ target: Target, url: String, deadline: Deadline, _ work: (Connection) async throws -> Result
    ) async throws -> Result {
        var reused = pool.take(target.key)
        while true {
            let connection: Connection
            if let idle = reused {
                connection = idle
            } else {
                // A cancelled task stops a connect under way (a peer that never answers) at once.
                let cancellation = ConnectCancellation()
                connection = try await Connection.run(nil, onCancel: cancellation.cancel) {
                    [pool] () throws(HTTPClientError) -> Connection in
                    try Connection.establish(
                        target, pool: pool, url: url, deadline: deadline, cancellation: cancellation)
                }
            }
            do {
                return try await work(connection)
            } catch let error as HTTPClientError where reused != nil && error.code == .connectionReset {
                connection.close()
                reused = nil
                continue
            } catch {
                connection.close()
                throw error
            }
        }
    }

    /// The request head: `Host`, the caller's fields minus those the client owns (and any with a line break or
    /// a name that is not a token), then `Accept-Encoding: identity` and `Connection: keep-alive`.
    func requestHead(_ target: Target, _ request: HTTPClientRequest) -> HTTPRequestHead {
        var fields = HTTPHeaders(reservingCapacity: request.headers.count + 3)
        fields.add(name: "Host", value: target.hostHeader)
        for field in request.headers where !Self.isOwned(field.name) {
            let clean =
                !field.name.isEmpty && field.name.utf8.allSatisfy(HTTPASCII.isTokenCharacter)
                && field.value.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0 }
            if clean { fields.append(field) }
        }
        fields.add(name: "Accept-Encoding", value: "identity")
        fields.add(name: "Connection", value: "keep-alive")
        return HTTPRequestHead(method: request.method, target: target.requestTarget, headers: fields)
    }

    static func isOwned(_ name: String) -> Bool {
        for owned in ["Host", "Connection", "Accept-Encoding", "Content-Length", "Transfer-Encoding"]
        where HTTPHeaders.equalNames(name, owned) {
            return true
        }
        return false
    }
}
