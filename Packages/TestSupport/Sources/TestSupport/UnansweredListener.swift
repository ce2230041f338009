// A loopback listener that never answers a new connection: its accept queue is full and nothing accepts, so the
// kernel drops further SYNs and a connect waits (retransmitting) until its own timeout. Tests of connect
// cancellation and connect timeouts use it instead of a blackhole address, which a machine without a route
// refuses at once.
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

public final class UnansweredListener: @unchecked Sendable {
    /// The port whose connects hang.
    public let port: UInt16
    private let listener: Int32
    private let fillers: [Int32]

    /// A listener with a backlog of 0, and connections made to it until one is not answered within 200 ms; nil
    /// when the queue never filled (a kernel that answers every SYN).
    public init?() {
        let listener = LoopbackTCP.listener(backlog: 0)
        guard listener >= 0 else { return nil }
        var fillers: [Int32] = []
        var full = false
        for _ in 0..<64 {
            let fd = LoopbackTCP.socket()
            guard fd >= 0 else { break }
            fillers.append(fd)
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            if LoopbackTCP.connect(fd, port: LoopbackTCP.localPort(listener)) { continue }
            guard errno == EINPROGRESS else { break }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&entry, 1, 200) == 0 {
                full = true
                break
            }
        }
        guard full else {
            for fd in fillers { close(fd) }
            close(listener)
            return nil
        }
        self.port = LoopbackTCP.localPort(listener)
        self.listener = listener
        self.fillers = fillers
    }

    deinit {
        for fd in fillers { close(fd) }
        close(listener)
    }
}
