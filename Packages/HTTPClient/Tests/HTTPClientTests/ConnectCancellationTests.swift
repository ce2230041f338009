import FileRange
import HTTPWire
import TestSupport
import Testing

@testable import HTTPClient

/// Connecting honours the calling task's cancellation: the client's sockets connect without blocking and look at
/// the cancellation between short waits, so a peer that never answers holds a cancelled request for no longer
/// than one of them.
@Suite("Connect cancellation")
struct ConnectCancellationTests {
    @Test func aRequestCancelledWhileConnectingEndsAtOnceWithCancellationError() async throws {
        let listener = try #require(UnansweredListener(), "the accept queue never filled")
        var configuration = HTTPClientConfiguration()
        configuration.addressPolicy = .any
        configuration.connectTimeout = 60
        configuration.retry = RetryPolicy(maxAttempts: 1, baseDelay: 0.01, maxDelay: 0.05, maxRetryAfter: 0.05)
        let client = HTTPClient(configuration: configuration)
        let clock = ContinuousClock()
        let request = Task {
            try await client.fetch(HTTPClientRequest(url: "http://127.0.0.1:\(listener.port)/never"), maxBytes: 1024)
        }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = clock.now
        request.cancel()
        let outcome = await request.result
        let after = clock.now - cancelled
        switch outcome {
        case .success(let response):
            Issue.record("a request to a listener that never answers succeeded: \(response.status)")
        case .failure(let error):
            #expect(error is CancellationError, "\(error)")
        }
        #expect(after < .seconds(1), "the request ended \(after) after its cancellation")
    }

    /// Without a cancellation the same connect ends with the connect timeout, as a connection failure.
    @Test func aConnectThatIsNeverAnsweredTimesOut() async throws {
        let listener = try #require(UnansweredListener(), "the accept queue never filled")
        var configuration = HTTPClientConfiguration()
        configuration.addressPolicy = .any
        configuration.connectTimeout = 0.3
        configuration.retry = RetryPolicy(maxAttempts: 1, baseDelay: 0.01, maxDelay: 0.05, maxRetryAfter: 0.05)
        let client = HTTPClient(configuration: configuration)
        do {
            _ = try await client.get("http://127.0.0.1:\(listener.port)/never", maxBytes: 1024)
            Issue.record("a request to a listener that never answers succeeded")
        } catch let error as HTTPClientError {
            #expect(error.code == .connectionFailed, "\(error)")
        }
    }
}
