import Core
import Dispatch
import Platform
import Synchronization

/// What an MQTT output needs besides its settings.
public struct MQTTOutputDependencies: Sendable {
    /// The process's libmosquitto set-up (one per daemon).
    public var library: MosquittoLibrary
    /// The stdout JSON line of a read (the daemon passes `EventLine.json`); the event on MQTT is this
    /// object with `"id"` and `"kiosk"` put first.
    public var eventLine: @Sendable (ReadEvent) -> String
    /// The daemon's state for `<prefix>/state`; called on the session thread, must not block.
    public var state: @Sendable () -> FleetState
    /// pause, resume, reload; nil: those commands are refused ("not available").
    public var commands: MQTTCommandHandler?
    /// Where `feedback` and `beep` commands go; nil: refused.
    public var feedback: FeedbackSink?
    /// Told when the broker connection comes and goes.
    public var link: ControllerLinkObserver?
    public var logger: Logger
    /// Told (on the session thread) each time the broker acknowledged events, with how many: for the bench.
    public var onAcknowledged: (@Sendable (Int) -> Void)?

    public init(library: MosquittoLibrary, eventLine: @escaping @Sendable (ReadEvent) -> String,
                state: @escaping @Sendable () -> FleetState, commands: MQTTCommandHandler? = nil,
                feedback: FeedbackSink? = nil, link: ControllerLinkObserver? = nil, logger: Logger,
                onAcknowledged: (@Sendable (Int) -> Void)? = nil) {
        self.library = library
        self.eventLine = eventLine
        self.state = state
        self.commands = commands
        self.feedback = feedback
        self.link = link
        self.logger = logger
        self.onAcknowledged = onAcknowledged
    }
}

/// The fleet output: every read as a QoS 1 message on `<prefix>/event`, nothing lost while the broker
/// is away, plus the retained status and state, commands and Home Assistant discovery.
///
/// Threads and what they own:
/// - `report()` (the decode queue) encodes the event (id, kiosk, the JSON line), appends it to a bounded
///   in-memory queue and returns; it never waits on disk or network.
/// - The spool thread ("mqtt-spool") takes the queue in batches and appends them to the `EventSpool`
///   (write + fdatasync), expires old records and writes the spool head.
/// - The session thread ("mqtt-session") owns the libmosquitto handle (one per connection attempt) and
///   publishes from the spool, in spool order, after they are durable; a record leaves the spool when its
///   PUBACK arrives. It reconnects with backoff 1 s doubling to 60 s.
///
/// When an event is written to the spool: always, before it is published. So any event the broker has
/// not acknowledged is on disk (after fdatasync), whatever happens next — a broker outage, a restart, a
/// kill -9, a power cut; after a restart the spool is replayed from its head, in order, before newer
/// events (they are behind it in the same spool). The only events a power cut can take are those
/// reported in the last few milliseconds and not yet written (the queue in front of the spool); the
/// stdout line of such an event may not have been written either.
public final class MQTTOutput: ReportOutput, HealthReporting, StatusObserver {
    public let name = "mqtt"
    public let configuration: MQTTConfiguration
    public let ids: EventIDs
    let context: MQTTSessionContext
    private let spoolThread: PosixThread
    private let sessionThread: PosixThread
    private let closed = Atomic<Bool>(false)

    /// Most events the queue in front of the spool holds (about 8 MiB of JSON); beyond it the oldest is dropped.
    public static let queueLimitBytes = 8 << 20

    /// Opens (and recovers) the spool and starts the two threads; connecting happens on the session thread.
    public init(configuration: MQTTConfiguration, dependencies: MQTTOutputDependencies, ids: EventIDs? = nil) throws {
        self.configuration = configuration
        // libmosquitto's own checks, behind MQTTSettings's: every topic this output publishes and its filter.
        let t = configuration.topics
        for topic in [t.status, t.event, t.state, t.commandResult("pause")] where !MosquittoClient.isPublishTopic(topic) {
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(topic))' is not a topic libmosquitto can publish to")
        }
        guard MosquittoClient.isSubscriptionFilter(t.commandFilter) else {
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(t.commandFilter))' is not a subscription libmosquitto accepts")
        }
        self.ids = try ids ?? EventIDs.random()
        let spool = try EventSpool(directory: configuration.settings.spool, limits: SpoolLimits(settings: configuration.settings),
                                   logger: dependencies.logger)
        let context = try MQTTSessionContext(configuration: configuration, dependencies: dependencies, spool: spool)
        self.context = context
        spoolThread = try PosixThread(name: "mqtt-spool") { SpoolWriter(context: context).run() }
        do {
            sessionThread = try PosixThread(name: "mqtt-session") { MQTTSession(context: context).run() }
        } catch {
            context.requestStop(deadline: .now())
            spoolThread.join()
            throw error
        }
    }

    deinit {
        if !closed.load(ordering: .acquiring) { close(deadline: MonotonicInstant.now().adding(milliseconds: 1000)) }
    }

    /// Encodes the event and queues it for the spool; never blocks.
    public func report(_ event: ReadEvent) {
        let payload = MQTTOutput.eventPayload(context.dependencies.eventLine(event), id: ids.id(seq: event.seq),
                                              kiosk: configuration.clientID)
        context.enqueue(Array(payload.utf8))
    }

    /// `{"id":"<id>","kiosk":"<client id>",` + the rest of the JSON line: the line's own fields unchanged.
    public static func eventPayload(_ line: String, id: String, kiosk: String) -> String {
        let head = "{\"id\":" + JSONText.string(id) + ",\"kiosk\":" + JSONText.string(kiosk)
        guard line.hasPrefix("{") else { return head + ",\"line\":" + JSONText.string(line) + "}" }
        let rest = line.dropFirst()
        return head + (rest.hasPrefix("}") ? "" : ",") + rest
    }

    public func statusChanged(_ status: DaemonStatus) { context.nudgeState() }

    /// Publishes the state now (the daemon calls it when health changed in a way it knows about).
    public func stateChanged() { context.nudgeState() }

    public var link: MQTTLinkStatus { context.linkStatus() }

    public var health: ComponentHealth {
        let l = link
        let state: ComponentHealth.State = context.spoolFailure() != nil ? .down : (l.connected ? .ok : .degraded)
        var detail = l.detail + "; spool \(l.spool.records) events"
        if l.dropped > 0 { detail += ", \(l.dropped) dropped" }
        return ComponentHealth(name: name, state: state, detail: detail, lastError: l.lastError, lastErrorAt: l.lastErrorAt,
                               sent: l.acknowledged, errors: l.dropped)
    }

    /// Lets the spool thread write what is queued and the session send what it can until `deadline`,
    /// then publishes `offline` (retained), disconnects and closes the spool. Returns by the deadline;
    /// a thread still in a blocking call (a DNS lookup) is left to finish on its own.
    public func close(deadline: MonotonicInstant) {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        context.requestStop(deadline: deadline)
        if context.waitFinished(until: deadline) {
            spoolThread.join()
            sessionThread.join()
            context.spool.close()
        } else {
            context.dependencies.logger.warning("mqtt: the session did not stop by its deadline; it is left to end on its own")
        }
    }

    // MARK: - Test hooks

    /// Ends the TCP connection without DISCONNECT (as a crash or a pulled cable would): the broker
    /// publishes the will. The session reconnects after its backoff.
    func testHookDropConnection() { context.requestConnectionDrop() }

    /// Stops both threads as kill -9 would leave things: nothing more is written (no head, no queue),
    /// no offline message, no DISCONNECT; the socket is just closed. Waits until they stopped.
    func testHookCrash() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        context.requestCrash()
        _ = context.waitFinished(until: MonotonicInstant.now().adding(milliseconds: 10_000))
        spoolThread.join()
        sessionThread.join()
        context.spool.abandon()
    }
}

/// What the spool thread and the session thread share.
final class MQTTSessionContext: Sendable {
    let configuration: MQTTConfiguration
    let dependencies: MQTTOutputDependencies
    let spool: EventSpool
    /// Wakes the session thread (new durable events, stop, state nudge).
    let wake: WakePipe
    /// Wakes the spool thread (new queued events, stop).
    let spoolSignal = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let state: Mutex<Shared>

    struct Shared {
        var queue: [[UInt8]] = []
        var queueStart = 0
        var queueBytes = 0
        var queueDropped: UInt64 = 0
        var connected = false
        var detail = "not connected yet"
        var lastError: String?
        var lastErrorAt: Int64?
        var acknowledged: UInt64 = 0
        var stopping = false
        var deadline = MonotonicInstant(nanoseconds: UInt64.max)
        var crash = false
        var dropConnection = false
        var stateNudge = false
        var spoolWriterDone = false
        var spoolFailure: String?
        var threadsFinished = 0
    }

    init(configuration: MQTTConfiguration, dependencies: MQTTOutputDependencies, spool: EventSpool) throws {
        self.configuration = configuration
        self.dependencies = dependencies
        self.spool = spool
        self.wake = try WakePipe()
        self.state = Mutex(Shared())
    }

    var logger: Logger { dependencies.logger }

    func enqueue(_ payload: [UInt8]) {
        let dropped: UInt64? = state.withLock { s in
            guard !s.stopping else { return nil }
            s.queue.append(payload)
            s.queueBytes += payload.count
            var dropped: UInt64?
            while s.queueBytes > MQTTOutput.queueLimitBytes, s.queueStart < s.queue.count - 1 {
                s.queueBytes -= s.queue[s.queueStart].count
                s.queueStart += 1
                s.queueDropped += 1
                dropped = s.queueDropped
            }
            return dropped
        }
        if let dropped {
            logger.warning("mqtt: the queue in front of the spool is full (the disk does not keep up): dropped the oldest event; "
                           + "\(dropped) dropped so far", rateLimitKey: "mqtt-queue-drop")
        }
        spoolSignal.signal()
    }

    /// Takes up to `maxCount` queued payloads (oldest first).
    func takeQueued(maxCount: Int) -> [[UInt8]] {
        state.withLock { s in
            let end = min(s.queue.count, s.queueStart + maxCount)
            let batch = Array(s.queue[s.queueStart..<end])
            s.queueStart = end
            for p in batch { s.queueBytes -= p.count }
            if s.queueStart == s.queue.count {
                s.queue.removeAll(keepingCapacity: s.queue.count < 4096)
                s.queueStart = 0
            } else if s.queueStart > 4096 {
                s.queue.removeFirst(s.queueStart)
                s.queueStart = 0
            }
            return batch
        }
    }

    /// Puts a batch that could not be spooled back in front of the queue.
    func requeue(_ batch: [[UInt8]]) {
        state.withLock { s in
            s.queue.replaceSubrange(s.queueStart..<s.queueStart, with: batch)
            for p in batch { s.queueBytes += p.count }
        }
    }

    var queuedCount: Int { state.withLock { $0.queue.count - $0.queueStart } }

    func nudgeState() {
        state.withLock { $0.stateNudge = true }
        wake.signal()
    }

    func requestStop(deadline: MonotonicInstant) {
        state.withLock { s in
            s.stopping = true
            s.deadline = deadline
        }
        spoolSignal.signal()
        wake.signal()
    }

    func requestCrash() {
        state.withLock { s in
            s.crash = true
            s.stopping = true
            s.deadline = .now()
        }
        spoolSignal.signal()
        wake.signal()
    }

    func requestConnectionDrop() {
        state.withLock { $0.dropConnection = true }
        wake.signal()
    }

    /// Each thread calls this once at its end.
    func threadFinished() {
        finished.signal()
    }

    /// Waits until both threads finished, at most until `deadline`.
    func waitFinished(until deadline: MonotonicInstant) -> Bool {
        for _ in 0..<2 {
            let now = MonotonicInstant.now()
            let remaining = deadline > now ? deadline.nanoseconds - now.nanoseconds : 0
            if finished.wait(timeout: .now() + .nanoseconds(Int(min(remaining, UInt64(Int.max))))) == .timedOut { return false }
        }
        return true
    }

    func spoolFailure() -> String? { state.withLock { $0.spoolFailure } }

    func linkStatus() -> MQTTLinkStatus {
        let depth = spool.depth
        return state.withLock { s in
            MQTTLinkStatus(connected: s.connected, detail: s.detail, lastError: s.lastError, lastErrorAt: s.lastErrorAt,
                           spool: depth, acknowledged: s.acknowledged, queueDropped: s.queueDropped)
        }
    }
}

/// The spool thread: queue -> spool (durable), age expiry, the head file.
struct SpoolWriter {
    let context: MQTTSessionContext

    func run() {
        let spool = context.spool
        var lastHousekeeping = MonotonicInstant(nanoseconds: 0)
        var lastSync = MonotonicInstant.now()
        var failing = false
        while true {
            _ = context.spoolSignal.wait(timeout: .now() + .milliseconds(1000))
            let (stopping, crash) = context.state.withLock { ($0.stopping, $0.crash) }
            if crash { break }
            while true {
                let batch = context.takeQueued(maxCount: 2048)
                if batch.isEmpty { break }
                do {
                    try spool.append(batch, wallTime: WallClock.nowNanoseconds())
                    if failing {
                        failing = false
                        context.state.withLock { $0.spoolFailure = nil }
                        context.logger.notice("mqtt spool \(spool.directory): writing again")
                    }
                    context.wake.signal()
                } catch {
                    // Kept in memory (bounded) and tried again; the session still sends what is on disk.
                    context.requeue(batch)
                    failing = true
                    context.state.withLock { s in
                        s.spoolFailure = error.description
                        s.lastError = error.description
                        s.lastErrorAt = WallClock.nowNanoseconds()
                    }
                    context.logger.error("mqtt: cannot write the spool: \(error); \(context.queuedCount) events wait in memory",
                                         rateLimitKey: "mqtt-spool-write")
                    break
                }
            }
            let now = MonotonicInstant.now()
            if now.milliseconds(since: lastHousekeeping) >= 1000 || stopping {
                lastHousekeeping = now
                if spool.expire() > 0 { context.wake.signal() }
                let sync = now.milliseconds(since: lastSync) >= 2000 || stopping
                spool.persistHead(sync: sync)
                if sync { lastSync = now }
            }
            if stopping && (context.queuedCount == 0 || failing || now >= context.state.withLock({ $0.deadline })) {
                break
            }
        }
        let left = context.queuedCount
        if left > 0 && !context.state.withLock({ $0.crash }) {
            context.logger.error("mqtt: \(left) events could not be written to the spool before the stop and are lost")
        }
        context.state.withLock { $0.spoolWriterDone = true }
        context.wake.signal()
        context.threadFinished()
    }
}
