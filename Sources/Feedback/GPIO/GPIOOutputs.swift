import Core
import GPIO
import Platform
import Settings

/// The real line driver: opens `--gpio-chip` and each configured role's line, drives them, and keeps
/// scanning-friendly: a chip or line that cannot be opened (missing, busy, no permission) is logged
/// (rate-limited) and tried again every `retryMs`; a chip that vanishes is closed and reopened later.
/// Lines start inactive; a line opened late starts at the level the running pattern wants.
/// Owned by the feedback thread; the one exception is `forceInactive`, which the daemon may call from its
/// signal thread when shutdown runs out of time, so every operation holds a lock.
public final class GPIOOutputs: FeedbackLines, @unchecked Sendable {
    private let lock = PosixMutex(())
    private let settings: GPIOSettings
    private let calls: GpiodCalls
    private let logger: Logger
    private let clock: FeedbackClock
    /// The open chip and each role's request through it (every request holds the chip).
    private var chip: GPIOChip?
    private var requests: [GPIORole: LineRequest] = [:]
    /// The level each role should have (what the player last asked for).
    private var desired: [GPIORole: Bool] = [:]
    /// Roles whose last attempt failed, with the error, to log recovery.
    private var failing: [GPIORole: GPIOError] = [:]
    private var chipFailing: GPIOError?
    private var nextRetry: MonotonicInstant?
    private var closed = false

    /// Opens what it can at once (every line inactive); the rest is retried through `service(at:)`.
    public init(settings: GPIOSettings, calls: GpiodCalls, logger: Logger, clock: FeedbackClock) {
        self.settings = settings
        self.calls = calls
        self.logger = logger
        self.clock = clock
        openMissing(at: clock.now())
    }

    /// Roles whose line is requested now.
    public var openRoles: Set<GPIORole> { lock.withLock { _ in Set(requests.keys) } }

    /// The last error of each role that is not open (the chip's error for all roles when it is missing).
    public var problems: [GPIORole: GPIOError] {
        var out = failing
        if let chipFailing { for role in settings.lines.keys { out[role] = chipFailing } }
        return out
    }

    public func set(_ role: GPIORole, active: Bool) {
        lock.withLock { _ in setLocked(role, active: active) }
    }

    private func setLocked(_ role: GPIORole, active: Bool) {
        guard !closed else { return }
        desired[role] = active
        guard chip != nil else { return }
        if case .failure(let error) = setRequested(role, active: active) {
            if error.meansChipGone {
                logger.warning("GPIO: \(error); chip closed, reopening every \(seconds(settings.retryMs))",
                               rateLimitKey: "gpio:chip")
                closeSession()
                chipFailing = error
                scheduleRetry(from: clock.now())
            } else {
                logger.warning("GPIO: \(error)", rateLimitKey: "gpio:set:\(role.rawValue)")
            }
        }
    }

    public func service(at now: MonotonicInstant) -> MonotonicInstant? {
        lock.withLock { _ in
            guard !closed else { return nil }
            if let due = nextRetry, due <= now { openMissing(at: now) }
            return nextRetry
        }
    }

    public func close() {
        lock.withLock { _ in
            guard !closed else { return }
            closeSession()
            closed = true
            nextRetry = nil
        }
    }

    public func forceInactive() {
        // The owner holds the lock only for one libgpiod call at a time; wait for it a little, never for ever.
        for _ in 0..<50 {
            let done: Bool? = lock.withLockIfAvailable { _ in
                guard !closed else { return true }
                for role in requests.keys.sorted() { _ = setRequested(role, active: false) }
                return true
            }
            if done != nil { return }
            sleepThread(milliseconds: 2)
        }
    }

    /// Sets a requested role's logical level (true = active; the kernel applies active-low).
    private func setRequested(_ role: GPIORole, active: Bool) -> Result<Void, GPIOError> {
        guard let request = requests[role] else { return .success(()) }
        return request.setValue(active ? 1 : 0).mapError { e in
            GPIOError(.lineFailed, "cannot set GPIO line \(request.lineTitles[0]) on \(request.chip.title) for the \(role.title): \(e)",
                      errno: e)
        }
    }

    /// Drives every requested line inactive, releases it and closes the chip.
    private func closeSession() {
        guard let chip else { return }
        for role in requests.keys.sorted() {
            guard let request = requests[role], let e = request.release() else { continue }
            let error = GPIOError(.lineFailed, "cannot set GPIO line \(request.lineTitles[0]) on \(chip.title) for the \(role.title): \(e)",
                                  errno: e)
            logger.warning("GPIO: while driving lines inactive: \(error)", rateLimitKey: "gpio:close")
        }
        requests.removeAll()
        self.chip = nil
    }

    private func scheduleRetry(from now: MonotonicInstant) {
        nextRetry = MonotonicInstant(nanoseconds: now.nanoseconds + UInt64(max(1, settings.retryMs)) * 1_000_000)
    }

    private func seconds(_ ms: Int) -> String {
        ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }

    private func openMissing(at now: MonotonicInstant) {
        nextRetry = nil
        guard let chipText = settings.chip, settings.hasLines else { return }
        if chip == nil {
            switch GPIOChip.open(chipText, calls: calls) {
            case .success(let s):
                chip = s
                if chipFailing != nil { logger.notice("GPIO: chip \(s.title) is available again") }
                chipFailing = nil
            case .failure(let error):
                chipFailing = error
                logger.error("GPIO: \(error); scanning goes on without LEDs and buzzer, retrying every \(seconds(settings.retryMs))",
                             rateLimitKey: "gpio:chip")
                scheduleRetry(from: now)
                return
            }
        }
        guard let chip else { return }
        // Which role's line is which offset, so two roles can never share one (a name and an offset may
        // name the same line).
        var resolved: [Int: GPIORole] = [:], conflicts: [GPIORole: GPIOError] = [:]
        for (role, spec) in settings.lines.sorted(by: { $0.key < $1.key }) {
            guard case .success(let offset) = chip.offset(of: spec, flag: role.flag) else { continue }
            if let other = resolved[offset] {
                conflicts[role] = GPIOError(.lineConflict,
                    "line \(chip.lineTitle(spec)) on \(chip.title) is given for both the \(other.title) (\(other.flag)) and the \(role.title) (\(role.flag)); each role needs its own line")
            } else {
                resolved[offset] = role
            }
        }
        for (role, spec) in settings.lines.sorted(by: { $0.key < $1.key }) where requests[role] == nil {
            let activeLow = settings.activeLow.contains(role)
            let config = LineRequest.Config(purpose: role.title, lines: [.init(spec, flag: role.flag)],
                                            direction: .output(initial: [desired[role] ?? false ? 1 : 0]), activeLow: activeLow)
            switch conflicts[role].map({ .failure($0) }) ?? chip.request(config) {
            case .success(let request):
                requests[role] = request
                let verb = failing.removeValue(forKey: role) == nil ? "" : " (available again)"
                logger.info("GPIO: \(role.title) on line \(request.lineTitles[0]) of \(chip.title)\(activeLow ? ", active-low" : "")\(verb)")
            case .failure(let error):
                failing[role] = error
                logger.error("GPIO: \(error); scanning goes on without it, retrying every \(seconds(settings.retryMs))",
                             rateLimitKey: "gpio:\(role.rawValue)")
            }
        }
        if !failing.isEmpty { scheduleRetry(from: now) }
    }
}
