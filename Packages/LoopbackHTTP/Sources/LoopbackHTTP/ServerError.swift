public import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A server-side error with its context: what failed, the errno, and where.
public struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case socket, bind, listen, eventLoop, invalidConfiguration, alreadyStarted, notRunning, listenerFailed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let socket = Code(.socket)
        public static let bind = Code(.bind)
        public static let listen = Code(.listen)
        public static let eventLoop = Code(.eventLoop)
        public static let invalidConfiguration = Code(.invalidConfiguration)
        public static let alreadyStarted = Code(.alreadyStarted)
        public static let notRunning = Code(.notRunning)
        /// A listening socket died while the server ran (on iOS, the system reclaims the sockets of a suspended
        /// app): the server accepts no more connections until ``HTTPServer/revive(gracePeriod:)``.
        public static let listenerFailed = Code(.listenerFailed)
        public var description: String { "\(value)" }
    }
    public var code: Code
    public var errno: Errno?
    /// The address involved, if any (e.g. `127.0.0.1:8080`).
    public var address: String?
    public var message: String?

    public init(_ code: Code, errno: Errno? = nil, address: String? = nil, message: String? = nil) {
        self.code = code
        self.errno = errno
        self.address = address
        self.message = message
    }

    public var description: String {
        var text = "\(code)"
        if let address { text += " \(address)" }
        if let message { text += ": \(message)" }
        if let errno { text += ": \(errno)" }
        return text
    }
}

/// Monotonic nanoseconds.
func monotonicNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The server's listening sockets, made by Sockets' `Socket.listening(host:port:backlog:)`.
enum SocketOps {
    /// A non-blocking listening socket bound to a numeric address, and the port it got.
    static func listen(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, port: UInt16)
    {
        do {
            let socket = try Socket.listening(host: host, port: port, backlog: backlog)
            return (socket.descriptor, socket.localPort)
        } catch {
            throw HTTPServerError(error)
        }
    }
}

extension HTTPServerError {
    /// The server's error for a socket that could not be made, bound or listened on, or a poller that could not be
    /// made.
    init(_ error: SocketError) {
        let code: Code =
            switch error.code {
            case .bind: .bind
            case .listen: .listen
            case .invalidAddress: .invalidConfiguration
            case .poller: .eventLoop
            default: .socket
            }
        self.init(code, errno: error.errno, address: error.address, message: error.message)
    }
}
