import FileRange
import Foundation
import HLSDownload
import HLSPlaylist

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// GET with streamed bodies: the caller's headers on every request, a stall timeout, bounded redirects whose every
/// target is checked against the upstream policy, and flow control. Plain `http://` goes over pooled keep-alive
/// sockets (HLSDownload's ``SocketTransport``, read in 512 KiB blocks, with no per-request thread hops), which
/// FoundationNetworking's URLSession on Linux cannot match (it hands over 16 KiB pieces and costs about a
/// millisecond a request); `https://`, and everything when an upstream HTTP proxy is set, goes over URLSession
/// (the transfer is suspended while more than a few MiB wait for the consumer; see ``TransferBody``).
final class ProxyHTTPClient: Sendable {
    private let session: URLSession
    private let delegate: ProxyClientDelegate
    private let sockets: SocketTransport?
    let options: RemoteFetchOptions
    let policy: UpstreamPolicy

    init(options: RemoteFetchOptions, policy: UpstreamPolicy) {
        self.options = options
        self.policy = policy
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = options.timeout
        configuration.timeoutIntervalForResource = 86_400
        configuration.httpMaximumConnectionsPerHost = 8
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        if let proxy = options.upstreamProxy {
            let parts = proxy.split(separator: ":")
            if parts.count == 2, let port = Int(parts[1]) {
                configuration.connectionProxyDictionary = [
                    "HTTPEnable": 1, "HTTPProxy": String(parts[0]), "HTTPPort": port,
                    "HTTPSEnable": 1, "HTTPSProxy": String(parts[0]), "HTTPSPort": port,
                ]
            }
        }
        let delegate = ProxyClientDelegate(maxRedirects: options.maxRedirects, policy: policy)
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        // Redirects are followed here, so that every target is checked against the policy.
        // Without allowPrivateUpstreams, the addresses a connection is made to are checked too (the policy's own
        // lookup may have seen other answers: a name that resolves to a public address for the check and to a
        // private one for the connection is refused here).
        var refuses: (@Sendable (String) -> Bool)?
        if !policy.allowPrivate { refuses = { @Sendable address in UpstreamPolicy.isPrivate(address) } }
        if options.upstreamProxy == nil {
            self.sockets = SocketTransport(
                stallTimeout: options.timeout, maxRedirects: 0, followsRedirects: false, refusesAddress: refuses)
        } else {
            self.sockets = nil
        }
    }

    deinit { session.invalidateAndCancel() }

    /// Sends a GET; returns when the response head arrives.
    func send(_ urlString: String, headers: [(name: String, value: String)]) async throws(ProxyError) -> RemoteStream {
        let outcome = try await overSockets(urlString) { sockets, url throws -> (Int, String?, TransportResponse) in
            let response = try await sockets.send(TransportRequest(url: url, headers: requestFields(headers)))
            return (response.status, response.header("Location"), response)
        }
        switch outcome {
        case .answered(let response, let url):
            let head = RemoteHead(
                status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
                finalURL: url)
            // Dropping the body (the last reference to the stream) ends the transfer and closes its connection.
            return RemoteStream(head: head, body: response.body, cancelTask: {}, socketBody: response.socketBody)
        case .notSockets(let url):
            return try await sendOverURLSession(url, headers: headers)
        }
    }

    /// A small body whole, when it can go over the sockets: the request, head and body in one blocking call (no
    /// per-chunk hand-offs). Nil when the URL, or a redirect's target, is not plain http: use ``send(_:headers:)``.
    func fetchWhole(_ urlString: String, headers: [(name: String, value: String)], maxBytes: Int)
        async throws(ProxyError) -> (RemoteHead, [UInt8])?
    {
        let outcome = try await overSockets(urlString) { sockets, url throws -> (Int, String?, WholeResponse) in
            let response = try await sockets.fetch(
                TransportRequest(url: url, headers: requestFields(headers)), maxBytes: maxBytes)
            return (response.status, response.header("Location"), response)
        }
        guard case .answered(let response, let url) = outcome else { return nil }
        let head = RemoteHead(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            finalURL: url)
        return (head, response.body)
    }

    /// ``fetchWhole(_:headers:maxBytes:)`` in one blocking call on the calling thread, which must be one that may
    /// block (a dispatch queue's, never Swift's cooperative pool). Nil when the URL is not plain http, sockets are
    /// off, or the answer is a redirect: use the async path, which follows it.
    func fetchWholeBlocking(_ urlString: String, headers: [(name: String, value: String)], maxBytes: Int)
        throws(ProxyError) -> (RemoteHead, [UInt8])?
    {
        guard let sockets, fetchesOverSockets(urlString) else { return nil }
        guard let url = URL(string: urlString) else {
            throw ProxyError(.invalidURL, url: urlString, detail: "the URL cannot be parsed")
        }
        try policy.check(url, original: urlString)
        let response: WholeResponse
        do {
            guard
                let answer = try sockets.fetchBlocking(
                    TransportRequest(url: urlString, headers: requestFields(headers)), maxBytes: maxBytes)
            else { return nil }
            response = answer
        } catch {
            throw Self.map(error, url: urlString)
        }
        if [301, 302, 303, 307, 308].contains(response.status) { return nil }
        let head = RemoteHead(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            finalURL: urlString)
        return (head, response.body)
    }

    /// Whether a URL goes over the sockets (plain http, no upstream proxy).
    func fetchesOverSockets(_ urlString: String) -> Bool {
        sockets != nil && URIReference(urlString).scheme?.lowercased() == "http"
    }

    /// A socket transport's error as the proxy reports it.
    private static func map(_ error: TransportError, url: String) -> ProxyError {
        let code: ProxyError.Code =
            switch error.code {
            case .timedOut: .timedOut
            case .tooLarge: .tooLarge
            case .addressRefused: .addressNotAllowed
            default: .connectionFailed
            }
        return ProxyError(code, url: url, detail: error.message)
    }

    private enum SocketOutcome<Response> {
        /// The final (non-redirect) answer, and the URL that gave it.
        case answered(Response, String)
        /// The URL (maybe a redirect's target) is not plain http, or sockets are off: URLSession's turn.
        case notSockets(String)
    }

    /// Runs `exchange` over the sockets while the URL is plain http, following redirects here so that every target
    /// is checked against the policy. `exchange` gives the status, the Location field and the response.
    private func overSockets<Response>(
        _ urlString: String,
        _ exchange: (SocketTransport, String) async throws -> (Int, String?, Response)
    ) async throws(ProxyError) -> SocketOutcome<Response> {
        var current = urlString
        var redirects = 0
        while let sockets, URIReference(current).scheme?.lowercased() == "http" {
            guard let url = URL(string: current) else {
                throw ProxyError(.invalidURL, url: current, detail: "the URL cannot be parsed")
            }
            try policy.check(url, original: current)
            let status: Int
            let location: String?
            let response: Response
            do {
                (status, location, response) = try await exchange(sockets, current)
            } catch let error as TransportError {
                throw Self.map(error, url: current)
            } catch {
                throw ProxyError(.connectionFailed, url: current, detail: "\(error)")
            }
            if [301, 302, 303, 307, 308].contains(status), let location {
                redirects += 1
                let next = URIReference(location).resolved(against: URIReference(current)).description
                guard redirects <= options.maxRedirects else {
                    throw ProxyError(
                        .tooManyRedirects, url: urlString, detail: "more than \(options.maxRedirects) redirects")
                }
                if let target = URL(string: next) {
                    do {
                        try policy.check(target, original: next)
                    } catch {
                        throw ProxyError(
                            .tooManyRedirects, url: urlString, detail: "redirect to \(next) refused: \(error.detail)")
                    }
                }
                current = next
                continue
            }
            return .answered(response, current)
        }
        return .notSockets(current)
    }

    /// The header fields of a socket request: the user agent, the configured headers, then the caller's (a later
    /// field replaces an earlier one of the same name, as URLRequest does).
    private func requestFields(_ headers: [(name: String, value: String)]) -> [HTTPHeaderField] {
        var fields: [HTTPHeaderField] = [HTTPHeaderField(name: "User-Agent", value: options.userAgent)]
        for field in options.headers + headers {
            fields.removeAll { $0.name.caseInsensitiveCompare(field.name) == .orderedSame }
            fields.append(HTTPHeaderField(name: field.name, value: field.value))
        }
        return fields
    }

    private func sendOverURLSession(_ urlString: String, headers: [(name: String, value: String)])
        async throws(ProxyError) -> RemoteStream
    {
        guard let url = URL(string: urlString) else {
            throw ProxyError(.invalidURL, url: urlString, detail: "the URL cannot be parsed")
        }
        try policy.check(url, original: urlString)
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        request.timeoutInterval = options.timeout
        // URLSession would otherwise ask for gzip and hide the real length of media bodies.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        request.setValue(options.userAgent, forHTTPHeaderField: "User-Agent")
        for field in options.headers { request.setValue(field.value, forHTTPHeaderField: field.name) }
        for field in headers { request.setValue(field.value, forHTTPHeaderField: field.name) }
        let task = session.dataTask(with: request)
        let identifier = task.taskIdentifier
        let body = TransferBody(task: task)
        let head: RemoteHead
        do {
            head = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<RemoteHead, any Error>) in
                    delegate.register(identifier, url: urlString, head: waiter, body: body)
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as ProxyError {
            throw error
        } catch {
            throw ProxyError(.connectionFailed, url: urlString, detail: "\(error)")
        }
        // The consumer pulls straight from the gathering buffer (no task or stream in between); when the last
        // reference to the sequence goes, a transfer still running is cancelled.
        let reader = TransferBody.Reader(body)
        return RemoteStream(
            head: head, body: AsyncThrowingStream(unfolding: { try await reader.next() }), cancelTask: { task.cancel() }
        )
    }
}

/// The body of one transfer. URLSession hands over small pieces (16 KiB with libcurl on Linux); they are gathered
/// into one buffer that the consumer takes whole, so a relay writes large blocks and pays its per-chunk costs
/// (a task switch, a wake-up of the server's event loop, a send) a few times per megabyte rather than per piece.
/// A waiting consumer is woken once ``wakeBytes`` have gathered, or ``wakeDelay`` after the oldest byte waiting
/// arrived (a timer, so a slow or pausing upstream is relayed as it arrives), or at the end. The transfer is suspended while more than
/// ``highWater`` bytes wait for the consumer (backpressure) and resumed when the consumer takes them.
final class TransferBody: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var finished = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        /// When the oldest byte in `pending` arrived.
        var pendingSince: ContinuousClock.Instant?
        /// Whether a wake-up timer is pending.
        var timerArmed = false
        var suspended = false
        var cancelled = false
    }
    private let state = LockedValue(State())
    private let task: URLSessionDataTask
    static let wakeBytes = 256 << 10
    static let wakeDelay = Duration.milliseconds(5)
    static let highWater = 8 << 20

    init(task: URLSessionDataTask) { self.task = task }

    /// A piece from URLSession.
    func append(_ data: Data) {
        var wake: (CheckedContinuation<[UInt8]?, any Error>, [UInt8])?
        var arm = false
        let suspend = state.withLock { s -> Bool in
            if s.pending.isEmpty {
                s.pending.reserveCapacity(max(TransferBody.wakeBytes * 2, data.count))
                s.pendingSince = ContinuousClock.now
            }
            data.withUnsafeBytes { s.pending.append(contentsOf: $0) }
            if let waiter = s.waiter {
                if s.pending.count >= TransferBody.wakeBytes {
                    s.waiter = nil
                    s.pendingSince = nil
                    wake = (waiter, s.pending)
                    s.pending = []
                } else if !s.timerArmed {
                    s.timerArmed = true
                    arm = true
                }
            }
            if !s.suspended, s.pending.count > TransferBody.highWater {
                s.suspended = true
                return true
            }
            return false
        }
        if let wake { wake.0.resume(returning: wake.1) }
        if arm { armTimer() }
        if suspend { task.suspend() }
    }

    /// Wakes a waiting consumer with what has gathered, ``wakeDelay`` from now.
    private func armTimer() {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { [self] in
            let wake = state.withLock { s -> (CheckedContinuation<[UInt8]?, any Error>, [UInt8])? in
                s.timerArmed = false
                guard let waiter = s.waiter, !s.pending.isEmpty else { return nil }
                s.waiter = nil
                s.pendingSince = nil
                defer { s.pending = [] }
                return (waiter, s.pending)
            }
            if let wake { wake.0.resume(returning: wake.1) }
        }
    }

    /// The transfer ended (`error` nil: complete).
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { s -> (CheckedContinuation<[UInt8]?, any Error>, [UInt8])? in
            s.finished = true
            s.failure = error
            guard let waiter = s.waiter else { return nil }
            s.waiter = nil
            let bytes = s.pending
            s.pending = []
            s.pendingSince = nil
            return (waiter, bytes)
        }
        guard let (continuation, bytes) = waiter else { return }
        if !bytes.isEmpty {
            continuation.resume(returning: bytes)
        } else if let error {
            continuation.resume(throwing: error)
        } else {
            continuation.resume(returning: nil)
        }
    }

    /// The next block: everything gathered so far (nil at the end).
    func next() async throws -> [UInt8]? {
        enum Step {
            case bytes([UInt8], resume: Bool)
            case end
            case fail(any Error)
            case wait
        }
        let step = state.withLock { s -> Step in
            let stale = s.pendingSince.map { ContinuousClock.now - $0 >= TransferBody.wakeDelay } ?? false
            if !s.pending.isEmpty, s.pending.count >= TransferBody.wakeBytes || s.finished || s.suspended || stale {
                let bytes = s.pending
                s.pending = []
                s.pendingSince = nil
                let resume = s.suspended
                s.suspended = false
                return .bytes(bytes, resume: resume)
            }
            if s.finished {
                if let failure = s.failure, s.pending.isEmpty { return .fail(failure) }
                if s.pending.isEmpty { return .end }
            }
            if s.cancelled { return .fail(CancellationError()) }
            return .wait
        }
        switch step {
        case .bytes(let bytes, let resume):
            if resume { task.resume() }
            return bytes
        case .end:
            return nil
        case .fail(let error):
            throw error
        case .wait:
            break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                let immediate = state.withLock { s -> Result<[UInt8]?, any Error>? in
                    if s.cancelled { return .failure(CancellationError()) }
                    if s.finished {
                        let bytes = s.pending
                        s.pending = []
                        s.pendingSince = nil
                        if !bytes.isEmpty { return .success(bytes) }
                        if let failure = s.failure { return .failure(failure) }
                        return .success(nil)
                    }
                    s.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
                // Bytes already waiting are handed over within wakeDelay even if no more arrive.
                let arm = state.withLock { s -> Bool in
                    guard s.waiter != nil, !s.pending.isEmpty, !s.timerArmed else { return false }
                    s.timerArmed = true
                    return true
                }
                if arm { armTimer() }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Stops the transfer; a waiting consumer gets a CancellationError.
    func cancel() {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, any Error>? in
            s.cancelled = true
            defer { s.waiter = nil }
            return s.waiter
        }
        task.cancel()
        waiter?.resume(throwing: CancellationError())
    }

    /// Owns a transfer for its consumer: when the consumer lets go before the end, the transfer is cancelled.
    final class Reader: Sendable {
        let body: TransferBody
        init(_ body: TransferBody) { self.body = body }
        deinit { body.cancel() }
        func next() async throws -> [UInt8]? { try await body.next() }
    }
}

/// Routes URLSession's delegate callbacks to the waiting request by task identifier.
final class ProxyClientDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Pending: Sendable {
        var url: String
        var head: CheckedContinuation<RemoteHead, any Error>?
        var body: TransferBody
        var redirects = 0
    }
    private let pending = LockedValue<[Int: Pending]>([:])
    private let maxRedirects: Int
    private let policy: UpstreamPolicy

    init(maxRedirects: Int, policy: UpstreamPolicy) {
        self.maxRedirects = maxRedirects
        self.policy = policy
    }

    func register(
        _ identifier: Int, url: String, head: CheckedContinuation<RemoteHead, any Error>, body: TransferBody
    ) {
        pending.withLock { $0[identifier] = Pending(url: url, head: head, body: body) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let entry = pending.withLock { table -> Pending? in
            let entry = table[dataTask.taskIdentifier]
            table[dataTask.taskIdentifier]?.head = nil
            return entry
        }
        var head = RemoteHead(status: 0, headers: [], finalURL: response.url?.absoluteString ?? entry?.url ?? "")
        if let http = response as? HTTPURLResponse {
            head.status = http.statusCode
            for (name, value) in http.allHeaderFields {
                head.headers.append((name: "\(name)", value: "\(value)"))
            }
        }
        entry?.head?.resume(returning: head)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let body = pending.withLock { $0[dataTask.taskIdentifier]?.body }
        body?.append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let mapped = ProxyClientDelegate.map(error, url: entry.url)
            entry.head?.resume(throwing: mapped)
            entry.body.finish(mapped)
        } else {
            entry.head?.resume(
                throwing: ProxyError(.connectionFailed, url: entry.url, detail: "the transfer ended without a response")
            )
            entry.body.finish(nil)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let (count, url) = pending.withLock { table -> (Int, String) in
            guard var entry = table[task.taskIdentifier] else { return (Int.max, "") }
            entry.redirects += 1
            table[task.taskIdentifier] = entry
            return (entry.redirects, entry.url)
        }
        var refusal: ProxyError?
        if count > maxRedirects {
            refusal = ProxyError(.tooManyRedirects, url: url, detail: "more than \(maxRedirects) redirects")
        } else if let target = request.url {
            do {
                try policy.check(target, original: target.absoluteString)
            } catch {
                refusal = ProxyError(
                    .tooManyRedirects, url: url, detail: "redirect to \(target.absoluteString) refused: \(error.detail)"
                )
            }
        }
        guard let refusal else {
            completionHandler(request)
            return
        }
        completionHandler(nil)
        task.cancel()
        let entry = pending.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        entry?.head?.resume(throwing: refusal)
        entry?.body.finish(refusal)
    }

    static func map(_ error: any Error, url: String) -> ProxyError {
        guard let urlError = error as? URLError else {
            return ProxyError(.connectionFailed, url: url, detail: "\(error)")
        }
        switch urlError.code {
        case .timedOut: return ProxyError(.timedOut, url: url, detail: "no response within the timeout")
        case .httpTooManyRedirects: return ProxyError(.tooManyRedirects, url: url, detail: "too many redirects")
        case .cancelled: return ProxyError(.connectionFailed, url: url, detail: "cancelled")
        default:
            return ProxyError(.connectionFailed, url: url, detail: urlError.localizedDescription)
        }
    }
}
