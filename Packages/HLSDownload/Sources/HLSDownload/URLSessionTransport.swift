import FileRange
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP layer over `URLSession`: bodies are streamed in chunks as they arrive, a transfer that receives
/// nothing for the stall timeout fails with ``TransportError/Code/timedOut``, redirects are bounded and must stay
/// on http(s).
public struct URLSessionTransport: DownloadTransport {
    private let session: URLSession
    private let delegate: SessionDelegate

    /// A transport whose transfers time out after `stallTimeout` seconds without data, following at most
    /// `maxRedirects` redirects, with up to `maxConnectionsPerHost` connections per host.
    public init(stallTimeout: Double = 20, maxRedirects: Int = 5, maxConnectionsPerHost: Int = 16) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = stallTimeout
        configuration.timeoutIntervalForResource = 7 * 86_400
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let delegate = SessionDelegate(maxRedirects: maxRedirects)
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            throw TransportError(.invalidURL, "not an http(s) URL: \(request.url)")
        }
        try Task.checkCancellation()
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "GET"
        // URLSession would otherwise ask for gzip and hide the real length of media bodies.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        for field in request.headers {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        let task = session.dataTask(with: urlRequest)
        let identifier = task.taskIdentifier
        let (body, bodyContinuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        bodyContinuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (head: CheckedContinuation<HeadResult, any Error>) in
                delegate.register(identifier, head: head, body: bodyContinuation)
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
    var headers: [HTTPHeaderField]
    /// The URL that answered, after the redirects URLSession followed.
    var url: String?
    func response(body: AsyncThrowingStream<[UInt8], any Error>) -> TransportResponse {
        TransportResponse(status: status, headers: headers, body: body, url: url)
    }
}

/// Routes URLSession's delegate callbacks to the waiting request by task identifier.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Pending: Sendable {
        var head: CheckedContinuation<HeadResult, any Error>?
        var body: AsyncThrowingStream<[UInt8], any Error>.Continuation
        var redirects = 0
    }
    private let pending = LockedValue<[Int: Pending]>([:])
    private let maxRedirects: Int

    init(maxRedirects: Int) {
        self.maxRedirects = maxRedirects
    }

    func register(
        _ identifier: Int, head: CheckedContinuation<HeadResult, any Error>,
        body: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) {
        pending.withLock { $0[identifier] = Pending(head: head, body: body) }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        var result = HeadResult(status: 0, headers: [], url: response.url?.absoluteString)
        if let http = response as? HTTPURLResponse {
            result.status = http.statusCode
            for (name, value) in http.allHeaderFields {
                result.headers.append(HTTPHeaderField(name: "\(name)", value: "\(value)"))
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

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let body = pending.withLock { $0[dataTask.taskIdentifier]?.body }
        body?.yield([UInt8](data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let mapped = Self.map(error)
            entry.head?.resume(throwing: mapped)
            entry.body.finish(throwing: mapped)
        } else {
            entry.head?.resume(throwing: TransportError(.other, "the transfer ended without a response"))
            entry.body.finish()
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let scheme = request.url?.scheme?.lowercased()
        let allowed = pending.withLock { table -> Bool in
            guard var entry = table[task.taskIdentifier] else { return false }
            entry.redirects += 1
            table[task.taskIdentifier] = entry
            return entry.redirects <= maxRedirects
        }
        guard allowed, scheme == "http" || scheme == "https" else {
            completionHandler(nil)
            task.cancel()
            let entry = pending.withLock { $0.removeValue(forKey: task.taskIdentifier) }
            let error = TransportError(.tooManyRedirects, "redirect refused at \(response.url?.absoluteString ?? "?")")
            entry?.head?.resume(throwing: error)
            entry?.body.finish(throwing: error)
            return
        }
        completionHandler(request)
    }

    static func map(_ error: any Error) -> any Error {
        guard let urlError = error as? URLError else {
            return TransportError(.other, "\(error)")
        }
        switch urlError.code {
        case .cancelled: return CancellationError()
        case .timedOut: return TransportError(.timedOut, "no data for the stall timeout")
        case .networkConnectionLost: return TransportError(.connectionReset, "the connection was lost")
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            return TransportError(.connectionFailed, urlError.localizedDescription)
        case .httpTooManyRedirects: return TransportError(.tooManyRedirects, "too many redirects")
        default: return TransportError(.other, "\(urlError.code.rawValue): \(urlError.localizedDescription)")
        }
    }
}
