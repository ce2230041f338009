// Waiting without holding a thread: a one-shot event that tasks await (with a deadline) and any thread signals,
// and the tests' one blocking hop, `blocking(_:)`, which runs a blocking call on FileRange's pool. A test function
// runs on one of Swift's cooperative threads (one per core); a call that blocks there leaves the rest of the
// process's async work, and Foundation's reports of child processes ending, fewer threads, and with tests running
// in parallel none at all. Scripts/check-boundaries.sh refuses blocking waits in test code outside the pool's
// closures.
import FileRange

/// An event that happens once: ``signal()`` from any thread, ``wait(within:)`` from any task, suspended meanwhile.
public final class Completion: Sendable {
    private struct State {
        var done = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Locked(State())

    public init() {}

    /// Whether ``signal()`` was called.
    public var isDone: Bool { state.withLock { $0.done } }

    /// Marks the event done and resumes every waiting task; later calls do nothing.
    public func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.done else { return [] }
            state.done = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until the event is done, or at most `seconds` when given; whether it is done. Cancelling the waiting
    /// task ends the wait too.
    @discardableResult public func wait(within seconds: Double? = nil) async -> Bool {
        guard let seconds else {
            await waitUntilDoneOrCancelled()
            return isDone
        }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilDoneOrCancelled() }
            group.addTask { try? await Task.sleep(for: .seconds(max(0, seconds))) }
            await group.next()
            group.cancelAll()
            return isDone
        }
    }

    private func waitUntilDoneOrCancelled() async {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.done || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// Runs a blocking call (a socket read, a connect, a wait on a semaphore a thread signals) on FileRange's
/// ``BlockingPool``, the calling task suspended meanwhile and holding no thread; returns what `work` returns.
public func blocking<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    try await BlockingPool.shared.run(work)
}

/// Sleeps `seconds` without holding a thread (a test's pause: the wait a poll loop makes between two looks).
public func suspend(_ seconds: Double) async {
    try? await Task.sleep(for: .seconds(seconds))
}
