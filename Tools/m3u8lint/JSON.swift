// A small JSON writer: values are appended to a byte buffer in order.

/// Appends JSON text to a byte buffer.
struct JSONWriter {
    var out: [UInt8] = []
    /// State of a document streamed in pieces (the IPTV channel list).
    var streamOpened = false
    var streamFirst = true

    mutating func raw(_ s: String) { out.append(contentsOf: s.utf8) }

    mutating func string(_ s: String) {
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: raw("\\\"")
            case 0x5C: raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                raw("\\u00")
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 15)])
            default: out.append(b)
            }
        }
        out.append(0x22)
    }

    mutating func string(_ s: String?) {
        if let s { string(s) } else { raw("null") }
    }
    mutating func number(_ v: UInt64?) { raw(v.map { String($0) } ?? "null") }
    mutating func number(_ v: Int) { raw(String(v)) }
    mutating func number(_ v: Double?) {
        guard let v, v.isFinite else {
            raw("null")
            return
        }
        if v == v.rounded(), abs(v) < 1e15 { raw(String(Int64(v))) } else { raw(String(v)) }
    }
    mutating func bool(_ v: Bool) { raw(v ? "true" : "false") }

    /// An object: `body` writes members with `key(_:)` between them.
    private var needsComma: [Bool] = []
    mutating func object(_ body: (inout JSONWriter) -> Void) {
        out.append(0x7B)
        needsComma.append(false)
        body(&self)
        needsComma.removeLast()
        out.append(0x7D)
    }
    mutating func array(_ body: (inout JSONWriter) -> Void) {
        out.append(0x5B)
        needsComma.append(false)
        body(&self)
        needsComma.removeLast()
        out.append(0x5D)
    }
    /// Starts a member (in an object) or an element (in an array).
    mutating func key(_ k: String) {
        element()
        string(k)
        out.append(0x3A)
    }
    mutating func element() {
        if needsComma.last == true { out.append(0x2C) }
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
    }
}
