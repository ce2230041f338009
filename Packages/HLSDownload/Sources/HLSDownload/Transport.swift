/// One HTTP GET the download manager sends.
public struct TransportRequest: Hashable, Sendable {
    public var url: String
    /// The caller's headers, User-Agent, and Range/If-Range when resuming, in order.
    public var headers: [HTTPHeaderField]

    public init(url: String, headers: [HTTPHeaderField]) {
        self.url = url
        self.headers = headers
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// The head of an HTTP response and its body as a stream of chunks.
public struct TransportResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeaderField]
    /// The body in chunks; it ends normally when the body is complete, or throws when the transfer failed.
    public var body: AsyncThrowingStream<[UInt8], any Error>
    /// The same body as the connection's socket, for a relay that moves the bytes in the kernel instead of
    /// reading ``body``; set by ``SocketTransport`` for a body of known length.
    public var socketBody: SocketBody?
    /// The URL that answered, after the redirects the transport followed; nil when the transport does not know it.
    public var url: String?

    public init(
        status: Int, headers: [HTTPHeaderField], body: AsyncThrowingStream<[UInt8], any Error>,
        socketBody: SocketBody? = nil, url: String? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.socketBody = socketBody
        self.url = url
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// Content-Length as a number, when present and valid.
    public var contentLength: UInt64? {
        header("Content-Length").flatMap { UInt64($0.trimmingSpaces) }
    }
}

/// A response read whole (see ``SocketTransport/fetch(_:maxBytes:)``).
public struct WholeResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeaderField]
    public var body: [UInt8]
    /// The URL that answered, after the redirects the transport followed; nil when the transport does not know it.
    public var url: String?

    public init(status: Int, headers: [HTTPHeaderField], body: [UInt8], url: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// Collects a streamed response, failing past `maxBytes`.
    public init(collecting response: TransportResponse, maxBytes: Int) async throws {
        var body: [UInt8] = []
        for try await chunk in response.body {
            body += chunk
            guard body.count <= maxBytes else {
                throw TransportError(.tooLarge, "the body is longer than \(maxBytes) bytes")
            }
        }
        self.init(status: response.status, headers: response.headers, body: body, url: response.url)
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// A failure below HTTP: the connection could not be made or broke, or the transfer stalled.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case connectionFailed, connectionReset, timedOut, tooManyRedirects, invalidURL, tooLarge, addressRefused,
                other
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let connectionFailed = Code(.connectionFailed)
        public static let connectionReset = Code(.connectionReset)
        /// Nothing arrived for the stall timeout.
        public static let timedOut = Code(.timedOut)
        public static let tooManyRedirects = Code(.tooManyRedirects)
        public static let invalidURL = Code(.invalidURL)
        /// A body longer than the caller's cap.
        public static let tooLarge = Code(.tooLarge)
        /// Every address the host resolved to was refused by the transport's address check.
        public static let addressRefused = Code(.addressRefused)
        public static let other = Code(.other)
        public var description: String { value.rawValue }

        /// Whether retrying may help.
        public var isTransient: Bool {
            switch value {
            case .connectionFailed, .connectionReset, .timedOut, .other: true
            case .tooManyRedirects, .invalidURL, .tooLarge, .addressRefused: false
            }
        }
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code): \(message)" }
}

/// The HTTP layer the download manager uses; ``URLSessionTransport`` in apps, a fake in tests.
public protocol DownloadTransport: Sendable {
    /// Sends a GET and returns once the response head arrived. Cancelling the calling task, or dropping the
    /// body stream, cancels the transfer.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// Time for the download manager: the current time and sleeping, injectable so tests never sleep.
public protocol DownloadClock: Sendable {
    /// Seconds since an arbitrary fixed point, increasing.
    func now() -> Double
    /// Sleeps `seconds`; throws when the calling task is cancelled.
    func sleep(seconds: Double) async throws
    /// A number in 0...1 used to jitter backoff delays.
    func jitter() -> Double
}

/// The real clock: `ContinuousClock` and the system random generator.
public struct SystemDownloadClock: DownloadClock {
    private let start = ContinuousClock.now
    public init() {}
    public func now() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(for: .milliseconds(Int64(min(seconds, 86_400) * 1000)))
    }
    public func jitter() -> Double { Double.random(in: 0...1) }
}

extension String {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
