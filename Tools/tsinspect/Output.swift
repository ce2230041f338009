// Buffered output to a file descriptor and a small JSON value type for tsinspect.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Collects output bytes and writes them to a descriptor in large blocks.
struct OutputBuffer {
    let fd: Int32
    var bytes: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        bytes.reserveCapacity(1 << 20)
    }

    mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// Appends a literal without going through String.
    mutating func append(literal text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func append(byte: UInt8) { bytes.append(byte) }

    /// Appends a decimal integer without allocating.
    mutating func append(decimal value: some BinaryInteger) {
        var magnitude = UInt64(truncatingIfNeeded: value < 0 ? -Int64(value) : Int64(value))
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[(20 - count)..<20]))
        }
    }

    mutating func flushIfLarge() {
        if bytes.count >= 1 << 20 { flush() }
    }

    mutating func flush() {
        var written = 0
        bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let count = write(fd, raw.baseAddress.map { $0 + written }, raw.count - written)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                written += count
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

/// A JSON value, rendered with keys in the given order.
indirect enum JSON {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case null

    static func int(_ value: some BinaryInteger) -> JSON { .integer(Int64(value)) }

    static func optional(_ value: (some BinaryInteger)?) -> JSON { value.map { .integer(Int64($0)) } ?? .null }

    func render(indent: Int = 0, pretty: Bool = true) -> String {
        var out = ""
        render(into: &out, indent: indent, pretty: pretty)
        return out
    }

    private func render(into out: inout String, indent: Int, pretty: Bool) {
        let newline = pretty ? "\n" : ""
        let pad = pretty ? String(repeating: "  ", count: indent + 1) : ""
        let closePad = pretty ? String(repeating: "  ", count: indent) : ""
        switch self {
        case .object(let members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{" + newline
            for (index, (key, value)) in members.enumerated() {
                out += pad + JSON.quote(key) + (pretty ? ": " : ":")
                value.render(into: &out, indent: indent + 1, pretty: pretty)
                out += (index + 1 < members.count ? "," : "") + newline
            }
            out += closePad + "}"
        case .array(let items):
            if items.isEmpty {
                out += "[]"
                return
            }
            out += "[" + newline
            for (index, value) in items.enumerated() {
                out += pad
                value.render(into: &out, indent: indent + 1, pretty: pretty)
                out += (index + 1 < items.count ? "," : "") + newline
            }
            out += closePad + "]"
        case .string(let text): out += JSON.quote(text)
        case .integer(let value): out += "\(value)"
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

func writeString(_ text: String, to fd: Int32) {
    var buffer = OutputBuffer(fd: fd)
    buffer.append(text)
    buffer.flush()
}

/// "0x0100"
func hexPID(_ pid: UInt16) -> String {
    let digits = String(pid, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

func hexByte(_ value: UInt8) -> String {
    let digits = String(value, radix: 16)
    return "0x" + (digits.count < 2 ? "0" : "") + digits
}

/// Seconds with three decimals, e.g. "5.005".
func formatSeconds(_ seconds: Double) -> String {
    let millis = Int64((seconds * 1000).rounded())
    let sign = millis < 0 ? "-" : ""
    let magnitude = abs(millis)
    let fraction = String(magnitude % 1000)
    return sign + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}
