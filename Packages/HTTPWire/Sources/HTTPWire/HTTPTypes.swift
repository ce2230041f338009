import TextCodecs

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
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    /// One field line.
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        /// Parses `Name: value` as a user types it; nil when there is no colon, the name is empty or not a token,
        /// or the value holds a line break or another control byte.
        public init?(line: String) {
            let bytes = Array(line.utf8)
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
                bytes[..<colon].allSatisfy(HTTPASCII.isTokenCharacter)
            else { return nil }
            let value = HTTPASCII.trimmed(bytes[(colon + 1)...])
            guard value.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else { return nil }
            self.name = String(decoding: bytes[..<colon], as: UTF8.self)
            self.value = String(decoding: value, as: UTF8.self)
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }
    /// An empty list with room for `capacity` fields.
    public init(reservingCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }
    public init(_ fields: [(String, String)]) { self.fields = fields.map { Field(name: $0.0, value: $0.1) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }
    public init(fields: [Field]) { self.fields = fields }
    public init(arrayLiteral elements: Field...) { self.fields = elements }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Appends a field (keeps any existing field of the same name).
    public mutating func append(_ field: Field) { fields.append(field) }

    /// Appends a field (keeps any existing field of the same name).
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Replaces every field of this name with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let index = fields.indices.first(where: { Self.equalNames(fields[$0].name, name) }) {
            // Written only when it differs: a list shared with others (a cached one) is then not copied.
            if fields[index].value != value { fields[index].value = value }
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
        // By index: the fields are read in place, not copied out one by one (this runs several times a request).
        for index in fields.indices where Self.equalNames(fields[index].name, name) { return fields[index].value }
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
                if HTTPASCII.equalsIgnoringCase(HTTPASCII.trimmed(element), token.utf8) { return true }
            }
        }
        return false
    }

    /// Whether two field names are equal, ignoring ASCII case (RFC 9110 §5.1).
    @inline(__always)
    public static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && HTTPASCII.equalsIgnoringCase(a.utf8, b.utf8)
    }
}

/// Small byte helpers for ASCII protocol text, shared by the parsers and the server and client that use them.
public enum HTTPASCII {
    @inlinable public static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Inlinable, so that callers in other modules get it specialized for their collections (header names are
    /// compared several times for every request; an unspecialized generic call was 1.8% of the server's cycles).
    @inlinable
    public static func equalsIgnoringCase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
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

    public static func trimmed<C: BidirectionalCollection<UInt8>>(_ bytes: C) -> C.SubSequence {
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
    public static func isTokenCharacter(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

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

    /// Appends the decimal digits of `value` (TextCodecs' `DecimalDigits`).
    public static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) { DecimalDigits.append(value, to: &out) }

    /// Parses a non-empty run of decimal digits with no sign, nil on overflow or any other byte.
    public static func parseDecimal(_ bytes: some Collection<UInt8>) -> UInt64? {
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

    /// The standard reason phrase of a code (RFC 9110 §15), or `Status <code>`.
    public static func standardReason(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 303: return "See Other"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 401: return "Unauthorized"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 416: return "Range Not Satisfiable"
        case 421: return "Misdirected Request"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 451: return "Unavailable For Legal Reasons"
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
    public var forbidsContent: Bool { code == 204 || code == 304 || (code >= 100 && code < 200) }
}

/// A request head as it travels on the wire (RFC 9112 §3): what the request-head parser returns and what a client
/// serialises.
public struct HTTPRequestHead: Sendable, Hashable {
    public var method: HTTPMethod
    /// The request-target exactly as received or to be sent (RFC 9112 §3.2), for example `/a%20b?x=1` or `*`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = [:]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The path part of the target (before `?`), still percent-encoded. For an absolute-form target
    /// (`http://host/p`), the path of that URI.
    public var path: Substring { Self.path(ofTarget: target) }

    /// The query part of the target (after `?`), if any.
    public var query: Substring? { Self.query(ofTarget: target) }

    /// Whether the client asked to keep the connection open after this exchange (RFC 9112 §9.3).
    public var wantsKeepAlive: Bool { Self.wantsKeepAlive(version: version, headers: headers) }

    /// The path part of a request-target (before `?`), still percent-encoded.
    public static func path(ofTarget target: String) -> Substring {
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

    /// The query part of a request-target (after `?`), if any.
    public static func query(ofTarget target: String) -> Substring? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Whether a message of this version with these fields keeps its connection open (RFC 9112 §9.3): HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public static func wantsKeepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version.major == 1, version.minor == 0 { return headers.containsToken("keep-alive", in: "Connection") }
        return true
    }

    /// The head serialised: request line, fields in order, empty line.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + target.utf8.count + headers.count * 32)
        out += method.rawValue.utf8
        out.append(0x20)
        out += target.utf8
        out += " HTTP/".utf8
        HTTPASCII.appendDecimal(UInt64(max(0, version.major)), to: &out)
        out.append(UInt8(ascii: "."))
        HTTPASCII.appendDecimal(UInt64(max(0, version.minor)), to: &out)
        out += [0x0D, 0x0A]
        for field in headers {
            out += field.name.utf8
            out += [UInt8(ascii: ":"), 0x20]
            out += field.value.utf8
            out += [0x0D, 0x0A]
        }
        out += [0x0D, 0x0A]
        return out
    }
}
