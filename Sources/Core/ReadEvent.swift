import Platform

/// A code the daemon reports: what every sink receives.
public struct ReadEvent: Sendable {
    /// 1, 2, … per daemon run.
    public let seq: UInt64
    /// Wall-clock time of emission, nanoseconds since the epoch.
    public let wallTimeNanoseconds: Int64
    public let symbol: DecodedSymbol
    /// The frame the read came from.
    public let frame: UInt64
    /// When that frame was dequeued (this machine's monotonic clock) and when the event was emitted.
    public let dequeuedAt: MonotonicInstant
    public let emittedAt: MonotonicInstant
    /// Accepted, or rejected by a payload filter or the serial policy (sinks give error feedback).
    public let verdict: Verdict

    public init(seq: UInt64, wallTimeNanoseconds: Int64, symbol: DecodedSymbol, frame: UInt64,
                dequeuedAt: MonotonicInstant, emittedAt: MonotonicInstant, verdict: Verdict = .accepted) {
        self.seq = seq
        self.wallTimeNanoseconds = wallTimeNanoseconds
        self.symbol = symbol
        self.frame = frame
        self.dequeuedAt = dequeuedAt
        self.emittedAt = emittedAt
        self.verdict = verdict
    }

    public var latencyMilliseconds: Double { emittedAt.milliseconds(since: dequeuedAt) }

    /// Age at `now`, for TTL checks.
    public func ageMilliseconds(at now: MonotonicInstant = .now()) -> Double { now.milliseconds(since: emittedAt) }

    public func with(verdict: Verdict) -> ReadEvent {
        ReadEvent(seq: seq, wallTimeNanoseconds: wallTimeNanoseconds, symbol: symbol, frame: frame,
                  dequeuedAt: dequeuedAt, emittedAt: emittedAt, verdict: verdict)
    }
}

public enum Verdict: Equatable, Sendable {
    case accepted
    /// Not sent to the door controller; error feedback; the reason is logged and put in JSON.
    case rejected(reason: String)

    public var isAccepted: Bool { self == .accepted }
}

/// What the daemon is doing, for the status LED, sd_notify STATUS= and logs.
public enum DaemonStatus: String, Sendable, Equatable {
    case starting, scanning, cameraLost = "camera lost", paused, stopping
}
