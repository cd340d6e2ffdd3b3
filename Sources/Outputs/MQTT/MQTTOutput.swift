import Components
import Core
import Dispatch
import Platform
import Runtime
import Synchronization

/// What an MQTT output needs besides its settings.
public struct MQTTOutputDependencies: Sendable {
    /// The process's libmosquitto set-up (one per daemon).
    public var library: MosquittoLibrary
    /// The stdout JSON line of a read (the daemon passes `EventLine.json`); the event on MQTT is this
    /// object with `"id"` and `"kiosk"` put first.
    public var eventLine: @Sendable (ReadEvent) -> String
    /// The daemon's state for `<prefix>/state`; called on the session thread, must not block.
    public var state: @Sendable () -> MQTTState
    /// pause, resume, reload; nil: those commands are refused ("not available").
    public var commands: MQTTCommandHandler?
    /// Where `feedback` and `beep` commands go; nil: refused.
    public var feedback: FeedbackSink?
    /// The site's link (site policy documents in, anti-passback uses out and in); nil: neither.
    public var site: SiteLink?
    public var logger: Logger
    /// Told (on the session thread) each time the broker acknowledged events, with how many: for the bench.
    public var onAcknowledged: (@Sendable (Int) -> Void)?
    /// The clocks that stamp spooled events and command ids (tests inject their own).
    public var clock: SpoolClock
    /// Test failures of the spool's writes (a full disk); `.none` in service.
    public var writeFaults: WriteFaults = .none

    /// The broker link is not the door controller's: it is not reported to a ControllerLinkObserver (the
    /// status LED, STATUS=); it is in `MQTTOutput.link` and `health`, which status and metrics read.
    public init(library: MosquittoLibrary, eventLine: @escaping @Sendable (ReadEvent) -> String,
                state: @escaping @Sendable () -> MQTTState, commands: MQTTCommandHandler? = nil,
                feedback: FeedbackSink? = nil, logger: Logger,
                onAcknowledged: (@Sendable (Int) -> Void)? = nil, clock: SpoolClock = .system()) {
        self.library = library
        self.eventLine = eventLine
        self.state = state
        self.commands = commands
        self.feedback = feedback
        self.logger = logger
        self.onAcknowledged = onAcknowledged
        self.clock = clock
    }
}

/// The fleet output: every read as a QoS 1 message on `<prefix>/event`, nothing lost while the broker
/// is away, plus the retained status and state, commands and Home Assistant discovery.
///
/// Workers (`Runtime.Worker`) and what they own:
/// - `report()` (the decode queue) encodes the event (id, kiosk, the JSON line), appends it to a bounded
///   in-memory queue and returns; it never waits on disk or network.
/// - The spool worker ("mqtt-spool") opens the spool when the constructor could not (its lock still held
///   by an output being replaced: it waits up to `lockWaitSeconds`, then retries in the background), then
///   takes the queue in batches and appends them to the `EventSpool` (write + fdatasync), expires old
///   records and writes the spool head.
/// - The session worker ("mqtt-session") owns the libmosquitto handle (one per connection attempt) and
///   publishes from the spool, in spool order, after they are durable; a record leaves the spool when its
///   PUBACK arrives. It reconnects with backoff 1 s doubling to 60 s (back to 1 s only after a connection
///   that stayed up `MQTTSession.stableSeconds`).
///
/// Their mailboxes carry nothing: the queue in front of the spool is byte-bounded (`PayloadQueue`) and
/// shared, and each is woken through its own pipe (`MQTTSessionContext.spoolWake`, `.wake`), which the
/// other signals. The stop flags and deadline are the context's, as both read them.
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
    private let spoolWorker: Worker<Never>
    private let sessionWorker: Worker<Never>
    private let closed = Atomic<Bool>(false)

    /// Most bytes the queue in front of the spool holds (about 8 MiB of JSON); beyond it the oldest is dropped.
    public static let queueLimitBytes = 8 << 20
    /// How long the spool thread retries a spool directory whose lock is held (an output being replaced
    /// by a reload) before it says so and goes on retrying every `lockRetrySeconds`.
    public static let lockWaitSeconds = 5.0
    public static let lockRetrySeconds = 2.0

    /// Opens (and recovers) the spool and starts the two workers; connecting happens on the session worker.
    /// A spool whose lock is held is opened by the spool thread once it is free; other spool errors throw.
    public init(configuration: MQTTConfiguration, dependencies: MQTTOutputDependencies, ids: EventIDs? = nil) throws {
        self.configuration = configuration
        // libmosquitto's own checks, behind MQTTSettings's: every topic this output publishes and its filter.
        let t = configuration.topics
        for topic in [t.status, t.event, t.state, t.commandResult("pause"), t.policyResult] + [t.passback(number: Array("0".utf8))].compactMap({ $0 })
            where !MosquittoClient.isPublishTopic(topic) {
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(topic))' is not a topic libmosquitto can publish to")
        }
        guard MosquittoClient.isSubscriptionFilter(t.commandFilter) else {
            throw UsageError("mqtt-topic-prefix: '\(Logger.escape(t.commandFilter))' is not a subscription libmosquitto accepts")
        }
        for filter in [t.policy, t.sitePolicy, t.passback].compactMap({ $0 }) where !MosquittoClient.isSubscriptionFilter(filter) {
            throw UsageError("mqtt-site-topic: '\(Logger.escape(filter))' is not a subscription libmosquitto accepts")
        }
        self.ids = try ids ?? EventIDs.random()
        let context = try MQTTSessionContext(configuration: configuration, dependencies: dependencies)
        switch context.openSpool() {
        case .success(let spool): context.attach(spool)
        case .failure(let error) where error.lockBusy:
            dependencies.logger.notice("mqtt: \(error); the spool thread waits for it (events wait in memory meanwhile)")
        case .failure(let error): throw error
        }
        self.context = context
        let logger = dependencies.logger
        spoolWorker = try Worker(name: "mqtt-spool", capacity: 1, overflow: .refuse, logger: logger,
                                 wakePipe: context.spoolWake) { inbox in SpoolWriter(context: context, inbox: inbox).run() }
        do {
            sessionWorker = try Worker(name: "mqtt-session", capacity: 1, overflow: .refuse, logger: logger,
                                       wakePipe: context.wake) { inbox in MQTTSession(context: context, inbox: inbox).run() }
        } catch {
            context.requestStop(deadline: .now())
            spoolWorker.stop(deadline: .now().adding(milliseconds: 5000))
            context.closeDurable()
            throw error
        }
        if let site = dependencies.site, t.passback != nil {
            let wake = context.wake
            site.brokerAttached(owner: ObjectIdentifier(self), wake: { wake.signal() })
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

    /// The broker link and the spool: what `scangate status`, the metrics and the state show.
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
    /// a worker still in a blocking call (a DNS lookup) is left to finish on its own (the worker says so),
    /// and the spool (with its directory lock) is closed anyway once the spool worker is done, so a new
    /// output can take it.
    public func close(deadline: MonotonicInstant) {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        context.dependencies.site?.brokerDetached(owner: ObjectIdentifier(self))
        context.requestStop(deadline: deadline)
        let writerDone = spoolWorker.stop(deadline: deadline)
        let sessionDone = sessionWorker.stop(deadline: deadline)
        if writerDone { context.closeDurable() }
        if !sessionDone && writerDone {
            context.dependencies.logger.notice("mqtt: the spool is closed and its lock released; the session ends on its own")
        }
    }

    // MARK: - Test hooks

    /// Ends the TCP connection without DISCONNECT (as a crash or a pulled cable would): the broker
    /// publishes the will. The session reconnects after its backoff.
    func testHookDropConnection() { context.requestConnectionDrop() }

    /// Stops both workers as kill -9 would leave things: nothing more is written (no head, no queue),
    /// no offline message, no DISCONNECT; the socket is just closed. Waits until they stopped.
    func testHookCrash() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        context.requestCrash()
        let deadline = MonotonicInstant.now().adding(milliseconds: 10_000)
        spoolWorker.stop(deadline: deadline)
        sessionWorker.stop(deadline: deadline)
        context.abandonDurable()
    }
}

/// What the spool worker and the session worker share.
final class MQTTSessionContext: Sendable {
    let configuration: MQTTConfiguration
    let dependencies: MQTTOutputDependencies
    /// Wakes the session worker (new durable events, stop, state nudge): its worker's wake-up.
    let wake: WakePipe
    /// Wakes the spool worker (new queued events, stop): its worker's wake-up.
    let spoolWake: WakePipe
    let state: PosixMutex<Shared>
    /// The spool and the command ids beside it, once the spool is open (its directory lock held).
    private let durable = PosixMutex<Durable?>(nil)
    /// Test hook: while set, the spool thread waits on it before each write (a stuck fdatasync);
    /// `writerHeld` says it is waiting there.
    let writerGate = PosixMutex<DispatchSemaphore?>(nil)
    let writerHeld = Atomic<Bool>(false)
    /// Test hook (`SCANGATE_TRACE_SPOOL`): told each batch once it is durable.
    let spoolTrace: SpoolTrace?

    struct Durable {
        let spool: EventSpool
        /// nil when the command id file cannot be used (`commandIDsError` says why): commands are refused.
        let commandIDs: CommandIDStore?
        let commandIDsError: String?
    }

    struct Shared {
        var queue = PayloadQueue(limitBytes: MQTTOutput.queueLimitBytes)
        var queueDropped: UInt64 = 0
        /// Events dropped because the spool's file system had no room for them (ENOSPC, EDQUOT).
        var noSpaceDropped: UInt64 = 0
        var connected = false
        var detail = "not connected yet"
        var retryIn: Int?
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
        var bodiesFinished = 0
    }

    init(configuration: MQTTConfiguration, dependencies: MQTTOutputDependencies) throws {
        self.configuration = configuration
        self.dependencies = dependencies
        self.wake = try WakePipe(purpose: "mqtt-session")
        self.spoolWake = try WakePipe(purpose: "mqtt-spool")
        self.state = PosixMutex(Shared())
        self.spoolTrace = SpoolTrace.fromEnvironment(logger: dependencies.logger)
    }

    var logger: Logger { dependencies.logger }
    var clock: SpoolClock { dependencies.clock }

    // MARK: - The spool

    func openSpool() -> Result<EventSpool, SpoolError> {
        do {
            return .success(try EventSpool(directory: configuration.settings.spool, limits: SpoolLimits(settings: configuration.settings),
                                           logger: dependencies.logger, clock: dependencies.clock, faults: dependencies.writeFaults))
        } catch {
            return .failure(error)
        }
    }

    /// Makes `spool` the output's, with the command id file in its directory.
    func attach(_ spool: EventSpool) {
        var store: CommandIDStore?
        var problem: String?
        if configuration.settings.commands {
            do {
                store = try CommandIDStore(directory: spool.directory, clock: dependencies.clock, logger: logger)
            } catch {
                problem = error.description
                logger.error("mqtt: \(error); commands are refused until it can be used (it keeps the ids already acted on)")
            }
        }
        durable.withLock { $0 = Durable(spool: spool, commandIDs: store, commandIDsError: problem) }
    }

    var spool: EventSpool? { durable.withLock { $0?.spool } }

    /// The command id store, or why there is none.
    func commandIDs() -> Result<CommandIDStore, SpoolError> {
        durable.withLock { d in
            guard let d else {
                return .failure(SpoolError("the spool directory \(configuration.settings.spool) is not open yet (its lock is held)"))
            }
            if let store = d.commandIDs { return .success(store) }
            return .failure(SpoolError(d.commandIDsError ?? "no command id file"))
        }
    }

    /// Closes the spool (writing its head) and the command id file; releases the directory lock. Idempotent.
    func closeDurable() {
        let d = durable.withLock { $0 }
        d?.commandIDs?.close()
        d?.spool.close()
    }

    /// As a crash leaves them: nothing more written.
    func abandonDurable() {
        let d = durable.withLock { $0 }
        d?.commandIDs?.close()
        d?.spool.abandon()
    }

    // MARK: - The queue in front of the spool

    func enqueue(_ payload: [UInt8]) {
        let dropped: UInt64? = state.withLock { s in
            guard !s.stopping else { return nil }
            let n = s.queue.push(payload)
            guard n > 0 else { return nil }
            s.queueDropped += UInt64(n)
            return s.queueDropped
        }
        if let dropped {
            logger.warning("mqtt: the queue in front of the spool is full (the disk does not keep up): dropped the oldest event; "
                           + "\(dropped) dropped so far", rateLimitKey: "mqtt-queue-drop")
        }
        spoolWake.signal()
    }

    /// Takes up to `maxCount` queued payloads (oldest first).
    func takeQueued(maxCount: Int) -> [[UInt8]] {
        state.withLock { $0.queue.pop(maxCount: maxCount) }
    }

    /// Puts a batch that could not be spooled back in front of the queue (the bound still holds).
    func requeue(_ batch: [[UInt8]]) {
        let dropped: UInt64? = state.withLock { s in
            let n = s.queue.pushFront(batch)
            guard n > 0 else { return nil }
            s.queueDropped += UInt64(n)
            return s.queueDropped
        }
        if let dropped {
            logger.warning("mqtt: the queue in front of the spool is full (the spool cannot be written): dropped the oldest event; "
                           + "\(dropped) dropped so far", rateLimitKey: "mqtt-queue-drop")
        }
    }

    /// A batch the spool's file system has no room for (ENOSPC, EDQUOT): dropped at once and counted
    /// (`spool_dropped_no_space`), logged rate-limited naming the directory and the full file system,
    /// and the failure kept for health until a write succeeds. Held in memory instead, events would
    /// reach no one while nothing showed them lost, and a stop would lose them uncounted.
    func dropForLackOfSpace(_ batch: [[UInt8]], _ error: SpoolError) {
        let (total, first) = state.withLock { s -> (UInt64, Bool) in
            let first = s.spoolFailure == nil
            s.noSpaceDropped += UInt64(batch.count)
            s.spoolFailure = error.description
            s.lastError = error.description
            s.lastErrorAt = WallClock.nowNanoseconds()
            return (s.noSpaceDropped, first)
        }
        logger.error("mqtt: cannot write the spool: \(error); \(MountPoint.fullDiskNote(configuration.settings.spool)): "
                     + "dropped \(batch.count) event\(batch.count == 1 ? "" : "s"), \(total) dropped for lack of space so far",
                     rateLimitKey: "mqtt-spool-no-space")
        if first { nudgeState() }
    }

    var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Entries, bytes charged against the bound and payload bytes really held (for tests and health).
    var queueStats: (count: Int, charged: Int, stored: Int) {
        state.withLock { ($0.queue.count, $0.queue.chargedBytes, $0.queue.storedPayloadBytes) }
    }

    // MARK: - Signals

    func nudgeState() {
        state.withLock { $0.stateNudge = true }
        wake.signal()
    }

    func requestStop(deadline: MonotonicInstant) {
        state.withLock { s in
            s.stopping = true
            s.deadline = deadline
        }
        spoolWake.signal()
        wake.signal()
        // A writer held by the test gate is let go.
        writerGate.withLock { $0 }?.signal()
    }

    func requestCrash() {
        state.withLock { s in
            s.crash = true
            s.stopping = true
            s.deadline = .now()
        }
        spoolWake.signal()
        wake.signal()
        writerGate.withLock { $0 }?.signal()
    }

    func requestConnectionDrop() {
        state.withLock { $0.dropConnection = true }
        wake.signal()
    }

    /// Each worker's body calls this once at its end; after the second (unless crashed) the spool is
    /// closed, so its lock is free for whoever comes next, even when `close` stopped waiting for them.
    func bodyFinished() {
        let (count, crash) = state.withLock { s -> (Int, Bool) in
            s.bodiesFinished += 1
            return (s.bodiesFinished, s.crash)
        }
        if count == 2 && !crash { closeDurable() }
    }

    func spoolFailure() -> String? { state.withLock { $0.spoolFailure } }

    func linkStatus() -> MQTTLinkStatus {
        let depth = spool?.depth ?? SpoolDepth()
        return state.withLock { s in
            MQTTLinkStatus(connected: s.connected, detail: s.detail, lastError: s.lastError, lastErrorAt: s.lastErrorAt,
                           spool: depth, acknowledged: s.acknowledged, queueDropped: s.queueDropped, retryInSeconds: s.retryIn,
                           noSpaceDropped: s.noSpaceDropped)
        }
    }
}

/// The spool worker's body: opens the spool when its lock was held, then queue -> spool (durable), age
/// expiry, the head file.
struct SpoolWriter {
    let context: MQTTSessionContext
    let inbox: WorkerInbox<Never>

    func run() {
        defer {
            context.state.withLock { $0.spoolWriterDone = true }
            context.wake.signal()
            context.bodyFinished()
        }
        let opened = context.spool ?? waitForSpool()
        guard let spool = opened else {
            reportLeftOver()
            return
        }
        var lastHousekeeping = MonotonicInstant(nanoseconds: 0)
        var lastSync = MonotonicInstant.now()
        var failing = false
        while true {
            inbox.wait(nanoseconds: 1_000_000_000)
            let (stopping, crash) = context.state.withLock { ($0.stopping, $0.crash) }
            if crash { break }
            while true {
                if let gate = context.writerGate.withLock({ $0 }) {
                    context.writerHeld.store(true, ordering: .releasing)
                    gate.wait()
                    context.writerHeld.store(false, ordering: .releasing)
                }
                if context.state.withLock({ $0.crash }) { break }
                let batch = context.takeQueued(maxCount: 2048)
                if batch.isEmpty { break }
                do {
                    try spool.append(batch)
                    context.spoolTrace?.batchSynced(batch, logger: context.logger)
                    if failing {
                        failing = false
                        context.state.withLock { $0.spoolFailure = nil }
                        context.logger.notice("mqtt spool \(spool.directory): writing again")
                    }
                    context.wake.signal()
                } catch where error.noSpace {
                    // No room on the file system: dropped and counted; the next batch tries again.
                    context.dropForLackOfSpace(batch, error)
                    failing = true
                    break
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
            if context.state.withLock({ $0.crash }) { break }
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
        reportLeftOver()
    }

    private func reportLeftOver() {
        let left = context.queuedCount
        if left > 0 && !context.state.withLock({ $0.crash }) {
            context.logger.error("mqtt: \(left) events could not be written to the spool before the stop and are lost")
        }
    }

    /// The spool's lock is held (the output this one replaces has not let go yet): retried every 200 ms
    /// for `MQTTOutput.lockWaitSeconds` without a word, then said so and retried every
    /// `MQTTOutput.lockRetrySeconds` until it opens or the output stops (nil). Events wait in the queue.
    private func waitForSpool() -> EventSpool? {
        let started = MonotonicInstant.now()
        var said = false
        while true {
            if context.state.withLock({ $0.stopping }) { return nil }
            let error: SpoolError
            switch context.openSpool() {
            case .success(let spool):
                context.attach(spool)
                context.state.withLock { $0.spoolFailure = nil }
                if said { context.logger.notice("mqtt spool \(spool.directory): open now; \(context.queuedCount) queued events go in") }
                context.wake.signal()
                // The waits above took the queue's wake-ups: write what is queued at once.
                context.spoolWake.signal()
                return spool
            case .failure(let e):
                error = e
            }
            let waited = MonotonicInstant.now().milliseconds(since: started) / 1000
            if error.lockBusy && waited < MQTTOutput.lockWaitSeconds {
                pause(milliseconds: 200)
                continue
            }
            context.state.withLock { s in
                s.spoolFailure = error.description
                s.lastError = error.description
                s.lastErrorAt = WallClock.nowNanoseconds()
            }
            context.logger.warning("mqtt: \(error); tried for \(Int(waited)) s, retrying every \(Int(MQTTOutput.lockRetrySeconds)) s "
                                   + "(\(context.queuedCount) events wait in memory)", rateLimitKey: "mqtt-spool-open")
            said = true
            pause(milliseconds: MQTTOutput.lockRetrySeconds * 1000)
        }
    }

    /// Waits `milliseconds`, or until a stop (reports in between do not cut it short).
    private func pause(milliseconds: Double) {
        let until = MonotonicInstant.now().adding(milliseconds: milliseconds)
        while !context.state.withLock({ $0.stopping }) {
            let now = MonotonicInstant.now()
            if now >= until { return }
            inbox.wait(nanoseconds: UInt64(min(until.milliseconds(since: now) + 1, 1000) * 1_000_000))
        }
    }
}
