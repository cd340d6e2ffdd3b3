#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A test fault (`SCANGATE_FAULT=park-at:STEP` or `park-at:STEP:N`, see App/FaultInjection.swift): the
/// N-th time (default 1) this process reaches the named step it writes
/// `scangate: fault: parked at STEP (#N)` to stderr and then blocks that thread for ever, so a test can
/// kill -9 the process while it is provably at that step instead of racing the clock. Inert unless the
/// variable names a park-at fault: `fromEnvironment()` is nil then, and the code's steps cost a nil check.
///
/// Steps: `replay-record-written` (a one-time pass's record written, not yet fdatasync'd),
/// `replay-record-synced` (on disk, the pass not yet reported as accepted), `replay-compaction-written`
/// (the compacted temp file written and fsync'd, not yet renamed over the store), `replay-compaction-renamed`
/// (renamed, the store not yet reopened); `passback-record-written` (an anti-passback use written, not yet
/// fdatasync'd), `passback-record-synced` (on disk, the read not yet reported as accepted).
public final class FaultParking: Sendable {
    public static let variable = "SCANGATE_FAULT"
    public static let steps = ["replay-record-written", "replay-record-synced", "replay-compaction-written",
                               "replay-compaction-renamed", "passback-record-written", "passback-record-synced"]

    public let step: String
    public let count: Int
    private let reached = Atomic<Int>(0)

    init(step: String, count: Int) {
        self.step = step
        self.count = count
    }

    /// `park-at:STEP[:N]` from `SCANGATE_FAULT`; nil when it is unset or another fault. An unknown step or
    /// a bad N is nil as well (App's FaultInjection logs those).
    public static func fromEnvironment() -> FaultParking? {
        guard let raw = getenv(variable) else { return nil }
        return parse(String(cString: raw))
    }

    public static func parse(_ fault: String) -> FaultParking? {
        let parts = fault.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 || parts.count == 3, parts[0] == "park-at", steps.contains(parts[1]) else { return nil }
        guard parts.count == 3 else { return FaultParking(step: parts[1], count: 1) }
        guard let n = Int(parts[2]), n >= 1 else { return nil }
        return FaultParking(step: parts[1], count: n)
    }

    /// Called at `name`: parks for ever the `count`-th time the fault's step is reached.
    public func reach(_ name: String) {
        guard name == step else { return }
        let n = reached.add(1, ordering: .relaxed).newValue
        guard n == count else { return }
        let line = Array("scangate: fault: parked at \(step) (#\(n))\n".utf8)
        // The marker must be out before parking: a short write or EINTR continues, another error gives up.
        var offset = 0
        while offset < line.count {
            let written = line[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written > 0 { offset += written } else if written < 0 && errno == EINTR { continue } else { break }
        }
        // pause() returns only for a handled signal (-1, EINTR): park again.
        while pause() == -1 && errno == EINTR {}
        fatalError("pause() returned without a signal (errno \(errno))")
    }
}
