import FileRange
import HLSPlaylist
import HTTPClient

/// The HTTP side of a task: requests with the caller's headers, retries, resumable writes, integrity checks.
struct Fetcher: Sendable {
    var transport: any HTTPTransport
    var clock: any RetryClock
    var retry: RetryPolicy
    var onRetry: (@Sendable (RetryEvent) -> Void)?
    var headers: HTTPHeaders
    /// Where the credentials among ``headers`` may go: the host of the task's URL and the allowed hosts.
    var credentials: CredentialScope
    var maxPlaylistBytes: Int
    var stallTimeout: Double
    var stallMinimumRate: Double
    var firstFetchTimeout: Double
    /// Seconds one attempt at a resource may take, body included (``DownloadManagerConfiguration/resourceDeadline``).
    var resourceDeadline: Double
    /// The largest resource accepted (``DownloadOptions/maxResourceBytes``).
    var maxResourceBytes: UInt64
    /// The task's byte budget, enforced on every write (VOD; a live recording stops at its limit on its own).
    var budget: UInt64?

    init(
        url: String, options: DownloadOptions, configuration: DownloadManagerConfiguration,
        transport: any HTTPTransport, clock: any RetryClock
    ) {
        self.transport = transport
        self.credentials = CredentialScope(
            origin: url, allowedHosts: options.credentialHosts, secretFields: options.secretHeaders)
        self.clock = clock
        self.retry = configuration.retry
        self.onRetry = configuration.onRetry
        self.maxPlaylistBytes = configuration.maxPlaylistBytes
        self.stallTimeout = configuration.stallTimeout
        self.stallMinimumRate = configuration.stallMinimumRate
        self.firstFetchTimeout = configuration.firstFetchTimeout
        self.resourceDeadline = configuration.resourceDeadline
        self.maxResourceBytes = options.maxResourceBytes ?? DownloadOptions.defaultMaxResourceBytes
        var headers = options.headers.filter { $0.name.lowercased() != "user-agent" }
        if let agent = options.userAgent ?? options.headers.last(where: { $0.name.lowercased() == "user-agent" })?.value
        {
            headers.append(HTTPHeaders.Field(name: "User-Agent", value: agent))
        }
        self.headers = HTTPHeaders(fields: headers)
    }

    /// What one attempt decided.
    private enum Outcome {
        case done
        case retry(after: Double?, reason: DownloadError)
    }

    /// The error for a status that is not retried, or nil when the status is transient.
    static func classify(status: Int, url: String, isKey: Bool) -> DownloadError? {
        switch status {
        case 408, 425, 429, 500...599:
            return nil
        case 401, 403:
            return DownloadError(
                isKey ? .keyUnavailable : .unauthorized, "the origin refused access", url: url, status: status)
        case 404, 410:
            return DownloadError(
                isKey ? .keyUnavailable : .notFound, "the origin has no such file", url: url,
                status: status)
        default:
            return DownloadError(
                isKey ? .keyUnavailable : .httpStatus, "unexpected HTTP status", url: url, status: status)
        }
    }

    /// Runs `attempt` until it succeeds, retrying transient failures with the client's retry policy (each retry
    /// told to the configuration's observer). A failure a retry cannot cure (a refused connection, an unknown
    /// host) ends at once with the URL named.
    private func withRetries(
        url: String, _ attempt: () async throws -> Outcome
    ) async throws {
        do {
            try await retry.run(
                url: url, clock: clock, onRetry: onRetry,
                exhausted: { failure, attempts in
                    let reason = failure as? DownloadError ?? DownloadError(.transport, "\(failure)", url: url)
                    guard reason.code == .transport || reason.code == .httpStatus || reason.code == .contentLength
                    else { return reason }
                    return DownloadError(
                        .tooManyRetries, "\(attempts) attempts failed; last: \(reason.message)", url: url,
                        status: reason.status)
                }
            ) { () async throws -> RetryPolicy.Step<Void> in
                do {
                    switch try await attempt() {
                    case .done: return .success(())
                    case .retry(let after, let reason): return .retry(after: after, failure: reason)
                    }
                } catch let error as HTTPClientError where error.isTransient {
                    return .retry(after: nil, failure: DownloadError(.transport, error.message, url: url))
                }
            }
        } catch let error as HTTPClientError {
            throw DownloadError(.transport, error.message, url: error.url.isEmpty ? url : error.url)
        }
    }

    /// ``fetchPlaylist(_:)`` bounded by ``DownloadManagerConfiguration/firstFetchTimeout`` of real time in all,
    /// retries included: a task's first request, which must fail quickly when the origin is dead or silent.
    func fetchFirstPlaylist(_ url: String) async throws -> String {
        let seconds = max(0.01, firstFetchTimeout)
        let fetcher = self
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { try await fetcher.fetchPlaylist(url) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(min(seconds, 86_400) * 1000)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let text = first else {
                let shown = seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
                throw DownloadError(.transport, "no complete answer within \(shown)", url: url)
            }
            return text
        }
    }

    /// Fetches a playlist into memory.
    func fetchPlaylist(_ url: String) async throws -> String {
        var result: [UInt8] = []
        try await withRetries(url: url) {
            result = []
            let response = try await transport.send(
                HTTPClientRequest(url: url, headers: headers, credentials: credentials))
            if let error = Self.classify(status: response.status, url: url, isKey: false) {
                guard (200..<300).contains(response.status) else { throw error }
            } else {
                return .retry(
                    after: retryAfterSeconds(response.header("Retry-After")),
                    reason: DownloadError(.httpStatus, "transient HTTP status", url: url, status: response.status))
            }
            for try await chunk in response.body {
                result += chunk
                try Self.checkPlaylistStart(result, complete: false, url: url)
                if result.count > maxPlaylistBytes {
                    throw DownloadError(.invalidPlaylist, "playlist larger than \(maxPlaylistBytes) bytes", url: url)
                }
            }
            if let length = response.contentLength, UInt64(result.count) != length {
                return .retry(
                    after: nil,
                    reason: DownloadError(
                        .contentLength, "got \(result.count) of \(length) bytes", url: url, status: response.status))
            }
            try Self.checkPlaylistStart(result, complete: true, url: url)
            return .done
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Throws unless `bytes` start like an HLS playlist (HLSPlaylist's door check, `HLSPlaylist.PlaylistStart`).
    /// Decides as soon as enough bytes are in; with fewer, only once `complete`.
    static func checkPlaylistStart(_ bytes: [UInt8], complete: Bool, url: String) throws(DownloadError) {
        if let message = PlaylistStart.check(bytes, complete: complete).message {
            throw DownloadError(.invalidPlaylist, message, url: url)
        }
    }

    /// Fetches `job` into `folder/job.path`, resuming a partial file; returns the final size.
    /// Every write checks first that `lock` (the task's) is still held.
    func fetch(
        _ job: Job, index: Int, folder: String, counters: TaskCounters, gate: RequestGate, lock: FileLock,
        report: @Sendable () async -> Void
    )
        async throws -> UInt64
    {
        try Task.checkCancellation()
        try lock.ensureHeld()
        let final = folder + "/" + job.path
        let part = final + ".part"
        let validatorPath = final + ".validator"
        try Files.makeDirectories(Files.parent(of: final))
        let isKey = job.kind == .key
        var integrityFailures = 0
        try await withRetries(url: job.url) {
            // The request slot is held only while bytes come in; flushing and checking happen outside it, so
            // slow fsyncs never idle the connections.
            let permit = await gate.acquire()
            defer { permit.release() }
            try Task.checkCancellation()
            /// Checks a complete `.part` file of `total` bytes and puts it in place (flush, rename, folder flush), on
            /// FileRange's `BlockingPool` (never on the cooperative pool, which a slow fsync would stall).
            func finalize(_ total: UInt64) async throws -> Outcome {
                permit.release()
                let settled = try await BlockingPool.shared.run { () throws(DownloadError) -> Settled in
                    try lock.ensureHeld()
                    return try Self.settle(job, part: part, final: final, validator: validatorPath, total: total)
                }
                switch settled {
                case .done(let stripped):
                    if stripped > 0 { counters.add(-Int64(stripped)) }
                    return .done
                case .rangeMismatch:
                    counters.add(-Int64(total))
                    return .retry(
                        after: nil, reason: DownloadError(.contentLength, "range length mismatch", url: job.url))
                case .invalid(let offset):
                    integrityFailures += 1
                    counters.add(-Int64(total))
                    let error = DownloadError(.integrity, "no TS sync byte at offset \(offset)", url: job.url)
                    if integrityFailures >= 3 { throw error }
                    return .retry(after: nil, reason: error)
                case .notTS:
                    integrityFailures += 1
                    counters.add(-Int64(total))
                    let error = DownloadError(.integrity, "the segment is not MPEG-TS", url: job.url)
                    if integrityFailures >= 3 { throw error }
                    return .retry(after: nil, reason: error)
                }
            }
            var existing = Files.size(part) ?? 0
            let validator = existing > 0 ? (try? Files.read(validatorPath, limit: 4096)) : nil
            if existing > 0, validator == nil || validator?.isEmpty == true {
                // A partial file without a validator cannot be resumed safely.
                counters.add(-Int64(existing))
                Files.remove(part)
                existing = 0
            }
            if let length = job.rangeLength, existing > length {
                counters.add(-Int64(existing))
                Files.remove(part)
                existing = 0
            }
            if let length = job.rangeLength, existing == length, existing > 0 {
                // Received in full before an interruption, never renamed: nothing to fetch.
                return try await finalize(existing)
            }
            var request = HTTPClientRequest(url: job.url, headers: headers, credentials: credentials)
            request.bodyDeadline = resourceDeadline
            let start = (job.rangeOffset ?? 0) + existing
            if let length = job.rangeLength {
                let end = (job.rangeOffset ?? 0) + length - 1
                request.headers.add(name: "Range", value: "bytes=\(start)-\(end)")
            } else if existing > 0 {
                request.headers.add(name: "Range", value: "bytes=\(start)-")
            }
            if existing > 0, let validator {
                request.headers.add(name: "If-Range", value: String(decoding: validator, as: UTF8.self))
            }
            let response = try await transport.send(request)
            if response.status == 416, existing > 0 {
                if let value = response.header("Content-Range"), let parsed = ContentRange.parse(value),
                    parsed.range == nil, parsed.completeLength == existing
                {
                    // The partial file already holds the whole resource.
                    return try await finalize(existing)
                }
                counters.add(-Int64(existing))
                Files.remove(part)
                return .retry(
                    after: 0, reason: DownloadError(.httpStatus, "range not satisfiable", url: job.url, status: 416))
            }
            if let error = Self.classify(status: response.status, url: job.url, isKey: isKey) {
                guard response.status == 200 || response.status == 206 else { throw error }
            } else {
                return .retry(
                    after: retryAfterSeconds(response.header("Retry-After")),
                    reason: DownloadError(.httpStatus, "transient HTTP status", url: job.url, status: response.status))
            }
            // Where the body starts relative to what is wanted, and how much of it is wanted.
            var skip: UInt64 = 0
            var expected: UInt64?
            var appendTo = existing
            if response.status == 206 {
                guard let range = response.header("Content-Range").flatMap(ContentRange.parse)?.range else {
                    throw DownloadError(.httpStatus, "206 without a usable Content-Range", url: job.url, status: 206)
                }
                if range.lowerBound != start {
                    // Not the range asked for: start over without a range (ranges are always asked from scratch).
                    counters.add(-Int64(existing))
                    Files.remove(part)
                    return .retry(
                        after: 0, reason: DownloadError(.httpStatus, "unexpected Content-Range", url: job.url))
                }
                expected = range.upperBound - range.lowerBound + 1
            } else {
                // 200: the whole resource; anything partial is discarded.
                counters.add(-Int64(existing))
                appendTo = 0
                skip = job.rangeOffset ?? 0
                if let length = job.rangeLength {
                    expected = length
                    if let total = response.contentLength, total < skip + length {
                        throw DownloadError(.contentLength, "the resource is shorter than its byte range", url: job.url)
                    }
                } else {
                    expected = response.contentLength
                }
                try lock.ensureHeld()
                if let etag = response.header("ETag"), !etag.hasPrefix("W/") {
                    try Files.writeQuickly(Array(etag.utf8), to: validatorPath)
                } else if let modified = response.header("Last-Modified") {
                    try Files.writeQuickly(Array(modified.utf8), to: validatorPath)
                } else {
                    Files.remove(validatorPath)
                }
            }
            if let rangeLength = job.rangeLength, response.status == 206 {
                expected = min(expected ?? rangeLength, rangeLength - min(rangeLength, existing))
            }
            if let expected {
                counters.values.withLock { $0.knownSizes[index] = appendTo + expected }
                if appendTo + expected > maxResourceBytes {
                    counters.add(-Int64(appendTo))
                    Files.remove(part)
                    Files.remove(validatorPath)
                    throw tooLarge(job, "announces \(appendTo + expected) bytes")
                }
            }
            try lock.ensureHeld()
            // A key is a secret: owner-only from its first byte (the rename keeps the mode).
            let writer = try FileWriter(path: part, truncate: appendTo == 0, mode: isKey ? 0o600 : 0o644)
            defer { writer.close() }
            var received: UInt64 = 0
            var lastReport = clock.now()
            // A trickle is a stall too: fewer than `stallMinimumRate` bytes/s over a whole stall window.
            var windowStart = lastReport
            var windowBytes: UInt64 = 0
            do {
                for try await chunk in response.body {
                    var slice = chunk[...]
                    if skip > 0 {
                        let drop = Int(min(UInt64(slice.count), skip))
                        slice = slice.dropFirst(drop)
                        skip -= UInt64(drop)
                    }
                    if let expected, received + UInt64(slice.count) > expected {
                        if response.status == 200 && job.rangeLength != nil {
                            slice = slice.prefix(Int(expected - received))
                        } else {
                            writer.close()
                            counters.add(-Int64(received))
                            Files.remove(part)
                            return .retry(
                                after: nil,
                                reason: DownloadError(
                                    .contentLength, "the body is longer than announced", url: job.url))
                        }
                    }
                    if slice.isEmpty { continue }
                    let count = UInt64(slice.count)
                    // Budgets before the bytes reach the disk: the resource's limit, then the task's.
                    let overLimit = appendTo + received + count > maxResourceBytes
                    let overBudget = !overLimit && budget.map { !counters.reserve(count, within: $0) } ?? false
                    if overLimit || overBudget {
                        writer.close()
                        counters.add(-Int64(appendTo + received))
                        Files.remove(part)
                        Files.remove(validatorPath)
                        if overLimit { throw tooLarge(job, "goes on past the limit") }
                        throw DownloadError(
                            .overBudget,
                            "the task's files would pass its budget of \(budget ?? 0) bytes (--max-bytes)",
                            url: job.url)
                    }
                    do {
                        try lock.ensureHeld()
                        try writer.write(slice)
                    } catch {
                        if budget != nil { counters.add(-Int64(count)) }
                        if let error = error as? DownloadError, error.code == .diskFull {
                            // Give back this file's space so the task store can still record the pause.
                            writer.close()
                            counters.add(-Int64(appendTo + received))
                            Files.remove(part)
                            Files.remove(validatorPath)
                        }
                        throw error
                    }
                    received += count
                    if budget == nil { counters.add(Int64(count)) }
                    let now = clock.now()
                    windowBytes += UInt64(slice.count)
                    if now - windowStart >= stallTimeout {
                        if Double(windowBytes) < stallMinimumRate * (now - windowStart) {
                            throw HTTPClientError(.timedOut, "fewer than \(Int(stallMinimumRate)) bytes/s")
                        }
                        windowStart = now
                        windowBytes = 0
                    }
                    if now - lastReport >= 0.2 {
                        lastReport = now
                        await report()
                    }
                    if let expected, received == expected, job.rangeLength != nil, response.status == 200 { break }
                }
            } catch let error as HTTPClientError where error.isTransient {
                try? writer.sync()
                return .retry(after: nil, reason: DownloadError(.transport, error.message, url: job.url))
            }
            // A cancelled transfer ends its body early without an error: never take that for a whole body.
            try Task.checkCancellation()
            writer.close()
            let total = appendTo + received
            if let expected, received != expected {
                if received < expected {
                    // Truncated: keep what arrived; the next attempt resumes it.
                    return .retry(
                        after: nil,
                        reason: DownloadError(.contentLength, "got \(received) of \(expected) bytes", url: job.url))
                }
            }
            return try await finalize(total)
        }
        let size = Files.size(final) ?? 0
        counters.values.withLock { $0.knownSizes[index] = size }
        return size
    }

    /// What ``settle(_:part:final:validator:total:)`` found.
    enum Settled: Sendable {
        /// In place; `stripped` bytes of a fake header were removed.
        case done(stripped: Int)
        /// The part file (removed) does not have the byte range's length.
        case rangeMismatch
        /// The part file (removed) misses a TS sync byte at this offset.
        case invalid(offset: UInt64)
        /// The part file (removed) is not MPEG-TS.
        case notTS
    }

    /// Checks a complete part file and puts it in place with FileRange's durable writer's last steps (flush,
    /// rename, flush the folder): a file only ever gets its final name (which is what counts as done) after its bytes
    /// are on the disk. A part file with a fake header is copied without it through a durable writer instead.
    static func settle(
        _ job: Job, part: String, final: String, validator: String, total: UInt64
    ) throws(DownloadError) -> Settled {
        if let length = job.rangeLength, total != length {
            Files.remove(part)
            return .rangeMismatch
        }
        if job.kind == .key, total != 16 {
            throw DownloadError(.keyUnavailable, "the key has \(total) bytes, not 16", url: job.url)
        }
        var stripped = 0
        if job.expectTS {
            switch try TSIntegrity.check(path: part) {
            case .valid(let header):
                if header > 0 {
                    guard job.mayStrip else {
                        throw DownloadError(.integrity, "a fake header inside a byte range", url: job.url)
                    }
                    stripped = header
                }
            case .invalid(let offset):
                Files.remove(part)
                return .invalid(offset: offset)
            case .notTS:
                Files.remove(part)
                return .notTS
            }
        }
        if stripped > 0 {
            try copy(part, from: UInt64(stripped), to: final)
        } else {
            try Files.install(part, as: final)
        }
        Files.removeLeftovers(of: final)
        return .done(stripped: stripped)
    }

    /// Writes the bytes of `source` from `offset` on to `destination` through a durable writer (a file with a fake
    /// header, without it).
    static func copy(_ source: String, from offset: UInt64, to destination: String) throws(DownloadError) {
        let writer = try DurableWriter(replacing: destination)
        try append(source, range: nil, skipping: offset, to: writer)
        try writer.commit()
    }

    /// Appends the bytes of `path` (those of `range` when given, less the first `skipping` bytes) to `writer`, a
    /// megabyte at a time.
    static func append(
        _ path: String, range: (offset: UInt64, length: UInt64)?, skipping: UInt64 = 0, to writer: DurableWriter
    ) throws(DownloadError) {
        let streamer: FileStreamer
        do {
            streamer = try FileStreamer(path: path)
        } catch {
            throw DownloadError(.fileSystem, "cannot open: \(error)", path: path)
        }
        defer { streamer.close() }
        do {
            let size = try streamer.size()
            let start = range?.offset ?? 0
            var offset = start.addingReportingOverflow(skipping).partialValue
            if offset < start { offset = size }
            // A byte range past the end of the file gives what the file has (the bytes were checked when fetched).
            let end =
                range.map { range in
                    let (sum, overflow) = range.offset.addingReportingOverflow(range.length)
                    return overflow ? size : min(size, sum)
                } ?? size
            while offset < end {
                let bytes = try streamer.read(at: offset, length: Int(min(1 << 20, end - offset)))
                if bytes.isEmpty { break }
                try writer.write(bytes[...])
                offset += UInt64(bytes.count)
            }
        } catch let error as DownloadError {
            throw error
        } catch {
            throw DownloadError(.fileSystem, "cannot read: \(error)", path: path)
        }
    }

    /// Concatenates the pieces of a shared file into it (through a durable writer), then removes them.
    static func assemble(_ assembly: Assembly, folder: String) throws(DownloadError) {
        let final = folder + "/" + assembly.path
        if Files.exists(final) { return }
        let writer = try DurableWriter(replacing: final)
        for piece in assembly.pieces {
            let path = folder + "/" + piece
            guard Files.exists(path) else {
                throw DownloadError(.fileSystem, "a piece is missing", path: path)
            }
            try append(path, range: nil, to: writer)
        }
        try writer.commit()
        for piece in assembly.pieces { Files.remove(folder + "/" + piece) }
    }
}

/// A counting semaphore for the requests of one task.
final class RequestGate: Sendable {
    private let state: LockedValue<(permits: Int, waiters: [CheckedContinuation<Void, Never>])>

    init(permits: Int) {
        state = LockedValue((max(1, permits), []))
    }

    /// Waits for a free slot; the returned permit gives it back once.
    func acquire() async -> Permit {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let go = state.withLock { s -> Bool in
                if s.permits > 0 {
                    s.permits -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
        return Permit(gate: self)
    }

    fileprivate func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.permits += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }

    /// One held slot.
    final class Permit: Sendable {
        private let gate: RequestGate
        private let held = LockedValue(true)
        fileprivate init(gate: RequestGate) { self.gate = gate }
        func release() {
            if held.withLock({ h in
                defer { h = false }
                return h
            }) {
                gate.release()
            }
        }
    }
}
