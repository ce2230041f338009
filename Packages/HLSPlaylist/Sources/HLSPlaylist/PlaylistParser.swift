import TextCodecs

/// Reads playlist bytes into a ``Playlist``.
///
/// Works on bytes: lines are views into one shared buffer and only tag values are decoded. Tolerant by default:
/// each problem is recorded as a ``ParseDiagnostic`` (line and column) and parsing goes on; `strict` throws the
/// first problem instead. Limits are always enforced and always throw.
public struct PlaylistParser: Sendable {
    public var strict: Bool
    public var limits: PlaylistLimits

    public init(strict: Bool = false, limits: PlaylistLimits = .default) {
        self.strict = strict
        self.limits = limits
    }

    public func parse(_ text: String) throws(PlaylistError) -> Playlist { try parse(Array(text.utf8)) }

    public func parse(_ source: [UInt8]) throws(PlaylistError) -> Playlist {
        guard source.count <= limits.maxBytes else {
            throw PlaylistError(.playlistTooLarge, "playlist is \(source.count) bytes; the limit is \(limits.maxBytes)")
        }
        var state = ParseState(parser: self)
        var start = 0
        var bom = false
        if source.count >= 3, source[0] == 0xEF, source[1] == 0xBB, source[2] == 0xBF {
            bom = true
            start = 3
        }
        var lines: [PlaylistLine] = []
        lines.reserveCapacity(PlaylistParser.countLineFeeds(source) + 1)
        let count = source.count
        var lineNumber = 0
        var lineStart = start
        var highBits: UInt8 = 0
        let lineFeeds = SIMD16<UInt8>(repeating: 0x0A)
        // Find each LF; the scan tracks whether the line held non-ASCII bytes (to validate UTF-8 only then).
        // A Result, not a typed-throws closure: the iOS 16/17 SDKs' standard library declares
        // withUnsafeBufferPointer with an untyped `rethrows`.
        let scanned: Result<Void, PlaylistError> = source.withUnsafeBufferPointer { buffer in
            do throws(PlaylistError) {
                var i = start
                while lineStart < count {
                    i = lineStart
                    var highWord: UInt64 = 0
                    // Sixteen bytes at a time while no LF is among them (one vector compare), then eight (SWAR), then
                    // byte by byte. Every load lies within the buffer: it starts at i with i + 16 (or 8) <= count.
                    if let base = buffer.baseAddress {
                        let raw = UnsafeRawPointer(base)
                        var highVector = SIMD16<UInt8>()
                        while i &+ 16 <= count {
                            let v = raw.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
                            let lf = unsafeBitCast(v .== lineFeeds, to: SIMD2<UInt64>.self)
                            if lf[0] | lf[1] != 0 { break }
                            highVector |= v
                            i &+= 16
                        }
                        let high = unsafeBitCast(highVector, to: SIMD2<UInt64>.self)
                        highWord = high[0] | high[1]
                        while i &+ 8 <= count {
                            let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                            let x = word ^ 0x0A0A_0A0A_0A0A_0A0A
                            let found = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
                            if found != 0 {
                                #if _endian(little)
                                    // The lowest flagged byte is the first LF (flags above it may be false).
                                    let before = found.trailingZeroBitCount >> 3
                                    if before > 0 { highWord |= word & (UInt64.max >> UInt64(64 &- 8 &* before)) }
                                    i &+= before
                                #endif
                                break
                            }
                            highWord |= word
                            i &+= 8
                        }
                    }
                    highBits = highWord & 0x8080_8080_8080_8080 != 0 ? 0x80 : 0
                    while i < count {
                        let b = buffer[i]
                        if b == asciiLF { break }
                        highBits |= b
                        i += 1
                    }
                    lineNumber += 1
                    guard lineNumber <= limits.maxLines else {
                        throw PlaylistError(
                            .tooManyLines, line: lineNumber, column: 1, "more than \(limits.maxLines) lines")
                    }
                    var contentEnd = i
                    var ending = LineEnding.none
                    if i < count {
                        ending = .lf
                        if contentEnd > lineStart && buffer[contentEnd - 1] == asciiCR {
                            contentEnd -= 1
                            ending = .crlf
                        }
                    }
                    guard contentEnd - lineStart <= limits.maxLineLength else {
                        throw PlaylistError(
                            .lineTooLong, line: lineNumber, column: limits.maxLineLength + 1,
                            "line is \(contentEnd - lineStart) bytes; the limit is \(limits.maxLineLength)")
                    }
                    // The line's slice of the source is made once, where its line is built (one retain per line).
                    if highBits & 0x80 != 0,
                        !isWellFormedUTF8(UnsafeBufferPointer(rebasing: buffer[lineStart..<contentEnd]))
                    {
                        try state.report(.invalidUTF8, line: lineNumber, column: 1, "line is not valid UTF-8")
                    }
                    // The lines read straight from the buffer, else the general path. EXT-X-STREAM-INF is tried
                    // first when its eighth byte is the 'S' of "#EXT-X-S" (a byte that rules out EXTINF, BYTERANGE
                    // and PROGRAM-DATE-TIME lines, so they pay two byte tests for it).
                    if lineNumber > 1, contentEnd - lineStart >= 18, buffer[lineStart] == asciiHash,
                        buffer[lineStart + 7] == 0x53,
                        let line = try state.streamInfLine(buffer, lineStart, contentEnd, source, ending, lineNumber)
                    {
                        lines.append(line)
                    } else if lineNumber > 1, contentEnd - lineStart >= 8, buffer[lineStart] == asciiHash,
                        let line = state.extinfLine(buffer, lineStart, contentEnd, source, ending, lineNumber)
                            ?? state.segmentTagLine(buffer, lineStart, contentEnd, source, ending)
                    {
                        lines.append(line)
                    } else {
                        lines.append(
                            try state.classify(source[lineStart..<contentEnd], ending: ending, lineNumber: lineNumber))
                    }
                    lineStart = i + 1
                }
            } catch {
                return .failure(error)
            }
            return .success(())
        }
        if case .failure(let error) = scanned { throw error }
        try state.finish(lineCount: lineNumber, lines: lines)
        return Playlist(lines: lines, hasByteOrderMark: bom, diagnostics: state.diagnostics)
    }
}

extension PlaylistParser {
    /// The number of LF bytes, sixteen at a time (exact: a byte counts only when it equals 0x0A). Each load lies
    /// within the buffer: it starts at i with i + 16 <= n.
    static func countLineFeeds(_ source: [UInt8]) -> Int {
        source.withUnsafeBytes { raw -> Int in
            let n = raw.count
            var count = 0
            var i = 0
            let lf = SIMD16<UInt8>(repeating: asciiLF)
            while i &+ 16 <= n {
                // Per-byte counters (at most 255 blocks, so no lane overflows), summed once per run of blocks.
                var lanes = SIMD16<UInt8>()
                var blocks = 0
                while blocks < 255, i &+ 16 <= n {
                    // A matching lane of the mask is all ones (-1): subtracting it adds one.
                    let v = raw.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
                    lanes &-= unsafeBitCast(v .== lf, to: SIMD16<UInt8>.self)
                    i &+= 16
                    blocks &+= 1
                }
                count &+= Int(SIMD16<UInt16>(truncatingIfNeeded: lanes).wrappedSum())
            }
            while i < n {
                if raw[i] == asciiLF { count &+= 1 }
                i &+= 1
            }
            return count
        }
    }
}

/// Per-parse state: counters for the caps, pending segment state for truncation, the diagnostics.
struct ParseState {
    let parser: PlaylistParser
    var diagnostics: [ParseDiagnostic] = []
    var segments = 0
    var variants = 0
    var variables = 0
    var sawHeader = false
    var pendingSegmentLine = 0
    var pendingVariantLine = 0
    var sawMedia = false
    var sawMultivariant = false
    var reportedMixed = false
    /// Where the attribute lists of this parse keep their spans.
    var spanArena = SpanArena(firstChunk: 16)

    init(parser: PlaylistParser) { self.parser = parser }

    mutating func report(_ code: PlaylistError.Code, line: Int, column: Int, _ message: String) throws(PlaylistError) {
        let error = PlaylistError(code, line: line, column: column, message)
        if parser.strict { throw error }
        diagnostics.append(ParseDiagnostic(error))
    }

    mutating func classify(_ bytes: consuming ArraySlice<UInt8>, ending: LineEnding, lineNumber: Int)
        throws(PlaylistError)
        -> PlaylistLine
    {
        guard let first = bytes.first else {
            if lineNumber == 1 { try report(.missingHeader, line: 1, column: 1, "the first line must be #EXTM3U") }
            return PlaylistLine(bytes: bytes, ending: ending, content: .blank)
        }
        if first == asciiHash {
            let s = bytes.startIndex
            if bytes.count >= 4, bytes[s + 1] == 0x45, bytes[s + 2] == 0x58, bytes[s + 3] == 0x54 {
                let tag = try parseTag(bytes, lineNumber: lineNumber)
                let known = tag.known
                return PlaylistLine(bytes: bytes, ending: ending, tag: tag, known: known)
            }
            if lineNumber == 1 { try report(.missingHeader, line: 1, column: 1, "the first line must be #EXTM3U") }
            return PlaylistLine(bytes: bytes, ending: ending, content: .comment)
        }
        if bytes.allSatisfy({ ASCII.isWhitespace($0) || $0 == asciiCR }) {
            if lineNumber == 1 { try report(.missingHeader, line: 1, column: 1, "the first line must be #EXTM3U") }
            return PlaylistLine(bytes: bytes, ending: ending, content: .blank)
        }
        if lineNumber == 1 { try report(.missingHeader, line: 1, column: 1, "the first line must be #EXTM3U") }
        if pendingVariantLine != 0 {
            pendingVariantLine = 0
        } else {
            segments += 1
            guard segments <= parser.limits.maxSegments else {
                throw PlaylistError(
                    .tooManySegments, line: lineNumber, column: 1, "more than \(parser.limits.maxSegments) segments")
            }
            pendingSegmentLine = 0
            sawMedia = true
            try checkMixed(lineNumber)
        }
        return PlaylistLine(bytes: bytes, ending: ending, content: .uri)
    }

    /// The most common line, `#EXTINF:<duration>,[<title>]`, read straight from the buffer (no slicing, so no
    /// reference counting per step). Nil when the line is not a well-formed EXTINF (the general path then reads
    /// and reports it), or when it would need a diagnostic.
    mutating func extinfLine(
        _ buffer: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ source: [UInt8],
        _ ending: LineEnding, _ lineNumber: Int
    ) -> PlaylistLine? {
        // "#EXTINF:" as one little-endian word.
        guard let base = buffer.baseAddress, start >= 0, end <= buffer.count, end - start >= 8,
            UnsafeRawPointer(base + start).loadUnaligned(as: UInt64.self) == 0x3A46_4E49_5458_4523
        else { return nil }
        var valueEnd = end
        while valueEnd > start + 8, ASCII.isWhitespace(base[valueEnd - 1]) { valueEnd -= 1 }
        var comma = start + 8
        while comma < valueEnd, base[comma] != asciiComma { comma += 1 }
        let durationBytes = UnsafeBufferPointer(start: base + start + 8, count: comma - start - 8)
        guard let duration = Numbers.decimalFloat(durationBytes, signed: false) else { return nil }
        if sawMultivariant && !reportedMixed { return nil }
        sawMedia = true
        pendingSegmentLine = lineNumber
        return PlaylistLine(
            bytes: source[start..<end], ending: ending, extinfDuration: duration, hasTitle: comma + 1 < valueEnd)
    }

    /// `#EXT-X-BYTERANGE:<n>[@<o>]` and `#EXT-X-PROGRAM-DATE-TIME:<date>`, one per segment in byte-range and
    /// dated playlists, read straight from the buffer like ``extinfLine``. Nil when the line is neither, its value
    /// is not well formed or ends in whitespace (the general path then reads and reports it), or it would need a
    /// diagnostic.
    mutating func segmentTagLine(
        _ buffer: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ source: [UInt8],
        _ ending: LineEnding
    ) -> PlaylistLine? {
        // "#EXT-X-B" and "#EXT-X-P" as little-endian words.
        guard let base = buffer.baseAddress, start >= 0, end <= buffer.count, end - start >= 17,
            !ASCII.isWhitespace(base[end - 1])
        else { return nil }
        let raw = UnsafeRawPointer(base + start)
        let head = raw.loadUnaligned(as: UInt64.self)
        if sawMultivariant && !reportedMixed { return nil }
        if head == 0x422D_582D_5458_4523 {
            // "YTERANGE" then ":".
            guard raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == 0x4547_4E41_5245_5459,
                base[start + 16] == asciiColon
            else { return nil }
            // <length>[@<offset>], each 1 to 20 digits without overflow (as Numbers.decimalInteger reads them).
            var i = start + 17
            func number() -> UInt64? {
                var value: UInt64 = 0
                let first = i
                while i < end, base[i] &- 0x30 < 10 {
                    let (m, o1) = value.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(UInt64(base[i] &- 0x30))
                    if o1 || o2 { return nil }
                    value = s
                    i &+= 1
                }
                return i > first && i - first <= 20 ? value : nil
            }
            guard let length = number() else { return nil }
            var offset: UInt64?
            if i < end, base[i] == 0x40 {
                i &+= 1
                guard let o = number() else { return nil }
                offset = o
            }
            guard i == end else { return nil }
            sawMedia = true
            return PlaylistLine(
                bytes: source[start..<end], ending: ending, byteRange: ByteRangeSpec(length: length, offset: offset))
        }
        if head == 0x502D_582D_5458_4523, end - start >= 25 {
            // "ROGRAM-D", "ATE-TIME" then ":".
            guard raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == 0x442D_4D41_5247_4F52,
                raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self) == 0x454D_4954_2D45_5441,
                base[start + 24] == asciiColon,
                let date = DateTime(
                    buffer: UnsafeBufferPointer(rebasing: buffer[(start + 25)..<end]), source: source,
                    range: (start + 25)..<end)
            else { return nil }
            sawMedia = true
            return PlaylistLine(bytes: source[start..<end], ending: ending, dateTime: date)
        }
        return nil
    }

    /// `#EXT-X-STREAM-INF:<attribute-list>`, one per variant of a multivariant playlist, read straight from the
    /// buffer: what ``parseTag(_:lineNumber:)`` does for this tag (counters, caps, the attribute list and its
    /// diagnostics, in the same order), without finding the tag by name or slicing the line for it. Nil when the
    /// line does not start with that name and a colon.
    mutating func streamInfLine(
        _ buffer: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ source: [UInt8],
        _ ending: LineEnding, _ lineNumber: Int
    ) throws(PlaylistError) -> PlaylistLine? {
        // "#EXT-X-S" and "TREAM-IN" as little-endian words, then "F:".
        guard let base = buffer.baseAddress, start >= 0, end <= buffer.count, end - start >= 18 else { return nil }
        let raw = UnsafeRawPointer(base + start)
        guard raw.loadUnaligned(as: UInt64.self) == 0x532D_582D_5458_4523,
            raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == 0x4E49_2D4D_4145_5254,
            base[start + 16] == 0x46, base[start + 17] == asciiColon
        else { return nil }
        sawMultivariant = true
        try checkMixed(lineNumber)
        variants += 1
        try variantAfterVariant(lineNumber)
        pendingVariantLine = lineNumber
        if variants > parser.limits.maxVariants {
            throw PlaylistError(
                .tooManyVariants, line: lineNumber, column: 1, "more than \(parser.limits.maxVariants) variants")
        }
        // The value: after the colon, trailing whitespace left out (it stays in the line's bytes).
        let valueStart = start + 18
        var valueEnd = end
        while valueEnd > valueStart, ASCII.isWhitespace(base[valueEnd - 1]) { valueEnd -= 1 }
        let list = try attributeList(source[valueStart..<valueEnd], lineNumber: lineNumber, column: 19)
        return PlaylistLine(bytes: source[start..<end], ending: ending, known: .streamInf, attributes: list)
    }

    /// Parses an attribute-list value that starts at `column`, reporting its problems (or throwing at the cap).
    mutating func attributeList(_ value: ArraySlice<UInt8>, lineNumber: Int, column: Int) throws(PlaylistError)
        -> AttributeList
    {
        let (list, problems) = AttributeList.parse(
            value, maxAttributes: parser.limits.maxAttributes, arena: &spanArena)
        for p in problems {
            if p.tooMany {
                throw PlaylistError(.tooManyAttributes, line: lineNumber, column: column + p.offset, p.message)
            }
            try report(.malformedAttributeList, line: lineNumber, column: column + p.offset, p.message)
        }
        return list
    }

    @inline(__always)
    mutating func checkMixed(_ lineNumber: Int) throws(PlaylistError) {
        if sawMedia && sawMultivariant && !reportedMixed { try reportMixed(lineNumber) }
    }

    @inline(never)
    mutating func reportMixed(_ lineNumber: Int) throws(PlaylistError) {
        reportedMixed = true
        try report(
            .mixedPlaylist, line: lineNumber, column: 1,
            "media segment tags and multivariant playlist tags in one playlist")
    }

    mutating func parseTag(_ bytes: ArraySlice<UInt8>, lineNumber: Int) throws(PlaylistError) -> Tag {
        let s = bytes.startIndex
        // The colon, eight bytes at a time (the buffer's indices are offsets from `s`).
        let colon = s + bytes.withUnsafeBufferPointer { ByteSearch.firstIndex(of: asciiColon, in: $0, from: 1) }
        let nameBytes = bytes[(s + 1)..<colon]
        var valueBytes: ArraySlice<UInt8>? = colon < bytes.endIndex ? bytes[(colon + 1)...] : nil
        // Trailing whitespace is tolerated (kept in the line's bytes, not in the value).
        if var v = valueBytes {
            while let l = v.last, ASCII.isWhitespace(l) { v = v.dropLast() }
            valueBytes = v
        }
        let valueColumn = colon + 2 - s
        let known: KnownTag?
        var trimmedName = nameBytes
        if valueBytes == nil {
            while let l = trimmedName.last, ASCII.isWhitespace(l) { trimmedName = trimmedName.dropLast() }
        }
        // Fast path for the most common tag.
        let n = trimmedName.startIndex
        if trimmedName.count == 6, trimmedName[n] == 0x45, trimmedName[n + 1] == 0x58, trimmedName[n + 2] == 0x54,
            trimmedName[n + 3] == 0x49, trimmedName[n + 4] == 0x4E, trimmedName[n + 5] == 0x46
        {
            known = .extinf
        } else {
            known = bytes.withUnsafeBufferPointer {
                KnownTag.lookup(in: $0, start: trimmedName.startIndex - s, count: trimmedName.count)
            }
        }
        if lineNumber == 1 && known != .extm3u {
            try report(.missingHeader, line: 1, column: 1, "the first line must be #EXTM3U")
        }
        guard let known else {
            let name = String(decoding: trimmedName, as: UTF8.self)
            if let valueBytes { return Tag(name: name, value: .text(String(decoding: valueBytes, as: UTF8.self))) }
            return Tag(name: name, value: .none)
        }
        switch known.scope {
        case .multivariant:
            sawMultivariant = true
            try checkMixed(lineNumber)
        case .mediaSegment, .mediaPlaylist:
            if known != .allowCache {
                sawMedia = true
                try checkMixed(lineNumber)
            }
        default: break
        }
        if known == .extinf {
            pendingSegmentLine = lineNumber
        } else if known == .streamInf {
            variants += 1
            try variantAfterVariant(lineNumber)
            pendingVariantLine = lineNumber
        } else if known == .iFrameStreamInf {
            variants += 1
        } else if known == .define {
            variables += 1
            guard variables <= parser.limits.maxVariables else {
                throw PlaylistError(
                    .tooManyVariables, line: lineNumber, column: 1,
                    "more than \(parser.limits.maxVariables) EXT-X-DEFINE tags")
            }
        }
        if variants > parser.limits.maxVariants {
            throw PlaylistError(
                .tooManyVariants, line: lineNumber, column: 1, "more than \(parser.limits.maxVariants) variants")
        }
        let value = try parseValue(known, valueBytes, lineNumber: lineNumber, column: valueColumn)
        return Tag(known, value)
    }

    func text(_ b: ArraySlice<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

    mutating func parseValue(_ known: KnownTag, _ value: ArraySlice<UInt8>?, lineNumber: Int, column: Int)
        throws(PlaylistError) -> TagValue
    {
        let shape = known.valueShape
        guard let value else {
            if shape == .none { return .none }
            if shape == .cueValue, let c = CueMarker(text: "") { return .cue(c) }
            try report(.malformedTag, line: lineNumber, column: column - 1, "#\(known.rawValue) needs a value")
            return .none
        }
        switch shape {
        case .none:
            if !value.isEmpty {
                try report(.malformedTag, line: lineNumber, column: column, "#\(known.rawValue) takes no value")
            }
            return .text(text(value))
        case .decimalInteger:
            if let v = Numbers.decimalInteger(value) { return .decimalInteger(v) }
            try report(
                .invalidValue, line: lineNumber, column: column,
                "#\(known.rawValue) value \"\(text(value))\" is not a decimal-integer")
            return .text(text(value))
        case .enumeratedString:
            if !value.isEmpty, !value.contains(where: { ASCII.isWhitespace($0) || $0 == asciiQuote }) {
                return .enumeratedString(text(value))
            }
            try report(.invalidValue, line: lineNumber, column: column, "#\(known.rawValue) value is not enumerated")
            return .text(text(value))
        case .extinf:
            var comma = value.startIndex
            while comma < value.endIndex && value[comma] != asciiComma { comma += 1 }
            let durationBytes = value[..<comma]
            guard let d = Numbers.decimalFloat(durationBytes, signed: false) else {
                try report(
                    .invalidValue, line: lineNumber, column: column,
                    "EXTINF duration \"\(text(durationBytes))\" is not a decimal number")
                return .text(text(value))
            }
            let hasComma = comma < value.endIndex
            let title = hasComma && comma + 1 < value.endIndex ? text(value[(comma + 1)...]) : ""
            return .extinf(ExtInf(duration: d, durationText: text(durationBytes), title: title, hasComma: hasComma))
        case .byteRange:
            if let b = ByteRangeSpec.parse(value) { return .byteRange(b) }
            try report(
                .invalidValue, line: lineNumber, column: column, "EXT-X-BYTERANGE value is not <n>[@<o>]")
            return .text(text(value))
        case .dateTime:
            if let d = DateTime(bytes: value) { return .dateTime(d) }
            let t = text(value)
            try report(.invalidValue, line: lineNumber, column: column, "\"\(t)\" is not an ISO 8601 date-time")
            return .text(t)
        case .attributeList:
            return .attributes(try attributeList(value, lineNumber: lineNumber, column: column))
        case .cueValue:
            if let c = CueMarker(text: text(value)) { return .cue(c) }
            try report(.invalidValue, line: lineNumber, column: column, "unrecognised #\(known.rawValue) value")
            return .text(text(value))
        case .text:
            return .text(text(value))
        }
    }

    /// An EXT-X-STREAM-INF while the one before still waits for its URI: that variant has none (RFC 8216bis
    /// 4.4.6.2), and would vanish without a word.
    @inline(__always)
    mutating func variantAfterVariant(_ lineNumber: Int) throws(PlaylistError) {
        guard pendingVariantLine != 0 else { return }
        try report(
            .truncatedVariant, line: pendingVariantLine, column: 1,
            "EXT-X-STREAM-INF is followed by another EXT-X-STREAM-INF (line \(lineNumber)) instead of its URI")
    }

    mutating func finish(lineCount: Int, lines: [PlaylistLine]) throws(PlaylistError) {
        if lineCount == 0 {
            try report(.missingHeader, line: 0, column: 0, "empty playlist")
        }
        if pendingSegmentLine != 0 {
            try report(
                .truncated, line: pendingSegmentLine, column: 1, "EXTINF is not followed by a media segment URI")
        }
        if pendingVariantLine != 0 {
            try report(
                .truncatedVariant, line: pendingVariantLine, column: 1, "EXT-X-STREAM-INF is not followed by a URI")
        }
    }
}

/// Whether the bytes are well-formed UTF-8 (overlong forms and surrogates refused): what
/// `String(validating:as:) != nil` says, without that initialiser, which needs macOS 15 / iOS 18.
func isWellFormedUTF8(_ bytes: some Sequence<UInt8>) -> Bool {
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue: continue
        case .emptyInput: return true
        case .error: return false
        }
    }
}
