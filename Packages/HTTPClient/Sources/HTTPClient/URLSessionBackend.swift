import FileRange
import Foundation
import HTTPWire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The https side of ``HTTPClient`` (and everything when an upstream proxy is set): URLSession with streamed
/// bodies, a stall timeout, no redirects of its own (the client's one redirect loop follows them, checking each
/// target), and its errors mapped to ``HTTPClientError`` codes. The only place the toolkit uses URLSession.
final class URLSessionBackend: Sendable {
    private let session: URLSession
    private let delegate: SessionDelegate

    init(configuration: HTTPClientConfiguration) {
        let settings = URLSessionConfiguration.ephemeral
        settings.timeoutIntervalForRequest = configuration.idleTimeout
        settings.timeoutIntervalForResource = 7 * 86_400
        settings.httpMaximumConnectionsPerHost = configuration.maxConnectionsPerHost
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.urlCache = nil
        settings.httpCookieStorage = nil
        settings.httpShouldSetCookies = false
        if let proxy = configuration.upstreamProxy {
            let parts = proxy.split(separator: ":")
            if parts.count == 2, let port = Int(parts[1]) {
                settings.connectionProxyDictionary = [
                    "HTTPEnable": 1, "HTTPProxy": String(parts[0]), "HTTPPort": port,
                    "HTTPSEnable": 1, "HTTPSProxy": String(parts[0]), "HTTPSPort": port,
                ]
            }
        }
        let delegate = SessionDelegate()
        self.delegate = delegate
        self.session = URLSession(configuration: settings, delegate: delegate, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends `request`; returns at its response head. With `bodyDeadline`, the body ends at it with
    /// ``HTTPClientError/Code/timedOut`` (the task is cancelled) however slowly the server trickles.
    func send(_ request: HTTPClientRequest, bodyDeadline: Deadline? = nil) async throws -> HTTPClientResponse {
        guard let url = URL(string: request.url) else {
            throw HTTPClientError(.invalidURL, "the URL cannot be parsed", url: request.url)
        }
        try Task.checkCancellation()
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headers where !HTTPClient.isOwned(field.name) {
            guard field.value.utf8.allSatisfy({ $0 != 0x0D && $0 != 0x0A && $0 != 0 }) else { continue }
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        // URLSession would otherwise ask for gzip and hide the real length of media bodies.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let task = session.dataTask(with: urlRequest)
        let identifier = task.taskIdentifier
        let (body, bodyContinuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let urlText = request.url
        if let bodyDeadline {
            // Past the deadline the body (or a head still awaited) fails, and the transfer stops: on FileRange's alarm
            // thread, which no busy cooperative thread delays. A transfer that ended before is no longer pending,
            // and its task is gone or finished: the alarm then does nothing.
            Alarms.shared.schedule(at: bodyDeadline.end) { [delegate, weak task] in
                delegate.expire(identifier, with: bodyDeadline.error.at(urlText))
                task?.cancel()
            }
        }
        bodyContinuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (head: CheckedContinuation<HeadResult, any Error>) in
                delegate.register(identifier, url: urlText, head: head, body: bodyContinuation)
                task.resume()
                // A task cancelled before it was resumed may never report back: cancel it again now it runs.
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            task.cancel()
        }.response(body: body)
    }
}

/// The response head a delegate callback delivers.
struct HeadResult: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var url: String?
    func response(body: AsyncThrowingStream<[UInt8], any Error>) -> HTTPClientResponse {
        HTTPClientResponse(status: status, headers: headers, body: body, url: url)
    }
}

/// Routes URLSession's delegate callbacks to the waiting request by task identifier.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Pending: Sendable {
        var url: String
        var head: CheckedContinuation<HeadResult, any Error>?
        var body: AsyncThrowingStream<[UInt8], any Error>.Continuation
    }
    private let pending = LockedValue<[Int: Pending]>([:])

    func register(
        _ identifier: Int, url: String, head: CheckedContinuation<HeadResult, any Error>,
        body: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) {
        pending.withLock { $0[identifier] = Pending(url: url, head: head, body: body) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        var result = HeadResult(status: 0, headers: [:], url: response.url?.absoluteString)
        if let http = response as? HTTPURLResponse {
            result.status = http.statusCode
            for (name, value) in http.allHeaderFields {
                result.headers.add(name: "\(name)", value: "\(value)")
            }
        }
        let head = pending.withLock { table -> CheckedContinuation<HeadResult, any Error>? in
            let head = table[dataTask.taskIdentifier]?.head
            table[dataTask.taskIdentifier]?.head = nil
            return head
        }
        head?.resume(returning: result)
        completionHandler(.allow)
    }

    /// Ends a request's head wait and body with `error` (its deadline passed), if it is still pending.
    func expire(_ identifier: Int, with error: HTTPClientError) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: identifier) }) else { return }
        entry.head?.resume(throwing: error)
        entry.body.finish(throwing: error)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let body = pending.withLock { $0[dataTask.taskIdentifier]?.body }
        body?.yield([UInt8](data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let mapped = Self.map(error, url: entry.url)
            entry.head?.resume(throwing: mapped)
            entry.body.finish(throwing: mapped)
        } else {
            entry.head?.resume(
                throwing: HTTPClientError(.other, "the transfer ended without a response", url: entry.url))
            entry.body.finish()
        }
    }

    /// Redirects are not followed here: the 3xx answer goes back to the client's own redirect loop.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    static func map(_ error: any Error, url: String) -> any Error {
        guard let urlError = error as? URLError else {
            return HTTPClientError(.other, "\(error)", url: url)
        }
        let text = urlError.localizedDescription
        switch urlError.code {
        case .cancelled: return CancellationError()
        case .timedOut: return HTTPClientError(.timedOut, "no data for the idle timeout", url: url)
        case .networkConnectionLost: return HTTPClientError(.connectionReset, "the connection was lost", url: url)
        case .cannotConnectToHost: return HTTPClientError(.connectionRefused, "cannot connect: \(text)", url: url)
        case .cannotFindHost, .dnsLookupFailed: return HTTPClientError(.noSuchHost, "no such host", url: url)
        case .notConnectedToInternet: return HTTPClientError(.connectionFailed, text, url: url)
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            return HTTPClientError(.tlsFailed, "TLS failed: \(text)", url: url)
        case .httpTooManyRedirects: return HTTPClientError(.tooManyRedirects, "too many redirects", url: url)
        default: return HTTPClientError(.other, "\(urlError.code.rawValue): \(text)", url: url)
        }
    }
}
