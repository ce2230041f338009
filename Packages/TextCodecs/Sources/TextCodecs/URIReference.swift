/// An RFC 3986 URI reference split into its five components, with reference resolution (§5.2).
///
/// Works on the text as given (no percent-decoding, no normalisation beyond §5.2.4 dot-segment removal), so a
/// resolved URI keeps every byte of the reference it came from.
public struct URIReference: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String?
    public var authority: String?
    public var path: String
    public var query: String?
    public var fragment: String?

    public init(
        scheme: String? = nil, authority: String? = nil, path: String, query: String? = nil,
        fragment: String? = nil
    ) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// Splits a reference per RFC 3986 Appendix B.
    public init(_ text: String) {
        let u = Array(text.utf8)
        var i = 0
        // scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        var schemeEnd: Int?
        if let first = u.first, (first | 0x20) >= 0x61 && (first | 0x20) <= 0x7A {
            var j = 1
            while j < u.count {
                let b = u[j]
                let isAlpha = (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A
                if isAlpha || (b >= 0x30 && b <= 0x39) || b == 0x2B || b == 0x2D || b == 0x2E {
                    j += 1
                    continue
                }
                if b == 0x3A { schemeEnd = j }
                break
            }
        }
        func str(_ a: Int, _ b: Int) -> String { String(decoding: u[a..<b], as: UTF8.self) }
        if let e = schemeEnd {
            scheme = str(0, e)
            i = e + 1
        }
        if i + 1 < u.count, u[i] == 0x2F, u[i + 1] == 0x2F {
            var j = i + 2
            while j < u.count, u[j] != 0x2F, u[j] != 0x3F, u[j] != 0x23 { j += 1 }
            authority = str(i + 2, j)
            i = j
        }
        var j = i
        while j < u.count, u[j] != 0x3F, u[j] != 0x23 { j += 1 }
        path = str(i, j)
        i = j
        if i < u.count, u[i] == 0x3F {
            j = i + 1
            while j < u.count, u[j] != 0x23 { j += 1 }
            query = str(i + 1, j)
            i = j
        }
        if i < u.count, u[i] == 0x23 { fragment = str(i + 1, u.count) }
    }

    /// Recomposes the reference (§5.3).
    public var description: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// Resolves `self` (the reference) against `base` per RFC 3986 §5.2.2 (strict: a reference's scheme is kept).
    public func resolved(against base: URIReference) -> URIReference {
        var t = URIReference(path: "")
        if let scheme {
            t.scheme = scheme
            t.authority = authority
            t.path = URIReference.removeDotSegments(path)
            t.query = query
        } else {
            if let authority {
                t.authority = authority
                t.path = URIReference.removeDotSegments(path)
                t.query = query
            } else {
                if path.isEmpty {
                    t.path = base.path
                    t.query = query ?? base.query
                } else {
                    if path.utf8.first == 0x2F {
                        t.path = URIReference.removeDotSegments(path)
                    } else {
                        t.path = URIReference.removeDotSegments(URIReference.merge(base: base, path))
                    }
                    t.query = query
                }
                t.authority = base.authority
            }
            t.scheme = base.scheme
        }
        t.fragment = fragment
        return t
    }

    /// §5.2.3 Merge Paths.
    static func merge(base: URIReference, _ path: String) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        let u = base.path.utf8
        guard let slash = u.lastIndex(of: 0x2F) else { return path }
        return String(base.path[...slash]) + path
    }

    /// §5.2.4 Remove Dot Segments.
    public static func removeDotSegments(_ path: String) -> String {
        // Fast path: nothing to remove unless a segment is "." or "..".
        let u = Array(path.utf8)
        var hasDot = false
        var k = 0
        while k < u.count {
            if u[k] == 0x2E, k == 0 || u[k - 1] == 0x2F {
                let next = k + 1 < u.count ? u[k + 1] : 0x2F
                if next == 0x2F || (next == 0x2E && (k + 2 >= u.count || u[k + 2] == 0x2F)) {
                    hasDot = true
                    break
                }
            }
            k += 1
        }
        if !hasDot { return path }
        var input = u[...]
        var output: [UInt8] = []
        func hasPrefix(_ p: [UInt8]) -> Bool { input.starts(with: p) }
        while !input.isEmpty {
            if hasPrefix([0x2E, 0x2E, 0x2F]) {
                input = input.dropFirst(3)
            } else if hasPrefix([0x2E, 0x2F]) {
                input = input.dropFirst(2)
            } else if hasPrefix([0x2F, 0x2E, 0x2F]) {
                input = input.dropFirst(2)
            } else if input.elementsEqual([0x2F, 0x2E]) {
                input = [0x2F]
            } else if hasPrefix([0x2F, 0x2E, 0x2E, 0x2F]) {
                input = input.dropFirst(3)
                removeLastSegment(&output)
            } else if input.elementsEqual([0x2F, 0x2E, 0x2E]) {
                input = [0x2F]
                removeLastSegment(&output)
            } else if input.elementsEqual([0x2E]) || input.elementsEqual([0x2E, 0x2E]) {
                input = []
            } else {
                var end = input.startIndex
                if input[end] == 0x2F { end += 1 }
                while end < input.endIndex, input[end] != 0x2F { end += 1 }
                output.append(contentsOf: input[input.startIndex..<end])
                input = input[end...]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func removeLastSegment(_ output: inout [UInt8]) {
        if let slash = output.lastIndex(of: 0x2F) {
            output.removeSubrange(slash...)
        } else {
            output.removeAll()
        }
    }

    /// The value of the first query parameter called `name` (the text between `name=` and the next `&`).
    public func queryParameter(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            if let eq = pair.firstIndex(of: "=") {
                if pair[..<eq] == name { return String(pair[pair.index(after: eq)...]) }
            } else if pair == name {
                return ""
            }
        }
        return nil
    }
}
