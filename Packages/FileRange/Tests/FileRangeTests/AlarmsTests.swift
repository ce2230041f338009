import Dispatch
import FileRange
import Testing

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// Alarms: actions at their instant, in order, on a thread that no busy queue delays.
@Suite struct AlarmsTests {
    @Test func alarmsRunAtTheirInstantInOrder() async {
        let alarms = Alarms(idleTimeout: .milliseconds(200))
        let start = ContinuousClock.now
        let ran = LockedValue<[(Int, Duration)]>([])
        let all = DispatchSemaphore(value: 0)
        for (index, milliseconds) in [(2, 300), (0, 100), (1, 200), (3, 0)] {
            alarms.schedule(at: start + .milliseconds(milliseconds)) {
                let count = ran.withLock { list -> Int in
                    list.append((index, start.duration(to: .now)))
                    return list.count
                }
                if count == 4 { all.signal() }
            }
        }
        let done = await BlockingPool.shared.run { all.wait(timeout: .now() + 10) == .success }
        #expect(done)
        let list = ran.withLock { $0 }
        #expect(list.map(\.0) == [3, 0, 1, 2])
        for (index, elapsed) in list where index < 3 {
            #expect(elapsed >= .milliseconds((index + 1) * 100), "alarm \(index) ran after \(elapsed)")
        }
        // The thread ends when no alarm is left, and a later alarm starts one again.
        let later = DispatchSemaphore(value: 0)
        try? await Task.sleep(for: .milliseconds(400))
        alarms.schedule(after: .milliseconds(10)) { later.signal() }
        #expect(await BlockingPool.shared.run { later.wait(timeout: .now() + 10) == .success })
    }

    /// The alarm fires on time while Dispatch's global queue (on Linux also Swift's cooperative threads) is held by
    /// blocks that compute for 0.8 s, twice as many as cores: `DispatchQueue.global().asyncAfter`, which a relay's
    /// deadline used, ran its block only when they ended (0.8 s instead of 0.05 s, measured on 2 cores).
    @Test func anAlarmFiresOnTimeWhileTheGlobalQueueComputes() async {
        let busy = 2 * max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let spun = DispatchGroup()
        let spinUntil = ContinuousClock.now + .milliseconds(800)
        for _ in 0..<busy {
            DispatchQueue.global().async(group: spun) {
                var count = 0
                while ContinuousClock.now < spinUntil { count &+= 1 }
                _ = count
            }
        }
        let scheduled = ContinuousClock.now
        let fired = LockedValue<Duration?>(nil)
        let rang = DispatchSemaphore(value: 0)
        Alarms.shared.schedule(after: .milliseconds(50)) {
            fired.withLock { $0 = scheduled.duration(to: .now) }
            rang.signal()
        }
        let ok = await BlockingPool.shared.run { rang.wait(timeout: .now() + 10) == .success }
        _ = await BlockingPool.shared.run { spun.wait(timeout: .now() + 10) }
        #expect(ok)
        let late = fired.withLock { $0 }
        #expect(
            late.map { $0 >= .milliseconds(50) && $0 < .milliseconds(500) } == true,
            "fired after \(String(describing: late))")
    }
}
