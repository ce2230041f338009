import FileRange

/// How transient failures are retried, the one policy of the toolkit: exponential backoff with jitter, honouring
/// Retry-After, a fixed number of attempts.
public struct RetryPolicy: Hashable, Sendable, Codable {
    /// Attempts per request, the first included.
    public var maxAttempts: Int = 8
    /// The delay before the first retry, in seconds.
    public var baseDelay: Double = 0.5
    /// The longest delay between attempts, in seconds (Retry-After is capped to `maxRetryAfter`).
    public var maxDelay: Double = 30
    /// The longest Retry-After honoured, in seconds.
    public var maxRetryAfter: Double = 120

    public init() {}

    public init(maxAttempts: Int, baseDelay: Double, maxDelay: Double = 30, maxRetryAfter: Double = 120) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// No retry at all.
    public static let none = RetryPolicy(maxAttempts: 1, baseDelay: 0)

    /// The delay before retry number `attempt` (1 for the first retry); `jitter` in 0...1 scales the delay
    /// between half and all of the exponential value; a Retry-After asks for at least that long.
    public func delay(attempt: Int, jitter: Double, retryAfter: Double?) -> Double {
        let exponent = min(max(attempt - 1, 0), 30)
        var full = baseDelay
        for _ in 0..<exponent where full < maxDelay { full *= 2 }
        full = min(maxDelay, full)
        var value = full * (0.5 + 0.5 * min(max(jitter, 0), 1))
        if let retryAfter, retryAfter.isFinite, retryAfter > 0 { value = max(value, min(retryAfter, maxRetryAfter)) }
        return value
    }

    /// What one attempt decided.
    public enum Step<Value: Sendable>: Sendable {
        /// Done: the value.
        case success(Value)
        /// A failure that a later attempt may cure, after at least `after` seconds when the server asked.
        case retry(after: Double?, failure: any Error)
    }

    /// Runs `attempt` until it succeeds or the attempts are used up, sleeping on `clock` between attempts and
    /// telling `onRetry` before each sleep. A thrown error that is an ``HTTPClientError`` with a transient code is
    /// retried too; any other thrown error ends at once. When the attempts are used up, `exhausted` makes the
    /// error thrown from the last failure and the number of attempts (the last failure itself by default). With a
    /// `deadline` (in `clock.now()` terms), a retry that could not start before it is not waited for: the last
    /// failure is reported at once.
    public func run<Value: Sendable>(
        url: String, clock: any RetryClock = SystemRetryClock(), onRetry: (@Sendable (RetryEvent) -> Void)? = nil,
        deadline: Double? = nil, exhausted: (any Error, Int) -> any Error = { error, _ in error },
        _ attempt: () async throws -> Step<Value>
    ) async throws -> Value {
        var number = 1
        let attempts = max(1, maxAttempts)
        while true {
            try Task.checkCancellation()
            let step: Step<Value>
            do {
                step = try await attempt()
            } catch let error as HTTPClientError where error.isTransient {
                step = .retry(after: nil, failure: error)
            }
            switch step {
            case .success(let value):
                return value
            case .retry(let after, let failure):
                guard number < attempts else { throw exhausted(failure, attempts) }
                let seconds = delay(attempt: number, jitter: clock.jitter(), retryAfter: after)
                if let deadline, clock.now() + seconds >= deadline { throw failure }
                number += 1
                onRetry?(RetryEvent(url: url, attempt: number, of: attempts, delay: seconds, reason: failure))
                try await clock.sleep(seconds: seconds)
            }
        }
    }
}

/// A retry about to happen, for a caller that shows it (`retrying in 2 s (3/8): connection reset`).
public struct RetryEvent: Sendable, CustomStringConvertible {
    public var url: String
    /// The attempt that follows the delay (2 for the first retry).
    public var attempt: Int
    /// The attempts allowed in all.
    public var of: Int
    /// Seconds until the attempt.
    public var delay: Double
    /// Why the previous attempt failed.
    public var reason: any Error

    /// The reason in words: an ``HTTPClientError``'s message, or the error's description.
    public var reasonText: String {
        if let error = reason as? HTTPClientError { return error.message }
        return "\(reason)"
    }

    public var description: String {
        "retrying in \(RetryEvent.seconds(delay)) (\(attempt)/\(of)): \(reasonText)"
    }

    /// `2 s`, `0.5 s`: how the toolkit words a delay or a deadline.
    public static func seconds(_ value: Double) -> String {
        if value >= 10 || value == value.rounded() { return "\(Int(value.rounded())) s" }
        return "\(Double(Int(value * 10)) / 10) s"
    }
}

/// Seconds a `Retry-After` field asks for (delta-seconds or an HTTP date), nil when absent or unreadable.
public func retryAfterSeconds(_ value: String?) -> Double? {
    guard let value else { return nil }
    var text = Substring(value)
    while text.first == " " || text.first == "\t" { text = text.dropFirst() }
    while text.last == " " || text.last == "\t" { text = text.dropLast() }
    if let seconds = UInt64(text) { return Double(seconds) }
    if let date = HTTPDate.parse(String(text)) {
        return Double(max(0, date.secondsSince1970 - HTTPDate.now().secondsSince1970))
    }
    return nil
}

/// Time for retries and rates: the current time and sleeping, injectable so tests never sleep.
public protocol RetryClock: Sendable {
    /// Seconds since an arbitrary fixed point, increasing.
    func now() -> Double
    /// Sleeps `seconds`; throws when the calling task is cancelled.
    func sleep(seconds: Double) async throws
    /// A number in 0...1 used to jitter backoff delays.
    func jitter() -> Double
}

/// The real clock: `ContinuousClock` and the system random generator.
public struct SystemRetryClock: RetryClock {
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
