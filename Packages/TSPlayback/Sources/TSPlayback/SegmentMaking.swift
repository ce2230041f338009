import FileRange

/// A fragmented MP4 segment's route (`video/12.m4s`, `audio-257/12.m4s`, `iframe/3.m4s`): the playlist it is
/// listed in and its number there.
struct FragmentedSegmentRoute: Hashable, Sendable {
    var playlist: String
    var number: Int

    /// The segments of the I-frame playlist, which are made one track at a time; the others are made all tracks
    /// together.
    var iFrame: Bool { playlist == "iframe" }

    /// What is made at once to answer the route: every track's segment `number`, or one I-frame segment.
    var making: SegmentsInMaking.Key { SegmentsInMaking.Key(number: number, iFrame: iFrame) }

    var wildcardSegments: [String] { [playlist, "\(number).m4s"] }
}

extension FragmentedSegmentRoute {
    /// The route of a request's wildcard segments, or nil when they name no segment.
    init?(_ route: [String]) {
        guard route.count == 2, route[1].hasSuffix(".m4s"), let number = Int(route[1].dropLast(4)), number >= 0
        else { return nil }
        self.init(playlist: route[0], number: number)
    }
}

/// The segments being made now, each with the answers that wait for it: a request for a segment that another
/// thread is making is answered by that thread once the bytes are made (and cached), instead of making them a second
/// time beside it. Pure bookkeeping under a lock; the session does the making (``TSPlaybackSession/answer(_:_:)``).
final class SegmentsInMaking: Sendable {
    struct Key: Hashable, Sendable {
        var number: Int
        var iFrame: Bool
    }

    typealias Waiter = @Sendable () -> Void

    private let state = LockedValue<[Key: [Waiter]]>([:])

    /// Marks `key` as made by the caller and returns true; or, when another caller is making it, keeps `waiter` (if
    /// any) for that caller to run once it is made, and returns false.
    func start(_ key: Key, orWait waiter: Waiter?) -> Bool {
        state.withLock { making in
            if making[key] != nil {
                if let waiter { making[key]?.append(waiter) }
                return false
            }
            making[key] = []
            return true
        }
    }

    /// Ends the making of `key`, which the caller started, and returns the waiters it must now run.
    func finish(_ key: Key) -> [Waiter] {
        state.withLock { $0.removeValue(forKey: key) ?? [] }
    }

    /// How many answers wait for `key`, or nil when nobody is making it.
    func waiting(for key: Key) -> Int? {
        state.withLock { $0[key]?.count }
    }
}
