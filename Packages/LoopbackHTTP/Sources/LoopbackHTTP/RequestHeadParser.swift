/// Limits applied while reading a request head.
public struct HTTPParserLimits: Sendable, Hashable {
    /// Longest request line (method, target and version, without the line ending); longer → 414.
    public var maxRequestLineLength: Int = 8 * 1024
    /// Longest header block (every field line with its line ending, and the final empty line); longer → 431.
    public var maxHeaderBlockLength: Int = 16 * 1024
    /// Most header fields; more → 431.
    public var maxHeaderFields: Int = 100
    public init() {}
}

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
        case request(HTTPRequest, consumed: Int)
        /// The head is invalid; answer `error.status` and close the connection.
        case error(HTTPRequestHeadError)
    }

    public var limits: HTTPParserLimits
    /// How many bytes at the start of the buffer are known not to contain the end of the head.
    private var searched = 0
    /// The index of the request line's LF once found.
    private var knownRequestLineEnd = -1

    public init(limits: HTTPParserLimits = HTTPParserLimits()) { self.limits = limits }

    /// Forgets the search position (call after the caller dropped consumed bytes, or to start over).
    public mutating func reset() {
        searched = 0
        knownRequestLineEnd = -1
    }

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
        // Find the end of the request line.
        var position = max(searched, start)
        var requestLineEnd = knownRequestLineEnd
        while requestLineEnd < 0, position < count {
            if buffer[position] == 0x0A {
                requestLineEnd = position
                break
            }
            position += 1
        }
        if requestLineEnd < 0 {
            searched = count
            if count - start > limits.maxRequestLineLength + 1 {
                reset()
                return .error(HTTPRequestHeadError(code: .requestLineTooLong, offset: start))
            }
            return .needMoreData
        }
        knownRequestLineEnd = requestLineEnd
        var lineLength = requestLineEnd - start
        if lineLength > 0, buffer[requestLineEnd - 1] == 0x0D { lineLength -= 1 }
        if lineLength > limits.maxRequestLineLength {
            reset()
            return .error(HTTPRequestHeadError(code: .requestLineTooLong, offset: start))
        }
        // Find the empty line that ends the head: LF followed by LF or CR LF.
        let headerStart = requestLineEnd + 1
        position = max(position, requestLineEnd)
        var headEnd = -1
        while position < count {
            if buffer[position] == 0x0A {
                let next = position + 1
                guard next < count else { break }
                if buffer[next] == 0x0A {
                    headEnd = next + 1
                    break
                }
                if buffer[next] == 0x0D {
                    guard next + 1 < count else { break }
                    if buffer[next + 1] == 0x0A {
                        headEnd = next + 2
                        break
                    }
                }
            }
            position += 1
        }
        if headEnd < 0 {
            searched = position
            if count - headerStart > limits.maxHeaderBlockLength {
                reset()
                return .error(HTTPRequestHeadError(code: .headerBlockTooLarge, offset: headerStart))
            }
            return .needMoreData
        }
        if headEnd - headerStart > limits.maxHeaderBlockLength {
            reset()
            return .error(HTTPRequestHeadError(code: .headerBlockTooLarge, offset: headerStart))
        }
        reset()
        return Self.parseHead(buffer, start: start, requestLineEnd: requestLineEnd, headEnd: headEnd, limits: limits)
    }

    private static func string(_ buffer: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: buffer[from..<to]), as: UTF8.self)
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
        while i < lineEnd, ASCII.isTokenCharacter(buffer[i]) { i += 1 }
        if i == start { return fail(.invalidMethod, i) }
        guard i < lineEnd, buffer[i] == 0x20 else {
            return fail(i < lineEnd && buffer[i] != 0x20 && buffer[i] != 0x0D ? .invalidMethod : .invalidRequestLine, i)
        }
        let method = string(buffer, start, i)
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
        let target = string(buffer, targetStart, targetEnd)
        let first = buffer[targetStart]
        if first != 0x2F {
            // absolute-form (http://...), asterisk-form (OPTIONS *) and authority-form (CONNECT) are accepted
            // here; routing decides what to do with them.
            if !(first == 0x2A && targetEnd - targetStart == 1) && !isAbsoluteForm(target) && method != "CONNECT" {
                return fail(.invalidTarget, targetStart)
            }
        }

        // Field lines (RFC 9112 §5).
        var headers = HTTPHeaders(reservingCapacity: 8)
        var hostCount = 0
        var lineStart = requestLineEnd + 1
        while true {
            // Find this line's end (the head is known to end with an empty line, so the scan stops in bounds).
            var end = lineStart
            while end < headEnd, buffer[end] != 0x0A { end += 1 }
            var contentEnd = end
            if contentEnd > lineStart, buffer[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            if contentEnd == lineStart { break }  // the empty line
            let firstByte = buffer[lineStart]
            if firstByte == 0x20 || firstByte == 0x09 { return fail(.obsoleteLineFolding, lineStart) }
            var j = lineStart
            while j < contentEnd, ASCII.isTokenCharacter(buffer[j]) { j += 1 }
            guard j < contentEnd, j > lineStart, buffer[j] == 0x3A else {
                if j < contentEnd, buffer[j] == 0x20 || buffer[j] == 0x09 { return fail(.whitespaceBeforeColon, j) }
                if j < contentEnd, buffer[j] == 0x0D { return fail(.bareCarriageReturn, j) }
                return fail(.invalidFieldName, j)
            }
            let nameEnd = j
            j += 1
            while j < contentEnd, buffer[j] == 0x20 || buffer[j] == 0x09 { j += 1 }
            let valueStart = j
            var valueEnd = valueStart
            while j < contentEnd {
                let byte = buffer[j]
                if byte == 0x0D { return fail(.bareCarriageReturn, j) }
                if byte < 0x20 && byte != 0x09 || byte == 0x7F { return fail(.invalidFieldValue, j) }
                j += 1
                if byte != 0x20 && byte != 0x09 { valueEnd = j }
            }
            if headers.count >= limits.maxHeaderFields { return fail(.tooManyFields, lineStart) }
            let name = string(buffer, lineStart, nameEnd)
            let value = string(buffer, valueStart, valueEnd)
            if nameEnd - lineStart == 4, HTTPHeaders.equalNames(name, "Host") { hostCount += 1 }
            headers.add(name: name, value: value)
            lineStart = end + 1
        }

        // Message framing and Host (RFC 9112 §3.2, §6.1–§6.3).
        if hostCount > 1 { return fail(.duplicateHost, start) }
        if hostCount == 0, version.minor >= 1 { return fail(.missingHost, start) }
        for field in headers.fields where field.name.utf8.count == 17 || field.name.utf8.count == 14 {
            if HTTPHeaders.equalNames(field.name, "Transfer-Encoding") { return fail(.requestBodyNotAllowed, start) }
            if HTTPHeaders.equalNames(field.name, "Content-Length") {
                for element in field.value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                    guard let length = ASCII.parseDecimal(ASCII.trimmed(element)) else {
                        return fail(.invalidContentLength, start)
                    }
                    if length != 0 { return fail(.requestBodyNotAllowed, start) }
                }
            }
        }
        return .request(
            HTTPRequest(method: HTTPMethod(method), target: target, version: version, headers: headers),
            consumed: headEnd)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isAbsoluteForm(_ target: String) -> Bool {
        let lower = target.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}
