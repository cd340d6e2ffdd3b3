import Core
import Dispatch
import Platform
import SerialLine
import Settings

/// The serial door output: one frame per read to the door controller, and (optionally) the controller's
/// one-line reply back as grant or deny feedback.
///
/// `offer` encodes the frame once, on the decode queue: a read whose bytes the framing cannot carry
/// safely (`--serial-unsafe reject`) is refused for serial only, and the other outputs still get it.
/// Otherwise the frame goes to the output's own serial queue, where it is written non-blocking, bounded
/// by `--serial-write-timeout-ms` and by the read's TTL: a frame older than `--serial-ttl-ms` when it
/// could be sent is dropped with a log line, never sent late. When the port is missing or vanishes (USB
/// adapter unplugged: ENODEV, EIO, ENOENT) it is closed and reopened with backoff; frames wait meanwhile
/// only while within their TTL.
///
/// With `serial-reply-grant` / `serial-reply-deny` set, lines the controller sends back are read on the
/// same queue (a dispatch read source on the port): a line equal to one of them, arriving while a code
/// sent within `serial-reply-timeout-ms` is outstanding, plays grant or deny through the feedback hub.
/// Anything else (another line, a reply with no code outstanding, a line over 256 bytes) is logged and
/// ignored.
public final class SerialOutput: DoorOutput, HealthReporting {
    public let name = "serial"
    public let settings: SerialSettings
    private let worker: SerialWorker
    private let queue: DispatchQueue
    private let lifecycle = SerialLifecycle()
    private let clock: @Sendable () -> MonotonicInstant
    private let encoder: SerialFrameEncoder
    private let logger: Logger

    /// Throws for an impossible combination of options. A port that cannot be opened now is logged and
    /// retried in the background: it never stops scanning.
    public static func make(settings: SerialSettings, context: OutputContext) throws(UsageError) -> SerialOutput {
        try SerialOutput.validate(settings)
        return SerialOutput(settings: settings, logger: context.logger, feedback: context.feedback)
    }

    init(settings: SerialSettings, logger: Logger, feedback: (any FeedbackSink)? = nil,
         system: SerialSystemCalls = GlibcSerialSystemCalls(),
         clock: @escaping @Sendable () -> MonotonicInstant = { MonotonicInstant.now() },
         tuning: SerialOutputTuning = SerialOutputTuning()) {
        let queue = DispatchQueue(label: "scangate.serial")
        let lifecycle = self.lifecycle
        self.settings = settings
        self.queue = queue
        self.clock = clock
        self.logger = logger
        self.encoder = SerialFrameEncoder(settings: settings)
        self.worker = SerialWorker(settings: settings, path: settings.path ?? "", logger: logger, system: system,
                                   clock: clock, tuning: tuning, queue: queue, feedback: feedback,
                                   closingDeadline: { lifecycle.closingDeadline })
        let worker = self.worker
        queue.sync { worker.start() }
    }

    public func offer(_ event: ReadEvent) -> OutputOffer {
        guard lifecycle.closingDeadline == nil else { return .refused(reason: "serial: shutting down") }
        let frame: [UInt8]
        do {
            let symbol = DecodedSymbol(symbology: event.symbol.symbology, data: event.doorData, bounds: event.symbol.bounds)
            frame = try encoder.frame(for: symbol)
        } catch {
            return .refused(reason: "serial: \(error.reason)")
        }
        let worker = self.worker
        queue.async { worker.enqueue(event, frame: frame) }
        return .taken
    }

    public var health: ComponentHealth { worker.health.withLock { $0 } }

    /// Sends what is pending until `deadline` (and at most the drain bound, 600 ms), drops the rest with
    /// a log line, discards unsent output and closes the port.
    public func close(deadline: MonotonicInstant) {
        let drainEnd = min(deadline, clock().adding(milliseconds: worker.tuning.drainMilliseconds))
        guard lifecycle.beginClosing(deadline: drainEnd) else { return }
        let done = DispatchSemaphore(value: 0)
        let worker = self.worker
        queue.async { worker.finish { done.signal() } }
        // The queue honours the drain end itself; the wait to `deadline` only guards a wedged driver call.
        let waitMs = max(deadline.milliseconds(since: clock()), drainEnd.milliseconds(since: clock())) + 50
        if done.wait(timeout: .now() + .milliseconds(Int(max(0, waitMs)))) == .timedOut {
            logger.error("serial: \(settings.path ?? "") did not close in time (a driver call is stuck)")
        }
    }

    deinit { close(deadline: clock().adding(milliseconds: 1600)) }
}

/// Shared between callers and the queue: the drain deadline, set once by `close()`.
final class SerialLifecycle: Sendable {
    private let deadline = PosixMutex<MonotonicInstant?>(nil)

    var closingDeadline: MonotonicInstant? { deadline.withLock { $0 } }

    /// Sets the deadline; false if closing had already begun.
    func beginClosing(deadline value: MonotonicInstant) -> Bool {
        deadline.withLock { current in
            guard current == nil else { return false }
            current = value
            return true
        }
    }
}

/// Runs closures once a read source's cancel handler has closed its descriptor.
final class ClosedSignal: Sendable {
    private let state = PosixMutex<(fired: Bool, waiting: [@Sendable () -> Void])>((false, []))

    func whenFired(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.fired { return true }
            s.waiting.append(action)
            return false
        }
        if now { action() }
    }

    func fire() {
        let actions = state.withLock { s -> [@Sendable () -> Void] in
            s.fired = true
            defer { s.waiting.removeAll() }
            return s.waiting
        }
        for a in actions { a() }
    }
}

/// Internal timing of the output (not user settings).
struct SerialOutputTuning: Sendable {
    /// First reopen attempt after a loss; doubles up to `maximumBackoffMilliseconds`.
    var initialBackoffMilliseconds = 100
    var maximumBackoffMilliseconds = 2000
    /// How long `close()` keeps sending what is pending.
    var drainMilliseconds = 600.0
    /// Frames waiting for the port beyond this count are dropped, oldest first.
    var maximumPending = 64
    /// A reply line longer than this is ignored (until its end of line).
    var maximumReplyLine = 256
}

/// The output's runtime state. Confined to the output's serial queue: every method runs there.
final class SerialWorker: @unchecked Sendable {
    private struct Pending {
        let event: ReadEvent
        let frame: [UInt8]
    }

    private let settings: SerialSettings
    private let path: String
    private let logger: Logger
    private let system: SerialSystemCalls
    private let clock: @Sendable () -> MonotonicInstant
    let tuning: SerialOutputTuning
    private let queue: DispatchQueue
    private let feedback: (any FeedbackSink)?
    private let closingDeadline: @Sendable () -> MonotonicInstant?
    /// Read from any thread (status, metrics); written on the queue.
    let health: PosixMutex<ComponentHealth>

    private var port: SerialPort?
    private var replySource: (source: DispatchSourceRead, closed: ClosedSignal)?
    private var pending: [Pending] = []
    private var backoffMilliseconds: Int
    private var reopenScheduled = false
    private var everOpened = false
    private var outage = false
    private var finished = false
    // Replies: bytes of the line being received, and the code that waits for an answer.
    private var replyLine: [UInt8] = []
    private var discardingLongReply = false
    private var outstanding: (seq: UInt64, sentAt: MonotonicInstant)?

    init(settings: SerialSettings, path: String, logger: Logger, system: SerialSystemCalls,
         clock: @escaping @Sendable () -> MonotonicInstant, tuning: SerialOutputTuning, queue: DispatchQueue,
         feedback: (any FeedbackSink)?, closingDeadline: @escaping @Sendable () -> MonotonicInstant?) {
        self.settings = settings
        self.path = path
        self.logger = logger
        self.system = system
        self.clock = clock
        self.tuning = tuning
        self.queue = queue
        self.feedback = feedback
        self.closingDeadline = closingDeadline
        self.backoffMilliseconds = tuning.initialBackoffMilliseconds
        self.health = PosixMutex(ComponentHealth(name: "serial", state: .degraded, detail: "\(settings.summary) opening"))
    }

    func start() {
        if !openPort() { scheduleReopen() }
    }

    func enqueue(_ event: ReadEvent, frame: [UInt8]) {
        guard !finished else { return }
        pending.append(Pending(event: event, frame: frame))
        if pending.count > tuning.maximumPending {
            let dropped = pending.removeFirst()
            countError("seq \(dropped.event.seq) dropped: more than \(tuning.maximumPending) codes waiting for \(path)")
            logger.warning("serial: seq \(dropped.event.seq) \(describe(dropped.event)) dropped: more than \(tuning.maximumPending) codes waiting for \(path)")
        }
        pump()
    }

    /// Drains within the closing deadline, then drops what is left and closes the port; `done` runs on
    /// the queue once the descriptor is closed.
    func finish(_ done: @escaping @Sendable () -> Void) {
        guard !finished else { done(); return }
        if port == nil && !pending.isEmpty { _ = openPort() }
        pump()
        for p in pending {
            logger.warning("serial: seq \(p.event.seq) \(describe(p.event)) dropped at shutdown: \(path) not available")
        }
        pending.removeAll()
        finished = true
        closePort(then: done)
    }

    // MARK: - Sending

    /// Sends pending frames in order while the port is there.
    private func pump() {
        while let next = pending.first {
            let event = next.event
            let frame = next.frame
            let now = clock()
            if let reason = expiry(of: event, at: now) {
                pending.removeFirst()
                countError("seq \(event.seq) dropped: \(reason)")
                logger.warning("serial: seq \(event.seq) \(describe(event)) dropped: \(reason), never sent late")
                continue
            }
            guard let port else {
                logger.debug("serial: seq \(event.seq) waiting for \(path)")
                scheduleReopen()
                return
            }
            let writeDeadline = now.adding(milliseconds: Double(settings.writeTimeoutMs))
            let ttlDeadline = event.emittedAt.adding(milliseconds: Double(settings.ttlMs))
            let outcome = port.write(frame, deadline: { [closingDeadline] in
                min(writeDeadline, ttlDeadline, closingDeadline() ?? writeDeadline)
            }, now: clock)
            switch outcome {
            case .sent:
                pending.removeFirst()
                outstanding = (event.seq, clock())
                health.withLock { $0.sent += 1 }
                logger.debug("serial: seq \(event.seq) sent \(describe(event)) as \(frame.count) bytes: \(Logger.escape(bytes: frame))")
            case .timedOut(let written):
                pending.removeFirst()
                let bound: String
                if let closing = closingDeadline(), closing < min(writeDeadline, ttlDeadline) {
                    bound = "the shutdown drain time"
                } else if ttlDeadline < writeDeadline {
                    bound = "its TTL (--serial-ttl-ms \(settings.ttlMs))"
                } else {
                    bound = "--serial-write-timeout-ms \(settings.writeTimeoutMs)"
                }
                let wire = Double(frame.count * settings.format.bitsPerCharacter) * 1000 / Double(settings.baud.bitsPerSecond)
                let hint = wire >= writeDeadline.milliseconds(since: now) ? "; the frame alone takes \(Int(wire)) ms at \(settings.baud) baud" : ""
                countError("seq \(event.seq) abandoned: \(path) did not take the frame within \(bound)")
                logger.warning("serial: seq \(event.seq) \(describe(event)) abandoned: \(path) did not take the frame within \(bound) (\(written) of \(frame.count) bytes written, unsent output discarded\(hint))")
            case .lost(let e, let written) where written == frame.count:
                // Handed to the driver whole: it may have gone out. Never send a frame twice.
                pending.removeFirst()
                logger.warning("serial: \(path) lost: \(e); seq \(event.seq) \(describe(event)) was written but may not have been transmitted; reopening")
                dropPort(reason: "\(path) lost: \(e)")
                return
            case .lost(let e, _):
                logger.warning("serial: \(path) lost: \(e); reopening, seq \(event.seq) waits within its TTL")
                dropPort(reason: "\(path) lost: \(e)")
                return
            case .failed(let e, _):
                pending.removeFirst()
                countError("write to \(path) failed: \(e)")
                logger.error("serial: write to \(path) failed: \(e); seq \(event.seq) \(describe(event)) dropped, reopening")
                dropPort(reason: "write to \(path) failed: \(e)")
                return
            }
        }
    }

    /// Why `event` may no longer be sent, or nil.
    private func expiry(of event: ReadEvent, at now: MonotonicInstant) -> String? {
        let age = event.ageMilliseconds(at: now)
        if age >= Double(settings.ttlMs) {
            return "\(Int(age)) ms old (--serial-ttl-ms \(settings.ttlMs))"
        }
        if let closing = closingDeadline(), now >= closing {
            return "shutdown drain time is over"
        }
        return nil
    }

    // MARK: - Replies

    private var readsReplies: Bool { !settings.replyGrant.isEmpty || !settings.replyDeny.isEmpty }

    /// Reads what the controller sent (called by the read source when the port is readable).
    private func readReplies() {
        guard let port, !finished else { return }
        while true {
            let now = clock()
            switch port.read(maxBytes: 512, deadline: { now }, now: { now }) {
            case .bytes(let bytes):
                for b in bytes { receive(b) }
            case .timedOut:
                return
            case .lost(let e):
                logger.warning("serial: \(path) lost while reading a reply: \(e); reopening")
                dropPort(reason: "\(path) lost: \(e)")
                return
            case .failed(let e):
                logger.warning("serial: reading a reply from \(path) failed: \(e)", rateLimitKey: "serial-read:\(path)")
                return
            }
        }
    }

    private func receive(_ byte: UInt8) {
        if byte == 0x0A {
            if discardingLongReply {
                discardingLongReply = false
            } else {
                var line = replyLine
                if line.last == 0x0D { line.removeLast() }
                handleReply(line)
            }
            replyLine.removeAll(keepingCapacity: true)
            return
        }
        guard !discardingLongReply else { return }
        replyLine.append(byte)
        if replyLine.count > tuning.maximumReplyLine {
            logger.warning("serial: a reply from \(path) is longer than \(tuning.maximumReplyLine) bytes; ignored up to its end of line",
                           rateLimitKey: "serial-reply-long:\(path)")
            replyLine.removeAll(keepingCapacity: true)
            discardingLongReply = true
        }
    }

    private func handleReply(_ line: [UInt8]) {
        guard !line.isEmpty else { return }
        let shown = Logger.escape(bytes: Array(line.prefix(64))) + (line.count > 64 ? "..." : "")
        let request: FeedbackRequest
        if !settings.replyGrant.isEmpty && line == settings.replyGrant {
            request = .grant
        } else if !settings.replyDeny.isEmpty && line == settings.replyDeny {
            request = .deny
        } else {
            logger.warning("serial: reply '\(shown)' from \(path) is neither serial-reply-grant nor serial-reply-deny; ignored",
                           rateLimitKey: "serial-reply-unknown:\(path)")
            return
        }
        guard let sent = outstanding, clock().milliseconds(since: sent.sentAt) <= Double(settings.replyTimeoutMs) else {
            logger.warning("serial: reply '\(shown)' from \(path) with no code outstanding (none sent in the last \(settings.replyTimeoutMs) ms); ignored",
                           rateLimitKey: "serial-reply-late:\(path)")
            outstanding = nil
            return
        }
        outstanding = nil
        logger.info("serial: controller answered seq \(sent.seq) with \(request == .grant ? "grant" : "deny")")
        feedback?.play(request, origin: "serial")
    }

    // MARK: - Port lifecycle

    /// Opens the port; logs the first failure of an outage (then rate-limited) and the return.
    private func openPort() -> Bool {
        let opened: SerialPort
        do {
            opened = try SerialPort.open(path: path, line: SerialLineConfig(settings), system: system)
        } catch {
            logger.warning("serial: \(error); retrying, codes are not sent meanwhile",
                           rateLimitKey: "serial-open:\(path)")
            outage = true
            setHealth(.down, detail: "\(path) not open", error: "\(error)")
            return false
        }
        port = opened
        if readsReplies {
            opened.discardInput()
            let source = DispatchSource.makeReadSource(fileDescriptor: opened.descriptor, queue: queue)
            let closed = ClosedSignal()
            source.setEventHandler { [weak self] in self?.readReplies() }
            // The descriptor is closed only once the source is cancelled (libdispatch's rule).
            source.setCancelHandler {
                opened.close()
                closed.fire()
            }
            source.resume()
            replySource = (source, closed)
        }
        if !everOpened {
            logger.info("serial: \(settings.summary) open" + (readsReplies ? ", reading the controller's replies" : ""))
            if case .ioctlOnly(let reason) = opened.exclusivity {
                logger.notice("serial: no lock file for \(path) (\(reason)); the port is kept by TIOCEXCL alone")
            }
        } else if outage {
            logger.notice("serial: \(path) is back (\(settings.summary))")
        }
        everOpened = true
        outage = false
        backoffMilliseconds = tuning.initialBackoffMilliseconds
        setHealth(.ok, detail: settings.summary, error: nil)
        return true
    }

    /// Closes the port (through its read source when there is one); `then` runs once it is closed.
    private func closePort(then done: (@Sendable () -> Void)? = nil) {
        replyLine.removeAll()
        discardingLongReply = false
        if let (source, closed) = replySource {
            replySource = nil
            port = nil
            // The cancel handler closes the descriptor, then runs `done`.
            if let done { closed.whenFired(done) }
            source.cancel()
            return
        }
        port?.close()
        port = nil
        done?()
    }

    private func dropPort(reason: String) {
        closePort()
        outage = true
        setHealth(.down, detail: "\(path) lost, reopening", error: reason)
        backoffMilliseconds = tuning.initialBackoffMilliseconds
        scheduleReopen()
    }

    private func scheduleReopen() {
        guard !reopenScheduled, !finished, closingDeadline() == nil else { return }
        reopenScheduled = true
        let delay = backoffMilliseconds
        backoffMilliseconds = min(backoffMilliseconds * 2, tuning.maximumBackoffMilliseconds)
        queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in
            self?.reopenTimerFired()
        }
    }

    private func reopenTimerFired() {
        reopenScheduled = false
        guard !finished, closingDeadline() == nil else { return }
        if port == nil && !openPort() {
            // Drop what has expired while the port is away, then try again later.
            pump()
            scheduleReopen()
            return
        }
        pump()
    }

    // MARK: - Health and logs

    private func setHealth(_ state: ComponentHealth.State, detail: String, error: String?) {
        health.withLock { h in
            h.state = state
            h.detail = detail
            if let error {
                h.lastError = error
                h.lastErrorAt = WallClock.nowNanoseconds()
            }
        }
    }

    private func countError(_ error: String) {
        health.withLock { h in
            h.errors += 1
            h.lastError = error
            h.lastErrorAt = WallClock.nowNanoseconds()
        }
    }

    /// "(QR 'payload')" with the payload escaped and cut to 64 bytes.
    private func describe(_ event: ReadEvent) -> String {
        let data = event.doorData
        let shown = Logger.escape(bytes: Array(data.prefix(64))) + (data.count > 64 ? "... (\(data.count) bytes)" : "")
        return "(\(event.symbol.symbology.zbarName) '\(shown)')"
    }
}
