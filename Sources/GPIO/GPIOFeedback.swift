import Core
import Dispatch
import Platform
import Synchronization

/// The GPIO sink: LEDs and buzzer feedback for reads, and the status LED. `handle` and
/// `statusChanged` only post the pattern to play and return; a dedicated feedback thread owns the
/// lines and the pattern player and times the patterns on CLOCK_MONOTONIC. A new event preempts the
/// running pattern. When the chip or a line cannot be opened the thread logs it (rate-limited) and
/// retries every `retry-ms` while scanning goes on. `close` drives every line inactive and releases it.
public final class GPIOFeedback: EventSink {
    public let name = "gpio"
    private let patterns: FeedbackPatterns
    private let mailbox = FeedbackMailbox()
    private let logger: Logger
    private let closeTimeoutMs: Int

    /// The sink for `settings`, or nil when no `--gpio-chip` is configured (or it has no lines).
    public static func make(settings: GPIOSettings, logger: Logger) -> GPIOFeedback? {
        make(settings: settings, logger: logger, calls: SystemGpiodCalls(), clock: SystemFeedbackClock())
    }

    /// As `make(settings:logger:)`, through the given gpiod calls and clock (tests, hardware-in-the-loop).
    public static func make(settings: GPIOSettings, logger: Logger, calls: GpiodCalls,
                            clock: FeedbackClock) -> GPIOFeedback? {
        let lineFlags = GPIORole.allCases.filter { settings.lines[$0] != nil }.map(\.flag)
        guard let chip = settings.chip, !chip.isEmpty else {
            if !lineFlags.isEmpty {
                logger.error("GPIO: \(lineFlags.joined(separator: ", ")) given without --gpio-chip; LEDs and buzzer are off (name the chip by label, e.g. --gpio-chip pinctrl-rp1, by name or by path)")
            }
            return nil
        }
        guard !lineFlags.isEmpty else {
            logger.warning("GPIO: --gpio-chip \(chip) given but no line (--led-green, --led-red, --status-led, --buzzer); GPIO feedback is off")
            return nil
        }
        if settings.heartbeatMs >= settings.heartbeatPeriodMs {
            logger.warning("GPIO: --heartbeat-ms \(settings.heartbeatMs) is not shorter than --heartbeat-period-ms \(settings.heartbeatPeriodMs); the status LED stays lit while scanning")
        }
        return GPIOFeedback(patterns: FeedbackPatterns(settings: settings), clock: clock, logger: logger) {
            GPIOOutputs(settings: settings, calls: calls, logger: logger, clock: clock)
        }
    }

    /// Starts the feedback thread; `makeLines` runs on it, and the lines are open (inactive) before
    /// init returns (waiting at most `startTimeoutMs`).
    public init(patterns: FeedbackPatterns, clock: FeedbackClock, logger: Logger,
                startTimeoutMs: Int = 2000, closeTimeoutMs: Int = 1000,
                makeLines: @escaping @Sendable () -> FeedbackLines) {
        self.patterns = patterns
        self.logger = logger
        self.closeTimeoutMs = closeTimeoutMs
        let mailbox = self.mailbox
        let started = DispatchSemaphore(value: 0)
        DispatchQueue(label: "scangate.gpio-feedback", qos: .userInteractive).async {
            FeedbackMailbox.run(mailbox, clock: clock, lines: makeLines(), started: started)
        }
        if started.wait(timeout: .now() + .milliseconds(startTimeoutMs)) == .timedOut {
            logger.warning("GPIO: feedback thread did not start within \(startTimeoutMs) ms")
        }
    }

    deinit { close() }

    public func handle(_ event: ReadEvent) {
        mailbox.post(event: patterns.forEvent(verdict: event.verdict))
    }

    public func statusChanged(_ status: DaemonStatus) {
        mailbox.post(status: status, pattern: patterns.forStatus(status))
    }

    /// Lets the running read feedback finish (end of a replay, `--oneshot`); see `waitUntilIdle`.
    public func finishPending(timeoutMilliseconds: Int) {
        _ = waitUntilIdle(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Blocks until no read feedback is playing (or `timeoutMilliseconds` passed): for `--oneshot`,
    /// to let the good-read pattern finish before `close`. True when idle.
    @discardableResult
    public func waitUntilIdle(timeoutMilliseconds: Int) -> Bool {
        let done = DispatchSemaphore(value: 0)
        guard mailbox.addIdleWaiter(done) else { return true }
        return done.wait(timeout: .now() + .milliseconds(timeoutMilliseconds)) == .success
    }

    /// Stops the patterns at once, drives every line inactive, releases the lines and closes the chip
    /// (bounded by `closeTimeoutMs`). Idempotent; events after close are ignored.
    public func close() {
        guard mailbox.requestStop() else { return }
        if mailbox.finished.wait(timeout: .now() + .milliseconds(closeTimeoutMs)) == .timedOut {
            logger.error("GPIO: feedback thread did not stop within \(closeTimeoutMs) ms; lines may not be inactive")
        }
    }
}

/// What the sink posts to the feedback thread: the newest pattern per channel (older ones would be
/// preempted at the same instant anyway, so the inbox never grows), stop, and idle waiters.
final class FeedbackMailbox: Sendable {
    struct Inbox {
        var event: FeedbackPattern?
        var status: FeedbackPattern?
        var lastStatus: DaemonStatus?
        var stopping = false
        var idleWaiters: [DispatchSemaphore] = []
    }

    let inbox = Mutex(Inbox())
    let wake = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)

    func post(event pattern: FeedbackPattern) {
        let posted = inbox.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.event = pattern
            return true
        }
        if posted { wake.signal() }
    }

    func post(status: DaemonStatus, pattern: FeedbackPattern) {
        let posted = inbox.withLock { s -> Bool in
            guard !s.stopping, s.lastStatus != status else { return false }
            s.lastStatus = status
            s.status = pattern
            return true
        }
        if posted { wake.signal() }
    }

    /// False when already stopping (the thread then wakes nobody else).
    func addIdleWaiter(_ waiter: DispatchSemaphore) -> Bool {
        let added = inbox.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.idleWaiters.append(waiter)
            return true
        }
        if added { wake.signal() }
        return added
    }

    /// True for the first call only.
    func requestStop() -> Bool {
        let first = inbox.withLock { s -> Bool in
            if s.stopping { return false }
            s.stopping = true
            return true
        }
        if first { wake.signal() }
        return first
    }

    /// The feedback thread: applies posted patterns, plays due steps, retries missing lines, and sleeps
    /// until the next step or retry is due or something is posted.
    static func run(_ mailbox: FeedbackMailbox, clock: FeedbackClock, lines: FeedbackLines,
                    started: DispatchSemaphore) {
        let player = PatternPlayer(driver: lines, clock: clock)
        started.signal()
        while true {
            let (event, status, stopping) = mailbox.inbox.withLock { s in
                defer { s.event = nil; s.status = nil }
                return (s.event, s.status, s.stopping)
            }
            if stopping { break }
            if let status { player.play(status, on: .status) }
            if let event { player.play(event, on: .event) }
            player.tick()
            let retry = lines.service(at: clock.now())
            if !player.isPlaying(.event) {
                let waiters = mailbox.inbox.withLock { s -> [DispatchSemaphore] in
                    guard s.event == nil else { return [] }
                    defer { s.idleWaiters.removeAll() }
                    return s.idleWaiters
                }
                for w in waiters { w.signal() }
            }
            if let deadline = [player.nextDeadline, retry].compactMap({ $0 }).min() {
                let now = clock.now()
                if deadline > now {
                    let wait = deadline.nanoseconds - now.nanoseconds
                    _ = mailbox.wake.wait(timeout: .now() + .nanoseconds(Int(min(wait, UInt64(Int.max)))))
                }
            } else {
                mailbox.wake.wait()
            }
        }
        player.stopAll()
        lines.close()
        let waiters = mailbox.inbox.withLock { s -> [DispatchSemaphore] in
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for w in waiters { w.signal() }
        mailbox.finished.signal()
    }
}
