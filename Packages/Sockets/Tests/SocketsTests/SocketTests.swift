import FileRange
import Sockets
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connected pair over loopback: a listener's accepted socket and the client that connected to it.
private func connectedPair() throws -> (client: Socket, server: Socket, listener: Socket) {
    let listener = try Socket.listening(host: "127.0.0.1", port: 0, backlog: 8)
    let client = try Socket.tcp(family: Socket.ipv4Family)
    var address = LoopbackTCP.address(port: listener.localPort)
    let outcome = withUnsafePointer(to: &address) {
        client.connect(
            to: $0, length: UInt32(MemoryLayout<sockaddr_in>.size), timeout: 5, isCancelled: { false })
    }
    #expect(outcome == .connected)
    var accepted: Socket.Accepted?
    for _ in 0..<500 where accepted == nil {
        // blocks: synchronous socket tests that keep their own thread (a signal mask), a few milliseconds
        if case .done(let connection) = try listener.accept() { accepted = connection } else { usleep(2000) }
    }
    let server = try #require(accepted).socket
    return (client, server, listener)
}

@Suite("Socket flags")
struct SocketFlagTests {
    @Test func everySocketIsCloseOnExec() throws {
        let blocking = try Socket.tcp(family: Socket.ipv4Family, nonBlocking: false)
        defer { blocking.close() }
        #expect(blocking.isCloseOnExec)
        #expect(!blocking.isNonBlocking)

        let (client, server, listener) = try connectedPair()
        defer { for socket in [client, server, listener] { socket.close() } }
        for socket in [client, server, listener] {
            #expect(socket.isCloseOnExec, "\(socket) lacks FD_CLOEXEC")
            #expect(socket.isNonBlocking, "\(socket) blocks")
        }
    }

    /// A write to a peer that left throws EPIPE or ECONNRESET and raises no SIGPIPE. SIGPIPE is blocked on this
    /// (synchronous) test's thread while it writes, so a signal the write raised would be left pending, where
    /// `sigpending` finds it; the default action would have ended the test process.
    @Test func aWriteToAClosedPeerRaisesNoSIGPIPE() throws {
        let (client, server, listener) = try connectedPair()
        defer { for socket in [client, listener] { socket.close() } }
        server.close()
        // blocks: synchronous socket tests that keep their own thread (a signal mask), a few milliseconds
        usleep(20_000)

        var block = sigset_t()
        var previous = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        #expect(pthread_sigmask(SIG_BLOCK, &block, &previous) == 0)
        var failure: Errno?
        let bytes = [UInt8](repeating: 0x47, count: 64 << 10)
        for _ in 0..<100 where failure == nil {
            do {
                _ = try bytes.withUnsafeBytes { (raw) throws(Errno) in
                    try client.send(raw.baseAddress!, count: raw.count)
                }
            } catch let error as Errno {
                failure = error
            } catch {
                Issue.record("\(error)")
            }
            // blocks: synchronous socket tests that keep their own thread (a signal mask), a few milliseconds
            usleep(1000)
        }
        var pending = sigset_t()
        sigemptyset(&pending)
        sigpending(&pending)
        let raised = sigismember(&pending, SIGPIPE) == 1
        if raised {
            var taken: Int32 = 0
            sigwait(&block, &taken)  // take it before unblocking, so that it does not end the process
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        #expect(!raised, "a send to a closed peer raised SIGPIPE")
        let error = try #require(failure, "a send to a closed peer never failed")
        #expect(error == .brokenPipe || error == .connectionReset, "\(error)")
    }
}

@Suite("Would block is a value")
struct WouldBlockTests {
    @Test func acceptReadAndWriteReportWouldBlock() throws {
        let (client, server, listener) = try connectedPair()
        defer { for socket in [client, server, listener] { socket.close() } }
        #expect(try listener.accept() == .wouldBlock)

        var buffer = [UInt8](repeating: 0, count: 1024)
        let nothing = try buffer.withUnsafeMutableBytes { (raw) throws(Errno) in
            try server.receive(into: raw.baseAddress!, count: raw.count)
        }
        #expect(nothing == .wouldBlock)

        // Fill the client's send buffer and the server's receive buffer: a send then would block.
        let chunk = [UInt8](repeating: 1, count: 256 << 10)
        var blocked = false
        for _ in 0..<10_000 where !blocked {
            let result = try chunk.withUnsafeBytes { (raw) throws(Errno) in
                try client.send(raw.baseAddress!, count: raw.count)
            }
            blocked = result == .wouldBlock
        }
        #expect(blocked, "sends never reported wouldBlock")

        // What was written arrives.
        let some = try buffer.withUnsafeMutableBytes { (raw) throws(Errno) in
            try server.receive(into: raw.baseAddress!, count: raw.count)
        }
        #expect(some == .done(1024))
        #expect(buffer.allSatisfy { $0 == 1 })
    }

    @Test func theSyscallHelperRetriesInterruptsAndReportsWouldBlock() throws {
        var calls = 0
        let value = try syscall { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(value == .done(7))
        #expect(calls == 3)
        #expect(
            try syscall { () -> Int32 in
                errno = EAGAIN
                return -1
            } == .wouldBlock)
        #expect(
            try syscall(connecting: true) { () -> Int32 in
                errno = EINPROGRESS
                return -1
            } == .wouldBlock)
        #expect(throws: Errno.inProgress) {
            try syscall { () -> Int32 in
                errno = EINPROGRESS
                return -1
            }
        }
        #expect(throws: Errno.connectionRefused) {
            try syscall { () -> Int32 in
                errno = ECONNREFUSED
                return -1
            }
        }
    }
}

@Suite("Connecting")
struct ConnectTests {
    private func connect(port: UInt16, timeout: Double, isCancelled: () -> Bool) throws -> Socket.ConnectOutcome {
        let socket = try Socket.tcp(family: Socket.ipv4Family)
        defer { socket.close() }
        var address = LoopbackTCP.address(port: port)
        return withUnsafePointer(to: &address) {
            socket.connect(
                to: $0, length: UInt32(MemoryLayout<sockaddr_in>.size), timeout: timeout, isCancelled: isCancelled)
        }
    }

    @Test func aClosedPortIsRefused() throws {
        #expect(
            try connect(port: LoopbackTCP.unusedPort(), timeout: 5, isCancelled: { false })
                == .failed(.connectionRefused))
    }

    @Test func aListenerThatNeverAnswersTimesOut() async throws {
        // A connect that waits in poll(2): on a thread of its own, not a cooperative one.
        try await blocking {
            let listener = try #require(UnansweredListener(), "the accept queue never filled")
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try connect(port: listener.port, timeout: 0.3, isCancelled: { false }) == .timedOut)
            #expect(clock.now - start >= .milliseconds(290))
            #expect(clock.now - start < .seconds(3))
        }
    }

    /// Cancelled 200 ms into a connect that would wait 60 s, the attempt ends within a few check intervals.
    @Test func aCancelledConnectEndsPromptly() async throws {
        // A connect that waits in poll(2): on a thread of its own, not a cooperative one.
        try await blocking {
            let listener = try #require(UnansweredListener(), "the accept queue never filled")
            let clock = ContinuousClock()
            let start = clock.now
            var cancelledAt: ContinuousClock.Instant?
            let outcome = try connect(port: listener.port, timeout: 60) {
                if cancelledAt == nil, clock.now - start >= .milliseconds(200) { cancelledAt = clock.now }
                return cancelledAt != nil
            }
            let ended = clock.now
            #expect(outcome == .cancelled)
            let after = ended - (cancelledAt ?? start)
            #expect(after < .milliseconds(500), "the connect ended \(after) after the cancellation")
            #expect(ended - start < .seconds(2))
        }
    }

    @Test func aCancellationBeforeTheStartConnectsNothing() throws {
        let listener = try Socket.listening(host: "127.0.0.1", port: 0, backlog: 4)
        defer { listener.close() }
        #expect(try connect(port: listener.localPort, timeout: 5, isCancelled: { true }) == .cancelled)
        #expect(try listener.accept() == .wouldBlock)
    }

    @Test func listeningAddressesAreChecked() {
        #expect(throws: SocketError.self) { try Socket.listening(host: "127.0.0.256", port: 0, backlog: 1) }
        do {
            _ = try Socket.listening(host: "not an address", port: 0, backlog: 1)
            Issue.record("a name was taken for a numeric address")
        } catch {
            #expect(error.code == .invalidAddress)
            #expect(error.address == "not an address:0")
        }
    }
}
