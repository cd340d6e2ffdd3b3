import Platform

/// The clock feedback patterns are timed on: CLOCK_MONOTONIC for real, a manually advanced one in tests.
public protocol FeedbackClock: Sendable {
    func now() -> MonotonicInstant
}

/// CLOCK_MONOTONIC: never jumps with the wall clock.
public struct SystemFeedbackClock: FeedbackClock {
    public init() {}
    public func now() -> MonotonicInstant { .now() }
}
