// The lock of the tests' own bookkeeping (fake origins' tables and request logs, the temporary-folder registry).
// An `NSLock`, so that a test file can use it without importing FileRange.
import Foundation

/// A value behind a lock, shared by reference between a test and the origins or tasks it starts.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value while holding the lock, and returns what `body` returns.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
