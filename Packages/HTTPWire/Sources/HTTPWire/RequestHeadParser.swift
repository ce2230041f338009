/// Why a request head was refused, with the status to answer and the byte offset (from the start of the head)
/// where the problem was found.
public struct HTTPRequestHeadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong (opaque, so that cases can be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidRequestLine, invalidMethod, invalidTarget, invalidVersion, unsupportedVersion
            case requestLineTooLong, headerBlockTooLarge, tooManyFields
            case obsoleteLineFolding, whitespaceBeforeColon, invalidFieldName, invalidFieldValue, bareCarriageReturn
            case missingHost, duplicateHost, requestBodyNotAllowed, invalidContentLength
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let invalidRequestLine = Code(.invalidRequestLine)
        public static let invalidMethod = Code(.invalidMethod)
        public static let invalidTarget = Code(.invalidTarget)
        public static let invalidVersion = Code(.invalidVersion)
        public static let unsupportedVersion = Code(.unsupportedVersion)
        public static let requestLineTooLong = Code(.requestLineTooLong)
        public static let headerBlockTooLarge = Code(.headerBlockTooLarge)
        public static let tooManyFields = Code(.tooManyFields)
        public static let obsoleteLineFolding = Code(.obsoleteLineFolding)
        public static let whitespaceBeforeColon = Code(.whitespaceBeforeColon)
        public static let invalidFieldName = Code(.invalidFieldName)
        public static let invalidFieldValue = Code(.invalidFieldValue)
        public static let bareCarriageReturn = Code(.bareCarriageReturn)
        public static let missingHost = Code(.missingHost)
        public static let duplicateHost = Code(.duplicateHost)
        public static let requestBodyNotAllowed = Code(.requestBodyNotAllowed)
        public static let invalidContentLength = Code(.invalidContentLength)
        public var description: String { "\(value)" }
    }

    public var code: Code
    /// Byte offset from the start of the request head.
    public var offset: Int

    public init(code: Code, offset: Int) {
        self.code = code
        self.offset = offset
    }

    /// The status to answer (RFC 9110 §15, RFC 6585 §5).
    public var status: HTTPStatus {
        switch code {
        case .requestLineTooLong: return .uriTooLong
        case .headerBlockTooLarge, .tooManyFields: return .requestHeaderFieldsTooLarge
        case .unsupportedVersion: return .httpVersionNotSupported
        default: return .badRequest
        }
    }

    public var description: String { "\(code) at byte \(offset) (\(status.code))" }
}

/// An incremental, octet-level request-head parser (RFC 9112 §2–§5).
///
/// Feed it the unconsumed bytes of a connection each time more arrive. It never consumes partial input: until
/// the whole head is buffered it answers ``Result/needMoreData`` and remembers only how far it has already
/// searched for the end of the head, so a drip-fed head costs linear time. The head is then validated in one
/// pass. Bodies are not supported: any body framing is refused (this server serves GET, HEAD and OPTIONS).
public struct HTTPRequestHeadParser: Sendable {
    public enum Result: Sendable {
        /// The head is not complete yet; call again with more bytes (the same bytes plus the new ones).
        case needMoreData
        /// A complete, valid head that occupied the first `consumed` bytes.
        case request(HTTPRequestHead, consumed: Int)
        /// The head is invalid; answer `error.status` and close the connection.
        case error(HTTPRequestHeadError)
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
        let count = buffer.count
        // One leading empty line is tolerated (RFC 9112 §2.2).
        var start = 0
        if count > 0, buffer[0] == 0x0A {
            start = 1
        } else if count > 0, buffer[0] == 0x0D {
            guard count > 1 else { return .needMoreData }
            guard buffer[1] == 0x0A else { return .error(HTTPRequestHeadError(code: .invalidRequestLine, offset: 0)) }
            start = 2
        }
        switch scanner.scan(buffer, start: start, limits: limits) {
        case .needMoreData:
            return .needMoreData
        case .startLineTooLong(let offset):
            return .error(HTTPRequestHeadError(code: .requestLineTooLong, offset: offset))
        case .headerBlockTooLarge(let offset):
            return .error(HTTPRequestHeadError(code: .headerBlockTooLarge, offset: offset))
        case .found(let requestLineEnd, let headEnd):
            return Self.parseHead(
                buffer, start: start, requestLineEnd: requestLineEnd, headEnd: headEnd, limits: limits)
        }
    }

    private static func fail(_ code: HTTPRequestHeadError.Code, _ offset: Int) -> Result {
        .error(HTTPRequestHeadError(code: code, offset: offset))
    }

    private static func parseHead(
        _ buffer: UnsafeBufferPointer<UInt8>, start: Int, requestLineEnd: Int, headEnd: Int, limits: HTTPParserLimits
    ) -> Result {
        // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
        var lineEnd = requestLineEnd
        if lineEnd > start, buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        var i = start
        while i < lineEnd, HTTPASCII.isTokenCharacter(buffer[i]) { i += 1 }
        if i == start { return fail(.invalidMethod, i) }
        guard i < lineEnd, buffer[i] == 0x20 else {
            return fail(i < lineEnd && buffer[i] != 0x20 && buffer[i] != 0x0D ? .invalidMethod : .invalidRequestLine, i)
        }
        let method = asciiString(buffer, start, i)
        i += 1
        let targetStart = i
        while i < lineEnd, buffer[i] != 0x20 {
            let byte = buffer[i]
            if byte == 0x0D { return fail(.bareCarriageReturn, i) }
            guard byte > 0x20, byte < 0x7F else { return fail(.invalidTarget, i) }
            i += 1
        }
        if i == targetStart { return fail(.invalidTarget, i) }
        let targetEnd = i
        guard i < lineEnd else { return fail(.invalidVersion, i) }  // HTTP/0.9-style line with no version
        i += 1
        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        guard lineEnd - i == 8, buffer[i] == 0x48, buffer[i + 1] == 0x54, buffer[i + 2] == 0x54, buffer[i + 3] == 0x50,
            buffer[i + 4] == 0x2F, buffer[i + 6] == 0x2E, isDigit(buffer[i + 5]), isDigit(buffer[i + 7])
        else {
            for j in i..<lineEnd where buffer[j] == 0x0D { return fail(.bareCarriageReturn, j) }
            return fail(.invalidVersion, i)
        }
        let version = HTTPVersion(major: Int(buffer[i + 5] - 0x30), minor: Int(buffer[i + 7] - 0x30))
        guard version.major == 1 else {
            return fail(version.major == 0 ? .invalidVersion : .unsupportedVersion, i)
        }
        let target = asciiString(buffer, targetStart, targetEnd)
        let first = buffer[targetStart]
        if first != 0x2F {
            // absolute-form (http://...), asterisk-form (OPTIONS *) and authority-form (CONNECT) are accepted
            // here; routing decides what to do with them.
            if !(first == 0x2A && targetEnd - targetStart == 1) && !isAbsoluteForm(target) && method != "CONNECT" {
                return fail(.invalidTarget, targetStart)
            }
        }

        // Field lines (RFC 9112 §5).
        let headers: HTTPHeaders
        switch parseFieldLines(buffer, from: requestLineEnd + 1, headEnd: headEnd, maxFields: limits.maxHeaderFields) {
        case .success(let fields): headers = fields
        case .failure(let error): return fail(Self.code(error.failure), error.offset)
        }
        var hostCount = 0
        for field in headers.fields where field.name.utf8.count == 4 && HTTPHeaders.equalNames(field.name, "Host") {
            hostCount += 1
        }

        // Message framing and Host (RFC 9112 §3.2, §6.1–§6.3).
        if hostCount > 1 { return fail(.duplicateHost, start) }
        if hostCount == 0, version.minor >= 1 { return fail(.missingHost, start) }
        for field in headers.fields where field.name.utf8.count == 17 || field.name.utf8.count == 14 {
            if HTTPHeaders.equalNames(field.name, "Transfer-Encoding") { return fail(.requestBodyNotAllowed, start) }
            if HTTPHeaders.equalNames(field.name, "Content-Length") {
                for element in field.value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                    guard let length = HTTPASCII.parseDecimal(HTTPASCII.trimmed(element)) else {
                        return fail(.invalidContentLength, start)
                    }
                    if length != 0 { return fail(.requestBodyNotAllowed, start) }
                }
            }
        }
        return .request(
            HTTPRequestHead(method: HTTPMethod(method), target: target, version: version, headers: headers),
            consumed: headEnd)
    }

    private static func code(_ failure: FieldLineFailure) -> HTTPRequestHeadError.Code {
        switch failure {
        case .obsoleteLineFolding: .obsoleteLineFolding
        case .whitespaceBeforeColon: .whitespaceBeforeColon
        case .invalidFieldName: .invalidFieldName
        case .invalidFieldValue: .invalidFieldValue
        case .bareCarriageReturn: .bareCarriageReturn
        case .tooManyFields: .tooManyFields
        }
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isAbsoluteForm(_ target: String) -> Bool {
        let lower = target.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}
