import HLSAdFilter
import HLSPlaylist
import TestSupport
import Testing

/// Live pods on the content's own host under another path that last longer than the window: the filter slates them
/// from the live edge and keeps its slates while the pod lasts, counting the time it lasted before the window, and
/// a path change that outlasts the longest pod (300 s) turns out content: a failover to a path outside the
/// content's series for good.
@Suite struct FailoverTests {
    static let url = "https://cdn.example.com/live/main/index.m3u8"

    /// Poll `first` (a window of `window` segments of `seconds` each) of a stream from `live/main/` whose segments
    /// in `other` come from `backup/feed/`, a discontinuity wherever the path changes.
    static func poll(_ first: Int, window: Int, seconds: Int, other: Range<Int>) -> String {
        var text = MediaPlaylistText.window(
            first: first, count: window, targetDuration: seconds, duration: "\(seconds).000",
            uri: { "https://cdn.example.com/\(other.contains($0) ? "backup/feed" : "live/main")/\($0).ts" },
            tags: { $0 == other.lowerBound || $0 == other.upperBound ? "#EXT-X-DISCONTINUITY\n" : "" })
        let passed = [other.lowerBound, other.upperBound].filter { $0 < first }.count
        if passed > 0 { text.header = "#EXT-X-DISCONTINUITY-SEQUENCE:\(passed)\n" }
        return text.text
    }

    /// Each poll's slated media sequence numbers, one poll per segment from `polls`.
    static func slated(_ polls: ClosedRange<Int>, window: Int, seconds: Int, other: Range<Int>) throws -> [Int: [Int]] {
        var filter = LiveAdFilter()
        var out: [Int: [Int]] = [:]
        for first in polls {
            let text = poll(first, window: window, seconds: seconds, other: other)
            let result = filter.filter(try Playlist(text), url: url)
            out[first] = zip(result.playlist.media(url: url).segments, result.decisions).filter { $0.1.isAd }.map {
                Int($0.0.mediaSequence)
            }
        }
        return out
    }

    /// A failover for good in a 60 s window of 2, 6 or 10 s segments, starting 4 segments after the first poll's
    /// window (so that window is all content): slated from the poll where it reaches the live edge (poll 5),
    /// through the polls whose window is all failover, until it has lasted past 300 s whatever the segment duration
    /// (with 2 s segments it used to turn content after 64 segments, 128 s, when the last remembered content
    /// decision was forgotten). The last slated poll is the one whose window ends exactly 300 s after the failover
    /// began: 34 for 10 s, 54 for 6 s, 154 for 2 s; the anchor (the segment before it) is not counted, so it is not
    /// one segment early. From the next poll on, content, and never slated again.
    @Test(arguments: [2, 6, 10]) func aFailoverForGoodIsSlatedUntilItOutlastsTheLongestPod(seconds: Int) async throws {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        try await blocking {
            let window = 60 / seconds
            let start = window + 4
            let lastSlated = 300 / seconds + 4
            #expect(lastSlated == [2: 154, 6: 54, 10: 34][seconds])
            let polls = 0...(lastSlated + window + 10)
            let result = try Self.slated(polls, window: window, seconds: seconds, other: start..<100_000)
            for first in polls {
                let inWindow = Array(first..<(first + window))
                let expected = (5...lastSlated).contains(first) ? inWindow.filter { $0 >= start } : []
                #expect(result[first] == expected, "\(seconds) s segments, poll \(first)")
            }
        }
    }

    /// A 120 s pod on another path in a 60 s window of 2, 6 or 10 s segments (from 4 segments after the first
    /// poll's window), then content from the content's path again: slated at every poll that shows it, the polls
    /// whose window is all pod too, and content once it ends.
    @Test(arguments: [2, 6, 10]) func aPodLongerThanTheWindowKeepsItsSlates(seconds: Int) throws {
        let window = 60 / seconds
        let pod = (window + 4)..<(window + 4 + 120 / seconds)
        let polls = 0...(pod.upperBound + window)
        let result = try Self.slated(polls, window: window, seconds: seconds, other: pod)
        for first in polls {
            let expected = Array(first..<(first + window)).filter { pod.contains($0) }
            #expect(result[first] == expected, "\(seconds) s segments, poll \(first)")
        }
    }

    /// After an anchor of another duration (a 4 s content segment before 6 s pod segments, in a 60 s window): a
    /// pod of 300 s exactly (10-59, then content again) is slated to its end, and a failover for good from 10 is
    /// slated until the poll whose window ends 300 s after it began (50: 50-59), the anchor's time not counted.
    @Test func thePodsTimeLeavesOutTheAnchor() throws {
        for (other, lastSlated) in [(10..<60, 59), (10..<100_000, 50)] {
            var filter = LiveAdFilter()
            for first in 0...70 {
                var text = MediaPlaylistText.window(
                    first: first, count: 10, targetDuration: 6, duration: "6.000",
                    uri: { "https://cdn.example.com/\(other.contains($0) ? "backup/feed" : "live/main")/\($0).ts" },
                    tags: { $0 == other.lowerBound || $0 == other.upperBound ? "#EXT-X-DISCONTINUITY\n" : "" })
                for i in text.segments.indices where text.segments[i].uri.hasSuffix("/9.ts") {
                    text.segments[i].duration = "4.000"
                }
                let passed = [other.lowerBound, other.upperBound].filter { $0 < first }.count
                if passed > 0 { text.header = "#EXT-X-DISCONTINUITY-SEQUENCE:\(passed)\n" }
                let result = filter.filter(try Playlist(text.text), url: Self.url)
                let slated = zip(result.playlist.media(url: Self.url).segments, result.decisions).filter {
                    $0.1.isAd
                }.map { Int($0.0.mediaSequence) }
                let window = Array(first..<(first + 10))
                let expected = first <= lastSlated ? window.filter { other.contains($0) } : []
                #expect(slated == expected, "\(other), poll \(first)")
            }
        }
    }
}
