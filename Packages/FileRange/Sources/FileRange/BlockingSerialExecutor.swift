/// A serial executor whose jobs run one at a time, in order, on a thread of its own (a one-thread ``BlockingPool``),
/// never on Swift's cooperative threads.
///
/// It is for an actor whose methods block (a file lock, an `fsync`) and must stay synchronous and in order, such as a
/// store written under a lock: the actor declares
/// `nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }`, and its calls
/// wait on their own thread while the cooperative threads go on with other work. The thread ends when the actor has
/// had nothing to do for the idle timeout, and starts again with the next job.
public final class BlockingSerialExecutor: SerialExecutor {
    private let thread: BlockingPool

    public init(idleTimeout: Duration = .seconds(10)) {
        thread = BlockingPool(maximumThreads: 1, idleTimeout: idleTimeout)
    }

    /// The job, run on the executor's thread after those enqueued before it. (The `UnownedJob` form, not the
    /// `ExecutorJob` one, because the toolkit's floor is below iOS 17 and macOS 14.)
    public func enqueue(_ job: UnownedJob) {
        thread.submit { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
