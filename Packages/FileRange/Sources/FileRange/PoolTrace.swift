// The pools' diagnostics, off unless the environment sets TSPLAYERKIT_POOL_TRACE=1: on standard error, each piece of
// work that waited more than a second in a BlockingPool's queue (with the pool's threads, idle threads and queue
// then), and a probe that starts a task every half second and reports when Swift's cooperative threads took more
// than a second to run it (all of them held by work that computes or blocks). Documentation/Testing.md tells how it
// found why deadlines fired late in parallel test runs.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

enum PoolTrace {
    /// Whether TSPLAYERKIT_POOL_TRACE=1 (read once; the probe starts then).
    static let enabled: Bool = {
        guard let value = getenv("TSPLAYERKIT_POOL_TRACE"), String(cString: value) == "1" else { return false }
        try? startDetachedThread { probeCooperativeThreads() }
        return true
    }()

    /// `work`, reporting when it starts more than a second after now; `work` itself when tracing is off.
    static func timed(_ work: @escaping @Sendable () -> Void, pool: @escaping @Sendable () -> String)
        -> @Sendable () -> Void
    {
        guard enabled else { return work }
        let queued = ContinuousClock.now
        return {
            let waited = ContinuousClock.now - queued
            if waited > .seconds(1) { say("a job waited \(waited) in the queue of a pool with \(pool())") }
            work()
        }
    }

    static func say(_ line: String) {
        var text = "TSPLAYERKIT_POOL_TRACE: \(line)\n"
        text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
    }

    private static func probeCooperativeThreads() {
        while true {
            usleep(500_000)
            let started = ContinuousClock.now
            let ran = LockedValue<ContinuousClock.Instant?>(nil)
            Task.detached { ran.withLock { $0 = .now } }
            while ran.withLock({ $0 }) == nil { usleep(20_000) }
            if let at = ran.withLock({ $0 }), at - started > .seconds(1) {
                say("a task waited \(at - started) for one of Swift's cooperative threads")
            }
        }
    }
}
