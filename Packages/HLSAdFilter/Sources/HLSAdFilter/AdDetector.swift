// Long file: every detection pass (markers, date ranges, titles, origin and path changes) reads one Detection.
public import HLSPlaylist

/// A break that is open after a segment: what opened it and how much of it is left.
public struct OpenBreak: Sendable, Hashable {
    public var id: String
    public var rule: AdRule
    public var reason: String
    /// Seconds left in the break, when its duration is known.
    public var remaining: Double?
    /// Seconds of the break seen so far.
    public var elapsed: Double
}

/// What an earlier poll decided about a segment (live), and the break state after it.
public struct RememberedDecision: Sendable, Hashable {
    public var decision: SegmentDecision
    public var after: OpenBreak?
}

/// Finds ad breaks in a media playlist and decides every segment. Pure: no I/O.
public struct AdDetector: Sendable {
    public var options: AdFilterOptions

    public init(options: AdFilterOptions = AdFilterOptions()) { self.options = options }

    /// The result of a detection pass.
    public struct Detection: Sendable {
        public var decisions: [SegmentDecision]
        /// The break state after each segment (parallel to ``decisions``).
        public var after: [OpenBreak?]
        /// Whether each decision may still change (a live-edge run whose end is not in the window yet).
        public var provisional: [Bool]
        public var warnings: [String]
        /// Whether the playlist carries any ad markers (tags or SCTE-35/ad DATERANGEs).
        public var hasMarkers: Bool
        /// Line indices of EXT-X-DATERANGE tags that describe ads or interstitials (removed from the output).
        public var adDateRangeLines: Set<Int>
        /// Whether each decision was taken as it was from `remembered` (parallel to ``decisions``).
        var known: [Bool] = []
    }

    /// Decides every segment of `playlist`.
    /// - Parameters:
    ///   - media: the resolved view (`playlist.media(url:)`).
    ///   - live: whether the playlist is a live window (its last run may still be growing).
    ///   - initial: the break open before the first segment (from the previous poll).
    ///   - remembered: decisions of earlier polls, by media sequence number; they are kept as they were.
    ///   - slated: media sequence numbers earlier polls published as ads while still provisional (a break at the
    ///     live edge), each with the seconds from its break's start (its first slate) to its own end: a break
    ///     without markers that reaches back to the window's start continues one of these, and has lasted that long
    ///     before the window, less the segment's own duration.
    ///   - lastContent: the URI of the last segment earlier polls decided was content: where content comes from
    ///     when `remembered` (kept for a bounded number of segments) holds no content decision any more, as in a pod
    ///     or failover that outlasts it.
    public func detect(
        _ playlist: Playlist, media: MediaPlaylist, live: Bool = false, initial: OpenBreak? = nil,
        remembered: [UInt64: RememberedDecision] = [:], slated: [UInt64: Double] = [:], lastContent: String? = nil
    ) -> Detection {
        let segments = media.segments
        var decisions: [SegmentDecision] = []
        decisions.reserveCapacity(segments.count)
        var after: [OpenBreak?] = []
        after.reserveCapacity(segments.count)
        var known = [Bool](repeating: false, count: segments.count)
        var warnings: [String] = []
        var hasMarkers = false
        var open = initial
        var previousURILine = -1

        // Segments and lines are read in place (never copied whole): a live poll of a long window decides only its
        // new segments and skips every line that is not an ad marker.
        for i in segments.indices {
            let uriLine = segments[i].lineRange.upperBound - 1
            let preambleStart = previousURILine + 1
            previousURILine = uriLine
            let sequence = segments[i].mediaSequence
            let memory = remembered.isEmpty ? nil : remembered[sequence]
            var startedHere = false
            func start(_ id: String, _ rule: AdRule, _ reason: String, _ duration: Double?) {
                if startedHere, var current = open {
                    // A second marker for the same break (e.g. OATCLS beside CUE-OUT): only fill in the duration.
                    if current.remaining == nil, let duration { current.remaining = duration }
                    open = current
                    return
                }
                startedHere = true
                open = OpenBreak(id: id, rule: rule, reason: reason, remaining: duration, elapsed: 0)
            }
            if preambleStart < uriLine {
                for lineIndex in preambleStart..<uriLine {
                    guard let k = playlist.lines[lineIndex].knownTag, k.scope == .adMarker else { continue }
                    if memory != nil, k != .cue {
                        // Decided in an earlier poll: only whether the playlist has markers matters here (EXT-X-CUE
                        // counts only with a splice TYPE, so it is read below).
                        if k != .asset { hasMarkers = true }
                        continue
                    }
                    guard let tag = playlist.lines[lineIndex].tag else { continue }
                    switch k {
                    case .cueOut:
                        hasMarkers = true
                        var duration = tag.cue?.duration
                        if duration == nil, let payload = tag.attributes?["SCTE35"]?.text,
                            case .adStart(let d)? = SCTE35Cue(text: payload)?.signal
                        {
                            duration = d
                        }
                        let text = duration.map { " with a duration of \(format($0)) s" } ?? ""
                        start("cue-out-\(sequence)", .cueOut, "EXT-X-CUE-OUT\(text) opens a break", duration)
                    case .cueOutCont:
                        hasMarkers = true
                        let cue = tag.cue
                        var remaining: Double?
                        if let d = cue?.duration, let e = cue?.elapsed { remaining = max(0, d - e) }
                        if open == nil {
                            start(
                                "cue-out-cont-\(sequence)", .cueOutCont,
                                "EXT-X-CUE-OUT-CONT: the window starts inside a break", remaining ?? cue?.duration)
                        } else if let remaining {
                            open?.remaining = remaining
                        }
                    case .cueIn:
                        hasMarkers = true
                        open = nil
                    case .cue:
                        let a = tag.attributes
                        let type = a?["TYPE"]?.text.lowercased()
                        if type == "spliceout" {
                            hasMarkers = true
                            let d = a?["DURATION"].flatMap { Double($0.text) }
                            let id = a?["ID"]?.text ?? "cue-\(sequence)"
                            start(id, .adobeCue, "EXT-X-CUE TYPE=SpliceOut opens a break", d)
                        } else if type == "splicein" {
                            hasMarkers = true
                            open = nil
                        }
                    case .oatclsSCTE35:
                        hasMarkers = true
                        guard let text = tag.valueText, let cue = SCTE35Cue(text: text) else { break }
                        switch cue.signal {
                        case .adStart(let d):
                            start(
                                "oatcls-\(sequence)", .oatcls, "EXT-OATCLS-SCTE35 carries an out-of-network splice", d)
                        case .adEnd: open = nil
                        case .none: break
                        }
                    case .asset:
                        if startedHere, let caid = tag.attributes?["CAID"]?.text {
                            open?.reason += " (EXT-X-ASSET CAID=\(caid))"
                        }
                    case .scte35:
                        hasMarkers = true
                        let a = tag.attributes
                        let cueOut = a?["CUE-OUT"]?.text.uppercased()
                        let id = a?["ID"]?.text ?? "scte35-\(sequence)"
                        var signal = SCTE35Cue.Signal.none
                        if let payload = a?["CUE"]?.text, let cue = SCTE35Cue(text: payload) { signal = cue.signal }
                        if a?["CUE-IN"]?.text.uppercased() == "YES" {
                            open = nil
                        } else if cueOut == "YES" {
                            var d = a?["DURATION"].flatMap { Double($0.text) }
                            if d == nil, case .adStart(let pd) = signal { d = pd }
                            start(id, .scte35Tag, "EXT-X-SCTE35 CUE-OUT=YES opens a break", d)
                        } else if cueOut == "CONT" {
                            if open == nil {
                                start(
                                    id, .scte35Tag, "EXT-X-SCTE35 CUE-OUT=CONT: the window starts inside a break", nil)
                            }
                        } else if case .adStart(let d) = signal {
                            start(id, .scte35Tag, "EXT-X-SCTE35 carries an advertisement start", d)
                        } else if case .adEnd = signal {
                            open = nil
                        }
                    case .splicePointSCTE35:
                        hasMarkers = true
                        guard let text = tag.valueText, let cue = SCTE35Cue(text: text) else { break }
                        switch cue.signal {
                        case .adStart(let d):
                            start(
                                "splicepoint-\(sequence)", .splicePoint,
                                "EXT-X-SPLICEPOINT-SCTE35 carries an advertisement start", d)
                        case .adEnd: open = nil
                        case .none: break
                        }
                    default: break
                    }
                }
            }
            if let memory {
                decisions.append(memory.decision)
                after.append(memory.after)
                known[i] = true
                open = memory.after
                continue
            }
            let duration = segments[i].duration
            if var current = open {
                decisions.append(
                    SegmentDecision(
                        mediaSequence: sequence, uri: segments[i].uri, duration: duration, isAd: true,
                        reason: current.reason, rule: current.rule, breakID: current.id))
                current.elapsed += duration
                if let r = current.remaining {
                    current.remaining = r - duration
                }
                if let r = current.remaining, r < 0.25 {
                    open = nil
                } else if current.remaining == nil, current.elapsed >= options.maximumBreakDuration {
                    warnings.append(
                        "break \(current.id) has no end marker; it was closed after \(format(current.elapsed)) s")
                    open = nil
                } else {
                    open = current
                }
            } else {
                decisions.append(content(segments[i]))
            }
            after.append(open)
        }
        if let open, open.remaining == nil, !live {
            warnings.append("break \(open.id) is still open at the end of the playlist")
        }

        var detection = Detection(
            decisions: decisions, after: after, provisional: [Bool](repeating: false, count: segments.count),
            warnings: warnings, hasMarkers: hasMarkers, adDateRangeLines: [], known: known)
        dateRanges(playlist, media, known: known, into: &detection)
        twitchTitles(media, known: known, into: &detection)
        if options.detectOriginChange {
            serverSideInsertion(
                media, live: live, known: known, remembered: remembered, slated: slated, lastContent: lastContent,
                into: &detection)
        }
        if options.durationHeuristics, !detection.hasMarkers {
            durationHeuristic(media, known: known, into: &detection)
        }
        return detection
    }

    func content(_ segment: MediaSegment) -> SegmentDecision {
        SegmentDecision(
            mediaSequence: segment.mediaSequence, uri: segment.uri, duration: segment.duration, isAd: false,
            reason: "content", rule: .content, breakID: nil)
    }

    func mark(
        _ detection: inout Detection, _ index: Int, _ segment: MediaSegment, rule: AdRule, reason: String, id: String
    ) {
        guard index < detection.decisions.count, !detection.decisions[index].isAd else { return }
        detection.decisions[index] = SegmentDecision(
            mediaSequence: segment.mediaSequence, uri: segment.uri, duration: segment.duration, isAd: true,
            reason: reason, rule: rule, breakID: id)
    }

    // MARK: EXT-X-DATERANGE

    /// An ad interval on one timeline (program date time, or the playlist's own running time when there is none).
    struct Interval {
        var id: String
        var start: Double
        var end: Double?
        var rule: AdRule
        var reason: String
    }

    func dateRanges(_ playlist: Playlist, _ media: MediaPlaylist, known: [Bool], into detection: inout Detection) {
        guard !media.dateRanges.isEmpty else { return }
        let segments = media.segments
        // Each segment's start on the timeline the date ranges use.
        let usesDates = segments.contains { $0.programDateTime != nil }
        var starts: [Double?] = []
        var running = 0.0
        for s in segments {
            starts.append(usesDates ? s.programDateTime?.secondsSince1970 : running)
            running += s.duration
        }
        // Without dates, a range starts where its tag sits: at the next segment's running time.
        func position(_ range: DateRange) -> Double? {
            if usesDates { return range.startDate?.secondsSince1970 }
            if let next = segments.firstIndex(where: { $0.lineRange.upperBound - 1 > range.lineIndex }) {
                return starts[next]
            }
            return running
        }
        var intervals: [Interval] = []
        var endsByID: [String: Double] = [:]
        var anonymousEnds: [Double] = []
        for range in media.dateRanges {
            let cls = range.classAttribute ?? ""
            if cls == "com.apple.hls.interstitial" {
                detection.adDateRangeLines.insert(range.lineIndex)
                continue
            }
            guard let begin = position(range) else { continue }
            var length = range.duration ?? range.plannedDuration
            if length == nil, let end = range.endDate, let s = range.startDate {
                length = end.secondsSince1970 - s.secondsSince1970
            }
            if cls == "twitch-stitched-ad" || range.id.hasPrefix("stitched-ad-") {
                detection.hasMarkers = true
                detection.adDateRangeLines.insert(range.lineIndex)
                intervals.append(
                    Interval(
                        id: range.id, start: begin, end: length.map { begin + $0 }, rule: .twitchDateRange,
                        reason: "inside the Twitch stitched-ad DATERANGE \(range.id)"))
                continue
            }
            if let why = Self.adDescription(range) {
                detection.hasMarkers = true
                detection.adDateRangeLines.insert(range.lineIndex)
                if let length {
                    intervals.append(
                        Interval(
                            id: range.id, start: begin, end: begin + length, rule: .adDateRange,
                            reason: "inside the EXT-X-DATERANGE \(range.id) (\(why))"))
                }
                continue
            }
            var signal = SCTE35Cue.Signal.none
            var source = ""
            if let out = range.scte35Out {
                source = "SCTE35-OUT"
                signal = SCTE35Cue(bytes: out)?.signal ?? .adStart(duration: nil)
                if case .none = signal { signal = .adStart(duration: nil) }
            } else if let command = range.scte35Command {
                source = "SCTE35-CMD"
                signal = SCTE35Cue(bytes: command)?.signal ?? .none
            } else if range.scte35In != nil {
                source = "SCTE35-IN"
                signal = .adEnd
            }
            switch signal {
            case .adStart(let payloadDuration):
                detection.hasMarkers = true
                detection.adDateRangeLines.insert(range.lineIndex)
                let d = length ?? payloadDuration
                intervals.append(
                    Interval(
                        id: range.id, start: begin, end: d.map { begin + $0 }, rule: .dateRangeSCTE35,
                        reason: "inside the EXT-X-DATERANGE \(range.id) with \(source)"))
            case .adEnd:
                detection.hasMarkers = true
                detection.adDateRangeLines.insert(range.lineIndex)
                if range.scte35Out == nil, range.scte35Command == nil {
                    endsByID[range.id] = begin
                } else {
                    anonymousEnds.append(begin)
                }
            case .none:
                break
            }
        }
        guard !intervals.isEmpty else { return }
        // Close open intervals by their ID's SCTE35-IN, by a later end command, or by the maximum.
        for i in intervals.indices where intervals[i].end == nil {
            if let end = endsByID[intervals[i].id] {
                intervals[i].end = end
            } else if let end = anonymousEnds.filter({ $0 > intervals[i].start }).min() {
                intervals[i].end = end
            } else {
                intervals[i].end = intervals[i].start + options.maximumBreakDuration
            }
        }
        for (index, segment) in segments.enumerated() where !known[index] {
            guard let t = starts[index] else { continue }
            for interval in intervals {
                let end = interval.end ?? interval.start
                if t >= interval.start - 0.05, t < end - 0.05 {
                    mark(&detection, index, segment, rule: interval.rule, reason: interval.reason, id: interval.id)
                    break
                }
            }
        }
    }

    /// Why `range` describes an ad by itself (not through SCTE-35), or nil: the ad creative signaling attribute, which
    /// ad stitchers write on one date range per stitched ad.
    static func adDescription(_ range: DateRange) -> String? {
        range.attributes["X-AD-CREATIVE-SIGNALING"] != nil ? "X-AD-CREATIVE-SIGNALING" : nil
    }

    // MARK: Twitch titles

    func twitchTitles(_ media: MediaPlaylist, known: [Bool], into detection: inout Detection) {
        guard media.segments.contains(where: { $0.title == "live" }) else { return }
        for index in media.segments.indices where !known[index] {
            let title = media.segments[index].title
            if !title.isEmpty, title != "live" {
                detection.hasMarkers = true
                mark(
                    &detection, index, media.segments[index], rule: .twitchTitle,
                    reason: "EXTINF title \"\(title)\" marks a stitched ad (content is titled \"live\")",
                    id: "stitched-\(media.segments[index].mediaSequence)")
            }
        }
    }

    // MARK: Server-side insertion without markers

    struct Run {
        var range: Range<Int>
        var hosts: Set<String>
        var adHost: AdHostPattern?
        var duration: Double
    }

    func runs(_ media: MediaPlaylist) -> [Run] {
        var runs: [Run] = []
        // Host and host-pattern results per authority (most segments share a few), paths only when a pattern
        // looks at path components.
        var byAuthority: [Substring: (host: String, pattern: AdHostPattern?)] = [:]
        let pathPatterns = options.adHosts.filter(\.needsPath)
        for (index, segment) in media.segments.enumerated() {
            let (authority, path) = AdDetector.authorityAndPath(segment.uri)
            let hostInfo: (host: String, pattern: AdHostPattern?)
            if let cached = byAuthority[authority] {
                hostInfo = cached
            } else {
                let host = hostName(authority).lowercased()
                hostInfo = (host, options.adHosts.first { !$0.needsPath && $0.matches(host: host, path: "") })
                byAuthority[authority] = hostInfo
            }
            var pattern = hostInfo.pattern
            if pattern == nil, !pathPatterns.isEmpty {
                pattern = pathPatterns.first { $0.matches(host: hostInfo.host, path: String(path)) }
            }
            let host = String(authority).lowercased()
            if segment.discontinuity || runs.isEmpty {
                runs.append(Run(range: index..<(index + 1), hosts: [host], adHost: pattern, duration: segment.duration))
            } else if var last = runs.popLast() {
                last.range = last.range.lowerBound..<(index + 1)
                last.hosts.insert(host)
                if pattern == nil { last.adHost = nil }
                last.duration += segment.duration
                runs.append(last)
            }
        }
        return runs
    }

    /// The authority and path of an absolute URI, by bytes.
    static func authorityAndPath(_ uri: String) -> (Substring, Substring) {
        let u = uri.utf8
        guard let schemeEnd = uri.firstRange(of: "://") else { return ("", Substring(uri)) }
        let rest = uri[schemeEnd.upperBound...]
        let end = rest.utf8.firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? u.endIndex
        let authority = rest[..<end]
        let afterAuthority = rest[end...]
        let pathEnd = afterAuthority.utf8.firstIndex { $0 == 0x3F || $0 == 0x23 } ?? u.endIndex
        return (authority, afterAuthority[..<pathEnd])
    }

    func hostName(_ authority: Substring) -> String {
        var a = authority
        if let at = a.utf8.lastIndex(of: 0x40) { a = a[a.utf8.index(after: at)...] }
        if a.utf8.first == 0x5B { return String(a) }
        if let colon = a.utf8.lastIndex(of: 0x3A) { a = a[..<colon] }
        return String(a)
    }

    func serverSideInsertion(
        _ media: MediaPlaylist, live: Bool, known: [Bool], remembered: [UInt64: RememberedDecision] = [:],
        slated: [UInt64: Double] = [:], lastContent: String? = nil, into detection: inout Detection
    ) {
        // Runs are bounded by discontinuities: without one there is nothing to find, unless the window starts
        // inside a pod an earlier poll slated at its live edge (one longer than the window, or a failover that
        // stays), which is judged again with the time it lasted before the window.
        let continuesSlates = live && media.segments.first.map { slated[$0.mediaSequence] != nil } == true
        guard continuesSlates || media.segments.contains(where: { $0.discontinuity }) else { return }
        let runs = runs(media)
        guard runs.count > 1 || continuesSlates else { return }
        // The content's origin: where the segments earlier polls decided were content came from (a live window
        // deep in a break may hold more ad time than content), or the last of them once those decisions are
        // forgotten, else the host with the most time in this playlist.
        var hostDurations: [String: Double] = [:]
        for remembered in remembered.values where !remembered.decision.isAd {
            let host = String(AdDetector.authorityAndPath(remembered.decision.uri).0).lowercased()
            hostDurations[host, default: 0] += remembered.decision.duration
        }
        if hostDurations.isEmpty, live, let lastContent {
            hostDurations[String(AdDetector.authorityAndPath(lastContent).0).lowercased()] = 1
        }
        if hostDurations.isEmpty {
            for run in runs { for h in run.hosts { hostDurations[h, default: 0] += run.duration } }
        }
        let majority = hostDurations.max { $0.value < $1.value || $0.value == $1.value && $0.key > $1.key }?.key
        for run in runs {
            guard let pattern = run.adHost else { continue }
            let id = "ssai-\(media.segments[run.range.lowerBound].mediaSequence)"
            let reason = "between discontinuities and served from the ad host pattern \(pattern)"
            for i in run.range where !known[i] {
                mark(&detection, i, media.segments[i], rule: .adHost, reason: reason, id: id)
            }
        }
        // Consecutive runs none of which comes from the content's origin form one pod (several ads, and the slate
        // filling an underfilled break, back to back): the pod is judged as a whole against its neighbours.
        // A run whose host changes without a discontinuity is content moving between CDNs, never one ad.
        var pods: [Run] = []
        // Whether every run of each pod came from a single host (parallel to `pods`).
        var singleHost: [Bool] = []
        for run in runs {
            let foreign = majority.map { !run.hosts.contains($0) } ?? false
            if foreign, let last = pods.last, let host = majority, !last.hosts.contains(host) {
                pods[pods.count - 1].range = last.range.lowerBound..<run.range.upperBound
                pods[pods.count - 1].hosts.formUnion(run.hosts)
                pods[pods.count - 1].duration += run.duration
                singleHost[pods.count - 1] = singleHost[pods.count - 1] && run.hosts.count == 1
            } else {
                pods.append(run)
                singleHost.append(run.hosts.count == 1)
            }
        }
        let maximumPod = min(options.maximumBreakDuration, 300)
        for (r, run) in pods.enumerated() {
            var rule: AdRule?
            var reason = ""
            let previous = r > 0 ? pods[r - 1] : nil
            let next = r + 1 < pods.count ? pods[r + 1] : nil
            // A pod reaching back to the window's start has lasted since its slates began.
            let before = live && previous == nil ? slatedTime(slated, media.segments[run.range.lowerBound]) ?? 0 : 0
            if run.duration + before <= maximumPod, singleHost[r], let majority, !run.hosts.contains(majority) {
                let separate = [previous, next].allSatisfy { n in n.map { $0.hosts.isDisjoint(with: run.hosts) } ?? true
                }
                let neighboursAreContent = [previous, next].allSatisfy { n in
                    n.map { $0.hosts.contains(majority) } ?? true
                }
                let bounded = previous != nil && next != nil
                let liveEdge = live && next == nil && previous != nil
                let edgeRun = !bounded && (previous ?? next).map { run.duration < $0.duration } ?? false
                // A break the previous poll saw begin (at its live edge) that now fills the window's start.
                let continuing =
                    live && previous == nil && slatedTime(slated, media.segments[run.range.lowerBound]) != nil
                if separate, neighboursAreContent, bounded || liveEdge || edgeRun || continuing {
                    rule = .originChange
                    let hosts = run.hosts.sorted().joined(separator: ", ")
                    reason = "between discontinuities and served from \(hosts), not the content's origin \(majority)"
                    if liveEdge {
                        for i in run.range { detection.provisional[i] = true }
                    }
                }
            }
            guard let rule else { continue }
            let id = "ssai-\(media.segments[run.range.lowerBound].mediaSequence)"
            for i in run.range where !known[i] {
                mark(&detection, i, media.segments[i], rule: rule, reason: reason, id: id)
            }
        }
        if let majority {
            pathChange(
                media, runs: runs, host: majority, live: live, known: known, remembered: remembered, slated: slated,
                lastContent: lastContent, into: &detection)
        }
    }

    /// The host (lowercased) and the path through its last `/` of a resolved URI: where a segment comes from.
    static func directory(_ uri: String) -> String {
        let (authority, path) = authorityAndPath(uri)
        let directory = path.utf8.lastIndex(of: 0x2F).map { path[...$0] } ?? ""
        return authority.lowercased() + directory
    }

    /// Pods on the content's own host: a stitcher that serves the ads itself (DAI-style pod paths, ads listed or
    /// redirected under `/pod/...` or `/ad/...`, often by relative paths such as `../../pod/7/ad/0/seg.ts`) changes
    /// the path, not the host. Consecutive runs from the content's host, none of them from the content's directory
    /// (the one with the most time), each from one directory, form a pod; it is an ad pod when content from the
    /// content's directory comes right before and right after it (never at an edge of the playlist, so a path
    /// that changes for good, such as a new dated directory, stays content), it shares no directory with them,
    /// and it is no longer than the longest pod.
    ///
    /// Live, a pod is decided before content comes back: at the live edge, a pod that follows content from the
    /// content's directory is an ad pod provisionally (re-decided every poll until its end is in the window, so
    /// it keeps its slates while it lasts and turns out content once it outlasts the longest pod, counting the time
    /// it lasted before the window from its slates: a failover to another path for good), unless its
    /// directory is the next of the content's series (a sibling whose name differs only in digits:
    /// `/live/20261202/` after `/live/20261201/`, `/live3/` after `/live2/`: content moving on, not a pod). A pod that reaches back to the window's start continues one an earlier poll
    /// published as slates. The content's directory is the one earlier polls decided content came from (a
    /// window deep in a pod may hold more pod time than content), or the last content segment's once those
    /// decisions are forgotten (a pod can outlast them), else the one with the most time in the window.
    func pathChange(
        _ media: MediaPlaylist, runs: [Run], host: String, live: Bool, known: [Bool],
        remembered: [UInt64: RememberedDecision], slated: [UInt64: Double], lastContent: String?,
        into detection: inout Detection
    ) {
        var runDirectories: [Set<String>] = []
        var durations: [String: Double] = [:]
        for run in runs {
            var set = Set<String>()
            for i in run.range {
                let d = AdDetector.directory(media.segments[i].uri)
                set.insert(d)
                durations[d, default: 0] += media.segments[i].duration
            }
            runDirectories.append(set)
        }
        var contentDurations: [String: Double] = [:]
        for memory in remembered.values where !memory.decision.isAd {
            let uri = memory.decision.uri
            guard hostName(AdDetector.authorityAndPath(uri).0).lowercased() == host else { continue }
            contentDurations[AdDetector.directory(uri), default: 0] += memory.decision.duration
        }
        if contentDurations.isEmpty, live, let lastContent,
            hostName(AdDetector.authorityAndPath(lastContent).0).lowercased() == host
        {
            contentDurations[AdDetector.directory(lastContent)] = 1
        }
        if contentDurations.isEmpty { contentDurations = durations }
        let main = contentDurations.max { $0.value < $1.value || $0.value == $1.value && $0.key > $1.key }?.key
        guard let main, durations.keys.contains(where: { $0 != main }) else { return }
        let maximumPod = min(options.maximumBreakDuration, 300)
        var r = 0
        while r < runs.count {
            guard runs[r].hosts == [host], !runDirectories[r].contains(main) else {
                r += 1
                continue
            }
            var end = r + 1
            while end < runs.count, runs[end].hosts == [host], !runDirectories[end].contains(main) { end += 1 }
            defer { r = end }
            let pod = r..<end
            let before = live && r == 0 ? slatedTime(slated, media.segments[runs[r].range.lowerBound]) : nil
            let continuing = before != nil
            let atEdge = live && end == runs.count
            guard r > 0 ? runDirectories[r - 1].contains(main) : continuing,
                end < runs.count ? runDirectories[end].contains(main) : atEdge
            else { continue }
            let directories = pod.reduce(into: Set<String>()) { $0.formUnion(runDirectories[$1]) }
            let duration = pod.reduce(0.0) { $0 + runs[$1].duration }
            let neighbours = (r > 0 ? [r - 1] : []) + (end < runs.count ? [end] : [])
            guard duration + (before ?? 0) <= maximumPod, pod.allSatisfy({ runDirectories[$0].count == 1 }),
                neighbours.allSatisfy({ directories.isDisjoint(with: runDirectories[$0]) })
            else { continue }
            // Content on both sides must still be content (not decided an ad by another rule).
            guard !neighbours.contains(where: { n in runs[n].range.contains { detection.decisions[$0].isAd } })
            else { continue }
            if atEdge {
                // Still open at the live edge: the next directory of the content's series is content moving on.
                guard continuing || !directories.contains(where: { AdDetector.sameSeries($0, main) }) else { continue }
                for p in pod { for i in runs[p].range { detection.provisional[i] = true } }
            }
            let id = "ssai-\(media.segments[runs[r].range.lowerBound].mediaSequence)"
            for p in pod {
                let reason =
                    "between discontinuities and served from \(runDirectories[p].first ?? "") on the content's host, "
                    + "not the content's path \(main)"
                for i in runs[p].range where !known[i] {
                    mark(&detection, i, media.segments[i], rule: .pathChange, reason: reason, id: id)
                }
            }
        }
    }

    /// How long the break of a slated segment had lasted before it (from the break's first slate to the segment's
    /// start), or of the segment after the last slated; nil when neither it nor the one before was slated.
    func slatedTime(_ slated: [UInt64: Double], _ segment: MediaSegment) -> Double? {
        let m = segment.mediaSequence
        return slated[m].map { max(0, $0 - segment.duration) } ?? (m > 0 ? slated[m - 1] : nil)
    }

    /// Whether two directories (`host/a/b/`) are one series: in the same directory, their names the same but for
    /// digits (`live/20261201/` and `live/20261202/`, `live2/` and `live3/`).
    static func sameSeries(_ a: String, _ b: String) -> Bool {
        func split(_ directory: String) -> (parent: Substring, name: [Character]) {
            let trimmed = directory.hasSuffix("/") ? directory.dropLast() : Substring(directory)
            guard let slash = trimmed.lastIndex(of: "/") else { return (trimmed, []) }
            return (trimmed[...slash], trimmed[trimmed.index(after: slash)...].filter { !("0"..."9").contains($0) })
        }
        let (x, y) = (split(a), split(b))
        return x.parent == y.parent && x.name == y.name
    }

    // MARK: Duration heuristic

    func durationHeuristic(_ media: MediaPlaylist, known: [Bool], into detection: inout Detection) {
        guard media.segments.contains(where: { $0.discontinuity }) else { return }
        let runs = runs(media)
        guard runs.count > 2 else { return }
        for r in 1..<(runs.count - 1) {
            let run = runs[r]
            let multiple = (run.duration / 15).rounded()
            guard multiple >= 1, multiple <= 8, abs(run.duration - multiple * 15) <= 0.6 else { continue }
            let id = "heuristic-\(media.segments[run.range.lowerBound].mediaSequence)"
            for i in run.range where !known[i] {
                mark(
                    &detection, i, media.segments[i], rule: .durationHeuristic,
                    reason: "a discontinuity-bounded run of \(format(run.duration)) s (an ad-like length)", id: id)
            }
        }
    }
}

/// A duration with at most three decimals and no trailing zeros; one too large for whole milliseconds in an `Int`
/// (a playlist may say anything) is written as Swift writes the number.
func format(_ seconds: Double) -> String {
    guard seconds.isFinite else { return "0" }
    guard let millis = Int(exactly: (seconds * 1000).rounded()) else { return String(seconds) }
    let sign = millis < 0 ? "-" : ""
    let whole = abs(millis / 1000)
    var fraction = abs(millis % 1000)
    if fraction == 0 { return sign + String(whole) }
    var digits = 3
    while fraction % 10 == 0 {
        fraction /= 10
        digits -= 1
    }
    let text = String(fraction)
    return "\(sign)\(whole)." + String(repeating: "0", count: digits - text.count) + text
}
