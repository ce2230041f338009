import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The event loop: accepting connections, and pausing when the process runs out of descriptors.
extension EventLoopRunner {

    func acceptConnections(_ listener: Int32, hangup: Bool) {
        guard shutdownDeadline == nil, acceptPausedUntil == nil else { return }
        if shared.failedListeners.withLock({ $0.contains(listener) }) {
            poller.remove(listener)  // another loop found it dead
            return
        }
        if hangup, listenerHealth[listener, default: ListenerHealth()].hungUp() == .fail {
            failListener(listener, errno: nil)
            return
        }
        // A few per wake-up, like nginx without multi_accept: the listener is level-triggered and exclusive, so
        // the remaining connections wake a loop that is idle instead of piling onto the busy one.
        for _ in 0..<Self.acceptBatch {
            let accepted: Socket.Accepted?
            do {
                switch try Socket(descriptor: listener).accept() {
                case .done(let connection): accepted = connection
                case .wouldBlock: accepted = nil
                }
            } catch {
                switch listenerHealth[listener, default: ListenerHealth()].acceptFailed(error) {
                case .retry:
                    continue
                case .pause:
                    pauseAccepting()  // EMFILE, ENFILE, ENOBUFS, ENOMEM: stop accepting for a moment, keep serving
                case .fail:
                    failListener(listener, errno: error)
                }
                return
            }
            listenerHealth[listener, default: ListenerHealth()].healthy()
            guard let accepted else { return }
            accepted.socket.setNoDelay()
            let fd = accepted.socket.descriptor
            let peer = accepted.peer
            var localHost: String?
            if configuration.listensOnLocalNetwork {
                switch LocalNetwork.admission(of: fd) {
                case .loopback:
                    break
                case .localNetwork(let address):
                    localHost = address
                case .refused:
                    closeDescriptor(fd)
                    continue
                }
            }
            // A connection over the cap is never counted, so `openConnections` does not see it while it is refused.
            let admitted = shared.connectionCount.withLock { count in
                guard count < configuration.maxConnections else { return false }
                count += 1
                return true
            }
            guard admitted else {
                refuseBusy(fd)
                continue
            }
            register(fd: fd, peer: peer, localHost: localHost)
        }
    }

    /// Stops watching a dead listener and marks the server failed (``HTTPServer/failure``); connections already
    /// accepted are served on.
    func failListener(_ listener: Int32, errno: Errno?) {
        poller.remove(listener)
        shared.listenerFailed(
            listener,
            HTTPServerError(
                .listenerFailed, errno: errno,
                message: errno == nil
                    ? "the listening socket was shut down" : "accepting failed; the listening socket is unusable"))
    }

    func pauseAccepting() {
        acceptPausedUntil = monotonicNow() + 100_000_000
        for listener in listeners { poller.remove(listener) }
    }

    func resumeAcceptingIfDue(now: UInt64) {
        guard let until = acceptPausedUntil, now >= until, shutdownDeadline == nil else { return }
        acceptPausedUntil = nil
        let failed = shared.failedListeners.withLock { $0 }
        for listener in listeners where !failed.contains(listener) {
            try? poller.addListener(listener, token: UInt64(UInt32(bitPattern: listener)) | 1 << 40)
        }
    }

    /// Answers 503 with `Retry-After` on a connection over the cap, best effort, and closes it.
    func refuseBusy(_ fd: Int32) {
        let body = "503 Service Unavailable\n"
        let text =
            "HTTP/1.1 503 Service Unavailable\r\nDate: \(currentDate())\r\nRetry-After: \(configuration.retryAfterSeconds)\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { buffer in
            try? Socket(descriptor: fd).send(
                buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: buffer.count)
        }
        Socket(descriptor: fd).shutdown(.send)
        closeDescriptor(fd)
    }

    func register(fd: Int32, peer: String, localHost: String?) {
        nextSerial &+= 1
        let now = monotonicNow()
        let connection = Connection(
            fd: fd, id: ConnectionID(fd: fd, serial: nextSerial), peer: peer, localHost: localHost,
            machine: HTTPConnectionStateMachine(timeouts: configuration.timeouts, now: now),
            limits: configuration.limits)
        let index = Int(fd)
        if index >= connections.count {
            connections += [Connection?](repeating: nil, count: max(index + 1 - connections.count, 256))
        }
        connections[index] = connection
        openCount += 1
        do {
            try poller.addConnection(fd, token: UInt64(index))
        } catch {
            close(connection)
        }
    }

}
