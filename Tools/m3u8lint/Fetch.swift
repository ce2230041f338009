// Fetching http(s) inputs through the toolkit's own client: HLSDownload's SocketTransport for http://, its
// URLSession transport for https://. Redirects are bounded, one deadline covers the whole fetch, and only answers
// that may pass on a second try are retried.
import Dispatch
import FileRange
import HLSDownload
import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum Fetch {
    /// Redirects followed before the fetch fails.
    static let maxRedirects = 5
    /// Tries of one URL: the first and at most two retries, all within the one deadline.
    static let maxAttempts = 3
    /// The default deadline for a whole fetch, in seconds (`--timeout`).
    static let defaultTimeout = 10.0

    /// One try's outcome: the response, or the message of a failure and whether another try may help.
    private enum Attempt: Sendable {
        case response(WholeResponse)
        case failed(String, transient: Bool)
    }

    /// Fetches `url` whole: at most `maxBytes` of body, redirects followed, everything within `timeout` seconds.
    /// Returns the body and the URL after redirects. Every error names the URL, and an HTTP failure its status
    /// in words (`404 Not Found`).
    static func fetch(_ url: String, maxBytes: Int, timeout: Double) throws(InputError) -> (
        body: [UInt8], effectiveURL: String
    ) {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(timeout * 1e9)
        var attempt = 1
        while true {
            let remaining = Double(deadline &- min(deadline, DispatchTime.now().uptimeNanoseconds)) / 1e9
            let outcome = once(url, maxBytes: maxBytes, seconds: remaining)
            var retryAfter = Double(attempt) * 0.25
            switch outcome {
            case nil:
                throw .unreadable("\(url): no complete answer within \(seconds(timeout)) (--timeout)")
            case .failed(let message, let transient):
                guard transient, attempt < maxAttempts, retryAfter < remaining else {
                    throw .unreadable("\(url): \(message)")
                }
            case .response(let response) where (200..<300).contains(response.status):
                return (response.body, response.url ?? url)
            case .response(let response):
                let status = inWords(response.status)
                let at = response.url.map { $0 == url ? "" : " (at \($0))" } ?? ""
                guard retriable(response.status), attempt < maxAttempts else {
                    throw .unreadable("\(url): \(status)\(at)")
                }
                if let value = response.header("Retry-After"), let asked = Double(value), asked >= 0 {
                    retryAfter = asked
                }
                guard retryAfter < remaining else { throw .unreadable("\(url): \(status)\(at)") }
            }
            pause(seconds: min(retryAfter, remaining))
            attempt += 1
        }
    }

    /// Sleeps (nanosleep, resumed after a signal), for any length a deadline allows.
    private static func pause(seconds: Double) {
        let whole = seconds.rounded(.down)
        var request = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        var left = timespec()
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
    }

    /// `404 Not Found`: the status with its name from LoopbackHTTP's table, or `HTTP status N` for one the table
    /// does not name (it answers those with `Status N`).
    static func inWords(_ code: Int) -> String {
        let status = HTTPStatus(code: code)
        return status.reasonPhrase == "Status \(code)" ? "HTTP status \(code)" : status.description
    }

    /// Whether an HTTP status may pass on a later try: 408, 429 and the 5xx answers of a busy or restarting
    /// server. Other 4xx answers are the request's fault and are never retried.
    static func retriable(_ status: Int) -> Bool {
        [408, 429, 500, 502, 503, 504].contains(status)
    }

    /// One try with its own deadline; nil when the deadline passed first. The blocking wait is on this (main)
    /// thread; the fetch runs on Swift's pool and is cancelled when the deadline passes.
    private static func once(_ url: String, maxBytes: Int, seconds: Double) -> Attempt? {
        guard seconds > 0 else { return nil }
        let stall = max(0.05, seconds)
        let transport = SocketTransport(
            stallTimeout: stall, maxRedirects: maxRedirects,
            fallback: URLSessionTransport(stallTimeout: stall, maxRedirects: maxRedirects, maxConnectionsPerHost: 1))
        let request = TransportRequest(url: url, headers: [HTTPHeaderField(name: "User-Agent", value: userAgent)])
        let outcome = LockedValue<Attempt?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            let attempt: Attempt
            do {
                attempt = .response(try await transport.fetch(request, maxBytes: maxBytes))
            } catch let error as TransportError {
                attempt = .failed(message(error, maxBytes: maxBytes), transient: transient(error.code))
            } catch {
                attempt = .failed("\(error)", transient: false)
            }
            outcome.withLock { $0 = attempt }
            done.signal()
        }
        guard done.wait(timeout: .now() + .nanoseconds(Int(clamping: UInt64(seconds * 1e9)))) == .success else {
            task.cancel()
            return nil
        }
        return outcome.withLock { $0 }
    }

    static let userAgent = "m3u8lint"

    /// Whether a failure below HTTP may pass on a later try. A refused or unresolvable host is reported at once,
    /// and a stall has used up the deadline.
    private static func transient(_ code: TransportError.Code) -> Bool {
        code.isTransient && code != .connectionFailed && code != .timedOut
    }

    private static func message(_ error: TransportError, maxBytes: Int) -> String {
        switch error.code {
        case .tooLarge: "larger than \(maxBytes) bytes"
        case .tooManyRedirects: "more than \(maxRedirects) redirects, or a redirect to a URL that is not http(s)"
        case .timedOut: "the server sent nothing for the whole timeout"
        default: error.message
        }
    }

    /// `10 s`, `0.5 s`.
    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e9 ? "\(Int(value)) s" : "\(value) s"
    }
}
