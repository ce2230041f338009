import FileRange
import LoopbackHTTP

// libFuzzer target over LoopbackHTTP's request-head parser and FileRange's Range parser/resolver.
// Build (from Tests/Fuzz): swift build -c debug -Xswiftc -sanitize=fuzzer,address
// Run: .build/debug/HTTPRequestFuzzer -dict=Sources/HTTPRequestFuzzer/http.dict corpus/
// The executable's own entry point hands control to libFuzzer's driver (LLVMFuzzerRunDriver), so it works whether
// or not the build links libFuzzer's `main`; `LLVMFuzzerTestOneInput` is exported for the standard driver too.
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
//  - parsing never traps, and a parse that answers `.request` consumed a positive count within the input;
//  - feeding the same bytes in two chunks split anywhere gives the same result as one shot (no partial consumption);
//  - every error maps to a 4xx/5xx status;
//  - a parsed Range header resolves to ranges that lie inside the representation, sorted and disjoint.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum HTTPRequestFuzzer {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = runDriver(&argc, &argv) { data, size in
            guard let data else { return 0 }
            return fuzz(data, size)
        }
        exit(status)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var parser = HTTPRequestHeadParser()
    let oneShot = parser.parse(bytes)
    switch oneShot {
    case .needMoreData:
        break
    case .request(let request, let consumed):
        guard consumed > 0, consumed <= bytes.count else { fatalError("consumed \(consumed) of \(bytes.count)") }
        if let range = request.headers["Range"] { checkRange(range, seed: bytes.count) }
    case .error(let error):
        guard (400..<600).contains(error.status.code) else { fatalError("status \(error.status)") }
    }
    // Split anywhere: the first call must not consume anything it cannot finish.
    if bytes.count > 1 {
        let split = Int(bytes[0]) % bytes.count
        var chunked = HTTPRequestHeadParser()
        let first = chunked.parse(Array(bytes[0..<split]))
        let final: HTTPRequestHeadParser.Result
        if case .needMoreData = first {
            final = chunked.parse(bytes)
        } else {
            final = first
            // An early answer on a prefix must be an error the whole input also produces, or a complete request.
            if case .request(_, let consumed) = first, consumed > split { fatalError("consumed past the prefix") }
        }
        switch (oneShot, final) {
        case (.needMoreData, .needMoreData): break
        case (.request(let a, let ca), .request(let b, let cb)):
            if case .request = first {
            } else if a.target != b.target || a.headers != b.headers || ca != cb {
                fatalError("chunked parse differs")
            }
        case (.error, .error): break
        default:
            if case .needMoreData = first { fatalError("chunked parse differs in kind") }
        }
    }
    // The Range parser on the raw input too.
    checkRange(String(decoding: bytes, as: UTF8.self), seed: bytes.count)
    return 0
}

private func checkRange(_ value: String, seed: Int) {
    guard let request = RangeRequest.parse(value) else { return }
    for length in [UInt64(0), 1, 100, UInt64(seed), 1 << 40] {
        switch request.resolve(length: length) {
        case .full, .unsatisfiable:
            break
        case .partial(let ranges):
            var previousEnd: UInt64?
            for range in ranges {
                guard range.length > 0, range.upperBound <= length else {
                    fatalError("range \(range) outside \(length)")
                }
                if let previousEnd, range.offset <= previousEnd { fatalError("ranges overlap or touch") }
                previousEnd = range.upperBound
            }
        }
    }
}
