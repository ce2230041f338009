// SIGINT and SIGTERM in one place: the first one calls a handler (later ones are ignored meanwhile), or ends a wait.
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Interrupt handling for long-running commands.
package enum Signals {
    /// Every signal source and claim flag is touched only on this serial queue.
    private static let queue = DispatchQueue(label: "CLIToolkit.signals")
    /// The sources, kept alive for the life of the process (confined to `queue`).
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Calls `handler` once, on the first SIGINT or SIGTERM after this call; later ones are ignored (the default
    /// action, ending the process, no longer applies).
    package static func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        queue.sync {
            let claimed = Claim()
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    // On `queue`, like every access to the claim.
                    guard !claimed.done else { return }
                    claimed.done = true
                    handler()
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// Returns when SIGINT or SIGTERM arrives.
    package static func waitForInterrupt() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            onInterrupt { continuation.resume() }
        }
    }

    /// Whether a handler has run; read and written only on `queue`, which makes the unchecked sendability safe.
    private final class Claim: @unchecked Sendable {
        var done = false
    }
}
