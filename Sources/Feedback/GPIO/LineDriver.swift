import Platform
import Settings

/// Where the pattern player's levels go: one logical level per role (true = active). The real driver
/// is `GPIOOutputs`; unit tests record (time, role, level).
public protocol LineDriver: AnyObject {
    func set(_ role: GPIORole, active: Bool)
}

/// A line driver that the feedback thread also looks after: it reopens what could not be opened and,
/// at the end, drives every line inactive and releases it.
public protocol FeedbackLines: LineDriver {
    /// Retries what is missing if that is due at `now`; returns when to call again (nil: nothing missing).
    func service(at now: MonotonicInstant) -> MonotonicInstant?
    /// Drives every line inactive and releases it. Idempotent.
    func close()
    /// Drives every line inactive now, from another thread, while the owner may be stuck (shutdown out of
    /// time). Bounded; the lines stay requested.
    func forceInactive()
}

extension FeedbackLines {
    public func forceInactive() {}
}
