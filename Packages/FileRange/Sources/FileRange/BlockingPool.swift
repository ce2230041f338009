import Dispatch

/// The toolkit's one way to run blocking work (a blocking socket read or connect, a file read, an `fsync`, a
/// rename): a bounded pool of threads of its own, so that Swift's cooperative threads, one per core, are never held
/// by a call that waits.
///
/// Threads are started when work is waiting and none is free, up to ``maximumThreads``, and end after
/// ``idleTimeout`` without work. When all are busy, work waits in order of submission. Event-loop threads are not
/// pool work: they are long-lived and start with ``startDetachedThread(_:)``.
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

    private struct State {
        var waiting: [@Sendable () -> Void] = []
        var head = 0
        var threads = 0
        /// Threads not running work: waiting for it, or started and not yet waiting.
        var idle = 0

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
    /// One signal per submitted work item; a thread woken when another has already taken the work finds none and
    /// waits again.
    private let wake = DispatchSemaphore(value: 0)

    /// A pool of at most `maximumThreads` threads (at least one).
    public init(maximumThreads: Int, idleTimeout: Duration = .seconds(10)) {
        self.maximumThreads = max(1, maximumThreads)
        self.idleTimeout = idleTimeout
    }

    /// The threads the pool runs now, busy or idle.
    public var threadCount: Int { state.withLock { $0.threads } }

    /// Runs `work` on a pool thread and returns without waiting for it.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let work = PoolTrace.timed(work) { [self] in
            let (threads, idle, pending) = state.withLock { ($0.threads, $0.idle, $0.pending) }
            return "\(maximumThreads) threads at most: \(threads) threads, \(idle) idle, \(pending) queued"
        }
        let start = state.withLock { state -> Bool in
            state.waiting.append(work)
            guard state.pending > state.idle, state.threads < maximumThreads else { return false }
            state.threads += 1
            state.idle += 1
            return true
        }
        wake.signal()
        guard start else { return }
        do {
            try startDetachedThread { [self] in serve() }
        } catch {
            // No thread could be started: the work is done on the caller's thread rather than lost, unless a
            // running thread will take it.
            let orphaned = state.withLock { state -> (@Sendable () -> Void)? in
                state.threads -= 1
                state.idle -= 1
                return state.threads == 0 ? state.take() : nil
            }
            orphaned?()
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
        while true {
            let timedOut = wake.wait(timeout: .now() + timeout) == .timedOut
            let work = state.withLock { state -> (@Sendable () -> Void)? in
                if let work = state.take() {
                    state.idle -= 1
                    return work
                }
                if timedOut {
                    state.threads -= 1
                    state.idle -= 1
                }
                return nil
            }
            if let work {
                work()
                state.withLock { $0.idle += 1 }
            } else if timedOut {
                return
            }
        }
    }
}
