import Core
import GPIO
import Platform
import Synchronization
import Settings

/// The Wiegand door output: a read becomes a number (`wiegand-map`), the number a frame
/// (`wiegand-format`), once, on the decode queue in `offer`; the transmitter thread sends it on D0/D1.
/// With `wiegand-led-input` / `wiegand-beeper-input` it also listens to the panel and plays what the
/// panel asks for through the injected `FeedbackSink`.
///
/// Resources: the transmitter thread owns the chip handle and the D0/D1 request; the input thread owns
/// a second chip handle and the input requests. Both are released in `close`.
public final class WiegandOutput: DoorOutput, HealthReporting, LineHolder {
    public let name = "wiegand"
    public let settings: WiegandSettings
    private let encoder: WiegandEncoder
    private let transmitter: WiegandTransmitter
    private let inputs: WiegandPanelInputs?
    private let refused = Atomic<UInt64>(0)

    /// Validates `settings`, starts the transmitter (the lines are requested, or their error logged,
    /// before this returns) and, when inputs are configured and `feedback` is given, the input thread.
    /// Throws `WiegandSettingsError` for settings that cannot work and `SystemError` when a thread
    /// cannot be started.
    public init(settings: WiegandSettings, logger: Logger, feedback: FeedbackSink?,
                calls: any GpiodCalls = SystemGpiodCalls(), runtime: WiegandRuntime = WiegandRuntime()) throws {
        try settings.validate()
        guard settings.isEnabled else {
            throw WiegandSettingsError(option: WiegandSettings.Option.d0,
                                       "the Wiegand output needs \(WiegandSettings.Option.d0) and \(WiegandSettings.Option.d1)")
        }
        self.settings = settings
        self.encoder = WiegandEncoder(settings: settings)
        self.transmitter = try WiegandTransmitter(settings: settings, calls: calls, logger: logger, runtime: runtime)
        if settings.hasInputs {
            if let feedback {
                do {
                    self.inputs = try WiegandPanelInputs(settings: settings, calls: calls, feedback: feedback,
                                                         logger: logger, runtime: runtime)
                } catch {
                    transmitter.close(deadline: .now())
                    throw error
                }
            } else {
                logger.warning("Wiegand: \(WiegandSettings.Option.ledInput)/\(WiegandSettings.Option.beeperInput) given but no feedback is configured; the panel's inputs are not read")
                self.inputs = nil
            }
        } else {
            self.inputs = nil
        }
    }

    /// Maps and encodes the read once and queues its frame; never blocks. Refused (for Wiegand only)
    /// when the number does not fit, the payload is no number, the lines are not held or the queue is full.
    public func offer(_ event: ReadEvent) -> OutputOffer {
        guard event.verdict.isAccepted else {
            refused.add(1, ordering: .relaxed)
            return .refused(reason: "the read was rejected")
        }
        switch encoder.frame(for: event) {
        case .failure(let refusal):
            refused.add(1, ordering: .relaxed)
            return .refused(reason: refusal.reason)
        case .success(let frame):
            let verdict = transmitter.enqueue(frame)
            if !verdict.isTaken { refused.add(1, ordering: .relaxed) }
            return verdict
        }
    }

    /// Queues one frame built elsewhere (doctor's test number, the bench); never blocks.
    public func send(_ frame: WiegandFrame) -> OutputOffer { transmitter.enqueue(frame) }

    /// Blocks until every queued frame is sent or dropped (or the timeout passes). True when idle.
    @discardableResult
    public func waitUntilSent(timeoutMs: Int) -> Bool { transmitter.waitIdle(timeoutMs: timeoutMs) }

    /// Sends what is queued until `deadline`, stops at a bit boundary, leaves D0/D1 idle and releases
    /// every line. Idempotent.
    public func close(deadline: MonotonicInstant) {
        transmitter.close(deadline: deadline)
        inputs?.close(deadline: deadline)
    }

    /// The stop deadline: D0/D1 idle now (the frame on the wire cut at a bit boundary) and released;
    /// bounded (about 50 ms). The panel inputs are inputs: nothing to drive.
    public func forceInactive() {
        transmitter.forceInactive()
    }

    public var health: ComponentHealth {
        let t = transmitter.snapshot
        let i = inputs?.snapshot
        var state: ComponentHealth.State = t.linesUp ? .ok : .down
        if state == .ok, let i, i.error != nil { state = .degraded }
        var detail = t.linesUp ? "\(t.linesTitle), \(settings.format)" : "lines not available: \(t.lineError ?? "opening")"
        detail += "; \(t.realtime)"
        if t.stretchedPulses > 0 { detail += "; at least \(t.stretchedPulses) pulses stretched past 100 us (preempted)" }
        if let i {
            let open = i.open.map { $0 == .led ? "LED input" : "beeper input" }
            if !open.isEmpty { detail += "; panel \(open.joined(separator: " and ")) read" }
        }
        var lastError = t.lastError, lastErrorAt = t.lastErrorAt
        if let i, let e = i.error, (i.lastErrorAt ?? 0) >= (lastErrorAt ?? 0) {
            lastError = "panel inputs: \(e)"
            lastErrorAt = i.lastErrorAt
        }
        return ComponentHealth(name: name, state: state, detail: detail, lastError: lastError, lastErrorAt: lastErrorAt,
                               sent: t.sent, errors: t.dropped + refused.load(ordering: .relaxed))
    }
}
