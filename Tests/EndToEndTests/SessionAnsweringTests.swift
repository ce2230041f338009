// Where a playback session's answers are made: fragmented MP4 segments on the blocking pool, never on the server's
// event loop, so that one player's segment never holds another's byte ranges.
import FileRange
import Foundation
import FragmentedMP4
import LoopbackHTTP
import MPEGTS
import TestSupport
import Testing

@testable import TSPlayback

@Suite(.temporaryFolders) struct SessionAnsweringTests {
    /// With the session's pool (one thread) held, a request for a fragmented MP4 segment waits while the same
    /// server answers a byte range of `media.ts` at once; once the pool is free, the segment comes, the same bytes
    /// as another session makes when asked directly.
    @Test func segmentsAreMadeOnThePoolWhileTheEventLoopAnswersRanges() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let curl = try #require(EndToEnd.tool("curl"))
        let pool = BlockingPool(maximumThreads: 1)
        let (session, reference, server, base) = try await Self.served(movie, answeringOn: pool)
        // Made by another session: a segment in this one's cache would be answered at once.
        let expected = try #require(Self.made(["video", "1.m4s"], by: reference))

        let release = DispatchSemaphore(value: 0)
        pool.submit { release.wait() }
        let output = TemporaryFolders.make(prefix: "answering-").appendingPathComponent("1.m4s").path
        let arrived = Locked(false)
        let segment = Task {
            let result = try await EndToEnd.run(
                curl, ["-sS", "--max-time", "30", "-o", output, "-w", "%{http_code}", base + "video/1.m4s"])
            arrived.withLock { $0 = true }
            return result
        }
        let range = try await EndToEnd.run(
            curl,
            [
                "-sS", "--max-time", "5", "-r", "188-375", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                base + "media.ts",
            ])
        await suspend(0.3)
        let waited = !arrived.withLock { $0 }
        release.signal()
        let served = try await segment.value
        await server.remove(session)

        #expect(range.status == 0 && range.out == "206 188", "media.ts range while the pool was held: \(range)")
        #expect(waited, "the segment was answered while the session's pool was held")
        #expect(served.out == "200", "\(served)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: output))) == expected)
    }

    /// With the session's pool (one thread) held, requests for `video/2.m4s` and for the audio track's `2.m4s`
    /// come: the second waits for the first's making (segment 2 is made once, every track together), and both are
    /// answered by it once the pool is free, with the bytes another session makes. Then segment 3, which nobody asked
    /// for yet, is made ahead on the same thread (a player asks next for it), the same bytes again; an I-frame
    /// segment is not made ahead.
    @Test func aSegmentIsMadeOnceForEveryoneWaitingAndTheNextIsMadeAhead() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let curl = try #require(EndToEnd.tool("curl"))
        let pool = BlockingPool(maximumThreads: 1)
        let (session, reference, server, base) = try await Self.served(movie, answeringOn: pool)
        let presentation = try #require(session.presentation)
        let video = try #require(presentation.video)
        let audio = try #require(presentation.audio.first)
        try #require(session.segments.count >= 5, "\(session.segments.count) segments")
        let made = { (route: [String]) in Self.made(route, by: reference) }
        let cached = { (number: Int, pid: UInt16) in
            presentation.cache.get(SegmentCache.Key(number: number, pid: pid, iFrame: false))?.bytes
        }

        let release = DispatchSemaphore(value: 0)
        pool.submit { release.wait() }
        let folder = TemporaryFolders.make(prefix: "making-")
        let names = ["video/2.m4s", "audio-\(audio.pid)/2.m4s"]
        let fetches = names.map { name in
            Task {
                let output = folder.appendingPathComponent(name.replacingOccurrences(of: "/", with: "-")).path
                let result = try await EndToEnd.run(
                    curl, ["-sS", "--max-time", "30", "-o", output, "-w", "%{http_code}", base + name])
                return (result, try [UInt8](Data(contentsOf: URL(fileURLWithPath: output))))
            }
        }
        let key = SegmentsInMaking.Key(number: 2, iFrame: false)
        for _ in 0..<600 where presentation.making.waiting(for: key) != 1 { await suspend(0.05) }
        #expect(presentation.making.waiting(for: key) == 1, "the second request waits for the first's making")
        #expect(cached(2, video.pid) == nil && cached(3, video.pid) == nil, "nothing is made while the pool is held")
        release.signal()
        let answers = try await [fetches[0].value, fetches[1].value]
        #expect(answers.map(\.0.out) == ["200", "200"], "\(answers.map(\.0))")
        #expect(answers[0].1 == made(["video", "2.m4s"]) && answers[1].1 == made(["audio-\(audio.pid)", "2.m4s"]))
        // The pool's one thread runs this after the making ahead that followed the answers.
        await pool.run {}
        #expect(presentation.making.waiting(for: key) == nil)
        #expect(cached(3, video.pid) == made(["video", "3.m4s"]), "video segment 3 is made ahead")
        #expect(cached(3, audio.pid) == made(["audio-\(audio.pid)", "3.m4s"]), "audio segment 3 with it")
        #expect(cached(4, video.pid) == nil, "only the next segment is made ahead")

        // Made ahead, segment 3 is answered at once, the pool held again; so is a HEAD for it; segment 4 waits.
        pool.submit { release.wait() }
        let path = folder.appendingPathComponent("3.m4s").path
        let third = try await EndToEnd.run(
            curl, ["-sS", "--max-time", "5", "-o", path, "-w", "%{http_code}", base + "video/3.m4s"])
        let head = try await EndToEnd.run(curl, ["-sS", "--max-time", "5", "-I", base + "video/3.m4s"])
        let fourth = try await EndToEnd.run(
            curl, ["-sS", "--max-time", "1", "-o", "/dev/null", "-w", "%{http_code}", base + "video/4.m4s"])
        release.signal()
        let thirdBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let fields = head.out.split(whereSeparator: \.isNewline).map { $0.split(separator: ":", maxSplits: 1) }
        let tag = fields.first { $0.count == 2 && $0[0].lowercased() == "etag" }?[1].trimmingCharacters(
            in: .whitespaces)
        #expect(third.out == "200" && head.out.hasPrefix("HTTP/1.1 200"), "\(third) \(head)")
        #expect(thirdBytes == made(["video", "3.m4s"]))
        #expect(tag == HTTPApplication.contentEntityTag(thirdBytes), "the content ETag, computed where it was made")
        #expect(fourth.status != 0 && fourth.out == "000", "segment 4 waits for the pool: \(fourth)")
        await pool.run {}

        let iFrame = try await EndToEnd.run(
            curl, ["-sS", "-o", "/dev/null", "-w", "%{http_code}", base + "iframe/1.m4s"])
        await pool.run {}
        #expect(iFrame.out == "200", "\(iFrame)")
        #expect(presentation.cache.get(SegmentCache.Key(number: 2, pid: video.pid, iFrame: true)) == nil)
        await server.remove(session)
    }

    /// A segment in the cache that was made before the index found a joined recording's later part on other PIDs
    /// is not answered from the cache: the session follows the parts first, which drops what was made with the
    /// parts known before, and the segment is made anew, the bytes another session makes.
    @Test func aCachedSegmentIsDroppedWhenTheIndexFindsAnotherPart() async throws {
        let file = try #require(await JoinedRecordingTests.joined)
        let curl = try #require(EndToEnd.tool("curl"))
        let (session, reference, server, base) = try await Self.served(file)
        let presentation = try #require(session.presentation)
        let video = try #require(presentation.video)
        try #require((session.index?.parts.count ?? 0) >= 2, "the fixture is one recording of two parts")
        let expected = try #require(Self.made(["video", "0.m4s"], by: reference))
        // As if segment 0 had been made while the index knew only the first part.
        presentation.knownParts.withLock { $0 = [] }
        presentation.partReader.withLock { $0 = nil }
        let stale = MadeSegment(bytes: [0, 0, 0, 8], entityTag: "\"stale\"")
        presentation.cache.put(SegmentCache.Key(number: 0, pid: video.pid, iFrame: false), stale)

        let output = TemporaryFolders.make(prefix: "parts-").appendingPathComponent("0.m4s").path
        let served = try await EndToEnd.run(
            curl, ["-sS", "--max-time", "30", "-o", output, "-w", "%{http_code}", base + "video/0.m4s"])
        await server.remove(session)
        #expect(served.out == "200", "\(served)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: output))) == expected)
    }
}

extension SessionAnsweringTests {
    /// A fragmented MP4 session of `file` (1 s segments, no sidecar) served by a new server, answering on `pool` when
    /// given, and a second session of the same file that is never served, whose cache is its own; both indexed.
    static func served(_ file: URL, answeringOn pool: BlockingPool? = nil) async throws -> (
        session: TSPlaybackSession, reference: TSPlaybackSession, server: PlaybackServer, base: String
    ) {
        let options = TSPlaybackSession.Options(segmentDuration: 1, writesSidecar: false, container: .fmp4)
        let session = try TSPlaybackSession(tsFile: file.path, options: options)
        let reference = try TSPlaybackSession(tsFile: file.path, options: options)
        if let pool { session.answeringPool.withLock { $0 = pool } }
        let server = PlaybackServer()
        let base = try await server.add(session)
        await session.waitUntilIndexed()
        await reference.waitUntilIndexed()
        return (session, reference, server, base)
    }

    /// The bytes `session` makes for `route` (`["video", "3.m4s"]`) when asked directly, nil when it makes none.
    static func made(_ route: [String], by session: TSPlaybackSession) -> [UInt8]? {
        var request = HTTPRequest(method: .get, target: "/x/" + route.joined(separator: "/"))
        request.wildcardSegments = route
        guard case .bytes(let bytes) = session.respond(to: request).body else { return nil }
        return bytes
    }
}
