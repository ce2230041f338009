#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a lock: the toolkit's one lock, for the small shared state of servers, sessions and caches.
///
/// It stands in for `Synchronization.Mutex`, which needs macOS 15 / iOS 18, so that the toolkit runs on macOS 13,
/// iOS 16, tvOS 16 and visionOS 1. The lock is `os_unfair_lock` on Darwin and a `pthread_mutex_t` elsewhere, kept in
/// heap storage of its own so that its address never moves. It is not recursive: calling `withLock` again from
/// inside `body` on the same value deadlocks (Darwin traps).
///
/// ```swift
/// let counts = LockedValue([String: Int]())
/// counts.withLock { $0["hits", default: 0] += 1 }
/// ```
public final class LockedValue<Value>: @unchecked Sendable {
    #if canImport(Darwin)
        private typealias PlatformLock = os_unfair_lock
    #else
        private typealias PlatformLock = pthread_mutex_t
    #endif

    private let lock: UnsafeMutablePointer<PlatformLock>
    private var value: Value

    /// A lock guarding `initialValue`.
    public init(_ initialValue: sending Value) {
        value = initialValue
        lock = .allocate(capacity: 1)
        #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
        #else
            lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(lock, nil)
        #endif
    }

    deinit {
        #if !canImport(Darwin)
            pthread_mutex_destroy(lock)
        #endif
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with the value while holding the lock, and returns what `body` returns.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result
    {
        #if canImport(Darwin)
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
        #else
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
        #endif
        return try body(&value)
    }
}
