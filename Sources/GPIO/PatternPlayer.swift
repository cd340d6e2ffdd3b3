import Platform

/// Which independent pattern a line belongs to: read feedback (green, red, buzzer) or the status LED.
/// A new pattern preempts the running one on the same channel only.
public enum FeedbackChannel: Int, CaseIterable, Sendable, Comparable {
    case event, status
    public static func < (a: FeedbackChannel, b: FeedbackChannel) -> Bool { a.rawValue < b.rawValue }
}

/// Plays feedback patterns on a line driver, timed by a clock. It never sleeps: `tick()` applies every
/// step due at the clock's now, in time order, and `nextDeadline` says when the next one is due. The
/// feedback thread waits for that deadline; unit tests move a fake clock to it.
///
/// Steps that fall at the same instant are merged and only level changes are written, so preempting
/// a pattern that lit a line with one that lights it again leaves it lit (no glitch), while the lines
/// only the old pattern used go inactive at the moment of preemption.
/// Not thread-safe: owned by one thread.
public final class PatternPlayer {
    private struct Running {
        let pattern: FeedbackPattern
        /// Start of the current repetition.
        var startedAt: UInt64
        /// Index of the next step to apply.
        var next: Int

        var nextDue: UInt64? {
            next < pattern.steps.count ? startedAt + UInt64(pattern.steps[next].atMs) * 1_000_000 : nil
        }
    }

    private let driver: LineDriver
    private let clock: FeedbackClock
    private var running: [FeedbackChannel: Running] = [:]
    /// The level last written to each role (absent: inactive).
    private var levels: [GPIORole: Bool] = [:]

    public init(driver: LineDriver, clock: FeedbackClock) {
        self.driver = driver
        self.clock = clock
    }

    /// The pattern playing on `channel`, if any.
    public func current(_ channel: FeedbackChannel) -> FeedbackPattern? { running[channel]?.pattern }

    public func isPlaying(_ channel: FeedbackChannel) -> Bool { running[channel] != nil }

    /// The level the player last wrote for `role`.
    public func level(_ role: GPIORole) -> Bool { levels[role] ?? false }

    /// When the next step is due (nil: nothing is playing).
    public var nextDeadline: MonotonicInstant? {
        running.values.compactMap(\.nextDue).min().map(MonotonicInstant.init(nanoseconds:))
    }

    /// Starts `pattern` on `channel` now, preempting what played there: the old pattern's lines go
    /// inactive, merged with the new pattern's steps at 0 ms.
    public func play(_ pattern: FeedbackPattern, on channel: FeedbackChannel) {
        let now = clock.now().nanoseconds
        var target: [GPIORole: Bool] = [:]
        if let old = running.removeValue(forKey: channel) {
            for role in old.pattern.roles { target[role] = false }
        }
        if !pattern.steps.isEmpty {
            running[channel] = Running(pattern: pattern, startedAt: now, next: 0)
            collectSteps(of: channel, dueAt: now, into: &target)
        }
        write(target)
        tick()
    }

    /// Stops the pattern on `channel`; its lines go inactive.
    public func stop(_ channel: FeedbackChannel) { play(.off, on: channel) }

    /// Stops everything and drives every line the player has set inactive.
    public func stopAll() {
        running.removeAll()
        var target: [GPIORole: Bool] = [:]
        for (role, level) in levels where level { target[role] = false }
        write(target)
    }

    /// Applies every step due at the clock's now, instant by instant in time order.
    public func tick() {
        let now = clock.now().nanoseconds
        while let due = running.values.compactMap(\.nextDue).min(), due <= now {
            var target: [GPIORole: Bool] = [:]
            for channel in running.keys.sorted() { collectSteps(of: channel, dueAt: due, into: &target) }
            write(target)
        }
    }

    /// Moves `channel`'s steps due exactly at `instant` into `target`; wraps a repeating pattern and
    /// ends a finished one (its lines go inactive).
    private func collectSteps(of channel: FeedbackChannel, dueAt instant: UInt64, into target: inout [GPIORole: Bool]) {
        guard var r = running[channel] else { return }
        while let due = r.nextDue, due == instant {
            let step = r.pattern.steps[r.next]
            target[step.role] = step.active
            r.next += 1
            if r.next == r.pattern.steps.count {
                if let period = r.pattern.periodMs {
                    r.startedAt += UInt64(period) * 1_000_000
                    r.next = 0
                } else {
                    for role in r.pattern.roles where target[role] ?? levels[role] ?? false { target[role] = false }
                    running[channel] = nil
                    return
                }
            }
        }
        running[channel] = r
    }

    private func write(_ target: [GPIORole: Bool]) {
        for (role, active) in target.sorted(by: { $0.key < $1.key }) where (levels[role] ?? false) != active {
            levels[role] = active
            driver.set(role, active: active)
        }
    }
}
