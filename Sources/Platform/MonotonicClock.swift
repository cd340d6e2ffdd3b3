#if canImport(Glibc)
import Glibc
#endif

/// A point on CLOCK_MONOTONIC, in nanoseconds: the clock V4L2 stamps buffers with.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }

    public static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.nanoseconds < b.nanoseconds }

    public func adding(milliseconds: Double) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64(max(0, Double(nanoseconds) + milliseconds * 1e6)))
    }

    /// Milliseconds from `earlier` to self (negative if `earlier` is later).
    public func milliseconds(since earlier: MonotonicInstant) -> Double {
        (Double(nanoseconds) - Double(earlier.nanoseconds)) / 1e6
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

/// Wall-clock time (CLOCK_REALTIME) in nanoseconds since the epoch, for event timestamps.
public struct WallClock: Sendable {
    public static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// RFC 3339 UTC with milliseconds: 2026-11-30T14:01:23.456Z
    public static func rfc3339(nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        let millis = Int((nanoseconds % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}

/// Sleeps the calling thread (for pacing and backoff on threads that own no run loop).
public func sleepThread(milliseconds: Double) {
    guard milliseconds > 0 else { return }
    var request = timespec(tv_sec: Int(milliseconds / 1000),
                           tv_nsec: Int((milliseconds.truncatingRemainder(dividingBy: 1000)) * 1e6))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}

/// Sleeps the calling thread until `instant` on CLOCK_MONOTONIC (clock_nanosleep, absolute), to the same
/// instant again after a signal: pacing that does not drift (frame pacing, Wiegand bit slots).
public func sleepThread(until instant: MonotonicInstant) {
    var ts = timespec(tv_sec: Int(instant.nanoseconds / 1_000_000_000), tv_nsec: Int(instant.nanoseconds % 1_000_000_000))
    // clock_nanosleep returns the error number itself (not -1 and errno).
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}
