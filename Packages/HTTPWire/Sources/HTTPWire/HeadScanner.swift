/// Limits applied while reading a message head (a request head on the server, a response head in the client).
public struct HTTPParserLimits: Sendable, Hashable {
    /// Longest start line (a request line or a status line, without the line ending); longer → 414 for a request.
    public var maxRequestLineLength: Int = 8 * 1024
    /// Longest header block (every field line with its line ending, and the final empty line); longer → 431.
    public var maxHeaderBlockLength: Int = 16 * 1024
    /// Most header fields; more → 431.
    public var maxHeaderFields: Int = 100
    public init() {}
    public init(maxRequestLineLength: Int, maxHeaderBlockLength: Int, maxHeaderFields: Int) {
        self.maxRequestLineLength = maxRequestLineLength
        self.maxHeaderBlockLength = maxHeaderBlockLength
        self.maxHeaderFields = maxHeaderFields
    }
}

/// Finds where a head ends in a growing buffer, remembering how far it has searched so that a drip-fed head
/// costs linear time; it never consumes anything itself.
struct HeadScanner: Sendable {
    enum Outcome {
        case needMoreData
        case startLineTooLong(offset: Int)
        case headerBlockTooLarge(offset: Int)
        /// The start line ends at the LF at `startLineEnd`; the head ends just before `headEnd`.
        case found(startLineEnd: Int, headEnd: Int)
    }

    /// How many bytes at the start of the buffer are known not to contain the end of the head.
    private var searched = 0
    /// The index of the start line's LF once found.
    private var knownStartLineEnd = -1

    mutating func reset() {
        searched = 0
        knownStartLineEnd = -1
    }

    /// Scans `buffer` from `start` (past any tolerated leading empty line).
    mutating func scan(_ buffer: UnsafeBufferPointer<UInt8>, start: Int, limits: HTTPParserLimits) -> Outcome {
        let count = buffer.count
        var position = max(searched, start)
        var startLineEnd = knownStartLineEnd
        while startLineEnd < 0, position < count {
            if buffer[position] == 0x0A {
                startLineEnd = position
                break
            }
            position += 1
        }
        if startLineEnd < 0 {
            searched = count
            if count - start > limits.maxRequestLineLength + 1 {
                reset()
                return .startLineTooLong(offset: start)
            }
            return .needMoreData
        }
        knownStartLineEnd = startLineEnd
        var lineLength = startLineEnd - start
        if lineLength > 0, buffer[startLineEnd - 1] == 0x0D { lineLength -= 1 }
        if lineLength > limits.maxRequestLineLength {
            reset()
            return .startLineTooLong(offset: start)
        }
        // Find the empty line that ends the head: LF followed by LF or CR LF.
        let headerStart = startLineEnd + 1
        position = max(position, startLineEnd)
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
                return .headerBlockTooLarge(offset: headerStart)
            }
            return .needMoreData
        }
        reset()
        if headEnd - headerStart > limits.maxHeaderBlockLength { return .headerBlockTooLarge(offset: headerStart) }
        return .found(startLineEnd: startLineEnd, headEnd: headEnd)
    }
}

/// Why a field line was refused (RFC 9112 §5), mapped to each parser's error code.
enum FieldLineFailure {
    case obsoleteLineFolding, whitespaceBeforeColon, invalidFieldName, invalidFieldValue, bareCarriageReturn
    case tooManyFields
}

/// Field lines from `lineStart` up to the empty line before `headEnd` (RFC 9112 §5): names are tokens with no
/// whitespace before the colon, values are trimmed of surrounding whitespace and hold no control bytes; obsolete
/// line folding is refused.
func parseFieldLines(
    _ buffer: UnsafeBufferPointer<UInt8>, from firstLine: Int, headEnd: Int, maxFields: Int
) -> Result<HTTPHeaders, FieldLineError> {
    var headers = HTTPHeaders(reservingCapacity: 8)
    var lineStart = firstLine
    func fail(_ failure: FieldLineFailure, _ offset: Int) -> Result<HTTPHeaders, FieldLineError> {
        .failure(FieldLineError(failure: failure, offset: offset))
    }
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
        while j < contentEnd, HTTPASCII.isTokenCharacter(buffer[j]) { j += 1 }
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
        if headers.count >= maxFields { return fail(.tooManyFields, lineStart) }
        headers.add(name: asciiString(buffer, lineStart, nameEnd), value: asciiString(buffer, valueStart, valueEnd))
        lineStart = end + 1
    }
    return .success(headers)
}

struct FieldLineError: Error {
    var failure: FieldLineFailure
    var offset: Int
}

/// The bytes `from..<to` of `buffer` as a string (invalid UTF-8 repaired; field values may carry obs-text).
func asciiString(_ buffer: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: buffer[from..<to]), as: UTF8.self)
}
