/// A response head as it travels on the wire (RFC 9112 §4): status line and fields.
public struct HTTPResponseHead: Sendable, Hashable {
    public var version: HTTPVersion
    public var status: HTTPStatus
    public var headers: HTTPHeaders

    public init(version: HTTPVersion = .http1_1, status: HTTPStatus, headers: HTTPHeaders = [:]) {
        self.version = version
        self.status = status
        self.headers = headers
    }

    /// Whether the server lets the connection stay open after this response (RFC 9112 §9.3); the body's framing
    /// decides too (a body delimited by the close never leaves a reusable connection).
    public var keepAlive: Bool { HTTPRequestHead.wantsKeepAlive(version: version, headers: headers) }

    /// Whether this is an interim response (1xx) that a final one follows (RFC 9110 §15.2).
    public var isInterim: Bool { status.code >= 100 && status.code < 200 }
}

/// Why a response head (or its framing) was refused, with the byte offset from the start of the head.
public struct HTTPResponseHeadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong (opaque, so that cases can be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case invalidStatusLine = "malformed status line"
            case invalidVersion = "malformed HTTP version"
            case unsupportedVersion = "unsupported HTTP version"
            case invalidStatus = "malformed status code"
            case statusLineTooLong = "status line too long"
            case headerBlockTooLarge = "header block too large"
            case tooManyFields = "too many header fields"
            case obsoleteLineFolding = "obsolete line folding"
            case whitespaceBeforeColon = "whitespace before a field's colon"
            case invalidFieldName = "malformed field name"
            case invalidFieldValue = "control byte in a field value"
            case bareCarriageReturn = "bare carriage return"
            case invalidContentLength = "invalid Content-Length"
            case conflictingFraming = "both Content-Length and Transfer-Encoding"
            case unsupportedTransferCoding = "unsupported Transfer-Encoding"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let invalidStatusLine = Code(.invalidStatusLine)
        public static let invalidVersion = Code(.invalidVersion)
        public static let unsupportedVersion = Code(.unsupportedVersion)
        public static let invalidStatus = Code(.invalidStatus)
        public static let statusLineTooLong = Code(.statusLineTooLong)
        public static let headerBlockTooLarge = Code(.headerBlockTooLarge)
        public static let tooManyFields = Code(.tooManyFields)
        public static let obsoleteLineFolding = Code(.obsoleteLineFolding)
        public static let whitespaceBeforeColon = Code(.whitespaceBeforeColon)
        public static let invalidFieldName = Code(.invalidFieldName)
        public static let invalidFieldValue = Code(.invalidFieldValue)
        public static let bareCarriageReturn = Code(.bareCarriageReturn)
        /// A Content-Length that is not a number, or several that disagree (RFC 9112 §6.3).
        public static let invalidContentLength = Code(.invalidContentLength)
        /// Content-Length and Transfer-Encoding together (RFC 9112 §6.3: a sign of request smuggling).
        public static let conflictingFraming = Code(.conflictingFraming)
        /// A transfer coding other than `chunked` (this client asks for none).
        public static let unsupportedTransferCoding = Code(.unsupportedTransferCoding)
        public var description: String { value.rawValue }
    }

    public var code: Code
    /// Byte offset from the start of the response head.
    public var offset: Int

    public init(code: Code, offset: Int) {
        self.code = code
        self.offset = offset
    }

    public var description: String { "\(code) at byte \(offset) of the response head" }
}

/// An incremental, octet-level response-head parser (RFC 9112 §2, §4, §5), with the request-head parser's caps
/// and search: until the whole head is buffered it answers ``Result/needMoreData`` without consuming anything.
public struct HTTPResponseHeadParser: Sendable {
    public enum Result: Sendable {
        /// The head is not complete yet; call again with the same bytes plus the new ones.
        case needMoreData
        /// A complete, valid head that occupied the first `consumed` bytes.
        case response(HTTPResponseHead, consumed: Int)
        /// The head is invalid; the connection cannot be used further.
        case error(HTTPResponseHeadError)
    }

    public var limits: HTTPParserLimits
    private var scanner = HeadScanner()

    public init(limits: HTTPParserLimits = HTTPParserLimits()) { self.limits = limits }

    /// Forgets the search position (call after the caller dropped consumed bytes, or to start over).
    public mutating func reset() { scanner.reset() }

    /// Parses the head at the start of `bytes`.
    public mutating func parse(_ bytes: [UInt8]) -> Result {
        bytes.withUnsafeBufferPointer { parse($0) }
    }

    /// Parses the head at the start of `buffer`.
    public mutating func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result {
        switch scanner.scan(buffer, start: 0, limits: limits) {
        case .needMoreData:
            return .needMoreData
        case .startLineTooLong(let offset):
            return .error(HTTPResponseHeadError(code: .statusLineTooLong, offset: offset))
        case .headerBlockTooLarge(let offset):
            return .error(HTTPResponseHeadError(code: .headerBlockTooLarge, offset: offset))
        case .found(let statusLineEnd, let headEnd):
            return Self.parseHead(buffer, statusLineEnd: statusLineEnd, headEnd: headEnd, limits: limits)
        }
    }

    private static func fail(_ code: HTTPResponseHeadError.Code, _ offset: Int) -> Result {
        .error(HTTPResponseHeadError(code: code, offset: offset))
    }

    private static func parseHead(
        _ buffer: UnsafeBufferPointer<UInt8>, statusLineEnd: Int, headEnd: Int, limits: HTTPParserLimits
    ) -> Result {
        // status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4); a missing final SP
        // before an empty reason is tolerated.
        var lineEnd = statusLineEnd
        if lineEnd > 0, buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        for j in 0..<lineEnd where buffer[j] == 0x0D { return fail(.bareCarriageReturn, j) }
        guard lineEnd >= 8 else { return fail(.invalidStatusLine, 0) }
        guard buffer[0] == 0x48, buffer[1] == 0x54, buffer[2] == 0x54, buffer[3] == 0x50, buffer[4] == 0x2F,
            buffer[6] == 0x2E, HTTPRequestHeadParser.isDigit(buffer[5]), HTTPRequestHeadParser.isDigit(buffer[7])
        else { return fail(.invalidVersion, 0) }
        let version = HTTPVersion(major: Int(buffer[5] - 0x30), minor: Int(buffer[7] - 0x30))
        guard version.major == 1 else { return fail(.unsupportedVersion, 0) }
        guard lineEnd >= 12 else {
            return fail(lineEnd > 8 && buffer[8] == 0x20 ? .invalidStatus : .invalidStatusLine, 8)
        }
        guard buffer[8] == 0x20 else { return fail(.invalidStatusLine, 8) }
        var code = 0
        for j in 9..<12 {
            guard HTTPRequestHeadParser.isDigit(buffer[j]) else { return fail(.invalidStatus, j) }
            code = code * 10 + Int(buffer[j] - 0x30)
        }
        guard code >= 100 else { return fail(.invalidStatus, 9) }
        var reason: String?
        if lineEnd > 12 {
            guard buffer[12] == 0x20 else { return fail(.invalidStatus, 12) }
            for j in 13..<lineEnd {
                let byte = buffer[j]
                if byte < 0x20 && byte != 0x09 || byte == 0x7F { return fail(.invalidStatusLine, j) }
            }
            reason = asciiString(buffer, 13, lineEnd)
        }
        let headers: HTTPHeaders
        switch parseFieldLines(buffer, from: statusLineEnd + 1, headEnd: headEnd, maxFields: limits.maxHeaderFields) {
        case .success(let fields): headers = fields
        case .failure(let error): return fail(Self.code(error.failure), error.offset)
        }
        let status = HTTPStatus(code: code, reasonPhrase: reason.flatMap { $0.isEmpty ? nil : $0 })
        return .response(HTTPResponseHead(version: version, status: status, headers: headers), consumed: headEnd)
    }

    private static func code(_ failure: FieldLineFailure) -> HTTPResponseHeadError.Code {
        switch failure {
        case .obsoleteLineFolding: .obsoleteLineFolding
        case .whitespaceBeforeColon: .whitespaceBeforeColon
        case .invalidFieldName: .invalidFieldName
        case .invalidFieldValue: .invalidFieldValue
        case .bareCarriageReturn: .bareCarriageReturn
        case .tooManyFields: .tooManyFields
        }
    }
}
