import FileRange
import HLSAdFilter
import HLSPlaylist

/// One media playlist's state in an ``AdStrippingProxy``: its routes, its route cache, its live filter, its stall
/// watch, its last poll and its recent slates, behind a lock of its own. A poll of one playlist holds only this lock
/// while it filters and rewrites, so polls of different playlists never wait for each other (a segment request of a
/// playlist waits at most for that playlist's rewrite).
final class ProxyStream: Sendable {
    struct State {
        /// The playlist's segment, key and map routes (IDs `<playlist>-<n>`).
        var routes: RouteTable
        var cache: RouteCache?
        var filter: LiveAdFilter?
        var watch: Watch?
        /// The last live poll, for the next one to be answered from (see IncrementalPoll.swift).
        var lastPoll: LastPoll?
        /// Slates by media sequence number (the 32 most recent).
        var slates: [UInt64: [UInt8]] = [:]
        var counts = AdStrippingProxy.PollCounts()
        /// Whether a slate's audio was checked for the diagnostic ``AdStrippingProxy/Event/slatesWithoutAudio(playlist:reason:)``.
        var slateAudioChecked = false

        /// Notes a live poll: a stall when its bytes have not changed for `stallAfter` seconds, a resume when they
        /// change again (by byte comparison with the previous poll).
        mutating func watch(input: [UInt8], url: String, stallAfter: Double, now: Double) -> AdStrippingProxy.Event? {
            var event: AdStrippingProxy.Event?
            var current = watch ?? Watch(input: input, changedAt: now)
            if !ProxyURIs.same(current.input, input) {
                if current.stalled { event = .resumed(playlist: url) }
                current = Watch(input: input, changedAt: now)
            } else if !current.stalled, now - current.changedAt >= stallAfter {
                current.stalled = true
                event = .stalled(playlist: url, seconds: now - current.changedAt)
            }
            watch = current
            return event
        }

        /// Keeps a slate (the 32 most recent).
        mutating func keep(slate bytes: [UInt8], sequence: UInt64) {
            slates[sequence] = bytes
            if slates.count > 32, let oldest = slates.keys.min() { slates[oldest] = nil }
        }
    }

    struct Watch {
        /// The bytes of the last poll (shared with the fetched buffer, not copied).
        var input: [UInt8]
        var changedAt: Double
        var stalled = false
    }

    /// The playlist's route ID.
    let id: String
    let state: LockedValue<State>

    init(id: String) {
        self.id = id
        state = LockedValue(State(routes: RouteTable(prefix: id + "-")))
    }
}

/// The proxy's playlists: the multivariant routes and variables, and one ``ProxyStream`` per media playlist. The
/// table of streams is locked only to find or add one.
final class ProxyStreams: Sendable {
    struct Multivariant {
        /// Media playlists, session keys, session data and steering (IDs without a `-`).
        var routes = RouteTable()
        /// The multivariant playlist's EXT-X-DEFINE variables (media playlists may IMPORT them).
        var variables: Variables?
    }

    let multivariant = LockedValue(Multivariant())
    private let streams = LockedValue<[String: ProxyStream]>([:])
    /// fMP4 content init sections by URL (for the slates' track and timeline; a few, most recent).
    let initSections = LockedValue<[String: [UInt8]]>([:])

    /// The stream of a media playlist route, made on first use.
    func stream(_ id: String) -> ProxyStream {
        streams.withLock { table in
            if let stream = table[id] { return stream }
            let stream = ProxyStream(id: id)
            table[id] = stream
            return stream
        }
    }

    /// The stream of a media playlist route, when one was polled.
    func existing(_ id: some StringProtocol) -> ProxyStream? {
        streams.withLock { $0[String(id)] }
    }

    /// Every stream's poll counts, added up.
    var counts: AdStrippingProxy.PollCounts {
        let all = streams.withLock { Array($0.values) }
        var total = AdStrippingProxy.PollCounts()
        for stream in all {
            let counts = stream.state.withLock { $0.counts }
            total.full += counts.full
            total.incremental += counts.incremental
            total.repeated += counts.repeated
        }
        return total
    }

    /// The upstream URL of a route of `kind`: a media playlist's own routes are in its stream (named by the ID),
    /// the rest in the multivariant table.
    func lookup(_ id: String, kind: RouteTable.Kind) -> String? {
        if let streamID = RouteTable.stream(of: id[...]) {
            return existing(streamID)?.state.withLock { $0.routes.lookup(id, kind: kind) }
        }
        return multivariant.withLock { $0.routes.lookup(id, kind: kind) }
    }
}
