// Fuzzes HTTPWire's response side, what the client reads from remote servers: the response-head parser and the
// chunked-body decoder. The first two input bytes seed how the rest is split into arrival chunks; the rest is the
// bytes a server sent. Nothing may trap, errors are typed (the parsers throw or return only their own error types),
// and the result must not depend on how the bytes arrived:
//   - the head parsed from growing prefixes (as a socket fills a buffer) equals the head parsed whole: the same head
//     and length, the same error (code and offset), or more data needed in both;
//   - the bytes after the head (or all of them), decoded as a chunked body piece by piece, give the same body bytes
//     and the same ending (end, more data needed, or the same error at the same offset) as decoded whole;
//   - a parsed head's body framing is decided without trapping.
import FuzzSupport
import HTTPWire

/// Chunk lengths from a seed: 1...64 bytes each, sometimes a whole 0...4096 run.
struct Splits {
    var state: UInt32
    init(seed: UInt16) { state = UInt32(seed) &* 2_654_435_761 | 1 }
    mutating func next() -> Int {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return state % 8 == 0 ? Int(state >> 8 % 4097) : Int(state >> 8 % 64) + 1
    }
}

enum HeadOutcome: Equatable {
    case needMoreData
    case response(HTTPResponseHead, Int)
    case error(HTTPResponseHeadError)

    init(_ result: HTTPResponseHeadParser.Result) {
        switch result {
        case .needMoreData: self = .needMoreData
        case .response(let head, let consumed): self = .response(head, consumed)
        case .error(let error): self = .error(error)
        }
    }
}

enum BodyEnding: Equatable {
    case end(consumed: Int)
    case needMoreData
    case error(HTTPChunkedError)
}

/// Decodes `bytes` as a chunked body, handed over in the given pieces; the body bytes and how it ended.
func decodeChunked(_ bytes: ArraySlice<UInt8>, pieces: [Int]) -> (body: [UInt8], ending: BodyEnding) {
    var decoder = HTTPChunkedDecoder()
    var pending: [UInt8] = []
    var body: [UInt8] = []
    var total = 0
    var offset = bytes.startIndex
    for piece in pieces {
        let end = min(bytes.endIndex, offset + piece)
        pending += bytes[offset..<end]
        offset = end
        while true {
            let step: HTTPChunkedDecoder.Step
            let consumed: Int
            do {
                (step, consumed) = try decoder.decode(pending)
            } catch {
                return (body, .error(error))
            }
            if consumed < 0 || consumed > pending.count { fail("consumed \(consumed) of \(pending.count)") }
            if case .data(let range) = step {
                if range.lowerBound < 0 || range.upperBound > consumed { fail("data outside the consumed prefix") }
                body += pending[range]
            }
            pending.removeFirst(consumed)
            total += consumed
            if step == .end {
                if !decoder.isFinished { fail("end without being finished") }
                return (body, .end(consumed: total))
            }
            if step == .needMoreData { break }
        }
    }
    return (body, .needMoreData)
}

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    guard raw.count >= 2 else { return }
    let all = [UInt8](raw)
    let input = Array(all[2...])
    var splits = Splits(seed: UInt16(all[0]) << 8 | UInt16(all[1]))
    var pieces: [Int] = []
    var covered = 0
    while covered < input.count {
        let n = splits.next()
        pieces.append(n)
        covered += n
    }
    if pieces.isEmpty { pieces = [0] }

    // The head, whole and as it arrives.
    var whole = HTTPResponseHeadParser()
    let wholeHead = HeadOutcome(whole.parse(input))
    var growing = HTTPResponseHeadParser()
    var prefix: [UInt8] = []
    var split = HeadOutcome.needMoreData
    for piece in pieces {
        prefix += input[prefix.count..<min(input.count, prefix.count + piece)]
        split = HeadOutcome(growing.parse(prefix))
        if split != .needMoreData { break }
    }
    if split != wholeHead { fail("head: whole \(wholeHead), split \(split)") }
    var bodyStart = 0
    if case .response(let head, let consumed) = wholeHead {
        if consumed <= 0 || consumed > input.count { fail("head consumed \(consumed) of \(input.count)") }
        bodyStart = consumed
        _ = try? head.bodyFraming(requestMethod: .get)
        _ = try? head.bodyFraming(requestMethod: .head)
        _ = head.keepAlive
    }

    // The body as chunked transfer coding, whole and as it arrives.
    let rest = input[bodyStart...]
    let once = decodeChunked(rest, pieces: [max(rest.count, 0)])
    let piecewise = decodeChunked(rest, pieces: pieces)
    if once.ending != piecewise.ending { fail("chunked: whole ended \(once.ending), split \(piecewise.ending)") }
    if once.body != piecewise.body {
        fail("chunked: body \(once.body.count) bytes whole, \(piecewise.body.count) split")
    }
}

runFuzzer(fuzzOne)
