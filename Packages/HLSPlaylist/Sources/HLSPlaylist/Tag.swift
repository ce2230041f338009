import TextCodecs

/// The EXTINF value: a duration in seconds and an optional title (RFC 8216bis §4.4.4.1).
public struct ExtInf: Sendable, Hashable {
    public var duration: Double
    /// The duration as written (kept so re-rendering never changes precision).
    public var durationText: String
    /// The title after the first comma ("" when there is none).
    public var title: String
    /// Whether a comma follows the duration (`#EXTINF:10` has none, which the spec requires).
    public var hasComma: Bool

    public init(duration: Double, title: String = "", decimals: Int = 3) {
        self.duration = duration
        self.durationText = Numbers.format(duration, decimals: decimals)
        self.title = title
        self.hasComma = true
    }
    init(duration: Double, durationText: String, title: String, hasComma: Bool) {
        self.duration = duration
        self.durationText = durationText
        self.title = title
        self.hasComma = hasComma
    }
}

/// An EXT-X-BYTERANGE value or a BYTERANGE attribute: `length[@offset]` (RFC 8216bis §4.4.4.2).
public struct ByteRangeSpec: Sendable, Hashable, CustomStringConvertible {
    public var length: UInt64
    public var offset: UInt64?
    public init(length: UInt64, offset: UInt64? = nil) {
        self.length = length
        self.offset = offset
    }
    public var description: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }

    /// A tag's value, read in place.
    static func parse(_ bytes: ArraySlice<UInt8>) -> ByteRangeSpec? {
        bytes.withUnsafeBufferPointer { b in
            var at = 0
            while at < b.count, b[at] != 0x40 { at &+= 1 }
            guard let length = Numbers.decimalInteger(UnsafeBufferPointer(rebasing: b[..<at])) else { return nil }
            if at == b.count { return ByteRangeSpec(length: length) }
            guard let offset = Numbers.decimalInteger(UnsafeBufferPointer(rebasing: b[(at &+ 1)...])) else {
                return nil
            }
            return ByteRangeSpec(length: length, offset: offset)
        }
    }

    static func parse<C: BidirectionalCollection<UInt8>>(_ bytes: C) -> ByteRangeSpec? {
        if let at = bytes.firstIndex(of: 0x40) {
            guard let l = Numbers.decimalInteger(bytes[..<at]),
                let o = Numbers.decimalInteger(bytes[bytes.index(after: at)...])
            else { return nil }
            return ByteRangeSpec(length: l, offset: o)
        }
        return Numbers.decimalInteger(bytes).map { ByteRangeSpec(length: $0) }
    }
}

/// An ISO 8601 date and time as used by EXT-X-PROGRAM-DATE-TIME and EXT-X-DATERANGE.
public struct DateTime: Sendable, Hashable, CustomStringConvertible {
    /// The text as written (or as rendered, for a date made from seconds).
    public var text: String {
        get {
            switch written {
            case .text(let t): return t
            case .bytes(let b): return String(decoding: b, as: UTF8.self)
            case .rendered(let seconds): return DateTime.format(seconds)
            }
        }
        set { written = .text(newValue) }
    }
    /// Seconds since 1970-01-01T00:00:00Z.
    public var secondsSince1970: Double

    /// Where ``text`` comes from: parsed dates keep a view into the playlist's bytes and dates made from seconds
    /// are rendered when read, so that a playlist with a date on every segment makes no string per date.
    private enum Written: Sendable {
        case text(String)
        case bytes(ArraySlice<UInt8>)
        case rendered(Double)
    }
    private var written: Written

    public init?(_ text: String) {
        var t = text
        guard let s = t.withUTF8({ DateTime.parse($0) }) else { return nil }
        self.written = .text(text)
        self.secondsSince1970 = s
    }
    /// A date parsed from bytes, keeping a view into them as its text; a date written as ``format(_:)`` renders
    /// it keeps no view (its text is rendered when read, the same bytes), so that dated playlists do not count
    /// references per date.
    init?(bytes: ArraySlice<UInt8>) {
        let read = bytes.withUnsafeBufferPointer { b -> (seconds: Double, rendersBack: Bool)? in
            if let fixed = DateTime.parseMilliseconds(b) { return fixed }
            return DateTime.parse(b).map { ($0, false) }
        }
        guard let read else { return nil }
        self.written = read.rendersBack ? .rendered(read.seconds) : .bytes(bytes)
        self.secondsSince1970 = read.seconds
    }
    /// A date parsed from `buffer`, the bytes of `range` in `source`: as ``init(bytes:)``, making the slice only
    /// when the date keeps it.
    init?(buffer: UnsafeBufferPointer<UInt8>, source: [UInt8], range: Range<Int>) {
        if let fixed = DateTime.parseMilliseconds(buffer) {
            self.written = fixed.rendersBack ? .rendered(fixed.seconds) : .bytes(source[range])
            self.secondsSince1970 = fixed.seconds
            return
        }
        guard let s = DateTime.parse(buffer) else { return nil }
        self.written = .bytes(source[range])
        self.secondsSince1970 = s
    }
    /// A date rendered as `YYYY-MM-DDThh:mm:ss.sssZ`.
    public init(secondsSince1970: Double) {
        self.secondsSince1970 = secondsSince1970
        self.written = .rendered(secondsSince1970)
    }
    public var description: String { text }

    public static func == (a: DateTime, b: DateTime) -> Bool {
        guard a.secondsSince1970 == b.secondsSince1970 else { return false }
        switch (a.written, b.written) {
        case (.bytes(let x), .bytes(let y)): return x.elementsEqual(y)
        case (.rendered(let x), .rendered(let y)) where x == y: return true
        default: return a.text == b.text
        }
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(text)
        hasher.combine(secondsSince1970)
    }

    private static func digits(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ count: Int) -> Int? {
        guard from >= 0, from + count <= b.count else { return nil }
        var v = 0
        for i in from..<(from + count) {
            guard ASCII.isDigit(b[i]) else { return nil }
            v = v * 10 + Int(b[i] - 0x30)
        }
        return v
    }

    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Double? {
        if let fixed = parseMilliseconds(b) { return fixed.seconds }
        guard let y = digits(b, 0, 4), b.count > 10, b[4] == 0x2D, let mo = digits(b, 5, 2), b[7] == 0x2D,
            let d = digits(b, 8, 2), b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20,
            let h = digits(b, 11, 2), b.count > 13, b[13] == 0x3A, let mi = digits(b, 14, 2)
        else { return nil }
        guard (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60 else { return nil }
        var i = 16
        var seconds = 0.0
        if i < b.count, b[i] == 0x3A {
            guard let s = digits(b, 17, 2), s <= 60 else { return nil }
            seconds = Double(s)
            i = 19
            if i < b.count, b[i] == 0x2E || b[i] == 0x2C {
                i += 1
                var scale = 0.1
                let start = i
                while i < b.count, ASCII.isDigit(b[i]) {
                    seconds += Double(b[i] - 0x30) * scale
                    scale /= 10
                    i += 1
                }
                if i == start { return nil }
            }
        }
        var offset = 0
        if i < b.count {
            switch b[i] {
            case 0x5A, 0x7A:
                i += 1
            case 0x2B, 0x2D:
                let sign = b[i] == 0x2D ? -1 : 1
                guard let oh = digits(b, i + 1, 2) else { return nil }
                var om = 0
                if let m = digits(b, i + 4, 2), i + 3 < b.count, b[i + 3] == 0x3A {
                    om = m
                    i += 6
                } else if let m = digits(b, i + 3, 2) {
                    om = m
                    i += 5
                } else {
                    i += 3
                }
                offset = sign * (oh * 3600 + om * 60)
            default: return nil
            }
        }
        guard i == b.count else { return nil }
        let days = Int(CivilDate.days(year: Int64(y), month: Int64(mo), day: Int64(d)))
        return Double(days * 86400 + h * 3600 + mi * 60 - offset) + seconds
    }

    /// The form nearly every playlist writes, `YYYY-MM-DDThh:mm:ss.sssZ`, read at fixed positions: the same value
    /// as the general reading below (same checks, same arithmetic), or nil for any other form; and whether
    /// ``format(_:)`` writes the value back as the same text (not for a leap second or a day past the month's end,
    /// which the reading accepts).
    @inline(__always)
    private static func parseMilliseconds(_ b: UnsafeBufferPointer<UInt8>) -> (seconds: Double, rendersBack: Bool)? {
        #if _endian(little)
            guard b.count == 24, let base = b.baseAddress else { return nil }
            // Three eight-byte words: "YYYY-MM-", "DDThh:mm", ":ss.sssZ". In each, the separators must be exactly
            // `separators` at the bytes of `mask`, and every other byte a digit: high nibble 3, and still 3 after
            // adding 6 (no carry crosses a byte: digits and the separators stay below 0xFA).
            let raw = UnsafeRawPointer(base)
            let words = (
                raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            )
            @inline(__always) func valid(_ w: UInt64, _ mask: UInt64, _ separators: UInt64) -> Bool {
                let digits = ~mask
                return (w ^ separators) & mask == 0
                    && w & 0xF0F0_F0F0_F0F0_F0F0 & digits == 0x3030_3030_3030_3030 & digits
                    && (w &+ (0x0606_0606_0606_0606 & digits)) & 0xF0F0_F0F0_F0F0_F0F0 & digits
                        == 0x3030_3030_3030_3030 & digits
            }
            guard valid(words.0, 0xFF00_00FF_0000_0000, 0x2D00_002D_0000_0000),
                valid(words.1, 0x0000_FF00_00FF_0000, 0x0000_3A00_0054_0000),
                valid(words.2, 0xFF00_0000_FF00_00FF, 0x5A00_0000_2E00_003A)
            else { return nil }
            // The digit in byte `k` of `w`.
            @inline(__always) func d(_ w: UInt64, _ k: UInt64) -> Int {
                Int(truncatingIfNeeded: (w >> (8 &* k)) & 0x0F)
            }
            let (w0, w1, w2) = words
            let y = ((d(w0, 0) * 10 + d(w0, 1)) * 10 + d(w0, 2)) * 10 + d(w0, 3)
            let mo = d(w0, 5) * 10 + d(w0, 6)
            let day = d(w1, 0) * 10 + d(w1, 1)
            let h = d(w1, 3) * 10 + d(w1, 4)
            let mi = d(w1, 6) * 10 + d(w1, 7)
            let s = d(w2, 1) * 10 + d(w2, 2)
            let f1 = d(w2, 4)
            let f2 = d(w2, 5)
            let f3 = d(w2, 6)
            guard mo >= 1, mo <= 12, day >= 1, day <= 31, h < 24, mi < 60, s <= 60 else { return nil }
            var seconds = Double(s)
            var scale = 0.1
            seconds += Double(f1) * scale
            scale /= 10
            seconds += Double(f2) * scale
            scale /= 10
            seconds += Double(f3) * scale
            let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
            let monthDays = mo == 2 ? (leap ? 29 : 28) : (mo == 4 || mo == 6 || mo == 9 || mo == 11 ? 30 : 31)
            return (
                Double(
                    Int(CivilDate.days(year: Int64(y), month: Int64(mo), day: Int64(day))) * 86400 + h * 3600 + mi * 60)
                    + seconds, s < 60 && day <= monthDays
            )
        #else
            return nil
        #endif
    }

    static func format(_ t: Double) -> String {
        guard t.isFinite, abs(t) < 1e13 else { return "1970-01-01T00:00:00.000Z" }
        let ms = Int((t * 1000).rounded())
        var days = ms / 86_400_000
        var rem = ms % 86_400_000
        if rem < 0 {
            rem += 86_400_000
            days -= 1
        }
        let date = CivilDate.date(fromDays: Int64(days))
        let (y, m, d) = (Int(date.year), Int(date.month), Int(date.day))
        func pad(_ v: Int, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3_600_000, 2)):\(pad(rem / 60000 % 60, 2)):"
            + "\(pad(rem / 1000 % 60, 2)).\(pad(rem % 1000, 3))Z"
    }
}

/// The value of EXT-X-CUE-OUT or EXT-X-CUE-OUT-CONT in any of the forms streams use:
/// nothing, a bare duration (`30.0`), `elapsed/duration` (`5.005/30`) or an attribute list
/// (`DURATION=30`, `ElapsedTime=5.005,Duration=30,SCTE35=...`).
public struct CueMarker: Sendable, Hashable {
    public enum Form: Sendable, Hashable {
        case bare
        case duration
        case elapsedSlashDuration
        case attributes
    }
    /// The value text as written.
    public var text: String
    public var form: Form
    public var duration: Double?
    public var elapsed: Double?
    /// The attributes of the attribute-list form (names kept as written, case included).
    public var attributes: AttributeList

    /// Parses a cue value; nil when it fits none of the forms.
    public init?(text: String) {
        self.text = text
        self.attributes = []
        let u = Array(text.utf8)
        if u.isEmpty {
            form = .bare
            return
        }
        if let d = Numbers.decimalFloat(u, signed: false) {
            form = .duration
            duration = d
            return
        }
        if let slash = u.firstIndex(of: 0x2F), let e = Numbers.decimalFloat(u[..<slash], signed: false),
            let d = Numbers.decimalFloat(u[(slash + 1)...], signed: false)
        {
            form = .elapsedSlashDuration
            elapsed = e
            duration = d
            return
        }
        let (list, problems) = AttributeList.parse(u[...], maxAttributes: 256)
        guard !list.isEmpty, !problems.contains(where: { !$0.message.hasPrefix("attribute name") }) else {
            return nil
        }
        form = .attributes
        attributes = list
        for a in list.attributes {
            switch a.name.uppercased() {
            case "DURATION": duration = Numbers.decimalFloat(a.text.utf8, signed: false)
            case "ELAPSEDTIME", "ELAPSED": elapsed = Numbers.decimalFloat(a.text.utf8, signed: false)
            default: break
            }
        }
    }

    /// A bare-duration cue (`EXT-X-CUE-OUT:30.000`).
    public init(duration: Double) {
        self.text = Numbers.formatShort(duration)
        self.form = .duration
        self.duration = duration
        self.attributes = []
    }
}

/// The typed value of a tag.
public enum TagValue: Sendable, Hashable {
    /// No value (no colon).
    case none
    case decimalInteger(UInt64)
    case enumeratedString(String)
    case extinf(ExtInf)
    case byteRange(ByteRangeSpec)
    case dateTime(DateTime)
    case attributes(AttributeList)
    indirect case cue(CueMarker)
    /// Unknown tags, opaque values, and known tags whose value could not be read (the text after the colon).
    case text(String)
}

/// The name of an unknown tag: one reference in a ``Tag`` instead of a string's two words (unknown tags are rare;
/// known ones have none). Compared and hashed by its text.
final class CustomName: Sendable, Hashable {
    let text: String
    init(_ text: String) { self.text = text }
    static func == (a: CustomName, b: CustomName) -> Bool { a.text == b.text }
    func hash(into hasher: inout Hasher) { hasher.combine(text) }
}

/// One tag line: its name (without `#`), the known tag it is if any, and its typed value.
public struct Tag: Sendable, Hashable {
    /// The name of an unknown tag (nil for known tags, whose name is their raw value), boxed so that a tag, and
    /// so every playlist line, is a word smaller (see ``CustomName``).
    private var customName: CustomName?
    public var known: KnownTag?
    public var value: TagValue

    /// The tag name without the leading `#`.
    public var name: String {
        get { known?.rawValue ?? customName?.text ?? "" }
        set {
            known = KnownTag(rawValue: newValue)
            customName = known == nil ? CustomName(newValue) : nil
        }
    }

    public init(_ known: KnownTag, _ value: TagValue = .none) {
        self.customName = nil
        self.known = known
        self.value = value
    }
    public init(name: String, value: TagValue) {
        self.known = KnownTag(rawValue: name)
        self.customName = known == nil ? CustomName(name) : nil
        self.value = value
    }

    public static func attributes(_ known: KnownTag, _ list: AttributeList) -> Tag { Tag(known, .attributes(list)) }

    /// The attribute list, for attribute-list tags.
    public var attributes: AttributeList? {
        switch value {
        case .attributes(let l): return l
        case .cue(let c) where c.form == .attributes: return c.attributes
        default: return nil
        }
    }
    public var decimalInteger: UInt64? {
        if case .decimalInteger(let v) = value { return v }
        return nil
    }
    public var extinf: ExtInf? {
        if case .extinf(let v) = value { return v }
        return nil
    }
    public var byteRange: ByteRangeSpec? {
        if case .byteRange(let v) = value { return v }
        return nil
    }
    public var dateTime: DateTime? {
        if case .dateTime(let v) = value { return v }
        return nil
    }
    public var cue: CueMarker? {
        if case .cue(let v) = value { return v }
        return nil
    }
    public var enumeratedString: String? {
        if case .enumeratedString(let v) = value { return v }
        return nil
    }

    /// The text after the colon, or nil when the tag has no value.
    public var valueText: String? {
        switch value {
        case .none: return nil
        case .decimalInteger(let v): return String(v)
        case .enumeratedString(let s): return s
        case .extinf(let e): return e.durationText + (e.hasComma ? "," + e.title : "")
        case .byteRange(let b): return b.description
        case .dateTime(let d): return d.text
        case .attributes(let l): return l.rendered
        case .cue(let c): return c.form == .bare ? nil : c.text
        case .text(let t): return t
        }
    }

    /// The tag line as text: `#NAME[:value]`.
    public var rendered: String {
        if let v = valueText { return "#" + name + ":" + v }
        return "#" + name
    }
}
