import HLSAdFilter
import HLSProxy
import LoopbackHTTP
import Testing

/// The incremental poll path (`Options.incrementalPolls`) against the full path: two proxies fed the same generated
/// live window sequences must serve the same bytes (once one's session token is swapped for the other's), and the
/// fast path must really answer most polls of a plain sliding window.
@Suite struct IncrementalPollTests {
    static let url = "https://origin.example.com/live/channel/index.m3u8"

    // MARK: Sequences

    /// One feature alone (on top of CUE-OUT/CUE-IN breaks), two seeds each.
    static let singleFeatureCases: [Int] = Array(0..<(LiveSequence.Features.all.count * 2))

    @Test(arguments: singleFeatureCases)
    func singleFeatureSequencesServeTheSameBytes(_ index: Int) async throws {
        let (name, feature) = LiveSequence.Features.all[index / 2]
        let seed = UInt64(0x5F00 + index)
        var features: LiveSequence.Features = [.cueOut, feature]
        if feature.contains(.dateRanges) { features.insert(.programDateTime) }
        let sequence = LiveSequence(seed: seed, features: features)
        let outcome = try await Self.compare(sequence, label: "single feature \(name)")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        Self.checkCounts(outcome, sequence: sequence)
    }

    static let mixedCount = 40

    /// A different random mix of every feature per seed.
    @Test(arguments: 0..<mixedCount)
    func mixedSequencesServeTheSameBytes(_ index: Int) async throws {
        let seed = UInt64(0xA110_0000 + index)
        let sequence = LiveSequence(seed: seed, features: LiveSequence.Features.random(seed: seed))
        let outcome = try await Self.compare(sequence, label: "mixed")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        Self.checkCounts(outcome, sequence: sequence)
    }

    /// Plain segments and CUE-OUT/CUE-IN breaks only: the fast path answers most polls that are not repeats, and
    /// nearly every poll it is meant for (the window moved on, the previous one ended with content, every new
    /// segment is plain content); the proxy without it never takes it.
    @Test func plainSequencesTakeTheFastPath() async throws {
        var moved = 0
        var incremental = 0
        var eligible = 0
        for index in 0..<16 {
            let seed = UInt64(0x9A1_0000 + index)
            var features: LiveSequence.Features = [.cueOut]
            if index % 2 == 1 { features.insert(.bareCueOut) }
            if index % 4 >= 2 { features.insert(.backToBack) }
            let sequence = LiveSequence(seed: seed, features: features, breakOdds: 2)
            let outcome = try await Self.compare(sequence, label: "plain")
            #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
            #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
            Self.checkCounts(outcome, sequence: sequence)
            let notRepeats = outcome.polls - outcome.fast.repeated
            let summary =
                "seed \(seed) (\(sequence.features)): \(outcome.fast) over \(outcome.polls) polls (\(notRepeats) not "
                + "repeats, \(sequence.eligiblePolls) eligible)"
            #expect(outcome.fast.incremental * 10 >= sequence.eligiblePolls * 9, "\(summary)")
            #expect(outcome.fast.incremental * 3 >= notRepeats, "\(summary)")
            #expect(outcome.full.incremental == 0, "seed \(seed): \(outcome.full)")
            moved += notRepeats
            incremental += outcome.fast.incremental
            eligible += sequence.eligiblePolls
        }
        #expect(incremental * 10 >= moved * 6, "\(incremental) incremental of \(moved) polls that are not repeats")
        #expect(eligible * 10 >= moved * 6, "the generator's plain windows: \(eligible) eligible of \(moved)")
    }

    /// A plain window of `count` segments from `first`, with a break (`CUE-OUT:<2 x length>`, CUE-IN after it) at
    /// each of `breaks` (media sequence number, length).
    static func plainWindow(first: Int, count: Int, breaks: [(Int, Int)]) -> [UInt8] {
        MediaPlaylistText.window(
            first: first, count: count, targetDuration: 2, duration: "2.000", uri: { "seg_\($0).ts" },
            tags: { m in
                breaks.map { start, length in
                    (m == start ? "#EXT-X-CUE-OUT:\(2 * length).000\n" : "")
                        + (m == start + length ? "#EXT-X-CUE-IN\n" : "")
                }.joined()
            }
        ).bytes
    }

    /// After polls the fast path answered, the window jumps back to start inside a break whose CUE-OUT is no longer
    /// in it: the full path has seen the media sequence go back (from the last poll's number) and says so; the
    /// proxy with the fast path must judge it from the same last number, not from its last full poll's.
    @Test func jumpBackIntoABreakAfterFastPolls() async throws {
        var polls: [[UInt8]] = []
        for first in 45...80 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(50, 4)])) }
        polls.append(Self.plainWindow(first: 51, count: 10, breaks: [(50, 4)]))
        polls.append(Self.plainWindow(first: 52, count: 10, breaks: [(50, 4)]))
        let outcome = try await Self.compare(polls: polls, label: "jump back into a break")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        #expect(outcome.fast.incremental > 10, "\(outcome.fast)")
    }

    /// After polls the fast path answered, the origin puts a CUE-OUT before a segment it already served as content
    /// (and that is still in the window).
    @Test func markerAddedToAFastPolledSegment() async throws {
        var polls: [[UInt8]] = []
        for first in 45...70 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(50, 4)])) }
        for first in 71...74 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(50, 4), (76, 2)])) }
        let outcome = try await Self.compare(polls: polls, label: "marker added")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        #expect(outcome.fast.incremental > 10, "\(outcome.fast)")
    }

    /// The MEDIA-SEQUENCE value gains digits (99 to 100, 999 to 1000, 9999 to 10000) while the window moves on,
    /// and a zero-padded value (which the fast path must copy as it is or leave to the full path).
    @Test func mediaSequenceDigitsChangeLength() async throws {
        for start in [93, 993, 9993] {
            var polls: [[UInt8]] = []
            for first in start...(start + 12) {
                polls.append(Self.plainWindow(first: first, count: 8, breaks: [(start + 9, 2)]))
            }
            let outcome = try await Self.compare(polls: polls, label: "digits from \(start)")
            #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
            #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
            #expect(outcome.fast.incremental > 0, "\(outcome.fast)")
        }
        var padded: [[UInt8]] = []
        for first in 95...105 {
            let window = Self.plainWindow(first: first, count: 8, breaks: [])
            padded.append(Self.replacing(Array(":\(first)\n".utf8), with: Array(":000\(first)\n".utf8), in: window))
        }
        let outcome = try await Self.compare(polls: padded, label: "zero-padded")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
    }

    /// An EVENT playlist only grows (append-only polls, a break on the way), then ends with EXT-X-ENDLIST.
    @Test func eventPlaylistGrowsThenEnds() async throws {
        var polls: [[UInt8]] = []
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-TARGETDURATION:2\n"
        text += "#EXT-X-MEDIA-SEQUENCE:0\n"
        for m in 0..<40 {
            if m == 12 { text += "#EXT-X-CUE-OUT:6.000\n" }
            if m == 15 { text += "#EXT-X-CUE-IN\n" }
            text += "#EXTINF:2.000,\nseg_\(m).ts\n"
            if m >= 4 { polls.append(Array(text.utf8)) }
        }
        polls.append(Array((text + "#EXT-X-ENDLIST\n").utf8))
        let outcome = try await Self.compare(polls: polls, label: "event")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        #expect(outcome.fast.incremental > 15, "\(outcome.fast)")
        #expect(String(decoding: outcome.lastOutput, as: UTF8.self).hasSuffix("#EXT-X-ENDLIST\n"))
    }

    /// A poll whose media sequence went back is reported with a warning; the plain polls after it are not.
    @Test func aWarningIsReportedOnlyWithItsPoll() async throws {
        var polls: [[UInt8]] = []
        for first in 40...44 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [])) }
        for first in 30...34 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [])) }
        let outcome = try await Self.compare(polls: polls, label: "warning")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        #expect(outcome.fast.incremental >= 6, "\(outcome.fast)")
    }

    /// After polls the fast path answered, the media sequence restarts lower with the same segments.
    @Test func restartAfterFastPolls() async throws {
        var polls: [[UInt8]] = []
        for first in 45...80 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(50, 4)])) }
        // The origin renumbers from 60: the same URIs under numbers 20 lower.
        for first in 61...66 {
            var window = MediaPlaylistText.window(
                first: first, count: 10, targetDuration: 2, duration: "2.000", uri: { "seg_\($0).ts" })
            window.mediaSequence = first - 20
            polls.append(window.bytes)
        }
        let outcome = try await Self.compare(polls: polls, label: "restart")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
    }

    /// A slate source that answers with the slot it was asked for (what the slate's timestamps are made from).
    struct SlotEcho: ProxySlateSource {
        func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]? {
            let anchorSequence = slot.anchorMediaSequence.map { "\($0)" } ?? "-"
            return Array(
                ("msn \(slot.mediaSequence) duration \(slot.duration) anchor \(slot.anchorURI ?? "-") #\(anchorSequence) "
                    + "offset \(slot.offsetFromAnchor)").utf8)
        }

        func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]? { nil }
    }

    /// The slate served at `/<token>/slate/<playlist>/<msn>.ts`, as text.
    static func slate(_ proxy: AdStrippingProxy, playlist: String, msn: Int) async -> String {
        var request = HTTPRequest(method: .get, target: "/\(proxy.token.value)/slate/\(playlist)/\(msn).ts")
        request.wildcardSegments = ["slate", playlist, "\(msn).ts"]
        let response = await proxy.respond(to: request)
        guard case .bytes(let bytes) = response.body else { return "status \(response.status.code), not bytes" }
        return "status \(response.status.code): " + String(decoding: bytes, as: UTF8.self)
    }

    /// After polls the fast path answered, the window jumps forward to start with a new break: its slates have no
    /// content before them in the window, so they are placed after the last content segment the proxy saw. Both
    /// proxies must place them after the same one (the slate's timestamps follow from it).
    @Test func slatesAfterAJumpForwardAreAnchoredAlike() async throws {
        // Anchors are fetched from the origin: a loopback one is refused at once (no network).
        let url = "http://127.0.0.1:9/live/index.m3u8"
        var fastOptions = AdStrippingProxy.Options()
        fastOptions.slates = SlotEcho()
        var fullOptions = fastOptions
        fullOptions.incrementalPolls = false
        let fast = AdStrippingProxy(url: url, options: fastOptions)
        let full = AdStrippingProxy(url: url, options: fullOptions)
        var polls: [[UInt8]] = []
        for first in 45...80 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(50, 4)])) }
        for first in 120...122 { polls.append(Self.plainWindow(first: first, count: 10, breaks: [(120, 4)])) }
        for (index, poll) in polls.enumerated() {
            let a = try fast.poll(bytes: poll, url: url)
            let b = try full.poll(bytes: poll, url: url)
            let swapped = Self.replacing(Array(fast.token.value.utf8), with: Array(full.token.value.utf8), in: a)
            #expect(swapped == b, "poll \(index): \(Self.firstDifference(swapped, b, input: poll, previous: nil))")
        }
        #expect(fast.pollCounts.incremental > 10, "\(Counts(fast.pollCounts))")
        // The playlist's route ID is the first one assigned (the same in both).
        let playlist = "1"
        for msn in 120...123 {
            let a = await Self.slate(fast, playlist: playlist, msn: msn)
            let b = await Self.slate(full, playlist: playlist, msn: msn)
            #expect(a.hasPrefix("status 200: msn \(msn)"), "\(a)")
            #expect(a == b, "slate \(msn): fast path \(a) vs full path \(b)")
        }
    }

    /// The shape of Scripts/bench/proxy.sh's moving window: 1,000 segments, a 30 s CUE-OUT every 400, CUE-IN 15
    /// later, three CDN hosts; 60 polls moving by one.
    @Test func benchShapedMovingWindow() async throws {
        let polls = (0..<60).map { n in
            MediaPlaylistText.window(
                first: 50000 + n, count: 1000, targetDuration: 2, duration: "2.000",
                uri: { "https://cdn\($0 % 3).example.com/live/1080p/segment_\($0).ts?session=abcdef0123456789" },
                tags: { $0 % 400 == 0 ? "#EXT-X-CUE-OUT:30.000\n" : $0 % 400 == 15 ? "#EXT-X-CUE-IN\n" : "" }
            ).bytes
        }
        let outcome = try await Self.compare(polls: polls, label: "bench window")
        #expect(outcome.mismatches.isEmpty, "\(outcome.mismatches.joined(separator: "\n"))")
        #expect(outcome.eventMismatches.isEmpty, "\(outcome.eventMismatches.joined(separator: "\n"))")
        #expect(outcome.fast.full + outcome.fast.incremental + outcome.fast.repeated == 60, "\(outcome.fast)")
        #expect(outcome.fast.incremental > 30, "\(outcome.fast)")
        #expect(outcome.full.incremental == 0, "\(outcome.full)")
        #expect(outcome.full.full == 60, "\(outcome.full)")
        // The break that opens the first window is slated, and so is the one at 50800 in every poll.
        let last = String(decoding: outcome.lastOutput, as: UTF8.self)
        #expect(last.contains("/slate/") && last.contains("/50800.ts"))
    }

    /// The generator covers what the suite claims, and is deterministic.
    @Test func generatorCoversEveryFeatureAndIsDeterministic() async {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        await blocking {
            var seen: LiveSequence.Features = []
            var events = LiveSequence.Events()
            var totalPolls = 0
            // The texts the features promise are in the polls.
            var needles = [
                "#EXT-X-CUE-OUT:", "#EXT-X-CUE-OUT\n", "#EXT-X-CUE-OUT:DURATION=", "#EXT-X-CUE-OUT-CONT:ElapsedTime=",
                "#EXT-X-CUE-OUT-CONT:2", "#EXT-X-CUE-IN", "#EXT-X-DISCONTINUITY\n", "#EXT-X-PROGRAM-DATE-TIME:",
                "#EXT-X-KEY:METHOD=AES-128", ",IV=0x", "#EXT-X-MAP:URI=", "CLASS=\"twitch-stitched-ad\"",
                "CLASS=\"com.example.chapter\"", ",live\n", ",Amazon", "\r\n", "\n  https://", "\nseg_", "\nchunks/",
                "\n/live/", "#EXT-X-DISCONTINUITY-SEQUENCE:", "#EXT-X-INDEPENDENT-SEGMENTS",
                "https://ads.adserver.example.net/", "https://ssai.other-origin.example.org/", "# ", "\n\n",
            ].map { Array($0.utf8) }
            for index in 0..<Self.mixedCount {
                let seed = UInt64(0xA110_0000 + index)
                let sequence = LiveSequence(seed: seed, features: LiveSequence.Features.random(seed: seed))
                seen.formUnion(sequence.features)
                events.add(sequence.events)
                totalPolls += sequence.polls.count
                #expect((30...80).contains(sequence.polls.count))
                for size in sequence.windowSizes { #expect((5...40).contains(size), "seed \(seed): \(size)") }
                for poll in sequence.polls {
                    needles.removeAll { Self.find($0, in: poll) }
                }
            }
            for needle in needles {
                Issue.record("no poll contains \(String(decoding: needle, as: UTF8.self).debugDescription)")
            }
            for (name, feature) in LiveSequence.Features.all {
                #expect(seen.contains(feature), "no mixed sequence has \(name)")
            }
            #expect(events.jumpsForward > 0 && events.jumpsBack > 0 && events.resets > 0, "\(events)")
            #expect(
                events.repeats > 0 && events.rewrites > 0 && events.appendOnly > 0 && events.dropOnly > 0, "\(events)")
            #expect(events.markersAtStart > 0, "\(events)")
            let again = LiveSequence(seed: 0xA110_0007, features: LiveSequence.Features.random(seed: 0xA110_0007))
            let first = LiveSequence(seed: 0xA110_0007, features: LiveSequence.Features.random(seed: 0xA110_0007))
            #expect(again.polls == first.polls)
            #expect(totalPolls >= Self.mixedCount * 30)
        }
    }

    // MARK: Driving two proxies

    /// `AdStrippingProxy.PollCounts`, printable.
    struct Counts: CustomStringConvertible {
        var full = 0
        var incremental = 0
        var repeated = 0

        init() {}

        init(_ counts: AdStrippingProxy.PollCounts) {
            full = counts.full
            incremental = counts.incremental
            repeated = counts.repeated
        }

        var description: String { "full \(full), incremental \(incremental), repeated \(repeated)" }
    }

    struct Outcome {
        var polls = 0
        var mismatches: [String] = []
        var eventMismatches: [String] = []
        var fast = Counts()
        var full = Counts()
        var lastOutput: [UInt8] = []
    }

    static func compare(_ sequence: LiveSequence, label: String) async throws -> Outcome {
        try await compare(polls: sequence.polls, label: "\(label) seed \(sequence.seed) (\(sequence.features))")
    }

    /// Feeds every poll to a proxy with the fast path and one without; records the polls whose outputs differ.
    static func compare(polls: [[UInt8]], label: String) async throws -> Outcome {
        var fastOptions = AdStrippingProxy.Options()
        fastOptions.incrementalPolls = true
        var fullOptions = AdStrippingProxy.Options()
        fullOptions.incrementalPolls = false
        let fast = AdStrippingProxy(url: url, options: fastOptions)
        let full = AdStrippingProxy(url: url, options: fullOptions)
        let fastToken = Array(fast.token.value.utf8)
        let fullToken = Array(full.token.value.utf8)
        var outcome = Outcome()
        for (index, poll) in polls.enumerated() {
            let a: [UInt8]
            let b: [UInt8]
            do {
                a = try fast.poll(bytes: poll, url: url)
                b = try full.poll(bytes: poll, url: url)
            } catch {
                Issue.record("\(label) poll \(index): \(error)")
                throw error
            }
            let swapped = replacing(fastToken, with: fullToken, in: a)
            if swapped != b, outcome.mismatches.count < 3 {
                outcome.mismatches.append(
                    "\(label) poll \(index): \(firstDifference(swapped, b, input: poll, previous: index > 0 ? polls[index - 1] : nil))"
                )
            }
            outcome.lastOutput = b
            outcome.polls += 1
        }
        outcome.fast = Counts(fast.pollCounts)
        outcome.full = Counts(full.pollCounts)
        // Each poll reports its decisions (the explanation API): the same from both paths.
        await fast.stop()
        await full.stop()
        let fastEvents = await pollEvents(fast)
        let fullEvents = await pollEvents(full)
        if fastEvents.count != polls.count || fullEvents.count != polls.count {
            outcome.eventMismatches.append(
                "\(label): \(fastEvents.count) and \(fullEvents.count) poll events for \(polls.count) polls")
        }
        for (index, (a, b)) in zip(fastEvents, fullEvents).enumerated() where a != b {
            guard outcome.eventMismatches.count < 3 else { break }
            let decision = zip(a.decisions, b.decisions).first { $0 != $1 }
            let detail =
                decision.map { "fast \($0.0) vs full \($0.1)" }
                ?? "\(a.decisions.count) vs \(b.decisions.count) decisions, warnings \(a.warnings) vs \(b.warnings)"
            outcome.eventMismatches.append("\(label) poll \(index): decisions differ: \(detail)")
        }
        return outcome
    }

    /// The decisions and warnings of every poll event a stopped proxy reported.
    static func pollEvents(_ proxy: AdStrippingProxy) async -> [PollEvent] {
        var out: [PollEvent] = []
        for await event in proxy.events {
            if case .poll(_, let decisions, let warnings) = event {
                out.append(PollEvent(decisions: decisions, warnings: warnings))
            }
        }
        return out
    }

    struct PollEvent: Equatable {
        var decisions: [SegmentDecision]
        var warnings: [String]
    }

    /// Every poll is answered one way; the proxy without the fast path never takes it.
    static func checkCounts(_ outcome: Outcome, sequence: LiveSequence) {
        let a = outcome.fast
        let b = outcome.full
        #expect(a.full + a.incremental + a.repeated == outcome.polls, "seed \(sequence.seed): \(a)")
        #expect(b.full + b.repeated == outcome.polls && b.incremental == 0, "seed \(sequence.seed): \(b)")
        #expect(a.full >= 1, "seed \(sequence.seed): the first poll is a full one: \(a)")
        // Polls whose bytes are the previous poll's are answered as repeats by both (the sequence runs in far less
        // than the ten seconds a repeat is reused for).
        #expect(a.repeated == sequence.repeatedPolls, "seed \(sequence.seed): \(a)")
        #expect(b.repeated == sequence.repeatedPolls, "seed \(sequence.seed): \(b)")
    }

    /// Whether `needle` occurs in `bytes`.
    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Bool {
        guard let first = needle.first, bytes.count >= needle.count else { return false }
        for i in 0...(bytes.count - needle.count) where bytes[i] == first {
            if bytes[i..<(i + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// `bytes` with every occurrence of `old` replaced by `new`.
    static func replacing(_ old: [UInt8], with new: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        guard let first = old.first, !old.isEmpty else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == first, i + old.count <= bytes.count, bytes[i..<(i + old.count)].elementsEqual(old) {
                out += new
                i += old.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// The first line where two outputs differ, with the line before it, the line counts, and where that spot is
    /// in the poll's input.
    static func firstDifference(_ fast: [UInt8], _ full: [UInt8], input: [UInt8], previous: [UInt8]?) -> String {
        func lines(_ bytes: [UInt8]) -> [String] {
            bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
        }
        func show(_ line: String?) -> String {
            guard let line else { return "<end>" }
            return line.count > 160 ? String(line.prefix(160)).debugDescription + "..." : line.debugDescription
        }
        let a = lines(fast)
        let b = lines(full)
        var i = 0
        while i < a.count, i < b.count, a[i] == b[i] { i += 1 }
        let before = i > 0 ? show(a[i - 1]) : "<start>"
        let inputLines = lines(input)
        let previousCount = previous.map { lines($0).count }.map(String.init) ?? "-"
        return
            "outputs differ at line \(i) (fast \(a.count) lines, full \(b.count); input \(inputLines.count) lines, "
            + "previous input \(previousCount)); after \(before): fast \(show(i < a.count ? a[i] : nil)) vs full "
            + "\(show(i < b.count ? b[i] : nil))"
    }
}

// MARK: The generator

/// The draws these tests make from TestSupport's seeded generator.
extension SplitMix64 {
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with a probability of `percent` in 100.
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }
}

/// A generated live stream and the sequence of windows (polls) an origin serves of it.
struct LiveSequence {
    struct Features: OptionSet, Hashable, CustomStringConvertible {
        let rawValue: UInt32
        /// `#EXT-X-CUE-OUT:<seconds>` or `:DURATION=<seconds>` ... `#EXT-X-CUE-IN`.
        static let cueOut = Features(rawValue: 1 << 0)
        /// `#EXT-X-CUE-OUT` with no duration, ended by `#EXT-X-CUE-IN`.
        static let bareCueOut = Features(rawValue: 1 << 1)
        /// `#EXT-X-CUE-OUT-CONT` on every segment of a break after the first.
        static let cueOutCont = Features(rawValue: 1 << 2)
        /// A break that starts where the previous one ends.
        static let backToBack = Features(rawValue: 1 << 3)
        /// `#EXT-X-DISCONTINUITY` inside the content.
        static let discontinuity = Features(rawValue: 1 << 4)
        /// Discontinuity-bounded runs from an ad host or another origin.
        static let foreignRuns = Features(rawValue: 1 << 5)
        static let programDateTime = Features(rawValue: 1 << 6)
        /// AES-128 keys rotated every few segments (and re-declared at the window's start).
        static let keys = Features(rawValue: 1 << 7)
        /// fMP4 (`#EXT-X-MAP`, re-declared at the window's start and after some discontinuities).
        static let map = Features(rawValue: 1 << 8)
        /// A Twitch stitched-ad DATERANGE and a chapter DATERANGE decoy (with PROGRAM-DATE-TIME).
        static let dateRanges = Features(rawValue: 1 << 9)
        /// EXTINF titles: `live` content and `Amazon` ads, or decoy titles on content.
        static let titles = Features(rawValue: 1 << 10)
        static let comments = Features(rawValue: 1 << 11)
        static let blankLines = Features(rawValue: 1 << 12)
        /// CRLF line endings: everywhere, or on some lines.
        static let crlf = Features(rawValue: 1 << 13)
        static let leadingBlanks = Features(rawValue: 1 << 14)
        static let relativeURIs = Features(rawValue: 1 << 15)
        static let discontinuitySequence = Features(rawValue: 1 << 16)
        static let independentSegments = Features(rawValue: 1 << 17)
        /// The window jumps forward or back, or its media sequence restarts.
        static let jumps = Features(rawValue: 1 << 18)
        /// The same window served twice in a row.
        static let repeats = Features(rawValue: 1 << 19)
        /// The origin rewrites a segment already served (URI, duration or title).
        static let rewrites = Features(rawValue: 1 << 20)

        static let all: [(String, Features)] = [
            ("cueOut", .cueOut), ("bareCueOut", .bareCueOut), ("cueOutCont", .cueOutCont),
            ("backToBack", .backToBack), ("discontinuity", .discontinuity), ("foreignRuns", .foreignRuns),
            ("programDateTime", .programDateTime), ("keys", .keys), ("map", .map), ("dateRanges", .dateRanges),
            ("titles", .titles), ("comments", .comments), ("blankLines", .blankLines), ("crlf", .crlf),
            ("leadingBlanks", .leadingBlanks), ("relativeURIs", .relativeURIs),
            ("discontinuitySequence", .discontinuitySequence), ("independentSegments", .independentSegments),
            ("jumps", .jumps), ("repeats", .repeats), ("rewrites", .rewrites),
        ]

        /// Each feature with a chance of two in five.
        static func random(seed: UInt64) -> Features {
            var rng = SplitMix64(seed: seed ^ 0xFEA7_0000_0000_0000)
            var out: Features = []
            for (_, feature) in all where rng.chance(40) { out.insert(feature) }
            if out.contains(.dateRanges) { out.insert(.programDateTime) }
            return out
        }

        var description: String {
            let names = Features.all.filter { contains($0.1) }.map(\.0)
            return names.isEmpty ? "plain" : names.joined(separator: "+")
        }
    }

    /// What happened between polls.
    struct Events: CustomStringConvertible {
        var jumpsForward = 0
        var jumpsBack = 0
        var resets = 0
        var repeats = 0
        var rewrites = 0
        var appendOnly = 0
        var dropOnly = 0
        /// Windows whose first segment opens a break (CUE-OUT or stitched-ad DATERANGE).
        var markersAtStart = 0

        mutating func add(_ o: Events) {
            jumpsForward += o.jumpsForward
            jumpsBack += o.jumpsBack
            resets += o.resets
            repeats += o.repeats
            rewrites += o.rewrites
            appendOnly += o.appendOnly
            dropOnly += o.dropOnly
            markersAtStart += o.markersAtStart
        }

        var description: String {
            "jumps +\(jumpsForward)/-\(jumpsBack), resets \(resets), repeats \(repeats), rewrites \(rewrites), "
                + "append-only \(appendOnly), drop-only \(dropOnly), markers at the start \(markersAtStart)"
        }
    }

    /// One segment of the stream: the lines before its EXTINF, and what the window's first segment re-declares.
    struct Segment {
        var tags: [String]
        var milliseconds: Int
        var duration: String
        var title: String
        var uri: String
        /// The KEY and MAP lines in effect for it, and its PROGRAM-DATE-TIME line.
        var key: String?
        var map: String?
        var dateTime: String
        /// Discontinuity tags on the segments before it (for EXT-X-DISCONTINUITY-SEQUENCE).
        var discontinuitiesBefore: Int
        /// Which of its lines end with CRLF (bit n: line n), in the mixed line-ending mode.
        var crlfBits: UInt64
        /// Whether the generator made it an ad (inside a break or a foreign run).
        var isAd: Bool

        /// No tags and no title: `#EXTINF:<duration>,` then the URI.
        var isPlain: Bool { tags.isEmpty && title.isEmpty }
    }

    let seed: UInt64
    let features: Features
    private(set) var stream: [Segment] = []
    private(set) var polls: [[UInt8]] = []
    private(set) var windowSizes: [Int] = []
    private(set) var events = Events()
    /// Polls whose bytes are those of the poll before.
    private(set) var repeatedPolls = 0
    /// Polls the fast path is meant for: the window moved on (no jump, restart or rewrite), the previous window
    /// ended with content, and every segment added is plain content.
    private(set) var eligiblePolls = 0
    /// Of 100 content segments, how many start a break or run.
    private let breakOdds: Int
    private var rng: SplitMix64
    /// 0: LF, 1: CRLF everywhere, 2: CRLF on some lines.
    private let lineEndings: Int
    private let headerCRLF: UInt64
    private let targetDuration: Int
    private let headerOrder: Bool
    /// Whether the window's first segment re-declares its KEY, MAP and PROGRAM-DATE-TIME.
    private let redeclare: Bool

    init(seed: UInt64, features: Features, breakOdds: Int = 6) {
        self.seed = seed
        self.features = features
        self.breakOdds = breakOdds
        var rng = SplitMix64(seed: seed)
        lineEndings = features.contains(.crlf) ? rng.int(1...2) : 0
        headerCRLF = rng.next()
        headerOrder = rng.chance(50)
        redeclare = rng.chance(85)
        let durations = LiveSequence.durationStyle(&rng)
        targetDuration = durations.target
        self.rng = rng
        generateStream(count: 600, durations: durations.pick)
        generatePolls()
    }

    // MARK: Text helpers

    static func decimal(_ milliseconds: Int) -> String {
        let fraction = milliseconds % 1000
        let digits = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        return "\(milliseconds / 1000).\(digits)"
    }

    static func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }

    /// 2026-11-29T20:00:00.000Z plus `milliseconds`.
    static func date(_ milliseconds: Int) -> String {
        let seconds = milliseconds / 1000
        let fraction = decimal(milliseconds % 1000).dropFirst(2)
        return "2026-11-29T\(two(20 + seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)).\(fraction)Z"
    }

    /// A sequence's EXTINF durations: (milliseconds, text) for each segment, and the target duration.
    static func durationStyle(
        _ rng: inout SplitMix64
    ) -> (pick: (inout SplitMix64) -> (Int, String), target: Int) {
        switch rng.int(0...3) {
        case 0: return ({ _ in (2000, "2.000") }, 2)
        case 1: return ({ _ in (6000, "6") }, 6)
        case 2:
            return (
                { r in
                    let ms = r.int(1500...4000)
                    return (ms, decimal(ms))
                }, 4
            )
        default: return ({ r in r.chance(50) ? (6006, "6.006") : (5005, "5.005") }, 7)
        }
    }

    // MARK: The stream

    private mutating func generateStream(count: Int, durations: (inout SplitMix64) -> (Int, String)) {
        let f = features
        let uriStyle = rng.int(0...3)
        let titleStyle = rng.int(0...1)  // 0: "live" content and "Amazon" ads; 1: decoy titles on content
        let pdtEveryFour = rng.chance(40)
        let keyEvery = rng.int(3...10)
        let keyRelative = rng.chance(40)
        let keyIV = rng.chance(50)
        let ext = f.contains(.map) ? "m4s" : "ts"
        let base = rng.int(0...90000)
        var time = rng.int(0...600_000)
        var keyLine: String?
        var keyNumber = 0
        var mapVersion = 0
        var mapLine: String? = f.contains(.map) ? "#EXT-X-MAP:URI=\"init_0.mp4\"" : nil
        var discontinuities = 0
        // The open event: a break (kind 0: CUE, 1: DATERANGE) or a foreign run (2), with its segments left.
        var event: (kind: Int, left: Int, total: Int, elapsed: Int, bare: Bool, host: String)?
        var planned: [(Int, String)] = (0..<count).map { _ in durations(&rng) }
        planned.append((2000, "2.000"))

        func uri(_ n: Int) -> String {
            let name = "seg_\(n).\(ext)"
            let style = f.contains(.relativeURIs) ? (uriStyle + rng.int(0...1)) % 4 : 0
            switch style {
            case 1: return name
            case 2: return "chunks/\(name)"
            case 3: return "/live/channel/abs/\(name)?t=\(n % 7)"
            default: return "https://cdn.example.com/live/channel/\(name)"
            }
        }

        var i = 0
        while i < count {
            var tags: [String] = []
            var isAd = false
            var host: String?
            let n = base + i
            let (ms, text) = planned[i]
            // Close or continue the open event.
            if var open = event {
                if open.left == 0 {
                    if open.kind == 0 { tags.append("#EXT-X-CUE-IN") }
                    if open.kind == 2 || (open.kind == 1 && open.bare) { tags.append("#EXT-X-DISCONTINUITY") }
                    event = nil
                } else {
                    isAd = true
                    if open.kind == 0, f.contains(.cueOutCont) {
                        let total = LiveSequence.decimal(open.total)
                        let elapsed = LiveSequence.decimal(open.elapsed)
                        tags.append(
                            rng.chance(50)
                                ? "#EXT-X-CUE-OUT-CONT:ElapsedTime=\(elapsed),Duration=\(total)"
                                : "#EXT-X-CUE-OUT-CONT:\(elapsed)/\(total)")
                    }
                    if open.kind == 2 { host = open.host }
                    open.left -= 1
                    open.elapsed += ms
                    event = open
                }
            }
            // Maybe open a new event (right after the last one, for back-to-back breaks).
            let justClosed = !tags.isEmpty && event == nil
            let odds = justClosed ? (f.contains(.backToBack) ? 40 : 0) : breakOdds
            if event == nil, rng.chance(odds) {
                var kinds: [Int] = []
                if f.contains(.cueOut) || f.contains(.bareCueOut) { kinds.append(0) }
                if f.contains(.dateRanges) { kinds.append(1) }
                if f.contains(.foreignRuns), !justClosed { kinds.append(2) }
                if !kinds.isEmpty {
                    let kind = rng.pick(kinds)
                    let length = rng.int(2...7)
                    let total = planned[i..<min(count, i + length)].reduce(0) { $0 + $1.0 }
                    let bare = kind == 0 ? f.contains(.bareCueOut) && (!f.contains(.cueOut) || rng.chance(50)) : false
                    let hosts = ["https://ads.adserver.example.net/pod", "https://ssai.other-origin.example.org/v"]
                    event = (kind, length - 1, total, ms, kind == 1 ? rng.chance(50) : bare, rng.pick(hosts))
                    isAd = true
                    switch kind {
                    case 0:
                        let seconds = LiveSequence.decimal(total)
                        tags.append(
                            bare
                                ? "#EXT-X-CUE-OUT"
                                : rng.chance(70)
                                    ? "#EXT-X-CUE-OUT:\(seconds)"
                                    : "#EXT-X-CUE-OUT:DURATION=\(seconds)")
                    case 1:
                        if event?.bare == true { tags.append("#EXT-X-DISCONTINUITY") }
                        tags.append(
                            "#EXT-X-DATERANGE:ID=\"stitched-ad-\(n)\",CLASS=\"twitch-stitched-ad\","
                                + "START-DATE=\"\(LiveSequence.date(time))\",DURATION=\(LiveSequence.decimal(total))")
                    default:
                        tags.append("#EXT-X-DISCONTINUITY")
                        host = event?.host
                    }
                }
            }
            // Content features.
            if !isAd, event == nil {
                if f.contains(.discontinuity), rng.chance(4) {
                    tags.append("#EXT-X-DISCONTINUITY")
                    if f.contains(.map), rng.chance(50) {
                        mapVersion += 1
                        mapLine = "#EXT-X-MAP:URI=\"init_\(mapVersion).mp4\""
                        tags.append(mapLine ?? "")
                    }
                }
                if f.contains(.dateRanges), rng.chance(4) {
                    tags.append(
                        "#EXT-X-DATERANGE:ID=\"chapter-\(n)\",CLASS=\"com.example.chapter\","
                            + "START-DATE=\"\(LiveSequence.date(time))\",DURATION=120.0")
                }
            }
            if f.contains(.keys), i % keyEvery == 0 {
                keyNumber += 1
                let keyURI = keyRelative ? "keys/\(keyNumber).key" : "https://keys.example.com/k/\(keyNumber)?sig=ab"
                var line = "#EXT-X-KEY:METHOD=AES-128,URI=\"\(keyURI)\""
                if keyIV {
                    let hex = String(UInt64(truncatingIfNeeded: n &* 0x9E37_79B9), radix: 16)
                    line += ",IV=0x" + String(repeating: "0", count: 32 - hex.count) + hex
                }
                keyLine = line
                tags.append(line)
            }
            let discontinuitiesBefore = discontinuities
            discontinuities += tags.filter { $0 == "#EXT-X-DISCONTINUITY" }.count
            let dateTime = "#EXT-X-PROGRAM-DATE-TIME:\(LiveSequence.date(time))"
            if f.contains(.programDateTime), !pdtEveryFour || i % 4 == 0 || tags.contains("#EXT-X-DISCONTINUITY") {
                tags.append(dateTime)
            }
            if f.contains(.comments), rng.chance(8) { tags.insert(rng.pick(["# origin note", "##x"]), at: 0) }
            if f.contains(.blankLines), rng.chance(8) { tags.insert("", at: rng.int(0...tags.count)) }
            var title = ""
            if f.contains(.titles) {
                if titleStyle == 0 {
                    title = isAd ? "Amazon|\(n)" : "live"
                } else if rng.chance(10) {
                    title = rng.pick(["news", "Episode 3", "live now"])
                }
            }
            var line = host.map { "\($0)/\(n)/\(i % 5).\(ext)" } ?? uri(n)
            if f.contains(.leadingBlanks), rng.chance(30) { line = rng.pick([" ", "  "]) + line }
            stream.append(
                Segment(
                    tags: tags, milliseconds: ms, duration: text, title: title, uri: line, key: keyLine, map: mapLine,
                    dateTime: dateTime, discontinuitiesBefore: discontinuitiesBefore, crlfBits: rng.next(),
                    isAd: isAd))
            time += ms
            i += 1
        }
    }

    // MARK: The windows

    private mutating func generatePolls() {
        let f = features
        let pollCount = rng.int(30...80)
        var size = rng.int(5...40)
        var start = rng.int(0...40)
        var sequenceBase = rng.int(0...2_000_000)
        // The stream holds 40 + 80 x 3 + 40 segments past the last forward jump's end, which is below 250.
        let limit = stream.count - 50
        for p in 0..<pollCount {
            let previous = (start: start, end: start + size)
            var disturbed = false
            if p > 0 {
                let r = rng.int(0...99)
                if f.contains(.jumps), r < 5 {
                    disturbed = true
                    let back = rng.chance(40)
                    let delta = rng.int(8...60)
                    if rng.chance(30) {
                        // The media sequence restarts (an encoder restart): same URIs, new numbers.
                        sequenceBase = rng.int(0...20) - start
                        events.resets += 1
                    } else if back, start >= delta {
                        start -= delta
                        events.jumpsBack += 1
                    } else if start + size + delta < limit - 300 {
                        start += delta
                        events.jumpsForward += 1
                    }
                } else if f.contains(.repeats), r < 12 {
                    events.repeats += 1
                } else if r < 27, size < 40 {
                    size += rng.int(1...min(3, 40 - size))
                    events.appendOnly += 1
                } else if r < 40, size > 5 {
                    let d = rng.int(1...min(3, size - 5))
                    start += d
                    size -= d
                    events.dropOnly += 1
                } else {
                    start += rng.int(0...3)
                }
                if f.contains(.rewrites), rng.chance(7) {
                    let index = start + rng.int(0...(size - 1))
                    switch rng.int(0...4) {
                    case 0: stream[index].uri += stream[index].uri.contains("?") ? "&v=2" : "?v=2"
                    case 1:
                        stream[index].milliseconds += 1
                        stream[index].duration = LiveSequence.decimal(stream[index].milliseconds)
                    case 2: stream[index].title = stream[index].title.isEmpty ? "fixed" : ""
                    case 3: stream[index].tags.insert("#EXT-X-CUE-OUT:4.000", at: 0)
                    default: stream[index].tags = []
                    }
                    events.rewrites += 1
                    disturbed = true
                }
            }
            windowSizes.append(size)
            if stream[start].tags.contains(where: { $0.hasPrefix("#EXT-X-CUE-OUT") || $0.contains("stitched-ad-") }) {
                events.markersAtStart += 1
            }
            let poll = render(start: start, size: size, mediaSequence: max(0, sequenceBase + start))
            if let last = polls.last {
                let end = start + size
                if poll == last {
                    repeatedPolls += 1
                } else if !disturbed, start >= previous.start, start < previous.end, end >= previous.end,
                    !stream[previous.end - 1].isAd, stream[previous.end..<end].allSatisfy({ $0.isPlain && !$0.isAd })
                {
                    eligiblePolls += 1
                }
            }
            polls.append(poll)
        }
    }

    private func render(start: Int, size: Int, mediaSequence: Int) -> [UInt8] {
        var out = ""
        var headerLine = 0
        func emit(_ line: String, crlf: Bool) {
            out += line
            out += crlf ? "\r\n" : "\n"
        }
        func header(_ line: String) {
            emit(line, crlf: lineEndings == 1 || (lineEndings == 2 && headerCRLF >> UInt64(headerLine % 64) & 1 == 1))
            headerLine += 1
        }
        let first = stream[start]
        header("#EXTM3U")
        header("#EXT-X-VERSION:\(features.contains(.map) ? 7 : 3)")
        if features.contains(.independentSegments), headerOrder { header("#EXT-X-INDEPENDENT-SEGMENTS") }
        header("#EXT-X-TARGETDURATION:\(targetDuration)")
        header("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)")
        if features.contains(.discontinuitySequence) {
            header("#EXT-X-DISCONTINUITY-SEQUENCE:\(first.discontinuitiesBefore)")
        }
        if features.contains(.independentSegments), !headerOrder { header("#EXT-X-INDEPENDENT-SEGMENTS") }
        for index in start..<(start + size) {
            let segment = stream[index]
            var lines: [String] = []
            if index == start, redeclare {
                if let key = segment.key, !segment.tags.contains(key) { lines.append(key) }
                if let map = segment.map, !segment.tags.contains(map) { lines.append(map) }
            }
            lines += segment.tags
            if index == start, redeclare, features.contains(.programDateTime),
                !segment.tags.contains(segment.dateTime)
            {
                lines.append(segment.dateTime)
            }
            lines.append("#EXTINF:\(segment.duration),\(segment.title)")
            lines.append(segment.uri)
            for (n, line) in lines.enumerated() {
                emit(line, crlf: lineEndings == 1 || (lineEndings == 2 && segment.crlfBits >> UInt64(n % 64) & 1 == 1))
            }
        }
        return Array(out.utf8)
    }
}
