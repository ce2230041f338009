// Waiting without holding a thread: a one-shot event that tasks await (with a deadline) and any thread signals,
// and the tests' one blocking hop, `blocking(_:)`, which runs a blocking call or a long computation on a thread of
// its own. A test function runs on one of Swift's cooperative threads, as many as cores (two here): a call that
// blocks or computes for long there leaves the rest of the process's async work, its deadline timers included,
// fewer threads, and with tests running in parallel none at all. Scripts/check-boundaries.sh refuses blocking waits
// in test code outside these closures.
import Foundation

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

/// Runs a blocking call (a socket read, a connect, a wait on a semaphore a thread signals) or a long computation (an
/// exhaustive check, a big fixture) on a thread of its own, the calling task suspended meanwhile and holding no
/// thread; returns what `work` returns. `work` runs in the calling task (as its preferred executor's job), so an
/// `#expect` in it is the running test's.
///
/// Not on FileRange's ``BlockingPool``: a test client that reads a stalled server for seconds would hold a thread of
/// the pool the code under test needs, and not on Swift's cooperative threads, which a computation holds until it
/// ends (libdispatch adds a thread for one that blocks in the kernel, never for one that computes): with tests in
/// parallel, every other test's tasks, their deadline timers included, would wait for it.
public func blocking<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
        let result = await withTaskExecutorPreference(ThreadPerJobExecutor.shared) { () async -> Result<T, E> in
            do throws(E) {
                return .success(try work())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }
    // Older Apple systems, without task executors: a thread of its own, outside the task.
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
        Thread.detachNewThread {
            do throws(E) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    switch result {
    case .success(let value): return value
    case .failure(let error): throw error
    }
}

/// A task executor that runs each job on a thread started for it: the tests' `blocking { }` (a job there is the
/// whole blocking call or computation).
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class ThreadPerJobExecutor: TaskExecutor {
    static let shared = ThreadPerJobExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        Thread.detachNewThread { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Sleeps `seconds` without holding a thread (a test's pause: the wait a poll loop makes between two looks).
public func suspend(_ seconds: Double) async {
    try? await Task.sleep(for: .seconds(seconds))
}
