import HLSAdFilter
import HLSPlaylist
import Testing

@Suite struct LiveTests {
    static let url = "https://cdn.example.com/live/index.m3u8"

    /// Runs the polls through one filter (and through a second one whose state is written to text and read back
    /// between polls), checking every invariant on each output and the live lint rules on each successive pair.
    @discardableResult
    func check(_ origin: LiveOrigin, polls: [UInt64], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [AdFilterResult]
    {
        var filter = LiveAdFilter()
        var restarted = LiveAdFilter()
        var previous: Playlist?
        var results: [AdFilterResult] = []
        // fMP4: each segment's discontinuity sequence number, as first published (it must never change).
        var published: [UInt64: UInt64] = [:]
        let start = polls.first ?? 0
        for first in polls {
            let input = try Playlist(origin.poll(first))
            #expect(lintErrors(input, url: Self.url).isEmpty, "origin poll \(first)", sourceLocation: sourceLocation)
            let result = filter.filter(input, url: Self.url)
            results.append(result)
            let out = result.playlist
            let source = input.media(url: Self.url)
            let media = out.media(url: Self.url)
            let context = "poll \(first):\n\(out.text)"
            // Same sequence numbers, same count, one decision per segment, ads exactly where the origin put them.
            #expect(media.mediaSequence == source.mediaSequence, sourceLocation: sourceLocation)
            if !origin.fragmented {
                #expect(media.discontinuitySequence == source.discontinuitySequence, sourceLocation: sourceLocation)
            }
            #expect(media.segments.count == source.segments.count, sourceLocation: sourceLocation)
            #expect(result.decisions.count == source.segments.count, sourceLocation: sourceLocation)
            for (segment, decision) in zip(media.segments, result.decisions) {
                let m = segment.mediaSequence
                #expect(decision.isAd == origin.ads.contains(m), "msn \(m) \(context)", sourceLocation: sourceLocation)
                if origin.fragmented {
                    // A discontinuity wherever slates start or content comes back (after the first poll's start),
                    // slates on their own init section, the content's re-declared after them.
                    let boundary = m > start && origin.ads.contains(m) != origin.ads.contains(m - 1)
                    #expect(
                        segment.discontinuity == (boundary || origin.discontinuity(m)), "disc \(m) \(context)",
                        sourceLocation: sourceLocation)
                    let added = (start + 1..<max(start + 1, m + 1)).filter {
                        origin.ads.contains($0) != origin.ads.contains($0 - 1) && !origin.discontinuity($0)
                    }.count
                    let sourceSequence = source.segments.first { $0.mediaSequence == m }?.discontinuitySequence ?? 0
                    #expect(
                        segment.discontinuitySequence == sourceSequence + UInt64(added), "dseq \(m) \(context)",
                        sourceLocation: sourceLocation)
                    if let earlier = published[m] {
                        #expect(segment.discontinuitySequence == earlier, sourceLocation: sourceLocation)
                    }
                    published[m] = segment.discontinuitySequence
                    let map = decision.isAd ? "https://cdn.example.com/live/slate/init.mp4" : origin.initURI
                    #expect(segment.map?.uri == map, "map of \(m) \(context)", sourceLocation: sourceLocation)
                }
                if decision.isAd {
                    let ext = origin.fragmented ? "m4s" : "ts"
                    #expect(segment.rawURI == "slate/\(m).\(ext)", sourceLocation: sourceLocation)
                    #expect(segment.keys.isEmpty, "key scope open over slate \(m)", sourceLocation: sourceLocation)
                    #expect(result.slates.contains { $0.mediaSequence == m }, sourceLocation: sourceLocation)
                } else {
                    #expect(segment.uri == origin.uri(m), sourceLocation: sourceLocation)
                    let sourceKeys = source.segments.first { $0.mediaSequence == m }?.keys.map(\.uri) ?? []
                    #expect(segment.keys.map(\.uri) == sourceKeys, "keys of \(m)", sourceLocation: sourceLocation)
                }
            }
            for line in out.lines {
                let k = line.knownTag
                #expect(k?.scope != .adMarker, sourceLocation: sourceLocation)
                #expect(k != .part && k != .preloadHint && k != .partInf, sourceLocation: sourceLocation)
                if k == .serverControl { #expect(line.tag?.attributes?["CAN-BLOCK-RELOAD"] == nil) }
            }
            #expect(
                tagsBetweenEXTINFAndURI(out).isEmpty, "\(tagsBetweenEXTINFAndURI(out))\n\(context)",
                sourceLocation: sourceLocation)
            let errors = lintErrors(out, previous: previous, url: Self.url)
            #expect(errors.isEmpty, "\(errors)\n\(context)", sourceLocation: sourceLocation)
            // A filter restarted from the serialized state gives the same output.
            let text = restarted.state.serialized
            let state = try #require(LiveAdFilter.State(serialized: text), sourceLocation: sourceLocation)
            #expect(state == restarted.state, sourceLocation: sourceLocation)
            restarted = LiveAdFilter(state: state)
            #expect(
                restarted.filter(input, url: Self.url).playlist.write() == out.write(), sourceLocation: sourceLocation)
            previous = out
        }
        return results
    }

    @Test func aBreakEntersFillsAndLeavesTheWindow() throws {
        try check(LiveOrigin(ads: Set(8...12)), polls: [3, 5, 7, 9, 11, 13, 15])
    }

    @Test func aBareCueOutIsRememberedAfterItLeavesTheWindow() throws {
        let results = try check(LiveOrigin(ads: Set(8...12), marker: .bareCueOut), polls: [4, 7, 10, 12, 14])
        // In the poll starting at 10 the CUE-OUT (on 8) is gone; 10...12 are still ads, decided by the state.
        #expect(results[2].decisions.prefix(3).allSatisfy { $0.isAd && $0.rule == .cueOut })
    }

    @Test func backToBackBreaks() throws {
        let origin = LiveOrigin(ads: Set(6...9))
        try check(origin, polls: [2, 4, 6, 8, 10])
        var split = LiveOrigin(ads: [6, 7, 9, 10])
        split.windowSize = 5
        try check(split, polls: [2, 4, 6, 8, 10])
    }

    @Test func encryptedWithKeyRotation() throws {
        var origin = LiveOrigin(ads: Set(7...10))
        origin.keyRotation = 3
        let results = try check(origin, polls: [2, 4, 6, 8, 10, 12])
        // Slates name the anchor's key and IV (the media sequence number: the origin gives none), so a slate maker
        // can decrypt the anchor; 6 is the anchor, under key 2 (6 / 3).
        let slates = results.flatMap(\.slates)
        #expect(!slates.isEmpty)
        #expect(slates.allSatisfy { $0.anchorKeyURI == "https://keys.example.com/k2.key" })
        #expect(slates.allSatisfy { $0.anchorIV == [UInt8](repeating: 0, count: 15) + [6] })
    }

    @Test func lowLatencyPartsAndHintsAreRemoved() throws {
        var origin = LiveOrigin(ads: Set(8...10))
        origin.lowLatency = true
        try check(origin, polls: [4, 5, 6, 8, 10])
    }

    @Test func dateRangeBreaksKeepProgramDateTime() throws {
        try check(LiveOrigin(ads: Set(8...11), marker: .dateRange), polls: [4, 6, 8, 10, 12])
    }

    @Test func serverSideInsertionByOriginChange() throws {
        let results = try check(LiveOrigin(ads: Set(8...10), marker: .originChange), polls: [3, 5, 7, 9, 11])
        #expect(results.flatMap(\.decisions).filter(\.isAd).allSatisfy { $0.rule == .originChange })
    }

    /// A pod of several ads from different creative hosts, each between discontinuities, is one break: decided as
    /// ads at the live edge (provisionally) and kept so once content resumes.
    @Test func serverSideInsertedPodsAcrossPolls() throws {
        let results = try check(LiveOrigin(ads: Set(8...13), marker: .pods), polls: [3, 5, 7, 9, 11, 13, 15])
        #expect(results.flatMap(\.decisions).filter(\.isAd).allSatisfy { $0.rule == .originChange })
    }

    /// A DAI-style pod on the content's own host under another path (`../pod/8/ad/<n>/`, three two-segment ads
    /// between discontinuities), with the window sliding across it one segment per poll (and two): slates from the
    /// poll where the pod's first segment reaches the live edge, through the polls whose window is all pod, to the
    /// polls after content came back; never a content segment slated. Each poll's decisions are asserted by
    /// `check` against the origin's ads.
    @Test(arguments: [UInt64(1), 2]) func daiPodOnTheContentsHostAtTheLiveEdge(step: UInt64) throws {
        let origin = LiveOrigin(ads: Set(8...13), marker: .daiPod)
        let polls = Array(stride(from: UInt64(2), through: 18, by: Int(step)))
        let results = try check(origin, polls: polls)
        #expect(results.flatMap(\.decisions).filter(\.isAd).allSatisfy { $0.rule == .pathChange })
        // The first poll that shows the pod's first segment (at the live edge) already slates it.
        let edge = try #require(results.firstIndex { $0.decisions.contains(where: \.isAd) })
        let last = polls[edge] + origin.windowSize - 1
        #expect(edge == polls.firstIndex { $0 + origin.windowSize - 1 >= 8 })
        #expect(results[edge].slates.map(\.mediaSequence) == Array(8...last))
        // Every ad sequence number got its slate, once, on the same anchor: the last content segment, 7.
        var filter = LiveAdFilter()
        var slots: [UInt64: SlateSlot] = [:]
        for first in polls {
            for slot in filter.filter(try Playlist(origin.poll(first)), url: Self.url).slates {
                if let earlier = slots[slot.mediaSequence] { #expect(earlier == slot) }
                slots[slot.mediaSequence] = slot
            }
        }
        #expect(Set(slots.keys) == Set(8...13))
        #expect(slots.values.allSatisfy { $0.anchorMediaSequence == 7 })
    }

    /// Path changes that are not pods stay content in every poll: a new dated directory after a discontinuity
    /// (the content's series moving on, first seen at the live edge) and a mirror path without a discontinuity.
    @Test func contentPathChangesAtTheLiveEdgeStayContent() throws {
        let results = try check(LiveOrigin(ads: [], marker: .pathDecoys), polls: Array(2...16))
        #expect(results.allSatisfy { $0.decisions.allSatisfy { !$0.isAd } && $0.slates.isEmpty })
    }

    @Test func aWindowOfOnlyAdsIsStillAValidAdvancingPlaylist() throws {
        let results = try check(LiveOrigin(ads: Set(4...30)), polls: [2, 6, 8, 10, 12])
        for r in results.dropFirst() {
            #expect(r.decisions.allSatisfy { $0.isAd })
            #expect(!r.playlist.media().segments.isEmpty)
        }
    }

    @Test func slatesAreAnchoredOnTheLastContentSegment() throws {
        var filter = LiveAdFilter()
        let origin = LiveOrigin(ads: Set(8...10))
        _ = filter.filter(try Playlist(origin.poll(3)), url: Self.url)
        let result = filter.filter(try Playlist(origin.poll(5)), url: Self.url)
        let slates = result.slates
        #expect(slates.map(\.mediaSequence) == [8, 9, 10])
        #expect(slates.allSatisfy { $0.anchorMediaSequence == 7 })
        #expect(slates.map(\.offsetFromAnchor) == [4, 8, 12])
        #expect(filter.slate(9)?.duration == 4)
    }

    @Test func fragmentedMP4BreakEntersFillsAndLeavesTheWindow() throws {
        var origin = LiveOrigin(ads: Set(8...10))
        origin.fragmented = true
        let results = try check(origin, polls: [3, 5, 7, 9, 11, 13])
        #expect(results.allSatisfy { $0.warnings.isEmpty })
        // The slates carry the content's init section as their anchor's, for the decode time.
        let slates = results.flatMap(\.slates)
        #expect(!slates.isEmpty)
        #expect(slates.allSatisfy { $0.isFragmentedMP4 && $0.anchorMapURI == origin.initURI })
        #expect(slates.allSatisfy { $0.anchorMediaSequence == 7 })
    }

    @Test func fragmentedMP4BackToBackBreaksAndKeyRotation() throws {
        var origin = LiveOrigin(ads: [6, 7, 9, 10, 11])
        origin.fragmented = true
        origin.windowSize = 5
        origin.keyRotation = 3
        try check(origin, polls: [2, 4, 5, 7, 9, 11])
    }

    @Test func fragmentedMP4WithOriginDiscontinuities() throws {
        // The origin marks its own discontinuities around the ads: none is added, the sequence stays the origin's.
        var origin = LiveOrigin(ads: Set(8...10), marker: .originChange)
        origin.fragmented = true
        let results = try check(origin, polls: [3, 5, 7, 9, 11, 12])
        for r in results {
            #expect(
                r.playlist.media(url: Self.url).discontinuitySequence
                    == (try Playlist(origin.poll(r.decisions[0].mediaSequence))).media().discontinuitySequence)
        }
    }

    @Test func fragmentedMP4WindowOfOnlyAds() throws {
        var origin = LiveOrigin(ads: Set(4...30))
        origin.fragmented = true
        let results = try check(origin, polls: [2, 6, 8, 10, 12])
        for r in results.dropFirst() {
            #expect(r.decisions.allSatisfy { $0.isAd })
        }
    }

    @Test func aSequenceThatGoesBackResetsTheState() throws {
        var filter = LiveAdFilter()
        let origin = LiveOrigin(ads: Set(8...9))
        _ = filter.filter(try Playlist(origin.poll(6)), url: Self.url)
        let result = filter.filter(try Playlist(origin.poll(0)), url: Self.url)
        #expect(result.warnings.contains { $0.contains("reset") })
    }
}
