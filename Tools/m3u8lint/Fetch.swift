// Fetching http(s) inputs through the toolkit's one client (HTTPClient: sockets for http://, URLSession for
// https://). Redirects are bounded, one deadline covers the whole fetch, and only answers that may pass on a second
// try are retried, with the client's retry policy.
import CLIToolkit
import FileRange
import HTTPClient

enum Fetch {
    /// Redirects followed before the fetch fails.
    static let maxRedirects = 5
    /// Tries of one URL: the first and at most two retries, all within the one deadline.
    static let maxAttempts = 3
    /// The default deadline for a whole fetch, in seconds (`--timeout`): the toolkit's first-playlist-fetch deadline,
    /// the one `tsplayer download` and the proxies use (8 s).
    static let defaultTimeout = HTTPClientConfiguration().firstFetchTimeout

    /// Fetches `url` whole: at most `maxBytes` of body, redirects followed, everything within `timeout` seconds.
    /// Returns the body and the URL after redirects. Every error names the URL, and an HTTP failure its status
    /// in words (`404 Not Found`).
    static func fetch(_ url: String, maxBytes: Int, timeout: Double) async throws(InputError) -> (
        body: [UInt8], effectiveURL: String
    ) {
        var configuration = HTTPClientConfiguration()
        configuration.maxRedirects = maxRedirects
        configuration.retry = RetryPolicy(maxAttempts: maxAttempts, baseDelay: 0.25, maxDelay: 2)
        // The deadline ends a silent fetch; the idle timeout only backs it up.
        configuration.idleTimeout = timeout + 1
        configuration.connectTimeout = timeout + 1
        configuration.maxConnectionsPerHost = 1
        let client = HTTPClient(configuration: configuration)
        let response: HTTPWholeResponse
        do {
            // The client's deadline (`timeout`) ends a silent or slow fetch.
            response = try await client.get(
                url, headers: ["User-Agent": userAgent], maxBytes: maxBytes, timeout: timeout,
                onRetry: { Output.log(retryLine($0)) })
        } catch let error as HTTPClientError {
            throw .unreadable("\(url): \(message(error, maxBytes: maxBytes, timeout: timeout))")
        } catch {
            throw .unreadable("\(url): \(error)")
        }
        return (response.body, response.url ?? url)
    }

    static let userAgent = "m3u8lint"

    /// A retry about to happen, shown on stderr as it happens: `retrying in 2 s (3/3): 503 Service Unavailable (URL)`.
    static func retryLine(_ event: RetryEvent) -> String {
        let delay =
            event.delay >= 10 || event.delay == event.delay.rounded()
            ? seconds(event.delay.rounded()) : "\(Double(Int(event.delay * 10)) / 10) s"
        return "retrying in \(delay) (\(event.attempt)/\(event.of)): \(event.reasonText) (\(event.url))"
    }

    private static func message(_ error: HTTPClientError, maxBytes: Int, timeout: Double) -> String {
        switch error.code {
        case .tooLarge: "larger than \(maxBytes) bytes"
        case .tooManyRedirects: "more than \(maxRedirects) redirects, or a redirect to a URL that is not http(s)"
        case .timedOut: "no complete answer within \(seconds(timeout)) (--timeout)"
        default: error.message
        }
    }

    /// `10 s`, `0.5 s`.
    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e9 ? "\(Int(value)) s" : "\(value) s"
    }
}
