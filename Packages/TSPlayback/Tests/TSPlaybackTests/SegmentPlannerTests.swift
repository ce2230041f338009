import Foundation
import LoopbackHTTP
import Testing

@testable import TSPlayback

@Suite struct SegmentPlannerTests {
    /// Every keyframe layout on a small grid (keyframes at some of 8 one-second positions, each 100 bytes apart),
    /// for targets of 1 to 4 seconds, complete and still growing, against a naive model. The failure names the case.
    @Test func matchesNaiveModelOnEveryLayout() {
        for mask in 0..<256 {
            let keyframes = (0..<8).filter { mask & (1 << $0) != 0 }.map {
                SegmentPlanner.Cut(offset: UInt64($0) * 100, ticks: Int64($0) * 90_000)
            }
            for target in 1...4 {
                for complete in [true, false] {
                    let fileSize: UInt64 = 800
                    let end: Int64? = complete ? 8 * 90_000 : nil
                    let planned = SegmentPlanner.plan(
                        keyframes: keyframes, fileSize: fileSize, endTicks: end, targetDuration: Double(target))
                    let expected = Self.naive(keyframes, fileSize: fileSize, end: end, target: Int64(target))
                    guard planned == expected else {
                        Issue.record("mask \(mask) target \(target) complete \(complete): \(planned) != \(expected)")
                        return
                    }
                    // Invariants: contiguous from byte 0, positive durations, and when complete, the whole file.
                    var cursor: UInt64 = 0
                    for segment in planned {
                        #expect(segment.offset == cursor && segment.length > 0 && segment.duration > 0)
                        cursor += segment.length
                    }
                    if complete { #expect(cursor == fileSize) }
                }
            }
        }
    }

    /// The model: walk the seconds; start a new segment at a keyframe once the current one is long enough.
    static func naive(_ keyframes: [SegmentPlanner.Cut], fileSize: UInt64, end: Int64?, target: Int64)
        -> [PlannedSegment]
    {
        var starts: [(UInt64, Int64)] = [(0, 0)]
        for keyframe in keyframes where keyframe.offset > 0 {
            if let last = starts.last, keyframe.ticks - last.1 >= target * 90_000 {
                starts.append((keyframe.offset, keyframe.ticks))
            }
        }
        var result: [PlannedSegment] = []
        for i in 0..<starts.count {
            if i + 1 < starts.count {
                result.append(
                    PlannedSegment(
                        offset: starts[i].0, length: starts[i + 1].0 - starts[i].0,
                        duration: Double(starts[i + 1].1 - starts[i].1) / 90_000))
            } else if let end {
                result.append(
                    PlannedSegment(
                        offset: starts[i].0, length: fileSize - starts[i].0,
                        duration: Double(end - starts[i].1) / 90_000))
            }
        }
        return result
    }

    @Test func ignoresBrokenKeyframes() {
        let cuts = [
            SegmentPlanner.Cut(offset: 500, ticks: 900_000),
            SegmentPlanner.Cut(offset: 400, ticks: 1_800_000),  // offset goes back: ignored
            SegmentPlanner.Cut(offset: 600, ticks: 450_000),  // time goes back: ignored
            SegmentPlanner.Cut(offset: 5_000, ticks: 9_000_000),  // beyond the file: ignored
        ]
        let planned = SegmentPlanner.plan(keyframes: cuts, fileSize: 1000, endTicks: 1_000_000, targetDuration: 6)
        #expect(
            planned == [
                PlannedSegment(offset: 0, length: 500, duration: 10),
                PlannedSegment(offset: 500, length: 500, duration: 100_000.0 / 90_000),
            ])
        // A last keyframe at the very end of time joins the segment before it.
        let atEnd = SegmentPlanner.plan(
            keyframes: [SegmentPlanner.Cut(offset: 500, ticks: 900_000)], fileSize: 1000, endTicks: 900_000,
            targetDuration: 6)
        #expect(atEnd == [PlannedSegment(offset: 0, length: 1000, duration: 10)])
        // No keyframes at all: one segment, the whole file, once indexed; nothing while growing.
        #expect(
            SegmentPlanner.plan(keyframes: [], fileSize: 10, endTicks: 90_000, targetDuration: 6)
                == [PlannedSegment(offset: 0, length: 10, duration: 1)])
        #expect(SegmentPlanner.plan(keyframes: [], fileSize: 10, endTicks: nil, targetDuration: 6).isEmpty)
    }
}

@Suite(.temporaryFolders) struct PlaybackHelpersTests {
    @Test func givenSegmentsAreValidated() throws {
        let planned = try SegmentInfo.validated(
            [SegmentInfo(offset: 100, duration: 2, length: 50), SegmentInfo(offset: 0, duration: 4, length: 100)],
            fileSize: 150, path: "f.ts")
        #expect(planned.map(\.offset) == [0, 100])
        let cases: [([SegmentInfo], String)] = [
            ([SegmentInfo(offset: 0, duration: 1, length: 200)], "outside the file"),
            ([SegmentInfo(offset: 150, duration: 1, length: 1)], "outside the file"),
            ([SegmentInfo(offset: 0, duration: 1, length: 0)], "outside the file"),
            ([SegmentInfo(offset: 0, duration: 0, length: 10)], "duration"),
            ([SegmentInfo(offset: 0, duration: .nan, length: 10)], "duration"),
            // Past whole ticks in an Int64, or infinite bits per second.
            ([SegmentInfo(offset: 0, duration: 1e40, length: 10)], "duration"),
            ([SegmentInfo(offset: 0, duration: .infinity, length: 10)], "duration"),
            ([SegmentInfo(offset: 0, duration: .leastNonzeroMagnitude, length: 10)], "duration"),
            ([SegmentInfo(offset: 0, duration: 95_444, length: 10)], "duration"),
            (
                [SegmentInfo(offset: 0, duration: 1, length: 60), SegmentInfo(offset: 50, duration: 1, length: 10)],
                "overlap"
            ),
        ]
        for (segments, words) in cases {
            let error = #expect(throws: PlaybackError.self) {
                try SegmentInfo.validated(segments, fileSize: 150, path: "f.ts")
            }
            #expect(error?.code == .invalidSegment)
            #expect(error?.description.contains(words) == true, "\(segments): \(String(describing: error))")
        }
    }

    @Test func emptyAndFilelessSegmentsAreTypedErrors() throws {
        let folder = URL(fileURLWithPath: TemporaryFolders.make(prefix: "ts-folder-"))
        #expect(throws: PlaybackError.self) { try TSFolderSession(folder: folder.path, segments: []) }
        let missing = #expect(throws: PlaybackError.self) {
            try TSFolderSession(folder: folder.path, segments: [SegmentInfo(duration: 2)])
        }
        #expect(missing?.code == .missingFileField)
        let escape = #expect(throws: PlaybackError.self) {
            try TSFolderSession(folder: folder.path, segments: [SegmentInfo(duration: 2, file: "../etc/passwd")])
        }
        #expect(escape?.code == .invalidSegment)
        let empty = #expect(throws: PlaybackError.self) { try TSFolderSession(folder: folder.path) }
        #expect(empty?.code == .emptySegments)
        let file = #expect(throws: PlaybackError.self) {
            try TSPlaybackSession(tsFile: folder.path + "/none.ts", segments: [])
        }
        #expect(file?.code == .emptySegments)
        let notTS = folder.appendingPathComponent("text.ts")
        try Data("hello, this is not a transport stream".utf8).write(to: notTS)
        let garbage = #expect(throws: PlaybackError.self) { try TSPlaybackSession(tsFile: notTS.path) }
        #expect(garbage?.code == .notTransportStream)
    }

    /// A folder's playlists are made when it is opened: its bit rates come from the sizes found then, and answering
    /// them touches no file (the event loop answers them), so they stay the same after the files are gone.
    @Test func aFoldersPlaylistsAreMadeWhenItOpens() throws {
        let folder = URL(fileURLWithPath: TemporaryFolders.make(prefix: "ts-folder-"))
        try Data(count: 1_000).write(to: folder.appendingPathComponent("a.ts"))
        try Data(count: 3_000).write(to: folder.appendingPathComponent("b.ts"))
        let session = try TSFolderSession(
            folder: folder.path,
            segments: [SegmentInfo(duration: 2, file: "a.ts"), SegmentInfo(duration: 2, file: "b.ts")])
        func body(_ name: String) -> [UInt8]? {
            var request = HTTPRequest(method: .get, target: "/\(session.token.value)/\(name)")
            request.wildcardSegments = [name]
            guard case .bytes(let bytes) = session.respond(to: request).body else { return nil }
            return bytes
        }
        let master = try #require(body("master.m3u8"))
        let media = try #require(body("index.m3u8"))
        // 3,000 bytes in 2 s at the peak, 4,000 bytes in 4 s on average.
        #expect(String(decoding: master, as: UTF8.self).contains("BANDWIDTH=12000,AVERAGE-BANDWIDTH=8000"))
        #expect(String(decoding: media, as: UTF8.self).contains("a.ts"))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("a.ts"))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("b.ts"))
        #expect(body("master.m3u8") == master)
        #expect(body("index.m3u8") == media)
        #expect(session.multivariantPlaylist() == String(decoding: master, as: UTF8.self))
    }

    @Test func naturalOrderAndURIEncoding() {
        let names = ["seg10.ts", "seg2.ts", "seg1.ts", "a.ts", "seg02b.ts", "seg002.ts"]
        #expect(
            names.sorted(by: NaturalOrder.less) == ["a.ts", "seg1.ts", "seg2.ts", "seg002.ts", "seg02b.ts", "seg10.ts"])
        #expect(URIPath.encode("part 1/ä#?.ts") == "part%201/%C3%A4%23%3F.ts")
    }
}

@Suite struct RangeConfigurationTests {
    /// The range of every offset 0...12 for every set of resets among offsets 1...10, against counting the resets
    /// at or before the offset.
    @Test func rangeOfAnOffsetMatchesCountingResets() {
        for mask in 0..<1024 {
            let resets = (1...10).filter { mask & (1 << ($0 - 1)) != 0 }.map(UInt64.init)
            for offset in UInt64(0)...12 {
                let expected = resets.filter { $0 <= offset }.count
                let found = FragmentedPresentation.Configurations.range(of: offset, resets: resets)
                #expect(found == expected, "offset \(offset), resets \(resets)")
                if found != expected { return }
            }
        }
    }

    /// Init segment names: `-init.mp4` is 0, `-init-<n>.mp4` is n for n ≥ 1 written without leading zeros; anything
    /// else names no init segment.
    @Test func initSegmentNumbers() {
        #expect(TSPlaybackSession.initNumber("") == 0)
        #expect(TSPlaybackSession.initNumber("-1") == 1)
        #expect(TSPlaybackSession.initNumber("-12") == 12)
        for bad in ["-0", "-01", "-", "1", "--1", "-+1", "-1x", "-99999999999999999999", "_1"] {
            #expect(TSPlaybackSession.initNumber(Substring(bad)) == nil, "\(bad)")
        }
    }
}
