#if canImport(Glibc)
import Glibc
#endif
import Platform
import XCTest

/// Waits until `condition` holds or `seconds` pass, and says whether it holds. Tests wait on events with a
/// deadline, never with a fixed sleep: the condition is checked again as soon as `event` is signalled (a log
/// line arrived, say), and at least every 5 ms for what nothing signals. With `failure`, a wait that runs
/// out also fails the test with that message.
@discardableResult
func waitUntil(_ seconds: Double = 5, wakingOn event: TestEvent? = nil, failure: @autoclosure () -> String? = nil,
               file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) -> Bool {
    let deadline = MonotonicInstant.now().adding(milliseconds: seconds * 1000)
    let wakeUp = event ?? TestEvent()
    while true {
        let seen = wakeUp.count
        if condition() { return true }
        let now = MonotonicInstant.now()
        if now >= deadline { break }
        wakeUp.wait(after: seen, until: min(deadline, now.adding(milliseconds: 5)))
    }
    if let message = failure() {
        XCTFail("after \(seconds) s: \(message)", file: file, line: line)
    }
    return false
}

/// Something a test can wait for: `signal()` wakes every `waitUntil(wakingOn:)` at once. A count behind a
/// pthread mutex, and a condition variable on CLOCK_MONOTONIC (so a clock step cannot stretch a wait). A
/// failing pthread call is a programming error here, so it stops the process naming the call.
final class TestEvent: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Signals so far; read and written only with `mutex` held.
    private var signals: UInt64 = 0

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        Self.check(pthread_mutex_init(mutex, nil), "pthread_mutex_init")
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        Self.check(pthread_condattr_init(&attributes), "pthread_condattr_init")
        Self.check(pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC), "pthread_condattr_setclock")
        Self.check(pthread_cond_init(condition, &attributes), "pthread_cond_init")
        Self.check(pthread_condattr_destroy(&attributes), "pthread_condattr_destroy")
    }

    deinit {
        Self.check(pthread_cond_destroy(condition), "pthread_cond_destroy")
        condition.deinitialize(count: 1)
        condition.deallocate()
        Self.check(pthread_mutex_destroy(mutex), "pthread_mutex_destroy")
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// How many times it was signalled.
    var count: UInt64 { locked { signals } }

    func signal() {
        locked {
            signals += 1
            Self.check(pthread_cond_broadcast(condition), "pthread_cond_broadcast")
        }
    }

    /// Returns once it is signalled more than `seen` times, or at `deadline`.
    func wait(after seen: UInt64, until deadline: MonotonicInstant) {
        var time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        locked {
            while signals == seen {
                let result = pthread_cond_timedwait(condition, mutex, &time)
                if result == ETIMEDOUT { return }
                Self.check(result, "pthread_cond_timedwait")
            }
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        Self.check(pthread_mutex_lock(mutex), "pthread_mutex_lock")
        defer { Self.check(pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return body()
    }

    /// pthread calls return the error number itself.
    private static func check(_ result: Int32, _ call: String) {
        precondition(result == 0, "\(call): \(Errno(rawValue: result))")
    }
}
