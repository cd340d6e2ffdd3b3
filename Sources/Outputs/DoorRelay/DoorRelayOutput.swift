import Core
import GPIO
import Platform
import Runtime
import Settings

/// Timings that are not user settings; tests and doctor shorten or lengthen them.
public struct DoorRelayRuntime: Sendable {
    /// A line that could not be requested (chip missing, line busy) is tried again this often.
    public var retryMs: Double = 5000
    /// A pulse must start within this long of the read it is for, or it is dropped: the door is never
    /// opened late (a decode queue or a relay thread held up by the machine).
    public var startWithinMs: Double = 1000

    public init() {}
}

/// The door relay as a door output: each read the policies accepted (with credential-format on: each
/// accepted pass) energises the relay for door-relay-ms; another accepted read meanwhile extends the
/// pulse from that moment. A read a policy refused is never offered to a door output, so it can never
/// pulse the relay.
///
/// `offer` only records the request and wakes the relay thread, which owns the timing: it drives the
/// line active, waits until the pulse ends (or a new request extends it) and drives it inactive.
/// The line is requested inactive at start, left inactive at close, and `forceInactive` (the daemon's
/// shutdown deadline) drives it inactive from any thread. Resources: one chip handle and one line
/// request (`RelayLine`, behind `line`), one thread.
///
/// An OSDP panel drives it too (`command`, from osdp_OUT): a permanent state (on or off) and a temporary
/// state for a time, after which the permanent state returns. The line is active while a read's pulse
/// runs or the panel's state (the temporary one while it lasts, else the permanent one) is on. With
/// door-relay-driver = panel, reads no longer pulse it (`offer` refuses them): only the panel does.
/// The panel's state starts off, and after `forceInactive` or `close` nothing drives the line again.
public final class DoorRelayOutput: DoorOutput, LineHolder, HealthReporting, PanelDrivenRelay, @unchecked Sendable {
    public let name = "door-relay"
    public let settings: DoorRelaySettings
    private let runtime: DoorRelayRuntime
    private let logger: Logger
    private let line: PosixMutex<RelayLine>
    /// The relay thread: woken for each request, it reads `state` (the latest request replaces the last).
    private let worker = PosixMutex<Worker<Never>?>(nil)

    private struct State {
        /// The latest accepted read not yet taken up by the thread (when it was offered).
        var request: MonotonicInstant?
        /// The end of the pulse in progress.
        var until: MonotonicInstant?
        /// True while the line is driven active.
        var active = false
        var lineUp = false
        var lineTitle = ""
        var lineError: String?
        var lastError: String?
        var lastErrorAt: Int64?
        var nextRetry: MonotonicInstant?
        /// Set by forceInactive: the line is never driven active again.
        var forced = false
        /// The panel's permanent state (osdp_OUT codes 1 to 4).
        var panelOn = false
        /// The panel's temporary state and when it ends (codes 5, 6).
        var panelTemporary: (on: Bool, until: MonotonicInstant)?
        var panelCommands: UInt64 = 0
        var pulses: UInt64 = 0
        var refused: UInt64 = 0
        var dropped: UInt64 = 0
    }
    private let state = PosixMutex(State())

    /// Requests the line (inactive) before it returns; when that fails the error is logged and the
    /// thread tries again every `runtime.retryMs`. Throws for settings that cannot work (no line, no
    /// chip, a pulse out of range) and when the thread cannot be started.
    public init(settings: DoorRelaySettings, logger: Logger, calls: any GpiodCalls = SystemGpiodCalls(),
                runtime: DoorRelayRuntime = DoorRelayRuntime()) throws {
        try settings.validate()
        guard let spec = settings.line, let chip = settings.chip else {
            throw UsageError("the door relay needs --\(DoorRelaySettings.Option.line) and a chip")
        }
        self.settings = settings
        self.runtime = runtime
        self.logger = logger
        self.line = PosixMutex(RelayLine(calls: calls, chip: chip, line: spec, activeLow: settings.activeLow))
        openLine(at: .now())
        do {
            let started = try Worker<Never>(name: "scangate-relay", capacity: 1, overflow: .refuse,
                                            forceInactive: { [weak self] in self?.forceInactive() }) { [self] inbox in run(inbox) }
            worker.withLock { $0 = started }
        } catch {
            line.withLock { _ = $0.close() }
            throw error
        }
    }

    // MARK: DoorOutput

    /// Records the pulse for the relay thread and returns at once. Refused (for the relay alone) when
    /// the line is not held, or when the read is already too old to open the door for.
    public func offer(_ event: ReadEvent) -> OutputOffer {
        if settings.driver == .panel {
            return .refused(reason: "\(DoorRelaySettings.Option.driver) = panel: only the panel's osdp_OUT opens the door")
        }
        guard event.verdict.isAccepted else {
            state.withLock { $0.refused += 1 }
            return .refused(reason: "the read was rejected")
        }
        let now = MonotonicInstant.now()
        let age = now.milliseconds(since: event.emittedAt)
        let closing = worker.withLock { $0?.isStopping ?? true }
        let refusal: String? = state.withLock { s in
            if closing || s.forced { s.refused += 1; return "the door relay is closing" }
            guard s.lineUp else {
                s.refused += 1
                return "door relay line not available: \(s.lineError ?? "not opened yet")"
            }
            guard age <= runtime.startWithinMs else {
                s.refused += 1
                return "the read is \(Int(age)) ms old (more than \(Int(runtime.startWithinMs)) ms): the door is not opened late"
            }
            s.request = now
            return nil
        }
        if let refusal { return .refused(reason: refusal) }
        worker.withLock { $0 }?.wake()
        return .taken
    }

    /// The panel's output command (OSDP osdp_OUT), recorded for the relay thread; returns at once.
    /// Honoured with either door-relay-driver. Refused when the line is not held or the relay is closing.
    public func command(_ command: RelayCommand) -> OutputOffer {
        let now = MonotonicInstant.now()
        let closing = worker.withLock { $0?.isStopping ?? true }
        let refusal: String? = state.withLock { s in
            if closing || s.forced { return "the door relay is closing" }
            guard s.lineUp else { return "door relay line not available: \(s.lineError ?? "not opened yet")" }
            s.panelCommands += 1
            switch command {
            case .permanent(let on, let abortTimed):
                s.panelOn = on
                if abortTimed { s.panelTemporary = nil }
            case .temporary(let on, let milliseconds):
                s.panelTemporary = (on, now.adding(milliseconds: Double(max(0, milliseconds))))
            }
            return nil
        }
        if let refusal { return .refused(reason: refusal) }
        worker.withLock { $0 }?.wake()
        return .taken
    }

    /// A pulse not tied to a read: doctor's --test-relay. Pulses whatever door-relay-driver says.
    public func pulse() -> OutputOffer {
        if settings.driver == .panel { return command(.temporary(on: true, milliseconds: settings.pulseMs)) }
        return offer(ReadEvent(seq: 0, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                        symbol: DecodedSymbol(symbology: .qr, data: [], bounds: Rect(x: 0, y: 0, w: 0, h: 0)),
                        frame: 0, dequeuedAt: .now(), emittedAt: .now()))
    }

    /// "GPIO26 of pinctrl-rp1 (gpiochip0)" while the line is held; nil otherwise.
    public var lineTitle: String? { state.withLock { $0.lineUp ? $0.lineTitle : nil } }

    /// True while the relay is energised.
    public var isActive: Bool { state.withLock { $0.active } }

    /// Waits until no pulse is running or pending (or `timeoutMs` passed); true when idle.
    @discardableResult
    public func waitUntilIdle(timeoutMs: Double) -> Bool {
        let deadline = MonotonicInstant.now().adding(milliseconds: timeoutMs)
        while true {
            let idle = state.withLock {
                $0.request == nil && $0.until == nil && !$0.active && $0.panelTemporary == nil && !$0.panelOn
            }
            if idle { return true }
            if MonotonicInstant.now() >= deadline { return false }
            sleepThread(milliseconds: 5)
        }
    }

    // MARK: Output, LineHolder

    /// Ends a pulse in progress (the door shuts now), drives the line inactive, releases it. Returns by
    /// `deadline`; if the relay thread has not finished by then, the line is driven inactive from here.
    public func close(deadline: MonotonicInstant) {
        guard let worker = worker.withLock({ $0 }), !worker.isStopping else { return }
        if !worker.stop(deadline: deadline) {
            logger.error("door relay: its thread did not finish by the close deadline; driving the line inactive from here")
        }
    }

    /// Drives the line inactive now, from any thread (the shutdown deadline), and keeps it so. The relay
    /// thread holds the line's lock for one libgpiod call at a time; this waits for it a little, never
    /// for ever.
    public func forceInactive() {
        state.withLock { $0.forced = true }
        for _ in 0..<50 {
            let done: Bool? = line.withLockIfAvailable { l in
                if l.isOpen { _ = l.set(active: false) }
                return true
            }
            if done != nil {
                state.withLock { $0.active = false }
                return
            }
            sleepThread(milliseconds: 2)
        }
    }

    public var health: ComponentHealth {
        state.withLock { s in
            let base = (settings.driver == .panel ? "driven by the panel" : "\(settings.pulseMs) ms pulse")
                + (settings.activeLow ? ", active-low" : "") + (s.panelCommands > 0 ? ", \(s.panelCommands) panel command(s)" : "")
            let detail = s.lineUp ? "\(s.lineTitle), \(base), \(s.active ? "open" : "shut")"
                                  : "line not available: \(s.lineError ?? "opening")"
            return ComponentHealth(name: name, state: s.lineUp ? .ok : .down, detail: detail, lastError: s.lastError,
                                   lastErrorAt: s.lastErrorAt, sent: s.pulses, errors: s.refused + s.dropped)
        }
    }

    // MARK: the relay thread

    private func run(_ inbox: WorkerInbox<Never>) {
        defer {
            line.withLock { l in
                if let e = l.close() { logger.warning("door relay: driving \(l.title) inactive at close failed: \(e)") }
            }
            state.withLock { s in
                s.active = false
                s.lineUp = false
                s.until = nil
                s.request = nil
                s.panelOn = false
                s.panelTemporary = nil
            }
        }
        while true {
            let now = MonotonicInstant.now()
            // What the line should do now.
            let closing = inbox.isStopping
            let (retryDue, want, startLate) = state.withLock { s -> (Bool, Bool, Double?) in
                var late: Double?
                if let r = s.request {
                    s.request = nil
                    let waited = now.milliseconds(since: r)
                    if waited > runtime.startWithinMs && !s.active {
                        s.dropped += 1
                        late = waited
                    } else {
                        let end = now.adding(milliseconds: Double(settings.pulseMs))
                        s.until = max(s.until ?? end, end)
                    }
                }
                if let until = s.until, now >= until { s.until = nil }
                if let t = s.panelTemporary, now >= t.until { s.panelTemporary = nil }
                let panel = s.panelTemporary?.on ?? s.panelOn
                let due = !s.lineUp && (s.nextRetry.map { now >= $0 } ?? false)
                return (due, (s.until != nil || panel) && !s.forced && !closing, late)
            }
            if closing { return }
            if let startLate {
                report("a pulse could not start until \(Int(startLate)) ms after its read (the machine held the relay thread up); the door was not opened late", key: "door-relay:late")
            }
            if retryDue { openLine(at: now) }
            drive(active: want)
            // Sleep until the pulse ends, the next retry, or a new request.
            let wakeAt = state.withLock { s -> MonotonicInstant? in
                [s.until, s.panelTemporary?.until, s.lineUp ? nil : s.nextRetry].compactMap { $0 }.min()
            }
            inbox.wait(until: wakeAt)
        }
    }

    /// Brings the line to `active` if it is not there; a failure closes the line (retried later).
    private func drive(active: Bool) {
        let outcome: (changed: Bool, error: String?, title: String) = line.withLock { l in
            guard l.isOpen, l.active != active else { return (false, nil, l.title) }
            if state.withLock({ $0.forced }) && active { return (false, nil, l.title) }
            switch l.set(active: active) {
            case .success: return (true, nil, l.title)
            case .failure(let e):
                let title = l.title
                _ = l.close()
                return (false, "cannot drive door relay line \(title) \(active ? "active" : "inactive"): \(e)", title)
            }
        }
        if let error = outcome.error {
            state.withLock { s in
                s.active = false
                s.until = nil
                s.lineUp = false
                s.lineError = error
                s.nextRetry = MonotonicInstant.now().adding(milliseconds: runtime.retryMs)
            }
            report(error + "; reopening every \(Int(runtime.retryMs)) ms", key: "door-relay:line")
            return
        }
        guard outcome.changed else { return }
        state.withLock { s in
            s.active = active
            if active { s.pulses += 1 }
        }
        if active {
            logger.info("door relay: \(outcome.title) energised")
        } else {
            logger.info("door relay: \(outcome.title) released (door shut)")
        }
    }

    private func openLine(at now: MonotonicInstant) {
        let result = line.withLock { l -> Result<String, GPIOError> in l.open().map { l.title } }
        switch result {
        case .success(let title):
            let wasDown = state.withLock { s -> Bool in
                defer {
                    s.lineUp = true
                    s.lineTitle = title
                    s.lineError = nil
                    s.nextRetry = nil
                }
                return s.lineError != nil
            }
            logger.info("door relay: \(title)\(settings.activeLow ? ", active-low" : ""), idle (inactive)\(wasDown ? " (available again)" : "")")
        case .failure(let error):
            state.withLock { s in
                s.lineUp = false
                s.lineError = error.message
                s.nextRetry = now.adding(milliseconds: runtime.retryMs)
            }
            report("\(error.message); the door relay is off, retrying every \(Int(runtime.retryMs)) ms", key: "door-relay:line")
        }
    }

    private func report(_ message: String, key: String) {
        state.withLock { s in
            s.lastError = message
            s.lastErrorAt = WallClock.nowNanoseconds()
        }
        logger.error("door relay: \(message)", rateLimitKey: key)
    }
}
