// The one JSON writer of the tools, and the one style they all print:
// - members in the order the schema declares them (never sorted, never a dictionary's order);
// - strings escaped as RFC 8259 requires and nothing more (`/` is not escaped);
// - whole numbers without a fraction (`6`, not `6.0`), absent values as `null`, non-finite numbers as `null`;
// - a document indented by two spaces (`"key": value`); output that streams (events, one line per item) is one
//   compact object per line (JSON Lines).

/// Appends JSON text to a byte buffer, value by value: `object { key("a"); number(1) }`.
package struct JSONWriter {
    package var out: [UInt8] = []
    /// Indented documents (true) or one compact line (false).
    package let pretty: Bool
    /// Per open container: whether it has a member yet.
    private var open: [Bool] = []

    package init(pretty: Bool = true) { self.pretty = pretty }

    /// Bytes written as they are (a value already in JSON).
    package mutating func raw(_ text: String) { out.append(contentsOf: text.utf8) }

    package mutating func null() { raw("null") }

    package mutating func string(_ text: String) {
        out.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: raw("\\\"")
            case 0x5C: raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                raw("\\u00")
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 15)])
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    package mutating func string(_ text: String?) {
        if let text { string(text) } else { null() }
    }

    package mutating func number(_ value: some BinaryInteger) { raw(String(value)) }

    package mutating func number(_ value: (some BinaryInteger)?) {
        if let value { raw(String(value)) } else { null() }
    }

    /// A whole number without a fraction; a non-finite one (or nil) as null.
    package mutating func number(_ value: Double?) {
        guard let value, value.isFinite else { return null() }
        if value == value.rounded(), abs(value) < 1e15 { raw(String(Int64(value))) } else { raw(String(value)) }
    }

    package mutating func bool(_ value: Bool) { raw(value ? "true" : "false") }

    /// An object: `body` writes its members, each started by ``key(_:)``.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        container(open: 0x7B, close: 0x7D, body)
    }

    /// An array: `body` writes its elements, each started by ``element()``.
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        container(open: 0x5B, close: 0x5D, body)
    }

    private mutating func container(open byte: UInt8, close: UInt8, _ body: (inout JSONWriter) -> Void) {
        out.append(byte)
        open.append(false)
        body(&self)
        let hadMembers = open.removeLast()
        if pretty && hadMembers { newline() }
        out.append(close)
    }

    /// Starts a member of the innermost object.
    package mutating func key(_ name: String) {
        element()
        string(name)
        raw(pretty ? ": " : ":")
    }

    /// Starts an element of the innermost array.
    package mutating func element() {
        guard let last = open.indices.last else { return }
        if open[last] { out.append(0x2C) }
        open[last] = true
        if pretty { newline() }
    }

    private mutating func newline() {
        out.append(0x0A)
        out.append(contentsOf: repeatElement(0x20, count: 2 * open.count))
    }

    /// Writes a whole value.
    package mutating func write(_ value: JSON) {
        switch value {
        case .object(let members):
            object { writer in
                for (name, member) in members {
                    writer.key(name)
                    writer.write(member)
                }
            }
        case .array(let items):
            array { writer in
                for item in items {
                    writer.element()
                    writer.write(item)
                }
            }
        case .string(let text): string(text)
        case .integer(let number): self.number(number)
        case .double(let number): self.number(number)
        case .bool(let flag): bool(flag)
        case .null: null()
        }
    }

    /// The text written so far.
    package var text: String { String(decoding: out, as: UTF8.self) }
}

/// A JSON value whose object members keep the order they are given in.
package indirect enum JSON: Equatable, Sendable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case null

    package static func int(_ value: some BinaryInteger) -> JSON { .integer(Int64(value)) }

    package static func optional(_ value: (some BinaryInteger)?) -> JSON { value.map { .integer(Int64($0)) } ?? .null }

    package static func optional(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }

    package static func optional(_ value: Double?) -> JSON { value.map { .double($0) } ?? .null }

    /// The value as text in the house style: indented (a document) or on one line (a line of a stream).
    package func render(pretty: Bool = true) -> String {
        var writer = JSONWriter(pretty: pretty)
        writer.write(self)
        return writer.text
    }

    package static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }
}
