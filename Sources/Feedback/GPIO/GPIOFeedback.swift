import GPIO
import Core
import Dispatch
import Platform
import Runtime
import Settings

/// The GPIO feedback device: the reader LED (green and red lines, amber is both), the buzzer and the
/// status LED. `play` and `statusChanged` only post to a mailbox and return; the feedback thread (a
/// Worker of its own) owns the lines and the timeline player and times every change on
/// CLOCK_MONOTONIC. A new command replaces what it overrides (a grant during a deny turns red off at
/// once). When the chip or a line cannot be opened the thread logs it (rate-limited) and retries every
/// `retry-ms` while scanning goes on. `close` drives every line inactive and releases it.
public final class GPIOFeedback: FeedbackDevice, StatusObserver, LineHolder {
    public let name = "gpio"
    public let commands: GPIOFeedbackCommands
    /// Commands wait in order, at most 32: under a flood the oldest go (they would be replaced at once anyway).
    static let maximumQueued = 32
    private let logger: Logger
    private let worker: Worker<FeedbackCommand>?
    /// The newest status not yet taken up by the feedback thread.
    private let status = PosixMutex<(last: DaemonStatus?, pending: StatusBlink?)>((nil, nil))
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
        let started = DispatchSemaphore(value: 0)
        let box = self.lines
        let status = self.status
        do {
            worker = try Worker(name: "scangate-gpio", capacity: Self.maximumQueued, overflow: .dropOldest,
                                forceInactive: { box.get()?.forceInactive() }) { inbox in
                let lines = makeLines()
                box.set(lines)
                started.signal()
                Self.play(inbox, status: status, clock: clock, lines: lines)
            }
        } catch {
            logger.error("GPIO: cannot start the feedback thread: \(error); LEDs and buzzer are off")
            worker = nil
            return
        }
        if started.wait(timeout: .now() + .milliseconds(startTimeoutMs)) == .timedOut {
            logger.warning("GPIO: feedback thread did not start within \(startTimeoutMs) ms")
        }
    }

    deinit { close(deadline: .now().adding(milliseconds: 1000)) }

    public func play(_ request: FeedbackRequest) {
        worker?.post(commands.command(for: request))
    }

    public func statusChanged(_ status: DaemonStatus) {
        let blink = commands.status(status)
        let changed = self.status.withLock { s -> Bool in
            guard s.last != status else { return false }
            s.last = status
            s.pending = blink
            return true
        }
        if changed { worker?.wake() }
    }

    /// Drives every line inactive at once from the calling thread (shutdown out of time).
    public func forceInactive() {
        lines.get()?.forceInactive()
    }

    public func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        worker?.drain(deadline: deadline) ?? true
    }

    /// Stops at once, drives every line inactive, releases the lines and closes the chip, waiting for
    /// the thread until `deadline`. Idempotent; commands after close are ignored.
    public func close(deadline: MonotonicInstant) {
        guard let worker, !worker.isStopping else { return }
        if !worker.stop(deadline: deadline) {
            logger.error("GPIO: feedback thread did not stop in time; lines driven inactive from here")
        }
    }

    /// The feedback thread: applies posted commands, plays due changes, retries missing lines, and
    /// sleeps until the next change or retry is due or something is posted. Stops at once when asked.
    private static func play(_ inbox: WorkerInbox<FeedbackCommand>, status: PosixMutex<(last: DaemonStatus?, pending: StatusBlink?)>,
                             clock: FeedbackClock, lines: FeedbackLines) {
        let player = FeedbackTimelinePlayer(driver: lines, clock: clock)
        while !inbox.isStopping {
            let commands = inbox.takeAll()
            if let blink = status.withLock({ s in defer { s.pending = nil }; return s.pending }) { player.setStatus(blink) }
            if !commands.isEmpty { player.apply(commands) }
            player.tick()
            let retry = lines.service(at: clock.now())
            inbox.setBusy(player.isPlaying)
            if let deadline = [player.nextDeadline, retry].compactMap({ $0 }).min() {
                let now = clock.now()
                if deadline > now { inbox.wait(nanoseconds: deadline.nanoseconds - now.nanoseconds) }
            } else {
                inbox.wait(nanoseconds: nil)
            }
        }
        player.stopAll()
        lines.close()
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
