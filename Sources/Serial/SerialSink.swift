import Core
import Dispatch
import Platform
import Synchronization

/// Sends one frame per reported code to the door controller.
///
/// `handle` only hands the event to the sink's own serial queue. There each event is framed and written
/// non-blocking, bounded by `--serial-write-timeout-ms` and by the event's TTL: an event older than
/// `--serial-ttl-ms` when it could be sent is dropped with a log line, never sent late. When the port is
/// missing or vanishes (USB adapter unplugged: ENODEV, EIO, ENOENT) it is closed and reopened with
/// backoff; events wait meanwhile only while within their TTL. Rejected events are never sent.
public final class SerialSink: EventSink {
    public let name = "serial"
    private let worker: SerialWorker
    private let queue: DispatchQueue
    private let lifecycle = SerialLifecycle()
    private let clock: @Sendable () -> MonotonicInstant
    private let drainMilliseconds: Double

    /// nil when `--serial` is not set. Throws for an impossible combination of options. A port that
    /// cannot be opened now is logged and retried in the background: it never stops scanning.
    public static func make(settings: SerialSettings, logger: Logger) throws(UsageError) -> SerialSink? {
        guard settings.path != nil else { return nil }
        try settings.validate()
        return SerialSink(settings: settings, logger: logger)
    }

    init(settings: SerialSettings, logger: Logger, system: SerialSystemCalls = GlibcSerialSystemCalls(),
         clock: @escaping @Sendable () -> MonotonicInstant = { MonotonicInstant.now() },
         tuning: SerialSinkTuning = SerialSinkTuning()) {
        let queue = DispatchQueue(label: "scangate.serial")
        let lifecycle = self.lifecycle
        self.queue = queue
        self.clock = clock
        self.drainMilliseconds = tuning.drainMilliseconds
        self.worker = SerialWorker(settings: settings, path: settings.path ?? "", logger: logger, system: system,
                                   clock: clock, tuning: tuning, queue: queue,
                                   closingDeadline: { lifecycle.closingDeadline })
        let worker = self.worker
        queue.sync { worker.start() }
    }

    public func handle(_ event: ReadEvent) {
        guard lifecycle.closingDeadline == nil else { return }
        let worker = self.worker
        queue.async { worker.enqueue(event) }
    }

    /// Sends what is pending for at most the drain bound (1 s), drops the rest with a log line,
    /// discards unsent output and closes the port.
    public func close() {
        let deadline = clock().adding(milliseconds: drainMilliseconds)
        guard lifecycle.beginClosing(deadline: deadline) else { return }
        let done = DispatchSemaphore(value: 0)
        let worker = self.worker
        queue.async {
            worker.finish()
            done.signal()
        }
        // The queue honours the deadline itself; the margin only guards against a wedged driver call.
        _ = done.wait(timeout: .now() + .milliseconds(Int(drainMilliseconds) + 1000))
    }

    deinit { close() }
}

/// Shared between callers and the queue: the drain deadline, set once by `close()`.
final class SerialLifecycle: Sendable {
    private let deadline = Mutex<MonotonicInstant?>(nil)

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

/// Internal timing of the sink (not user settings).
struct SerialSinkTuning: Sendable {
    /// First reopen attempt after a loss; doubles up to `maximumBackoffMilliseconds`.
    var initialBackoffMilliseconds = 100
    var maximumBackoffMilliseconds = 2000
    /// How long `close()` keeps sending what is pending.
    var drainMilliseconds = 600.0
    /// Events waiting for the port beyond this count are dropped, oldest first.
    var maximumPending = 64
}

/// The sink's runtime state. Confined to the sink's serial queue: every method runs there.
final class SerialWorker: @unchecked Sendable {
    private let settings: SerialSettings
    private let path: String
    private let encoder: SerialFrameEncoder
    private let logger: Logger
    private let system: SerialSystemCalls
    private let clock: @Sendable () -> MonotonicInstant
    private let tuning: SerialSinkTuning
    private let queue: DispatchQueue
    private let closingDeadline: @Sendable () -> MonotonicInstant?

    private var port: SerialPort?
    private var pending: [ReadEvent] = []
    private var backoffMilliseconds: Int
    private var reopenScheduled = false
    private var everOpened = false
    private var outage = false
    private var finished = false

    init(settings: SerialSettings, path: String, logger: Logger, system: SerialSystemCalls,
         clock: @escaping @Sendable () -> MonotonicInstant, tuning: SerialSinkTuning, queue: DispatchQueue,
         closingDeadline: @escaping @Sendable () -> MonotonicInstant?) {
        self.settings = settings
        self.path = path
        self.encoder = SerialFrameEncoder(settings: settings)
        self.logger = logger
        self.system = system
        self.clock = clock
        self.tuning = tuning
        self.queue = queue
        self.closingDeadline = closingDeadline
        self.backoffMilliseconds = tuning.initialBackoffMilliseconds
    }

    func start() {
        if !openPort() { scheduleReopen() }
    }

    func enqueue(_ event: ReadEvent) {
        guard !finished else { return }
        if case .rejected(let reason) = event.verdict {
            logger.debug("serial: seq \(event.seq) not sent (rejected: \(reason))")
            return
        }
        pending.append(event)
        if pending.count > tuning.maximumPending {
            let dropped = pending.removeFirst()
            logger.warning("serial: seq \(dropped.seq) \(describe(dropped)) dropped: more than \(tuning.maximumPending) codes waiting for \(path)")
        }
        pump()
    }

    /// Drains within the closing deadline, then drops what is left and closes the port.
    func finish() {
        guard !finished else { return }
        if port == nil && !pending.isEmpty { _ = openPort() }
        pump()
        for event in pending {
            logger.warning("serial: seq \(event.seq) \(describe(event)) dropped at shutdown: \(path) not available")
        }
        pending.removeAll()
        port?.close()
        port = nil
        finished = true
    }

    // MARK: - Sending

    /// Sends pending events in order while the port is there.
    private func pump() {
        while let event = pending.first {
            let now = clock()
            if let reason = expiry(of: event, at: now) {
                pending.removeFirst()
                logger.warning("serial: seq \(event.seq) \(describe(event)) dropped: \(reason), never sent late")
                continue
            }
            guard let port else {
                logger.debug("serial: seq \(event.seq) waiting for \(path)")
                scheduleReopen()
                return
            }
            let frame: [UInt8]
            do {
                frame = try encoder.frame(for: event.symbol)
            } catch {
                pending.removeFirst()
                logger.warning("serial: seq \(event.seq) \(describe(event)) not sent: \(error.reason)")
                continue
            }
            let writeDeadline = now.adding(milliseconds: Double(settings.writeTimeoutMs))
            let ttlDeadline = event.emittedAt.adding(milliseconds: Double(settings.ttlMs))
            let outcome = port.write(frame, deadline: { [closingDeadline] in
                min(writeDeadline, ttlDeadline, closingDeadline() ?? writeDeadline)
            }, now: clock)
            switch outcome {
            case .sent:
                pending.removeFirst()
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
                logger.warning("serial: seq \(event.seq) \(describe(event)) abandoned: \(path) did not take the frame within \(bound) (\(written) of \(frame.count) bytes written, unsent output discarded\(hint))")
            case .lost(let e, let written) where written == frame.count:
                // Handed to the driver whole: it may have gone out. Never send a frame twice.
                pending.removeFirst()
                logger.warning("serial: \(path) lost: \(e); seq \(event.seq) \(describe(event)) was written but may not have been transmitted; reopening")
                dropPort()
                return
            case .lost(let e, _):
                logger.warning("serial: \(path) lost: \(e); reopening, seq \(event.seq) waits within its TTL")
                dropPort()
                return
            case .failed(let e, _):
                pending.removeFirst()
                logger.error("serial: write to \(path) failed: \(e); seq \(event.seq) \(describe(event)) dropped, reopening")
                dropPort()
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

    // MARK: - Port lifecycle

    /// Opens the port; logs the first failure of an outage (then rate-limited) and the return.
    private func openPort() -> Bool {
        do {
            port = try SerialPort.open(path: path, settings: settings, system: system)
        } catch {
            logger.warning("serial: \(error); retrying, codes are not sent meanwhile",
                           rateLimitKey: "serial-open:\(path)")
            outage = true
            return false
        }
        if !everOpened {
            logger.info("serial: \(settings.summary) open")
        } else if outage {
            logger.notice("serial: \(path) is back (\(settings.summary))")
        }
        everOpened = true
        outage = false
        backoffMilliseconds = tuning.initialBackoffMilliseconds
        return true
    }

    private func dropPort() {
        port?.close()
        port = nil
        outage = true
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

    // MARK: - Logs

    /// "(QR 'payload')" with the payload escaped and cut to 64 bytes.
    private func describe(_ event: ReadEvent) -> String {
        let data = event.symbol.data
        let shown = Logger.escape(bytes: Array(data.prefix(64))) + (data.count > 64 ? "... (\(data.count) bytes)" : "")
        return "(\(event.symbol.symbology.zbarName) '\(shown)')"
    }
}
