import CSystemd
import Platform

/// The libsystemd calls the service layer makes: the seam unit tests fake. The real calls read
/// NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from the environment at each call.
public protocol SystemdCalls: Sendable {
    /// Sends a notification such as "READY=1". Returns false when not run by systemd (no NOTIFY_SOCKET).
    func notify(_ state: String) -> Result<Bool, Errno>
    /// The watchdog interval systemd asked for, in microseconds, or nil when the watchdog is off
    /// (no WATCHDOG_USEC, or WATCHDOG_PID names another process).
    func watchdogMicroseconds() -> Result<UInt64?, Errno>
}

/// sd_notify(3) and sd_watchdog_enabled(3) from libsystemd.
public struct LibSystemd: SystemdCalls {
    public init() {}

    public func notify(_ state: String) -> Result<Bool, Errno> {
        let result = sd_notify(0, state)
        if result < 0 { return .failure(Errno(rawValue: -result)) }
        return .success(result > 0)
    }

    public func watchdogMicroseconds() -> Result<UInt64?, Errno> {
        var usec: UInt64 = 0
        let result = sd_watchdog_enabled(0, &usec)
        if result < 0 { return .failure(Errno(rawValue: -result)) }
        return .success(result > 0 && usec > 0 ? usec : nil)
    }
}
