public import FileRange

/// A socket that could not be made, bound or listened on: which step failed, the errno, and the address.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The step that failed (opaque, so that cases can be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case socket, bind, listen
            case invalidAddress = "invalid address"
            case poller
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        /// `socket(2)` failed (descriptors exhausted, address family not supported).
        public static let socket = Code(.socket)
        /// `bind(2)` failed (the port is taken, the address is not local).
        public static let bind = Code(.bind)
        /// `listen(2)` failed.
        public static let listen = Code(.listen)
        /// The host is not a numeric IPv4 or IPv6 address.
        public static let invalidAddress = Code(.invalidAddress)
        /// The readiness queue (epoll, eventfd, kqueue) of a ``Poller`` could not be made.
        public static let poller = Code(.poller)
        public var description: String { value.rawValue }
    }

    public var code: Code
    public var errno: Errno?
    /// The address involved, such as `127.0.0.1:8080` or `[::1]:8080`, if any.
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
