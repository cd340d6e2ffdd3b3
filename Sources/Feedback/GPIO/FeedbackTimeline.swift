import Core
import Platform
import Settings

/// A two-state signal that repeats: on for `onNs`, off for `offNs`, from `start` until `end` (nil: for
/// ever). `offNs == 0` is on throughout; `onNs == 0` is off throughout. Times are CLOCK_MONOTONIC ns.
struct PeriodicSignal: Equatable {
    let start: UInt64
    let onNs: UInt64
    let offNs: UInt64
    let end: UInt64?

    init(start: UInt64, onMs: Int, offMs: Int, end: UInt64?) {
        self.start = start
        self.onNs = UInt64(max(0, onMs)) * 1_000_000
        self.offNs = UInt64(max(0, offMs)) * 1_000_000
        self.end = end
    }

    var period: UInt64 { onNs + offNs }

    func isLive(at t: UInt64) -> Bool { t >= start && (end.map { t < $0 } ?? true) }

    /// In the on part at `t` (false outside start..<end).
    func isOn(at t: UInt64) -> Bool {
        guard isLive(at: t), onNs > 0 else { return false }
        if offNs == 0 { return true }
        return (t - start) % period < onNs
    }

    /// The first instant after `t` where the signal may change: a phase edge, the start or the end.
    func nextBoundary(after t: UInt64) -> UInt64? {
        if t < start { return start }
        if let end, t >= end { return nil }
        var next: UInt64? = end
        if onNs > 0 && offNs > 0 {
            let k = (t - start) / period
            let phaseEnd = start + k * period + onNs
            let candidate = phaseEnd > t ? phaseEnd : start + (k + 1) * period
            next = next.map { min($0, candidate) } ?? candidate
        }
        return next
    }

    /// When `duration` ends for a signal of this period that starts at `start` (nil: until replaced).
    static func end(start: UInt64, onMs: Int, offMs: Int, duration: FeedbackDuration) -> UInt64? {
        switch duration {
        case .untilReplaced: return nil
        case .milliseconds(let ms): return start + UInt64(max(0, ms)) * 1_000_000
        case .cycles(let n):
            let cycle = UInt64(max(0, onMs) + max(0, offMs)) * 1_000_000
            return start + UInt64(max(0, n)) * cycle
        }
    }
}

/// The reader LED (green and red lines; amber lights both) as a function of time: the permanent state,
/// with the temporary one shown over it until it ends.
struct LEDTimeline: Equatable {
    struct Shown: Equatable {
        let blink: LEDBlink
        let signal: PeriodicSignal
    }
    var permanent: Shown
    var temporary: Shown?

    init(start: UInt64) {
        permanent = Shown(blink: .steady(.off), signal: PeriodicSignal(start: start, onMs: 1, offMs: 0, end: nil))
    }

    static func shown(_ blink: LEDBlink, start: UInt64, duration: FeedbackDuration) -> Shown {
        let end = PeriodicSignal.end(start: start, onMs: blink.onMs, offMs: blink.offMs, duration: duration)
        return Shown(blink: blink, signal: PeriodicSignal(start: start, onMs: blink.onMs, offMs: blink.offMs, end: end))
    }

    func color(at t: UInt64) -> LEDColor {
        if let temporary, temporary.signal.isLive(at: t) {
            return temporary.signal.isOn(at: t) ? temporary.blink.onColor : temporary.blink.offColor
        }
        let p = permanent
        return p.signal.isOn(at: t) ? p.blink.onColor : p.blink.offColor
    }

    func nextBoundary(after t: UInt64) -> UInt64? {
        if let temporary, temporary.signal.isLive(at: t) || t < temporary.signal.start {
            // The permanent state is hidden until the temporary one ends; then it shows at its own phase.
            return temporary.signal.nextBoundary(after: t)
        }
        return permanent.signal.nextBoundary(after: t)
    }

    /// True while a temporary state with an end is showing.
    func isTemporaryPlaying(at t: UInt64) -> Bool {
        guard let temporary, temporary.signal.isLive(at: t) else { return false }
        return true
    }

    mutating func apply(_ command: LEDCommand, at now: UInt64) {
        if let blink = command.permanent {
            permanent = Shown(blink: blink, signal: PeriodicSignal(start: now, onMs: blink.onMs, offMs: blink.offMs, end: nil))
        }
        switch command.temporary {
        case nil: break
        case .cancel?: temporary = nil
        case .show(let blink, let duration)?:
            let shown = LEDTimeline.shown(blink, start: now, duration: duration)
            temporary = shown.signal.end == now ? nil : shown
        }
    }

    mutating func prune(at t: UInt64) {
        if let temporary, let end = temporary.signal.end, t >= end { self.temporary = nil }
    }
}

/// Everything the GPIO feedback lines should show, as a function of time: the reader LED, the buzzer's
/// tone command and the status LED. Pure: `FeedbackTimelinePlayer` walks it on a clock.
struct FeedbackTimeline: Equatable {
    var led: LEDTimeline
    var tone: PeriodicSignal?
    var status: PeriodicSignal?

    init(start: UInt64) { led = LEDTimeline(start: start) }

    func level(_ role: GPIORole, at t: UInt64) -> Bool {
        switch role {
        case .green: return led.color(at: t).lightsGreen
        case .red: return led.color(at: t).lightsRed
        case .buzzer: return tone?.isOn(at: t) ?? false
        case .status: return status?.isOn(at: t) ?? false
        }
    }

    func nextBoundary(after t: UInt64) -> UInt64? {
        [led.nextBoundary(after: t), tone?.nextBoundary(after: t), status?.nextBoundary(after: t)]
            .compactMap { $0 }.min()
    }

    /// True while read feedback with an end is playing (a temporary LED state, a tone).
    func isPlaying(at t: UInt64) -> Bool {
        led.isTemporaryPlaying(at: t) || (tone?.isLive(at: t) ?? false)
    }

    mutating func apply(_ command: FeedbackCommand, at now: UInt64) {
        if let led = command.led { self.led.apply(led, at: now) }
        if let t = command.tone {
            if t.isSilence {
                tone = nil
            } else {
                tone = PeriodicSignal(start: now, onMs: t.onMs, offMs: t.offMs,
                                      end: PeriodicSignal.end(start: now, onMs: t.onMs, offMs: t.offMs, duration: t.duration))
            }
        }
    }

    mutating func setStatus(_ blink: StatusBlink, at now: UInt64) {
        status = blink.onMs == 0 ? nil : PeriodicSignal(start: now, onMs: blink.onMs, offMs: blink.offMs, end: nil)
    }

    mutating func prune(at t: UInt64) {
        led.prune(at: t)
        if let tone, let end = tone.end, t >= end { self.tone = nil }
    }
}

/// The status LED's pattern: on `onMs`, off `offMs`, repeating (`offMs == 0`: steady; `onMs == 0`: off).
public struct StatusBlink: Equatable, Sendable {
    public var onMs: Int
    public var offMs: Int
    public init(onMs: Int, offMs: Int) {
        self.onMs = max(0, onMs)
        self.offMs = max(0, offMs)
    }
    public static let off = StatusBlink(onMs: 0, offMs: 0)
}

/// Plays a `FeedbackTimeline` on a line driver, timed by a clock. It never sleeps: `tick()` applies every
/// change due up to the clock's now, in time order (a late tick still plays every pulse), and
/// `nextDeadline` says when the next is due. Only level changes are written, so a command that keeps a
/// line lit (a good read during a good read) leaves it lit without a glitch.
/// Not thread-safe: owned by the feedback thread.
public final class FeedbackTimelinePlayer {
    private let driver: LineDriver
    private let clock: FeedbackClock
    private var timeline: FeedbackTimeline
    private var cursor: UInt64
    private var levels: [GPIORole: Bool] = [:]

    public init(driver: LineDriver, clock: FeedbackClock) {
        self.driver = driver
        self.clock = clock
        let now = clock.now().nanoseconds
        self.cursor = now
        self.timeline = FeedbackTimeline(start: now)
    }

    /// Plays `command` from now.
    public func apply(_ command: FeedbackCommand) { apply([command]) }

    /// Plays `commands` from now, in order, as one change: only the levels the last of them leaves
    /// are written (commands that queued up while the thread was busy do not flicker the lines).
    public func apply(_ commands: [FeedbackCommand]) {
        let now = advance()
        for command in commands { timeline.apply(command, at: now) }
        write(at: now)
    }

    /// Shows `blink` on the status LED from now.
    public func setStatus(_ blink: StatusBlink) {
        let now = advance()
        timeline.setStatus(blink, at: now)
        write(at: now)
    }

    /// Applies every change due up to now.
    public func tick() { _ = advance() }

    /// When the next change is due (nil: nothing will change by itself).
    public var nextDeadline: MonotonicInstant? {
        timeline.nextBoundary(after: cursor).map(MonotonicInstant.init(nanoseconds:))
    }

    /// True while read feedback with an end (a temporary LED state, a tone) is playing.
    public var isPlaying: Bool { timeline.isPlaying(at: cursor) }

    /// The level last written for `role`.
    public func level(_ role: GPIORole) -> Bool { levels[role] ?? false }

    /// Drives every line the player has set inactive and forgets what was playing.
    public func stopAll() {
        timeline = FeedbackTimeline(start: cursor)
        for role in GPIORole.allCases.sorted() where levels[role] == true {
            levels[role] = false
            driver.set(role, active: false)
        }
    }

    /// Walks every boundary from the cursor up to now, writing the levels at each; returns now.
    private func advance() -> UInt64 {
        let now = max(cursor, clock.now().nanoseconds)
        while let boundary = timeline.nextBoundary(after: cursor), boundary <= now {
            cursor = boundary
            write(at: boundary)
            timeline.prune(at: boundary)
        }
        cursor = now
        timeline.prune(at: now)
        return now
    }

    private func write(at t: UInt64) {
        for role in GPIORole.allCases.sorted() {
            let active = timeline.level(role, at: t)
            if (levels[role] ?? false) != active {
                levels[role] = active
                driver.set(role, active: active)
            }
        }
    }
}
