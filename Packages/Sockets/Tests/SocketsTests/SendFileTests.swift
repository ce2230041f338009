import FileRange
import Testing

@testable import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Moved from LoopbackHTTPTests/PlatformTests.swift with sendfile itself (every assertion kept).

/// The platform-neutral rules around sendfile, driven by made-up calls with Darwin's semantics (`len` counts bytes
/// sent even when the call fails), which Linux never produces.
@Suite("sendfile rules")
struct SendFileTests {
    /// Replays `outcomes` and records the (offset, count) of every call.
    final class Script {
        var outcomes: [SendFileCall]
        var calls: [(UInt64, Int)] = []
        init(_ outcomes: [SendFileCall]) { self.outcomes = outcomes }
        func call(_ offset: UInt64, _ count: Int) -> SendFileCall {
            calls.append((offset, count))
            return outcomes.isEmpty ? SendFileCall(sent: 0, error: EAGAIN) : outcomes.removeFirst()
        }
    }

    @Test func interruptedCallWithBytesSentResumesAfterThem() throws {
        let script = Script([SendFileCall(sent: 100, error: EINTR), SendFileCall(sent: 900, error: nil)])
        let result = try SendFile.run(offset: 5000, count: 1000, script.call)
        guard case .done(let sent) = result else {
            Issue.record("expected bytes sent, got \(result)")
            return
        }
        #expect(sent == 1000)
        #expect(script.calls.map(\.0) == [5000, 5100])
        #expect(script.calls.map(\.1) == [1000, 900])
    }

    @Test func interruptedCallWithNothingSentIsRetried() throws {
        let script = Script([SendFileCall(sent: 0, error: EINTR), SendFileCall(sent: 64, error: nil)])
        let result = try SendFile.run(offset: 0, count: 64, script.call)
        guard case .done(64) = result else {
            Issue.record("expected 64 bytes, got \(result)")
            return
        }
        #expect(script.calls.count == 2)
    }

    @Test func wouldBlockAfterSomeBytesReportsThem() throws {
        let script = Script([SendFileCall(sent: 4096, error: EAGAIN)])
        guard case .done(4096) = try SendFile.run(offset: 0, count: 1 << 20, script.call) else {
            Issue.record("expected the 4096 bytes sent before EAGAIN")
            return
        }
        let empty = Script([SendFileCall(sent: 0, error: EAGAIN)])
        guard case .wouldBlock = try SendFile.run(offset: 0, count: 1 << 20, empty.call) else {
            Issue.record("expected wouldBlock")
            return
        }
    }

    @Test func interruptedAfterEverythingWasSentIsDone() throws {
        let script = Script([SendFileCall(sent: 10, error: EINTR)])
        guard case .done(10) = try SendFile.run(offset: 0, count: 10, script.call) else {
            Issue.record("expected 10")
            return
        }
        #expect(script.calls.count == 1)
    }

    @Test func unsupportedFilesFallBackToCopying() {
        for code in [ENOTSUP, EOPNOTSUPP, EINVAL, ENOSYS] {
            let script = Script([SendFileCall(sent: 0, error: code)])
            #expect(throws: Errno(rawValue: code)) { try SendFile.run(offset: 0, count: 10, script.call) }
            #expect(SendFile.isUnsupported(Errno(rawValue: code)), "errno \(code)")
        }
        #expect(!SendFile.isUnsupported(.brokenPipe))
        #expect(!SendFile.isUnsupported(.connectionReset))
    }

    @Test func aFailureAfterSomeBytesReportsTheBytesFirst() throws {
        let script = Script([SendFileCall(sent: 7, error: EPIPE)])
        guard case .done(7) = try SendFile.run(offset: 0, count: 10, script.call) else {
            Issue.record("expected 7")
            return
        }
    }

    /// A sender that reports more than it was asked for cannot push the count past the request.
    @Test func overReportedBytesAreCapped() throws {
        let script = Script([SendFileCall(sent: 50, error: nil)])
        guard case .done(10) = try SendFile.run(offset: 0, count: 10, script.call) else {
            Issue.record("expected 10")
            return
        }
    }
}
