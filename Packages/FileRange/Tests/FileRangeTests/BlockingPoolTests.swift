import Dispatch
import FileRange
import Testing

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// BlockingPool: work that blocks runs on threads of the pool's own, at most `maximumThreads` at once, in order, with
/// its result or typed error handed back; idle threads end.
@Suite struct BlockingPoolTests {
    struct Refused: Error, Equatable { var code: Int }

    @Test func runReturnsTheResultAndThrowsTheTypedError() async {
        let pool = BlockingPool(maximumThreads: 2)
        let value = await pool.run { () -> Int in 6 * 7 }
        #expect(value == 42)
        do {
            _ = try await pool.run { () throws(Refused) -> Int in throw Refused(code: 7) }
            Issue.record("the error was not thrown")
        } catch {
            #expect(error == Refused(code: 7))
        }
    }

    /// Twenty tasks each block until all twenty have started: on Swift's cooperative pool (a thread per core) this
    /// would never finish; on the pool it does, with twenty threads.
    @Test func blockingWorkDoesNotHoldTheCooperativeThreads() async {
        let count = 20
        let pool = BlockingPool(maximumThreads: count)
        let arrived = LockedValue(0)
        let allArrived = DispatchSemaphore(value: 0)
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    await pool.run { () -> Bool in
                        if arrived.withLock({ value in
                            value += 1
                            return value == count
                        }) {
                            for _ in 0..<count { allArrived.signal() }
                        }
                        // blocks: on the actor's own executor thread, which is what this test is about
                        return allArrived.wait(timeout: .now() + 20) == .success
                    }
                }
            }
            var released = 0
            for await ok in group where ok { released += 1 }
            #expect(released == count, "\(released) of \(count) blocked calls were released")
        }
        #expect(pool.threadCount <= count)
    }

    /// With three threads, no more than three pieces of work run at once, and every piece runs once.
    @Test func atMostMaximumThreadsRunAtOnce() async {
        struct Tally {
            var running = 0
            var peak = 0
            var started: [Int] = []
        }
        let pool = BlockingPool(maximumThreads: 3)
        let tally = LockedValue(Tally())
        let finished = DispatchSemaphore(value: 0)
        let count = 30
        for index in 0..<count {
            pool.submit {
                tally.withLock { tally in
                    tally.running += 1
                    tally.peak = max(tally.peak, tally.running)
                    tally.started.append(index)
                }
                usleep(2_000)
                tally.withLock { $0.running -= 1 }
                finished.signal()
            }
        }
        let all = await BlockingPool.shared.run { () -> Bool in
            (0..<count).allSatisfy { _ in finished.wait(timeout: .now() + 20) == .success }
        }
        #expect(all, "not every piece of work ran")
        let result = tally.withLock { $0 }
        #expect(result.peak <= 3 && result.peak >= 1, "peak \(result.peak) threads at once")
        #expect(pool.threadCount <= 3)
        #expect(result.started.sorted() == Array(0..<count))
    }

    /// Work starts in the order it was submitted: with one thread, it also ends in that order.
    @Test func workStartsInTheOrderItWasSubmitted() async {
        let pool = BlockingPool(maximumThreads: 1)
        let order = LockedValue<[Int]>([])
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<50 {
            pool.submit {
                order.withLock { $0.append(index) }
                finished.signal()
            }
        }
        let all = await BlockingPool.shared.run { () -> Bool in
            (0..<50).allSatisfy { _ in finished.wait(timeout: .now() + 20) == .success }
        }
        #expect(all)
        #expect(order.withLock { $0 } == Array(0..<50))
        #expect(pool.threadCount == 1)
    }

    /// Four pieces of work held at once run on four threads; once they end and the idle timeout passes, the
    /// threads end too, and new work starts a thread again.
    @Test func idleThreadsEnd() async throws {
        let pool = BlockingPool(maximumThreads: 4, idleTimeout: .milliseconds(100))
        let release = await Self.holdFourThreads(of: pool)
        #expect(pool.threadCount == 4)
        for _ in 0..<4 { release.signal() }
        var waited = 0
        while pool.threadCount > 0, waited < 500 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        #expect(pool.threadCount == 0, "\(pool.threadCount) threads still running 10 s after the work ended")
        let value = await pool.run { () -> Int in 1 }
        #expect(value == 1)
    }
}

extension BlockingPoolTests {
    /// Work that comes one piece at a time runs on the thread that went idle last, not on each idle thread in turn:
    /// with four idle threads, twenty pieces submitted one after another (each once the previous one ended) run on
    /// one thread, or nearly (a worker preempted before it went idle can lose one to another); taking turns, no
    /// thread would run more than five.
    @Test func workThatComesOneAtATimeStaysOnOneThread() async throws {
        let pool = BlockingPool(maximumThreads: 4)
        let release = await Self.holdFourThreads(of: pool)
        for _ in 0..<4 { release.signal() }
        try await Task.sleep(for: .milliseconds(50))
        var runs: [UInt: Int] = [:]
        for _ in 0..<20 {
            runs[await pool.run { Self.currentThread() }, default: 0] += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(pool.threadCount == 4)
        #expect((runs.values.max() ?? 0) >= 15, "runs per thread: \(runs.values.sorted())")
    }

    /// Four pieces of work that each hold one of `pool`'s threads until the returned semaphore is signalled once
    /// for each; returns once all four run at once.
    static func holdFourThreads(of pool: BlockingPool) async -> DispatchSemaphore {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            pool.submit {
                started.signal()
                release.wait()
            }
        }
        let allStarted = await BlockingPool.shared.run { () -> Bool in
            (0..<4).allSatisfy { _ in started.wait(timeout: .now() + 20) == .success }
        }
        #expect(allStarted, "four pieces of work did not run at once")
        return release
    }

    static func currentThread() -> UInt {
        #if canImport(Glibc)
            UInt(pthread_self())
        #else
            UInt(bitPattern: pthread_self())
        #endif
    }
}

/// BlockingSerialExecutor: an actor on it runs its methods in order on a thread of its own, so actors that block
/// do not hold the cooperative threads.
@Suite struct BlockingSerialExecutorTests {
    /// An actor whose method blocks, on a thread of its own.
    actor Blocker {
        let executor = BlockingSerialExecutor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var counter = 0

        /// Blocks until every one of `count` actors has arrived (false after 20 s).
        func meet(_ arrived: LockedValue<Int>, _ allArrived: DispatchSemaphore, count: Int) -> Bool {
            if arrived.withLock({ value in
                value += 1
                return value == count
            }) {
                for _ in 0..<count { allArrived.signal() }
            }
            // blocks: on the actor's own executor thread, which is what this test is about
            return allArrived.wait(timeout: .now() + 20) == .success
        }

        /// A read and a write with a pause between: two at once would lose an update.
        func bump() {
            let value = counter
            // blocks: on the actor's own executor thread
            usleep(50)
            counter = value + 1
        }
    }

    /// Eight actors each block in a method until all eight are inside theirs: with the methods on the cooperative
    /// threads (one per core) this would never finish; each actor on its own thread, it does.
    @Test func blockingActorsDoNotHoldTheCooperativeThreads() async {
        let count = 8
        let actors = (0..<count).map { _ in Blocker() }
        let arrived = LockedValue(0)
        let allArrived = DispatchSemaphore(value: 0)
        await withTaskGroup(of: Bool.self) { group in
            for blocker in actors {
                group.addTask { await blocker.meet(arrived, allArrived, count: count) }
            }
            var met = 0
            for await ok in group where ok { met += 1 }
            #expect(met == count, "\(met) of \(count) blocked actors were released")
        }
    }

    /// Four tasks call a method that reads, sleeps and writes back 100 times each: no update is lost, so the jobs
    /// ran one at a time.
    @Test func jobsRunOneAtATime() async {
        let blocker = Blocker()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<100 { await blocker.bump() } }
            }
        }
        #expect(await blocker.counter == 400)
    }
}
