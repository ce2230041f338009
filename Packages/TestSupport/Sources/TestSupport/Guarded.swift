// The one lock the test-support module needs for its own bookkeeping. TestSupport depends on nothing (so that the
// floor's own tests can use it too), which is why it does not use FileRange's LockedValue; test code that has
// FileRange uses LockedValue directly.
import Foundation

/// A value behind an `NSLock`.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
