import FileRange
import Foundation
import HTTPClient

/// One cached remote resource while the proxy uses it: its sparse cache, its content info, the origin fetches in
/// flight (so that overlapping readers fetch each byte once), and readers waiting for bytes.
final class CachedMediaEntry: Sendable {
    /// An origin fetch in flight: it will write `position..<end` in order (a sequential fetch writes from 0 to the
    /// end whatever was asked).
    struct Fetch: Sendable {
        var position: UInt64
        var end: UInt64
        var sequential: Bool
        /// Bytes the cache's budget reserved for it (``CacheIndex/reserve(_:for:)``): it never writes more.
        var reserved: UInt64 = 0
    }

    /// What ``ensureFetch(covering:until:headers:)`` found.
    struct Cover {
        /// Where the fetch that covers the position stops, when it is a ranged fetch.
        var until: UInt64?
        /// The cache's budget has no room for the bytes at the position: read them from the origin, uncached.
        var refused = false
    }

    private struct State {
        var info: CachedContentInfo?
        var fetches: [Int: Fetch] = [:]
        var nextFetchID = 0
        /// Bumped on every write, fetch end and failure; readers wait for it to move.
        var generation: UInt64 = 0
        /// Bumped when the origin's validators changed and the cache was emptied.
        var epoch: UInt64 = 0
        var failures = 0
        var lastError: ProxyError?
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
        var uncommitted: UInt64 = 0
        var lastCommit = ContinuousClock.now
        var commitScheduled = false
    }

    let key: String
    let url: String
    let cache: SparseRangeCache
    let window: UInt64
    let commitInterval: UInt64
    private let state: LockedValue<State>
    let fetcher: RemotePlaylistFetcher
    /// Reserves bytes in the cache's budget before a fetch writes them (false: no room).
    private let reserve: @Sendable (CachedMediaEntry, UInt64) -> Bool
    /// Told when a fetch ended, with the bytes it had reserved.
    private let onFetchEnd: @Sendable (CachedMediaEntry, UInt64) -> Void

    init(
        key: String, url: String, dataPath: String, fetcher: RemotePlaylistFetcher, window: UInt64,
        commitInterval: UInt64, reserve: @escaping @Sendable (CachedMediaEntry, UInt64) -> Bool,
        onFetchEnd: @escaping @Sendable (CachedMediaEntry, UInt64) -> Void
    ) throws(CachingProxyError) {
        self.key = key
        self.url = url
        self.fetcher = fetcher
        self.window = max(window, 1)
        self.commitInterval = commitInterval
        self.reserve = reserve
        self.onFetchEnd = onFetchEnd
        do {
            cache = try SparseRangeCache(dataPath: dataPath, mode: CacheIndex.fileMode)
        } catch {
            throw CachingProxyError(.cannotOpenCache, detail: "\(error)")
        }
        var metadata = cache.metadata
        if metadata["url"] != url {
            // A new entry, or a key collision with another URL: start empty.
            try? cache.removeAll()
            metadata = ["url": url]
            cache.setMetadata(metadata)
        }
        state = LockedValue(State(info: CachedContentInfo(metadata: metadata)))
    }

    var info: CachedContentInfo? { state.withLock { $0.info } }
    var epoch: UInt64 { state.withLock { $0.epoch } }
    var failures: Int { state.withLock { $0.failures } }
    var lastError: ProxyError? { state.withLock { $0.lastError } }
    var generation: UInt64 { state.withLock { $0.generation } }
    var isIdle: Bool { state.withLock { $0.fetches.isEmpty } }

    /// Whether the cache holds the whole resource.
    var isComplete: Bool {
        guard let info = info else { return false }
        guard let all = ByteRange(offset: 0, length: info.length) else { return false }
        return cache.contains(all)
    }

    /// Records the time of use in the metadata, and commits.
    func touch(_ now: Double) async {
        var metadata = cache.metadata
        metadata["accessed"] = String(now)
        cache.setMetadata(metadata)
        await commit()
    }

    /// Commits the cache (its data flushed, then its map written durably) on FileRange's `BlockingPool`: the
    /// flushes wait on the disk, never on one of Swift's cooperative threads.
    private func commit() async {
        await BlockingPool.shared.run { () -> Void in try? self.cache.commit() }
    }

    // MARK: Waiting

    private func signal() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.generation &+= 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the generation differs from `seen` (at once if it already does), or after `timeout`.
    func wait(since seen: UInt64, timeout: Duration = .seconds(2)) async {
        let id = state.withLock { s -> Int in
            s.nextWaiterID += 1
            return s.nextWaiterID
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.resumeWaiter(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.generation != seen || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            self.resumeWaiter(id)
        }
        timer.cancel()
    }

    private func resumeWaiter(_ id: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }

    // MARK: Reading

    /// How many bytes from `position` (at most `limit`) the cache holds contiguously.
    func heldRun(from position: UInt64, limit: UInt64) -> UInt64 {
        guard limit > 0, let range = ByteRange(offset: position, length: limit) else { return 0 }
        guard let gap = cache.missing(in: range).first else { return limit }
        return gap.offset - position
    }

    /// Content info, fetching the first window at `hint` when none is known. Throws the origin's failure.
    func contentInfo(
        hint: UInt64, headers: [(name: String, value: String)]
    ) async throws(ProxyError) -> CachedContentInfo {
        let startFailures = failures
        // Past every attempt the fetcher makes (each bounded by its timeout), give up; the first fetch of a resource
        // (nothing known of it yet) has the shorter first-fetch deadline, so a dead or silent origin is told quickly.
        let options = fetcher.options
        let first = info == nil
        let limit = first ? max(0.01, options.firstFetchTimeout) : options.timeout * Double(options.retries + 1) + 5
        let deadline = ContinuousClock.now + .seconds(limit)
        while true {
            let seen = generation
            if let info { return info }
            // A cancelled wait returns at once: without this the loop would spin until the deadline.
            if Task.isCancelled { throw ProxyError(.connectionFailed, url: url, detail: "the read was cancelled") }
            if failures > startFailures {
                throw lastError ?? ProxyError(.connectionFailed, url: url, detail: "the origin failed")
            }
            let probing = state.withLock { s -> Int? in
                guard s.fetches.isEmpty else { return nil }
                s.nextFetchID += 1
                s.fetches[s.nextFetchID] = Fetch(position: hint, end: hint &+ window, sequential: false)
                return s.nextFetchID
            }
            if let probing {
                // With no room in the budget the probe still learns the content information, and writes nothing.
                let reserved = reserve(self, window) ? window : 0
                state.withLock { $0.fetches[probing]?.reserved = reserved }
                startFetch(
                    id: probing, start: hint, end: hint &+ window, sequential: false, reserved: reserved,
                    headers: headers)
            }
            let now = ContinuousClock.now
            if now >= deadline {
                let within = first ? " within \(RetryEvent.seconds(limit))" : ""
                throw ProxyError(.timedOut, url: url, detail: "no content information from the origin\(within)")
            }
            await wait(since: seen, timeout: min(.seconds(2), deadline - now))
        }
    }

    /// Makes sure a fetch in flight will write `position` (starting one when none will, once the cache's budget
    /// reserved its bytes): returns without waiting. Says where the fetch that covers `position` stops, when it is a
    /// ranged fetch, and whether the budget had no room for it.
    @discardableResult
    func ensureFetch(covering position: UInt64, until end: UInt64, headers: [(name: String, value: String)])
        -> Cover
    {
        let (start, coveredEnd) = state.withLock { s -> ((Int, UInt64, UInt64, Bool)?, UInt64?) in
            guard let info = s.info else { return (nil, nil) }
            if !info.acceptsRanges {
                if !s.fetches.isEmpty { return (nil, nil) }
                s.nextFetchID += 1
                s.fetches[s.nextFetchID] = Fetch(position: 0, end: info.length, sequential: true)
                return ((s.nextFetchID, 0, info.length, true), nil)
            }
            var stop = min(end, info.length, position &+ window)
            for fetch in s.fetches.values {
                if fetch.sequential { return (nil, nil) }
                if fetch.position <= position && position < fetch.end { return (nil, fetch.end) }
                if fetch.position > position { stop = min(stop, fetch.position) }
            }
            guard stop > position, let range = ByteRange(lowerBound: position, upperBound: stop),
                let gap = cache.missing(in: range).first, gap.offset == position
            else { return (nil, nil) }
            stop = gap.upperBound
            s.nextFetchID += 1
            s.fetches[s.nextFetchID] = Fetch(position: position, end: stop, sequential: false)
            return ((s.nextFetchID, position, stop, false), stop)
        }
        guard let (id, from, to, sequential) = start else { return Cover(until: coveredEnd) }
        let bytes = to - from
        guard reserve(self, bytes) else {
            // No room: the fetch never starts; its reader streams these bytes from the origin instead. No signal:
            // nothing was written, and a reader woken for nothing would ask again at once (a read-ahead refused in a
            // loop); one that saw this fetch for a moment looks again within its wait's timeout.
            state.withLock { s in s.fetches[id] = nil }
            return Cover(until: nil, refused: true)
        }
        state.withLock { $0.fetches[id]?.reserved = bytes }
        startFetch(id: id, start: from, end: to, sequential: sequential, reserved: bytes, headers: headers)
        return Cover(until: coveredEnd)
    }

    // MARK: Fetching

    private func startFetch(
        id: Int, start: UInt64, end: UInt64, sequential: Bool, reserved: UInt64,
        headers: [(name: String, value: String)]
    ) {
        Task.detached {
            do throws(ProxyError) {
                try await self.runFetch(
                    id: id, start: start, end: end, sequential: sequential, reserved: reserved, headers: headers)
                await self.finishFetch(id, error: nil)
            } catch {
                await self.finishFetch(id, error: error)
            }
        }
    }

    private func finishFetch(_ id: Int, error: ProxyError?) async {
        let (commitNow, reserved) = state.withLock { s -> (Bool, UInt64) in
            let reserved = s.fetches.removeValue(forKey: id)?.reserved ?? 0
            if let error {
                s.failures += 1
                s.lastError = error
            }
            let complete = s.info.flatMap { ByteRange(offset: 0, length: $0.length) }.map(cache.contains) ?? false
            return (dueForCommit(&s) || (s.fetches.isEmpty && complete), reserved)
        }
        if commitNow {
            await commit()
        } else {
            scheduleCommit()
        }
        signal()
        onFetchEnd(self, reserved)
    }

    /// Whether enough bytes or time went by since the last commit (each commit costs three flushes); resets the
    /// counters when it is.
    private func dueForCommit(_ s: inout State) -> Bool {
        let now = ContinuousClock.now
        guard s.uncommitted >= commitInterval || now - s.lastCommit >= .seconds(1) else { return false }
        s.uncommitted = 0
        s.lastCommit = now
        return true
    }

    /// Commits within about a second, so that bytes of a finished fetch do not stay unclaimed for long.
    private func scheduleCommit() {
        let schedule = state.withLock { s -> Bool in
            defer { s.commitScheduled = true }
            return !s.commitScheduled
        }
        guard schedule else { return }
        Task.detached {
            try? await Task.sleep(for: .seconds(1))
            self.state.withLock { s in
                s.commitScheduled = false
                s.uncommitted = 0
                s.lastCommit = ContinuousClock.now
            }
            await self.commit()
        }
    }

    private func runFetch(
        id: Int, start: UInt64, end: UInt64, sequential: Bool, reserved: UInt64,
        headers: [(name: String, value: String)]
    ) async throws(ProxyError) {
        var request = headers
        if !sequential, end > start {
            request.append((name: "Range", value: "bytes=\(start)-\(end - 1)"))
        }
        let stream = try await fetcher.open(url, headers: request)
        defer { stream.cancel() }
        let head = stream.head
        var position: UInt64
        var stop: UInt64
        /// Bytes before it are not written (an origin that answered a range starting before the one asked).
        var skipTo: UInt64 = 0
        let epoch: UInt64
        switch head.status {
        case 206:
            guard let value = head.header("Content-Range"), let parsed = ContentRange.parse(value),
                let first = parsed.range?.lowerBound, let total = parsed.completeLength, first <= start
            else {
                throw ProxyError(
                    .httpStatus, url: url, status: 206, detail: "206 without a usable Content-Range")
            }
            epoch = await adopt(CachedMediaEntry.info(from: head, length: total, acceptsRanges: true))
            // What was asked and reserved, never more: bytes before `start` are skipped, the rest stops at the
            // reservation's end.
            position = first
            stop = min(parsed.range.map { $0.upperBound &+ 1 } ?? total, total, start &+ reserved)
            guard stop > start else { return }
            skipTo = start
            state.withLock { s in
                s.fetches[id]?.position = start
                s.fetches[id]?.end = stop
            }
        case 200:
            guard let text = head.header("Content-Length"), let total = UInt64(text) else {
                throw ProxyError(.httpStatus, url: url, status: 200, detail: "200 without Content-Length")
            }
            // The origin ignores Range: fill sequentially from the start.
            epoch = await adopt(CachedMediaEntry.info(from: head, length: total, acceptsRanges: false))
            position = 0
            stop = total
            // The whole body will be written: the budget must hold it (a probe reserved one window).
            var held = reserved
            if total > reserved {
                guard self.reserve(self, total - reserved) else { return }
                held = total
            }
            state.withLock { s in s.fetches[id] = Fetch(position: 0, end: total, sequential: true, reserved: held) }
            signal()
        case 416:
            if let value = head.header("Content-Range"), let parsed = ContentRange.parse(value),
                let total = parsed.completeLength
            {
                _ = await adopt(CachedMediaEntry.info(from: head, length: total, acceptsRanges: true))
                return
            }
            throw ProxyError(.httpStatus, url: url, status: 416, detail: "416 without a length")
        default:
            throw ProxyError(.httpStatus, url: url, status: head.status, detail: "origin answered \(head.status)")
        }
        do {
            for try await chunk in stream.body {
                guard !chunk.isEmpty, position < stop else { continue }
                var piece = chunk[...]
                if position < skipTo {
                    let skip = min(UInt64(piece.count), skipTo - position)
                    piece = piece.dropFirst(Int(skip))
                    position += skip
                    if piece.isEmpty { continue }
                }
                let usable = UInt64(piece.count) <= stop - position ? piece.count : Int(stop - position)
                let proceed = state.withLock { $0.epoch == epoch }
                guard proceed else { return }
                do {
                    try cache.write(Array(piece.prefix(usable)), at: position, commit: false)
                } catch {
                    throw ProxyError(.serverFailed, url: url, detail: "cache write failed: \(error)")
                }
                position += UInt64(usable)
                let commitNow = state.withLock { s -> Bool in
                    s.fetches[id]?.position = position
                    s.uncommitted += UInt64(usable)
                    return dueForCommit(&s)
                }
                if commitNow { await commit() }
                signal()
                if position >= stop { break }
            }
        } catch let error as ProxyError {
            throw error
        } catch {
            throw ProxyError(.connectionFailed, url: url, detail: "\(error)")
        }
        if position < stop {
            throw ProxyError(.connectionFailed, url: url, detail: "the origin's body ended early at \(position)")
        }
    }

    /// Takes `fresh` as the content info: when it describes another version than the cached one, the cache is
    /// emptied first. Returns the epoch the fetch writes under.
    @discardableResult
    func adopt(_ fresh: CachedContentInfo) async -> UInt64 {
        let (changed, epoch) = state.withLock { s -> (Bool, UInt64) in
            let changed = s.info.map { $0.differs(from: fresh) } ?? false
            if changed { s.epoch &+= 1 }
            s.info = fresh
            return (changed, s.epoch)
        }
        if changed { await BlockingPool.shared.run { () -> Void in try? self.cache.removeAll() } }
        var metadata = cache.metadata
        metadata["url"] = url
        for field in ["length", "type", "ranges", "etag", "last-modified"] { metadata[field] = nil }
        metadata.merge(fresh.metadata) { _, new in new }
        cache.setMetadata(metadata)
        await commit()
        signal()
        return epoch
    }

    /// Asks the origin whether the cached version is still current (a conditional one-byte GET); empties the cache
    /// when it is not. An unreachable origin leaves the cache as it is.
    func revalidate(headers: [(name: String, value: String)], using fetcher: RemotePlaylistFetcher) async {
        guard let known = info, known.entityTag != nil || known.lastModified != nil else { return }
        var request = headers
        request.append((name: "Range", value: "bytes=0-0"))
        if let tag = known.entityTag {
            request.append((name: "If-None-Match", value: tag))
        } else if let date = known.lastModified {
            request.append((name: "If-Modified-Since", value: date))
        }
        guard let stream = try? await fetcher.open(url, headers: request) else { return }
        defer { stream.cancel() }
        let head = stream.head
        switch head.status {
        case 206:
            if let value = head.header("Content-Range"), let total = ContentRange.parse(value)?.completeLength {
                await adopt(CachedMediaEntry.info(from: head, length: total, acceptsRanges: true))
            }
        case 200:
            if let text = head.header("Content-Length"), let total = UInt64(text) {
                await adopt(CachedMediaEntry.info(from: head, length: total, acceptsRanges: false))
            }
        default:
            break  // 304: still current; anything else: keep what we have
        }
    }

    static func info(from head: RemoteHead, length: UInt64, acceptsRanges: Bool) -> CachedContentInfo {
        CachedContentInfo(
            length: length, contentType: head.header("Content-Type") ?? "application/octet-stream",
            acceptsRanges: acceptsRanges, entityTag: head.header("ETag"), lastModified: head.header("Last-Modified"))
    }
}
