import FileRange
import Foundation
public import HTTPClient
public import LoopbackHTTP

/// An error from ``CachingMediaProxy``: an opaque ``Code`` plus context.
public struct CachingProxyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case cannotOpenCache, serverFailed, invalidURL, originFailed, rangeNotSatisfiable, readFailed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The cache folder or one of its files could not be created or opened.
        public static let cannotOpenCache = Code(.cannotOpenCache)
        /// The loopback server could not start.
        public static let serverFailed = Code(.serverFailed)
        /// The remote URL is not an absolute http(s) URL.
        public static let invalidURL = Code(.invalidURL)
        /// The origin refused or failed the request (its HTTP status, when it sent one, is in ``status``).
        public static let originFailed = Code(.originFailed)
        /// The requested offset lies at or past the resource's end.
        public static let rangeNotSatisfiable = Code(.rangeNotSatisfiable)
        /// A read stopped: the origin kept failing, or its resource changed while it was read.
        public static let readFailed = Code(.readFailed)

        public var description: String {
            switch value {
            case .cannotOpenCache: "cannot open cache"
            case .serverFailed: "loopback server failed"
            case .invalidURL: "invalid URL"
            case .originFailed: "origin failed"
            case .rangeNotSatisfiable: "range not satisfiable"
            case .readFailed: "read failed"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// What the lower layer said.
    public var detail: String
    /// The origin's HTTP status, for ``Code/originFailed`` when it answered.
    public var status: Int?

    /// An error with context.
    public init(_ code: Code, detail: String, status: Int? = nil) {
        self.code = code
        self.detail = detail
        self.status = status
    }

    public var description: String { "\(code): \(detail)" }
}

/// A loopback proxy for remote progressive media (mp3, m4a, mp4, aac, flac, a single `.ts`) that needs request
/// headers a player cannot send (Authorization, cookies), with an on-disk cache by byte range.
///
/// A player's Range request is answered from the cache for the bytes it holds and from the origin, with the
/// caller's headers, for the gaps; bytes stream to the player as they arrive and are written to the cache.
/// Overlapping concurrent requests fetch each byte from the origin once. An origin that ignores Range is filled
/// sequentially. A change of the origin's `ETag`/`Last-Modified` empties the entry. The cache is keyed by the URL
/// without credentials, survives restarts, keeps to a size budget by evicting whole least-recently-used entries,
/// and serves fully cached resources when the origin is unreachable.
///
/// Each loopback URL is a source of a `LoopbackHTTP.PlaybackServer` (`LoopbackHTTP.PlaybackServer.shared` unless
/// another is given) under a token of its own, on the same port as the app's playback sessions and ad-stripping
/// proxies, with one lifecycle (revive after the background included).
public final class CachingMediaProxy: Sendable {
    /// Settings.
    public struct Options: Sendable {
        /// The folder that holds the cache.
        public var cacheDirectory: String
        /// The cache's size budget in bytes. Every origin fetch (at most ``fetchWindow`` bytes) reserves its bytes
        /// in one account shared by all fetches before it writes; whole least-recently-used entries that no fetch is
        /// filling go to make room, and when there is none the bytes are streamed to their reader from the origin
        /// uncached. A resource larger than the whole budget is always streamed through and never kept.
        public var maxCacheBytes: UInt64 = 2 << 30
        /// Upstream fetching (timeouts, retries, redirects, whether loopback/private origins are allowed).
        public var fetch = RemoteFetchOptions()
        /// The playback server's settings (port, CORS, access log), applied when this proxy starts the server (no
        /// other source is served yet); a server that already runs keeps its own, and the proxy joins it. Unset, the
        /// server's own configuration is used.
        public var server: HTTPServerConfiguration {
            get { serverConfiguration ?? HTTPServerConfiguration() }
            set { serverConfiguration = newValue }
        }
        /// The configuration set through ``server``, if any.
        var serverConfiguration: HTTPServerConfiguration?
        /// The most bytes one origin request asks for: a seek fetches only this neighbourhood.
        public var fetchWindow: UInt64 = 1 << 20
        /// Fetched bytes are made durable (data flushed, then the map replaced) after this many bytes or a second,
        /// whichever comes first.
        public var commitInterval: UInt64 = 8 << 20

        /// Options with a cache folder.
        public init(cacheDirectory: String) {
            self.cacheDirectory = cacheDirectory
        }
    }

    private struct Route: Sendable {
        var key: String
        var url: String
        var headers: [(name: String, value: String)]
    }

    private struct State {
        /// By session token (the router has matched the request's token against ``tokens`` in constant time).
        var routes: [SessionToken: Route] = [:]
        var entries: [String: CachedMediaEntry] = [:]
        /// The sources of the loopback URLs on ``server``, by token.
        var sources: [SessionToken: DeferredSource] = [:]
    }

    public let options: Options
    /// The playback server the loopback URLs are served by.
    public let server: PlaybackServer
    let index: CacheIndex
    private let fetcher: RemotePlaylistFetcher
    private let revalidator: RemotePlaylistFetcher
    private let state = LockedValue(State())
    /// Serialises reservations with the eviction of entries (the cache's one account of bytes).
    private let budget = LockedValue(())
    /// The live session tokens of ``localURL(for:headers:)`` URLs.
    private let tokens = SessionTokenSet()

    /// A proxy over the cache in `options.cacheDirectory` (created when needed), whose loopback URLs `server` serves.
    public init(options: Options, server: PlaybackServer = .shared) throws(CachingProxyError) {
        self.options = options
        self.server = server
        self.index = try CacheIndex(directory: options.cacheDirectory, maxBytes: options.maxCacheBytes)
        self.fetcher = RemotePlaylistFetcher(options: options.fetch)
        var quick = options.fetch
        quick.retries = 0
        quick.timeout = min(quick.timeout, 3)
        quick.deadline = min(quick.deadline, 3)
        self.revalidator = RemotePlaylistFetcher(options: quick)
        // A folder left over budget (a smaller --max-size than last time) is brought within it at once.
        index.evict(keeping: [])
    }

    /// The resources held in a cache folder, most recently used first (for `tsplayer cache-proxy --list`).
    public static func cachedResources(in directory: String) -> [CachedResource] {
        CacheIndex.scan(directory)
    }

    /// The cache key of a URL (its file stem in the cache folder); credentials and fragment do not count.
    public static func cacheKey(for url: String) -> String { CacheIndex.key(for: url) }

    /// A loopback URL that plays `remoteURL`, fetching it with `headers` (such as `Authorization`), under a fresh
    /// session token: `http://127.0.0.1:PORT/<token>/<file name>`. Starts the playback server when needed. When the
    /// cache holds a version of the resource, the origin is asked (cheaply) whether it is still current; an unreachable
    /// origin leaves the cache in use.
    public func localURL(for remoteURL: String, headers: [(name: String, value: String)] = [])
        async throws(CachingProxyError) -> String
    {
        let parsed = try Self.parse(remoteURL)
        let opened = try await open(remoteURL, parsed: parsed, headers: headers)
        let token = SessionToken.random()
        let source = DeferredSource(token: token) { [weak self] request, responder in
            guard let self else { return responder.respond(.error(.notFound)) }
            Task { responder.respond(await self.respond(to: request)) }
        }
        state.withLock {
            $0.routes[token] = Route(key: opened.entry.key, url: opened.entry.url, headers: opened.headers)
            $0.sources[token] = source
        }
        tokens.insert(token)
        let base: String
        do {
            base = try server.register(source, startingWith: options.serverConfiguration)
        } catch {
            tokens.remove(token)
            state.withLock {
                $0.routes[token] = nil
                $0.sources[token] = nil
            }
            throw CachingProxyError(.serverFailed, detail: "\(error)")
        }
        return base + CachingMediaProxy.fileName(of: parsed)
    }

    /// Reads `remoteURL` in process, through the same cache and origin fetches as the loopback URLs, without the
    /// server: the content information, and the bytes from `offset` (to the end, or `length` bytes), which stream
    /// as they arrive from the cache or the origin. This is what a resource loader (such as
    /// TSPlayerKit's `CachingResourceLoader` on Apple platforms) answers a player with.
    public func read(
        _ remoteURL: String, headers: [(name: String, value: String)] = [], from offset: UInt64 = 0,
        length: UInt64? = nil
    ) async throws(CachingProxyError) -> CachedRead {
        let opened = try await open(remoteURL, parsed: try Self.parse(remoteURL), headers: headers)
        let info: CachedContentInfo
        do {
            info = try await opened.entry.contentInfo(hint: offset, headers: opened.headers)
        } catch {
            throw CachingProxyError(.originFailed, detail: "\(error)", status: error.status)
        }
        guard offset < info.length || (offset == 0 && info.length == 0) else {
            throw CachingProxyError(
                .rangeNotSatisfiable, detail: "offset \(offset) of \(remoteURL), which has \(info.length) bytes")
        }
        let available = info.length - offset
        let count = min(length ?? available, available)
        let range = ByteRange(offset: offset, length: count)
        let passThrough = info.length > options.maxCacheBytes
        let bytes = range.map {
            passThrough
                ? CachedBytes(
                    PassThroughSequence(fetcher: fetcher, url: opened.entry.url, range: $0, headers: opened.headers))
                : CachedBytes(
                    CachedRangeSequence(
                        entry: opened.entry, range: $0, headers: opened.headers, epoch: opened.entry.epoch))
        }
        return CachedRead(info: info, offset: offset, length: count, bytes: bytes ?? CachedBytes(nil))
    }

    private static func parse(_ remoteURL: String) throws(CachingProxyError) -> URL {
        guard let parsed = URL(string: remoteURL), let scheme = parsed.scheme?.lowercased(),
            scheme == "http" || scheme == "https", parsed.host != nil
        else {
            throw CachingProxyError(.invalidURL, detail: "\(remoteURL) is not an absolute http(s) URL")
        }
        return parsed
    }

    /// The entry for a remote URL, marked used, revalidated with the origin, and the headers its fetches send.
    private func open(_ remoteURL: String, parsed: URL, headers: [(name: String, value: String)])
        async throws(CachingProxyError) -> (entry: CachedMediaEntry, headers: [(name: String, value: String)])
    {
        let url = CacheIndex.canonicalURL(remoteURL)
        let key = CacheIndex.key(for: remoteURL)
        let entry = try entry(key: key, url: url)
        var fetchHeaders = headers
        // Credentials in the URL travel as Basic authorization, never in the cache key.
        if let user = parsed.user, !headers.contains(where: { $0.name.lowercased() == "authorization" }) {
            let credentials = Data((user + ":" + (parsed.password ?? "")).utf8).base64EncodedString()
            fetchHeaders.append((name: "Authorization", value: "Basic " + credentials))
        }
        let now = Date().timeIntervalSince1970
        await entry.touch(now)
        index.update(
            key: key, url: url, length: entry.info?.length, held: entry.cache.available.totalLength, access: now)
        await entry.revalidate(headers: fetchHeaders, using: revalidator)
        return (entry, fetchHeaders)
    }

    /// The port the playback server listens on, while it serves a loopback URL of this proxy.
    public var boundPort: UInt16? {
        guard state.withLock({ !$0.sources.isEmpty }) else { return nil }
        return server.boundPort
    }

    /// Stops serving: every loopback URL of this proxy answers 404 from now on (the playback server stops when it
    /// serves nothing else); every open cache entry is committed.
    public func stop() async {
        let (sources, entries) = state.withLock { s -> ([DeferredSource], [CachedMediaEntry]) in
            defer {
                s.sources = [:]
                s.routes = [:]
            }
            return (Array(s.sources.values), Array(s.entries.values))
        }
        for source in sources {
            tokens.remove(source.token)
            await server.remove(source)
        }
        // Each commit flushes and fsyncs: on the blocking pool, never on a cooperative thread.
        await BlockingPool.shared.run { () -> Void in
            for entry in entries { try? entry.cache.commit() }
        }
    }

    deinit {
        // A proxy released while serving leaves the server (its routes hold it weakly and answer 404).
        for source in state.withLock({ Array($0.sources.values) }) { server.removeWithoutWaiting(source) }
    }

    /// The cache entry for `key`, opened when needed.
    private func entry(key: String, url: String) throws(CachingProxyError) -> CachedMediaEntry {
        if let existing = state.withLock({ $0.entries[key] }) { return existing }
        let index = self.index
        let created = try CachedMediaEntry(
            key: key, url: url, dataPath: index.dataPath(for: key), fetcher: fetcher, window: options.fetchWindow,
            commitInterval: options.commitInterval,
            reserve: { [weak self] entry, bytes in self?.reserve(bytes, for: entry) ?? false },
            onFetchEnd: { [weak self] entry, reserved in self?.fetchEnded(entry, reserved: reserved) })
        return state.withLock { s in
            if let raced = s.entries[key] {
                return raced
            }
            s.entries[key] = created
            return created
        }
    }

    /// Reserves `bytes` for a fetch of `entry` in the cache's budget, evicting idle entries to make room. An entry
    /// that was itself evicted gets no room: its readers stream from the origin.
    private func reserve(_ bytes: UInt64, for entry: CachedMediaEntry) -> Bool {
        budget.withLock { _ in
            guard state.withLock({ $0.entries[entry.key] === entry }) else { return false }
            let (granted, evicted) = index.reserve(bytes, for: entry.key)
            if !evicted.isEmpty {
                // A later request for an evicted resource opens a fresh entry (readers still holding the old one
                // finish from its open descriptor, or from the origin).
                state.withLock { s in
                    for key in evicted { s.entries[key] = nil }
                }
            }
            return granted
        }
    }

    private func fetchEnded(_ entry: CachedMediaEntry, reserved: UInt64) {
        budget.withLock { _ in
            let current = state.withLock { $0.entries[entry.key] === entry }
            index.release(
                reserved, for: entry.key, url: entry.url, length: entry.info?.length,
                held: current ? entry.cache.available.totalLength : nil)
        }
    }

    static func fileName(of url: URL) -> String {
        let last = url.lastPathComponent
        let allowed = last.unicodeScalars.allSatisfy { scalar in
            (scalar.value < 0x80)
                && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
        }
        return !last.isEmpty && last != "/" && allowed && !last.hasPrefix(".") ? last : "media"
    }

    // MARK: Answering

    /// Answers a request whose path starts with a session token (also usable in process, without a server).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        // Through the server the router has matched the token; in process, match the first path segment here.
        guard let token = request.sessionToken ?? request.path.split(separator: "/").first.flatMap(tokens.match),
            let route = state.withLock({ $0.routes[token] })
        else { return .error(.notFound) }
        let entry: CachedMediaEntry
        do {
            entry = try self.entry(key: route.key, url: route.url)
        } catch {
            return .error(.internalServerError)
        }
        var hint: UInt64 = 0
        let rangeRequest = request.headers.first(name: "Range").flatMap { RangeRequest.parse($0) }
        if let first = rangeRequest?.specifiers.first, case .range(let start, _) = first { hint = start }
        let info: CachedContentInfo
        do {
            info = try await entry.contentInfo(hint: hint, headers: route.headers)
        } catch {
            if let status = error.status, (400..<500).contains(status) {
                return .error(HTTPStatus(code: status))
            }
            // The reason in the body, as the ad-stripping proxy gives it (`504 Gateway Timeout: upstream ...`).
            let status = error.code == .timedOut ? HTTPStatus(code: 504) : .badGateway
            return .text(
                "\(status.code) \(status.reasonPhrase): upstream \(error.code): \(error.detail)\n", status: status)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: info.contentType)
        headers.add(name: "Accept-Ranges", value: "bytes")
        var range = ByteRange(offset: 0, length: info.length)
        var status = HTTPStatus.ok
        if let rangeRequest {
            switch rangeRequest.resolve(length: info.length, maxRanges: 1) {
            case .full:
                break
            case .unsatisfiable:
                var fields = HTTPHeaders()
                fields.add(name: "Content-Range", value: ContentRange.unsatisfiedValue(completeLength: info.length))
                return HTTPResponse(status: .rangeNotSatisfiable, headers: fields)
            case .partial(let ranges):
                if ranges.count == 1, let only = ranges.first {
                    range = only
                    status = .partialContent
                    headers.add(
                        name: "Content-Range", value: ContentRange.value(for: only, completeLength: info.length))
                }
            }
        }
        guard let range else { return .error(.internalServerError) }
        if request.method == .head || range.isEmpty {
            return HTTPResponse(
                status: status, headers: headers, body: .stream(.init(length: range.length, EmptyChunks())))
        }
        if info.length > options.maxCacheBytes {
            // Larger than the whole budget: streamed through from the origin, never kept.
            let body = PassThroughSequence(fetcher: fetcher, url: route.url, range: range, headers: route.headers)
            return HTTPResponse(status: status, headers: headers, body: .stream(.init(length: range.length, body)))
        }
        let body = CachedRangeSequence(entry: entry, range: range, headers: route.headers, epoch: entry.epoch)
        return HTTPResponse(status: status, headers: headers, body: .stream(.init(length: range.length, body)))
    }
}

/// The bytes of one range of a resource larger than the cache's whole budget (or for which the budget had no room),
/// fetched from the origin as the player reads them and never written to the cache: one ranged request per window
/// of at most ``window`` bytes, each bounded by `HTTPClient.RemoteFetchOptions.bodyDeadline` (a 200 answer is accepted
/// for a range that starts at 0, and read to the end). Ends with an error, which closes the player's connection, when
/// the origin answers another range or fewer bytes, or stalls past the deadline.
struct PassThroughSequence: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let fetcher: RemotePlaylistFetcher
    let url: String
    let range: ByteRange
    let headers: [(name: String, value: String)]

    struct PassFailure: Error, CustomStringConvertible {
        var description: String
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: PassThroughSequence
        var body: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator?
        var stream: RemoteStream?
        var left: UInt64
        /// Bytes left in the window of the request under way.
        var windowLeft: UInt64 = 0

        mutating func next() async throws -> [UInt8]? {
            guard left > 0 else {
                stream?.cancel()
                return nil
            }
            if body == nil || windowLeft == 0 {
                stream?.cancel()
                let offset = sequence.range.upperBound - left
                let count = Swift.min(left, PassThroughSequence.window)
                let range = ByteRange(offset: offset, length: count) ?? sequence.range
                var request = sequence.headers
                request.append((name: "Range", value: "bytes=\(range.offset)-\(range.upperBound - 1)"))
                let opened = try await sequence.fetcher.open(sequence.url, headers: request)
                let status = opened.head.status
                let start = opened.head.header("Content-Range").flatMap(ContentRange.parse)?.range?.lowerBound
                guard (status == 206 && start == range.offset) || (status == 200 && range.offset == 0) else {
                    opened.cancel()
                    throw PassFailure(description: "\(sequence.url): the origin answered \(status) for a range")
                }
                stream = opened
                body = opened.body.makeAsyncIterator()
                windowLeft = status == 200 ? left : range.length
            }
            guard let chunk = try await body?.next() else {
                throw PassFailure(description: "\(sequence.url): the origin's body ended \(left) bytes early")
            }
            let usable = UInt64(chunk.count) <= windowLeft ? chunk : Array(chunk[..<Int(windowLeft)])
            left -= UInt64(usable.count)
            windowLeft -= UInt64(usable.count)
            return usable
        }
    }

    /// The most bytes one origin request asks for.
    static let window: UInt64 = 8 << 20

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self, left: range.length) }
}

/// No chunks (for HEAD, whose body is never sent).
struct EmptyChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async -> [UInt8]? { nil }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

/// The bytes of one range of a cached resource, in order: read from the cache where held, waiting for (and
/// starting) origin fetches for the gaps. Ends with an error, which closes the player's connection, rather than
/// send a byte of another version or one the origin never gave.
struct CachedRangeSequence: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let entry: CachedMediaEntry
    let range: ByteRange
    let headers: [(name: String, value: String)]
    let epoch: UInt64
    static let chunk: UInt64 = 256 << 10

    struct ReadFailure: Error {
        var detail: String
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: CachedRangeSequence
        var position: UInt64
        let startFailures: Int
        /// The rest of the range from the origin, uncached, once the cache's budget had no room for it.
        var passing: PassThroughSequence.AsyncIterator?

        mutating func next() async throws -> [UInt8]? {
            if passing != nil { return try await passing?.next() }
            let entry = sequence.entry
            let end = sequence.range.upperBound
            guard position < end else { return nil }
            var waits = 0
            while true {
                if Task.isCancelled { throw ReadFailure(detail: "cancelled") }
                guard entry.epoch == sequence.epoch else { throw ReadFailure(detail: "the origin's resource changed") }
                let seen = entry.generation
                let run = entry.heldRun(from: position, limit: Swift.min(end - position, CachedRangeSequence.chunk))
                // A read of up to `chunk` bytes from the cache file (a `pread`, which may wait on the disk): on the
                // blocking pool, not on the cooperative thread this iterator runs on.
                if run > 0, let wanted = ByteRange(offset: position, length: run),
                    let bytes = try await BlockingPool.shared.run({
                        () throws(SparseRangeCacheError) -> [UInt8]? in try entry.cache.read(wanted)
                    })
                {
                    guard entry.epoch == sequence.epoch else {
                        throw ReadFailure(detail: "the origin's resource changed")
                    }
                    position += run
                    return bytes
                }
                if entry.failures > startFailures + 2 {
                    throw ReadFailure(detail: "the origin keeps failing: \(entry.lastError.map { "\($0)" } ?? "")")
                }
                let cover = entry.ensureFetch(covering: position, until: end, headers: sequence.headers)
                if cover.refused, let rest = ByteRange(lowerBound: position, upperBound: end) {
                    let through = PassThroughSequence(
                        fetcher: entry.fetcher, url: entry.url, range: rest, headers: sequence.headers)
                    passing = through.makeAsyncIterator()
                    return try await passing?.next()
                }
                // Read ahead one window, so that the next origin request overlaps this one's transfer.
                if let covered = cover.until, covered < end, covered - position <= entry.window {
                    entry.ensureFetch(covering: covered, until: end, headers: sequence.headers)
                }
                waits += 1
                if waits > 60 && entry.isIdle {
                    throw ReadFailure(detail: "no fetch progresses at \(position)")
                }
                await entry.wait(since: seen)
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self, position: range.offset, startFailures: entry.failures)
    }
}

/// One in-process read of a cached resource (see ``CachingMediaProxy/read(_:headers:from:length:)``).
public struct CachedRead: Sendable {
    /// The resource's content information (length, type, validators).
    public var info: CachedContentInfo
    /// Where the bytes start.
    public var offset: UInt64
    /// How many bytes ``bytes`` yields.
    public var length: UInt64
    /// The bytes, in order, as they become available.
    public var bytes: CachedBytes
}

/// The bytes of a ``CachedRead``: chunks of at most 256 KiB read from the cache, waiting for origin fetches where
/// the cache has a gap. Throws ``CachingProxyError`` (``CachingProxyError/Code/readFailed``) when the origin keeps
/// failing or its resource changes during the read, rather than yield a byte of another version.
public struct CachedBytes: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    private let sequence: CachedRangeSequence?
    private let passThrough: PassThroughSequence?

    init(_ sequence: CachedRangeSequence?) {
        self.sequence = sequence
        self.passThrough = nil
    }

    init(_ passThrough: PassThroughSequence) {
        self.sequence = nil
        self.passThrough = passThrough
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var inner: CachedRangeSequence.AsyncIterator?
        var passing: PassThroughSequence.AsyncIterator?

        public mutating func next() async throws(CachingProxyError) -> [UInt8]? {
            do {
                if var iterator = passing {
                    defer { passing = iterator }
                    return try await iterator.next()
                }
                guard var iterator = inner else { return nil }
                defer { inner = iterator }
                return try await iterator.next()
            } catch let failure as CachedRangeSequence.ReadFailure {
                throw CachingProxyError(.readFailed, detail: failure.detail)
            } catch {
                throw CachingProxyError(.readFailed, detail: "\(error)")
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(inner: sequence?.makeAsyncIterator(), passing: passThrough?.makeAsyncIterator())
    }
}
