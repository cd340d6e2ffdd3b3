import GPIO
import Core
import Dispatch
import Platform
import Synchronization
import Settings

/// The GPIO feedback device: the reader LED (green and red lines, amber is both), the buzzer and the
/// status LED. `play` and `statusChanged` only post to a mailbox and return; the feedback thread (a
/// PosixThread of its own) owns the lines and the timeline player and times every change on
/// CLOCK_MONOTONIC. A new command replaces what it overrides (a grant during a deny turns red off at
/// once). When the chip or a line cannot be opened the thread logs it (rate-limited) and retries every
/// `retry-ms` while scanning goes on. `close` drives every line inactive and releases it.
public final class GPIOFeedback: FeedbackDevice, StatusObserver, LineHolder {
    public let name = "gpio"
    public let commands: GPIOFeedbackCommands
    private let mailbox = FeedbackMailbox()
    private let logger: Logger
    private let thread: PosixThread?
    /// The lines, once the feedback thread has opened them: for `forceInactive` only.
    private let lines = SharedLines()

    /// The device for `settings`, or nil when no `--gpio-chip` is configured (or it has no lines).
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
        return GPIOFeedback(commands: GPIOFeedbackCommands(settings: settings), clock: clock, logger: logger) {
            GPIOOutputs(settings: settings, calls: calls, logger: logger, clock: clock)
        }
    }

    /// Starts the feedback thread; `makeLines` runs on it, and the lines are open (inactive) before
    /// init returns (waiting at most `startTimeoutMs`).
    public init(commands: GPIOFeedbackCommands, clock: FeedbackClock, logger: Logger, startTimeoutMs: Int = 2000,
                makeLines: @escaping @Sendable () -> FeedbackLines) {
        self.commands = commands
        self.logger = logger
        let mailbox = self.mailbox
        let started = DispatchSemaphore(value: 0)
        let box = self.lines
        do {
            thread = try PosixThread(name: "scangate-gpio") {
                let lines = makeLines()
                box.set(lines)
                FeedbackMailbox.run(mailbox, clock: clock, lines: lines, started: started)
            }
        } catch {
            logger.error("GPIO: cannot start the feedback thread: \(error); LEDs and buzzer are off")
            thread = nil
            mailbox.markFinished()
            return
        }
        if started.wait(timeout: .now() + .milliseconds(startTimeoutMs)) == .timedOut {
            logger.warning("GPIO: feedback thread did not start within \(startTimeoutMs) ms")
        }
    }

    deinit { close(deadline: .now().adding(milliseconds: 1000)) }

    public func play(_ request: FeedbackRequest) {
        mailbox.post(command: commands.command(for: request))
    }

    public func statusChanged(_ status: DaemonStatus) {
        mailbox.post(status: status, blink: commands.status(status))
    }

    /// Drives every line inactive at once from the calling thread (shutdown out of time).
    public func forceInactive() {
        lines.get()?.forceInactive()
    }

    public func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        let done = DispatchSemaphore(value: 0)
        guard mailbox.addIdleWaiter(done) else { return true }
        let ms = max(0, deadline.milliseconds(since: .now()))
        return done.wait(timeout: .now() + .milliseconds(Int(ms.rounded(.up)))) == .success
    }

    /// Stops at once, drives every line inactive, releases the lines and closes the chip, waiting for
    /// the thread until `deadline`. Idempotent; commands after close are ignored.
    public func close(deadline: MonotonicInstant) {
        guard mailbox.requestStop() else { return }
        let ms = max(0, deadline.milliseconds(since: .now()))
        if mailbox.finished.wait(timeout: .now() + .milliseconds(Int(ms.rounded(.up)))) == .timedOut {
            logger.error("GPIO: feedback thread did not stop in time; lines may not be inactive")
            return
        }
        thread?.join()
    }
}

/// The feedback thread's lines, reachable from the thread that ends the process when shutdown runs out of
/// time (`FeedbackLines.forceInactive` is the one call made from there; the implementation locks).
final class SharedLines: @unchecked Sendable {
    private let lock = PosixMutex(())
    private var lines: FeedbackLines?

    func set(_ value: FeedbackLines) { lock.withLock { _ in lines = value } }
    func get() -> FeedbackLines? { lock.withLock { _ in lines } }
}

/// What the device posts to the feedback thread: commands in order (bounded: under a flood the oldest
/// go, they would be replaced at once anyway), the newest status, stop, and idle waiters.
final class FeedbackMailbox: Sendable {
    struct Inbox {
        var commands: [FeedbackCommand] = []
        var status: StatusBlink?
        var lastStatus: DaemonStatus?
        var stopping = false
        var idleWaiters: [DispatchSemaphore] = []
    }

    static let maximumQueued = 32
    let inbox = PosixMutex(Inbox())
    let wake = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    private let finishedOnce = Atomic<Bool>(false)

    func post(command: FeedbackCommand) {
        let posted = inbox.withLock { s -> Bool in
            guard !s.stopping else { return false }
            if s.commands.count >= Self.maximumQueued { s.commands.removeFirst() }
            s.commands.append(command)
            return true
        }
        if posted { wake.signal() }
    }

    func post(status: DaemonStatus, blink: StatusBlink) {
        let posted = inbox.withLock { s -> Bool in
            guard !s.stopping, s.lastStatus != status else { return false }
            s.lastStatus = status
            s.status = blink
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

    func markFinished() {
        if !finishedOnce.exchange(true, ordering: .acquiringAndReleasing) { finished.signal() }
    }

    /// The feedback thread: applies posted commands, plays due changes, retries missing lines, and
    /// sleeps until the next change or retry is due or something is posted.
    static func run(_ mailbox: FeedbackMailbox, clock: FeedbackClock, lines: FeedbackLines,
                    started: DispatchSemaphore) {
        let player = FeedbackTimelinePlayer(driver: lines, clock: clock)
        started.signal()
        while true {
            let (commands, status, stopping) = mailbox.inbox.withLock { s in
                defer { s.commands.removeAll(); s.status = nil }
                return (s.commands, s.status, s.stopping)
            }
            if stopping { break }
            if let status { player.setStatus(status) }
            if !commands.isEmpty { player.apply(commands) }
            player.tick()
            let retry = lines.service(at: clock.now())
            if !player.isPlaying {
                let waiters = mailbox.inbox.withLock { s -> [DispatchSemaphore] in
                    guard s.commands.isEmpty else { return [] }
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
        mailbox.markFinished()
    }
}
