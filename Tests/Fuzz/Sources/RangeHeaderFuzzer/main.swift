// Fuzzes FileRange's Range header (RFC 9110 §14.1.1, §14.2): the first two input bytes choose the representation's
// length, the rest is the header value. Nothing may trap, and:
//   - the byte and String parsers agree on valid UTF-8;
//   - a resolved partial answer is sorted, coalesced (no two ranges touch), non-empty, within the length, and never
//     more ranges than allowed; an unsatisfiable answer means no specifier overlaps the representation.
import FileRange
import FuzzSupport

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    guard raw.count >= 2 else { return }
    let bytes = [UInt8](raw)
    let length = UInt64(bytes[0]) << 8 | UInt64(bytes[1])
    let value = bytes[2...]
    let parsed = RangeRequest.parse(value)
    var utf8 = true
    var decoded = ""
    decoded = String(decoding: value, as: UTF8.self)
    if Array(decoded.utf8) != Array(value) { utf8 = false }
    if utf8 && RangeRequest.parse(decoded) != parsed { fail("byte and String parsers differ") }
    guard let request = parsed else { return }
    if request.specifiers.count > RangeRequest.maximumSpecifierCount { fail("more specifiers than the cap") }
    for maxRanges in [1, 16] {
        switch request.resolve(length: length, maxRanges: maxRanges) {
        case .full:
            break
        case .unsatisfiable:
            for specifier in request.specifiers {
                switch specifier {
                case .range(let first, _):
                    if first < length { fail("unsatisfiable although a range starts inside") }
                case .suffix(let count):
                    if count > 0 && length > 0 { fail("unsatisfiable although a suffix overlaps") }
                }
            }
        case .partial(let ranges):
            if ranges.isEmpty || ranges.count > maxRanges { fail("partial with \(ranges.count) ranges") }
            var end: UInt64? = nil
            for range in ranges {
                if range.length == 0 { fail("an empty range") }
                if range.offset + range.length > length { fail("a range past the end") }
                if let end, range.offset <= end { fail("ranges not sorted and coalesced") }
                end = range.offset + range.length
            }
        }
    }
}

runFuzzer(fuzzOne)
