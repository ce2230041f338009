import TextCodecs

// Long file: the IPTV list model, its streaming parser and its writer, kept together as one format.
/// One raw line of an IPTV list, kept for lossless writing.
public struct IPTVLine: Sendable, Hashable {
    /// The line's bytes without its line ending (a view into the input chunk).
    public var bytes: ArraySlice<UInt8>
    public var ending: LineEnding
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// The `#EXTM3U` header of an extended M3U channel list and its attributes (`url-tvg`, `x-tvg-url`, `catchup`…).
public struct IPTVHeader: Sendable, Hashable {
    /// The attributes in order, each under its lower-case name (`URL-TVG` and `url-tvg` are one name).
    public var attributes: [(name: String, value: String)]
    public var line: IPTVLine?
    /// Spellings given in code (nil: read from ``line`` when asked for).
    private var spellings: [String: String]?

    /// Names are stored in lower case; a name written otherwise keeps its spelling in ``attributeSpellings``.
    public init(attributes: [(name: String, value: String)] = [], line: IPTVLine? = nil) {
        (self.attributes, self.spellings) = IPTVAttributeNames.folded(attributes)
        self.line = line
    }

    /// Attributes whose names are already in lower case, their spellings in `line`.
    init(folded attributes: [(name: String, value: String)], line: IPTVLine?) {
        self.attributes = attributes
        self.line = line
    }

    /// The spelling a name was first written in, by lower-case name, for names not written in lower case: read from
    /// the header line when asked for (parsing keeps the line, not a copy of its names).
    public var attributeSpellings: [String: String] {
        get {
            if let spellings { return spellings }
            guard let line else { return [:] }
            var text = line.bytes
            while let f = text.first, ASCII.isWhitespace(f) { text = text.dropFirst() }
            return IPTVAttributeNames.spellings(
                IPTVStreamParser.attributes(text.dropFirst(7), folding: false).attributes)
        }
        set { spellings = newValue }
    }

    /// The value of the first attribute called `name`, compared without regard to case.
    public subscript(name: String) -> String? {
        let key = IPTVAttributeNames.lowercased(name)
        return attributes.first { $0.name == key }?.value
    }

    public static func == (a: IPTVHeader, b: IPTVHeader) -> Bool {
        a.line == b.line && a.attributes.elementsEqual(b.attributes) { $0.name == $1.name && $0.value == $1.value }
            && a.spellings == b.spellings
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(line) }
}

/// One channel of an IPTV list with the options that apply to it.
public struct IPTVChannel: Sendable, Hashable {
    public var name: String
    public var url: String
    /// The EXTINF duration (`-1` or `0` for live channels).
    public var duration: Double
    /// Where ``name`` comes from.
    public var nameSource: NameSource
    /// The EXTINF attributes in order (`tvg-id`, `tvg-name`, `tvg-logo`, `group-title`, `tvg-chno`, `catchup`…),
    /// each under its lower-case name: `TVG-ID`, `Tvg-Id` and `tvg-id` are one name.
    public var attributes: [(name: String, value: String)]
    /// Spellings given in code (nil: read from ``lines`` when asked for).
    private var spellings: [String: String]?
    /// `group-title`, or the `#EXTGRP` value when there is no group-title.
    public var group: String?
    /// From `#EXTVLCOPT:http-user-agent=` or the `User-Agent` of `#EXTHTTP`.
    public var userAgent: String?
    /// From `#EXTVLCOPT:http-referrer=` (or `http-referer`) or the `Referer` of `#EXTHTTP`.
    public var referrer: String?
    /// The headers of `#EXTHTTP` (a JSON object), in order.
    public var httpHeaders: [(name: String, value: String)]
    /// `#KODIPROP:key=value` lines, in order.
    public var kodiProps: [(name: String, value: String)]
    /// `#EXTVLCOPT:key=value` lines, in order.
    public var vlcOpts: [(name: String, value: String)]
    /// The source lines of the entry (comments and options before the URL, the URL line), for lossless writing.
    public var lines: [IPTVLine]
    /// 1-based line number of the entry's first line.
    public var lineNumber: Int

    /// Where a channel's name comes from.
    public enum NameSource: String, Sendable, Hashable {
        /// The EXTINF title, after the first comma outside quotes (or the name given in code).
        case title
        /// The `tvg-name` attribute of an EXTINF line with no title.
        case tvgName = "tvg-name"
        /// The URL: its last path segment, or the whole URL when it has none. A bare URL line (no `#EXTINF`) and an
        /// EXTINF line that names nothing at all (`#EXTINF:-1,`) are named so.
        case url
        /// Nothing names the channel: ``name`` is empty.
        case none
    }

    /// Attribute names are stored in lower case; a name written otherwise keeps its spelling in
    /// ``attributeSpellings``.
    public init(name: String, url: String, duration: Double = -1, attributes: [(name: String, value: String)] = []) {
        self.name = name
        self.nameSource = name.isEmpty ? .none : .title
        self.url = url
        self.duration = duration
        (self.attributes, self.spellings) = IPTVAttributeNames.folded(attributes)
        self.group = self.attributes.first { $0.name == "group-title" }?.value
        self.httpHeaders = []
        self.kodiProps = []
        self.vlcOpts = []
        self.lines = []
        self.lineNumber = 0
    }

    /// A channel whose attribute names are already in lower case (as the parser reads them).
    init(name: String, nameSource: NameSource, duration: Double, folded attributes: [(name: String, value: String)]) {
        self.name = name
        self.nameSource = nameSource
        self.url = ""
        self.duration = duration
        self.attributes = attributes
        self.group = attributes.first { $0.name == "group-title" }?.value
        self.httpHeaders = []
        self.kodiProps = []
        self.vlcOpts = []
        self.lines = []
        self.lineNumber = 0
    }

    /// The spelling a name was first written in, by lower-case name, for names not written in lower case (used
    /// when the entry is rendered from its values; ``lines`` keep the source as it was). Read from the entry's
    /// EXTINF line when asked for: parsing keeps the line, not a copy of its names.
    public var attributeSpellings: [String: String] {
        get {
            if let spellings { return spellings }
            // A bare URL has no attributes (lines before it may be a skipped entry's).
            guard !attributes.isEmpty else { return [:] }
            // The entry's EXTINF is its last one (lines of a skipped entry before it are kept with it).
            for line in lines.reversed() {
                var text = line.bytes
                while let f = text.first, ASCII.isWhitespace(f) { text = text.dropFirst() }
                guard text.starts(with: "#EXTINF:".utf8) else { continue }
                var i = text.startIndex + 8
                while i < text.endIndex, text[i] != asciiSpace, text[i] != asciiComma, text[i] != asciiTab { i += 1 }
                return IPTVAttributeNames.spellings(IPTVStreamParser.attributes(text[i...], folding: false).attributes)
            }
            return [:]
        }
        set { spellings = newValue }
    }

    /// The value of the first attribute called `attribute`, compared without regard to case.
    public subscript(attribute: String) -> String? {
        let key = IPTVAttributeNames.lowercased(attribute)
        return attributes.first { $0.name == key }?.value
    }

    public static func == (a: IPTVChannel, b: IPTVChannel) -> Bool {
        func same(_ x: [(name: String, value: String)], _ y: [(name: String, value: String)]) -> Bool {
            x.elementsEqual(y) { $0.name == $1.name && $0.value == $1.value }
        }
        return a.name == b.name && a.nameSource == b.nameSource && a.url == b.url && a.duration == b.duration
            && same(a.attributes, b.attributes) && a.spellings == b.spellings
            && a.group == b.group && a.userAgent == b.userAgent && a.referrer == b.referrer
            && same(a.httpHeaders, b.httpHeaders) && same(a.kodiProps, b.kodiProps) && same(a.vlcOpts, b.vlcOpts)
            && a.lines == b.lines && a.lineNumber == b.lineNumber
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(url)
    }

    /// The entry rendered canonically (for channels built in code): EXTINF with quoted attributes, options, URL.
    public var renderedLines: [String] {
        var extinf = "#EXTINF:" + Numbers.formatShort(duration)
        for a in attributes { extinf += " " + (attributeSpellings[a.name] ?? a.name) + "=\"" + a.value + "\"" }
        var out = [extinf + "," + name]
        for o in vlcOpts { out.append("#EXTVLCOPT:" + o.name + "=" + o.value) }
        for o in kodiProps { out.append("#KODIPROP:" + o.name + "=" + o.value) }
        out.append(url)
        return out
    }
}

/// A problem with one entry of an IPTV list; the entry was skipped.
public struct IPTVDiagnostic: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String
    public var description: String { "\(line):\(column): \(message)" }
}

/// A whole IPTV list (see ``IPTVStreamParser`` for lists too large to hold).
public struct IPTVPlaylist: Sendable, Hashable {
    public var header: IPTVHeader
    public var channels: [IPTVChannel]
    /// Lines after the last channel (comments, options without a URL).
    public var trailingLines: [IPTVLine]
    public var diagnostics: [IPTVDiagnostic]
    public var hasByteOrderMark: Bool

    public init(bytes: [UInt8], limits: PlaylistLimits = .default) throws(PlaylistError) {
        var parser = IPTVStreamParser(limits: limits)
        var channels: [IPTVChannel] = []
        try parser.consume(bytes[...]) { channels.append($0) }
        try parser.finish { channels.append($0) }
        self.header = parser.header
        self.channels = channels
        self.trailingLines = parser.pendingLines
        self.diagnostics = parser.diagnostics
        self.hasByteOrderMark = parser.hasByteOrderMark
    }

    public init(_ text: String) throws(PlaylistError) { try self.init(bytes: Array(text.utf8)) }

    /// The list as bytes: the source lines of the header, every entry (skipped entries included) and the trailer.
    public func write() -> [UInt8] {
        var out: [UInt8] = hasByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
        func put(_ line: IPTVLine) {
            out.append(contentsOf: line.bytes)
            out.append(contentsOf: line.ending.bytes)
        }
        if let h = header.line { put(h) }
        for c in channels {
            if c.lines.isEmpty {
                for l in c.renderedLines {
                    out.append(contentsOf: l.utf8)
                    out.append(asciiLF)
                }
            } else {
                for l in c.lines { put(l) }
            }
        }
        for l in trailingLines { put(l) }
        return out
    }
}

/// Parses an IPTV extended M3U list in chunks with memory bounded by the longest entry: feed bytes with
/// ``consume(_:emit:)`` as they arrive, then call ``finish(emit:)``. Each complete channel is handed to `emit`.
/// An entry that cannot be read is reported in ``diagnostics`` and skipped; skipped entries' lines are kept with
/// the next channel so writing stays lossless.
public struct IPTVStreamParser: Sendable {
    public var limits: PlaylistLimits
    public private(set) var header = IPTVHeader()
    public private(set) var diagnostics: [IPTVDiagnostic] = []
    public private(set) var hasByteOrderMark = false
    /// Lines read since the last channel.
    public private(set) var pendingLines: [IPTVLine] = []
    /// Count of bytes consumed so far.
    public private(set) var bytesRead = 0
    private var partial: [UInt8] = []
    private var lineNumber = 0
    private var entryStart = 0
    /// The entry being read (meaningful while `hasCurrent`), kept in place so option lines update it without
    /// moving the whole channel.
    private var current = IPTVChannel(name: "", url: "")
    private var hasCurrent = false
    private var pendingOptions: IPTVChannel?
    private var extgrp: String?
    /// Whether the last #EXTINF could not be read: the URL after it belongs to the skipped entry.
    private var skippingEntry = false
    private var maxDiagnostics = 10_000

    public init(limits: PlaylistLimits = .default) { self.limits = limits }

    /// Consumes the next chunk.
    public mutating func consume(_ chunk: ArraySlice<UInt8>, emit: (IPTVChannel) -> Void) throws(PlaylistError) {
        bytesRead += chunk.count
        var i = chunk.startIndex
        let end = chunk.endIndex
        while i < end {
            let j = IPTVStreamParser.nextLineFeed(chunk, from: i)
            if j == end {
                partial.append(contentsOf: chunk[i..<end])
                if partial.count > limits.maxLineLength {
                    throw PlaylistError(.lineTooLong, line: lineNumber + 1, column: limits.maxLineLength + 1)
                }
                detachPendingLines()
                return
            }
            if partial.isEmpty {
                try line(chunk[i..<j], emit: emit)
            } else {
                partial.append(contentsOf: chunk[i..<j])
                guard partial.count <= limits.maxLineLength else {
                    throw PlaylistError(.lineTooLong, line: lineNumber + 1, column: limits.maxLineLength + 1)
                }
                let whole = partial
                partial.removeAll(keepingCapacity: true)
                try line(whole[...], emit: emit)
            }
            i = j + 1
        }
        detachPendingLines()
    }

    /// Copies the lines held for the next channel out of the caller's chunk, so that a caller reusing one read
    /// buffer does not have it copied on every read because a held line still refers to it.
    private mutating func detachPendingLines() {
        for k in pendingLines.indices { pendingLines[k].bytes = ArraySlice(Array(pendingLines[k].bytes)) }
    }

    /// The index of the next LF at or after `from`, or `chunk.endIndex`; eight bytes at a time.
    static func nextLineFeed(_ chunk: ArraySlice<UInt8>, from: Int) -> Int {
        chunk.withUnsafeBufferPointer { buffer in
            chunk.startIndex &+ ByteSearch.firstIndex(of: asciiLF, in: buffer, from: from &- chunk.startIndex)
        }
    }

    /// Ends the input: a last line without a line break is read, and a dangling entry is reported.
    public mutating func finish(emit: (IPTVChannel) -> Void) throws(PlaylistError) {
        if !partial.isEmpty {
            let whole = partial
            partial = []
            try line(whole[...], ending: LineEnding.none, emit: emit)
        }
        if hasCurrent {
            report(entryStart, 1, "#EXTINF without a URL")
            hasCurrent = false
            current.lines = []
        }
    }

    private mutating func report(_ line: Int, _ column: Int, _ message: String) {
        if diagnostics.count < maxDiagnostics {
            diagnostics.append(IPTVDiagnostic(line: line, column: column, message: message))
        }
    }

    private mutating func line(_ raw: ArraySlice<UInt8>, ending: LineEnding? = nil, emit: (IPTVChannel) -> Void)
        throws(PlaylistError)
    {
        lineNumber += 1
        var content = raw
        // A byte order mark before the first line (detected here, so chunk boundaries do not matter).
        if lineNumber == 1, content.starts(with: [0xEF, 0xBB, 0xBF]) {
            hasByteOrderMark = true
            content = content.dropFirst(3)
        }
        var lineEnding = ending ?? .lf
        if ending == nil, content.last == asciiCR {
            content = content.dropLast()
            lineEnding = .crlf
        }
        guard content.count <= limits.maxLineLength else {
            throw PlaylistError(.lineTooLong, line: lineNumber, column: limits.maxLineLength + 1)
        }
        let stored = IPTVLine(bytes: content, ending: lineEnding)
        var trimmed = content
        while let f = trimmed.first, ASCII.isWhitespace(f) { trimmed = trimmed.dropFirst() }
        while let l = trimmed.last, ASCII.isWhitespace(l) { trimmed = trimmed.dropLast() }
        if lineNumber == 1, IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.extm3uPrefix) {
            // The header line is kept for the whole parse: a copy, so it does not pin the caller's chunk.
            let own = IPTVLine(bytes: ArraySlice(Array(content)), ending: lineEnding)
            header = IPTVHeader(folded: IPTVStreamParser.attributes(trimmed.dropFirst(7)).attributes, line: own)
            return
        }
        if pendingLines.isEmpty {
            entryStart = lineNumber
            pendingLines.reserveCapacity(4)
        }
        guard pendingLines.count < limits.maxLines / 1000 else {
            throw PlaylistError(.tooManyLines, line: lineNumber, column: 1, "too many lines without a channel URL")
        }
        pendingLines.append(stored)
        guard let first = trimmed.first else { return }
        if first == asciiHash {
            if IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.extinfPrefix) {
                if hasCurrent { report(entryStart, 1, "#EXTINF without a URL; entry skipped") }
                hasCurrent = parseExtinf(trimmed.dropFirst(8))
                skippingEntry = !hasCurrent
                if hasCurrent { applyPendingOptions() }
                pendingOptions = nil
                return
            }
            // Options before the EXTINF line are held and applied to the entry once it starts.
            if IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.extvlcoptPrefix) {
                let (k, v) = IPTVStreamParser.keyValue(trimmed.dropFirst(11))
                updateEntry { target in
                    target.vlcOpts.append((k, v))
                    switch k {
                    case "http-user-agent": target.userAgent = v
                    case "http-referrer", "http-referer": target.referrer = v
                    default: break
                    }
                }
            } else if IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.kodipropPrefix) {
                let (k, v) = IPTVStreamParser.keyValue(trimmed.dropFirst(10))
                updateEntry { $0.kodiProps.append((k, v)) }
            } else if IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.extgrpPrefix) {
                let group = String(decoding: trimmed.dropFirst(8), as: UTF8.self)
                extgrp = group
                updateEntry { target in
                    if target.group == nil { target.group = group }
                }
            } else if IPTVStreamParser.hasPrefix(trimmed, IPTVStreamParser.exthttpPrefix) {
                let headers = JSONObjectReader.stringPairs(trimmed.dropFirst(9))
                if headers == nil { report(lineNumber, 10, "#EXTHTTP is not a JSON object of strings") }
                updateEntry { target in
                    for (k, v) in headers ?? [] { target.setHeader(k, v, overriding: true) }
                }
            }
            return
        }
        // A URL line. A bare URL, with no #EXTINF before it, is a channel of its own, as VLC and Kodi play it (a
        // plain M3U list is nothing else), named after its URL.
        if !hasCurrent && !skippingEntry {
            current = IPTVChannel(name: "", url: "")
            current.group = extgrp
            hasCurrent = true
            applyPendingOptions()
        }
        guard hasCurrent else {
            report(lineNumber, 1, "URL of the entry whose #EXTINF could not be read; skipped with it")
            pendingOptions = nil
            skippingEntry = false
            return
        }
        hasCurrent = false
        skippingEntry = false
        let (url, pipeHeaders) = IPTVURL.split(trimmed)
        current.url = url
        if current.name.isEmpty && current.duration == -1 && current.attributes.isEmpty {
            current.name = IPTVURL.displayName(url)
            current.nameSource = .url
        }
        // Kodi's `url|Name=value&...` headers belong to this URL: they win over the entry's options.
        for (name, value) in pipeHeaders { current.setHeader(name, value, overriding: true) }
        current.lines = pendingLines
        current.lineNumber = entryStart
        pendingLines = []
        pendingOptions = nil
        extgrp = nil
        emit(current)
        // The emitted lines are views into the caller's chunk: not held past the call.
        current.lines = []
    }

    /// Moves the options held before the entry's first line into the entry.
    private mutating func applyPendingOptions() {
        guard let pre = pendingOptions else { return }
        pendingOptions = nil
        current.vlcOpts = pre.vlcOpts + current.vlcOpts
        current.kodiProps = pre.kodiProps + current.kodiProps
        current.httpHeaders = pre.httpHeaders + current.httpHeaders
        current.userAgent = current.userAgent ?? pre.userAgent
        current.referrer = current.referrer ?? pre.referrer
        current.group = current.group ?? pre.group
    }

    /// Applies an option line to the current entry, or holds it for the entry the next #EXTINF starts.
    private mutating func updateEntry(_ body: (inout IPTVChannel) -> Void) {
        if hasCurrent {
            body(&current)
        } else {
            // Taken out of the optional before the change, so the held entry is not copied.
            var held = pendingOptions ?? IPTVChannel(name: "", url: "")
            pendingOptions = nil
            body(&held)
            pendingOptions = held
        }
    }

    private static let extm3uPrefix: StaticString = "#EXTM3U"
    private static let extinfPrefix: StaticString = "#EXTINF:"
    private static let extvlcoptPrefix: StaticString = "#EXTVLCOPT:"
    private static let kodipropPrefix: StaticString = "#KODIPROP:"
    private static let extgrpPrefix: StaticString = "#EXTGRP:"
    private static let exthttpPrefix: StaticString = "#EXTHTTP:"

    /// Whether `line` starts with `prefix` (compared as bytes over the line's buffer).
    private static func hasPrefix(_ line: ArraySlice<UInt8>, _ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard line.count >= n else { return false }
        let p = prefix.utf8Start
        return line.withUnsafeBufferPointer { b in
            var k = 0
            while k < n {
                if b[k] != p[k] { return false }
                k &+= 1
            }
            return true
        }
    }

    /// Reads an EXTINF value into ``current``; false (and a diagnostic) when the entry must be skipped.
    private mutating func parseExtinf(_ value: ArraySlice<UInt8>) -> Bool {
        var i = value.startIndex
        while i < value.endIndex, value[i] != asciiSpace, value[i] != asciiComma, value[i] != asciiTab { i += 1 }
        guard let duration = Numbers.decimalFloat(value[value.startIndex..<i], signed: true) else {
            report(lineNumber, 9, "#EXTINF duration is not a number; entry skipped")
            return false
        }
        let read = IPTVStreamParser.attributes(value[i...])
        var name = ""
        var source = IPTVChannel.NameSource.title
        if let titleStart = read.titleStart {
            var title = value[titleStart...]
            while let f = title.first, ASCII.isWhitespace(f) { title = title.dropFirst() }
            name = String(decoding: title, as: UTF8.self)
        } else {
            name = read.attributes.first { $0.name == "tvg-name" }?.value ?? ""
            source = .tvgName
        }
        if name.isEmpty { source = .none }
        current = IPTVChannel(name: name, nameSource: source, duration: duration, folded: read.attributes)
        if current.group == nil { current.group = extgrp }
        return true
    }

    /// `key=value` (the value may be empty).
    static func keyValue(_ b: ArraySlice<UInt8>) -> (String, String) {
        guard let eq = b.firstIndex(of: asciiEquals) else { return (String(decoding: b, as: UTF8.self), "") }
        return (String(decoding: b[..<eq], as: UTF8.self), String(decoding: b[(eq + 1)...], as: UTF8.self))
    }

    /// Reads `key="value" key='value' key=value key= ...` up to the first comma outside quotes. Returns the attributes
    /// (names in lower case, unless `folding` is false) and the index just past that comma (nil when there is none).
    /// A quote closes a value only when followed by the end, a comma, or spaces and then another `key=` or a comma,
    /// so stray quotes inside values survive.
    static func attributes(_ slice: ArraySlice<UInt8>, folding: Bool = true) -> (
        attributes: [(name: String, value: String)], titleStart: ArraySlice<UInt8>.Index?
    ) {
        let base = slice.startIndex
        let (list, title) = slice.withUnsafeBufferPointer { attributes($0, folding: folding) }
        return (list, title.map { base + $0 })
    }

    /// The same over a buffer (indices from 0), so the scanning loops carry no bounds checks.
    private static func attributes(_ b: UnsafeBufferPointer<UInt8>, folding: Bool) -> (
        [(name: String, value: String)], Int?
    ) {
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(8)
        var i = b.startIndex
        let end = b.endIndex
        // The next key as found while deciding that a quote closed the previous value (start and `=`), so it is
        // not scanned twice.
        var knownKey = (start: -1, equals: -1)
        while i < end {
            let c = b[i]
            if c == asciiComma { return (out, i + 1) }
            if ASCII.isWhitespace(c) {
                i += 1
                continue
            }
            let keyStart = i
            if keyStart == knownKey.start {
                i = knownKey.equals
            } else {
                while i < end, !IPTVStreamParser.endsKey(b[i]) { i += 1 }
            }
            guard i < end, b[i] == asciiEquals else { continue }  // a stray token: skipped
            let name = UnsafeBufferPointer(rebasing: b[keyStart..<i])
            let key = folding ? IPTVAttributeNames.name(name) : String(decoding: name, as: UTF8.self)
            i += 1
            if i < end, b[i] == asciiQuote || b[i] == asciiApostrophe {
                let quote = b[i]
                let valueStart = i + 1
                var j = valueStart
                var close: Int?
                while j < end {
                    j = ByteSearch.firstIndex(of: quote, in: b, from: j)
                    if j < end {
                        let (closes, nextKey) = closesValue(b, j)
                        if closes {
                            close = j
                            knownKey = nextKey
                            break
                        }
                    }
                    j += 1
                }
                if let close {
                    out.append(
                        (key, String(decoding: UnsafeBufferPointer(rebasing: b[valueStart..<close]), as: UTF8.self)))
                    i = close + 1
                } else {
                    // Unterminated: the value runs to the first comma.
                    var k = valueStart
                    while k < end, b[k] != asciiComma { k += 1 }
                    out.append((key, String(decoding: UnsafeBufferPointer(rebasing: b[valueStart..<k]), as: UTF8.self)))
                    i = k
                }
            } else {
                let valueStart = i
                while i < end, b[i] != asciiComma, !ASCII.isWhitespace(b[i]) { i += 1 }
                out.append((key, String(decoding: UnsafeBufferPointer(rebasing: b[valueStart..<i]), as: UTF8.self)))
            }
        }
        return (out, nil)
    }

    /// Whether the quote at `quote` closes a value; when it does because another `key=` follows, also where that
    /// key starts and where its `=` is (-1 otherwise).
    private static func closesValue(_ b: UnsafeBufferPointer<UInt8>, _ quote: Int) -> (Bool, (start: Int, equals: Int))
    {
        let none = (start: -1, equals: -1)
        var k = quote + 1
        if k >= b.endIndex || b[k] == asciiComma { return (true, none) }
        guard ASCII.isWhitespace(b[k]) else { return (false, none) }
        while k < b.endIndex, ASCII.isWhitespace(b[k]) { k += 1 }
        if k >= b.endIndex || b[k] == asciiComma { return (true, none) }
        // Another key= follows?
        let start = k
        while k < b.endIndex, !endsKey(b[k]), b[k] != asciiQuote { k += 1 }
        if k < b.endIndex && b[k] == asciiEquals { return (true, (start, k)) }
        return (false, none)
    }

    /// Whether `c` ends an attribute key: `=`, `,`, space or tab (one shift and test).
    @inline(__always)
    private static func endsKey(_ c: UInt8) -> Bool {
        let stops: UInt64 = 1 << 0x3D | 1 << 0x2C | 1 << 0x20 | 1 << 0x09
        return c < 64 && (stops >> UInt64(c)) & 1 != 0
    }

}

/// A minimal reader for a flat JSON object of string values (`#EXTHTTP`).
enum JSONObjectReader {
    static func stringPairs(_ b: ArraySlice<UInt8>) -> [(String, String)]? {
        var i = b.startIndex
        func skip() { while i < b.endIndex, ASCII.isWhitespace(b[i]) || b[i] == asciiLF || b[i] == asciiCR { i += 1 } }
        func string() -> String? {
            guard i < b.endIndex, b[i] == asciiQuote else { return nil }
            i += 1
            var out: [UInt8] = []
            while i < b.endIndex {
                let c = b[i]
                if c == asciiQuote {
                    i += 1
                    return String(decoding: out, as: UTF8.self)
                }
                if c == 0x5C {
                    i += 1
                    guard i < b.endIndex else { return nil }
                    switch b[i] {
                    case 0x6E: out.append(asciiLF)
                    case 0x74: out.append(asciiTab)
                    case 0x72: out.append(asciiCR)
                    case 0x75:
                        guard i + 4 < b.endIndex else { return nil }
                        var v: UInt32 = 0
                        for k in 1...4 {
                            guard let h = Hex.value(of: b[i + k]) else { return nil }
                            v = v << 4 | UInt32(h)
                        }
                        out.append(contentsOf: Array(String(Character(Unicode.Scalar(v) ?? "?")).utf8))
                        i += 4
                    default: out.append(b[i])
                    }
                    i += 1
                    continue
                }
                out.append(c)
                i += 1
            }
            return nil
        }
        skip()
        guard i < b.endIndex, b[i] == 0x7B else { return nil }
        i += 1
        var pairs: [(String, String)] = []
        skip()
        if i < b.endIndex, b[i] == 0x7D { return pairs }
        while i < b.endIndex {
            skip()
            guard let k = string() else { return nil }
            skip()
            guard i < b.endIndex, b[i] == asciiColon else { return nil }
            i += 1
            skip()
            guard let v = string() else { return nil }
            pairs.append((k, v))
            skip()
            guard i < b.endIndex else { return nil }
            if b[i] == asciiComma {
                i += 1
                continue
            }
            if b[i] == 0x7D { return pairs }
            return nil
        }
        return nil
    }
}

/// The attribute names IPTV lists use most, as string constants: a parsed name that is one of them shares the
/// constant instead of becoming a new string. Names are matched without regard to ASCII case and stored in lower
/// case.
enum IPTVAttributeNames {
    static let common: [String] = [
        "tvg-id", "tvg-name", "tvg-logo", "tvg-chno", "tvg-shift", "tvg-url", "tvg-country", "tvg-language",
        "tvg-type", "tvg-rec", "group-title", "catchup", "catchup-days", "catchup-source", "catchup-correction",
        "timeshift", "radio", "parent-code", "audio-track", "url-tvg", "x-tvg-url", "user-agent", "referrer",
    ]
    private static let table: [[(bytes: [UInt8], name: String)]] = {
        var table = [[(bytes: [UInt8], name: String)]](repeating: [], count: 32)
        for name in common { table[name.utf8.count].append((Array(name.utf8), name)) }
        return table
    }()

    /// The lower-case name for `bytes`: a shared constant when it is a common name in any case, a new string
    /// otherwise. A name already in lower case (the usual one) is compared byte for byte, as before names were
    /// folded.
    @inline(__always)
    static func name(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if let constant = common(bytes, folding: false) { return constant }
        return uncommonName(bytes)
    }

    /// A name that is not a common one as written: a common one in another case, or a new string.
    @inline(never)
    private static func uncommonName(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let count = bytes.count
        var k = 0
        while k < count, bytes[k] &- 0x41 >= 26 { k &+= 1 }
        guard k < count else { return String(decoding: bytes, as: UTF8.self) }
        if let constant = common(bytes, folding: true) { return constant }
        return String(unsafeUninitializedCapacity: count) { out in
            for n in 0..<count { out[n] = bytes[n] &- 0x41 < 26 ? bytes[n] | 0x20 : bytes[n] }
            return count
        }
    }

    /// The common name `bytes` spell, compared byte for byte or, `folding`, with upper-case letters read as lower
    /// case (the constants are lower case).
    @inline(__always)
    private static func common(_ bytes: UnsafeBufferPointer<UInt8>, folding: Bool) -> String? {
        let count = bytes.count
        guard count < table.count, count > 0 else { return nil }
        for entry in table[count] {
            let equal = entry.bytes.withUnsafeBufferPointer { e in
                var k = 0
                while k < count {
                    let c = bytes[k]
                    if e[k] != (folding && c &- 0x41 < 26 ? c | 0x20 : c) { return false }
                    k &+= 1
                }
                return true
            }
            if equal { return entry.name }
        }
        return nil
    }

    /// The spellings of names as written (`attributes` read without folding) that are not all lower case: the
    /// first spelling of each name, by its lower-case name.
    static func spellings(_ written: [(name: String, value: String)]) -> [String: String] {
        var out: [String: String] = [:]
        var seen: Set<String> = []
        for a in written {
            let name = lowercased(a.name)
            if seen.insert(name).inserted, name != a.name { out[name] = a.name }
        }
        return out
    }

    /// `name` with ASCII letters in lower case (the same string when it has no upper-case letter).
    static func lowercased(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 &- 0x41 < 26 }) else { return name }
        return String(decoding: name.utf8.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Attributes with their names in lower case, and the spellings of names that were not (nil when none).
    static func folded(_ attributes: [(name: String, value: String)]) -> (
        [(name: String, value: String)], [String: String]?
    ) {
        guard attributes.contains(where: { lowercased($0.name) != $0.name }) else { return (attributes, nil) }
        return (attributes.map { (lowercased($0.name), $0.value) }, spellings(attributes))
    }
}
