#if canImport(Glibc)
import Glibc
#endif
import Core
import Platform
import Runtime
import SerialLine
import Settings

/// The serial door output: one frame per read to the door controller, and (optionally) the controller's
/// one-line reply back as grant or deny feedback.
///
/// `offer` encodes the frame once, on the decode queue: a read whose bytes the framing cannot carry
/// safely (`--serial-unsafe reject`) is refused for serial only, and the other outputs still get it.
/// Otherwise the frame goes to the output's own worker thread, where it is written non-blocking, bounded
/// by `--serial-write-timeout-ms` and by the read's TTL: a frame older than `--serial-ttl-ms` when it
/// could be sent is dropped with a log line, never sent late. When the port is missing or vanishes (USB
/// adapter unplugged: ENODEV, EIO, ENOENT) it is closed and reopened with backoff; frames wait meanwhile
/// only while within their TTL.
///
/// With `serial-reply-grant` / `serial-reply-deny` set, lines the controller sends back are read on the
/// same thread (it polls the port with its wake-up): a line equal to one of them, arriving while a code
/// sent within `serial-reply-timeout-ms` is outstanding, plays grant or deny through the feedback hub.
/// Anything else (another line, a reply with no code outstanding, a line over 256 bytes) is logged and
/// ignored.
public final class SerialOutput: DoorOutput, HealthReporting {
    public let name = "serial"
    public let settings: SerialSettings
    private let link: SerialWorker
    /// Nil only when its thread could not be started (logged; the output refuses every code).
    private let worker: Worker<SerialWorker.Pending>?
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
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.encoder = SerialFrameEncoder(settings: settings)
        let link = SerialWorker(settings: settings, path: settings.path ?? "", logger: logger, system: system,
                                clock: clock, tuning: tuning, feedback: feedback)
        self.link = link
        // The first open happens here, before the thread starts (the thread owns the port from then on).
        link.start()
        do throws(SystemError) {
            // Its own log line names a thread that misses the close deadline: no logger for the worker.
            worker = try Worker(name: "scangate-serial", capacity: Self.mailboxCapacity, overflow: .dropOldest,
                                pollable: true) { inbox in link.run(inbox) }
        } catch {
            logger.error("serial: cannot start the serial thread: \(error); codes are not sent")
            link.abandon(reason: "\(error)")
            worker = nil
        }
    }

    /// Codes handed over but not yet taken by the thread (it keeps at most `maximumPending` itself).
    static let mailboxCapacity = 1024

    public func offer(_ event: ReadEvent) -> OutputOffer {
        guard let worker else { return .refused(reason: "serial: its thread could not be started") }
        guard !worker.isStopping else { return .refused(reason: "serial: shutting down") }
        let frame: [UInt8]
        do {
            let symbol = DecodedSymbol(symbology: event.symbol.symbology, data: event.doorData, bounds: event.symbol.bounds)
            frame = try encoder.frame(for: symbol)
        } catch {
            return .refused(reason: "serial: \(error.reason)")
        }
        switch worker.post(SerialWorker.Pending(event: event, frame: frame)) {
        case .queued:
            return .taken
        case .queuedDroppingOldest:
            logger.warning("serial: a code was dropped: more than \(Self.mailboxCapacity) codes waiting for the serial thread")
            return .taken
        case .full, .stopping:
            return .refused(reason: "serial: shutting down")
        }
    }

    public var health: ComponentHealth { link.health.withLock { $0 } }

    /// Sends what is pending until `deadline` (and at most the drain bound, 600 ms), drops the rest with
    /// a log line, discards unsent output and closes the port.
    public func close(deadline: MonotonicInstant) {
        guard let worker, !worker.isStopping else { return }
        let drainEnd = min(deadline, clock().adding(milliseconds: link.tuning.drainMilliseconds))
        // The thread honours the drain end itself; the wait to `deadline` only guards a wedged driver call.
        // The worker counts in real time, the output in `clock`'s.
        let drainMs = max(0, drainEnd.milliseconds(since: clock()))
        let waitMs = max(deadline.milliseconds(since: clock()), drainMs) + 50
        let now = MonotonicInstant.now()
        if !worker.stop(deadline: now.adding(milliseconds: drainMs), waitingUntil: now.adding(milliseconds: waitMs)) {
            logger.error("serial: \(settings.path ?? "") did not close in time (a driver call is stuck)")
        }
    }

    deinit { close(deadline: clock().adding(milliseconds: 1600)) }
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

/// The output's runtime state and the body of its worker thread. `start` runs in the output's init,
/// before the thread starts; every other method runs on the thread (`health` excepted).
final class SerialWorker: @unchecked Sendable {
    struct Pending: Sendable {
        let event: ReadEvent
        let frame: [UInt8]
    }

    private let settings: SerialSettings
    private let path: String
    private let logger: Logger
    private let system: SerialSystemCalls
    private let clock: @Sendable () -> MonotonicInstant
    let tuning: SerialOutputTuning
    private let feedback: (any FeedbackSink)?
    /// Read from any thread (status, metrics); written on the thread.
    let health: PosixMutex<ComponentHealth>

    private var port: SerialPort?
    private var pending: [Pending] = []
    private var backoffMilliseconds: Int
    /// When the next reopen is due (real time; nil: none scheduled).
    private var reopenAt: MonotonicInstant?
    private var inbox: WorkerInbox<Pending>?
    /// The drain end in `clock`'s time, once the worker is stopping.
    private var closing: MonotonicInstant?
    private var everOpened = false
    private var outage = false
    private var finished = false
    // Replies: bytes of the line being received, and the code that waits for an answer.
    private var replyLine: [UInt8] = []
    private var discardingLongReply = false
    private var outstanding: (seq: UInt64, sentAt: MonotonicInstant)?

    init(settings: SerialSettings, path: String, logger: Logger, system: SerialSystemCalls,
         clock: @escaping @Sendable () -> MonotonicInstant, tuning: SerialOutputTuning,
         feedback: (any FeedbackSink)?) {
        self.settings = settings
        self.path = path
        self.logger = logger
        self.system = system
        self.clock = clock
        self.tuning = tuning
        self.feedback = feedback
        self.backoffMilliseconds = tuning.initialBackoffMilliseconds
        self.health = PosixMutex(ComponentHealth(name: "serial", state: .degraded, detail: "\(settings.summary) opening"))
    }

    func start() {
        if !openPort() { scheduleReopen() }
    }

    /// The thread: takes the codes handed over, sends them, reads the controller's replies and reopens
    /// a lost port; once stopping, drains within the drain deadline and closes the port.
    func run(_ inbox: WorkerInbox<Pending>) {
        self.inbox = inbox
        while !inbox.isStopping {
            for p in inbox.takeAll() { enqueue(p.event, frame: p.frame) }
            if let at = reopenAt, MonotonicInstant.now() >= at { reopenTimerFired() }
            guard !inbox.isStopping else { break }
            waitForWork(inbox)
        }
        for p in inbox.takeAll() { enqueue(p.event, frame: p.frame) }
        finish()
    }

    /// The thread could not be started: nothing will be sent.
    func abandon(reason: String) {
        finished = true
        pending.removeAll()
        closePort()
        setHealth(.down, detail: "\(path) not served", error: reason)
    }

    /// Waits for a code, a stop, the next reopen, or (when replies are read) the controller's bytes.
    private func waitForWork(_ inbox: WorkerInbox<Pending>) {
        guard let port, readsReplies else {
            inbox.wait(until: reopenAt)
            return
        }
        do throws(SystemError) {
            let seen = try inbox.poll([PollRequest(fd: port.descriptor, events: Int16(POLLIN))], until: reopenAt)
            if let revents = seen.revents.first, revents != 0 { readReplies(revents: revents) }
        } catch {
            logger.warning("serial: waiting for a reply from \(path) failed: \(error)", rateLimitKey: "serial-poll:\(path)")
            inbox.wait(until: MonotonicInstant.now().adding(milliseconds: 50))
        }
    }

    /// The drain end in `clock`'s time once the worker is stopping (its stop deadline counts in real time).
    private func closingDeadline() -> MonotonicInstant? {
        if let closing { return closing }
        guard let stop = inbox?.stopDeadline else { return nil }
        let deadline = clock().adding(milliseconds: max(0, stop.milliseconds(since: .now())))
        closing = deadline
        return deadline
    }

    private func enqueue(_ event: ReadEvent, frame: [UInt8]) {
        guard !finished else { return }
        pending.append(Pending(event: event, frame: frame))
        if pending.count > tuning.maximumPending {
            let dropped = pending.removeFirst()
            countError("seq \(dropped.event.seq) dropped: more than \(tuning.maximumPending) codes waiting for \(path)")
            logger.warning("serial: seq \(dropped.event.seq) \(describe(dropped.event)) dropped: more than \(tuning.maximumPending) codes waiting for \(path)")
        }
        pump()
    }

    /// Drains within the closing deadline, then drops what is left and closes the port.
    private func finish() {
        guard !finished else { return }
        if port == nil && !pending.isEmpty { _ = openPort() }
        pump()
        for p in pending {
            logger.warning("serial: seq \(p.event.seq) \(describe(p.event)) dropped at shutdown: \(path) not available")
        }
        pending.removeAll()
        finished = true
        closePort()
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
            let outcome = port.write(frame, deadline: {
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

    /// Reads what the controller sent (when poll says the port is readable). A port that polls hung up
    /// or in error with nothing to read is lost (it would poll so again at once).
    private func readReplies(revents: Int16) {
        guard let port, !finished else { return }
        var received = false
        while true {
            let now = clock()
            switch port.read(maxBytes: 512, deadline: { now }, now: { now }) {
            case .bytes(let bytes):
                received = received || !bytes.isEmpty
                for b in bytes { receive(b) }
            case .timedOut:
                if !received && revents & Int16(POLLIN) == 0 && revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                    logger.warning("serial: \(path) lost while reading a reply: hung up; reopening")
                    dropPort(reason: "\(path) lost: hung up")
                }
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
        if readsReplies { opened.discardInput() }
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

    private func closePort() {
        replyLine.removeAll()
        discardingLongReply = false
        port?.close()
        port = nil
    }

    private func dropPort(reason: String) {
        closePort()
        outage = true
        setHealth(.down, detail: "\(path) lost, reopening", error: reason)
        backoffMilliseconds = tuning.initialBackoffMilliseconds
        scheduleReopen()
    }

    private func scheduleReopen() {
        guard reopenAt == nil, !finished, closingDeadline() == nil else { return }
        let delay = backoffMilliseconds
        backoffMilliseconds = min(backoffMilliseconds * 2, tuning.maximumBackoffMilliseconds)
        reopenAt = MonotonicInstant.now().adding(milliseconds: Double(delay))
    }

    private func reopenTimerFired() {
        reopenAt = nil
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
