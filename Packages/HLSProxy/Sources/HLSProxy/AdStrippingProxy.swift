import FileRange
public import HLSAdFilter
public import HLSPlaylist
public import HTTPClient
public import LoopbackHTTP

/// A loopback proxy in front of a remote HLS stream that removes ads.
///
/// The player opens `/<token>/master.m3u8`. Every URI of the multivariant playlist (variants, renditions,
/// I-frame playlists, session keys, session data, content steering) and of each media playlist (segments, keys,
/// maps) is rewritten to a route of this proxy, keyed by the full upstream URL (query included, so URLs that differ
/// only in their query never share a route). Media playlists are fetched on every poll and cleaned by HLSAdFilter:
/// VOD breaks are removed, live ad segments become `/<token>/slate/<playlist>/<msn>.ts`. Segments are relayed as a
/// stream (Range, Content-Type, Content-Length passed through) or answered with a 302 to the upstream URL
/// (`redirect` mode: the player then fetches them itself, without the configured headers; only to an http(s) URL
/// that stream mode would fetch, anything else answers 502). The configured credentials (`Authorization`, `Cookie`,
/// `Proxy-Authorization`, `HTTPClient.RemoteFetchOptions.secretHeaders`) go only to the stream's host and the
/// `HTTPClient.RemoteFetchOptions.credentialHosts`; other headers go to every host. Upstream failures
/// answer 502 (504 for timeouts) with the reason in the body; a live playlist that stops changing is reported as
/// an ``Event/stalled(playlist:seconds:)`` event.
///
/// The proxy is a source of a `LoopbackHTTP.PlaybackServer` (`LoopbackHTTP.PlaybackServer.shared` unless another is
/// given): its routes sit under its token on the same port as the app's playback sessions and caching proxies, with one
/// lifecycle (revive after the background included). Its parts: this API; its routes (ProxyRoutes.swift); its polls
/// (ProxyPolls.swift); the pure rewriter (`PlaylistRewriter`); the state of each media playlist, locked per playlist
/// (`ProxyStream`); and the poll cache (IncrementalPoll.swift).
public final class AdStrippingProxy: Sendable {
    /// How segments reach the player.
    public enum SegmentMode: String, Sendable, Hashable {
        /// Relayed through the proxy with the configured headers.
        case stream
        /// A 302 to the upstream URL; the player fetches it without the configured headers.
        case redirect
    }

    public struct Options: Sendable {
        public var segmentMode: SegmentMode = .stream
        public var fetch = RemoteFetchOptions()
        public var filter = AdFilterOptions()
        /// Seconds a live playlist may stay identical before a stall is reported (nil: three target durations).
        public var stallTimeout: Double?
        /// Seconds a route stays valid after the last playlist that referenced it (so a slow client can still
        /// fetch a segment that just left the window).
        public var mappingLifetime: Double = 600
        /// The playback server's settings (port, CORS, access log), applied when this proxy starts the server (no
        /// other source is served yet); a server that already runs keeps its own, and the proxy joins it. Unset, the
        /// server's own configuration is used.
        public var server: HTTPServerConfiguration {
            get { serverConfiguration ?? HTTPServerConfiguration() }
            set { serverConfiguration = newValue }
        }
        /// The configuration set through ``server``, if any.
        var serverConfiguration: HTTPServerConfiguration?
        /// Makes slates; nil uses ``ProxySlateMaker``.
        public var slates: (any ProxySlateSource)?
        /// Whether a live poll whose window only moved on (segments left at the front, plain content segments added
        /// at the end) is answered from the previous output plus the new segments, without parsing and filtering
        /// the whole window again. The output is the same byte for byte; see ``PollCounts``.
        public var incrementalPolls = true

        public init() {}

        /// Options for a channel of an IPTV list: its user agent, referrer and headers go on every request.
        public init(channel: IPTVChannel) {
            if let ua = channel.userAgent { fetch.userAgent = ua }
            if let referrer = channel.referrer { fetch.headers.append((name: "Referer", value: referrer)) }
            fetch.headers += channel.httpHeaders
        }
    }

    /// What the proxy reports to the app.
    public enum Event: Sendable {
        /// A media playlist was polled and cleaned.
        case poll(playlist: String, decisions: [SegmentDecision], warnings: [String])
        /// A live playlist has not changed for `seconds`.
        case stalled(playlist: String, seconds: Double)
        /// A stalled playlist changed again.
        case resumed(playlist: String)
        /// An upstream request failed (the player got 502 or 504).
        case upstreamError(ProxyError)
        /// The slates of `playlist` carry no audio: the content's audio cannot be given silence without an encoder
        /// (`reason` names the codec: E-AC-3, HE-AAC, Opus...). Reported once per playlist, with its first slate.
        case slatesWithoutAudio(playlist: String, reason: String)
    }

    /// How the media playlist polls so far were answered.
    public struct PollCounts: Sendable, Hashable {
        /// Parsed, filtered and rewritten whole.
        public var full = 0
        /// The previous output moved on: its segments that are still in the window, plus the new ones.
        public var incremental = 0
        /// The same bytes as the previous poll: the previous output.
        public var repeated = 0
    }

    /// How the media playlist polls so far were answered.
    public var pollCounts: PollCounts { streams.counts }

    public let upstreamURL: String
    public let options: Options
    public let token: SessionToken
    public let fetcher: RemotePlaylistFetcher
    /// Poll decisions, stalls and upstream errors, as they happen.
    public let events: AsyncStream<Event>
    /// The playback server the proxy is served by.
    public let server: PlaybackServer
    let eventSink: AsyncStream<Event>.Continuation
    let streams = ProxyStreams()
    let rewriter: PlaylistRewriter
    let slates: any ProxySlateSource
    private let mode: LockedValue<SegmentMode>
    /// Whether the upstream playlist was fetched once: until then its fetch is bounded by
    /// `HTTPClient.RemoteFetchOptions.firstFetchTimeout` in all.
    let firstFetched = LockedValue(false)
    /// The proxy's source on ``server`` while it is started.
    private let mounted = LockedValue<DeferredSource?>(nil)

    /// A proxy for `url`; `fetcher` (made from `options.fetch` when nil, with `url` as its credential origin unless
    /// the options name one) fetches every upstream request; `server` serves it once started.
    public init(
        url: String, options: Options = Options(), fetcher: RemotePlaylistFetcher? = nil,
        server: PlaybackServer = .shared
    ) {
        self.upstreamURL = url
        self.options = options
        self.token = SessionToken.random()
        self.fetcher =
            fetcher
            ?? RemotePlaylistFetcher(
                options: {
                    // The stream's credentials go to its host (and the hosts allowed), not to every host it names.
                    var fetch = options.fetch
                    if fetch.credentialOrigin == nil { fetch.credentialOrigin = url }
                    return fetch
                }())
        self.server = server
        self.mode = LockedValue(options.segmentMode)
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        self.slates = options.slates ?? ProxySlateMaker()
        self.rewriter = PlaylistRewriter(token: token.value, lifetime: options.mappingLifetime)
    }

    deinit {
        eventSink.finish()
        // A proxy released while started leaves the server (its routes already answer 404: they hold it weakly).
        if let source = mounted.withLock({ $0 }) { server.removeWithoutWaiting(source) }
    }

    /// The path of the multivariant playlist: `/<token>/master.m3u8`.
    public var masterPath: String { "/\(token.value)/master.m3u8" }

    /// How segments reach the player (``Options/segmentMode`` at first); a change applies to the next request.
    public var segmentMode: SegmentMode {
        get { mode.withLock { $0 } }
        set { mode.withLock { $0 = newValue } }
    }

    /// The port the playback server listens on, while the proxy is started.
    public var port: UInt16? {
        guard mounted.withLock({ $0 != nil }) else { return nil }
        return server.boundPort
    }

    /// Starts serving (starting the playback server when needed); returns the player's URL
    /// (`http://127.0.0.1:PORT/<token>/master.m3u8`).
    public func start() async throws(ProxyError) -> String {
        try startServer()
    }

    /// ``start()`` on the calling thread (binding takes a few milliseconds and never waits on Swift's pool). Starting
    /// a started proxy returns its URL again.
    public func startServer() throws(ProxyError) -> String {
        let base = try mounted.withLock { (source) throws(ProxyError) -> String in
            if let source, let base = server.baseURL(for: source) { return base }
            let mount =
                source
                ?? DeferredSource(token: token) { [weak self] request, responder in
                    guard let self else { return responder.respond(.error(.notFound)) }
                    self.answer(request, responder)
                }
            do {
                let base = try server.register(mount, startingWith: options.serverConfiguration)
                source = mount
                return base
            } catch {
                throw ProxyError(.serverFailed, url: upstreamURL, detail: "\(error)")
            }
        }
        return base + "master.m3u8"
    }

    /// Stops serving: the proxy's routes answer 404 (the server stops when it serves nothing else) and ``events``
    /// ends.
    public func stop() async {
        let source = mounted.withLock { s -> DeferredSource? in
            defer { s = nil }
            return s
        }
        if let source { await server.remove(source) }
        eventSink.finish()
    }
}

/// Seconds on a monotonic clock.
enum ProxyClock {
    static let origin = ContinuousClock.now
    static var now: Double {
        let d = ContinuousClock.now - origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
