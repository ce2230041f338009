// Fuzzes LoopbackHTTP's request-head parser and FileRange's Range parser and resolver.
// Properties checked on every input (a violation aborts, which libFuzzer reports as a crash):
//  - parsing never traps, and a parse that answers `.request` consumed a positive count within the input;
//  - feeding the bytes in two chunks split at an input-chosen point gives the same outcome as one shot (the parser
//    never consumes partial input);
//  - every refusal maps to a 4xx or 5xx status;
//  - a Range header (from a parsed request, or the raw input) resolves to ranges inside the representation, sorted,
//    non-empty and neither overlapping nor touching.
// Run with Scripts/fuzz.sh HTTPRequestFuzzer SECONDS, which passes the dictionary Sources/HTTPRequestFuzzer/http.dict.

import FileRange
import FuzzSupport
import LoopbackHTTP

func checkRange(_ value: String, seed: Int) {
    guard let request = RangeRequest.parse(value) else { return }
    for length in [UInt64(0), 1, 100, UInt64(seed), 1 << 40] {
        guard case .partial(let ranges) = request.resolve(length: length) else { continue }
        var previousEnd: UInt64?
        for range in ranges {
            if range.length == 0 || range.upperBound > length { fail("range \(range) outside \(length)") }
            if let previousEnd, range.offset <= previousEnd { fail("ranges overlap or touch") }
            previousEnd = range.upperBound
        }
    }
}

func fuzzOne(_ bytes: [UInt8]) {
    var parser = HTTPRequestHeadParser()
    let oneShot = parser.parse(bytes)
    switch oneShot {
    case .needMoreData:
        break
    case .request(let request, let consumed):
        if consumed <= 0 || consumed > bytes.count { fail("consumed \(consumed) of \(bytes.count)") }
        if let range = request.headers["Range"] { checkRange(range, seed: bytes.count) }
    case .error(let error):
        if !(400..<600).contains(error.status.code) { fail("status \(error.status)") }
    }
    if bytes.count > 1 {
        let split = Int(bytes[0]) % bytes.count
        var chunked = HTTPRequestHeadParser()
        let first = chunked.parse(Array(bytes[0..<split]))
        switch first {
        case .needMoreData:
            // Same parser, whole input now: must agree with the one-shot parse.
            switch (oneShot, chunked.parse(bytes)) {
            case (.needMoreData, .needMoreData), (.error, .error): break
            case (.request(let a, let ca), .request(let b, let cb)):
                if a.target != b.target || a.headers != b.headers || ca != cb { fail("chunked parse differs") }
            default: fail("chunked parse differs in kind")
            }
        case .request(_, let consumed):
            if consumed > split { fail("consumed past the prefix") }
        case .error:
            break  // a prefix may already be refused (e.g. a request line over the cap)
        }
    }
    checkRange(String(decoding: bytes, as: UTF8.self), seed: bytes.count)
}

runFuzzer { fuzzOne(Array($0)) }
