import Testing

@testable import TSPlayback

/// The bookkeeping that makes a fragmented MP4 segment once for every request that waits for it, and the routes it
/// is keyed by.
@Suite struct SegmentMakingTests {
    /// The first caller makes; later callers' waiters are kept, in order, for the maker to run when it finishes;
    /// a caller without a waiter (a making ahead) is only told no. Once finished, the next caller makes again.
    @Test func theFirstCallerMakesAndTheOthersWait() {
        let making = SegmentsInMaking()
        let key = SegmentsInMaking.Key(number: 7, iFrame: false)
        let ran = Locked<[Int]>([])
        #expect(making.waiting(for: key) == nil)
        let waiter = { (mark: Int) in { @Sendable in ran.withLock { $0.append(mark) } } }
        let first = making.start(key, orWait: waiter(0))
        #expect(first && making.waiting(for: key) == 0, "the maker's own answer is not kept")
        let others = [making.start(key, orWait: waiter(1)), making.start(key, orWait: nil)]
        let last = making.start(key, orWait: waiter(2))
        #expect(others == [false, false] && !last)
        #expect(making.waiting(for: key) == 2)
        // Another segment, and the I-frame segment of the same number, are made on their own.
        #expect(making.start(SegmentsInMaking.Key(number: 8, iFrame: false), orWait: nil))
        #expect(making.start(SegmentsInMaking.Key(number: 7, iFrame: true), orWait: nil))
        let waiters = making.finish(key)
        #expect(ran.withLock { $0 }.isEmpty, "waiters run only when the maker runs them")
        for waiter in waiters { waiter() }
        #expect(ran.withLock { $0 } == [1, 2])
        #expect(making.waiting(for: key) == nil && making.finish(key).isEmpty)
        #expect(making.start(key, orWait: nil))
    }

    /// `<playlist>/<number>.m4s` names a segment; the tracks of a number are made together, an I-frame segment on
    /// its own; anything else is no segment.
    @Test func routesNameSegments() throws {
        let video = try #require(FragmentedSegmentRoute(["video", "12.m4s"]))
        let audio = try #require(FragmentedSegmentRoute(["audio-257", "12.m4s"]))
        let iFrame = try #require(FragmentedSegmentRoute(["iframe", "12.m4s"]))
        #expect(video.number == 12 && !video.iFrame && iFrame.iFrame)
        #expect(video.making == audio.making && video.making != iFrame.making)
        #expect(video.wildcardSegments == ["video", "12.m4s"])
        for route in [
            ["video", "-1.m4s"], ["video", "x.m4s"], ["video", "12.mp4"], ["12.m4s"], ["a", "b", "1.m4s"],
        ] {
            #expect(FragmentedSegmentRoute(route) == nil, "\(route)")
        }
    }
}
