import Core

/// One change of one line, `atMs` after the pattern starts.
public struct FeedbackStep: Equatable, Sendable, CustomStringConvertible {
    public var atMs: Int
    public var role: GPIORole
    public var active: Bool

    public init(at atMs: Int, _ role: GPIORole, _ active: Bool) {
        self.atMs = atMs
        self.role = role
        self.active = active
    }

    public var description: String { "\(atMs)ms \(role.rawValue)=\(active ? 1 : 0)" }
}

/// A feedback pattern as data: steps in time order, played once or repeated every `periodMs`.
/// A pattern that ends (or is preempted) leaves all its lines inactive.
public struct FeedbackPattern: Equatable, Sendable {
    public let name: String
    /// Sorted by `atMs` (steps at the same time keep their given order).
    public let steps: [FeedbackStep]
    /// Repeat every this many ms (at least the last step's time, at least 1); nil: play once.
    public let periodMs: Int?

    public init(name: String, steps: [FeedbackStep], periodMs: Int? = nil) {
        self.name = name
        let ordered = steps.enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }
            .map(\.element).map { FeedbackStep(at: max(0, $0.atMs), $0.role, $0.active) }
        self.steps = ordered
        self.periodMs = periodMs.map { max($0, ordered.last?.atMs ?? 0, 1) }
    }

    /// The lines the pattern drives.
    public var roles: Set<GPIORole> { Set(steps.map(\.role)) }

    /// Nothing: the lines of the preempted pattern go inactive.
    public static let off = FeedbackPattern(name: "off", steps: [])

    /// `role` on for `onMs` from `atMs` (nothing when onMs is 0).
    public static func pulse(_ role: GPIORole, at atMs: Int, for onMs: Int) -> [FeedbackStep] {
        onMs > 0 ? [FeedbackStep(at: atMs, role, true), FeedbackStep(at: atMs + onMs, role, false)] : []
    }
}

/// The patterns ScanGate plays, built from the `[gpio]` settings:
/// - good read: green on `good-led-ms`, and one `good-buzz-ms` buzz at the start;
/// - rejected code: `error-blinks` red blinks of `error-blink-ms` on / `error-blink-ms` off, each
///   starting with an `error-buzz-ms` buzz;
/// - status LED: scanning = `heartbeat-ms` on every `heartbeat-period-ms`; camera lost = on/off
///   `camera-lost-blink-ms` each; paused, starting and stopping = off.
public struct FeedbackPatterns: Equatable, Sendable {
    public var goodRead: FeedbackPattern
    public var rejected: FeedbackPattern
    public var scanning: FeedbackPattern
    public var cameraLost: FeedbackPattern
    public var paused: FeedbackPattern

    public init(settings s: GPIOSettings) {
        goodRead = FeedbackPattern(name: "good read",
                                   steps: FeedbackPattern.pulse(.green, at: 0, for: s.goodLedMs)
                                       + FeedbackPattern.pulse(.buzzer, at: 0, for: s.goodBuzzMs))
        var error: [FeedbackStep] = []
        let blink = max(1, s.errorBlinkMs)
        for i in 0..<max(0, s.errorBlinks) {
            let t = i * 2 * blink
            error += FeedbackPattern.pulse(.red, at: t, for: blink)
            error += FeedbackPattern.pulse(.buzzer, at: t, for: min(s.errorBuzzMs, blink))
        }
        rejected = FeedbackPattern(name: "rejected", steps: error)
        let period = max(2, s.heartbeatPeriodMs)
        scanning = FeedbackPattern(name: "scanning",
                                   steps: FeedbackPattern.pulse(.status, at: 0, for: min(s.heartbeatMs, period - 1)),
                                   periodMs: period)
        let fast = max(1, s.cameraLostBlinkMs)
        cameraLost = FeedbackPattern(name: "camera lost", steps: FeedbackPattern.pulse(.status, at: 0, for: fast),
                                     periodMs: 2 * fast)
        paused = .off
    }

    public func forEvent(verdict: Verdict) -> FeedbackPattern {
        verdict.isAccepted ? goodRead : rejected
    }

    public func forStatus(_ status: DaemonStatus) -> FeedbackPattern {
        switch status {
        case .scanning: return scanning
        case .cameraLost: return cameraLost
        case .paused, .starting, .stopping: return paused
        }
    }
}
