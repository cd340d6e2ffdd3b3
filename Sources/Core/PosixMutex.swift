#if canImport(Glibc)
import Glibc
#endif
import Platform

/// A value behind a `pthread_mutex_t`: the lock for state shared between threads, with the API of
/// `Synchronization.Mutex` (`withLock`, `withLockIfAvailable`).
///
/// Why not `Synchronization.Mutex`: on Linux it locks through a futex with priority inheritance
/// (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI), and when the lock is contended the kernel hands ownership over
/// where ThreadSanitizer cannot see it. TSan then misses the happens-before edge between two `withLock`
/// bodies and reports correctly locked state as a race, which could only be silenced by a suppression
/// broad enough to hide real races next to a lock. TSan intercepts `pthread_mutex_lock`/`unlock`, so
/// with this lock it sees every edge and a report means a real race (Tests/Sanitizers/README.md).
///
/// The mutex and the value live in their own heap allocations, so their addresses never move. The mutex
/// is of the error-checking kind: locking it again on the thread that holds it (a `withLock` inside a
/// `withLock` body) stops the process with EDEADLK instead of hanging. A failing pthread call is a
/// programming error here (a bad or re-entered mutex), so it stops the process with a precondition that
/// names the call and the error.
///
/// `@unchecked Sendable`: every access to the value happens between `pthread_mutex_lock` and
/// `pthread_mutex_unlock` of the one mutex, and the value goes in and comes out only as `sending`, as
/// with `Synchronization.Mutex`, so no non-Sendable state is shared without the lock.
public final class PosixMutex<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let state: UnsafeMutablePointer<State>

    public init(_ initial: sending State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        Self.check(pthread_mutexattr_init(&attributes), "pthread_mutexattr_init")
        Self.check(pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK)), "pthread_mutexattr_settype")
        Self.check(pthread_mutex_init(mutex, &attributes), "pthread_mutex_init")
        Self.check(pthread_mutexattr_destroy(&attributes), "pthread_mutexattr_destroy")
        state = .allocate(capacity: 1)
        state.initialize(to: initial)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        Self.check(pthread_mutex_destroy(mutex), "pthread_mutex_destroy")
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock, waiting for it if another thread holds it.
    public func withLock<Result, E: Error>(
        _ body: (inout sending State) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        Self.check(pthread_mutex_lock(mutex), "pthread_mutex_lock")
        defer { Self.check(pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return try body(&state.pointee)
    }

    /// Runs `body` with the value if the lock is free now (pthread_mutex_trylock); nil when another
    /// thread holds it.
    public func withLockIfAvailable<Result, E: Error>(
        _ body: (inout sending State) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        let rc = pthread_mutex_trylock(mutex)
        if rc == EBUSY { return nil }
        Self.check(rc, "pthread_mutex_trylock")
        defer { Self.check(pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return try body(&state.pointee)
    }

    /// pthread calls return the error number itself (they do not set errno).
    private static func check(_ rc: Int32, _ call: StaticString) {
        precondition(rc == 0, "\(call): \(Errno(rawValue: rc))")
    }
}
