import TextCodecs

/// The value types of RFC 8216bis §4.2.
public enum AttributeType: Sendable, Hashable {
    case decimalInteger
    case hexadecimalSequence
    case decimalFloat
    case signedDecimalFloat
    case quotedString
    case enumeratedString
    case decimalResolution
}

/// A decimal-resolution: `WIDTHxHEIGHT`.
public struct Resolution: Sendable, Hashable, CustomStringConvertible {
    public var width: UInt64
    public var height: UInt64
    public init(width: UInt64, height: UInt64) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}

/// An attribute value read with its declared type.
public enum AttributeValue: Sendable, Hashable {
    case decimalInteger(UInt64)
    case hexadecimalSequence([UInt8])
    case decimalFloat(Double)
    case signedDecimalFloat(Double)
    case quotedString(String)
    case enumeratedString(String)
    case decimalResolution(Resolution)
}

/// One `NAME=value` pair, with the value exactly as written (quotes included).
///
/// A parsed attribute is a view into the playlist's bytes; its name and value become strings only when asked for,
/// and the typed accessors read the bytes directly.
public struct Attribute: Sendable, Hashable {
    var nameBytes: ArraySlice<UInt8>
    var valueBytes: ArraySlice<UInt8>
    /// The position of the name in ``AttributeNames/all``, or -1 for other names.
    var nameID: Int

    public init(name: String, rawValue: String) {
        self.nameBytes = ArraySlice(name.utf8)
        self.valueBytes = ArraySlice(rawValue.utf8)
        self.nameID = AttributeNames.id(of: nameBytes)
    }

    init(nameBytes: ArraySlice<UInt8>, valueBytes: ArraySlice<UInt8>) {
        self.nameBytes = nameBytes
        self.valueBytes = valueBytes
        self.nameID = AttributeNames.id(of: nameBytes)
    }

    init(nameBytes: ArraySlice<UInt8>, valueBytes: ArraySlice<UInt8>, nameID: Int) {
        self.nameBytes = nameBytes
        self.valueBytes = valueBytes
        self.nameID = nameID
    }

    /// The attribute name.
    public var name: String {
        get { nameID >= 0 ? AttributeNames.all[nameID] : String(decoding: nameBytes, as: UTF8.self) }
        set {
            nameBytes = ArraySlice(newValue.utf8)
            nameID = AttributeNames.id(of: nameBytes)
        }
    }
    /// The value as written, quotes included.
    public var rawValue: String {
        get { String(decoding: valueBytes, as: UTF8.self) }
        set { valueBytes = ArraySlice(newValue.utf8) }
    }

    /// Whether the name is `name` (compared as bytes).
    public func hasName(_ name: String) -> Bool { nameBytes.elementsEqual(name.utf8) }

    /// A quoted-string attribute: the value is written with quotes.
    public static func quoted(_ name: String, _ value: String) -> Attribute {
        Attribute(name: name, rawValue: "\"" + value + "\"")
    }

    /// Whether the value is written between double quotes.
    public var isQuoted: Bool {
        valueBytes.count >= 2 && valueBytes.first == asciiQuote && valueBytes.last == asciiQuote
    }
    /// The quoted-string value without its quotes, or nil when the value is not quoted.
    public var quotedString: String? {
        guard isQuoted else { return nil }
        return String(decoding: valueBytes.dropFirst().dropLast(), as: UTF8.self)
    }
    /// The value as text: unquoted when it was quoted, as written otherwise.
    public var text: String { quotedString ?? rawValue }
    public var decimalInteger: UInt64? { Numbers.decimalInteger(valueBytes) }
    public var decimalFloat: Double? { Numbers.decimalFloat(valueBytes, signed: false) }
    public var signedDecimalFloat: Double? { Numbers.decimalFloat(valueBytes, signed: true) }
    public var hexadecimalSequence: [UInt8]? { Numbers.hexadecimal(valueBytes) }
    /// An enumerated-string: unquoted, no whitespace, no commas or quotes.
    public var enumeratedString: String? {
        if valueBytes.isEmpty || isQuoted { return nil }
        for b in valueBytes where b == asciiQuote || b == asciiComma || ASCII.isWhitespace(b) { return nil }
        return rawValue
    }
    /// Whether the value is exactly `text` (compared as bytes).
    public func valueIs(_ text: String) -> Bool { valueBytes.elementsEqual(text.utf8) }
    public var resolution: Resolution? {
        let u = valueBytes
        guard let x = u.firstIndex(where: { $0 == 0x78 || $0 == 0x58 }),
            let w = Numbers.decimalInteger(u[..<x]), let h = Numbers.decimalInteger(u[(x + 1)...])
        else { return nil }
        return Resolution(width: w, height: h)
    }

    /// The value read as `type`, or nil when it does not have that syntax.
    public func value(as type: AttributeType) -> AttributeValue? {
        switch type {
        case .decimalInteger: return decimalInteger.map { .decimalInteger($0) }
        case .hexadecimalSequence: return hexadecimalSequence.map { .hexadecimalSequence($0) }
        case .decimalFloat: return decimalFloat.map { .decimalFloat($0) }
        case .signedDecimalFloat: return signedDecimalFloat.map { .signedDecimalFloat($0) }
        case .quotedString: return quotedString.map { .quotedString($0) }
        case .enumeratedString: return enumeratedString.map { .enumeratedString($0) }
        case .decimalResolution: return resolution.map { .decimalResolution($0) }
        }
    }
}

/// An ordered attribute list (RFC 8216bis §4.2). Order and duplicates are kept as written.
///
/// A parsed list is the tag's value bytes plus the position of each name and value in them (plain integers, kept
/// with those of the other lists of the same parse; see ``SpanArena``), so parsing allocates nothing per list and
/// reading an attribute creates no string until one is asked for.
public struct AttributeList: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    /// Where one attribute's name and value lie, as offsets from the start of ``source``.
    struct Span: Sendable, Hashable {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int
        var nameID: Int
    }
    private var source: ArraySlice<UInt8>
    private var spans: Spans

    public init(_ attributes: [Attribute] = []) {
        var bytes: [UInt8] = []
        var arena = SpanArena(firstChunk: attributes.count)
        for (i, a) in attributes.enumerated() {
            if i > 0 { bytes.append(asciiComma) }
            let nameStart = bytes.count
            bytes.append(contentsOf: a.nameBytes)
            let nameEnd = bytes.count
            bytes.append(asciiEquals)
            let valueStart = bytes.count
            bytes.append(contentsOf: a.valueBytes)
            arena.append(
                Span(
                    nameStart: nameStart, nameEnd: nameEnd, valueStart: valueStart, valueEnd: bytes.count,
                    nameID: a.nameID))
        }
        self.source = bytes[...]
        self.spans = arena.finish()
    }
    public init(arrayLiteral elements: Attribute...) { self.init(elements) }

    init(source: ArraySlice<UInt8>, spans: Spans) {
        self.source = source
        self.spans = spans
    }

    /// Equal when the bytes and the positions in them are (as two lists of the same text parsed alike).
    public static func == (a: AttributeList, b: AttributeList) -> Bool {
        a.source == b.source && a.spans.elementsEqual(b.spans)
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(source)
        hasher.combine(spans.count)
        for span in spans { hasher.combine(span) }
    }

    /// The attributes in order. Setting replaces the whole list.
    public var attributes: [Attribute] {
        get { spans.map(attribute) }
        set { self = AttributeList(newValue) }
    }

    private func attribute(_ s: Span) -> Attribute {
        let base = source.startIndex
        return Attribute(
            nameBytes: source[(base + s.nameStart)..<(base + s.nameEnd)],
            valueBytes: source[(base + s.valueStart)..<(base + s.valueEnd)], nameID: s.nameID)
    }

    /// The ``AttributeNames`` id of the attribute at `position` (-1 for other names).
    func nameID(at position: Int) -> Int { spans[position].nameID }

    /// The position of the first attribute whose ``AttributeNames`` id is `id`, or nil.
    func firstPosition(ofNameID id: Int) -> Int? {
        guard id >= 0 else { return nil }
        var i = 0
        while i < spans.count {
            if spans[i].nameID == id { return i }
            i &+= 1
        }
        return nil
    }

    /// Reads the value bytes of the attribute at `position` in place (no ``Attribute`` is made, so no reference
    /// counting per read).
    func withValue<R>(at position: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let span = spans[position]
        return source.withUnsafeBufferPointer { b in
            let start = Swift.max(0, Swift.min(span.valueStart, b.count))
            let end = Swift.max(start, Swift.min(span.valueEnd, b.count))
            return body(UnsafeBufferPointer(rebasing: b[start..<end]))
        }
    }

    /// The typed readers of ``Attribute`` for the attribute at `position`, read in place.
    func quotedString(at position: Int) -> String? {
        withValue(at: position) { v in
            guard v.count >= 2, v[0] == asciiQuote, v[v.count - 1] == asciiQuote else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: v[1..<(v.count - 1)]), as: UTF8.self)
        }
    }
    func decimalInteger(at position: Int) -> UInt64? { withValue(at: position) { Numbers.decimalInteger($0) } }
    func decimalFloat(at position: Int) -> Double? {
        withValue(at: position) { Numbers.decimalFloat($0, signed: false) }
    }
    func resolution(at position: Int) -> Resolution? {
        withValue(at: position) { u in
            guard let x = u.firstIndex(where: { $0 == 0x78 || $0 == 0x58 }),
                let w = Numbers.decimalInteger(UnsafeBufferPointer(rebasing: u[..<x])),
                let h = Numbers.decimalInteger(UnsafeBufferPointer(rebasing: u[(x + 1)...]))
            else { return nil }
            return Resolution(width: w, height: h)
        }
    }

    public var startIndex: Int { spans.startIndex }
    public var endIndex: Int { spans.endIndex }
    public subscript(position: Int) -> Attribute { attribute(spans[position]) }

    private func index(of name: String) -> Int? {
        let base = source.startIndex
        let id = AttributeNames.id(name)
        for (i, s) in spans.enumerated() {
            if id >= 0 {
                if s.nameID == id { return i }
            } else if source[(base + s.nameStart)..<(base + s.nameEnd)].elementsEqual(name.utf8) {
                return i
            }
        }
        return nil
    }

    /// The first attribute called `name`.
    public subscript(name: String) -> Attribute? { index(of: name).map { attribute(spans[$0]) } }

    /// Sets (replacing the first of that name in place, or appending) or removes an attribute.
    public mutating func set(_ name: String, rawValue: String?) {
        var list = attributes
        if let i = index(of: name) {
            if let rawValue { list[i].rawValue = rawValue } else { list.remove(at: i) }
        } else if let rawValue {
            list.append(Attribute(name: name, rawValue: rawValue))
        }
        self = AttributeList(list)
    }
    public mutating func setQuoted(_ name: String, _ value: String?) {
        set(name, rawValue: value.map { "\"" + $0 + "\"" })
    }

    public func quotedString(_ name: String) -> String? { self[name]?.quotedString }
    public func decimalInteger(_ name: String) -> UInt64? { self[name]?.decimalInteger }
    public func decimalFloat(_ name: String) -> Double? { self[name]?.decimalFloat }
    public func signedDecimalFloat(_ name: String) -> Double? { self[name]?.signedDecimalFloat }
    public func enumeratedString(_ name: String) -> String? { self[name]?.enumeratedString }
    public func resolution(_ name: String) -> Resolution? { self[name]?.resolution }
    public func hexadecimalSequence(_ name: String) -> [UInt8]? { self[name]?.hexadecimalSequence }
    /// `YES` → true, `NO` → false, anything else (or absent) → nil.
    public func yesNo(_ name: String) -> Bool? {
        guard let a = self[name] else { return nil }
        if a.valueIs("YES") { return true }
        if a.valueIs("NO") { return false }
        return nil
    }

    /// The attribute list as written: `NAME=value` joined by commas.
    public var rendered: String {
        var out: [UInt8] = []
        let base = source.startIndex
        for (i, span) in spans.enumerated() {
            if i > 0 { out.append(asciiComma) }
            out.append(contentsOf: source[(base + span.nameStart)..<(base + span.nameEnd)])
            out.append(asciiEquals)
            out.append(contentsOf: source[(base + span.valueStart)..<(base + span.valueEnd)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A problem found while parsing an attribute list: its byte offset in the value and what is wrong.
    struct Problem: Sendable, Hashable {
        var offset: Int
        var message: String
        var tooMany: Bool = false
    }

    /// Parses `bytes` (the text after the tag's colon). Tolerant: lowercase names, spaces after commas and
    /// stray characters are accepted and reported as problems; parsing goes on to the end.
    static func parse(_ bytes: ArraySlice<UInt8>, maxAttributes: Int) -> (AttributeList, [Problem]) {
        var arena = SpanArena()
        return parse(bytes, maxAttributes: maxAttributes, arena: &arena)
    }

    /// ``parse(_:maxAttributes:)`` keeping the spans in `arena` (shared with the other lists stored there).
    static func parse(_ bytes: ArraySlice<UInt8>, maxAttributes: Int, arena: inout SpanArena)
        -> (AttributeList, [Problem])
    {
        let problems = bytes.withUnsafeBufferPointer {
            parse(buffer: $0, maxAttributes: maxAttributes, into: &arena)
        }
        return (AttributeList(source: bytes, spans: arena.finish()), problems)
    }

    /// The scan over the bytes (offsets from 0), so it makes no slices and carries no bounds checks. The spans
    /// are appended to `list` (see ``SpanArena/finish()``).
    private static func parse(buffer b: UnsafeBufferPointer<UInt8>, maxAttributes: Int, into list: inout SpanArena)
        -> [Problem]
    {
        var problems: [Problem] = []
        // The name table, read once per list rather than once per name.
        let names = AttributeNames.table
        #if _endian(little)
            let guesses = AttributeNames.guesses
        #endif
        var i = 0
        let end = b.count
        while i < end {
            // Leading whitespace is tolerated but reported.
            if ASCII.isWhitespace(b[i]) {
                let ws = i
                while i < end && ASCII.isWhitespace(b[i]) { i += 1 }
                problems.append(Problem(offset: ws, message: "whitespace in attribute list"))
                if i == end { break }
            }
            let nameStart = i
            var knownID: Int?
            // A name runs to the next '=' or ','. Tried first: the name the list before had at this position (the
            // lists of one tag repeat their names), taken when its bytes and then '=' are here (a known name holds
            // neither '=' nor ',', so the name ends there).
            #if _endian(little)
                // The words of ``AttributeNames/guesses`` are little-endian (the first byte lowest).
                let guess = list.previousID(at: list.pendingCount)
                if guess >= 0, guess < guesses.count, let base = b.baseAddress {
                    let g = guesses[guess]
                    let length = g.count
                    // Every load below lies in the buffer: nameStart + max(length + 1, 8) <= end.
                    if length > 0, nameStart + Swift.max(length &+ 1, 8) <= end {
                        let raw = UnsafeRawPointer(base + nameStart)
                        let head = raw.loadUnaligned(as: UInt64.self)
                        let same =
                            length <= 8
                            ? head & (UInt64.max >> UInt64(64 &- 8 &* length)) == g.first
                            : head == g.first
                                && raw.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self) == g.last
                                && (length <= 16 || raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == g.second)
                        if same, b[nameStart &+ length] == asciiEquals {
                            i = nameStart &+ length
                            knownID = guess
                        }
                    }
                }
            #endif
            if knownID == nil { i = ByteSearch.firstIndex(of: asciiEquals, or: asciiComma, in: b, from: i) }
            var nameEnd = i
            // Then a name directly followed by '=' that is a known name (so well formed) or is made of [A-Z0-9-]
            // only; its id is found on the way.
            if knownID == nil, i > nameStart, i < end, b[i] == asciiEquals {
                let name = UnsafeBufferPointer(rebasing: b[nameStart..<i])
                let id = names.id(of: name, readable: end &- nameStart)
                if id >= 0 || name.allSatisfy(ASCII.isAttributeNameByte) { knownID = id }
            }
            if knownID == nil {
                while nameEnd > nameStart, ASCII.isWhitespace(b[nameEnd - 1]) { nameEnd -= 1 }
                let name = UnsafeBufferPointer(rebasing: b[nameStart..<nameEnd])
                if name.isEmpty {
                    problems.append(Problem(offset: nameStart, message: "empty attribute name"))
                } else if !name.allSatisfy(ASCII.isAttributeNameByte) {
                    problems.append(
                        Problem(
                            offset: nameStart,
                            message: "attribute name \"\(String(decoding: name, as: UTF8.self))\" is not [A-Z0-9-]"))
                }
            }
            let name = UnsafeBufferPointer(rebasing: b[nameStart..<nameEnd])
            guard i < end, b[i] == asciiEquals else {
                problems.append(Problem(offset: i, message: "expected '=' after attribute name"))
                if i < end { i += 1 }
                if !name.isEmpty {
                    list.append(
                        Span(
                            nameStart: nameStart, nameEnd: nameEnd, valueStart: i, valueEnd: i,
                            nameID: AttributeNames.id(of: name)))
                }
                continue
            }
            i += 1
            let valueStart = i
            if i < end && b[i] == asciiQuote {
                i = ByteSearch.firstIndex(of: asciiQuote, in: b, from: i + 1)
                if i == end {
                    problems.append(Problem(offset: valueStart, message: "unterminated quoted string"))
                } else {
                    i += 1
                }
                // Anything between the closing quote and the comma is an error, kept in the raw value.
                let afterQuote = i
                while i < end && b[i] != asciiComma { i += 1 }
                if i > afterQuote {
                    problems.append(Problem(offset: afterQuote, message: "characters after quoted string"))
                }
            } else {
                while true {
                    i = ByteSearch.firstIndex(of: asciiComma, or: asciiQuote, in: b, from: i)
                    guard i < end, b[i] == asciiQuote else { break }
                    problems.append(Problem(offset: i, message: "quote inside unquoted value"))
                    i += 1
                }
            }
            if list.pendingCount >= maxAttributes {
                problems.append(
                    Problem(offset: nameStart, message: "more than \(maxAttributes) attributes", tooMany: true))
                return problems
            }
            list.append(
                Span(
                    nameStart: nameStart, nameEnd: nameEnd, valueStart: valueStart, valueEnd: i,
                    nameID: knownID ?? AttributeNames.id(of: name, readable: end &- nameStart)))
            if i < end {  // at a comma
                i += 1
                if i == end { problems.append(Problem(offset: i - 1, message: "trailing comma")) }
            }
        }
        return problems
    }
}

/// The attribute names of RFC 8216bis as string constants, so that parsed names share their storage and name
/// lookups compare equal on the fast path.
enum AttributeNames {
    static let all: [String] = [
        "AUDIO", "ALLOWED-CPC", "ASSOC-LANGUAGE", "AUTOSELECT", "AVERAGE-BANDWIDTH", "BANDWIDTH", "BIT-DEPTH",
        "BYTERANGE", "BYTERANGE-LENGTH", "BYTERANGE-START", "CAN-BLOCK-RELOAD", "CAN-SKIP-DATERANGES",
        "CAN-SKIP-UNTIL", "CHANNELS", "CHARACTERISTICS", "CLASS", "CLOSED-CAPTIONS", "CODECS", "CUE", "DATA-ID",
        "DEFAULT", "DURATION", "END-DATE", "END-ON-NEXT", "FORCED", "FORMAT", "FRAME-RATE", "GAP", "GROUP-ID",
        "HDCP-LEVEL", "HOLD-BACK", "ID", "IMPORT", "INDEPENDENT", "INSTREAM-ID", "IV", "KEYFORMAT",
        "KEYFORMATVERSIONS", "LANGUAGE", "LAST-MSN", "LAST-PART", "METHOD", "NAME", "PART-HOLD-BACK",
        "PART-TARGET", "PATHWAY-ID", "PLANNED-DURATION", "PRECISE", "PROGRAM-ID", "QUERYPARAM",
        "RECENTLY-REMOVED-DATERANGES", "REQ-VIDEO-LAYOUT", "RESOLUTION", "SAMPLE-RATE", "SCORE", "SCTE35-CMD",
        "SCTE35-IN", "SCTE35-OUT", "SERVER-URI", "SKIPPED-SEGMENTS", "STABLE-RENDITION-ID", "STABLE-VARIANT-ID",
        "START-DATE", "SUBTITLES", "SUPPLEMENTAL-CODECS", "TIME-OFFSET", "TYPE", "URI", "VALUE", "VIDEO",
        "VIDEO-RANGE",
    ]
    private static let byLength: [[(bytes: [UInt8], id: Int)]] = {
        var table = [[(bytes: [UInt8], id: Int)]](repeating: [], count: 32)
        for (id, name) in all.enumerated() { table[name.utf8.count].append((Array(name.utf8), id)) }
        return table
    }()

    /// The position of `bytes` in ``all``, or -1.
    static func id<C: Collection<UInt8>>(of bytes: C) -> Int {
        let count = bytes.count
        guard count < byLength.count, let first = bytes.first else { return -1 }
        for entry in byLength[count] where entry.bytes[0] == first && entry.bytes.elementsEqual(bytes) {
            return entry.id
        }
        return -1
    }

    static func id(of bytes: ArraySlice<UInt8>) -> Int {
        let count = bytes.count
        guard count < byLength.count, let first = bytes.first else { return -1 }
        return bytes.withUnsafeBufferPointer { b -> Int in
            for entry in byLength[count] where entry.bytes[0] == first {
                var equal = true
                entry.bytes.withUnsafeBufferPointer { e in
                    var k = 1
                    while k < count {
                        if e[k] != b[k] {
                            equal = false
                            break
                        }
                        k &+= 1
                    }
                }
                if equal { return entry.id }
            }
            return -1
        }
    }

    static let table = WordTable(all)

    /// The words of each name of up to 24 bytes, by id, to check a guessed name in place: the first eight bytes
    /// (masked to the name's length when shorter), the last eight and bytes 8 to 15 (count 0: not guessed).
    struct Guess: Sendable {
        var first: UInt64 = 0
        var last: UInt64 = 0
        var second: UInt64 = 0
        var count = 0
    }
    static let guesses: [Guess] = all.map { name in
        let b = Array(name.utf8)
        guard !b.isEmpty, b.count <= 24 else { return Guess() }
        func word(_ from: Int) -> UInt64 {
            var w: UInt64 = 0
            for k in 0..<8 where from + k < b.count { w |= UInt64(b[from + k]) << UInt64(8 * k) }
            return w
        }
        return Guess(first: word(0), last: word(Swift.max(0, b.count - 8)), second: word(8), count: b.count)
    }

    /// The position of the name `b` in ``all``, or -1. `readable` is how many bytes from the name's start may be
    /// read (at least its length).
    static func id(of b: UnsafeBufferPointer<UInt8>, readable: Int) -> Int { table.id(of: b, readable: readable) }

    static func id(of b: UnsafeBufferPointer<UInt8>) -> Int { id(of: b, readable: b.count) }

    static func id(_ name: String) -> Int { id(of: name.utf8) }
}
