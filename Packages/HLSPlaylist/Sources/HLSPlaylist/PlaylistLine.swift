/// How a line ended in the source.
public enum LineEnding: Sendable, Hashable {
    case lf
    case crlf
    /// The last line of a file without a final line break.
    case none

    var bytes: [UInt8] {
        switch self {
        case .lf: return [asciiLF]
        case .crlf: return [asciiCR, asciiLF]
        case .none: return []
        }
    }
}

/// One line of a playlist: the exact bytes as read (or as rendered when built in code) and what the line is.
///
/// Lines are values: to edit a playlist, replace, insert or remove lines in ``Playlist/lines``. A line built from a
/// ``Tag`` renders the tag's canonical text; a parsed line keeps its original bytes, so an unmodified playlist
/// writes back byte for byte.
public struct PlaylistLine: Sendable, Hashable {
    public enum Content: Sendable, Hashable {
        /// An empty line (or one holding only spaces, tabs and carriage returns).
        case blank
        /// A line starting with `#` that is not a tag.
        case comment
        /// A line starting with `#EXT`.
        case tag(Tag)
        /// Any other line: a URI.
        case uri
    }

    /// The line's bytes without its line ending.
    public private(set) var bytes: ArraySlice<UInt8>
    public var ending: LineEnding
    /// What the line is (see ``content``).
    var stored: Stored
    /// The known tag of a tag line, kept beside ``stored`` so hot loops can test it without copying the tag.
    let storedKnownTag: KnownTag?
    /// Whether the line is a URI line (see ``storedKnownTag``).
    let storedIsURI: Bool

    /// What a line is. The tags of every segment that the parser reads straight from the buffer (EXTINF,
    /// EXT-X-BYTERANGE, EXT-X-PROGRAM-DATE-TIME) keep only their value; their ``Tag`` is built from the line's
    /// bytes when asked for, so parsing makes no tag and no string for them.
    enum Stored: Sendable {
        case blank
        case comment
        case uri
        case tag(Tag)
        /// A parsed `#EXTINF:<duration>,[<title>]` line: its duration and whether it has a title (the rest is read
        /// from the bytes).
        case extinf(Double, hasTitle: Bool)
        case byteRange(ByteRangeSpec)
        case dateTime(DateTime)
        /// A parsed attribute-list tag line read straight from the buffer (EXT-X-STREAM-INF): its tag and list,
        /// kept without a ``Tag`` around them so the multivariant view reads the list without copying a tag.
        case attributes(KnownTag, AttributeList)
    }

    init(bytes: ArraySlice<UInt8>, ending: LineEnding, content: Content) {
        self.bytes = bytes
        self.ending = ending
        switch content {
        case .tag(let t):
            stored = .tag(t)
            storedKnownTag = t.known
            storedIsURI = false
        case .uri:
            stored = .uri
            storedKnownTag = nil
            storedIsURI = true
        case .blank:
            stored = .blank
            storedKnownTag = nil
            storedIsURI = false
        case .comment:
            stored = .comment
            storedKnownTag = nil
            storedIsURI = false
        }
    }
    init(bytes: ArraySlice<UInt8>, ending: LineEnding, tag: Tag, known: KnownTag?) {
        self.bytes = bytes
        self.ending = ending
        self.stored = .tag(tag)
        storedKnownTag = known
        storedIsURI = false
    }

    /// A parsed EXTINF line whose bytes are `#EXTINF:` and the value (see ``extinfValue``).
    init(bytes: ArraySlice<UInt8>, ending: LineEnding, extinfDuration: Double, hasTitle: Bool) {
        self.bytes = bytes
        self.ending = ending
        self.stored = .extinf(extinfDuration, hasTitle: hasTitle)
        storedKnownTag = .extinf
        storedIsURI = false
    }

    /// A parsed EXT-X-BYTERANGE line.
    init(bytes: ArraySlice<UInt8>, ending: LineEnding, byteRange: ByteRangeSpec) {
        self.bytes = bytes
        self.ending = ending
        self.stored = .byteRange(byteRange)
        storedKnownTag = .byteRange
        storedIsURI = false
    }

    /// A parsed attribute-list tag line of the known tag `known`.
    init(bytes: ArraySlice<UInt8>, ending: LineEnding, known: KnownTag, attributes: AttributeList) {
        self.bytes = bytes
        self.ending = ending
        self.stored = .attributes(known, attributes)
        storedKnownTag = known
        storedIsURI = false
    }

    /// A parsed EXT-X-PROGRAM-DATE-TIME line.
    init(bytes: ArraySlice<UInt8>, ending: LineEnding, dateTime: DateTime) {
        self.bytes = bytes
        self.ending = ending
        self.stored = .dateTime(dateTime)
        storedKnownTag = .programDateTime
        storedIsURI = false
    }

    /// A tag line, rendered canonically.
    public init(tag: Tag, ending: LineEnding = .lf) {
        self.init(bytes: ArraySlice(tag.rendered.utf8), ending: ending, tag: tag, known: tag.known)
    }
    /// A URI line.
    public init(uri: String, ending: LineEnding = .lf) {
        self.init(bytes: ArraySlice(uri.utf8), ending: ending, content: .uri)
    }
    /// A comment line; `text` is written after the `#`.
    public init(comment text: String, ending: LineEnding = .lf) {
        self.init(bytes: ArraySlice(("#" + text).utf8), ending: ending, content: .comment)
    }
    /// An empty line.
    public static func blank(ending: LineEnding = .lf) -> PlaylistLine {
        PlaylistLine(bytes: [], ending: ending, content: .blank)
    }

    /// What the line is.
    public var content: Content {
        switch stored {
        case .blank: return .blank
        case .comment: return .comment
        case .uri: return .uri
        case .tag(let t): return .tag(t)
        case .extinf(let duration, _): return .tag(Tag(.extinf, .extinf(PlaylistLine.extinfValue(bytes, duration))))
        case .byteRange(let b): return .tag(Tag(.byteRange, .byteRange(b)))
        case .dateTime(let d): return .tag(Tag(.programDateTime, .dateTime(d)))
        case .attributes(let known, let list): return .tag(Tag(known, .attributes(list)))
        }
    }

    /// Where the duration ends (at the first comma, or at the value's end) and the value ends (trailing
    /// whitespace not included) in the bytes of a parsed EXTINF line, as the parser read them.
    private static func extinfBounds(_ bytes: ArraySlice<UInt8>) -> (comma: Int, end: Int) {
        let start = bytes.startIndex + 8
        var end = bytes.endIndex
        while end > start, ASCII.isWhitespace(bytes[end - 1]) { end -= 1 }
        var comma = start
        while comma < end, bytes[comma] != asciiComma { comma += 1 }
        return (comma, end)
    }

    /// The title of a parsed EXTINF line ("" when there is none).
    private static func extinfTitle(_ bytes: ArraySlice<UInt8>) -> String {
        let (comma, end) = extinfBounds(bytes)
        return comma + 1 < end ? String(decoding: bytes[(comma + 1)..<end], as: UTF8.self) : ""
    }

    /// The EXTINF value of a parsed EXTINF line with `duration`, read from its bytes.
    private static func extinfValue(_ bytes: ArraySlice<UInt8>, _ duration: Double) -> ExtInf {
        let (comma, end) = extinfBounds(bytes)
        return ExtInf(
            duration: duration, durationText: String(decoding: bytes[(bytes.startIndex + 8)..<comma], as: UTF8.self),
            title: extinfTitle(bytes), hasComma: comma < end)
    }

    /// Lines are equal when their bytes, endings and contents are; a parsed line's content follows from its
    /// bytes, so two parsed lines of the same kind compare by their bytes alone.
    public static func == (a: PlaylistLine, b: PlaylistLine) -> Bool {
        guard a.ending == b.ending, a.bytes == b.bytes else { return false }
        switch (a.stored, b.stored) {
        case (.blank, .blank), (.comment, .comment), (.uri, .uri), (.extinf, .extinf), (.byteRange, .byteRange),
            (.dateTime, .dateTime):
            return true
        default: return a.content == b.content
        }
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes)
        hasher.combine(ending)
    }

    /// The line's text without its line ending.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
    /// The tag, for tag lines.
    public var tag: Tag? {
        if case .tag(let t) = content { return t }
        return nil
    }
    /// The known tag, for tag lines of a known tag.
    public var knownTag: KnownTag? { storedKnownTag }
    public var isURI: Bool { storedIsURI }
    public var isComment: Bool {
        if case .comment = stored { return true }
        return false
    }
    public var isBlank: Bool {
        if case .blank = stored { return true }
        return false
    }
    /// The URI of a URI line with surrounding whitespace removed.
    public var uri: String? { uriBytes.map { String(decoding: $0, as: UTF8.self) } }
    /// The duration and title of the EXTINF line at `index` (nil and "" for other lines and unreadable values),
    /// read in place without copying the line or its tag.
    static func extinf(in lines: UnsafeBufferPointer<PlaylistLine>, at index: Int) -> (Double?, String) {
        switch lines[index].stored {
        case .extinf(let duration, let hasTitle): return (duration, hasTitle ? extinfTitle(lines[index].bytes) : "")
        case .tag(let t):
            if case .extinf(let e) = t.value { return (e.duration, e.title) }
            return (nil, "")
        default: return (nil, "")
        }
    }
    /// The value of the EXT-X-BYTERANGE line at `index` (nil for other lines and unreadable values), read in place.
    static func byteRange(in lines: UnsafeBufferPointer<PlaylistLine>, at index: Int) -> ByteRangeSpec? {
        switch lines[index].stored {
        case .byteRange(let b): return b
        case .tag(let t): return t.byteRange
        default: return nil
        }
    }
    /// The date of the EXT-X-PROGRAM-DATE-TIME line at `index` (nil for other lines and unreadable values), read
    /// in place.
    static func dateTime(in lines: UnsafeBufferPointer<PlaylistLine>, at index: Int) -> DateTime? {
        switch lines[index].stored {
        case .dateTime(let d): return d
        case .tag(let t): return t.dateTime
        default: return nil
        }
    }
    /// For an EXTINF line the parser read on its fast path: whether its duration has a decimal point, whether a
    /// comma follows the duration, and the duration's length in bytes, read from the bytes without building the
    /// line's tag (nil for any other line).
    var parsedExtinfShape: (decimal: Bool, hasComma: Bool, durationLength: Int)? {
        guard case .extinf = stored else { return nil }
        let (comma, end) = PlaylistLine.extinfBounds(bytes)
        let durationStart = bytes.startIndex + 8
        return (bytes[durationStart..<comma].contains(0x2E), comma < end, comma - durationStart)
    }

    /// The attribute list of an attribute-list tag line (nil for other lines), read without copying the tag.
    var attributeListValue: AttributeList? {
        switch stored {
        case .attributes(_, let list): return list
        case .tag(let t):
            guard case .attributes(let list) = t.value else { return nil }
            return list
        default: return nil
        }
    }
    /// The bytes of ``uri``: a view into the line's bytes.
    var uriBytes: ArraySlice<UInt8>? {
        guard storedIsURI else { return nil }
        var lo = bytes.startIndex
        var hi = bytes.endIndex
        while lo < hi, ASCII.isWhitespace(bytes[lo]) || bytes[lo] == asciiCR { lo &+= 1 }
        while hi > lo, ASCII.isWhitespace(bytes[hi &- 1]) || bytes[hi &- 1] == asciiCR { hi &-= 1 }
        return bytes[lo..<hi]
    }
}
