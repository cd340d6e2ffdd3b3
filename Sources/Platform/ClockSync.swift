#if canImport(Glibc)
import Glibc
#endif
import CShim

/// Whether the wall clock can be trusted to judge exp and nbf.
public struct ClockSyncStatus: Equatable, Sendable {
    public let synchronised: Bool
    /// How that was decided: "kernel maximum error 0.012 s", "systemd-timesyncd synchronised at ...".
    public let detail: String

    public init(synchronised: Bool, detail: String) {
        self.synchronised = synchronised
        self.detail = detail
    }
}

/// Asks whether the clock is synchronised. Injected so tests can decide; the daemon uses `kernel()`.
public typealias ClockSyncCheck = @Sendable () -> ClockSyncStatus

/// What adjtimex(2) reports, read-only.
public struct KernelTimex: Equatable, Sendable {
    /// adjtimex's return value: TIME_OK (0) ... TIME_ERROR (5).
    public var state: Int32
    /// The kernel's maximum error bound, microseconds. The kernel adds 500 µs to it every second and
    /// sets STA_UNSYNC once it reaches 16 s; a time daemon lowers it at each update.
    public var maxErrorMicroseconds: Int
    public var estimatedErrorMicroseconds: Int
    public var status: Int32

    public init(state: Int32, maxErrorMicroseconds: Int, estimatedErrorMicroseconds: Int, status: Int32) {
        self.state = state
        self.maxErrorMicroseconds = maxErrorMicroseconds
        self.estimatedErrorMicroseconds = estimatedErrorMicroseconds
        self.status = status
    }

    public static let unsyncFlag: Int32 = 0x40   // STA_UNSYNC
}

/// The rule credential-require-synced-clock applies, and why:
///
/// - **adjtimex maximum error below 16 s** (the rule systemd's `timedatectl` uses for "System clock
///   synchronized"). At boot the kernel starts with maxerror = 16 s; chrony, ntpd and
///   systemd-timesyncd lower it at every clock update (timesyncd writes 0, chrony its own bound), and
///   the kernel raises it by 500 µs each second without updates, so it crosses 16 s about 8.9 hours
///   after the last one. `STA_UNSYNC` alone is not used: chrony on Linux keeps it set unless `rtcsync`
///   is configured (sys_timex.c, to keep the kernel from writing the RTC), and timesyncd sets it when
///   the RTC keeps local time, so a synchronised clock can carry it.
/// - **or systemd-timesyncd's flag file** `/run/systemd/timesync/synchronized`, which timesyncd touches
///   at each accepted NTP reply. /run is emptied at every boot, so it says the clock was synchronised
///   during this boot; it keeps a kiosk working through a network outage longer than 8.9 hours, when the
///   kernel's worst-case bound (500 ppm) has run out but the disciplined clock drifts far less. chrony
///   and ntpd do not write it, so with them only the kernel's bound counts.
///
/// A Pi without a battery clock boots with the time of its last shutdown (timesyncd's saved clock) or
/// 1970: both fail this until NTP answers, which is the point.
public enum ClockSync {
    public static let flagFile = "/run/systemd/timesync/synchronized"
    /// systemd's threshold (time-util.c ntp_synced()) and the kernel's NTP_PHASE_LIMIT.
    public static let maxErrorLimitMicroseconds = 16_000_000

    /// adjtimex read-only; nil with the errno when it fails (a seccomp filter, an odd container).
    public static func readTimex() -> Result<KernelTimex, Errno> {
        var maxError = 0, estError = 0
        var status: Int32 = 0
        let state = shim_adjtimex_read(&maxError, &estError, &status)
        guard state >= 0 else { return .failure(.current) }
        return .success(KernelTimex(state: state, maxErrorMicroseconds: maxError, estimatedErrorMicroseconds: estError, status: status))
    }

    /// The flag file's modification time (seconds since the epoch), nil when it does not exist.
    public static func flagFileTime(_ path: String = flagFile) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_mtim.tv_sec)
    }

    /// The rule above, on given readings (so tests can feed it any kernel state).
    public static func judge(timex: Result<KernelTimex, Errno>, flagFileTime: Int64?) -> ClockSyncStatus {
        var kernel: String
        switch timex {
        case .success(let t):
            let seconds = Double(t.maxErrorMicroseconds) / 1e6
            if t.maxErrorMicroseconds < maxErrorLimitMicroseconds {
                return ClockSyncStatus(synchronised: true, detail: "kernel maximum error \(format(seconds)) s (adjtimex)")
            }
            kernel = "kernel maximum error \(format(seconds)) s, not below 16 s (adjtimex)"
        case .failure(let e):
            kernel = "adjtimex failed: \(e)"
        }
        if let touched = flagFileTime {
            return ClockSyncStatus(synchronised: true,
                                   detail: "systemd-timesyncd synchronised the clock this boot (\(flagFile), last at \(WallClock.rfc3339(nanoseconds: touched * 1_000_000_000))); \(kernel)")
        }
        kernel += "; no \(flagFile)"
        return ClockSyncStatus(synchronised: false, detail: kernel)
    }

    /// The check the daemon uses: this machine's kernel and flag file, read at each call (~1 µs).
    public static func kernel() -> ClockSyncCheck {
        { judge(timex: readTimex(), flagFileTime: flagFileTime()) }
    }

    /// A check that always says the same (tests; credential-require-synced-clock = no).
    public static func fixed(_ synchronised: Bool, _ detail: String = "fixed for a test") -> ClockSyncCheck {
        { ClockSyncStatus(synchronised: synchronised, detail: detail) }
    }

    static func format(_ v: Double) -> String {
        let rounded = (v * 1000).rounded() / 1000
        return String(rounded)
    }
}
