import TextCodecs

/// Why a chunked body was refused, with the byte offset from the start of the body.
public struct HTTPChunkedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong (opaque, so that cases can be added).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case invalidChunkSize = "malformed chunk size"
            case chunkSizeTooLarge = "chunk size too large"
            case chunkLineTooLong = "chunk size line too long"
            case missingChunkTerminator = "chunk data not followed by a line ending"
            case trailerTooLarge = "trailer section too large"
            case invalidTrailer = "malformed trailer field"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        public static let invalidChunkSize = Code(.invalidChunkSize)
        public static let chunkSizeTooLarge = Code(.chunkSizeTooLarge)
        public static let chunkLineTooLong = Code(.chunkLineTooLong)
        public static let missingChunkTerminator = Code(.missingChunkTerminator)
        public static let trailerTooLarge = Code(.trailerTooLarge)
        public static let invalidTrailer = Code(.invalidTrailer)
        public var description: String { value.rawValue }
    }

    public var code: Code
    /// Byte offset from the start of the chunked body.
    public var offset: UInt64

    public init(code: Code, offset: UInt64) {
        self.code = code
        self.offset = offset
    }

    public var description: String { "\(code) at byte \(offset) of the chunked body" }
}

/// An incremental decoder of the chunked transfer coding (RFC 9112 §7.1), capped in line length, chunk size and
/// trailer size. Feed it the unconsumed bytes each time; it consumes only whole elements (a size line, a data
/// piece, a line ending, a trailer line), so the caller drops `consumed` bytes and calls again with more.
public struct HTTPChunkedDecoder: Sendable {
    /// Caps on what the decoder accepts.
    public struct Limits: Sendable, Hashable {
        /// Longest chunk-size line (size and extensions, without the line ending).
        public var maxChunkLineLength: Int = 4096
        /// Largest size of one chunk.
        public var maxChunkSize: UInt64 = 1 << 40
        /// Longest trailer section, line endings included.
        public var maxTrailerBytes: Int = 16 * 1024
        public init() {}
    }

    /// What one call produced.
    public enum Step: Hashable, Sendable {
        /// More bytes are needed (after dropping `consumed`).
        case needMoreData
        /// Body bytes: this range of the buffer passed in (within the consumed prefix).
        case data(Range<Int>)
        /// The body ended (the last chunk and the trailers were consumed).
        case end
    }

    private enum State: Hashable, Sendable {
        case sizeLine
        case data(left: UInt64)
        case dataEnd
        case trailers(bytes: Int)
        case done
    }

    public var limits: Limits
    private var state: State = .sizeLine
    /// Bytes consumed so far, for error offsets.
    private var position: UInt64 = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether the whole body has been decoded.
    public var isFinished: Bool { state == .done }

    /// Data bytes still to come in the current chunk (0 between chunks), for a reader that reads them directly.
    public var remainingInChunk: UInt64 {
        if case .data(let left) = state { return left }
        return 0
    }

    /// Tells the decoder that `count` bytes of the current chunk's data were read by the caller directly, not
    /// passed through ``decode(_:)``; `count` must be at most ``remainingInChunk``.
    public mutating func skipData(_ count: UInt64) {
        guard case .data(let left) = state else { return }
        let taken = min(count, left)
        position &+= taken
        state = left - taken == 0 ? .dataEnd : .data(left: left - taken)
    }

    /// Decodes from the start of `bytes`.
    public mutating func decode(_ bytes: [UInt8]) throws(HTTPChunkedError) -> (step: Step, consumed: Int) {
        // A Result, not a typed-throws closure: the iOS 16/17 SDKs' standard library declares
        // withUnsafeBufferPointer with an untyped `rethrows`.
        let result: Result<(step: Step, consumed: Int), HTTPChunkedError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(HTTPChunkedError) {
                return .success(try decode(buffer))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    /// Decodes from the start of `buffer`: returns what it found and how many bytes it consumed.
    public mutating func decode(_ buffer: UnsafeBufferPointer<UInt8>) throws(HTTPChunkedError)
        -> (step: Step, consumed: Int)
    {
        var index = 0
        let count = buffer.count
        func fail(_ code: HTTPChunkedError.Code, at offset: Int) -> HTTPChunkedError {
            HTTPChunkedError(code: code, offset: position &+ UInt64(offset))
        }
        func finish(_ step: Step) -> (step: Step, consumed: Int) {
            position &+= UInt64(index)
            return (step, index)
        }
        while true {
            switch state {
            case .done:
                return finish(.end)
            case .sizeLine:
                guard let lineEnd = Self.lineEnd(buffer, from: index) else {
                    if count - index > limits.maxChunkLineLength + 1 { throw fail(.chunkLineTooLong, at: index) }
                    return finish(.needMoreData)
                }
                let contentEnd = lineEnd.content
                if contentEnd - index > limits.maxChunkLineLength { throw fail(.chunkLineTooLong, at: index) }
                // chunk-size [ chunk-ext ]: hex digits, then nothing, or extensions after BWS and ';'.
                var size: UInt64 = 0
                var j = index
                while j < contentEnd, let digit = Hex.value(of: buffer[j]) {
                    guard size <= (UInt64.max >> 4) else { throw fail(.chunkSizeTooLarge, at: index) }
                    size = size << 4 | UInt64(digit)
                    j += 1
                }
                if j == index { throw fail(.invalidChunkSize, at: index) }
                if size > limits.maxChunkSize { throw fail(.chunkSizeTooLarge, at: index) }
                var k = j
                while k < contentEnd, buffer[k] == 0x20 || buffer[k] == 0x09 { k += 1 }
                if k < contentEnd, buffer[k] != 0x3B { throw fail(.invalidChunkSize, at: k) }
                for e in k..<contentEnd {
                    let byte = buffer[e]
                    if byte < 0x20 && byte != 0x09 || byte == 0x7F { throw fail(.invalidChunkSize, at: e) }
                }
                index = lineEnd.next
                state = size == 0 ? .trailers(bytes: 0) : .data(left: size)
            case .data(let left):
                guard index < count else { return finish(.needMoreData) }
                let available = UInt64(count - index)
                let take = min(left, available)
                let start = index
                index += Int(take)
                state = left - take == 0 ? .dataEnd : .data(left: left - take)
                return finish(.data(start..<index))
            case .dataEnd:
                guard index < count else { return finish(.needMoreData) }
                if buffer[index] == 0x0A {
                    index += 1
                } else if buffer[index] == 0x0D {
                    guard index + 1 < count else { return finish(.needMoreData) }
                    guard buffer[index + 1] == 0x0A else { throw fail(.missingChunkTerminator, at: index) }
                    index += 2
                } else {
                    throw fail(.missingChunkTerminator, at: index)
                }
                state = .sizeLine
            case .trailers(let bytes):
                guard let lineEnd = Self.lineEnd(buffer, from: index) else {
                    if bytes + count - index > limits.maxTrailerBytes { throw fail(.trailerTooLarge, at: index) }
                    return finish(.needMoreData)
                }
                let total = bytes + lineEnd.next - index
                if total > limits.maxTrailerBytes { throw fail(.trailerTooLarge, at: index) }
                if lineEnd.content == index {
                    index = lineEnd.next
                    state = .done
                    return finish(.end)
                }
                // A trailer field line: token ":" value, no folding, no control bytes (RFC 9112 §7.1.2).
                var j = index
                while j < lineEnd.content, HTTPASCII.isTokenCharacter(buffer[j]) { j += 1 }
                guard j > index, j < lineEnd.content, buffer[j] == 0x3A else { throw fail(.invalidTrailer, at: j) }
                for v in (j + 1)..<lineEnd.content {
                    let byte = buffer[v]
                    if byte < 0x20 && byte != 0x09 || byte == 0x7F { throw fail(.invalidTrailer, at: v) }
                }
                index = lineEnd.next
                state = .trailers(bytes: total)
            }
        }
    }

    /// The end of the line starting at `from`: where its content ends (before CR LF or LF) and where the next
    /// line starts; nil when no LF is buffered yet.
    private static func lineEnd(_ buffer: UnsafeBufferPointer<UInt8>, from: Int) -> (content: Int, next: Int)? {
        var i = from
        while i < buffer.count {
            if buffer[i] == 0x0A {
                let content = i > from && buffer[i - 1] == 0x0D ? i - 1 : i
                return (content, i + 1)
            }
            i += 1
        }
        return nil
    }
}

/// The chunked transfer coding's writer (RFC 9112 §7.1).
public enum HTTPChunkedEncoder {
    /// The line that starts a chunk of `count` bytes (hex size and CR LF).
    public static func chunkHeader(count: Int) -> [UInt8] {
        var out: [UInt8] = []
        appendChunkHeader(count: count, to: &out)
        return out
    }

    /// Appends the line that starts a chunk of `count` bytes.
    public static func appendChunkHeader(count: Int, to out: inout [UInt8]) {
        var value = UInt(max(0, count))
        var reversed: [UInt8] = []
        repeat {
            reversed.append(Hex.digit(UInt8(value & 0xF)))
            value >>= 4
        } while value > 0
        out += reversed.reversed()
        out += [0x0D, 0x0A]
    }

    /// Appends one whole chunk (header, data, CR LF); nothing for empty data, which would end the body.
    public static func appendChunk(_ data: some Collection<UInt8>, to out: inout [UInt8]) {
        guard !data.isEmpty else { return }
        appendChunkHeader(count: data.count, to: &out)
        out += data
        out += [0x0D, 0x0A]
    }

    /// The CR LF that ends a chunk's data.
    public static let chunkEnd: [UInt8] = [0x0D, 0x0A]

    /// The last chunk with no trailers.
    public static let end: [UInt8] = Array("0\r\n\r\n".utf8)
}
