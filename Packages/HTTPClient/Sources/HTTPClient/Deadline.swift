import FileRange

/// The end of one request's time (``HTTPClientConfiguration/deadline``): from the start of a request to its final
/// response head (connection attempts, a wait for a slot to the host and redirects included), and to the end of
/// the body for a body read whole.
struct Deadline: Sendable {
    let end: ContinuousClock.Instant
    /// The seconds it was given, for the error's words.
    let seconds: Double

    init(seconds: Double) {
        self.seconds = seconds
        self.end = .now + .milliseconds(Int64(min(max(0, seconds), 86_400 * 7) * 1000))
    }

    /// Seconds left (0 or less once it passed).
    var remaining: Double {
        let (whole, fraction) = ContinuousClock.now.duration(to: end).components
        return Double(whole) + Double(fraction) * 1e-18
    }

    var passed: Bool { ContinuousClock.now >= end }

    /// The failure once it passed: ``HTTPClientError/Code/timedOut``, worded as ``HTTPClient/within(seconds:url:_:)``.
    var error: HTTPClientError {
        HTTPClientError(.timedOut, "no complete answer within \(RetryEvent.seconds(seconds))")
    }
}

/// Concurrent exchanges per host and port over the sockets: at most `limit` at once; further requests wait in a
/// first-come queue (a continuation each, no thread) until a slot frees, their deadline passes (they fail with
/// ``HTTPClientError/Code/timedOut``) or their task is cancelled. A slot is held from the request to the end of its
/// body, so that one silent or trickling host ties up at most `limit` threads and never delays other hosts.
final class HostSlots: Sendable {
    let limit: Int
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct Host {
        var active = 0
        var waiting: [Waiter] = []
    }
    private struct Table {
        var hosts: [String: Host] = [:]
        var nextID: UInt64 = 0
    }
    private let table = LockedValue(Table())

    init(limit: Int) { self.limit = max(1, limit) }

    /// A slot without waiting, or nil when the host's slots are all taken (for a caller that must not wait).
    func tryAcquire(_ key: String) -> HostSlot? {
        let taken = table.withLock { t -> Bool in
            guard t.hosts[key, default: Host()].active < limit else { return false }
            t.hosts[key, default: Host()].active += 1
            return true
        }
        return taken ? HostSlot(self, key) : nil
    }

    /// A slot, waiting in the host's queue when all are taken.
    func acquire(_ key: String, deadline: Deadline) async throws -> HostSlot {
        if let slot = tryAcquire(key) { return slot }
        try Task.checkCancellation()
        let id = table.withLock { t -> UInt64 in
            t.nextID += 1
            return t.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = table.withLock { t -> Bool in
                    if t.hosts[key, default: Host()].active < limit {
                        t.hosts[key, default: Host()].active += 1
                        return true
                    }
                    t.hosts[key, default: Host()].waiting.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if granted {
                    continuation.resume()
                    return
                }
                // On FileRange's alarm thread, which no busy cooperative thread delays; a waiter served or cancelled
                // before then is no longer found, and the alarm does nothing.
                Alarms.shared.schedule(at: deadline.end) { [weak self] in self?.expire(key, id, deadline.error) }
                // A cancellation that came before the waiter was queued found nothing to end: end it now.
                if Task.isCancelled { expire(key, id, CancellationError()) }
            }
        } onCancel: {
            expire(key, id, CancellationError())
        }
        return HostSlot(self, key)
    }

    /// Hands a freed slot to the first waiter, or frees it.
    fileprivate func release(_ key: String) {
        let next = table.withLock { t -> Waiter? in
            guard var host = t.hosts[key] else { return nil }
            var waiter: Waiter?
            if host.waiting.isEmpty {
                host.active -= 1
            } else {
                waiter = host.waiting.removeFirst()
            }
            t.hosts[key] = host.active <= 0 && host.waiting.isEmpty ? nil : host
            return waiter
        }
        next?.continuation.resume()
    }

    /// Ends a waiter's wait with `error` (its deadline passed, or its task was cancelled), if it still waits.
    private func expire(_ key: String, _ id: UInt64, _ error: any Error) {
        let waiter = table.withLock { t -> Waiter? in
            guard let index = t.hosts[key]?.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return t.hosts[key]?.waiting.remove(at: index)
        }
        waiter?.continuation.resume(throwing: error)
    }

    /// Exchanges under way and requests waiting for a host and port (for tests and diagnostics).
    func counts(_ key: String) -> (active: Int, waiting: Int) {
        table.withLock { t in (t.hosts[key]?.active ?? 0, t.hosts[key]?.waiting.count ?? 0) }
    }
}

/// One slot of ``HostSlots``, given back once: by ``release()`` or when it is dropped.
final class HostSlot: Sendable {
    private let slots: HostSlots
    private let key: String
    private let held = LockedValue(true)

    fileprivate init(_ slots: HostSlots, _ key: String) {
        self.slots = slots
        self.key = key
    }

    func release() {
        let was = held.withLock { h -> Bool in
            defer { h = false }
            return h
        }
        if was { slots.release(key) }
    }

    deinit { release() }
}
