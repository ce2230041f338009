import FileRange
import HLSAdFilter
import HLSPlaylist
public import HTTPClient

/// The ad-stripping proxy's playlist polls: fetched bytes checked, parsed, filtered (media playlists) and rewritten
/// into routes, each media playlist under its own stream's lock.
extension AdStrippingProxy {
    /// The bytes served for checked playlist bytes fetched from `url` (answered by `finalURL`): a live poll that
    /// repeats or moves on the previous one is answered from it (the poll cache); anything else is parsed, then a
    /// multivariant playlist rewritten, a media playlist filtered and rewritten (`id`: its route, nil for the
    /// upstream URL itself).
    func served(bytes: [UInt8], finalURL: String, id: String?, url: String) throws(ProxyError) -> [UInt8] {
        let known =
            id ?? streams.multivariant.withLock { $0.routes.byURL[RouteTable.RouteKey(url: url, kind: .playlist)] }
        if let known, let stream = streams.existing(known),
            let output = quickPoll(bytes, url: finalURL, stream: stream, now: ProxyClock.now)
        {
            return output
        }
        let fetched = try RemotePlaylistFetcher.parsed(bytes, url: finalURL)
        switch fetched.playlist.kind {
        case .multivariant:
            return rewriteMultivariant(fetched.playlist, base: fetched.url)
        default:
            let playlistID =
                id ?? streams.multivariant.withLock { $0.routes.id(for: url, kind: .playlist, now: ProxyClock.now) }
            return fullPoll(fetched, stream: streams.stream(playlistID))
        }
    }

    /// One poll's work on playlist bytes already fetched from `url`: checked and parsed as
    /// `HTTPClient.RemotePlaylistFetcher.fetchPlaylist(_:)` does, then filtered and rewritten as a request for the
    /// upstream URL's route is. Exposed for benchmarks and tests (the same state as requests through the server).
    public func poll(bytes: [UInt8], url: String) throws(ProxyError) -> [UInt8] {
        try RemotePlaylistFetcher.checkPlaylist(bytes, url: url, contentType: nil)
        return try served(bytes: bytes, finalURL: url, id: nil, url: url)
    }

    /// Filters one poll of a media playlist and rewrites its URIs. Exposed for benchmarks and tests.
    ///
    /// A live poll whose bytes are those of the previous poll of the same playlist (players often reload faster
    /// than the window moves) is answered with the previous output; one whose window only moved on (see
    /// ``Options/incrementalPolls``) with the previous output moved on. Both for at most ten seconds after the
    /// last poll filtered in full (so routes stay fresh).
    public func media(_ fetched: FetchedPlaylist, playlistID: String) -> [UInt8] {
        let stream = streams.stream(playlistID)
        if let output = quickPoll(fetched.bytes, url: fetched.url, stream: stream, now: ProxyClock.now) {
            return output
        }
        return fullPoll(fetched, stream: stream)
    }

    /// A live poll answered from the previous one (IncrementalPoll.swift), under the stream's lock; nil when it needs
    /// filtering in full.
    private func quickPoll(_ bytes: [UInt8], url: String, stream: ProxyStream, now: Double) -> [UInt8]? {
        var events: [Event] = []
        let incremental = options.incrementalPolls
        let rewriter = self.rewriter
        let output = stream.state.withLock { s in
            s.quickPoll(bytes, url: url, now: now, incremental: incremental, rewriter: rewriter, events: &events)
        }
        for event in events { eventSink.yield(event) }
        return output
    }

    /// Parses the media view, filters (VOD or live, with the playlist's live state) and rewrites a poll.
    private func fullPoll(_ fetched: FetchedPlaylist, stream: ProxyStream) -> [UInt8] {
        let now = ProxyClock.now
        let input = fetched.playlist
        let parent = streams.multivariant.withLock { $0.variables }
        let view = input.media(url: fetched.url, parent: parent)
        let rewriter = self.rewriter
        let playlistID = stream.id
        if view.endList || view.playlistType == "VOD" {
            let result = AdFilter(options: options.filter).cleanVOD(input, media: view)
            eventSink.yield(.poll(playlist: fetched.url, decisions: result.decisions, warnings: result.warnings))
            return stream.state.withLock { s in
                s.counts.full += 1
                return rewriter.media(
                    result.playlist, base: fetched.url, variables: view.variables, playlistID: playlistID, live: false,
                    routes: &s.routes, cache: &s.cache, now: now)
            }
        }
        let target = Double(view.targetDuration ?? 6)
        let stallAfter = options.stallTimeout ?? max(3 * target, 6)
        let filterOptions = options.filter
        let incremental = options.incrementalPolls
        var stallEvent: Event?
        var pollEvent: Event?
        let output = stream.state.withLock { s -> [UInt8] in
            s.counts.full += 1
            stallEvent = s.watch(input: fetched.bytes, url: fetched.url, stallAfter: stallAfter, now: now)
            var filter = s.filter ?? LiveAdFilter(options: filterOptions)
            s.filter = nil
            let result = filter.filter(input, media: view)
            s.filter = filter
            pollEvent = .poll(playlist: fetched.url, decisions: result.decisions, warnings: result.warnings)
            let output = rewriter.media(
                result.playlist, base: fetched.url, variables: view.variables, playlistID: playlistID, live: true,
                routes: &s.routes, cache: &s.cache, now: now)
            let shape =
                incremental
                ? WindowShape.make(
                    input: fetched.bytes, lines: input.lines, mediaSequence: view.mediaSequence,
                    segments: view.segments.count, lastIsContent: result.decisions.last?.isAd == false, output: output)
                : nil
            s.lastPoll = LastPoll(
                url: fetched.url, input: fetched.bytes, decisions: result.decisions, warnings: result.warnings,
                output: output, fullAt: now, stallAfter: stallAfter, shape: shape)
            return output
        }
        if let stallEvent { eventSink.yield(stallEvent) }
        if let pollEvent { eventSink.yield(pollEvent) }
        return output
    }

    /// Rewrites a multivariant playlist under the multivariant table's lock (its variables kept for the media
    /// playlists that IMPORT them).
    private func rewriteMultivariant(_ playlist: Playlist, base: String) -> [UInt8] {
        let now = ProxyClock.now
        let variables = playlist.multivariant(url: base).variables
        let rewriter = self.rewriter
        return streams.multivariant.withLock { m in
            m.variables = variables
            return rewriter.multivariant(playlist, base: base, variables: variables, routes: &m.routes, now: now)
        }
    }
}
