import HTTPWire

/// A failed request: an opaque ``Code``, the URL, the HTTP status when the server answered, and what happened in
/// words (never a type name), so that `description` can be shown to a user as it is.
public struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong (opaque, so that cases can be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case connectionRefused = "connection refused"
            case noSuchHost = "no such host"
            case connectionFailed = "connection failed"
            case connectionReset = "connection reset"
            case timedOut = "timed out"
            case tlsFailed = "TLS failure"
            case tooManyRedirects = "too many redirects"
            case invalidURL = "invalid URL"
            case tooLarge = "too large"
            case addressRefused = "address refused"
            case invalidResponse = "invalid response"
            case httpStatus = "HTTP error status"
            case other = "failed"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        /// Nothing listens on the port: reported at once, never retried.
        public static let connectionRefused = Code(.connectionRefused)
        /// The host name does not resolve: reported at once, never retried.
        public static let noSuchHost = Code(.noSuchHost)
        /// The connection could not be made for another reason (unreachable network, connect timeout).
        public static let connectionFailed = Code(.connectionFailed)
        /// The connection was lost in the middle of an exchange.
        public static let connectionReset = Code(.connectionReset)
        /// Nothing arrived for the idle timeout.
        public static let timedOut = Code(.timedOut)
        /// The TLS handshake or a certificate failed: never retried.
        public static let tlsFailed = Code(.tlsFailed)
        /// More redirects than allowed, or a redirect to a URL that is not http(s).
        public static let tooManyRedirects = Code(.tooManyRedirects)
        public static let invalidURL = Code(.invalidURL)
        /// A body longer than the caller's cap.
        public static let tooLarge = Code(.tooLarge)
        /// Every address the host resolved to was refused by the upstream-address policy.
        public static let addressRefused = Code(.addressRefused)
        /// The server's answer is not valid HTTP/1.1 (a damaged head or chunked body).
        public static let invalidResponse = Code(.invalidResponse)
        /// The server answered with an error status (``HTTPClientError/status``).
        public static let httpStatus = Code(.httpStatus)
        public static let other = Code(.other)
        public var description: String { value.rawValue }

        /// Whether retrying may help: a lost connection, a stall, a connect that failed for a reason other than a
        /// refusal or an unknown host, or a damaged answer. HTTP statuses are judged by ``HTTPClientError/isTransient``.
        public var isTransient: Bool {
            switch value {
            case .connectionFailed, .connectionReset, .timedOut, .invalidResponse, .other: true
            case .connectionRefused, .noSuchHost, .tlsFailed, .tooManyRedirects, .invalidURL, .tooLarge,
                .addressRefused, .httpStatus:
                false
            }
        }
    }

    public var code: Code
    /// What happened, in words (`connection refused`, `404 Not Found`).
    public var message: String
    /// The URL that failed (empty when the error is not about one URL).
    public var url: String
    /// The HTTP status, for ``Code/httpStatus``.
    public var status: Int?

    public init(_ code: Code, _ message: String, url: String = "", status: Int? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.status = status
    }

    /// The error for an HTTP status: the status in words (`404 Not Found`, `HTTP status 599`).
    public static func status(_ code: Int, url: String) -> HTTPClientError {
        HTTPClientError(.httpStatus, HTTPClientError.inWords(code), url: url, status: code)
    }

    /// `404 Not Found`, or `HTTP status 599` for a code with no standard name.
    public static func inWords(_ code: Int) -> String {
        let status = HTTPStatus(code: code)
        return status.reasonPhrase == "Status \(code)" ? "HTTP status \(code)" : status.description
    }

    /// Whether retrying may help: a transient code, or the statuses a busy or restarting server answers (408, 425,
    /// 429, 5xx); other 4xx answers are the request's fault and fail at once.
    public var isTransient: Bool {
        if code == .httpStatus, let status { return HTTPClientError.isTransientStatus(status) }
        return code.isTransient
    }

    /// 408, 425, 429 and 5xx.
    public static func isTransientStatus(_ status: Int) -> Bool {
        status == 408 || status == 425 || status == 429 || (500...599).contains(status)
    }

    /// The error with the URL it is about, when it has none yet.
    func at(_ url: String) -> HTTPClientError {
        var copy = self
        if copy.url.isEmpty { copy.url = url }
        return copy
    }

    public var description: String { url.isEmpty ? message : "\(url): \(message)" }
}
