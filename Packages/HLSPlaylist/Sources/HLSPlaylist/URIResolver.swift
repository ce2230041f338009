import TextCodecs

/// Resolves many references against one base quickly: the common case of a relative path with no dot segments
/// is a string concatenation.
struct URIResolver {
    let base: URIReference?
    let baseText: String
    let directoryPrefix: String?
    /// ``directoryPrefix`` or "", and whether there is one: kept apart so the hot path copies a plain string,
    /// not an optional (whose copy is an outlined call).
    let prefixText: String
    let hasDirectoryPrefix: Bool
    /// Whether there is a base (kept apart so the hot path never copies ``base``).
    let hasBase: Bool

    init(base text: String?) {
        hasBase = text.map { !$0.isEmpty } ?? false
        guard let text, !text.isEmpty else {
            base = nil
            baseText = ""
            directoryPrefix = nil
            prefixText = ""
            hasDirectoryPrefix = false
            return
        }
        let b = URIReference(text)
        base = b
        baseText = text
        if b.scheme != nil, let slash = b.path.utf8.lastIndex(of: 0x2F) {
            var prefix = ""
            prefix += b.scheme ?? ""
            prefix += ":"
            if let a = b.authority { prefix += "//" + a }
            prefix += b.path[...slash]
            directoryPrefix = prefix
            prefixText = prefix
            hasDirectoryPrefix = true
        } else {
            directoryPrefix = nil
            prefixText = ""
            hasDirectoryPrefix = false
        }
    }

    func resolve(_ reference: String) -> String { resolve(reference, shape: URIScan(reference).shape) }

    /// Resolves a reference whose shape was found by ``URIScan``.
    func resolve(_ reference: String, shape: URIScan.Shape) -> String {
        guard let base else { return reference }
        switch shape {
        case .absoluteWithoutDots: return reference
        case .simpleRelative: if let directoryPrefix { return directoryPrefix + reference }
        case .other: break
        }
        return URIReference(reference).resolved(against: base).description
    }
}

/// One pass over a URI reference: whether it holds `{` (a variable reference) and which resolution path fits it.
struct URIScan {
    /// The common case found eight bytes at a time: a reference that does not start with `/`, `?`, `#` or `.`
    /// and holds no `{`, no `:` and no `/.` is a simple relative path. False means "scan fully", not "not simple".
    static func isPlainRelative(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        #if _endian(little)
            let n = u.count
            guard n > 0, let base = u.baseAddress else { return false }
            let first = u[0]
            if first == 0x2F || first == 0x3F || first == asciiHash || first == 0x2E { return false }
            let raw = UnsafeRawPointer(base)
            var i = 0
            var slashCarry: UInt64 = 0
            while i &+ 8 <= n {
                let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if ByteSearch.matches(w, 0x7B) | ByteSearch.matches(w, asciiColon) != 0 { return false }
                let slash = ByteSearch.matches(w, 0x2F)
                if ((slash << 8) | slashCarry) & ByteSearch.matches(w, 0x2E) != 0 { return false }
                slashCarry = slash >> 56
                i &+= 8
            }
            var previousSlash = slashCarry != 0
            while i < n {
                let c = u[i]
                if c == 0x7B || c == asciiColon || (c == 0x2E && previousSlash) { return false }
                previousSlash = c == 0x2F
                i &+= 1
            }
            return true
        #else
            return false
        #endif
    }

    /// Whether `u` holds a `{`, and a `.` right after a `/` or a `:` (a leading `.` counts too), found eight bytes
    /// at a time: absolute URIs (most live playlists' segments) skip the simple-relative path and land here. A `.`
    /// right after the scheme's colon (`g:./x`) starts a dot segment as surely as one after a slash.
    static func braceAndDotSegment(_ u: UnsafeBufferPointer<UInt8>) -> (brace: Bool, dotSegment: Bool) {
        let n = u.count
        guard n > 0, let base = u.baseAddress else { return (false, false) }
        var brace = false
        var dot = false
        var i = 0
        var previousSlash = true
        #if _endian(little)
            let raw = UnsafeRawPointer(base)
            var slashCarry: UInt64 = 0x80  // the byte before the first one counts as a slash
            while i &+ 8 <= n, !(brace && dot) {
                let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if ByteSearch.matches(w, 0x7B) != 0 { brace = true }
                let slash = ByteSearch.matches(w, 0x2F) | ByteSearch.matches(w, asciiColon)
                if ((slash << 8) | slashCarry) & ByteSearch.matches(w, 0x2E) != 0 { dot = true }
                slashCarry = slash >> 56
                i &+= 8
            }
            previousSlash = i == 0 || u[i &- 1] == 0x2F || u[i &- 1] == asciiColon
        #endif
        while i < n, !(brace && dot) {
            let c = u[i]
            if c == 0x7B { brace = true }
            if c == 0x2E && previousSlash { dot = true }
            previousSlash = c == 0x2F || c == asciiColon
            i &+= 1
        }
        return (brace, dot)
    }

    enum Shape {
        /// Has a scheme and no dot segment: resolution returns it unchanged (§5.2.2 with §5.2.4 a no-op).
        case absoluteWithoutDots
        /// A relative path not starting with `/`, `.`, `?` or `#`, with no dot segment and no scheme: resolution
        /// is the base directory followed by the reference.
        case simpleRelative
        /// Anything else takes the full §5.2 algorithm.
        case other
    }
    var hasBrace = false
    var shape = Shape.other

    init(_ reference: String) {
        var r = reference
        self = r.withUTF8 { URIScan($0) }
    }

    init(_ u: UnsafeBufferPointer<UInt8>) {
        if URIScan.isPlainRelative(u) {
            shape = .simpleRelative
            return
        }
        let n = u.count
        guard n > 0 else { return }
        var colon = -1  // the first ":" before any "/", "?" or "#": a scheme may end there
        var i = 0
        while i < n {
            let c = u[i]
            if c == asciiColon {
                colon = i
                break
            }
            if c == 0x2F || c == 0x3F || c == asciiHash { break }
            i &+= 1
        }
        let (brace, dotAfterSlash) = URIScan.braceAndDotSegment(u)
        hasBrace = brace
        if dotAfterSlash { return }
        let first = u[0]
        if colon > 0, (first | 0x20) >= 0x61 && (first | 0x20) <= 0x7A {
            var schemeCharacters = true
            for j in 1..<colon {
                let b = u[j]
                let alpha = (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A
                if !(alpha || ASCII.isDigit(b) || b == 0x2B || b == 0x2D || b == 0x2E) {
                    schemeCharacters = false
                    break
                }
            }
            if schemeCharacters {
                shape = .absoluteWithoutDots
                return
            }
        }
        if first == 0x2F || first == 0x3F || first == asciiHash { return }
        shape = .simpleRelative
    }
}

/// A URI line's reference as written and its resolved form. When resolution is only the base directory followed
/// by the reference (the common case), the reference itself, or a resolved directory followed by the reference's
/// last segment and query (dot segments), the resolved text is built on first read, so resolving a playlist
/// creates no string per URI.
struct LazyURI: Sendable, Hashable {
    /// The reference as written (trimmed): a view into the playlist's bytes.
    private(set) var raw: ArraySlice<UInt8>
    /// The resolved URI (`isPrefix` false), or the text that goes before the rest of ``raw`` to make it
    /// (`isPrefix` true).
    private var text: String
    private var isPrefix: Bool
    /// With `isPrefix`: how many leading bytes of ``raw`` the prefix stands for (0, or a dot-segment directory's
    /// length).
    private var replaced: UInt32

    /// A resolved URI computed eagerly.
    init(raw: ArraySlice<UInt8>, resolved: String) {
        self.raw = raw
        self.text = resolved
        self.isPrefix = false
        self.replaced = 0
    }
    /// A resolved URI that is `prefix` followed by `raw` without its first `replacing` bytes.
    init(raw: ArraySlice<UInt8>, prefix: String, replacing: Int = 0) {
        self.raw = raw
        self.text = prefix
        self.isPrefix = true
        self.replaced = UInt32(truncatingIfNeeded: replacing)
    }

    /// The part of ``raw`` that follows the prefix.
    private var rest: ArraySlice<UInt8> { raw[(raw.startIndex &+ Int(replaced))...] }

    var rawText: String {
        get { String(decoding: raw, as: UTF8.self) }
        set {
            if isPrefix { resolved = resolved }
            raw = ArraySlice(newValue.utf8)
        }
    }

    var resolved: String {
        get {
            guard isPrefix else { return text }
            if text.isEmpty { return String(decoding: rest, as: UTF8.self) }
            var prefix = text
            return prefix.withUTF8 { p in
                rest.withUnsafeBufferPointer { r in
                    String(unsafeUninitializedCapacity: p.count + r.count) { out in
                        // Two block copies; out holds p.count + r.count bytes, so both fit.
                        guard let o = out.baseAddress else { return 0 }
                        if let from = p.baseAddress { o.initialize(from: from, count: p.count) }
                        if let from = r.baseAddress { (o + p.count).initialize(from: from, count: r.count) }
                        return p.count + r.count
                    }
                }
            }
        }
        set {
            text = newValue
            isPrefix = false
            replaced = 0
        }
    }

    /// Whether both resolve to the same URI (cheap when both are the same prefix before a reference).
    func resolvesLike(_ other: LazyURI) -> Bool {
        if isPrefix && other.isPrefix && text == other.text { return rest.elementsEqual(other.rest) }
        return resolved == other.resolved
    }

    static func == (a: LazyURI, b: LazyURI) -> Bool {
        if a.isPrefix == b.isPrefix && a.replaced == b.replaced && a.text == b.text {
            return a.raw.elementsEqual(b.raw)
        }
        return a.raw.elementsEqual(b.raw) && a.resolved == b.resolved
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(resolved)
        raw.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

extension URIResolver {
    /// The directory part (through its last `/`) of the last reference with dot segments resolved, and its
    /// resolution: playlists that use dot segments (`../media/seg_00001.ts`) use the same directory for every
    /// segment, and only the part after the last `/` changes.
    struct DirectoryMemo {
        var directory: ArraySlice<UInt8> = []
        var resolved = ""
        var valid = false

        /// The length of ``directory`` when `raw` is that directory followed by a last segment and tail as
        /// ``URIResolver/resolveByDirectory(_:memo:)`` requires them, with no `{` (the directory, remembered from a
        /// reference without one, has none); nil otherwise. This skips the shape scan for the second and later
        /// segments of a directory: their resolution is the remembered one followed by the rest of the reference.
        func directoryLength(ofReferenceIn raw: ArraySlice<UInt8>) -> Int? {
            let count = directory.count
            return raw.withUnsafeBufferPointer { u -> Int? in
                guard u.count > count, count <= Int(UInt32.max) else { return nil }
                let sameDirectory = directory.withUnsafeBufferPointer { d in
                    var k = 0
                    while k < count, d[k] == u[k] { k &+= 1 }
                    return k == count
                }
                guard sameDirectory else { return nil }
                // The last segment: not empty, not "." or "..", no "/" and no "{" before the query or fragment.
                var i = count
                while i < u.count {
                    let c = u[i]
                    if c == 0x3F || c == asciiHash { break }
                    if c == 0x2F || c == 0x7B { return nil }
                    i &+= 1
                }
                let file = i &- count
                if file == 0 || (u[count] == 0x2E && (file == 1 || (file == 2 && u[count &+ 1] == 0x2E))) { return nil }
                // The query and fragment: no "{".
                guard ByteSearch.firstIndex(of: 0x7B, in: u, from: i) == u.count else { return nil }
                return count
            }
        }
    }

    /// Resolves a reference given as bytes, deferring the string work when the result is the reference itself or
    /// the base directory followed by it. References holding `{` are substituted by `substitute` first.
    func lazy(_ raw: consuming ArraySlice<UInt8>, substitute: (String) -> String) -> LazyURI {
        var memo = DirectoryMemo()
        return lazy(raw, substitute: substitute, memo: &memo)
    }

    /// ``lazy(_:substitute:)``, remembering in `memo` the resolution of the directory part of a reference with
    /// dot segments, for the next reference with the same directory part.
    func lazy(_ raw: consuming ArraySlice<UInt8>, substitute: (String) -> String, memo: inout DirectoryMemo)
        -> LazyURI
    {
        if memo.valid, let replaced = memo.directoryLength(ofReferenceIn: raw) {
            return LazyURI(raw: raw, prefix: memo.resolved, replacing: replaced)
        }
        let scan = raw.withUnsafeBufferPointer { URIScan($0) }
        if !scan.hasBrace {
            if !hasBase || scan.shape == .absoluteWithoutDots { return LazyURI(raw: raw, prefix: "") }
            if scan.shape == .simpleRelative, hasDirectoryPrefix { return LazyURI(raw: raw, prefix: prefixText) }
            if let replaced = resolveByDirectory(raw, memo: &memo), replaced <= Int(UInt32.max) {
                return LazyURI(raw: raw, prefix: memo.resolved, replacing: replaced)
            }
        }
        return lazySlow(raw, scan: scan, substitute: substitute)
    }

    /// A reference `D` + `f` + `t` whose directory part `D` ends with `/` and holds no `?` or `#`, whose last
    /// segment `f` is not empty, not `.` or `..` and holds no `/`, `?` or `#`, and whose tail `t` is empty or
    /// starts with `?` or `#` (a query, a fragment) resolves to the resolution of `D` followed by `f` + `t`
    /// (RFC 3986 5.2: merging and removing dot segments treat `f` as a plain last segment; the query and fragment
    /// are the reference's own). Returns the length of `D` with its resolution left in `memo`; nil when the
    /// reference is not of that shape.
    func resolveByDirectory(_ raw: ArraySlice<UInt8>, memo: inout DirectoryMemo) -> Int? {
        // Offsets from the slice's start, found on its buffer (no generic slice scans per segment).
        let found = raw.withUnsafeBufferPointer { u -> (slash: Int, same: Bool)? in
            var pathEnd = 0
            while pathEnd < u.count, u[pathEnd] != 0x3F, u[pathEnd] != asciiHash { pathEnd &+= 1 }
            var slash = pathEnd &- 1
            while slash >= 0, u[slash] != 0x2F { slash &-= 1 }
            guard slash >= 0, slash < pathEnd &- 1 else { return nil }
            let fileCount = pathEnd &- slash &- 1
            if u[slash &+ 1] == 0x2E, fileCount == 1 || (fileCount == 2 && u[slash &+ 2] == 0x2E) { return nil }
            guard memo.valid, memo.directory.count == slash &+ 1 else { return (slash, false) }
            let same = memo.directory.withUnsafeBufferPointer { d in
                var k = 0
                while k <= slash, d[k] == u[k] { k &+= 1 }
                return k > slash
            }
            return (slash, same)
        }
        guard let found else { return nil }
        let slash = raw.startIndex + found.slash
        let directory = raw[...slash]
        if !found.same {
            let resolved = resolve(String(decoding: directory, as: UTF8.self))
            guard resolved.utf8.last == 0x2F else { return nil }
            memo = DirectoryMemo(directory: directory, resolved: resolved, valid: true)
        }
        return slash + 1 - raw.startIndex
    }

    @inline(never)
    private func lazySlow(_ raw: ArraySlice<UInt8>, scan: URIScan, substitute: (String) -> String) -> LazyURI {
        let text = String(decoding: raw, as: UTF8.self)
        if scan.hasBrace { return LazyURI(raw: raw, resolved: resolve(substitute(text))) }
        return LazyURI(raw: raw, resolved: resolve(text, shape: scan.shape))
    }
}
