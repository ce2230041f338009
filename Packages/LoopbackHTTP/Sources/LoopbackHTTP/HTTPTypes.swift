/// An HTTP request method (RFC 9110 §9). Methods are case-sensitive tokens.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    /// The method token exactly as received, for example `GET`.
    public let rawValue: String

    /// Creates a method from its token.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let options = HTTPMethod("OPTIONS")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let delete = HTTPMethod("DELETE")
    public static let patch = HTTPMethod("PATCH")
    public static let connect = HTTPMethod("CONNECT")
    public static let trace = HTTPMethod("TRACE")

    /// Methods RFC 9110 defines that this server recognises but does not allow (answered 405 with `Allow`).
    /// Any other method is answered 501 (RFC 9110 §15.6.2).
    public var isKnownToServer: Bool {
        switch rawValue {
        case "GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH", "CONNECT", "TRACE": return true
        default: return false
        }
    }

    public var description: String { rawValue }
}

/// An HTTP version (RFC 9112 §2.3).
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// Header fields as an ordered list (RFC 9110 §5): duplicates are kept in order and names compare
/// case-insensitively. Never a dictionary, so that field order and repeated fields survive.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One field line.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }
    init(reservingCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }
    public init(_ fields: [(String, String)]) { self.fields = fields.map { Field(name: $0.0, value: $0.1) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Appends a field (keeps any existing field of the same name).
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Replaces every field of this name with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let index = fields.firstIndex(where: { Self.equalNames($0.name, name) }) {
            fields[index].value = value
            var i = fields.index(after: index)
            while i < fields.endIndex {
                if Self.equalNames(fields[i].name, name) { fields.remove(at: i) } else { i += 1 }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Removes every field of this name.
    public mutating func remove(name: String) { fields.removeAll { Self.equalNames($0.name, name) } }

    /// The first value of the field, or nil.
    public subscript(name: String) -> String? { first(name: name) }

    /// The first value of the field, or nil.
    public func first(name: String) -> String? {
        for field in fields where Self.equalNames(field.name, name) { return field.value }
        return nil
    }

    /// Every value of the field, in order.
    public func values(name: String) -> [String] {
        fields.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    /// Whether the field is present.
    public func contains(name: String) -> Bool { first(name: name) != nil }

    /// Whether any comma-separated element of the field equals `token`, ignoring ASCII case
    /// (for list fields such as `Connection`, RFC 9110 §5.6.1).
    public func containsToken(_ token: String, in name: String) -> Bool {
        for field in fields where Self.equalNames(field.name, name) {
            for element in field.value.utf8.split(separator: UInt8(ascii: ",")) {
                if ASCII.equalsIgnoringCase(ASCII.trimmed(element), token.utf8) { return true }
            }
        }
        return false
    }

    @inline(__always)
    static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && ASCII.equalsIgnoringCase(a.utf8, b.utf8)
    }
}

/// Small byte helpers for ASCII protocol text.
enum ASCII {
    static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    static func equalsIgnoringCase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        // Contiguous fast path (native and small strings, arrays).
        let fast = a.withContiguousStorageIfAvailable { left in
            b.withContiguousStorageIfAvailable { right -> Bool in
                for i in 0..<left.count where lower(left[i]) != lower(right[i]) { return false }
                return true
            }
        }
        if let fast, let result = fast { return result }
        for (x, y) in zip(a, b) where lower(x) != lower(y) { return false }
        return true
    }

    static func trimmed<C: BidirectionalCollection<UInt8>>(_ bytes: C) -> C.SubSequence {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return bytes[start..<end]
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenCharacter(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

    private static let tokenTable: [Bool] = (0..<256).map { value in
        let byte = UInt8(value)
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Appends the decimal digits of `value`.
    static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[count] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                rest /= 10
                count += 1
            }
            while count > 0 {
                count -= 1
                out.append(buffer[count])
            }
        }
    }

    /// Parses a non-empty run of decimal digits with no sign, nil on overflow or any other byte.
    static func parseDecimal(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value
    }
}

/// An HTTP status code with its reason phrase.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public var code: Int
    public var reasonPhrase: String
    public init(code: Int, reasonPhrase: String? = nil) {
        self.code = code
        self.reasonPhrase = reasonPhrase ?? HTTPStatus.standardReason(code)
    }

    public static let ok = HTTPStatus(code: 200)
    public static let noContent = HTTPStatus(code: 204)
    public static let partialContent = HTTPStatus(code: 206)
    public static let found = HTTPStatus(code: 302)
    public static let notModified = HTTPStatus(code: 304)
    public static let badRequest = HTTPStatus(code: 400)
    public static let forbidden = HTTPStatus(code: 403)
    public static let notFound = HTTPStatus(code: 404)
    public static let methodNotAllowed = HTTPStatus(code: 405)
    public static let requestTimeout = HTTPStatus(code: 408)
    public static let preconditionFailed = HTTPStatus(code: 412)
    public static let uriTooLong = HTTPStatus(code: 414)
    public static let rangeNotSatisfiable = HTTPStatus(code: 416)
    public static let misdirectedRequest = HTTPStatus(code: 421)
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431)
    public static let internalServerError = HTTPStatus(code: 500)
    public static let notImplemented = HTTPStatus(code: 501)
    public static let badGateway = HTTPStatus(code: 502)
    public static let serviceUnavailable = HTTPStatus(code: 503)
    public static let httpVersionNotSupported = HTTPStatus(code: 505)

    public var description: String { "\(code) \(reasonPhrase)" }

    static func standardReason(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 412: return "Precondition Failed"
        case 414: return "URI Too Long"
        case 416: return "Range Not Satisfiable"
        case 421: return "Misdirected Request"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(code)"
        }
    }

    /// Statuses whose responses never carry content (RFC 9110 §6.4.1).
    var forbidsContent: Bool { code == 204 || code == 304 || (code >= 100 && code < 200) }
}

/// A parsed request head and the route parameters the router matched.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as received (RFC 9112 §3.2), for example `/a%20b?x=1` or `*`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// Route parameters by name, percent-decoded once. A `**` wildcard is joined with `/`.
    public var parameters: [String: String] = [:]
    /// The segments matched by a trailing `**` wildcard, each percent-decoded once (never joined, so an encoded
    /// `/` cannot become a separator).
    public var wildcardSegments: [String] = []
    /// The remote peer, for logs (e.g. `127.0.0.1:53122`).
    public var remoteAddress: String = ""
    /// The session token the route matched, for routes under a ``SessionToken`` or a ``SessionTokenSet``.
    public var sessionToken: SessionToken?
    /// The local address the request arrived on, when it is not loopback (only with
    /// ``HTTPServerConfiguration/listensOnLocalNetwork``): a `Host` that names it is accepted.
    var localHost: String?

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = [:]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The path part of the target (before `?`), still percent-encoded. For an absolute-form target
    /// (`http://host/p`), the path of that URI.
    public var path: Substring {
        let utf8 = target.utf8
        var start = utf8.startIndex
        if utf8.first != UInt8(ascii: "/"), let scheme = target.firstRange(of: "://") {
            let authorityStart = scheme.upperBound
            guard let slash = utf8[authorityStart...].firstIndex(of: UInt8(ascii: "/")) else { return "/" }
            start = slash
        }
        let end = utf8[start...].firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex
        return target[start..<end]
    }

    /// The query part of the target (after `?`), if any.
    public var query: Substring? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Whether the client asked to keep the connection open after this exchange (RFC 9112 §9.3).
    public var wantsKeepAlive: Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version == .http1_0 { return headers.containsToken("keep-alive", in: "Connection") }
        return true
    }
}
