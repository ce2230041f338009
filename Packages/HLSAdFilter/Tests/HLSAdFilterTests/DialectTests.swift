import Foundation
import HLSAdFilter
import HLSPlaylist
import Testing

@Suite struct DialectTests {
    @Test(arguments: Fixtures.names)
    func decisionsMatchTheFixture(_ name: String) throws {
        let playlist = try Fixtures.playlist(name)
        let expected = try #require(Fixtures.expectation(playlist, "ADS"), "\(name) has no #EXPECT-ADS")
        let rule = try #require(Fixtures.expectation(playlist, "RULE"))
        let decisions = AdFilter().explain(playlist, url: "https://origin.example.com/live/index.m3u8")
        #expect(pattern(decisions) == expected, "\(name)")
        for d in decisions {
            if d.isAd {
                #expect(d.rule.id == rule, "\(name) segment \(d.mediaSequence): \(d.reason)")
                #expect(d.breakID != nil)
                #expect(!d.reason.isEmpty)
            } else {
                #expect(d.rule == .content)
            }
        }
    }

    @Test(arguments: Fixtures.names)
    func vodCleaningKeepsContentAndLintsClean(_ name: String) throws {
        let playlist = try Fixtures.playlist(name)
        let url = "https://origin.example.com/live/index.m3u8"
        let result = AdFilter().cleanVOD(playlist, url: url)
        let before = playlist.media(url: url)
        let after = result.playlist.media(url: url)
        let keptURIs = zip(before.segments, result.decisions).filter { !$0.1.isAd }.map(\.0.uri)
        #expect(after.segments.map(\.uri) == keptURIs, "\(name)")
        #expect(lintErrors(result.playlist, url: url).isEmpty, "\(name): \(lintErrors(result.playlist, url: url))")
        // No ad marker survives, and no ad or interstitial DATERANGE.
        for line in result.playlist.lines {
            #expect(line.knownTag?.scope != .adMarker, "\(name): \(line.text)")
            if let dr = line.tag, dr.known == .dateRange, let a = dr.attributes {
                #expect(a["SCTE35-OUT"] == nil && a["SCTE35-CMD"].map { _ in name == "decoys.m3u8" } ?? true)
                #expect(a.quotedString("CLASS") != "com.apple.hls.interstitial")
                #expect(a.quotedString("CLASS") != "twitch-stitched-ad")
            }
        }
        // A kept DATERANGE always comes with PROGRAM-DATE-TIME.
        if !after.dateRanges.isEmpty { #expect(after.segments.first?.programDateTime != nil) }
    }

    /// Recall (ad segments removed of all true ad segments) and precision (true ads of all segments removed) over
    /// every fixture, decoys included, counted from what VOD cleaning keeps against each fixture's `#EXPECT-ADS`;
    /// also the share of content kept. All three must be 1.00.
    @Test func recallAndPrecisionOverEveryFixture() throws {
        var truePositives = 0
        var falsePositives = 0
        var falseNegatives = 0
        var contentKept = 0
        let url = "https://origin.example.com/live/index.m3u8"
        for name in Fixtures.names {
            let playlist = try Fixtures.playlist(name)
            let expected = Array(try #require(Fixtures.expectation(playlist, "ADS")))
            let segments = playlist.media(url: url).segments
            let result = AdFilter().cleanVOD(playlist, url: url)
            // A VOD that is all ads is left as it was (with a warning), so its segments count as not removed.
            // The cleaned segments are renumbered: match them to the input's in order, by URI and byte range.
            let output = result.playlist.media(url: url).segments
            var next = 0
            #expect(expected.count == segments.count, "\(name)")
            for (segment, truth) in zip(segments, expected) {
                var removed = true
                if next < output.count, output[next].uri == segment.uri, output[next].byteRange == segment.byteRange {
                    removed = false
                    next += 1
                }
                switch (truth == "a", removed) {
                case (true, true): truePositives += 1
                case (true, false): falseNegatives += 1
                case (false, true): falsePositives += 1
                case (false, false): contentKept += 1
                }
            }
            #expect(next == output.count, "\(name): every output segment is an input segment, in order")
        }
        let recall = Double(truePositives) / Double(max(1, truePositives + falseNegatives))
        let precision = Double(truePositives) / Double(max(1, truePositives + falsePositives))
        let keptShare = Double(contentKept) / Double(max(1, contentKept + falsePositives))
        print(
            "ad filter over \(Fixtures.names.count) fixtures: \(truePositives + falseNegatives) ad segments, "
                + "\(contentKept + falsePositives) content segments; recall \(recall), precision \(precision), "
                + "content kept \(keptShare)")
        #expect(truePositives > 0)
        #expect(recall == 1)
        #expect(precision == 1)
        #expect(keptShare == 1)
    }

    @Test func hostPatternsMatchLabelsAndComponentsNotSubstrings() throws {
        let ads = try #require(AdHostPattern("ads."))
        #expect(ads.matches(host: "ads.example.com", path: "/x.ts"))
        #expect(!ads.matches(host: "uploads.example.com", path: "/x.ts"))
        #expect(!ads.matches(host: "adsl.example.com", path: "/x.ts"))
        let domain = try #require(AdHostPattern("doubleclick.net"))
        #expect(domain.matches(host: "pubads.g.doubleclick.net", path: "/"))
        #expect(!domain.matches(host: "notdoubleclick.net", path: "/"))
        let path = try #require(AdHostPattern("/ads/"))
        #expect(path.matches(host: "cdn.example.com", path: "/ads/1.ts"))
        #expect(!path.matches(host: "cdn.example.com", path: "/uploads/1.ts"))
        #expect(AdHostPattern("a..b") == nil)
    }

    @Test func durationHeuristicsAreOffByDefaultAndNeverAloneOnMarkedStreams() throws {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        for i in 0..<4 { text += "#EXTINF:6.000,\nc\(i).ts\n" }
        text += "#EXT-X-DISCONTINUITY\n"
        for i in 0..<3 { text += "#EXTINF:5.000,\nx\(i).ts\n" }
        text += "#EXT-X-DISCONTINUITY\n"
        for i in 4..<8 { text += "#EXTINF:6.000,\nc\(i).ts\n" }
        text += "#EXT-X-ENDLIST\n"
        let playlist = try Playlist(text)
        #expect(pattern(AdFilter().explain(playlist)) == "ccccccccccc")
        var options = AdFilterOptions()
        options.durationHeuristics = true
        let decisions = AdFilter(options: options).explain(playlist)
        #expect(pattern(decisions) == "ccccaaacccc")
        #expect(decisions[4].rule == .durationHeuristic)
        // With a marker elsewhere in the playlist, the heuristic does not run.
        let marked = try Playlist(text.replacingOccurrences(of: "c6.ts\n", with: "c6.ts\n#EXT-X-CUE-IN\n"))
        #expect(pattern(AdFilter(options: options).explain(marked)) == "ccccccccccc")
    }
}
