import TextCodecs

/// EXT-X-DEFINE variables in effect for one playlist (RFC 8216bis §4.3, §4.4.2.3).
public struct Variables: Sendable, Hashable {
    public var values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    /// Collects the playlist's EXT-X-DEFINE tags: NAME/VALUE pairs, IMPORT from `parent` (the variables of the
    /// multivariant playlist) and QUERYPARAM from the query of `url`. Problems (a missing import, a missing query
    /// parameter, a duplicate name) come back as diagnostics.
    public static func collect(from playlist: Playlist, url: String?, parent: Variables?) -> (
        Variables, [ParseDiagnostic]
    ) {
        var defines: [(index: Int, attributes: AttributeList)] = []
        let lines = playlist.lines
        for index in lines.indices where lines[index].storedKnownTag == .define {
            if case .tag(let tag) = lines[index].content, let a = tag.attributes { defines.append((index, a)) }
        }
        return collect(defines: defines, url: url, parent: parent)
    }

    /// Collects variables from EXT-X-DEFINE attribute lists given with their 0-based line indices.
    static func collect(defines: [(index: Int, attributes: AttributeList)], url: String?, parent: Variables?) -> (
        Variables, [ParseDiagnostic]
    ) {
        if defines.isEmpty { return (Variables(), []) }
        var values: [String: String] = [:]
        var problems: [ParseDiagnostic] = []
        let query = url.map { URIReference($0) }
        for (index, a) in defines {
            let lineNumber = index + 1
            func problem(_ message: String) {
                problems.append(
                    ParseDiagnostic(PlaylistError(.undefinedVariable, line: lineNumber, column: 1, message)))
            }
            var name: String?
            var value: String?
            if let n = a.quotedString("NAME") {
                name = n
                value = a.quotedString("VALUE")
                if value == nil { problem("EXT-X-DEFINE NAME=\"\(n)\" has no VALUE") }
            } else if let n = a.quotedString("IMPORT") {
                name = n
                value = parent?.values[n]
                if value == nil { problem("EXT-X-DEFINE IMPORT=\"\(n)\": the multivariant playlist defines no \(n)") }
            } else if let n = a.quotedString("QUERYPARAM") {
                name = n
                value = query?.queryParameter(n)
                if value == nil { problem("EXT-X-DEFINE QUERYPARAM=\"\(n)\": the playlist URL has no such parameter") }
            }
            if let name, let value {
                if values[name] != nil { problem("variable \(name) is defined more than once") }
                values[name] = value
            }
        }
        return (Variables(values), problems)
    }

    /// Replaces every `{$name}` in `text`. Unknown names are left as written and returned in `undefined`.
    /// Returns nil when the result would be longer than `maxLength`.
    public func substitute(_ text: String, maxLength: Int = 1 << 20) -> (text: String, undefined: [String])? {
        guard utf8Contains(text, 0x7B) else { return (text, []) }
        let u = Array(text.utf8)
        var out: [UInt8] = []
        var undefined: [String] = []
        var i = 0
        while i < u.count {
            if u[i] == 0x7B, i + 1 < u.count, u[i + 1] == 0x24 {
                var j = i + 2
                while j < u.count, isNameByte(u[j]) { j += 1 }
                if j < u.count, u[j] == 0x7D, j > i + 2 {
                    let name = String(decoding: u[(i + 2)..<j], as: UTF8.self)
                    if let v = values[name] {
                        out.append(contentsOf: v.utf8)
                    } else {
                        undefined.append(name)
                        out.append(contentsOf: u[i...j])
                    }
                    if out.count > maxLength { return nil }
                    i = j + 1
                    continue
                }
            }
            out.append(u[i])
            i += 1
        }
        return (String(decoding: out, as: UTF8.self), undefined)
    }

    private func isNameByte(_ b: UInt8) -> Bool {
        ASCII.isDigit(b) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == 0x2D || b == 0x5F
    }
}
