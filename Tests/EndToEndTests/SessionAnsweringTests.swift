// Where a playback session's answers are made: fragmented MP4 segments on the blocking pool, never on the server's
// event loop, so that one player's segment never holds another's byte ranges.
import FileRange
import Foundation
import LoopbackHTTP
import TestSupport
import Testing

@testable import TSPlayback

@Suite(.temporaryFolders) struct SessionAnsweringTests {
    /// With the session's pool (one thread) held, a request for a fragmented MP4 segment waits while the same
    /// server answers a byte range of `media.ts` at once; once the pool is free, the segment comes, the same bytes
    /// as the session makes when asked directly.
    @Test func segmentsAreMadeOnThePoolWhileTheEventLoopAnswersRanges() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let curl = try #require(EndToEnd.tool("curl"))
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .fmp4))
        let pool = BlockingPool(maximumThreads: 1)
        session.answeringPool.withLock { $0 = pool }
        let server = PlaybackServer()
        let base = try await server.add(session)
        await session.waitUntilIndexed()
        var direct = HTTPRequest(method: .get, target: "/\(session.token.value)/video/1.m4s")
        direct.wildcardSegments = ["video", "1.m4s"]
        guard case .bytes(let expected) = session.respond(to: direct).body else {
            Issue.record("the session made no bytes for video/1.m4s")
            return
        }

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
}
