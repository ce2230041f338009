public import HLSPlaylist
import TextCodecs

/// Cleans successive polls of a live media playlist.
///
/// Each ad segment becomes a slate entry of the same duration at a URI keyed by its media sequence number
/// (`slate/<msn>.ts` by default), so media and discontinuity sequence numbers never change and no segment vanishes
/// from the middle of the window. Decisions are remembered by media sequence number, so a segment keeps its URI in
/// every later poll, and a break that began before the window (its CUE-OUT gone) goes on being recognised. The key
/// scope is closed (METHOD=NONE) over slates and re-opened after them; LL-HLS parts, preload hints and rendition
/// reports are removed and blocking reload is turned off.
///
/// fMP4 streams (EXT-X-MAP): a run of ad segments becomes fMP4 slates (`slate/<msn>.m4s`) declared with their own
/// initialization section (``slateMapURI``) between EXT-X-DISCONTINUITY tags, and the content's EXT-X-MAP is
/// re-declared after the run. The discontinuities it adds are remembered by media sequence number, and
/// EXT-X-DISCONTINUITY-SEQUENCE counts those that have left the window, so every segment keeps its discontinuity
/// sequence number from poll to poll.
public struct LiveAdFilter: Sendable {
    public var options: AdFilterOptions
    public var state: State
    /// The URI written for the slate of media sequence number `msn`.
    public var slateURI: @Sendable (UInt64) -> String = { "slate/\($0).ts" }
    /// The URI written for the fMP4 slate of media sequence number `msn`.
    public var fragmentedSlateURI: @Sendable (UInt64) -> String = { "slate/\($0).m4s" }
    /// The URI of the fMP4 slates' initialization section.
    public var slateMapURI = "slate/init.mp4"
    /// How many media sequence numbers behind the window decisions and slates are kept (so a slow client can still
    /// fetch a slate that just left the window).
    public var retention: UInt64 = 64

    /// What the filter remembers between polls.
    public struct State: Sendable, Hashable {
        public var decisions: [UInt64: RememberedDecision] = [:]
        public var slates: [UInt64: SlateSlot] = [:]
        /// The last content segment seen before the newest slate: (media sequence number, URI, duration).
        public var lastContent: ContentAnchor?
        /// fMP4: the initialization section (EXT-X-MAP URI) of ``lastContent``.
        public var lastContentMap: String?
        /// The first media sequence number of the last poll.
        public var lastFirstSequence: UInt64?
        /// fMP4: the media sequence numbers (in or just before the window) the filter put an EXT-X-DISCONTINUITY
        /// before.
        public var insertedDiscontinuities: Set<UInt64> = []
        /// fMP4: how many inserted discontinuities have left the window (added to the discontinuity sequence).
        public var discontinuitiesBefore: UInt64 = 0

        public init() {}
    }

    /// A content segment slates are placed after.
    public struct ContentAnchor: Sendable, Hashable {
        public var mediaSequence: UInt64
        public var uri: String
        public var duration: Double
        /// Its AES-128 key URI and IV, when it is encrypted that way.
        public var keyURI: String?
        public var iv: [UInt8]?
    }

    public init(options: AdFilterOptions = AdFilterOptions(), state: State = State()) {
        self.options = options
        self.state = state
    }

    /// A content segment as the anchor of the slates after it (with its AES-128 key and IV, when it has them).
    static func anchor(_ segment: MediaSegment) -> ContentAnchor {
        var anchor = ContentAnchor(mediaSequence: segment.mediaSequence, uri: segment.uri, duration: segment.duration)
        if let key = segment.keys.first(where: { $0.method == "AES-128" && $0.keyFormat == "identity" }),
            let keyURI = key.uri
        {
            anchor.keyURI = keyURI
            var iv = key.iv ?? []
            if iv.count != 16 {
                iv = [UInt8](repeating: 0, count: 8)
                for shift in stride(from: 56, through: 0, by: -8) {
                    iv.append(UInt8(truncatingIfNeeded: segment.mediaSequence >> UInt64(shift)))
                }
            }
            anchor.iv = iv
        }
        return anchor
    }

    /// The slate for a media sequence number (in the current window or recently left).
    public func slate(_ mediaSequence: UInt64) -> SlateSlot? { state.slates[mediaSequence] }

    /// Seconds from the start of a slate's break (its first slate, right after the anchor) to the slate's end: its
    /// offset from the anchor less the anchor's duration, which is the first slate's offset (or the last content
    /// segment's duration, when that is the anchor and the first slate was forgotten; the anchor is counted only
    /// when neither is known).
    func breakTime(_ slot: SlateSlot) -> Double {
        var anchorDuration = 0.0
        if let a = slot.anchorMediaSequence {
            if let first = state.slates[a &+ 1], first.anchorMediaSequence == a {
                anchorDuration = first.offsetFromAnchor
            } else if let content = state.lastContent, content.mediaSequence == a {
                anchorDuration = content.duration
            }
        }
        return max(0, slot.offsetFromAnchor - anchorDuration) + slot.duration
    }

    /// Cleans one poll and updates the state.
    public mutating func filter(_ playlist: Playlist, url: String? = nil) -> AdFilterResult {
        filter(playlist, media: playlist.media(url: url))
    }

    /// Cleans one poll whose media view the caller already has (`playlist.media(url:)`), and updates the state.
    public mutating func filter(_ playlist: Playlist, media: MediaPlaylist) -> AdFilterResult {
        var warnings: [String] = []
        if let last = state.lastFirstSequence, media.mediaSequence < last {
            warnings.append("media sequence went back from \(last) to \(media.mediaSequence); the state was reset")
            state = State()
        }
        let initial = media.mediaSequence > 0 ? state.decisions[media.mediaSequence &- 1]?.after : nil
        let detection = AdDetector(options: options).detect(
            playlist, media: media, live: !media.endList, initial: initial, remembered: state.decisions,
            slated: state.slates.mapValues { breakTime($0) }, lastContent: state.lastContent?.uri)
        warnings += detection.warnings
        let segments = media.segments
        let fragmented = segments.contains { $0.map != nil }
        // fMP4: a discontinuity where a run of slates starts and where content comes back (unless the origin has
        // one there already). Decided once per media sequence number; those that left the window are counted.
        if fragmented {
            for m in state.insertedDiscontinuities where m < media.mediaSequence {
                state.insertedDiscontinuities.remove(m)
                state.discontinuitiesBefore &+= 1
            }
            var previous: Bool? =
                media.mediaSequence > 0 ? state.decisions[media.mediaSequence &- 1]?.decision.isAd : nil
            for i in segments.indices {
                let isAd = detection.decisions[i].isAd
                if let previous {
                    if previous != isAd, !segments[i].discontinuity {
                        state.insertedDiscontinuities.insert(segments[i].mediaSequence)
                    } else {
                        state.insertedDiscontinuities.remove(segments[i].mediaSequence)
                    }
                }
                previous = isAd
            }
        }
        // Slates: each placed after the last content segment before it. Segments are read in place; the anchor is
        // made (its URI resolved) only for a new slate and once for the state, and decisions taken as they were
        // from the state are not stored again, so a sliding window does per-segment work only for what is new.
        var anchor = state.lastContent
        var anchorIndex: Int?
        var anchorMap = state.lastContentMap
        var offset = 0.0
        var slates: [SlateSlot] = []
        func currentAnchor() -> ContentAnchor? {
            if let index = anchorIndex {
                anchor = LiveAdFilter.anchor(segments[index])
                anchorIndex = nil
            }
            return anchor
        }
        for i in segments.indices {
            let sequence = segments[i].mediaSequence
            let duration = segments[i].duration
            if detection.decisions[i].isAd {
                if offset == 0 {
                    if let index = anchorIndex {
                        offset = segments[index].duration
                    } else if let anchor {
                        offset = anchor.duration
                    }
                }
                let slot: SlateSlot
                if let existing = state.slates[sequence] {
                    slot = existing
                } else {
                    let anchor = currentAnchor()
                    slot = SlateSlot(
                        mediaSequence: sequence, duration: duration, anchorURI: anchor?.uri,
                        anchorMediaSequence: anchor?.mediaSequence, offsetFromAnchor: offset,
                        isFragmentedMP4: fragmented, anchorMapURI: fragmented ? anchorMap : nil,
                        anchorKeyURI: anchor?.keyURI, anchorIV: anchor?.iv)
                    state.slates[sequence] = slot
                }
                slates.append(slot)
                offset = slot.offsetFromAnchor + duration
            } else {
                anchorIndex = i
                anchorMap = fragmented ? segments[i].map?.uri : nil
                offset = 0
            }
            if !detection.provisional[i], !(detection.known.count == segments.count && detection.known[i]) {
                let remembered = RememberedDecision(decision: detection.decisions[i], after: detection.after[i])
                if state.decisions[sequence] != remembered {
                    state.decisions[sequence] = remembered
                }
            }
        }
        anchor = currentAnchor()
        state.lastContent = anchor
        state.lastContentMap = anchorMap
        moveWindow(to: media.mediaSequence)

        var writer = CleanWriter(playlist: playlist, media: media, detection: detection, live: true)
        if fragmented {
            writer.insertedDiscontinuities = state.insertedDiscontinuities
            writer.discontinuityOffset = state.discontinuitiesBefore
            writer.slateMap = Tag.attributes(.map, [Attribute(name: "URI", rawValue: "\"\(slateMapURI)\"")])
        }
        let uri = fragmented ? fragmentedSlateURI : slateURI
        let out = writer.run(slateURI: uri)
        return AdFilterResult(
            playlist: out, decisions: detection.decisions, breaks: AdFilter.breaks(detection.decisions),
            slates: slates, warnings: warnings)
    }
}

extension LiveAdFilter {
    /// Updates the state as ``filter(_:media:)`` would for a poll whose window is the last poll's moved on to
    /// `mediaSequence` with `added` at its end, when that poll needs no filtering to be answered: the new segments
    /// are content (no marker lines, no discontinuity, no date, no key or map, no title) and so was the window's
    /// last segment, and nothing else in the window changed. Their decisions are remembered as content, the last
    /// of them becomes the slates' anchor, and numbers that fell behind the window are forgotten. Returns the new
    /// segments' decisions (with their media sequence numbers taken from `mediaSequence` on).
    public mutating func advance(to mediaSequence: UInt64, windowCount: Int, adding added: [MediaSegment])
        -> [SegmentDecision]
    {
        let detector = AdDetector(options: options)
        var decisions: [SegmentDecision] = []
        decisions.reserveCapacity(added.count)
        let first = mediaSequence &+ UInt64(windowCount &- added.count)
        for (n, segment) in added.enumerated() {
            var segment = segment
            segment.mediaSequence = first &+ UInt64(n)
            let decision = detector.content(segment)
            let remembered = RememberedDecision(decision: decision, after: nil)
            if state.decisions[segment.mediaSequence] != remembered {
                state.decisions[segment.mediaSequence] = remembered
            }
            decisions.append(decision)
            if n == added.count - 1 {
                state.lastContent = LiveAdFilter.anchor(segment)
                state.lastContentMap = nil
            }
        }
        moveWindow(to: mediaSequence)
        return decisions
    }

    /// Notes the first media sequence number of a poll and forgets decisions and slates that fell more than
    /// ``retention`` numbers behind it.
    mutating func moveWindow(to mediaSequence: UInt64) {
        let previousFloor = state.lastFirstSequence.map { $0 > retention ? $0 - retention : 0 }
        state.lastFirstSequence = mediaSequence
        let floor = mediaSequence > retention ? mediaSequence - retention : 0
        if let previousFloor, previousFloor <= floor, floor - previousFloor <= 4096 {
            // The window moved on by a few segments: forget just the numbers that fell behind.
            for m in previousFloor..<floor {
                state.decisions[m] = nil
                state.slates[m] = nil
            }
        } else {
            state.decisions = state.decisions.filter { $0.key >= floor }
            state.slates = state.slates.filter { $0.key >= floor }
        }
    }
}

// MARK: Persisting the state (a line-based text form, so a CLI can keep it between invocations)

extension LiveAdFilter.State {
    /// The state as text: one record per line, tab-separated fields; in text fields a backslash, tab, line feed or
    /// carriage return is escaped (`\\`, `\t`, `\n`, `\r`), so every URI and reason reads back as it was. A break ID
    /// is written after `=` (so an empty ID is not taken for none).
    public var serialized: String {
        var out = "TSPLAYER-ADFILTER-STATE 2\n"
        if let f = lastFirstSequence { out += "F\t\(f)\n" }
        if let c = lastContent {
            out += "C\t\(c.mediaSequence)\t\(c.duration)\t\(clean(c.uri))"
            if let k = c.keyURI, let iv = c.iv { out += "\t\(clean(k))\t\(LiveAdFilter.State.hex(iv))" }
            out += "\n"
        }
        if let m = lastContentMap { out += "M\t\(clean(m))\n" }
        if discontinuitiesBefore > 0 { out += "B\t\(discontinuitiesBefore)\n" }
        for m in insertedDiscontinuities.sorted() { out += "I\t\(m)\n" }
        for key in decisions.keys.sorted() {
            guard let r = decisions[key] else { continue }
            let d = r.decision
            out +=
                "D\t\(d.mediaSequence)\t\(d.isAd ? 1 : 0)\t\(d.duration)\t\(d.rule.id)\t\(d.breakID.map { "=" + clean($0) } ?? "")\t"
                + "\(clean(d.uri))\t\(clean(d.reason))\n"
            if let a = r.after {
                out +=
                    "A\t\(d.mediaSequence)\t\(clean(a.id))\t\(a.rule.id)\t\(a.remaining.map { "\($0)" } ?? "-")\t"
                    + "\(a.elapsed)\t\(clean(a.reason))\n"
            }
        }
        for key in slates.keys.sorted() {
            guard let s = slates[key] else { continue }
            out +=
                "S\t\(s.mediaSequence)\t\(s.duration)\t\(s.anchorMediaSequence.map { "\($0)" } ?? "-")\t"
                + "\(s.offsetFromAnchor)\t\(s.isFragmentedMP4 ? 1 : 0)\t\(clean(s.anchorURI ?? ""))\t"
                + "\(clean(s.anchorMapURI ?? ""))\t\(clean(s.anchorKeyURI ?? ""))\t"
                + "\(s.anchorIV.map(LiveAdFilter.State.hex) ?? "")\n"
        }
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    static func bytes(hex text: String) -> [UInt8]? {
        guard text.utf8.count % 2 == 0, text.utf8.count <= 64 else { return nil }
        return Hex.decode(text.utf8)
    }

    private func clean(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// The text `clean` escaped; version 1 files (which replaced those characters with spaces) are read as they are.
    private static func unescaped(_ s: String, version: Int) -> String {
        guard version >= 2, s.contains("\\") else { return s }
        var out = ""
        var escaping = false
        for c in s.unicodeScalars {
            if escaping {
                switch c {
                case "t": out += "\t"
                case "n": out += "\n"
                case "r": out += "\r"
                default: out.unicodeScalars.append(c)
                }
                escaping = false
            } else if c == "\\" {
                escaping = true
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Reads a state written by ``serialized``; nil when the text is not one.
    public init?(serialized text: String) {
        self.init()
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)[...]
        let version: Int
        switch lines.first {
        case "TSPLAYER-ADFILTER-STATE 1": version = 1
        case "TSPLAYER-ADFILTER-STATE 2": version = 2
        default: return nil
        }
        lines = lines.dropFirst()
        func decoded(_ field: String) -> String { Self.unescaped(field, version: version) }
        var afters: [UInt64: OpenBreak] = [:]
        for line in lines {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard let kind = f.first else { continue }
            switch kind {
            case "F":
                guard f.count == 2, let v = UInt64(f[1]) else { return nil }
                lastFirstSequence = v
            case "C":
                guard f.count == 4 || f.count == 6, let m = UInt64(f[1]), let d = Double(f[2]) else { return nil }
                lastContent = LiveAdFilter.ContentAnchor(mediaSequence: m, uri: decoded(f[3]), duration: d)
                if f.count == 6 {
                    lastContent?.keyURI = decoded(f[4])
                    lastContent?.iv = LiveAdFilter.State.bytes(hex: f[5])
                }
            case "D":
                guard f.count == 8, let m = UInt64(f[1]), let d = Double(f[3]), let rule = AdRule(id: f[4]) else {
                    return nil
                }
                let decision = SegmentDecision(
                    mediaSequence: m, uri: decoded(f[6]), duration: d, isAd: f[2] == "1", reason: decoded(f[7]),
                    rule: rule,
                    breakID: f[5].isEmpty ? nil : version >= 2 ? decoded(String(f[5].dropFirst())) : f[5])
                decisions[m] = RememberedDecision(decision: decision, after: nil)
            case "A":
                guard f.count == 7, let m = UInt64(f[1]), let rule = AdRule(id: f[3]), let elapsed = Double(f[5])
                else { return nil }
                afters[m] = OpenBreak(
                    id: decoded(f[2]), rule: rule, reason: decoded(f[6]), remaining: Double(f[4]), elapsed: elapsed)
            case "M":
                guard f.count == 2 else { return nil }
                lastContentMap = decoded(f[1])
            case "B":
                guard f.count == 2, let v = UInt64(f[1]) else { return nil }
                discontinuitiesBefore = v
            case "I":
                guard f.count == 2, let v = UInt64(f[1]) else { return nil }
                insertedDiscontinuities.insert(v)
            case "S":
                guard f.count == 7 || f.count == 8 || f.count == 10, let m = UInt64(f[1]), let d = Double(f[2]),
                    let o = Double(f[4])
                else {
                    return nil
                }
                let map = f.count >= 8 && !f[7].isEmpty ? decoded(f[7]) : nil
                let keyURI = f.count == 10 && !f[8].isEmpty ? decoded(f[8]) : nil
                let iv = f.count == 10 && !f[9].isEmpty ? LiveAdFilter.State.bytes(hex: f[9]) : nil
                slates[m] = SlateSlot(
                    mediaSequence: m, duration: d, anchorURI: f[6].isEmpty ? nil : decoded(f[6]),
                    anchorMediaSequence: UInt64(f[3]),
                    offsetFromAnchor: o, isFragmentedMP4: f[5] == "1", anchorMapURI: map, anchorKeyURI: keyURI,
                    anchorIV: iv)
            default:
                return nil
            }
        }
        for (m, a) in afters { decisions[m]?.after = a }
    }
}
