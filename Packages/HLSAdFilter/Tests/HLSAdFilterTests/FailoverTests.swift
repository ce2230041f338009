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

    /// Poll `first` (a window of `window` 10 s segments) of a stream from `live/main/` whose segments in `other`
    /// come from `backup/feed/`, a discontinuity wherever the path changes.
    static func poll(_ first: Int, window: Int, other: Range<Int>) -> String {
        var text = MediaPlaylistText.window(
            first: first, count: window, targetDuration: 10, duration: "10.000",
            uri: { "https://cdn.example.com/\(other.contains($0) ? "backup/feed" : "live/main")/\($0).ts" },
            tags: { $0 == other.lowerBound || $0 == other.upperBound ? "#EXT-X-DISCONTINUITY\n" : "" })
        let passed = [other.lowerBound, other.upperBound].filter { $0 < first }.count
        if passed > 0 { text.header = "#EXT-X-DISCONTINUITY-SEQUENCE:\(passed)\n" }
        return text.text
    }

    /// Each poll's slated media sequence numbers, one poll per segment from `polls`.
    static func slated(_ polls: ClosedRange<Int>, window: Int, other: Range<Int>) throws -> [Int: [Int]] {
        var filter = LiveAdFilter()
        var out: [Int: [Int]] = [:]
        for first in polls {
            let result = filter.filter(try Playlist(poll(first, window: window, other: other)), url: url)
            out[first] = zip(result.playlist.media(url: url).segments, result.decisions).filter { $0.1.isAd }.map {
                Int($0.0.mediaSequence)
            }
        }
        return out
    }

    /// A failover at 10 for good, in a 60 s window: slated from the poll where 10 reaches the live edge, through the
    /// polls whose window is all failover (before, they turned content as soon as the content left the window),
    /// until it has lasted past 300 s: the window at 34 holds 34-39, 240 s after 10 began plus the anchor's 10 s,
    /// and 60 s more; from then on content, and never slated again.
    @Test func aFailoverForGoodIsSlatedUntilItOutlastsTheLongestPod() throws {
        let window = 6
        let result = try Self.slated(0...60, window: window, other: 10..<1000)
        for first in 0...60 {
            let inWindow = Array(first..<(first + window))
            let expected = (5...33).contains(first) ? inWindow.filter { $0 >= 10 } : []
            #expect(result[first] == expected, "poll \(first)")
        }
    }

    /// A 120 s pod on another path (10-21) in a 60 s window, then content from the content's path again: slated at
    /// every poll that shows it, the polls whose window is all pod too, and content once it ends.
    @Test func aPodLongerThanTheWindowKeepsItsSlates() throws {
        let window = 6
        let result = try Self.slated(0...30, window: window, other: 10..<22)
        for first in 0...30 {
            let expected = Array(first..<(first + window)).filter { (10..<22).contains($0) }
            #expect(result[first] == expected, "poll \(first)")
        }
    }
}
