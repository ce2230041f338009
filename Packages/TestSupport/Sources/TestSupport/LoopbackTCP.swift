// Plain TCP client sockets to 127.0.0.1, for tests that talk to a server byte by byte or probe whether a peer
// listens: the one place the tests build a loopback address. Linux and Darwin differ in how the socket type constant
// is imported, in SIGPIPE (MSG_NOSIGNAL per send on Linux; SO_NOSIGPIPE on the socket on Darwin, whose send(2) has no
// such flag) and in sockaddr_in's length field (Darwin only).
import Foundation

#if canImport(Glibc)
    public import Glibc
#elseif canImport(Darwin)
    public import Darwin
#endif

public enum LoopbackTCP {
    /// A new IPv4 TCP socket (-1 on failure) that never raises SIGPIPE when written to after the peer left, as
    /// long as writes use ``sendFlags``.
    public static func socket() -> Int32 {
        #if canImport(Darwin)
            let fd = Darwin.socket(AF_INET, SOCK_STREAM, 0)
            noSigPipe(fd)
        #else
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        return fd
    }

    /// Turns SIGPIPE off for a socket not made with ``socket()`` (an accepted one) on Darwin; nothing to do on
    /// Linux, where ``sendFlags`` does it per call.
    public static func noSigPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// The send(2) flags that go with ``socket()``.
    #if canImport(Darwin)
        public static let sendFlags: Int32 = 0
    #else
        public static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    /// 127.0.0.1:`port` (0 for an ephemeral port when binding).
    public static func address(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// Connects `fd` to 127.0.0.1:`port`; whether that worked.
    public static func connect(_ fd: Int32, port: UInt16) -> Bool {
        var address = address(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Darwin)
                    Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        return result == 0
    }

    /// A socket bound to 127.0.0.1 on a port the system chooses (``localPort(_:)`` reads it) and listening with
    /// `backlog`; -1 on failure. With `listening` false, bound only: the port is taken until the socket closes.
    public static func listener(backlog: Int32 = 16, listening: Bool = true) -> Int32 {
        let fd = socket()
        guard fd >= 0 else { return -1 }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = address(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, !listening || listen(fd, backlog) == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// The local port of a bound socket (0 when it has none).
    public static func localPort(_ fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return named == 0 ? UInt16(bigEndian: address.sin_port) : 0
    }

    /// A loopback port nothing listens on: one the system just handed out and this process let go.
    public static func unusedPort() -> UInt16 {
        let fd = listener(listening: false)
        defer { if fd >= 0 { close(fd) } }
        return localPort(fd)
    }

    /// Accepts connections on the listening socket `fd` on a thread of its own until accepting fails, and hands each
    /// one, with SIGPIPE off, to `serve` on a new thread: the loop of the tests' raw origins. The thread owns `fd`:
    /// stop it with ``stopServing(_:)``, never by closing `fd`, which the thread closes once `accept` fails. (Closed
    /// by its owner while the thread was between two `accept` calls, the number went to the next test's listener,
    /// and this thread accepted that listener's connections and closed them: a request of another test ended at once.)
    public static func serveConnections(on fd: Int32, _ serve: @escaping @Sendable (Int32) -> Void) {
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    close(fd)
                    return
                }
                noSigPipe(client)
                Thread.detachNewThread { serve(client) }
            }
        }
    }

    /// Stops the loop of ``serveConnections(on:_:)`` on `fd`: shuts the listener down, so that `accept` fails at once
    /// (now or at its next call) and the loop closes it.
    public static func stopServing(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func accepts(_ port: UInt16) -> Bool {
        let fd = socket()
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connect(fd, port: port)
    }
}
