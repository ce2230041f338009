import Dispatch

/// The toolkit's one way to run blocking work (a blocking socket read or connect, a file read, an `fsync`, a
/// rename): a bounded pool of threads of its own, so that Swift's cooperative threads, one per core, are never held
/// by a call that waits.
///
/// Threads are started when work is waiting and none is free, up to ``maximumThreads``, and end after
/// ``idleTimeout`` without work. When all are busy, work waits in order of submission. A thread that finishes takes
/// the next waiting work, and new work wakes the thread that went idle last: work that comes one piece at a time
/// keeps running on one thread (its caches, and its malloc arena, warm) while the others reach their idle timeout.
/// Event-loop threads are not pool work: they are long-lived and start with ``startDetachedThread(_:)``.
///
/// The pool does not cancel work that has started: a caller that must stop a blocking call closes or shuts down what
/// it waits on (its socket), which makes the call return.
public final class BlockingPool: Sendable {
    /// The pool the toolkit's packages share.
    public static let shared = BlockingPool(maximumThreads: 64)

    /// The most threads the pool runs at once.
    public let maximumThreads: Int
    /// How long a thread with nothing to do waits for work before it ends.
    public let idleTimeout: Duration

    /// An idle thread's wake-up: its own, so that new work can wake one chosen thread.
    private final class Parker: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
    }

    private struct State {
        var waiting: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        /// Idle threads, the one that went idle last at the end (new work wakes it).
        var parked: [Parker] = []
        /// Threads started or woken for waiting work that have not yet looked for it.
        var promised = 0

        var pending: Int { waiting.count - head }

        mutating func take() -> (@Sendable () -> Void)? {
            guard head < waiting.count else { return nil }
            let work = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 256, head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return work
        }
    }

    private let state = LockedValue(State())

    /// A pool of at most `maximumThreads` threads (at least one).
    public init(maximumThreads: Int, idleTimeout: Duration = .seconds(10)) {
        self.maximumThreads = max(1, maximumThreads)
        self.idleTimeout = idleTimeout
    }

    /// The threads the pool runs now, busy or idle.
    public var threadCount: Int { state.withLock { $0.threads } }

    private enum Start {
        case none
        case wake(Parker)
        case thread
    }

    /// Runs `work` on a pool thread and returns without waiting for it.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let work = PoolTrace.timed(work) { [self] in
            let (threads, idle, pending) = state.withLock { ($0.threads, $0.parked.count, $0.pending) }
            return "\(maximumThreads) threads at most: \(threads) threads, \(idle) idle, \(pending) queued"
        }
        let start = state.withLock { state -> Start in
            state.waiting.append(work)
            if let parker = state.parked.popLast() {
                state.promised += 1
                return .wake(parker)
            }
            // A thread for work no thread is on its way to; busy threads take waiting work when they finish.
            guard state.pending > state.promised, state.threads < maximumThreads else { return .none }
            state.threads += 1
            state.promised += 1
            return .thread
        }
        switch start {
        case .none:
            return
        case .wake(let parker):
            parker.semaphore.signal()
        case .thread:
            do {
                try startDetachedThread { [self] in serve() }
            } catch {
                // No thread could be started: the work is done on the caller's thread rather than lost, unless a
                // running thread will take it.
                let orphaned = state.withLock { state -> (@Sendable () -> Void)? in
                    state.threads -= 1
                    state.promised -= 1
                    return state.threads == 0 ? state.take() : nil
                }
                orphaned?()
            }
        }
    }

    /// Runs `work` on a pool thread and returns what it returned or throws what it threw. The calling task is
    /// suspended meanwhile, holding no thread.
    public func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            submit {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        // A switch, not `result.get()`: the SDKs' standard library before Swift 6 declares `get()` with untyped throws.
        switch result {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    private func serve() {
        let (seconds, attoseconds) = idleTimeout.components
        let timeout = Double(seconds) + Double(attoseconds) / 1e18
        let parker = Parker()
        var promised = true  // started for waiting work
        while true {
            let work = state.withLock { state -> (@Sendable () -> Void)? in
                if promised { state.promised -= 1 }
                if let work = state.take() { return work }
                state.parked.append(parker)
                return nil
            }
            promised = false
            if let work {
                work()
                continue
            }
            if parker.semaphore.wait(timeout: .now() + timeout) == .success {
                promised = true
                continue
            }
            // Timed out: end, unless new work chose this thread meanwhile (its signal is then on its way).
            let ends = state.withLock { state -> Bool in
                guard let index = state.parked.firstIndex(where: { $0 === parker }) else { return false }
                state.parked.remove(at: index)
                state.threads -= 1
                return true
            }
            if ends { return }
            parker.semaphore.wait()
            promised = true
        }
    }
}
