public import HLSPlaylist

/// Removes ad breaks from VOD media playlists. Pure: playlists in, playlist and decisions out.
///
/// Ad segments go with every tag that belonged to them; EXT-X-KEY and EXT-X-MAP are re-emitted where the next kept
/// segment needs them (with an explicit IV when a shifted media sequence number would change the implicit one),
/// before its EXTINF, never between EXTINF and the URI; byte ranges are written with explicit offsets; EXT-X-DISCONTINUITY marks every join; EXT-X-PROGRAM-DATE-TIME is
/// re-stated after a join; ad and interstitial DATERANGEs are removed. A playlist that would become empty is left
/// as it is, with a warning.
public struct AdFilter: Sendable {
    public var options: AdFilterOptions

    public init(options: AdFilterOptions = AdFilterOptions()) { self.options = options }

    /// Decides every segment without changing the playlist (the explanation API).
    public func explain(_ playlist: Playlist, url: String? = nil) -> [SegmentDecision] {
        AdDetector(options: options).detect(playlist, media: playlist.media(url: url)).decisions
    }

    /// Cleans a VOD (or any non-live) playlist by removing its ad segments.
    public func cleanVOD(_ playlist: Playlist, url: String? = nil) -> AdFilterResult {
        cleanVOD(playlist, media: playlist.media(url: url))
    }

    /// Cleans a VOD playlist whose media view the caller already has (`playlist.media(url:)`).
    public func cleanVOD(_ playlist: Playlist, media: MediaPlaylist) -> AdFilterResult {
        let detection = AdDetector(options: options).detect(playlist, media: media)
        var warnings = detection.warnings
        let breaks = AdFilter.breaks(detection.decisions)
        guard detection.decisions.contains(where: { !$0.isAd }) else {
            if !media.segments.isEmpty {
                warnings.append("every segment is an ad; the playlist is left as it is")
            }
            return AdFilterResult(
                playlist: playlist, decisions: detection.decisions, breaks: breaks, slates: [], warnings: warnings)
        }
        var writer = CleanWriter(playlist: playlist, media: media, detection: detection, live: false)
        let out = writer.run(slateURI: { _ in "" })
        return AdFilterResult(
            playlist: out, decisions: detection.decisions, breaks: breaks, slates: [], warnings: warnings)
    }

    /// Groups consecutive ad decisions of the same break.
    static func breaks(_ decisions: [SegmentDecision]) -> [AdBreak] {
        var out: [AdBreak] = []
        for i in decisions.indices where decisions[i].isAd {
            let sequence = decisions[i].mediaSequence
            let id = decisions[i].breakID ?? "break-\(sequence)"
            if let last = out.indices.last, out[last].id == id, out[last].lastMediaSequence &+ 1 == sequence {
                out[last].lastMediaSequence = sequence
                out[last].duration += decisions[i].duration
            } else {
                out.append(
                    AdBreak(
                        id: id, rule: decisions[i].rule, firstMediaSequence: sequence, lastMediaSequence: sequence,
                        duration: decisions[i].duration))
            }
        }
        return out
    }
}

/// Writes the cleaned lines: shared by VOD removal and live slate substitution.
struct CleanWriter {
    let playlist: Playlist
    let media: MediaPlaylist
    let detection: AdDetector.Detection
    let live: Bool

    var out: [PlaylistLine] = []
    /// Keys in effect in the source (by KEYFORMAT) and in the output.
    var sourceKeys: [String: Tag] = [:]
    var outputKeys: [String: Tag] = [:]
    var sourceMap: Tag?
    /// The keys in effect where the source declared `sourceMap` (a key applies to the EXT-X-MAP after it).
    var sourceMapKeys: [String: Tag] = [:]
    var outputMap: Tag?
    /// Live fMP4: the media sequence numbers an EXT-X-DISCONTINUITY is put before, the slates' EXT-X-MAP, and how
    /// many inserted discontinuities have left the window (added to EXT-X-DISCONTINUITY-SEQUENCE).
    var insertedDiscontinuities: Set<UInt64> = []
    var slateMap: Tag?
    var discontinuityOffset: UInt64 = 0

    init(playlist: Playlist, media: MediaPlaylist, detection: AdDetector.Detection, live: Bool) {
        self.playlist = playlist
        self.media = media
        self.detection = detection
        self.live = live
    }

    static func keyFormat(_ tag: Tag) -> String { tag.attributes?.quotedString("KEYFORMAT") ?? "identity" }

    static func apply(_ tag: Tag, to keys: inout [String: Tag]) {
        if tag.attributes?["METHOD"]?.rawValue == "NONE" {
            keys = [:]
        } else {
            keys[keyFormat(tag)] = tag
        }
    }

    /// What a line is, for keeping or dropping it.
    enum Owner {
        case kept
        case removed
        case slate
    }

    func keepLine(_ line: PlaylistLine, index: Int, owner: Owner) -> Bool {
        // Blank lines, comments, URIs and unknown tags go with their segment; known tags by their scope. (By the
        // known tag, so the line's tag is not copied.)
        guard let known = line.knownTag else { return owner == .kept }
        switch known {
        case .part, .partInf, .preloadHint, .renditionReport, .skip: return false
        case .dateRange: return !detection.adDateRangeLines.contains(index)
        default: break
        }
        switch known.scope {
        case .basic, .either, .mediaPlaylist, .multivariant, .mediaMetadata: return true
        case .adMarker: return false
        case .mediaSegment:
            switch owner {
            case .kept: return true
            case .removed: return false
            case .slate:
                return known == .extinf || known == .programDateTime || known == .discontinuity
            }
        }
    }

    /// SERVER-CONTROL without blocking reload, part hold-back and delta updates (the proxy serves none of them).
    func serverControl(_ tag: Tag) -> PlaylistLine? {
        guard var a = tag.attributes else { return nil }
        for name in ["CAN-BLOCK-RELOAD", "PART-HOLD-BACK", "CAN-SKIP-UNTIL", "CAN-SKIP-DATERANGES"] {
            a.set(name, rawValue: nil)
        }
        if a.isEmpty { return nil }
        return PlaylistLine(tag: .attributes(.serverControl, a))
    }

    /// Emits KEY lines so the output's keys become `desired`.
    mutating func syncKeys(to desired: [String: Tag]) {
        guard outputKeys != desired else { return }
        let dropsAFormat = outputKeys.keys.contains { desired[$0] == nil }
        if dropsAFormat || desired.isEmpty {
            out.append(PlaylistLine(tag: .attributes(.key, [Attribute(name: "METHOD", rawValue: "NONE")])))
            outputKeys = [:]
        }
        for format in desired.keys.sorted() {
            guard let tag = desired[format], outputKeys[format] != tag else { continue }
            out.append(PlaylistLine(tag: tag))
            outputKeys[format] = tag
        }
    }

    /// The source keys for a segment, with an explicit IV where the implicit one (the media sequence number) would
    /// change because the segment's number in the output differs.
    func desiredKeys(sourceSequence: UInt64, outputSequence: UInt64) -> [String: Tag] {
        guard sourceSequence != outputSequence else { return sourceKeys }
        var keys = sourceKeys
        for (format, tag) in keys {
            guard var a = tag.attributes, a["IV"] == nil, let method = a["METHOD"]?.rawValue, method != "NONE"
            else { continue }
            var hex = String(sourceSequence, radix: 16, uppercase: true)
            hex = String(repeating: "0", count: max(0, 32 - hex.count)) + hex
            a.set("IV", rawValue: "0x" + hex)
            keys[format] = .attributes(.key, a)
        }
        return keys
    }

    mutating func run(slateURI: (UInt64) -> String) -> Playlist {
        let lines = playlist.lines
        let segments = media.segments
        out.reserveCapacity(lines.count + 8)
        var previousURILine = -1
        var keptBefore = false
        var pendingJoin = false
        var outputSequence = media.mediaSequence
        var firstKeptIndex: Int?
        var sequenceLine: Int?
        var discontinuitySequenceLine: Int?
        // The source's wall clock at each segment: its last PROGRAM-DATE-TIME plus the durations since (carried
        // across discontinuities, so a date can be re-stated after a removed run that held the only one).
        var clock: Double?
        for i in segments.indices {
            let sequence = segments[i].mediaSequence
            let uriLine = segments[i].lineRange.upperBound - 1
            let owner: Owner = detection.decisions[i].isAd ? (live ? .slate : .removed) : .kept
            let preambleStart = previousURILine + 1
            previousURILine = uriLine
            let joinHere =
                owner == .kept && pendingJoin && keptBefore && !segments[i].discontinuity
                || !insertedDiscontinuities.isEmpty && insertedDiscontinuities.contains(sequence)
            var ownDate = false
            var insertedJoin = false
            // Where lines the writer makes for this segment (a re-stated date, MAP, KEY) go: before its EXTINF (after
            // any KEY or MAP line the source put after it), so no tag is written between EXTINF and the URI.
            var headAt: Int?
            for index in preambleStart..<uriLine {
                let known = lines[index].knownTag
                switch known {
                case .key: if let tag = lines[index].tag { CleanWriter.apply(tag, to: &sourceKeys) }
                case .map:
                    sourceMap = lines[index].tag
                    sourceMapKeys = sourceKeys
                case .programDateTime: clock = lines[index].tag?.dateTime?.secondsSince1970
                default: break
                }
                guard keepLine(lines[index], index: index, owner: owner) else { continue }
                if joinHere, !insertedJoin, let known, known.scope == .mediaSegment {
                    out.append(PlaylistLine(tag: Tag(.discontinuity)))
                    insertedJoin = true
                }
                switch known {
                case .mediaSequence, .discontinuitySequence, .serverControl, .key, .map, .byteRange, .programDateTime:
                    break
                case .extinf:
                    if headAt == nil { headAt = out.count }
                    out.append(lines[index])
                    continue
                default:
                    // Nothing to look at: the line as it is.
                    out.append(lines[index])
                    continue
                }
                let line = lines[index]
                guard let tag = line.tag else {
                    out.append(line)
                    continue
                }
                switch tag.known {
                case .mediaSequence:
                    sequenceLine = out.count
                    out.append(line)
                case .discontinuitySequence:
                    discontinuitySequenceLine = out.count
                    out.append(line)
                case .serverControl:
                    if let l = serverControl(tag) { out.append(l) }
                case .key:
                    CleanWriter.apply(tag, to: &outputKeys)
                    out.append(line)
                    if headAt != nil { headAt = out.count }
                case .map:
                    outputMap = tag
                    out.append(line)
                    if headAt != nil { headAt = out.count }
                case .byteRange:
                    if let r = segments[i].byteRange, tag.byteRange?.offset == nil {
                        out.append(
                            PlaylistLine(
                                tag: Tag(.byteRange, .byteRange(ByteRangeSpec(length: r.length, offset: r.offset))))
                        )
                    } else {
                        out.append(line)
                    }
                case .programDateTime:
                    ownDate = true
                    out.append(line)
                default:
                    out.append(line)
                }
            }
            defer { clock = clock.map { $0 + segments[i].duration } }
            let made = out.count
            switch owner {
            case .kept:
                if joinHere, !insertedJoin { out.append(PlaylistLine(tag: Tag(.discontinuity))) }
                if pendingJoin || !keptBefore, !ownDate {
                    if let date = segments[i].programDateTime {
                        out.append(PlaylistLine(tag: Tag(.programDateTime, .dateTime(date))))
                    } else if let clock {
                        out.append(
                            PlaylistLine(tag: Tag(.programDateTime, .dateTime(DateTime(secondsSince1970: clock)))))
                    }
                }
                if let map = sourceMap, outputMap != map {
                    // Re-stated under the keys the source declared it under, not the ones in effect here.
                    if outputKeys != sourceMapKeys { syncKeys(to: sourceMapKeys) }
                    out.append(PlaylistLine(tag: map))
                    outputMap = map
                }
                if !sourceKeys.isEmpty || !outputKeys.isEmpty {
                    syncKeys(to: desiredKeys(sourceSequence: sequence, outputSequence: outputSequence))
                }
                moveMadeLines(from: made, to: headAt)
                out.append(lines[uriLine])
                if firstKeptIndex == nil { firstKeptIndex = i }
                keptBefore = true
                pendingJoin = false
                outputSequence &+= 1
            case .removed:
                pendingJoin = true
            case .slate:
                if joinHere, !insertedJoin { out.append(PlaylistLine(tag: Tag(.discontinuity))) }
                // The key scope closes before the slate's EXT-X-MAP: a key in effect there would apply to it.
                if !outputKeys.isEmpty { syncKeys(to: [:]) }
                if let slateMap, outputMap != slateMap {
                    out.append(PlaylistLine(tag: slateMap))
                    outputMap = slateMap
                }
                moveMadeLines(from: made, to: headAt)
                out.append(PlaylistLine(uri: slateURI(sequence), ending: lines[uriLine].ending))
                outputSequence &+= 1
            }
        }
        // Lines after the last segment.
        let tailStart = previousURILine + 1
        if tailStart < lines.count {
            for index in tailStart..<lines.count {
                let line = lines[index]
                guard keepLine(line, index: index, owner: .kept) else { continue }
                if let tag = line.tag, tag.known == .serverControl {
                    if let l = serverControl(tag) { out.append(l) }
                    continue
                }
                if let tag = line.tag, tag.known?.scope == .mediaSegment { continue }
                out.append(line)
            }
        }
        if live, discontinuityOffset > 0 {
            setDiscontinuitySequence(
                media.discontinuitySequence &+ discontinuityOffset, sequenceLine: sequenceLine,
                discontinuitySequenceLine: discontinuitySequenceLine)
        }
        if !live, let first = firstKeptIndex, first > 0 {
            fixSequenceNumbers(
                first: segments[first], sequenceLine: sequenceLine, discontinuitySequenceLine: discontinuitySequenceLine
            )
        }
        return Playlist(lines: out, hasByteOrderMark: playlist.hasByteOrderMark, diagnostics: [])
    }

    /// Moves the lines written from `made` on (those the writer made for a segment) to `position` (before the
    /// segment's EXTINF), keeping their order. Nothing to do when none were made or the segment has no EXTINF.
    mutating func moveMadeLines(from made: Int, to position: Int?) {
        guard let position, position < made, made < out.count else { return }
        let lines = out[made...]
        out.removeSubrange(made...)
        out.insert(contentsOf: lines, at: position)
    }

    /// VOD with a removed prefix: the discontinuity sequence becomes the first kept segment's (so every kept segment
    /// keeps its discontinuity sequence number).
    mutating func fixSequenceNumbers(first: MediaSegment, sequenceLine: Int?, discontinuitySequenceLine: Int?) {
        let value = first.discontinuitySequence &- (first.discontinuity ? 1 : 0)
        guard value != media.discontinuitySequence else { return }
        setDiscontinuitySequence(
            value, sequenceLine: sequenceLine, discontinuitySequenceLine: discontinuitySequenceLine)
    }

    /// Writes EXT-X-DISCONTINUITY-SEQUENCE (in place, or after EXT-X-MEDIA-SEQUENCE or EXT-X-TARGETDURATION).
    mutating func setDiscontinuitySequence(_ value: UInt64, sequenceLine: Int?, discontinuitySequenceLine: Int?) {
        let line = PlaylistLine(tag: Tag(.discontinuitySequence, .decimalInteger(value)))
        if let discontinuitySequenceLine {
            out[discontinuitySequenceLine] = line
        } else if let sequenceLine {
            out.insert(line, at: sequenceLine + 1)
        } else if let target = out.firstIndex(where: { $0.knownTag == .targetDuration }) {
            out.insert(line, at: target + 1)
        }
    }
}
