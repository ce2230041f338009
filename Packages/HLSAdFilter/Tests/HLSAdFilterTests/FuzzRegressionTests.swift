import Foundation
import HLSPlaylist
import Testing

@testable import HLSAdFilter

/// The inputs the ad-filter fuzzer (Tests/Fuzz/Sources/AdFilterFuzzer) found failing, replayed with its checks:
/// NUL-separated polls of one live playlist; one decision per segment; the live state survives its text form.
@Suite struct FuzzRegressionTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../../Tests/Fuzz/Crashers/AdFilterFuzzer").standardized

    static var inputs: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test func crashersAreKept() {
        #expect(!Self.inputs.isEmpty, "no inputs in \(Self.folder.path)")
    }

    @Test(arguments: inputs) func replay(name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Self.folder.appendingPathComponent(name)))
        var limits = PlaylistLimits()
        limits.maxLineLength = 4096
        var live = LiveAdFilter()
        let url = "https://cdn.example.com/live/../live/index.m3u8?token=1"
        for poll in bytes.split(separator: 0, maxSplits: 8, omittingEmptySubsequences: false) {
            guard let playlist = try? Playlist(bytes: Array(poll), limits: limits), playlist.kind == .media else {
                continue
            }
            let segments = playlist.media(url: url).segments.count
            #expect(AdFilter().cleanVOD(playlist, url: url).decisions.count == segments)
            let result = live.filter(playlist, url: url)
            #expect(result.decisions.count == segments)
            let restored = try #require(LiveAdFilter.State(serialized: live.state.serialized))
            #expect(restored.lastFirstSequence == live.state.lastFirstSequence)
            #expect(restored.lastContent == live.state.lastContent)
            #expect(restored.lastContentMap == live.state.lastContentMap)
            #expect(restored.discontinuitiesBefore == live.state.discontinuitiesBefore)
            #expect(restored.insertedDiscontinuities == live.state.insertedDiscontinuities)
            #expect(restored.slates == live.state.slates)
            for (key, value) in live.state.decisions {
                #expect(restored.decisions[key] == value, "decision \(key)")
            }
            #expect(restored == live.state)
        }
    }
}

/// The state's text form: every character of a URI or reason survives it (the fuzzer's first find: a tab in a URI
/// came back as a space, so the next run took a remembered segment for a new one), and version 1 files still read.
@Suite struct StateTextTests {
    @Test func tabsNewlinesAndBackslashesReadBack() throws {
        var state = LiveAdFilter.State()
        state.lastContent = LiveAdFilter.ContentAnchor(mediaSequence: 7, uri: "http://h/a\tb\\n\nc\r.ts", duration: 2)
        state.lastContentMap = "init\\t.mp4"
        let text = state.serialized
        #expect(text.hasPrefix("TSPLAYER-ADFILTER-STATE 2\n"))
        #expect(text.split(separator: "\n").count == 3)
        let restored = try #require(LiveAdFilter.State(serialized: text))
        #expect(restored == state)
    }

    @Test func versionOneIsReadAsWritten() throws {
        let restored = try #require(
            LiveAdFilter.State(serialized: "TSPLAYER-ADFILTER-STATE 1\nF\t3\nC\t4\t2.0\thttp://h/a\\tb.ts\n"))
        #expect(restored.lastFirstSequence == 3)
        #expect(restored.lastContent?.uri == "http://h/a\\tb.ts")
        #expect(LiveAdFilter.State(serialized: "TSPLAYER-ADFILTER-STATE 3\n") == nil)
    }
}

/// Durations in decision reasons (the fuzzer's third find: a CUE-OUT DURATION of 10^41 s trapped converting its
/// milliseconds to Int).
@Suite struct ReasonDurationTests {
    @Test func durationsAreWrittenWithAtMostThreeDecimals() {
        #expect(format(2) == "2")
        #expect(format(12.345) == "12.345")
        #expect(format(6.0064) == "6.006")
        #expect(format(0.5) == "0.5")
        #expect(format(-0.5) == "-0.5")
        #expect(format(-2.25) == "-2.25")
        #expect(format(.nan) == "0")
    }

    @Test func durationsBeyondIntMillisecondsDoNotTrap() {
        #expect(format(5.5e40) == "5.5e+40")
        #expect(format(-1e300) == "-1e+300")
        #expect(format(9.2e15) == "9200000000000000")
    }
}
