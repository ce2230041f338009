import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// GET over URLSession with streamed bodies: the caller's headers on every request, a stall timeout, bounded
/// redirects whose every target is checked against the upstream policy, and flow control (the transfer is
/// suspended while more than a few MiB wait for the consumer).
final class ProxyHTTPClient: Sendable {
    private let session: URLSession
    private let delegate: ProxyClientDelegate
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
    }

    deinit { session.invalidateAndCancel() }

    /// Sends a GET; returns when the response head arrives.
    func send(_ urlString: String, headers: [(name: String, value: String)]) async throws(ProxyError) -> RemoteStream {
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
        let (body, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let flow = FlowControl(task: task)
        continuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        let head: RemoteHead
        do {
            head = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<RemoteHead, any Error>) in
                    delegate.register(identifier, url: urlString, head: waiter, body: continuation, flow: flow)
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
        // Each chunk the consumer takes is reported, so a suspended transfer resumes.
        let counted = AsyncThrowingStream<[UInt8], any Error> { out in
            let reader = Task {
                do {
                    for try await chunk in body {
                        flow.consumed(chunk.count)
                        out.yield(chunk)
                    }
                    out.finish()
                } catch {
                    out.finish(throwing: error)
                }
            }
            out.onTermination = { termination in
                if case .cancelled = termination {
                    reader.cancel()
                    task.cancel()
                }
            }
        }
        return RemoteStream(head: head, body: counted, cancelTask: { task.cancel() })
    }
}

/// Suspends a transfer while too much of its body waits for the consumer.
final class FlowControl: Sendable {
    private struct State {
        var buffered = 0
        var suspended = false
    }
    private let state = Mutex(State())
    private let task: URLSessionDataTask
    static let highWater = 8 << 20
    static let lowWater = 2 << 20

    init(task: URLSessionDataTask) { self.task = task }

    func received(_ count: Int) {
        let suspend = state.withLock { s -> Bool in
            s.buffered += count
            if !s.suspended, s.buffered > FlowControl.highWater {
                s.suspended = true
                return true
            }
            return false
        }
        if suspend { task.suspend() }
    }

    func consumed(_ count: Int) {
        let resume = state.withLock { s -> Bool in
            s.buffered -= count
            if s.suspended, s.buffered < FlowControl.lowWater {
                s.suspended = false
                return true
            }
            return false
        }
        if resume { task.resume() }
    }
}

/// Routes URLSession's delegate callbacks to the waiting request by task identifier.
final class ProxyClientDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Pending: Sendable {
        var url: String
        var head: CheckedContinuation<RemoteHead, any Error>?
        var body: AsyncThrowingStream<[UInt8], any Error>.Continuation
        var flow: FlowControl
        var redirects = 0
    }
    private let pending = Mutex<[Int: Pending]>([:])
    private let maxRedirects: Int
    private let policy: UpstreamPolicy

    init(maxRedirects: Int, policy: UpstreamPolicy) {
        self.maxRedirects = maxRedirects
        self.policy = policy
    }

    func register(
        _ identifier: Int, url: String, head: CheckedContinuation<RemoteHead, any Error>,
        body: AsyncThrowingStream<[UInt8], any Error>.Continuation, flow: FlowControl
    ) {
        pending.withLock { $0[identifier] = Pending(url: url, head: head, body: body, flow: flow) }
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
        let entry = pending.withLock { $0[dataTask.taskIdentifier] }
        guard let entry else { return }
        entry.flow.received(data.count)
        entry.body.yield([UInt8](data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let mapped = ProxyClientDelegate.map(error, url: entry.url)
            entry.head?.resume(throwing: mapped)
            entry.body.finish(throwing: mapped)
        } else {
            entry.head?.resume(
                throwing: ProxyError(.connectionFailed, url: entry.url, detail: "the transfer ended without a response")
            )
            entry.body.finish()
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
        entry?.body.finish(throwing: refusal)
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
