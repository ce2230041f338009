import HLSAdFilter
import HLSPlaylist
import TextCodecs

/// The last live poll of a playlist: its input bytes, decisions and warnings, and the bytes served.
struct LastPoll {
    var url: String
    var input: [UInt8]
    var decisions: [SegmentDecision]
    var warnings: [String]
    var output: [UInt8]
    /// When the playlist was last filtered in full.
    var fullAt: Double
    /// Seconds the playlist may stay identical before a stall is reported.
    var stallAfter: Double
    /// Where the parts of a plain window are (nil: the next poll is filtered in full unless it repeats this one).
    var shape: WindowShape?

    /// The parser's default limits (a poll answered incrementally stays within them as a parsed one must).
    static let limits = PlaylistLimits()
}

/// The poll cache: a live poll answered from the previous one.
extension ProxyStream.State {
    /// A live poll answered from the previous one without parsing or filtering the window: the same bytes (the
    /// previous output), or the previous window moved on with plain content segments added (``WindowShape``), its
    /// events appended to `events`. Both for at most `rewriter.refreshEvery` seconds after the last poll filtered in
    /// full (so routes stay fresh). Nil: the poll needs filtering in full.
    mutating func quickPoll(
        _ bytes: [UInt8], url: String, now: Double, incremental: Bool, rewriter: PlaylistRewriter,
        events: inout [AdStrippingProxy.Event]
    ) -> [UInt8]? {
        guard var last = lastPoll, now - last.fullAt < rewriter.refreshEvery, last.url == url else { return nil }
        if ProxyURIs.same(last.input, bytes) {
            counts.repeated += 1
            if let e = watch(input: bytes, url: url, stallAfter: last.stallAfter, now: now) { events.append(e) }
            events.append(.poll(playlist: url, decisions: last.decisions, warnings: last.warnings))
            return last.output
        }
        guard incremental, let shape = last.shape, let advance = shape.advance(from: last.input, to: bytes),
            let tail = PlainSegments(
                Array(bytes[advance.tailStart...]), at: advance.tailStart, url: url, dated: shape.dated),
            shape.segmentEnds.count - advance.dropped + tail.segments.count <= LastPoll.limits.maxSegments,
            bytes.count <= LastPoll.limits.maxBytes, bytes.count / 2 + 1 <= LastPoll.limits.maxLines,
            cache.map({ $0.base == url && $0.variables == Variables() }) == true, var liveFilter = filter
        else { return nil }
        // Taken out of the state while they change (a copy left there would make every change copy them).
        var routeCache = cache ?? RouteCache(base: url)
        cache = nil
        filter = nil
        routes.prune(now: now, lifetime: rewriter.lifetime)
        let base = URIReference(url)
        var tailOutput: [UInt8] = []
        var tailOutputEnds: [Int] = []
        // The live filter's state moves on as filtering the window would have moved it.
        let windowCount = shape.segmentEnds.count - advance.dropped + tail.segments.count
        let decisions =
            Array(last.decisions[advance.dropped...])
            + liveFilter.advance(to: advance.firstSequence, windowCount: windowCount, adding: tail.media)
        filter = liveFilter
        for segment in tail.segments {
            for tag in segment.tags {
                tailOutput += tag.bytes
                ProxyURIs.appendEnding(tag.ending, to: &tailOutput)
            }
            rewriter.appendRoute(
                segment.uri, cache: &routeCache, routes: &routes, into: &tailOutput, base: base, now: now)
            ProxyURIs.appendEnding(segment.uri.ending, to: &tailOutput)
            tailOutputEnds.append(tailOutput.count)
        }
        routeCache.trim(now: now, lifetime: rewriter.lifetime)
        cache = routeCache
        let (output, next) = shape.output(
            previous: last.output, new: bytes, advance: advance, tailOutput: tailOutput,
            tailEnds: tail.segments.map(\.end), tailOutputEnds: tailOutputEnds)
        if let e = watch(input: bytes, url: url, stallAfter: last.stallAfter, now: now) { events.append(e) }
        // Filtering the window would have found nothing to warn about: every segment but the new ones was decided
        // before, and those are plain content.
        events.append(.poll(playlist: url, decisions: decisions, warnings: []))
        last.input = bytes
        last.output = output
        last.decisions = decisions
        last.warnings = []
        last.shape = next
        lastPoll = last
        counts.incremental += 1
        return output
    }
}

/// Where the parts of a plain live poll are, in the upstream bytes and in the bytes served, so that the next poll
/// can be answered from the previous output when the window has only moved on.
///
/// A window is plain when its header holds only tags that are copied as they are (EXTM3U, VERSION, TARGETDURATION,
/// MEDIA-SEQUENCE, DISCONTINUITY-SEQUENCE, INDEPENDENT-SEGMENTS, PLAYLIST-TYPE, ALLOW-CACHE, START) and each segment
/// only EXTINF, ad-marker tags, a PROGRAM-DATE-TIME (on every segment or on none) and its URI line; it ends with a
/// URI line and a line break, and its last segment is content. For such a window the cleaned output is the header
/// as it was, then for each segment its date and EXTINF lines and its route (or slate): what a segment becomes
/// depends on its own lines and its remembered decision, never on its neighbours (no keys, maps, discontinuities or
/// date ranges to carry over, no date to make up). When the next poll's bytes are this window with segments gone
/// from the front (its MEDIA-SEQUENCE moved on by as many) and plain content segments (`#EXTINF:<duration>,` with
/// no title, its date in a dated window, then a URI) added at the end, its output is the previous output with the
/// same segments gone, the new MEDIA-SEQUENCE, and the new segments' lines and routes appended.
struct WindowShape {
    /// The media sequence number of the first segment.
    var firstSequence: UInt64
    /// Upstream bytes: the MEDIA-SEQUENCE value's digits, where the first segment's lines start, and where each
    /// segment ends (past its URI line's line break).
    var sequenceDigits: Range<Int>
    var headerEnd: Int
    var segmentEnds: [Int]
    /// Served bytes: the same places.
    var outputSequenceDigits: Range<Int>
    var outputHeaderEnd: Int
    var outputSegmentEnds: [Int]
    /// Whether every segment has its own PROGRAM-DATE-TIME line (else none has one).
    var dated: Bool

    /// Header tags a plain window may hold (each copied to the output as it is).
    static let headerTags: Set<KnownTag> = [
        .extm3u, .version, .targetDuration, .mediaSequence, .discontinuitySequence, .independentSegments,
        .playlistType, .allowCache, .start,
    ]
    static let sequencePrefix = Array("#EXT-X-MEDIA-SEQUENCE:".utf8)

    /// The shape of a live poll that was filtered in full (`lines`: the parsed `input`; `segments`: its media
    /// segment count; `lastIsContent`: its last segment's decision), or nil when the window is not plain or the
    /// output is not laid out as the shape expects.
    static func make(
        input: [UInt8], lines: [PlaylistLine], mediaSequence: UInt64, segments: Int, lastIsContent: Bool,
        output: [UInt8]
    ) -> WindowShape? {
        guard lastIsContent, segments > 0, lines.last?.isURI == true, lines.last?.ending != LineEnding.none else {
            return nil
        }
        let spans = lineSpans(input)
        guard spans.count == lines.count else { return nil }
        var index = 0
        var sequenceLine: Int?
        while index < lines.count, let known = lines[index].knownTag, headerTags.contains(known) {
            if known == .mediaSequence { sequenceLine = index }
            index += 1
        }
        let headerLines = index
        guard let sequenceLine, index < lines.count,
            let digits = digits(in: input, line: spans[sequenceLine]),
            decimal(input, digits) == mediaSequence
        else { return nil }
        var ends: [Int] = []
        ends.reserveCapacity(segments)
        var datedSegments = 0
        var dates = 0
        while index < lines.count {
            if lines[index].isURI {
                guard !lines[index].bytes.starts(with: ProxyURIs.slateStem), dates <= 1 else { return nil }
                ends.append(spans[index].next)
                datedSegments += dates
                dates = 0
            } else {
                guard let known = lines[index].knownTag,
                    known == .extinf || known == .programDateTime || known.scope == .adMarker
                else { return nil }
                if known == .programDateTime { dates += 1 }
            }
            index += 1
        }
        // Dates on every segment or on none: the output then holds each segment's own date line as it was, and
        // none is made up for the first segment (which a window with only some dates would get).
        guard ends.count == segments, datedSegments == 0 || datedSegments == segments else { return nil }

        // The output: the same header lines, then segments each ending with its URI (route or slate) line.
        let outSpans = lineSpans(output)
        guard outSpans.count > headerLines else { return nil }
        for line in 0..<headerLines {
            guard
                ProxyURIs.same(
                    input, spans[line].start..<spans[line].next, output, outSpans[line].start..<outSpans[line].next)
            else { return nil }
        }
        let shift = outSpans[sequenceLine].start - spans[sequenceLine].start
        let outputDigits = (digits.lowerBound + shift)..<(digits.upperBound + shift)
        var outEnds: [Int] = []
        outEnds.reserveCapacity(segments)
        for line in outSpans[headerLines...] {
            guard line.end > line.start else { return nil }
            if output[line.start] != UInt8(ascii: "#") { outEnds.append(line.next) }
        }
        guard outEnds.count == segments, outEnds.last == output.count, ends.last == input.count else { return nil }
        return WindowShape(
            firstSequence: mediaSequence, sequenceDigits: digits, headerEnd: spans[headerLines].start,
            segmentEnds: ends, outputSequenceDigits: outputDigits, outputHeaderEnd: outSpans[headerLines].start,
            outputSegmentEnds: outEnds, dated: datedSegments > 0)
    }

    /// How a new poll relates to this window, when it is this window moved on.
    struct Advance {
        /// How many segments left the front.
        var dropped: Int
        var firstSequence: UInt64
        /// The new MEDIA-SEQUENCE digits and where the segments the windows share start, in the new bytes.
        var sequenceDigits: Range<Int>
        var headerEnd: Int
        /// Where the new segments start in the new bytes.
        var tailStart: Int
    }

    /// Whether `new` is `old` (this shape's bytes) with segments gone from the front, as many as its
    /// MEDIA-SEQUENCE moved on, and bytes (the new segments, not checked here) after the rest.
    func advance(from old: [UInt8], to new: [UInt8]) -> Advance? {
        let digitsStart = sequenceDigits.lowerBound
        guard new.count > digitsStart, ProxyURIs.same(old, 0..<digitsStart, new, 0..<digitsStart) else {
            return nil
        }
        var digitsEnd = digitsStart
        while digitsEnd < new.count, new[digitsEnd] >= 0x30, new[digitsEnd] <= 0x39 { digitsEnd += 1 }
        let newDigits = digitsStart..<digitsEnd
        guard let sequence = WindowShape.decimal(new, newDigits), sequence >= firstSequence else { return nil }
        // The rest of the header: byte for byte what it was.
        let rest = sequenceDigits.upperBound..<headerEnd
        let headerEnd = digitsEnd + rest.count
        guard new.count >= headerEnd, ProxyURIs.same(old, rest, new, digitsEnd..<headerEnd) else { return nil }
        let moved = sequence - firstSequence
        guard moved <= UInt64(segmentEnds.count) else { return nil }
        let dropped = Int(moved)
        let kept = (dropped == 0 ? self.headerEnd : segmentEnds[dropped - 1])..<old.count
        let tailStart = headerEnd + kept.count
        guard new.count >= tailStart, ProxyURIs.same(old, kept, new, headerEnd..<tailStart) else { return nil }
        return Advance(
            dropped: dropped, firstSequence: sequence, sequenceDigits: newDigits, headerEnd: headerEnd,
            tailStart: tailStart)
    }

    /// The output of a poll that moved on (`advance`), given the previous output and the new segments' output; the
    /// shape of the new poll comes back with it. `tailEnds`/`tailOutputEnds`: where each new segment ends, in the
    /// new bytes and in `tailOutput`.
    func output(
        previous: [UInt8], new: [UInt8], advance: Advance, tailOutput: [UInt8], tailEnds: [Int], tailOutputEnds: [Int]
    ) -> ([UInt8], WindowShape) {
        let keptOutput =
            (advance.dropped == 0 ? outputHeaderEnd : outputSegmentEnds[advance.dropped - 1])..<previous.count
        var out: [UInt8] = []
        let headerGrowth = advance.sequenceDigits.count - outputSequenceDigits.count
        out.reserveCapacity(outputHeaderEnd + headerGrowth + keptOutput.count + tailOutput.count)
        out += previous[0..<outputSequenceDigits.lowerBound]
        out += new[advance.sequenceDigits]
        out += previous[outputSequenceDigits.upperBound..<outputHeaderEnd]
        let newOutputHeaderEnd = out.count
        out += previous[keptOutput]
        let newTailOutputStart = out.count
        out += tailOutput

        let kept = (advance.dropped == 0 ? headerEnd : segmentEnds[advance.dropped - 1])
        var ends: [Int] = []
        ends.reserveCapacity(segmentEnds.count - advance.dropped + tailEnds.count)
        for end in segmentEnds[advance.dropped...] { ends.append(end - kept + advance.headerEnd) }
        ends += tailEnds
        var outEnds: [Int] = []
        outEnds.reserveCapacity(ends.count)
        for end in outputSegmentEnds[advance.dropped...] {
            outEnds.append(end - keptOutput.lowerBound + newOutputHeaderEnd)
        }
        for end in tailOutputEnds { outEnds.append(end + newTailOutputStart) }
        let shape = WindowShape(
            firstSequence: advance.firstSequence, sequenceDigits: advance.sequenceDigits, headerEnd: advance.headerEnd,
            segmentEnds: ends,
            outputSequenceDigits: outputSequenceDigits
                .lowerBound..<(outputSequenceDigits.lowerBound
                + advance.sequenceDigits.count),
            outputHeaderEnd: newOutputHeaderEnd, outputSegmentEnds: outEnds, dated: dated)
        return (out, shape)
    }

    // MARK: Bytes

    /// Each line: where it starts, where its text ends (before CR LF or LF), and where the next line starts.
    static func lineSpans(_ bytes: [UInt8]) -> [(start: Int, end: Int, next: Int)] {
        var spans: [(start: Int, end: Int, next: Int)] = []
        bytes.withUnsafeBufferPointer { buffer in
            var start = 0
            let count = buffer.count
            while start < count {
                let newline = ByteSearch.firstIndex(of: 0x0A, in: buffer, from: start)
                guard newline < count else {
                    spans.append((start, count, count))
                    break
                }
                let end = newline > start && buffer[newline - 1] == 0x0D ? newline - 1 : newline
                spans.append((start, end, newline + 1))
                start = newline + 1
            }
        }
        return spans
    }

    /// The digits of a `#EXT-X-MEDIA-SEQUENCE:<n>` line's value (the whole value, canonical: no sign, blanks or
    /// leading zero).
    static func digits(in bytes: [UInt8], line: (start: Int, end: Int, next: Int)) -> Range<Int>? {
        let start = line.start + sequencePrefix.count
        guard start < line.end, ProxyURIs.same(bytes, line.start..<start, sequencePrefix, 0..<sequencePrefix.count)
        else {
            return nil
        }
        let digits = start..<line.end
        guard decimal(bytes, digits) != nil else { return nil }
        return digits
    }

    /// A canonical decimal number (1 to 19 digits, no leading zero unless it is `0`).
    static func decimal(_ bytes: [UInt8], _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty, range.count <= 19, range.count == 1 || bytes[range.lowerBound] != 0x30 else {
            return nil
        }
        var value: UInt64 = 0
        for i in range {
            let b = bytes[i]
            guard b >= 0x30, b <= 0x39 else { return nil }
            value = value * 10 + UInt64(b - 0x30)
        }
        return value
    }
}

/// The segments added at the end of a window that moved on, when each is plain content: `#EXTINF:<duration>,` with
/// no title (and its PROGRAM-DATE-TIME in a dated window), then a URI line (not a `slate/` one) with a line break.
/// Parsed by the same parser as a whole window, so each line means what it would mean there.
struct PlainSegments {
    struct Segment {
        /// Its tag lines, in order: its EXTINF, and its PROGRAM-DATE-TIME in a dated window.
        var tags: [PlaylistLine]
        var uri: PlaylistLine
        /// Where the segment ends (past its URI line's line break) in the poll's bytes.
        var end: Int
    }
    var segments: [Segment] = []
    /// The segments as the media view of a whole window resolves them (URIs against the playlist's URL; media
    /// sequence numbers from 0).
    var media: [MediaSegment] = []

    /// `bytes`: the new segments' bytes, found at `offset` in the bytes of a poll of `url`; nil when any is not
    /// plain content. In a `dated` window each segment has exactly one PROGRAM-DATE-TIME line, elsewhere none.
    init?(_ bytes: [UInt8], at offset: Int, url: String, dated: Bool) {
        guard !bytes.isEmpty else { return }
        guard let playlist = try? Playlist(bytes: Array("#EXTM3U\n".utf8) + bytes) else { return nil }
        let spans = WindowShape.lineSpans(bytes)
        let lines = playlist.lines
        guard lines.count == spans.count + 1 else { return nil }
        var tags: [PlaylistLine] = []
        var extinfs = 0
        var dates = 0
        for i in 1..<lines.count {
            if lines[i].isURI {
                guard extinfs == 1, dates == (dated ? 1 : 0), !lines[i].bytes.starts(with: ProxyURIs.slateStem),
                    lines[i].ending != LineEnding.none
                else { return nil }
                segments.append(Segment(tags: tags, uri: lines[i], end: offset + spans[i - 1].next))
                tags = []
                extinfs = 0
                dates = 0
                continue
            }
            switch lines[i].knownTag {
            case .extinf:
                guard let extinf = lines[i].tag?.extinf, extinf.title.isEmpty else { return nil }
                extinfs += 1
            case .programDateTime:
                dates += 1
            default:
                return nil
            }
            tags.append(lines[i])
        }
        guard tags.isEmpty else { return nil }
        media = playlist.media(url: url).segments
        guard media.count == segments.count else { return nil }
    }
}
