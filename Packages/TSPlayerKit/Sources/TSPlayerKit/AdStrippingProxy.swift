import FileRange
import Foundation
import FragmentedMP4
public import HLSAdFilter
public import HLSPlaylist
public import LoopbackHTTP

/// A loopback proxy in front of a remote HLS stream that removes ads.
///
/// The player opens `/<token>/master.m3u8`. Every URI of the multivariant playlist (variants, renditions,
/// I-frame playlists, session keys, session data, content steering) and of each media playlist (segments, keys,
/// maps) is rewritten to a route of this proxy, keyed by the full upstream URL (query included, so URLs that differ
/// only in their query never share a route). Media playlists are fetched on every poll and cleaned by HLSAdFilter:
/// VOD breaks are removed, live ad segments become `/<token>/slate/<playlist>/<msn>.ts`. Segments are relayed as a
/// stream (Range, Content-Type, Content-Length passed through) or answered with a 302 to the upstream URL
/// (`redirect` mode: the player then fetches them itself, without the configured headers). Upstream failures
/// answer 502 (504 for timeouts) with the reason in the body; a live playlist that stops changing is reported as
/// an ``Event/stalled(playlist:seconds:)`` event.
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
        /// The loopback server's settings (port, CORS, access log).
        public var server = HTTPServerConfiguration()
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
    public var pollCounts: PollCounts { state.withLock { $0.pollCounts } }

    public let upstreamURL: String
    public let options: Options
    public let token: SessionToken
    public let fetcher: RemotePlaylistFetcher
    /// Poll decisions, stalls and upstream errors, as they happen.
    public let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let state = LockedValue(ProxyState())
    private let server = LockedValue<HTTPServer?>(nil)
    private let mode: LockedValue<SegmentMode>
    private let slates: any ProxySlateSource

    /// A proxy for `url`; `fetcher` (made from `options.fetch` when nil) fetches every upstream request.
    public init(url: String, options: Options = Options(), fetcher: RemotePlaylistFetcher? = nil) {
        self.upstreamURL = url
        self.options = options
        self.token = SessionToken.random()
        self.fetcher = fetcher ?? RemotePlaylistFetcher(options: options.fetch)
        self.mode = LockedValue(options.segmentMode)
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        self.slates = options.slates ?? ProxySlateMaker()
    }

    deinit {
        eventSink.finish()
        // A proxy released while running stops its server (its routes already answer 404: they hold it weakly).
        if let server = server.withLock({ $0 }) {
            Task.detached { await server.stop(gracePeriod: .seconds(1)) }
        }
    }

    /// The path of the multivariant playlist: `/<token>/master.m3u8`.
    public var masterPath: String { "/\(token.value)/master.m3u8" }

    /// How segments reach the player (``Options/segmentMode`` at first); a change applies to the next request.
    public var segmentMode: SegmentMode {
        get { mode.withLock { $0 } }
        set { mode.withLock { $0 = newValue } }
    }

    /// The port the loopback server listens on, while it runs.
    public var port: UInt16? { server.withLock { $0?.port } }

    /// Starts the loopback server; returns the player's URL (`http://127.0.0.1:PORT/<token>/master.m3u8`).
    public func start() async throws(ProxyError) -> String {
        try startServer()
    }

    /// ``start()`` on the calling thread (binding takes a few milliseconds and never waits on Swift's pool).
    func startServer() throws(ProxyError) -> String {
        var router = Router()
        // Under the session token: compared in constant time, a wrong one is a 404, the log shows `{token}`.
        router.getDeferred("/**", session: token) { [weak self] request, responder in
            guard let self else { return responder.respond(.error(.notFound)) }
            self.answer(request, responder)
        }
        let server = HTTPServer(router: router, configuration: options.server)
        let port: UInt16
        do {
            port = try server.start()
        } catch {
            throw ProxyError(.serverFailed, url: upstreamURL, detail: "\(error)")
        }
        self.server.withLock { $0 = server }
        return "http://127.0.0.1:\(port)\(masterPath)"
    }

    /// Stops the server.
    public func stop() async {
        let server = self.server.withLock { s -> HTTPServer? in
            defer { s = nil }
            return s
        }
        await server?.stop(gracePeriod: .seconds(1))
        eventSink.finish()
    }

    // MARK: Routing

    /// Answers a request whose path starts with the token (also usable in process, without a server).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let parts = request.wildcardSegments
        guard let first = parts.first else { return .error(.notFound) }
        switch (first, parts.count) {
        case ("master.m3u8", 1), ("p", 2):
            guard let route = playlistRoute(parts) else { return expired() }
            return await playlist(id: route.id, url: route.url)
        case ("s", 2):
            guard let entry = lookup(stem(parts[1]), kind: .segment) else { return expired() }
            return await segment(entry, request: request)
        case ("k", 2):
            guard let entry = lookup(stem(parts[1]), kind: .key) else { return expired() }
            return await small(entry, contentType: "application/octet-stream")
        case ("r", 2):
            guard let entry = lookup(stem(parts[1]), kind: .raw) else { return expired() }
            return await small(entry, contentType: nil)
        case ("slate", 3):
            if parts[2] == "init.mp4" {
                let mapURI = state.withLock { $0.filters[parts[1]]?.state.lastContentMap }
                let contentInit = await mapURI.asyncFlatMap { try? await self.contentInit($0) }
                guard let bytes = slates.fragmentedSlateInit(contentInit: contentInit) else { return .error(.notFound) }
                return .bytes(bytes, contentType: "video/mp4")
            }
            return await slate(playlist: parts[1], msn: stem(parts[2]))
        default:
            return .error(.notFound)
        }
    }

    /// Answers a request from the server. A playlist poll is fetched, filtered and answered on a dispatch queue in
    /// one blocking socket call (two thread hand-offs in all: to the queue and back to the event loop); everything
    /// else, and a poll that needs the async path (https, a redirect, a retry), runs ``respond(to:)`` in a task.
    private func answer(_ request: HTTPRequest, _ responder: HTTPResponder) {
        guard let route = playlistRoute(request.wildcardSegments), fetcher.fetchesBlocking(route.url) else {
            Task { responder.respond(await self.respond(to: request)) }
            return
        }
        DispatchQueue.global().async {
            var response: HTTPResponse?
            do throws(ProxyError) {
                if let (bytes, finalURL) = try self.fetcher.fetchPlaylistBytesBlocking(route.url) {
                    response = Self.playlistResponse(
                        try self.served(bytes: bytes, finalURL: finalURL, id: route.id, url: route.url))
                }
            } catch {
                response = self.failure(error)
            }
            if let response {
                responder.respond(response)
            } else {
                Task { responder.respond(await self.respond(to: request)) }
            }
        }
    }

    /// The playlist a request's path names: `master.m3u8` (the upstream URL, no route) or `p/<id>` (a route); nil
    /// for any other path, or a route that is unknown or expired.
    private func playlistRoute(_ parts: [String]) -> (id: String?, url: String)? {
        switch (parts.first, parts.count) {
        case ("master.m3u8", 1): return (nil, upstreamURL)
        case ("p", 2): return lookup(stem(parts[1]), kind: .playlist).map { (stem(parts[1]), $0) }
        default: return nil
        }
    }

    private func stem(_ name: String) -> String {
        guard let dot = name.firstIndex(of: ".") else { return name }
        return String(name[..<dot])
    }

    private func expired() -> HTTPResponse {
        .text("404 Not Found: this proxy route is unknown or expired\n", status: .notFound)
    }

    private func lookup(_ id: String, kind: ProxyState.Kind) -> String? {
        state.withLock { s in
            guard let entry = s.byID[id], entry.kind == kind else { return nil }
            return entry.url
        }
    }

    private func failure(_ error: ProxyError) -> HTTPResponse {
        eventSink.yield(.upstreamError(error))
        let status: HTTPStatus = error.code == .timedOut ? HTTPStatus(code: 504) : .badGateway
        var response = HTTPResponse.text(
            "\(status.code) \(status.reasonPhrase): upstream \(error.code): \(error.detail)\n", status: status)
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    // MARK: Playlists

    private func playlist(id: String?, url: String) async -> HTTPResponse {
        do {
            let (bytes, finalURL) = try await fetcher.fetchPlaylistBytes(url)
            return Self.playlistResponse(try served(bytes: bytes, finalURL: finalURL, id: id, url: url))
        } catch {
            return failure(error)
        }
    }

    private static func playlistResponse(_ bytes: [UInt8]) -> HTTPResponse {
        var response = HTTPResponse.bytes(bytes, contentType: "application/vnd.apple.mpegurl")
        response.headers.add(name: "Cache-Control", value: "no-cache")
        return response
    }

    /// The bytes served for checked playlist bytes fetched from `url` (answered by `finalURL`): a live poll that
    /// repeats or moves on the previous one is answered from it (``quickPoll(_:url:playlistID:now:)``); anything else
    /// is parsed, then a multivariant playlist rewritten, a media playlist filtered and rewritten (`id`: its route,
    /// nil for the upstream URL itself).
    private func served(bytes: [UInt8], finalURL: String, id: String?, url: String) throws(ProxyError) -> [UInt8] {
        let known = id ?? state.withLock { $0.byURL[ProxyState.RouteKey(url: url, kind: .playlist)] }
        if let known, let output = quickPoll(bytes, url: finalURL, playlistID: known, now: ProxyClock.now) {
            return output
        }
        let fetched = try RemotePlaylistFetcher.parsed(bytes, url: finalURL)
        switch fetched.playlist.kind {
        case .multivariant:
            return rewriteMultivariant(fetched.playlist, base: fetched.url)
        default:
            let playlistID = id ?? state.withLock { $0.id(for: url, kind: .playlist, now: ProxyClock.now) }
            return fullPoll(fetched, playlistID: playlistID)
        }
    }

    /// One poll's work on playlist bytes already fetched from `url`: checked and parsed as
    /// ``RemotePlaylistFetcher/fetchPlaylist(_:)`` does, then filtered and rewritten as a request for the upstream
    /// URL's route is. Exposed for benchmarks and tests (the same state as requests through the server).
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
        if let output = quickPoll(fetched.bytes, url: fetched.url, playlistID: playlistID, now: ProxyClock.now) {
            return output
        }
        return fullPoll(fetched, playlistID: playlistID)
    }

    /// A live poll answered from the previous one without parsing or filtering the window: the same bytes (the
    /// previous output), or the previous window moved on with plain content segments added (``WindowShape``). Nil:
    /// the poll needs ``fullPoll(_:playlistID:)``.
    private func quickPoll(_ bytes: [UInt8], url: String, playlistID: String, now: Double) -> [UInt8]? {
        let reuseFor = min(10, options.mappingLifetime / 4)
        let incremental = options.incrementalPolls
        let filterOptions = options.filter
        let prefix = Array("/\(token.value)/".utf8)
        let lifetime = options.mappingLifetime
        var events: [Event] = []
        let output = state.withLock { s -> [UInt8]? in
            guard var last = s.lastPolls[playlistID], now - last.fullAt < reuseFor, last.url == url else { return nil }
            if ProxyState.same(last.input, bytes) {
                s.pollCounts.repeated += 1
                if let e = s.watch(playlistID, input: bytes, url: url, stallAfter: last.stallAfter, now: now) {
                    events.append(e)
                }
                events.append(.poll(playlist: url, decisions: last.decisions, warnings: last.warnings))
                return last.output
            }
            guard incremental, let shape = last.shape, let advance = shape.advance(from: last.input, to: bytes),
                let tail = PlainSegments(
                    Array(bytes[advance.tailStart...]), at: advance.tailStart, url: url, dated: shape.dated),
                shape.segmentEnds.count - advance.dropped + tail.segments.count <= ProxyState.limits.maxSegments,
                bytes.count <= ProxyState.limits.maxBytes, bytes.count / 2 + 1 <= ProxyState.limits.maxLines,
                s.routeCaches[playlistID].map({ $0.base == url && $0.variables == Variables() }) == true,
                s.filters[playlistID] != nil
            else { return nil }
            // Taken out of their tables while they change (a copy left there would make every change copy them).
            var cache = s.routeCaches.removeValue(forKey: playlistID) ?? ProxyState.RouteCache(base: url)
            var filter = s.filters.removeValue(forKey: playlistID) ?? LiveAdFilter(options: filterOptions)
            s.prune(now: now, lifetime: lifetime)
            let base = URIReference(url)
            var tailOutput: [UInt8] = []
            var tailOutputEnds: [Int] = []
            // The live filter's state moves on as filtering the window would have moved it.
            let windowCount = shape.segmentEnds.count - advance.dropped + tail.segments.count
            let decisions =
                Array(last.decisions[advance.dropped...])
                + filter.advance(to: advance.firstSequence, windowCount: windowCount, adding: tail.media)
            s.filters[playlistID] = filter
            for segment in tail.segments {
                for tag in segment.tags {
                    tailOutput += tag.bytes
                    ProxyState.appendEnding(tag.ending, to: &tailOutput)
                }
                s.appendRoute(
                    segment.uri, cache: &cache, into: &tailOutput, base: base, prefix: prefix, now: now,
                    refreshEvery: reuseFor)
                ProxyState.appendEnding(segment.uri.ending, to: &tailOutput)
                tailOutputEnds.append(tailOutput.count)
            }
            cache.trim(now: now, lifetime: lifetime)
            s.routeCaches[playlistID] = cache
            let (output, next) = shape.output(
                previous: last.output, new: bytes, advance: advance, tailOutput: tailOutput,
                tailEnds: tail.segments.map(\.end), tailOutputEnds: tailOutputEnds)
            if let e = s.watch(playlistID, input: bytes, url: url, stallAfter: last.stallAfter, now: now) {
                events.append(e)
            }
            // Filtering the window would have found nothing to warn about: every segment but the new ones was
            // decided before, and those are plain content.
            events.append(.poll(playlist: url, decisions: decisions, warnings: []))
            last.input = bytes
            last.output = output
            last.decisions = decisions
            last.warnings = []
            last.shape = next
            s.lastPolls[playlistID] = last
            s.pollCounts.incremental += 1
            return output
        }
        for event in events { eventSink.yield(event) }
        return output
    }

    /// Parses the media view, filters (VOD or live, with the playlist's live state) and rewrites a poll.
    private func fullPoll(_ fetched: FetchedPlaylist, playlistID: String) -> [UInt8] {
        let now = ProxyClock.now
        let input = fetched.playlist
        var stallEvent: Event?
        let parent = state.withLock { s -> Variables? in
            s.pollCounts.full += 1
            return s.multivariantVariables
        }
        let view = input.media(url: fetched.url, parent: parent)
        let isVOD = view.endList || view.playlistType == "VOD"
        if isVOD {
            let result = AdFilter(options: options.filter).cleanVOD(input, media: view)
            eventSink.yield(.poll(playlist: fetched.url, decisions: result.decisions, warnings: result.warnings))
            return rewriteMedia(
                result.playlist, base: fetched.url, variables: view.variables, playlistID: playlistID, live: false,
                now: now)
        }
        let target = Double(view.targetDuration ?? 6)
        let stallAfter = options.stallTimeout ?? max(3 * target, 6)
        let filterOptions = options.filter
        let result = state.withLock { s -> AdFilterResult in
            stallEvent = s.watch(playlistID, input: fetched.bytes, url: fetched.url, stallAfter: stallAfter, now: now)
            var filter = s.filters.removeValue(forKey: playlistID) ?? LiveAdFilter(options: filterOptions)
            let result = filter.filter(input, media: view)
            s.filters[playlistID] = filter
            return result
        }
        if let stallEvent { eventSink.yield(stallEvent) }
        eventSink.yield(.poll(playlist: fetched.url, decisions: result.decisions, warnings: result.warnings))
        let output = rewriteMedia(
            result.playlist, base: fetched.url, variables: view.variables, playlistID: playlistID, live: true, now: now)
        let shape =
            options.incrementalPolls
            ? WindowShape.make(
                input: fetched.bytes, lines: input.lines, mediaSequence: view.mediaSequence,
                segments: view.segments.count, lastIsContent: result.decisions.last?.isAd == false, output: output)
            : nil
        state.withLock { s in
            s.lastPolls[playlistID] = ProxyState.LastPoll(
                url: fetched.url, input: fetched.bytes, decisions: result.decisions, warnings: result.warnings,
                output: output, fullAt: now, stallAfter: stallAfter, shape: shape)
        }
        return output
    }

    /// Writes a cleaned media playlist with every URI turned into a proxy route. Routes of URI lines are cached per
    /// playlist by the line's text, so a poll of a sliding window resolves and maps only its new segments; the
    /// output bytes are written directly.
    private func rewriteMedia(
        _ playlist: Playlist, base: String, variables: Variables, playlistID: String, live: Bool, now: Double
    ) -> [UInt8] {
        let prefix = Array("/\(token.value)/".utf8)
        let slatePrefix = prefix + Array("slate/\(playlistID)/".utf8)
        let slateStem = ProxyState.slateStem
        let lifetime = options.mappingLifetime
        let refreshEvery = min(10, lifetime / 4)
        let lines = playlist.lines
        var size = 0
        for i in lines.indices { size &+= lines[i].bytes.count &+ 2 }
        var out: [UInt8] = []
        out.reserveCapacity(size + size / 4)
        state.withLock { s in
            s.prune(now: now, lifetime: lifetime)
            var cache =
                s.routeCaches.removeValue(forKey: playlistID) ?? ProxyState.RouteCache(base: base, variables: variables)
            if cache.base != base || cache.variables != variables {
                cache = ProxyState.RouteCache(base: base, variables: variables)
            }
            let baseReference = URIReference(base)
            // Lines are read in place (a line copied whole costs a retain per field).
            for i in lines.indices {
                if lines[i].isURI {
                    if live, lines[i].bytes.starts(with: slateStem) {
                        out += slatePrefix
                        out += lines[i].bytes.dropFirst(slateStem.count)
                    } else {
                        s.appendRoute(
                            lines[i], cache: &cache, into: &out, base: baseReference, prefix: prefix, now: now,
                            refreshEvery: refreshEvery)
                    }
                    ProxyState.appendEnding(lines[i].ending, to: &out)
                    continue
                }
                switch lines[i].knownTag {
                case .key, .sessionKey, .map, .define: break
                default:
                    out += lines[i].bytes
                    ProxyState.appendEnding(lines[i].ending, to: &out)
                    continue
                }
                let line = lines[i]
                guard let tag = line.tag, let known = tag.known, var a = tag.attributes else {
                    out += line.bytes
                    ProxyState.appendEnding(line.ending, to: &out)
                    continue
                }
                switch known {
                case .key, .sessionKey, .map:
                    guard let raw = a.quotedString("URI") else {
                        out += line.bytes
                        break
                    }
                    if live, known == .map, raw.hasPrefix("slate/") {
                        // The fMP4 slates' init section (LiveAdFilter's slateMapURI).
                        a.setQuoted("URI", String(decoding: slatePrefix, as: UTF8.self) + raw.dropFirst(6))
                        out += Array(Tag.attributes(known, a).rendered.utf8)
                        break
                    }
                    let url = ProxyState.resolve(raw, variables: variables, base: baseReference)
                    let kind: ProxyState.Kind = known == .map ? .segment : .key
                    let id = s.id(for: url, kind: kind, now: now)
                    let route =
                        kind == .key
                        ? "/\(token.value)/k/\(id).key"
                        : "/\(token.value)/s/\(id).\(ProxyState.extensionOf(url, default: "mp4"))"
                    a.setQuoted("URI", route)
                    out += Array(Tag.attributes(known, a).rendered.utf8)
                case .define:
                    if let defined = ProxyState.definition(a, variables: variables) {
                        out += Array(Tag.attributes(.define, defined).rendered.utf8)
                    } else {
                        out += line.bytes
                    }
                default:
                    out += line.bytes
                }
                ProxyState.appendEnding(line.ending, to: &out)
            }
            cache.trim(now: now, lifetime: lifetime)
            s.routeCaches[playlistID] = cache
        }
        return out
    }

    private func rewriteMultivariant(_ playlist: Playlist, base: String) -> [UInt8] {
        let prefix = "/\(token.value)/"
        let baseReference = URIReference(base)
        let now = ProxyClock.now
        let variables = playlist.multivariant(url: base).variables
        var lines = playlist.lines
        state.withLock { s in
            s.multivariantVariables = variables
            s.prune(now: now, lifetime: options.mappingLifetime)
            for index in lines.indices {
                switch lines[index].content {
                case .uri:
                    let url = ProxyState.resolve(lines[index].uri ?? "", variables: variables, base: baseReference)
                    let id = s.id(for: url, kind: .playlist, now: now)
                    lines[index] = PlaylistLine(uri: prefix + "p/\(id).m3u8", ending: lines[index].ending)
                case .tag(let tag):
                    guard let known = tag.known, var a = tag.attributes else { continue }
                    let name: String
                    let kind: ProxyState.Kind
                    switch known {
                    case .media, .iFrameStreamInf:
                        (name, kind) = ("URI", .playlist)
                    case .sessionKey:
                        (name, kind) = ("URI", .key)
                    case .sessionData:
                        (name, kind) = ("URI", .raw)
                    case .contentSteering:
                        (name, kind) = ("SERVER-URI", .raw)
                    case .define:
                        if let defined = ProxyState.definition(a, variables: variables) {
                            lines[index] = PlaylistLine(tag: .attributes(.define, defined), ending: lines[index].ending)
                        }
                        continue
                    default:
                        continue
                    }
                    guard let raw = a.quotedString(name) else { continue }
                    let url = ProxyState.resolve(raw, variables: variables, base: baseReference)
                    let id = s.id(for: url, kind: kind, now: now)
                    let route: String
                    switch kind {
                    case .playlist: route = prefix + "p/\(id).m3u8"
                    case .key: route = prefix + "k/\(id).key"
                    default: route = prefix + "r/\(id)"
                    }
                    a.setQuoted(name, route)
                    lines[index] = PlaylistLine(tag: .attributes(known, a), ending: lines[index].ending)
                default:
                    continue
                }
            }
        }
        return Playlist(lines: lines, hasByteOrderMark: false).write()
    }

    // MARK: Segments, keys, slates

    private func segment(_ url: String, request: HTTPRequest) async -> HTTPResponse {
        if segmentMode == .redirect {
            var response = HTTPResponse(status: .found)
            response.headers.add(name: "Location", value: url)
            return response
        }
        var headers: [(name: String, value: String)] = []
        if let range = request.headers["Range"] { headers.append((name: "Range", value: range)) }
        if let ifRange = request.headers["If-Range"] { headers.append((name: "If-Range", value: ifRange)) }
        let upstream: RemoteStream
        do {
            upstream = try await fetcher.open(url, headers: headers)
        } catch {
            return failure(error)
        }
        let status = upstream.head.status
        if let error = RemotePlaylistFetcher.statusError(status, url: url) {
            upstream.cancel()
            if status == 416 {
                var response = HTTPResponse.error(.rangeNotSatisfiable)
                if let cr = upstream.head.header("Content-Range") {
                    response.headers.add(name: "Content-Range", value: cr)
                }
                return response
            }
            return failure(error)
        }
        var response = HTTPResponse(status: HTTPStatus(code: status))
        let type = upstream.head.header("Content-Type") ?? ProxyState.contentType(for: url)
        response.headers.add(name: "Content-Type", value: type)
        if let contentRange = upstream.head.header("Content-Range") {
            response.headers.add(name: "Content-Range", value: contentRange)
        }
        let length = upstream.head.header("Content-Length").flatMap { UInt64($0) }
        response.body = upstream.relayBody(length: length)
        return response
    }

    /// A content init section (fMP4), fetched once and kept (a few, most recent).
    private func contentInit(_ url: String) async throws(ProxyError) -> [UInt8] {
        if let cached = state.withLock({ $0.initCache[url] }) { return cached }
        let bytes = try await fetcher.fetchSmall(url, maxBytes: fetcher.options.maxSmallBodyBytes).1
        state.withLock { s in
            if s.initCache.count >= 8 { s.initCache.removeAll() }
            s.initCache[url] = bytes
        }
        return bytes
    }

    private func small(_ url: String, contentType: String?) async -> HTTPResponse {
        do {
            let (head, bytes) = try await fetcher.fetchSmall(url, maxBytes: fetcher.options.maxSmallBodyBytes)
            let type = contentType ?? head.header("Content-Type") ?? "application/octet-stream"
            var response = HTTPResponse.bytes(bytes, contentType: type)
            response.headers.add(name: "Cache-Control", value: "no-cache")
            return response
        } catch {
            return failure(error)
        }
    }

    private func slate(playlist: String, msn: String) async -> HTTPResponse {
        guard let sequence = UInt64(msn) else { return .error(.notFound) }
        let slot = state.withLock { $0.filters[playlist]?.slate(sequence) }
        guard let slot else { return expired() }
        let cached = state.withLock { $0.slateCache[ProxyState.SlateKey(playlist: playlist, sequence: sequence)] }
        if let cached { return .bytes(cached, contentType: slot.isFragmentedMP4 ? "video/mp4" : "video/mp2t") }
        var anchor: [UInt8]?
        if let anchorURI = slot.anchorURI {
            anchor = try? await fetcher.fetchSmall(anchorURI, maxBytes: 64 << 20).1
        }
        if let encrypted = anchor, let keyURI = slot.anchorKeyURI, let iv = slot.anchorIV {
            // An AES-128 anchor is read in the clear (its key fetched like the player's, with the same headers).
            let key = try? await fetcher.fetchSmall(keyURI, maxBytes: 64).1
            anchor = key.flatMap { AES128.decryptCBC(encrypted, key: $0, iv: iv) }
        }
        let bytes: [UInt8]?
        let type: String
        if slot.isFragmentedMP4 {
            var anchorInit: [UInt8]?
            if let mapURI = slot.anchorMapURI { anchorInit = try? await contentInit(mapURI) }
            bytes = await slates.fragmentedSlate(for: slot, anchor: anchor, anchorInit: anchorInit)
            type = "video/mp4"
        } else {
            bytes = await slates.slate(for: slot, anchor: anchor)
            type = "video/mp2t"
        }
        guard let bytes else {
            return .text("503 Service Unavailable: no slate could be made for \(msn)\n", status: .serviceUnavailable)
        }
        state.withLock { s in
            s.slateCache[ProxyState.SlateKey(playlist: playlist, sequence: sequence)] = bytes
            if s.slateCache.count > 32, let oldest = s.slateCache.keys.min(by: { $0.sequence < $1.sequence }) {
                s.slateCache[oldest] = nil
            }
        }
        return .bytes(bytes, contentType: type)
    }
}

extension Optional {
    func asyncFlatMap<U>(_ transform: (Wrapped) async -> U?) async -> U? {
        guard let value = self else { return nil }
        return await transform(value)
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

/// The proxy's mutable state: routes, live filters, stall watches, recent slates.
struct ProxyState {
    enum Kind: Hashable {
        case playlist, segment, key, raw
    }
    struct Entry {
        var url: String
        var kind: Kind
        var lastUsed: Double
        /// The route's file extension (from the URL's path), computed once.
        var fileExtension: String = ""
    }
    struct RouteKey: Hashable {
        var url: String
        var kind: Kind
    }
    struct Watch {
        /// The bytes of the last poll (shared with the fetched buffer, not copied).
        var input: [UInt8]
        var changedAt: Double
        var stalled = false
    }
    struct SlateKey: Hashable {
        var playlist: String
        var sequence: UInt64
    }

    /// A media playlist's routes by the text of its URI lines, so a poll maps only the segments it has not seen.
    struct RouteCache {
        struct Route {
            var id: String
            /// The rewritten URI line (without its line ending).
            var line: [UInt8]
            /// When the route's ``Entry/lastUsed`` was last refreshed.
            var refreshed: Double
            /// When a poll last held this URI.
            var seen: Double
        }
        var base: String
        var variables = Variables()
        var entries: [URIKey: Route] = [:]
        var lastTrim: Double = 0

        /// Writes a cached route's line (read in place, not copied out of the cache) and notes that a poll held it;
        /// false when the route itself was pruned.
        static func reuse(
            _ route: inout Route, into out: inout [UInt8], state s: inout ProxyState, now: Double,
            every refreshEvery: Double
        ) -> Bool {
            if now - route.refreshed >= refreshEvery {
                // Keeps the route alive (or finds that it was pruned).
                guard s.touch(route.id, now: now) else { return false }
                route.refreshed = now
            }
            route.seen = now
            out += route.line
            return true
        }

        /// Forgets URIs no poll has held for `lifetime` seconds (checked at most every 10 s).
        mutating func trim(now: Double, lifetime: Double) {
            guard now - lastTrim >= min(10, lifetime / 4) else { return }
            lastTrim = now
            entries = entries.filter { now - $0.value.seen <= lifetime }
        }
    }
    static let slateStem = Array("slate/".utf8)
    /// The last live poll of a playlist: its input bytes, decisions and warnings, and the bytes served.
    struct LastPoll {
        var url: String
        var input: [UInt8]
        var decisions: [SegmentDecision]
        var warnings: [String]
        var output: [UInt8]
        /// When the playlist was last filtered in full.
        var fullAt: Double
        /// Seconds the playlist may stay identical before a stall is reported.
        var stallAfter: Double
        /// Where the parts of a plain window are (nil: the next poll is filtered in full unless it repeats this one).
        var shape: WindowShape?
    }
    /// The parser's default limits (a poll answered incrementally stays within them as a parsed one must).
    static let limits = PlaylistLimits()
    var lastPolls: [String: LastPoll] = [:]
    var pollCounts = AdStrippingProxy.PollCounts()
    /// fMP4 content init sections by URL (for the slates' track and timeline).
    var initCache: [String: [UInt8]] = [:]

    /// Byte equality by memcmp.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { same(a, a.indices, b, b.indices) }

    /// Byte equality of two ranges (memcmp).
    static func same(_ a: [UInt8], _ ra: Range<Int>, _ b: [UInt8], _ rb: Range<Int>) -> Bool {
        guard ra.count == rb.count else { return false }
        guard !ra.isEmpty else { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                guard let p = x.baseAddress, let q = y.baseAddress else { return false }
                return memcmp(p + ra.lowerBound, q + rb.lowerBound, ra.count) == 0
            }
        }
    }

    var byID: [String: Entry] = [:]
    var byURL: [RouteKey: String] = [:]
    var routeCaches: [String: RouteCache] = [:]
    /// The multivariant playlist's EXT-X-DEFINE variables (media playlists may IMPORT them).
    var multivariantVariables: Variables?
    var next: UInt64 = 0
    var filters: [String: LiveAdFilter] = [:]
    var watches: [String: Watch] = [:]
    var slateCache: [SlateKey: [UInt8]] = [:]
    var lastPrune: Double = 0

    /// Notes a live poll of a playlist: a stall when its bytes have not changed for `stallAfter` seconds, a resume
    /// when they change again (by byte comparison with the previous poll).
    mutating func watch(
        _ playlistID: String, input: [UInt8], url: String, stallAfter: Double, now: Double
    ) -> AdStrippingProxy.Event? {
        var event: AdStrippingProxy.Event?
        var watch = watches[playlistID] ?? Watch(input: input, changedAt: now)
        if !ProxyState.same(watch.input, input) {
            if watch.stalled { event = .resumed(playlist: url) }
            watch = Watch(input: input, changedAt: now)
        } else if !watch.stalled, now - watch.changedAt >= stallAfter {
            watch.stalled = true
            event = .stalled(playlist: url, seconds: now - watch.changedAt)
        }
        watches[playlistID] = watch
        return event
    }

    /// The route ID of an upstream URL (the whole URL, query included), made on first use.
    mutating func id(for url: String, kind: Kind, now: Double) -> String {
        let key = RouteKey(url: url, kind: kind)
        if let id = byURL[key] {
            byID[id]?.lastUsed = now
            return id
        }
        next &+= 1
        let id = String(next, radix: 36)
        byID[id] = Entry(url: url, kind: kind, lastUsed: now)
        byURL[key] = id
        return id
    }

    /// The route ID and file extension of an upstream URL (the extension computed only for a new route).
    mutating func route(for url: String, kind: Kind, now: Double, defaultExtension: String) -> (String, String) {
        let id = id(for: url, kind: kind, now: now)
        if let ext = byID[id]?.fileExtension, !ext.isEmpty { return (id, ext) }
        let ext = ProxyState.extensionOf(url, default: defaultExtension)
        byID[id]?.fileExtension = ext
        return (id, ext)
    }

    /// Marks a route as used now; false when it is gone (pruned).
    mutating func touch(_ id: String, now: Double) -> Bool {
        guard let index = byID.index(forKey: id) else { return false }
        byID.values[index].lastUsed = now
        return true
    }

    /// Writes the route of a segment URI line. Looked up by the line's bytes (no String made): only a new URI is
    /// resolved and mapped.
    mutating func appendRoute(
        _ line: PlaylistLine, cache: inout RouteCache, into out: inout [UInt8], base: URIReference, prefix: [UInt8],
        now: Double, refreshEvery: Double
    ) {
        let key = URIKey(line.bytes)
        if let index = cache.entries.index(forKey: key) {
            if RouteCache.reuse(&cache.entries.values[index], into: &out, state: &self, now: now, every: refreshEvery) {
                return
            }
            cache.entries.remove(at: index)
        }
        out += segmentRoute(line.uri ?? "", key: key, cache: &cache, base: base, prefix: prefix, now: now)
    }

    /// Maps a segment URI line (`raw`, trimmed; `key`, its bytes as in the line) to its route (made on first use)
    /// and caches the rewritten line.
    mutating func segmentRoute(
        _ raw: String, key: URIKey, cache: inout RouteCache, base: URIReference, prefix: [UInt8], now: Double
    ) -> [UInt8] {
        let url = ProxyState.resolve(raw, variables: cache.variables, base: base)
        let (id, ext) = route(for: url, kind: .segment, now: now, defaultExtension: "ts")
        var line = prefix
        line += Array("s/\(id).\(ext)".utf8)
        cache.entries[key.owned] = RouteCache.Route(id: id, line: line, refreshed: now, seen: now)
        return line
    }

    static func appendEnding(_ ending: LineEnding, to out: inout [UInt8]) {
        switch ending {
        case .lf: out.append(0x0A)
        case .crlf:
            out.append(0x0D)
            out.append(0x0A)
        case .none: break
        }
    }

    /// The bytes of a URI line as a dictionary key: hashed once (FNV-1a over 8-byte words, then the Hasher sees one
    /// integer), compared with memcmp.
    struct URIKey: Hashable {
        var bytes: ArraySlice<UInt8>
        var digest: Int

        init(_ bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            bytes.withUnsafeBytes { raw in
                var i = 0
                let count = raw.count
                while i &+ 8 <= count {
                    h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01b3
                    i &+= 8
                }
                while i < count {
                    h = (h ^ UInt64(raw[i])) &* 0x0000_0100_0000_01b3
                    i &+= 1
                }
            }
            digest = Int(truncatingIfNeeded: h ^ UInt64(bytes.count))
        }

        private init(bytes: ArraySlice<UInt8>, digest: Int) {
            self.bytes = bytes
            self.digest = digest
        }

        /// The key with bytes of its own (a view into a poll's buffer would keep the whole buffer alive).
        var owned: URIKey { URIKey(bytes: ArraySlice(Array(bytes)), digest: digest) }

        static func == (a: URIKey, b: URIKey) -> Bool {
            guard a.digest == b.digest, a.bytes.count == b.bytes.count else { return false }
            return a.bytes.withUnsafeBytes { x in
                b.bytes.withUnsafeBytes { y in
                    guard let p = x.baseAddress, let q = y.baseAddress else { return true }
                    return memcmp(p, q, x.count) == 0
                }
            }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(digest) }
    }

    /// A URI with its `{$name}` variables substituted (RFC 8216bis §4.3), resolved against the playlist's URL.
    static func resolve(_ raw: String, variables: Variables, base: URIReference) -> String {
        let substituted = variables.values.isEmpty ? raw : (variables.substitute(raw)?.text ?? raw)
        return URIReference(substituted).resolved(against: base).description
    }

    /// An EXT-X-DEFINE that takes its value from somewhere the player cannot see through the proxy (IMPORT from
    /// the upstream multivariant playlist, QUERYPARAM of the upstream URL), restated as NAME/VALUE; nil when the
    /// tag can stay as it is.
    static func definition(_ a: AttributeList, variables: Variables) -> AttributeList? {
        let name = a.quotedString("IMPORT") ?? a.quotedString("QUERYPARAM")
        guard let name, let value = variables.values[name], !value.contains("\"") else { return nil }
        return [Attribute(name: "NAME", rawValue: "\"\(name)\""), Attribute(name: "VALUE", rawValue: "\"\(value)\"")]
    }

    /// Drops routes no playlist has referenced for `lifetime` seconds (at most every 10 s).
    mutating func prune(now: Double, lifetime: Double) {
        guard now - lastPrune >= 10 else { return }
        lastPrune = now
        let stale = byID.filter { now - $0.value.lastUsed > lifetime && $0.value.kind != .playlist }
        for (id, entry) in stale {
            byID[id] = nil
            byURL[RouteKey(url: entry.url, kind: entry.kind)] = nil
        }
    }

    /// The file extension of a URL's last path segment (letters and digits only), or `default`.
    static func extensionOf(_ url: String, default fallback: String) -> String {
        // By bytes: the path ends at `?` or `#`; the name starts after the last `/` (after any `//authority`).
        let u = url.utf8
        let end = u.firstIndex { $0 == 0x3F || $0 == 0x23 } ?? u.endIndex
        var start = u.startIndex
        if let scheme = url[..<end].firstRange(of: "://") { start = scheme.upperBound }
        guard let slash = url[start..<end].utf8.lastIndex(of: 0x2F) else { return fallback }
        let name = url[url.utf8.index(after: slash)..<end]
        guard let dot = name.utf8.lastIndex(of: 0x2E) else { return fallback }
        let ext = name.utf8[name.utf8.index(after: dot)...]
        guard !ext.isEmpty, ext.count <= 5,
            ext.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return fallback }
        return String(decoding: ext, as: UTF8.self).lowercased()
    }

    static func contentType(for url: String) -> String {
        switch extensionOf(url, default: "ts") {
        case "ts": return "video/mp2t"
        case "aac": return "audio/aac"
        case "mp4", "m4s", "m4v", "cmfv": return "video/mp4"
        case "m4a", "cmfa": return "audio/mp4"
        case "vtt", "webvtt": return "text/vtt"
        default: return "application/octet-stream"
        }
    }
}

/// Makes the slate that stands in for one live ad segment.
public protocol ProxySlateSource: Sendable {
    /// The slate's bytes for `slot`; `anchor` holds the last content segment before it, when it could be fetched.
    func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]?
    /// An fMP4 slate (fragments for the init section ``fragmentedSlateInit(contentInit:)``); `anchor` and
    /// `anchorInit` hold the last content segment before it and that segment's init section, when they could be
    /// fetched.
    func fragmentedSlate(for slot: SlateSlot, anchor: [UInt8]?, anchorInit: [UInt8]?) async -> [UInt8]?
    /// The init section the fMP4 slates of a playlist play with (served at `slate/<playlist>/init.mp4`);
    /// `contentInit` is the content's init section, when it could be fetched.
    func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]?
}

extension ProxySlateSource {
    /// The shipped template's slate, its first decode time where the content timeline is (the anchor's video
    /// decode time plus the slot's offset; the offset alone when the anchor cannot be read).
    public func fragmentedSlate(for slot: SlateSlot, anchor: [UInt8]?, anchorInit: [UInt8]?) async -> [UInt8]? {
        guard let template = FragmentedSlateTemplate.shipped else { return nil }
        var start = slot.offsetFromAnchor
        if let anchor, let anchorInit,
            let content = FragmentedSlateTemplate.contentStart(segment: anchor, initSection: anchorInit)
        {
            start += content
        }
        let track = anchorInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        return template.slate(duration: slot.duration, start: start, track: track)
    }

    /// The shipped template's init section, made for the content's video track (ID and timescale).
    public func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]? {
        let track = contentInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        return FragmentedSlateTemplate.shipped?.initSection(for: track)
    }
}
