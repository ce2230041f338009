import Dispatch

/// Short actions run at given instants on one thread of their own: a deadline that must fire on time whatever the
/// rest of the process is doing (a relay's socket shut down when its body's time is up).
///
/// Not `DispatchQueue.global().asyncAfter`, nor a task that sleeps: on Linux both run on Dispatch's global queue,
/// which Swift's cooperative threads are (as many as cores), and work that computes there holds them until it ends,
/// so a deadline would fire only when they are free. The thread starts with the first alarm and ends after
/// ``idleTimeout`` without one. An action must be short (a flag set, a socket shut down): the next alarms wait for it.
public final class Alarms: Sendable {
    /// The alarms the toolkit's packages share.
    public static let shared = Alarms()

    /// How long the thread waits with no alarm set before it ends.
    public let idleTimeout: Duration

    private struct Alarm {
        let at: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }
    private struct State {
        /// Set and not yet run, the earliest last.
        var alarms: [Alarm] = []
        var running = false
    }
    private let state = LockedValue(State())
    private let wake = DispatchSemaphore(value: 0)

    public init(idleTimeout: Duration = .seconds(10)) {
        self.idleTimeout = idleTimeout
    }

    /// Runs `action` on the alarms' thread at `instant` (at once when it passed).
    public func schedule(at instant: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            let index = state.alarms.firstIndex { $0.at <= instant } ?? state.alarms.endIndex
            state.alarms.insert(Alarm(at: instant, action: action), at: index)
            defer { state.running = true }
            return !state.running
        }
        if !start {
            wake.signal()
            return
        }
        do {
            try startDetachedThread { [self] in serve() }
        } catch {
            // No thread could be started: the alarms are run late rather than lost, by the next thread started.
            state.withLock { $0.running = false }
        }
    }

    /// Runs `action` on the alarms' thread after `delay`.
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        schedule(at: .now + delay, action)
    }

    private func serve() {
        while true {
            let now = ContinuousClock.now
            let next = state.withLock { state -> (due: [Alarm], wait: Duration?, end: Bool) in
                var due: [Alarm] = []
                while let last = state.alarms.last, last.at <= now { due.append(state.alarms.removeLast()) }
                if !due.isEmpty { return (due, nil, false) }
                return ([], state.alarms.last.map { now.duration(to: $0.at) }, false)
            }
            if !next.due.isEmpty {
                for alarm in next.due { alarm.action() }
                continue
            }
            let wait = next.wait ?? idleTimeout
            let (seconds, attoseconds) = wait.components
            let nanoseconds = max(0, min(seconds, 86_400 * 365)) * 1_000_000_000 + attoseconds / 1_000_000_000
            if wake.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut, next.wait == nil {
                let ended = state.withLock { state -> Bool in
                    guard state.alarms.isEmpty else { return false }
                    state.running = false
                    return true
                }
                if ended { return }
            }
        }
    }
}
