public import FileRange
public import HTTPWire

/// A response a handler returns. The server completes it: `Date`, `Content-Length` (or chunked framing for a
/// streamed body of unknown length), `Connection`, `Accept-Ranges`, Range and conditional evaluation for
/// rangeable bodies, HEAD without content, and CORS fields when enabled.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: Body
    /// The ETag of an in-memory body, when it was computed before the response reached the event loop (by
    /// ``HTTPResponder`` on the answering thread, where the bytes were just made); `prepare` computes it otherwise.
    var contentTag: String?

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The content of a response.
    public enum Body: Sendable {
        /// No content (`Content-Length: 0`).
        case empty
        /// Bytes in memory. Range requests are answered from them.
        case bytes([UInt8])
        /// A region of an open file, sent with `sendfile` (with a `pread` fallback). Range requests are
        /// answered within the region. The file stays open while the response is being sent.
        case file(FileBody)
        /// A streamed body: chunks from an async sequence, sent with backpressure (the producer is not asked
        /// for the next chunk until the previous one has been handed to the socket). With a known `length`
        /// the response carries `Content-Length` (and the stream must produce exactly that many bytes, or the
        /// connection is closed); otherwise it is sent with `Transfer-Encoding: chunked` to HTTP/1.1 clients,
        /// or delimited by closing the connection for HTTP/1.0. Range requests are not applied to streams.
        case stream(StreamBody)
    }

    /// A file region body.
    public struct FileBody: Sendable {
        public var file: FileStreamer
        public var offset: UInt64
        public var length: UInt64
        /// Creates a body over `length` bytes at `offset`.
        /// The file size the handler saw a moment ago (saves the server another `fstat`).
        var observedFileSize: UInt64?
        public init(file: FileStreamer, offset: UInt64, length: UInt64) {
            self.file = file
            self.offset = offset
            self.length = length
        }
    }

    /// A streamed body.
    public struct StreamBody: Sendable {
        public var length: UInt64?
        let makeIterator: @Sendable () -> ChunkIterator
        /// The same bytes as a descriptor the server may relay from inside the kernel instead.
        var spliceSource: (any SpliceSource)?

        /// A body of known `length` whose bytes are also readable from a descriptor (an upstream socket): where
        /// the system has `splice` (Linux) the server moves them source → pipe → client without copying them
        /// into the process, and never iterates `sequence`; elsewhere, or when the source cannot be claimed, it
        /// pulls `sequence` as for any stream.
        public init<S: AsyncSequence & Sendable>(length: UInt64, _ sequence: S, spliceSource: any SpliceSource)
        where S.Element == [UInt8] {
            self.init(length: length, sequence)
            self.spliceSource = spliceSource
        }

        /// Wraps any async sequence of byte chunks. The sequence is iterated once, in a task of its own.
        public init<S: AsyncSequence & Sendable>(length: UInt64? = nil, _ sequence: S)
        where S.Element == [UInt8] {
            self.length = length
            self.makeIterator = {
                var iterator = sequence.makeAsyncIterator()
                return ChunkIterator { () async -> [UInt8]? in
                    do { return try await iterator.next() } catch { return nil }
                }
            }
        }
    }

    /// Type-erased pull of the next chunk (nil at the end or on a producer error).
    struct ChunkIterator {
        var next: () async -> [UInt8]?
    }

    /// A plain-text response, with `Content-Type: text/plain; charset=utf-8`.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: .bytes(Array(text.utf8)))
    }

    /// A response with bytes and a media type.
    public static func bytes(_ bytes: [UInt8], contentType: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: .bytes(bytes))
    }

    /// An error response with a short text body (used by the server for 4xx/5xx it generates itself).
    public static func error(_ status: HTTPStatus) -> HTTPResponse {
        text("\(status.code) \(status.reasonPhrase)\n", status: status)
    }

    /// A whole-file (or region) response with `Content-Type`, `Cache-Control: no-cache`, a strong `ETag` and
    /// `Last-Modified` derived
    /// from the file's size and modification time (read now, with `fstat`). Range, `If-Range`,
    /// `If-None-Match` and `If-Modified-Since` are then applied by the server.
    public static func file(
        _ file: FileStreamer, contentType: String, region: ByteRange? = nil
    ) throws(FileStreamerError) -> HTTPResponse {
        try HTTPResponse.file(file, status: fileStatus(file), contentType: contentType, region: region)
    }

    /// One fstat of the open file.
    static func fileStatus(_ file: FileStreamer) throws(FileStreamerError) -> FileStatus {
        let status: FileStatus?
        do {
            status = try file.withFileDescriptor { fd in FileStatus.of(fd) }
        } catch let error as FileStreamerError {
            throw error
        } catch {
            status = nil
        }
        guard let status else { throw FileStreamerError(.systemError, path: file.path, errno: .current) }
        return status
    }

    static func file(_ file: FileStreamer, status: FileStatus, contentType: String, region: ByteRange? = nil)
        -> HTTPResponse
    {
        let size = status.size
        var offset: UInt64 = 0
        var length = size
        if let region {
            offset = min(region.offset, size)
            length = min(region.length, size - offset)
        }
        // Made once per file version (FileValidatorCache), not once per request.
        let headers = FileValidatorCache.shared.fields(for: status, contentType: contentType)
        var body = FileBody(file: file, offset: offset, length: length)
        body.observedFileSize = size
        return HTTPResponse(status: .ok, headers: headers, body: .file(body))
    }

    /// A strong validator from size and modification time (like nginx: `"<mtime hex>-<size hex>"`, with the
    /// nanoseconds as well so that two writes within one second differ).
    static func entityTag(size: UInt64, seconds: Int64, nanoseconds: Int64) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(40)
        appendHex(UInt64(bitPattern: seconds), to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendHex(UInt64(bitPattern: nanoseconds), to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendHex(size, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func appendHex(_ value: UInt64, to bytes: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        var shift = 60
        while shift > 0, (value >> UInt64(shift)) & 0xF == 0 { shift -= 4 }
        while shift >= 0 {
            let digit = Int((value >> UInt64(shift)) & 0xF)
            bytes.append(digits.utf8Start[digit])
            shift -= 4
        }
    }
}

/// A descriptor a streamed body can be relayed from (see ``HTTPResponse/StreamBody/init(length:_:spliceSource:)``).
public protocol SpliceSource: AnyObject, Sendable {
    /// Hands the descriptor over for this response, in non-blocking mode, with the body bytes already read
    /// from it (at most the body's length); its next bytes are the rest of the body. Nil when it cannot be
    /// handed over (the server then iterates the stream).
    func claim() -> (descriptor: Int32, buffered: [UInt8])?
    /// Called once after a successful ``claim()``, when the server is done with the descriptor: `complete`
    /// is true when it read exactly the rest of the body from it, false when the relay stopped early (the
    /// client left, a stall, an error).
    func release(complete: Bool)
}
