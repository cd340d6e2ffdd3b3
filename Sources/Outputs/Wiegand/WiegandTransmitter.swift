import Core
import Dispatch
import GPIO
import Platform
import Runtime
import Synchronization
import Settings

/// How the transmitter runs; the defaults are the daemon's, tests shorten the waits.
public struct WiegandRuntime: Sendable {
    /// SCHED_FIFO and mlockall when the service may (the daemon: yes; unit tests: no).
    public var realtime: Bool = true
    /// How often missing or busy lines (and inputs) are tried again.
    public var retryMs: Int = 5000
    /// How long `WiegandOutput.init` waits for the first attempt to open the lines.
    public var startTimeoutMs: Int = 2000
    /// Frames waiting at most; an offer beyond that is refused ("queue full").
    public var queueCapacity: Int = 4
    /// A frame that could not start within this long of its read is dropped, never sent late.
    public var staleAfterMs: Int = 2000
    /// An input level must hold this long before it counts (contact bounce).
    public var debounceMs: Int = 10
    /// A bit that would start later than this after the previous one ends the frame there (nil: SIA's
    /// longest interval, 20 ms, or the interval + 5 ms). Unit tests that are not about stalls set it
    /// long, so a loaded test machine cannot cut their frames; the stall tests inject the stall.
    public var stallLimitMs: Int?
    /// When set, every set of D0/D1 is logged here with its time (doctor --test-wiegand).
    public var setLog: WiegandSetLog?

    public init() {}
}

/// The Wiegand transmitter: one dedicated thread that owns D0/D1 and sends one frame at a time from a
/// bounded queue, so two frames never interleave. Each bit is a pulse on D0 (0) or D1 (1) of exactly
/// `pulseUs` (a spin on CLOCK_MONOTONIC), bits start `intervalUs` apart (under SCHED_FIFO a spin
/// through intervals up to 2.5 ms; otherwise a sleep through most of the interval, then a spin), frames
/// start at least `frameGapMs` after the previous one's last pulse.
///
/// A frame cut short (close reached its deadline, or a line failed) ends at a bit boundary with both
/// lines idle, and its remaining bits are dropped: never resumed, never sent again. The panel sees
/// fewer bits than the format has and rejects the frame on its bit count (and parity), and the next
/// frame starts at least a frame gap later, so the partial frame cannot run into it and read as a
/// different number.
final class WiegandTransmitter: Sendable {
    struct Pending: Sendable {
        let frame: WiegandFrame
        let queuedAt: UInt64
    }

    struct State {
        /// A frame taken from the mailbox and not yet sent or dropped (it counts against the capacity).
        var inHand = false
        var linesUp = false
        var linesTitle = ""
        var lineError: String?
        var sent: UInt64 = 0
        var dropped: UInt64 = 0
        /// Of `dropped`: frames cut because the thread was held off the CPU mid-frame.
        var stalled: UInt64 = 0
        var lastError: String?
        var lastErrorAt: Int64?
        var realtime = "not asked"
        /// Pulses certainly longer than 100 us by the transmitter's own clock (preempted while spinning); a
        /// lower bound: a stall inside the driver call is not seen here (the HIL trace sees it).
        var stretchedPulses: UInt64 = 0
    }

    private let state = PosixMutex(State())
    /// Close's deadline (CLOCK_MONOTONIC ns), read at every bit boundary without a lock; 0: none.
    private let closeDeadline = Atomic<UInt64>(0)
    /// Set by the thread once the lines are idle and released (for `forceInactive`, which waits for it a little).
    private let ended = Atomic<Bool>(false)
    private let settings: WiegandSettings
    private let runtime: WiegandRuntime
    private let logger: Logger
    /// The transmitter thread and its mailbox of frames (`queueCapacity`, refusing when full).
    private let worker: PosixMutex<Worker<Pending>?> = PosixMutex(nil)

    init(settings: WiegandSettings, calls: any GpiodCalls, logger: Logger, runtime: WiegandRuntime) throws(SystemError) {
        self.settings = settings
        self.runtime = runtime
        self.logger = logger
        let started = DispatchSemaphore(value: 0)
        // validate() ran: chip, d0 and d1 are set.
        let lines = WiegandLinePair(calls: calls, chip: settings.chip ?? "", d0: settings.d0 ?? .offset(0),
                                    d1: settings.d1 ?? .offset(1), activeHigh: settings.activeHigh, log: runtime.setLog)
        let t = try Worker<Pending>(name: "wiegand-tx", capacity: max(1, runtime.queueCapacity), overflow: .refuse) {
            [self] inbox in
            self.run(inbox, lines: lines, started: started)
        }
        worker.withLock { $0 = t }
        if started.wait(timeout: .now() + .milliseconds(runtime.startTimeoutMs)) == .timedOut {
            logger.warning("Wiegand: the transmitter did not open its lines within \(runtime.startTimeoutMs) ms; reads are refused for Wiegand until it does")
        }
    }

    var snapshot: State { state.withLock { $0 } }

    /// Queues a frame; never blocks. Refused when the lines are not held, the queue is full or closing.
    func enqueue(_ frame: WiegandFrame) -> OutputOffer {
        let now = WiegandClock.now()
        guard let worker = worker.withLock({ $0 }), !worker.isStopping, closeDeadline.load(ordering: .acquiring) == 0 else {
            return .refused(reason: "the Wiegand output is closing")
        }
        // Under the state lock, as the thread takes a frame and marks it in hand: the count is exact.
        return state.withLock { s -> OutputOffer in
            if !s.linesUp { return .refused(reason: "Wiegand lines not available: \(s.lineError ?? "not opened yet")") }
            // The frame on the wire counts: at most `queueCapacity` frames are waiting or being sent.
            if worker.waiting + (s.inHand ? 1 : 0) >= runtime.queueCapacity { return .refused(reason: queueFull) }
            switch worker.post(Pending(frame: frame, queuedAt: now)) {
            case .queued, .queuedDroppingOldest: return .taken
            case .full: return .refused(reason: queueFull)
            case .stopping: return .refused(reason: "the Wiegand output is closing")
            }
        }
    }

    private var queueFull: String { "Wiegand queue full (\(runtime.queueCapacity) frames waiting)" }

    /// Blocks until nothing is queued or being sent (or `timeoutMs` passed): for doctor and tests.
    @discardableResult
    func waitIdle(timeoutMs: Int) -> Bool {
        worker.withLock { $0 }?.drain(deadline: .now().adding(milliseconds: Double(max(0, timeoutMs)))) ?? true
    }

    /// Sends what is queued until `deadline`, then stops at the next bit boundary, leaves the lines
    /// idle and releases them. Returns by the deadline (plus a frame's last pulse) even if a driver
    /// call hangs. Idempotent.
    func close(deadline: MonotonicInstant) {
        guard let worker = worker.withLock({ $0 }), !worker.isStopping else { return }
        // Unless forceInactive came first (its deadline, 1, is the earliest there is).
        _ = closeDeadline.compareExchange(expected: 0, desired: max(1, deadline.nanoseconds), ordering: .acquiringAndReleasing)
        // A little past the deadline: the thread stops at the first bit boundary after it.
        if !worker.stop(deadline: deadline.adding(milliseconds: 50)) {
            logger.error("Wiegand: the transmitter did not stop by the close deadline; D0/D1 may not be idle")
        }
    }

    /// The stop deadline's path (from the signal thread, maybe while `close` waits): no more frames, the
    /// frame on the wire is cut at its next bit boundary (within one bit interval, the pulse itself is at
    /// most 100 us), D0/D1 are left idle and released by the transmitter thread, the only one that touches
    /// them. Waits for that at most 50 ms plus one interval.
    func forceInactive() {
        closeDeadline.store(1, ordering: .releasing)
        worker.withLock { $0 }?.wake()
        let until = WiegandClock.now() + 50_000_000 + UInt64(settings.intervalUs) * 1000
        while !ended.load(ordering: .acquiring) && WiegandClock.now() < until { sleepThread(milliseconds: 1) }
        if !ended.load(ordering: .acquiring) {
            logger.error("Wiegand: the transmitter did not stop within 50 ms of the stop deadline; D0/D1 may not be idle")
        }
    }

    // MARK: the transmitter thread

    private func run(_ inbox: WorkerInbox<Pending>, lines: WiegandLinePair, started: DispatchSemaphore) {
        let spinThrough = runtime.realtime && setUpRealtime()
        var nextRetry: UInt64 = 0
        var lastFrameEnd: UInt64?
        var startedSignalled = false
        let retryNs = UInt64(max(1, runtime.retryMs)) * 1_000_000
        var held: Pending?

        while true {
            let now = WiegandClock.now()
            let deadline = closeDeadline.load(ordering: .acquiring)
            if !lines.isOpen && deadline == 0 && now >= nextRetry {
                openLines(lines)
                if !lines.isOpen { nextRetry = now + retryNs }
            }
            if !startedSignalled {
                startedSignalled = true
                started.signal()
            }
            if held == nil {
                held = state.withLock { s -> Pending? in
                    let next = inbox.take()
                    s.inHand = next != nil
                    return next
                }
            }
            inbox.setBusy(held != nil)
            guard let head = held else {
                if deadline != 0 || inbox.isStopping { break }
                inbox.wait(nanoseconds: lines.isOpen ? nil : nextRetry - min(nextRetry, now))
                continue
            }
            // Stale, or lines gone since it was taken: dropped, never sent late.
            if now > head.queuedAt + UInt64(runtime.staleAfterMs) * 1_000_000 || !lines.isOpen {
                let why = lines.isOpen ? "it waited more than \(runtime.staleAfterMs) ms" : "the lines are not available"
                drop(head, "not sent: \(why)")
                held = nil
                continue
            }
            // The frame gap since the last frame (or partial frame).
            if let end = lastFrameEnd {
                let earliest = end + UInt64(settings.frameGapMs) * 1_000_000
                if now < earliest {
                    if deadline != 0 && deadline < earliest {
                        drop(head, "not sent: the output closed first")
                        held = nil
                        continue
                    }
                    // On the mailbox's wake, so a close during a long gap is seen at once; a gap may run long, never short.
                    inbox.wait(nanoseconds: earliest - now)
                    continue
                }
            }
            if deadline != 0 {
                let duration = UInt64(head.frame.bits.count) * UInt64(settings.intervalUs) * 1000
                if now + duration > deadline {
                    drop(head, "not sent: the output closed before it could finish")
                    held = nil
                    continue
                }
            }
            let outcome = send(head.frame.bits, on: lines, spinThrough: spinThrough)
            lastFrameEnd = WiegandClock.now()
            finish(head, outcome: outcome, lines: lines)
            held = nil
            if case .lineFailed = outcome, !lines.isOpen { nextRetry = WiegandClock.now() + retryNs }
        }
        if let e = lines.close() {
            logger.warning("Wiegand: while leaving \(lines.title) idle: \(e)")
        }
        // The totals, once: the per-frame lines are rate-limited, so a burst of stalls shows here in full.
        let totals = state.withLock { s in (s.sent, s.dropped, s.stalled, s.stretchedPulses) }
        if totals.0 + totals.1 > 0 {
            logger.log(totals.1 > 0 ? .warning : .info,
                       "Wiegand: \(totals.0) frame\(totals.0 == 1 ? "" : "s") sent, \(totals.1) not sent or cut (\(totals.2) cut by a stall), \(totals.3) pulse\(totals.3 == 1 ? "" : "s") stretched past 100 us")
        }
        let left = UInt64(inbox.takeAll().count)
        state.withLock { s in
            s.linesUp = false
            s.inHand = false
            s.dropped += left
        }
        ended.store(true, ordering: .releasing)
    }

    enum Outcome {
        case sent
        /// Stopped after `bits` bits at a bit boundary (close deadline).
        case cut(bits: Int)
        /// A line could not be set after `bits` bits.
        case lineFailed(bits: Int, Errno)
        /// The thread was held off the CPU for longer than the longest interval a panel must accept
        /// (20 ms, or the interval + 5 ms) after `bits` bits: the panel has ended the frame there, so the
        /// rest is not sent (it would reach the panel as a second, shorter frame).
        case stalled(bits: Int, ms: Double)
    }

    /// A bit that would start later than this after the previous one is past SIA's longest interval
    /// (20 ms), or 5 ms past a configured interval that is already near it.
    static func stallLimitNanoseconds(intervalUs: Int) -> UInt64 { max(20_000_000, UInt64(intervalUs) * 1000 + 5_000_000) }
    static let longestPulseNanoseconds: UInt64 = 100_000
    /// Under SCHED_FIFO, intervals up to this are spun through rather than slept: a frame at the usual
    /// 1-2 ms intervals holds one core for 26-160 ms once per read, and every bit then starts on time.
    /// A sleep's wake-up came late on a loaded machine (on the HIL rig with the host busy: interval p50
    /// 2,140 us for 2,000, and 4,831 us under load, against 1,996 us for a sender that spins). Longer
    /// intervals sleep to 200 us before the bit, so a long frame does not hold a core (and a stop) for
    /// most of a second. Without real-time scheduling the thread sleeps between bits: a spinning
    /// normal thread uses up its time slice and is preempted for whole milliseconds on a busy machine.
    static let spinThroughIntervalNanoseconds: UInt64 = 2_500_000
    static let shortestPulseNanoseconds: UInt64 = 20_000

    /// One frame, bit 1 first. Only this thread touches the lines, and it sends nothing else meanwhile.
    /// A pulse is timed from just before the call that starts it to the call that ends it, so the two
    /// calls' latencies cancel out (measured on gpio-sim: p50 44 us for 50 us, where timing from after
    /// the first call gave 60 us).
    /// `spinThrough`: the thread runs under SCHED_FIFO (see `spinThroughIntervalNanoseconds`).
    private func send(_ bits: WiegandBits, on lines: WiegandLinePair, spinThrough: Bool) -> Outcome {
        let pulse = UInt64(settings.pulseUs) * 1000
        let interval = UInt64(settings.intervalUs) * 1000
        var previousStart: UInt64 = 0
        var nextStart = WiegandClock.now()
        var stretched = 0
        let stallLimit = runtime.stallLimitMs.map { UInt64(max(1, $0)) * 1_000_000 }
            ?? Self.stallLimitNanoseconds(intervalUs: settings.intervalUs)
        defer { if stretched > 0 { state.withLock { $0.stretchedPulses += UInt64(stretched) } } }
        for position in 1...bits.count {
            if position > 1 {
                // A bit boundary: both lines idle. Stop here if close's deadline has come.
                let deadline = closeDeadline.load(ordering: .relaxed)
                if deadline != 0 && WiegandClock.now() >= deadline { return .cut(bits: position - 1) }
                if spinThrough && interval <= Self.spinThroughIntervalNanoseconds {
                    WiegandClock.spin(until: nextStart)
                } else {
                    WiegandClock.wait(until: nextStart)
                }
            }
            let one = bits.bit(position)
            let start = WiegandClock.now()
            if position > 1 && start - previousStart > stallLimit {
                return .stalled(bits: position - 1, ms: Double(start - previousStart) / 1e6)
            }
            if case .failure(let e) = lines.set(d0Pulse: !one, d1Pulse: one) {
                _ = lines.idle()
                return .lineFailed(bits: position - 1, e)
            }
            // The edge happened between `start` and now; end the pulse `pulse` after `start`, but never
            // sooner than 20 us (SIA's shortest pulse) after the call returned, so a slow first call can
            // stretch a pulse but never shorten it below what a panel must see.
            let started = WiegandClock.now()
            WiegandClock.spin(until: max(start + pulse, started + Self.shortestPulseNanoseconds))
            let ending = WiegandClock.now()
            if case .failure(let e) = lines.idle() {
                _ = lines.idle()
                return .lineFailed(bits: position - 1, e)
            }
            // The pulse lasted at least from the first call's return to the second call: counted when
            // that alone is past 100 us (certainly stretched, e.g. preempted in the spin).
            if ending - started > Self.longestPulseNanoseconds { stretched += 1 }
            previousStart = start
            nextStart = start + interval
        }
        return .sent
    }

    private func finish(_ item: Pending, outcome: Outcome, lines: WiegandLinePair) {
        switch outcome {
        case .sent:
            state.withLock { $0.sent += 1 }
            logger.debug("Wiegand: sent \(item.frame.summary)")
        case .cut(let n):
            record(item, "cut after \(n) of \(item.frame.bits.count) bits at close; the rest is dropped, never resumed",
                   level: .warning)
        case .stalled(let n, let ms):
            state.withLock { $0.stalled += 1 }
            record(item, "the transmitter was held off the CPU for \(Int(ms.rounded())) ms after \(n) of \(item.frame.bits.count) bits (longer than a panel waits between bits); the rest is not sent. Grant real-time scheduling (LimitRTPRIO) if this recurs",
                   level: .error)
        case .lineFailed(let n, let e):
            let message = "a line failed after \(n) of \(item.frame.bits.count) bits: \(e); the frame is dropped, never resumed"
            record(item, message, level: .error)
            if e.meansDeviceGone {
                lines.close()
                state.withLock { s in
                    s.linesUp = false
                    s.lineError = "\(lines.title.isEmpty ? "the lines" : lines.title) failed: \(e)"
                }
                logger.error("Wiegand: lost the lines (\(e)); retrying every \(runtime.retryMs) ms", rateLimitKey: "wiegand:lines")
            }
        }
    }

    private func drop(_ item: Pending, _ why: String) {
        record(item, why, level: .warning)
    }

    private func record(_ item: Pending, _ why: String, level: LogLevel) {
        let message = "Wiegand: \(item.frame.summary): \(why)"
        state.withLock { s in
            s.dropped += 1
            s.lastError = message
            s.lastErrorAt = WallClock.nowNanoseconds()
        }
        logger.log(level, message, rateLimitKey: "wiegand:drop")
    }

    private func openLines(_ lines: WiegandLinePair) {
        switch lines.open() {
        case .success:
            let recovered = state.withLock { s -> Bool in
                defer {
                    s.linesUp = true
                    s.linesTitle = lines.title
                    s.lineError = nil
                }
                return s.lineError != nil
            }
            logger.info("Wiegand: \(lines.title), \(settings.format), idle \(lines.activeLow ? "high, pulses low" : "low, pulses high (wiegand-active-high)")\(recovered ? " (available again)" : "")")
        case .failure(let error):
            state.withLock { s in
                s.linesUp = false
                s.lineError = error.message
                s.lastError = error.message
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
            logger.error("Wiegand: \(error.message); reads are refused for Wiegand until then, retrying every \(runtime.retryMs) ms",
                         rateLimitKey: "wiegand:lines")
        }
    }

    /// SCHED_FIFO and locked memory, said once either way.
    /// True when the thread runs under SCHED_FIFO.
    private func setUpRealtime() -> Bool {
        var promoted = false
        var parts: [String] = []
        var missing: [String] = []
        switch WiegandRealtime.promoteCurrentThread() {
        case .success(let p):
            parts.append("SCHED_FIFO priority \(p)")
            promoted = true
        case .failure(let e):
            missing.append("no real-time scheduling (\(e); the unit needs LimitRTPRIO=\(WiegandRealtime.priority), RestrictRealtime=no)")
        }
        switch WiegandRealtime.lockMemory() {
        case .success(let what): parts.append("memory locked (\(what))")
        case .failure(let e): missing.append("memory not locked (\(e); the unit needs LimitMEMLOCK=infinity)")
        }
        let kept = WiegandRealtime.keepFreedMemory()
        if kept.count == 2 {
            parts.append("freed memory kept (\(kept.joined(separator: ", ")))")
        } else {
            missing.append("freed memory not kept (glibc refused mallopt\(kept.isEmpty ? "" : "; only " + kept.joined()))")
        }
        let summary = (parts + missing).joined(separator: ", ")
        state.withLock { $0.realtime = summary }
        if missing.isEmpty {
            logger.info("Wiegand: transmitter runs with \(summary)")
        } else {
            logger.warning("Wiegand: transmitter runs with \(summary); pulses may stretch past 100 us under load")
        }
        return promoted
    }
}
