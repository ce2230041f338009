import FileRange
import HTTPWire

/// Routing plus the server's HTTP semantics, without any I/O: what ``HTTPServer`` runs for every request, and
/// what tests call in process with ``respond(to:)``.
public struct HTTPApplication: Sendable {
    public var router: Router
    public var configuration: HTTPServerConfiguration

    public init(router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        self.router = router
        self.configuration = configuration
    }

    /// Handles a request in process, as the server would on a socket (keep-alive assumed): the returned
    /// response has the final status, every header field the server would send (`Date`, `Content-Length`,
    /// `Content-Range`, ...) in order, and the body bytes (file regions and multipart parts read into memory;
    /// a stream collected; nothing for HEAD).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        var request = request
        let response: HTTPResponse
        switch decide(&request) {
        case .respond(let immediate): response = immediate
        case .handle(let handler, _): response = await handler(request)
        }
        let prepared = prepare(
            response, for: request, keepAlive: request.wantsKeepAlive, date: HTTPDate.now().imfFixdate)
        var headers = prepared.fields
        var body: [UInt8] = []
        switch prepared.body {
        case .none: break
        case .parts(let parts):
            for part in parts {
                switch part {
                case .bytes(let bytes): body += bytes
                case .file(let file, let offset, let length):
                    guard let count = Int(exactly: length),
                        let bytes = try? await file.readOnPool(at: offset, length: count),
                        bytes.count == count
                    else {
                        headers.replaceOrAdd(name: "X-In-Process-Error", value: "short read")
                        break
                    }
                    body += bytes
                }
            }
        case .stream(let stream, let chunked):
            let iterator = stream.makeIterator()
            while let chunk = await iterator.next() {
                if chunked {
                    HTTPChunkedEncoder.appendChunk(chunk, to: &body)
                } else {
                    body += chunk
                }
            }
            if chunked { body += HTTPChunkedEncoder.end }
        }
        return HTTPResponse(status: prepared.status, headers: headers, body: .bytes(body))
    }

    // MARK: - Decisions before the handler

    enum Decision {
        case respond(HTTPResponse)
        case handle(HTTPHandler, logPath: String?)
    }

    private static let allowedMethodsValue = "GET, HEAD, OPTIONS"

    /// Host allow-list, method checks and routing. Fills the request's parameters.
    func decide(_ request: inout HTTPRequest) -> Decision {
        // Host (RFC 9112 §3.2): an absolute-form target's authority wins over the Host field.
        if let host = Self.authority(of: request.target) ?? request.headers.first(name: "Host") {
            guard hostIsAllowed(host, localHost: request.localHost) else {
                return .respond(.error(.misdirectedRequest))
            }
        }  // else: HTTP/1.0 without Host (1.1 without Host was refused by the parser); browsers always send it
        let method = request.method
        if method != .get && method != .head && method != .options {
            if method.isKnownToServer {
                var response = HTTPResponse.error(.methodNotAllowed)
                response.headers.add(name: "Allow", value: Self.allowedMethodsValue)
                return .respond(response)
            }
            return .respond(.error(.notImplemented))
        }
        if request.target == "*" {
            guard method == .options else { return .respond(.error(.badRequest)) }
            var response = HTTPResponse(status: .noContent)
            response.headers.add(name: "Allow", value: Self.allowedMethodsValue)
            return .respond(response)
        }
        let path = request.path
        // With a non-loopback binding, a request must name a token first: the server's own, or the session token of
        // a route under `session:` / `sessions:` (checked by the router, in constant time, below).
        var namesServerToken = true
        if let token = configuration.nonLoopbackToken {
            let first = path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), maxSplits: 1).first
            namesServerToken = first.map { token.matches(String(decoding: $0, as: UTF8.self)) } ?? false
        }
        if method == .options {
            guard namesServerToken else { return .respond(.error(.notFound)) }
            guard let allowed = router.allowedMethods(path: path) else { return .respond(.error(.notFound)) }
            var methods = allowed.map(\.rawValue)
            if methods.contains("GET") && !methods.contains("HEAD") { methods.append("HEAD") }
            if !methods.contains("OPTIONS") { methods.append("OPTIONS") }
            var response = HTTPResponse(status: .noContent)
            response.headers.add(name: "Allow", value: methods.joined(separator: ", "))
            if let cors = configuration.cors {
                response.headers.add(name: "Access-Control-Allow-Methods", value: "GET, HEAD, OPTIONS")
                response.headers.add(name: "Access-Control-Allow-Headers", value: "Range")
                response.headers.add(name: "Access-Control-Max-Age", value: String(cors.maxAgeSeconds))
            }
            return .respond(response)
        }
        let match = router.match(method: method, path: path)
        if !namesServerToken {
            guard case .handler(_, _, _, let session, _) = match, session != nil else {
                return .respond(.error(.notFound))
            }
        }
        switch match {
        case .handler(let handler, let parameters, let wildcard, let session, let logPath):
            request.parameters = parameters
            request.wildcardSegments = wildcard
            request.sessionToken = session
            return .handle(handler, logPath: logPath)
        case .methodNotAllowed(let allow):
            var response = HTTPResponse.error(.methodNotAllowed)
            response.headers.add(name: "Allow", value: (allow.map(\.rawValue) + ["OPTIONS"]).joined(separator: ", "))
            return .respond(response)
        case .notFound:
            return .respond(.error(.notFound))
        case .badPath:
            return .respond(.error(.badRequest))
        }
    }

    static func authority(of target: String) -> String? {
        guard !target.hasPrefix("/"), let scheme = target.firstRange(of: "://") else { return nil }
        let rest = target[scheme.upperBound...]
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        return String(rest[..<end])
    }

    /// Whether a `Host` value names this server: a loopback name, the local-network address the connection
    /// arrived on (`localHost`, only with ``HTTPServerConfiguration/listensOnLocalNetwork``) or one of
    /// ``HTTPServerConfiguration/additionalAllowedHosts``, with or without a port.
    func hostIsAllowed(_ host: String, localHost: String? = nil) -> Bool {
        var bytes = host
        return bytes.withUTF8 { hostIsAllowed($0[...], host: host, localHost: localHost) }
    }

    /// ``hostIsAllowed(_:localHost:)`` over the value's bytes in place (no copy into an array).
    private func hostIsAllowed(
        _ utf8: Slice<UnsafeBufferPointer<UInt8>>, host: String, localHost: String?
    ) -> Bool {
        var utf8 = utf8
        // Strip the port: ":" 1*5DIGIT after the host (after "]" for an IPv6 literal).
        let portSearchStart =
            utf8.first == UInt8(ascii: "[")
            ? (utf8.firstIndex(of: UInt8(ascii: "]")) ?? utf8.endIndex) : utf8.startIndex
        if utf8.first == UInt8(ascii: "["), portSearchStart == utf8.endIndex { return false }
        if let colon = utf8[portSearchStart...].firstIndex(of: UInt8(ascii: ":")) {
            let digits = utf8[(colon + 1)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return false
            }
            utf8 = utf8[..<colon]
        } else if utf8.first == UInt8(ascii: "["), portSearchStart + 1 != utf8.endIndex {
            return false  // junk after "]"
        }
        if utf8.elementsEqual("127.0.0.1".utf8) || ASCII.equalsIgnoringCase(utf8, "localhost".utf8)
            || utf8.elementsEqual("[::1]".utf8)
        {
            return true
        }
        if let localHost, utf8.elementsEqual(localHost.utf8) { return true }
        return configuration.additionalAllowedHosts.contains {
            ASCII.equalsIgnoringCase($0.utf8, utf8) || ASCII.equalsIgnoringCase($0.utf8, host.utf8)
        }
    }

    // MARK: - Completing a response

    enum BodyPart {
        case bytes([UInt8])
        case file(FileStreamer, offset: UInt64, length: UInt64)
    }

    enum PreparedBody {
        case none
        case parts([BodyPart])
        case stream(HTTPResponse.StreamBody, chunked: Bool)
    }

    /// A completed response. Its header fields are kept as parts, so that the event loop writes the head
    /// straight into bytes without building the whole list: `Date`, then ``headers`` (the handler's and the
    /// server's own fields, without framing fields), then ``contentRange``, ``framing`` and ``connection``;
    /// ``fields`` is that list as one ``HTTPHeaders``.
    struct Prepared {
        var status: HTTPStatus
        var date: String
        /// The fields between `Date` and the framing fields.
        var headers: HTTPHeaders
        /// The `Content-Range` of a single-range 206, written from its numbers.
        var contentRange: (range: ByteRange, completeLength: UInt64)?
        var framing: Framing
        var connection: ConnectionField
        var body: PreparedBody
        var keepAlive: Bool
        /// Body bytes that will be sent (nil for a stream of unknown length).
        var contentLength: UInt64?

        /// The framing field after ``headers``.
        enum Framing: Equatable {
            case none
            case contentLength(UInt64)
            case chunked
        }

        /// The `Connection` field, last.
        enum ConnectionField: Equatable {
            case none
            case close
            case keepAlive
        }

        /// Every header field of the response, in the order they are sent.
        var fields: HTTPHeaders {
            var fields = HTTPHeaders(reservingCapacity: headers.count + 3)
            fields.add(name: "Date", value: date)
            for field in headers { fields.append(field) }
            if let (range, completeLength) = contentRange {
                fields.add(name: "Content-Range", value: ContentRange.value(for: range, completeLength: completeLength))
            }
            switch framing {
            case .none: break
            case .contentLength(let length): fields.add(name: "Content-Length", value: String(length))
            case .chunked: fields.add(name: "Transfer-Encoding", value: "chunked")
            }
            switch connection {
            case .none: break
            case .close: fields.add(name: "Connection", value: "close")
            case .keepAlive: fields.add(name: "Connection", value: "keep-alive")
            }
            return fields
        }
    }

    /// Applies conditional requests, Range, HEAD, CORS and framing to a handler's response.
    func prepare(_ response: consuming HTTPResponse, for request: HTTPRequest, keepAlive: Bool, date: String)
        -> Prepared
    {
        var response = response
        var status = response.status
        // Taken, not copied: a response the caller hands over is edited in place.
        var headers = HTTPHeaders()
        swap(&headers, &response.headers)
        var keepAlive = keepAlive
        var parts: [BodyPart] = []
        var contentRange: (range: ByteRange, completeLength: UInt64)?
        var stream: HTTPResponse.StreamBody?
        var representationLength: UInt64 = 0
        var rangeable = false
        let isHead = request.method == .head

        switch response.body {
        case .empty:
            break
        case .bytes(let bytes):
            if !bytes.isEmpty { parts = [.bytes(bytes)] }
            representationLength = UInt64(bytes.count)
            rangeable = true
        case .file(let file):
            // The file may have shrunk since the handler looked: never promise more than it holds now.
            let size: UInt64
            if let observed = file.observedFileSize {
                size = observed
            } else {
                do { size = try file.file.size() } catch {
                    return prepare(.error(.internalServerError), for: request, keepAlive: false, date: date)
                }
            }
            let offset = min(file.offset, size)
            let length = min(file.length, size - offset)
            if length > 0 { parts = [.file(file.file, offset: offset, length: length)] }
            representationLength = length
            rangeable = true
        case .stream(let body):
            stream = body
            representationLength = body.length ?? 0
        }

        let isGetLike = request.method == .get || request.method == .head
        if status.code == 200 && isGetLike && rangeable {
            headers.replaceOrAdd(name: "Accept-Ranges", value: "bytes")
            if let bytes = Self.contentTagged(status, request.method, response.body, headers) {
                // In-memory bodies (playlists) get a strong validator from their content, so that clients can
                // revalidate (304) and use If-Range.
                headers.add(name: "ETag", value: response.contentTag ?? Self.contentEntityTag(bytes))
            }
            if let conditional = Self.evaluateConditionals(request: request, headers: headers) {
                status = conditional
                parts = []
                if conditional.code == 412 {
                    let text = Array("412 Precondition Failed\n".utf8)
                    headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
                    parts = [.bytes(text)]
                    representationLength = UInt64(text.count)
                } else {
                    // 304 keeps the validators and cache fields, drops the representation's content fields.
                    headers.remove(name: "Content-Type")
                    headers.remove(name: "Accept-Ranges")
                }
            } else if let rangeValue = request.headers.first(name: "Range"),
                Self.ifRangeAllows(request: request, headers: headers),
                let rangeRequest = RangeRequest.parse(rangeValue)
            {
                switch rangeRequest.resolve(length: representationLength, maxRanges: configuration.maxRanges) {
                case .full:
                    break
                case .unsatisfiable:
                    status = .rangeNotSatisfiable
                    headers.remove(name: "Content-Type")
                    headers.add(
                        name: "Content-Range",
                        value: ContentRange.unsatisfiedValue(completeLength: representationLength))
                    parts = []
                    representationLength = 0
                case .partial(let ranges):
                    status = .partialContent
                    if ranges.count == 1 {
                        let range = ranges[0]
                        contentRange = (range, representationLength)
                        Self.narrow(&parts, to: range)
                        representationLength = range.length
                    } else {
                        let contentType = headers.first(name: "Content-Type") ?? MediaType.octetStream
                        let boundary = Self.makeBoundary()
                        headers.replaceOrAdd(name: "Content-Type", value: "multipart/byteranges; boundary=\(boundary)")
                        var multipart: [BodyPart] = []
                        var total: UInt64 = 0
                        for range in ranges {
                            let partHead = Array(
                                "\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\nContent-Range: \(ContentRange.value(for: range, completeLength: representationLength))\r\n\r\n"
                                    .utf8)
                            multipart.append(.bytes(partHead))
                            total += UInt64(partHead.count) + range.length
                            multipart += Self.slice(parts, range)
                        }
                        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
                        multipart.append(.bytes(tail))
                        total += UInt64(tail.count)
                        parts = Self.coalesce(multipart)
                        representationLength = total
                    }
                }
            }
        }

        if let cors = configuration.cors {
            headers.replaceOrAdd(name: "Access-Control-Allow-Origin", value: cors.allowedOrigin)
            headers.replaceOrAdd(
                name: "Access-Control-Expose-Headers", value: "Content-Length, Content-Range, Accept-Ranges")
            if cors.allowedOrigin != "*" { headers.add(name: "Vary", value: "Origin") }
        }

        // Framing (RFC 9112 §6): Content-Length unless forbidden or a stream of unknown length. The server sets
        // the framing fields and `Date` itself: a handler's are dropped (the list is copied only when it has one).
        if headers.contains(where: { Self.isFramingField($0.name) }) {
            headers = HTTPHeaders(fields: headers.fields.filter { !Self.isFramingField($0.name) })
        }
        var framing = Prepared.Framing.none
        var contentLength: UInt64? = representationLength
        var body: PreparedBody = .parts(parts)
        var chunked = false
        if status.forbidsContent {
            contentLength = nil
            body = .none
            stream = nil
        } else if let stream {
            if let length = stream.length {
                framing = .contentLength(length)
            } else if request.version == .http1_1 {
                chunked = true
                framing = .chunked
                contentLength = nil
            } else {
                keepAlive = false  // HTTP/1.0: the body ends when the connection closes
                contentLength = nil
            }
            body = .stream(stream, chunked: chunked)
        } else {
            framing = .contentLength(representationLength)
        }
        var connection = Prepared.ConnectionField.none
        if !keepAlive {
            connection = .close
        } else if request.version == .http1_0 {
            connection = .keepAlive
        }
        if isHead {
            body = .none
            contentLength = 0
        }
        return Prepared(
            status: status, date: date, headers: headers, contentRange: contentRange, framing: framing,
            connection: connection, body: body, keepAlive: keepAlive, contentLength: contentLength)
    }

    /// Fields the server sets itself: a handler's values for them are dropped.
    static func isFramingField(_ name: String) -> Bool {
        let utf8 = name.utf8
        switch utf8.count {
        case 4: return ASCII.equalsIgnoringCase(utf8, "Date".utf8)
        case 10: return ASCII.equalsIgnoringCase(utf8, "Connection".utf8)
        case 14: return ASCII.equalsIgnoringCase(utf8, "Content-Length".utf8)
        case 17: return ASCII.equalsIgnoringCase(utf8, "Transfer-Encoding".utf8)
        default: return false
        }
    }

    /// The parts of `parts` (a representation in order) that fall in `range`.
    static func slice(_ parts: [BodyPart], _ range: ByteRange) -> [BodyPart] {
        var result: [BodyPart] = []
        var position: UInt64 = 0
        for part in parts {
            let partLength: UInt64
            switch part {
            case .bytes(let bytes): partLength = UInt64(bytes.count)
            case .file(_, _, let length): partLength = length
            }
            let start = max(position, range.offset)
            let end = min(position + partLength, range.upperBound)
            if start < end {
                let from = start - position
                let count = end - start
                switch part {
                case .bytes(let bytes):
                    result.append(.bytes(Array(bytes[Int(from)..<Int(from + count)])))
                case .file(let file, let offset, _):
                    result.append(.file(file, offset: offset + from, length: count))
                }
            }
            position += partLength
        }
        return result
    }

    /// ``slice(_:_:)`` in place: a single file part (a Range request into a file) is narrowed without a new list.
    static func narrow(_ parts: inout [BodyPart], to range: ByteRange) {
        if parts.count == 1, case .file(let file, let offset, let length) = parts[0], range.upperBound <= length {
            parts[0] = .file(file, offset: offset + range.offset, length: range.length)
        } else {
            parts = slice(parts, range)
        }
    }

    /// Merges adjacent byte parts.
    static func coalesce(_ parts: [BodyPart]) -> [BodyPart] {
        var result: [BodyPart] = []
        for part in parts {
            if case .bytes(let bytes) = part, case .bytes(let previous)? = result.last {
                result[result.count - 1] = .bytes(previous + bytes)
            } else {
                result.append(part)
            }
        }
        return result
    }

    static func makeBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return "LoopbackHTTP" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// RFC 9110 §13.2.2 steps 1–4 for GET/HEAD: 412 or 304, or nil to go on.
    static func evaluateConditionals(request: HTTPRequest, headers: HTTPHeaders) -> HTTPStatus? {
        var hasConditional = false
        for field in request.headers where field.name.utf8.count > 3 {
            let first = field.name.utf8.first ?? 0
            if first == UInt8(ascii: "I") || first == UInt8(ascii: "i") {
                hasConditional = true
                break
            }
        }
        guard hasConditional else { return nil }
        let entityTag = headers.first(name: "ETag")
        let lastModified = headers.first(name: "Last-Modified").flatMap(HTTPDate.parse)
        if let ifMatch = request.headers.first(name: "If-Match") {
            if !entityTagListMatches(ifMatch, entityTag, weak: false) { return .preconditionFailed }
        } else if let value = request.headers.first(name: "If-Unmodified-Since"), let date = HTTPDate.parse(value),
            let lastModified, lastModified > date
        {
            return .preconditionFailed
        }
        if let ifNoneMatch = request.headers.first(name: "If-None-Match") {
            if entityTagListMatches(ifNoneMatch, entityTag, weak: true) { return .notModified }
        } else if let value = request.headers.first(name: "If-Modified-Since"), let date = HTTPDate.parse(value),
            let lastModified, lastModified <= date
        {
            return .notModified
        }
        return nil
    }

    /// Whether a list of entity tags (or `*`) matches `entityTag` (weak or strong comparison, RFC 9110 §8.8.3.2).
    static func entityTagListMatches(_ list: String, _ entityTag: String?, weak: Bool) -> Bool {
        guard let entityTag else { return false }
        let trimmedList = list.trimmingSpaces
        if trimmedList == "*" { return true }
        let isWeakTag = entityTag.hasPrefix("W/")
        if !weak && isWeakTag { return false }
        let opaque = isWeakTag ? String(entityTag.dropFirst(2)) : entityTag
        for element in trimmedList.split(separator: ",") {
            var candidate = Substring(element.trimmingSpaces)
            if candidate.hasPrefix("W/") {
                if !weak { continue }
                candidate = candidate.dropFirst(2)
            }
            if candidate == opaque { return true }
        }
        return false
    }

    static func ifRangeAllows(request: HTTPRequest, headers: HTTPHeaders) -> Bool {
        guard let value = request.headers.first(name: "If-Range") else { return true }
        return IfRange.rangeApplies(
            ifRange: value, entityTag: headers.first(name: "ETag"),
            lastModified: headers.first(name: "Last-Modified").flatMap(HTTPDate.parse))
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var slice = Substring(self)
        while slice.first == " " || slice.first == "\t" { slice.removeFirst() }
        while slice.last == " " || slice.last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
