/// How a message body is delimited (RFC 9112 §6).
public enum HTTPBodyFraming: Hashable, Sendable {
    /// No body at all.
    case none
    /// Exactly this many bytes (Content-Length).
    case length(UInt64)
    /// Chunked transfer coding (RFC 9112 §7.1).
    case chunked
    /// Everything until the server closes the connection (a response with neither field).
    case untilClose
}

extension HTTPResponseHead {
    /// The framing of this response's body (RFC 9112 §6.3): none for a HEAD request, 1xx, 204 and 304; chunked
    /// when Transfer-Encoding says so; Content-Length when given (several equal values are one); otherwise until
    /// the close. Content-Length with Transfer-Encoding, disagreeing lengths, and codings other than `chunked`
    /// are refused.
    public func bodyFraming(requestMethod: HTTPMethod) throws(HTTPResponseHeadError) -> HTTPBodyFraming {
        if requestMethod == .head || isInterim || status.code == 204 || status.code == 304 { return .none }
        return try HTTPBodyFraming.declared(by: headers) ?? .untilClose
    }
}

extension HTTPRequestHead {
    /// The framing of this request's body (RFC 9112 §6.3): chunked, Content-Length, or none; Content-Length with
    /// Transfer-Encoding, disagreeing lengths and codings other than `chunked` are refused.
    public func bodyFraming() throws(HTTPResponseHeadError) -> HTTPBodyFraming {
        try HTTPBodyFraming.declared(by: headers) ?? .none
    }
}

extension HTTPBodyFraming {
    /// The framing the fields declare, or nil when they declare none.
    static func declared(by headers: HTTPHeaders) throws(HTTPResponseHeadError) -> HTTPBodyFraming? {
        var codings: [ArraySlice<UInt8>] = []
        var lengths: [UInt64] = []
        for field in headers.fields {
            let count = field.name.utf8.count
            if count == 17, HTTPHeaders.equalNames(field.name, "Transfer-Encoding") {
                for element in Array(field.value.utf8).split(separator: UInt8(ascii: ",")) {
                    let coding = HTTPASCII.trimmed(element)
                    if !coding.isEmpty { codings.append(coding) }
                }
                if codings.isEmpty { throw HTTPResponseHeadError(code: .unsupportedTransferCoding, offset: 0) }
            } else if count == 14, HTTPHeaders.equalNames(field.name, "Content-Length") {
                for element in field.value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                    guard let length = HTTPASCII.parseDecimal(HTTPASCII.trimmed(element)) else {
                        throw HTTPResponseHeadError(code: .invalidContentLength, offset: 0)
                    }
                    lengths.append(length)
                }
            }
        }
        if !codings.isEmpty {
            guard lengths.isEmpty else { throw HTTPResponseHeadError(code: .conflictingFraming, offset: 0) }
            guard codings.count == 1, HTTPASCII.equalsIgnoringCase(codings[0], "chunked".utf8) else {
                throw HTTPResponseHeadError(code: .unsupportedTransferCoding, offset: 0)
            }
            return .chunked
        }
        guard let first = lengths.first else { return nil }
        guard lengths.allSatisfy({ $0 == first }) else {
            throw HTTPResponseHeadError(code: .invalidContentLength, offset: 0)
        }
        return first == 0 ? HTTPBodyFraming.none : .length(first)
    }
}
