import Testing

@testable import HTTPWire

private let second: UInt64 = 1_000_000_000

private func makeRequest(_ version: HTTPVersion = .http1_1, connection: String? = nil) -> HTTPRequestHead {
    var headers: HTTPHeaders = ["Host": "localhost"]
    if let connection { headers.add(name: "Connection", value: connection) }
    return HTTPRequestHead(method: .get, target: "/", version: version, headers: headers)
}

private let timeouts = HTTPTimeouts(idle: .seconds(5), header: .seconds(2), writeStall: .seconds(3))

@Suite("Connection state machine (no I/O)")
struct StateMachineTests {
    @Test func keepAliveByDefaultForHTTP11() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        #expect(machine.state == .idle)
        #expect(machine.bytesReceived(now: 1) == .parse)
        #expect(machine.state == .readingHead)
        #expect(machine.headParsed(makeRequest(), now: 2) == .dispatch(keepAlive: true))
        #expect(machine.state == .responding)
        machine.responseHeadWritten(now: 3)
        #expect(machine.responseFinished(now: 4) == .parse)
        #expect(machine.state == .idle)
        #expect(machine.needMoreData(bufferedBytes: 0, now: 4) == .none)
        #expect(machine.state == .idle)
    }

    @Test func connectionCloseHonoured() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        #expect(machine.headParsed(makeRequest(connection: "close"), now: 0) == .dispatch(keepAlive: false))
        #expect(machine.responseFinished(now: 1) == .close)
        #expect(machine.state == .closed)
    }

    @Test func http10ClosesUnlessKeepAlive() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        #expect(machine.headParsed(makeRequest(.http1_0), now: 0) == .dispatch(keepAlive: false))
        #expect(machine.responseFinished(now: 1) == .close)

        var kept = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = kept.bytesReceived(now: 0)
        #expect(kept.headParsed(makeRequest(.http1_0, connection: "keep-alive"), now: 0) == .dispatch(keepAlive: true))
        #expect(kept.responseFinished(now: 1) == .parse)
    }

    @Test func pipelinedBytesWaitForTheResponse() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        _ = machine.headParsed(makeRequest(), now: 0)
        // More bytes arrive while responding: nothing is parsed until the response is written.
        #expect(machine.bytesReceived(now: 1) == .none)
        #expect(machine.responseFinished(now: 2) == .parse)
        // The buffered head is complete: parsed and dispatched in order.
        #expect(machine.headParsed(makeRequest(), now: 2) == .dispatch(keepAlive: true))
        // A partial third head is buffered after the second response.
        #expect(machine.responseFinished(now: 3) == .parse)
        #expect(machine.needMoreData(bufferedBytes: 10, now: 3) == .none)
        #expect(machine.state == .readingHead)
    }

    @Test func idleTimeoutCloses() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        #expect(machine.tick(now: 4 * second) == .none)
        #expect(machine.tick(now: 5 * second) == .close)
        #expect(machine.state == .closed)
    }

    @Test func idleTimeoutRestartsAfterEachResponse() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 4 * second)
        _ = machine.headParsed(makeRequest(), now: 4 * second)
        _ = machine.responseFinished(now: 4 * second)
        #expect(machine.tick(now: 8 * second) == .none)
        #expect(machine.tick(now: 9 * second) == .close)
    }

    @Test func slowHeaderGets408() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 1 * second)
        #expect(machine.needMoreData(bufferedBytes: 3, now: 1 * second) == .none)
        // Drip-feeding does not extend the header deadline.
        _ = machine.bytesReceived(now: 2 * second)
        #expect(machine.needMoreData(bufferedBytes: 4, now: 2 * second) == .none)
        #expect(machine.tick(now: 2 * second + 999) == .none)
        #expect(machine.tick(now: 3 * second) == .sendErrorAndClose(.requestTimeout))
        #expect(machine.state == .closed)
    }

    @Test func writeStallCloses() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        _ = machine.headParsed(makeRequest(), now: 0)
        machine.responseHeadWritten(now: 0)
        machine.wroteBytes(now: 2 * second)  // progress pushes the deadline
        #expect(machine.tick(now: 4 * second) == .none)
        #expect(machine.tick(now: 5 * second) == .close)
    }

    @Test func parseErrorAnswersThenCloses() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        #expect(machine.parseFailed(status: .badRequest) == .sendErrorAndClose(.badRequest))
        #expect(machine.state == .closed)
        #expect(!machine.keepAlive)
    }

    @Test func responseFailureAfterHeadCloses() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        _ = machine.headParsed(makeRequest(), now: 0)
        machine.responseHeadWritten(now: 0)
        #expect(machine.hasSentResponseHead)
        #expect(machine.responseFailed() == .close)
    }

    @Test func halfCloseFinishesTheResponse() {
        var machine = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = machine.bytesReceived(now: 0)
        _ = machine.headParsed(makeRequest(), now: 0)
        #expect(machine.readEOF() == .none)
        #expect(machine.responseFinished(now: 1) == .close)
    }

    @Test func eofWhileIdleOrMidHead() {
        var idle = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        #expect(idle.readEOF() == .close)
        var partial = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = partial.bytesReceived(now: 0)
        #expect(partial.readEOF() == .parse)
        #expect(partial.needMoreData(bufferedBytes: 5, now: 0) == .close)
    }

    @Test func gracefulShutdown() {
        var idle = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        #expect(idle.shutdown() == .close)

        var reading = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = reading.bytesReceived(now: 0)
        #expect(reading.shutdown() == .close)

        var busy = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = busy.bytesReceived(now: 0)
        _ = busy.headParsed(makeRequest(), now: 0)
        #expect(busy.shutdown() == .none)  // the response in flight finishes...
        #expect(!busy.keepAlive)  // ...with Connection: close
        #expect(busy.responseFinished(now: 1) == .close)

        // A request parsed after shutdown began is answered with close.
        var late = HTTPConnectionStateMachine(timeouts: timeouts, now: 0)
        _ = late.bytesReceived(now: 0)
        _ = late.headParsed(makeRequest(), now: 0)
        _ = late.shutdown()
        #expect(late.responseFinished(now: 1) == .close)
    }
}
