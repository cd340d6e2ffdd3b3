import Core
import GPIO
import Platform
import Runtime
import Settings

/// The panel's LED and beeper wires (`wiegand-led-input`, `wiegand-beeper-input`): GPIO inputs with
/// both-edge events, on a thread of their own that holds its own chip handle. A level counts once it
/// has held for the debounce time (contact bounce of a relay output is 1-5 ms); then it becomes a
/// feedback command with origin "wiegand":
/// - LED input active: the LED permanently green (a temporary state such as the read cue is cancelled);
///   released: permanently off.
/// - Beeper input active: a tone until replaced; released: silence.
/// The line's level is read back after the edges settle (not taken from the edge type), so bounce and
/// the active-low flag cannot leave it on the wrong side. A missing or busy line is logged with the fix
/// and retried; when the inputs close or the chip goes away while an input is active, its release is
/// played, so the reader is not left green or beeping.
final class WiegandPanelInputs: Sendable {
    enum Role: String, Sendable, CaseIterable {
        case led, beeper

        var option: String { self == .led ? WiegandSettings.Option.ledInput : WiegandSettings.Option.beeperInput }
        var title: String { self == .led ? "LED input" : "beeper input" }

        /// The command for this input becoming active or released.
        func command(active: Bool) -> FeedbackCommand {
            switch (self, active) {
            case (.led, true):
                return FeedbackCommand(led: LEDCommand(temporary: .cancel, permanent: .steady(.green)))
            case (.led, false):
                return FeedbackCommand(led: LEDCommand(permanent: .steady(.off)))
            case (.beeper, true):
                return FeedbackCommand(tone: ToneCommand(onMs: 1000, offMs: 0, duration: .untilReplaced))
            case (.beeper, false):
                return FeedbackCommand(tone: .silence)
            }
        }
    }

    struct State {
        var open: [Role] = []
        var error: String?
        var lastErrorAt: Int64?
        var active: [Role: Bool] = [:]
    }

    private let state = PosixMutex(State())
    /// The input thread; it takes no messages (it waits on the lines' edge events).
    private let worker: PosixMutex<Worker<Never>?> = PosixMutex(nil)
    private let logger: Logger

    init(settings: WiegandSettings, calls: any GpiodCalls, feedback: FeedbackSink, logger: Logger,
         runtime: WiegandRuntime) throws(SystemError) {
        self.logger = logger
        var specs: [(Role, GPIOLineSpec)] = []
        if let led = settings.ledInput { specs.append((.led, led)) }
        if let beeper = settings.beeperInput { specs.append((.beeper, beeper)) }
        let chip = settings.chip ?? ""
        let roles = specs
        let activeLow = !settings.inputActiveHigh
        let t = try Worker<Never>(name: "wiegand-in", capacity: 1, overflow: .refuse) { [self] inbox in
            self.run(inbox, specs: roles, chip: chip, activeLow: activeLow, calls: calls, feedback: feedback, runtime: runtime)
        }
        worker.withLock { $0 = t }
    }

    var snapshot: State { state.withLock { $0 } }

    /// Stops the thread (within its 50 ms wait slice), releases the inputs, plays the release of any
    /// input still active. Returns by `deadline`.
    func close(deadline: MonotonicInstant) {
        guard let worker = worker.withLock({ $0 }), !worker.isStopping else { return }
        // A little past the deadline: the thread looks at the stop between two 50 ms waits for edges.
        if !worker.stop(deadline: deadline.adding(milliseconds: 100)) {
            logger.error("Wiegand: the panel-input thread did not stop by the close deadline")
        }
    }

    private struct Input {
        let role: Role
        let spec: GPIOLineSpec
        var request: LineRequest?
        var title = ""
        /// The debounced logical level (true: active).
        var stable = false
        /// When the last edge was seen (CLOCK_MONOTONIC ns); nil when settled.
        var lastEdge: UInt64?
        var error: GPIOError?
    }

    private func run(_ inbox: WorkerInbox<Never>, specs: [(Role, GPIOLineSpec)], chip chipText: String, activeLow: Bool, calls: any GpiodCalls,
                     feedback: FeedbackSink, runtime: WiegandRuntime) {
        var inputs = specs.map { Input(role: $0.0, spec: $0.1) }
        var chip: GPIOChip?
        var nextRetry: UInt64 = 0
        let retryNs = UInt64(max(1, runtime.retryMs)) * 1_000_000
        let debounceNs = UInt64(max(0, runtime.debounceMs)) * 1_000_000
        let sliceNs: UInt64 = 50_000_000

        func emit(_ i: Int, active: Bool) {
            inputs[i].stable = active
            state.withLock { $0.active[inputs[i].role] = active }
            feedback.play(.command(inputs[i].role.command(active: active)), origin: "wiegand")
            logger.info("Wiegand: panel \(inputs[i].role.title) \(inputs[i].title) \(active ? "active" : "released")")
        }

        func closeAll(reason: String?) {
            for i in inputs.indices where inputs[i].request != nil {
                inputs[i].request?.release()
                inputs[i].request = nil
                if inputs[i].stable { emit(i, active: false) }
                inputs[i].lastEdge = nil
            }
            chip = nil
            state.withLock { s in
                s.open = []
                if let reason {
                    s.error = reason
                    s.lastErrorAt = WallClock.nowNanoseconds()
                }
            }
        }

        func openMissing(now: UInt64) {
            if chip == nil {
                switch GPIOChip.open(chipText, calls: calls) {
                case .success(let c): chip = c
                case .failure(let e):
                    state.withLock { s in
                        s.error = e.message
                        s.lastErrorAt = WallClock.nowNanoseconds()
                    }
                    logger.error("Wiegand: panel inputs: \(e.message); retrying every \(runtime.retryMs) ms",
                                 rateLimitKey: "wiegand:inputs")
                    nextRetry = now + retryNs
                    return
                }
            }
            guard let c = chip else { return }
            var failed = false
            for i in inputs.indices where inputs[i].request == nil {
                let role = inputs[i].role
                let config = LineRequest.Config(purpose: "the panel \(role.title)",
                                                lines: [.init(inputs[i].spec, flag: "--\(role.option)")],
                                                direction: .bothEdges, activeLow: activeLow)
                switch c.request(config) {
                case .success(let request):
                    inputs[i].request = request
                    inputs[i].title = request.title
                    inputs[i].error = nil
                    logger.info("Wiegand: panel \(role.title) on \(inputs[i].title), active \(activeLow ? "low" : "high")")
                    if case .success(let v) = request.getValue(), v != 0 { emit(i, active: true) }
                case .failure(let e):
                    failed = true
                    inputs[i].error = e
                    logger.error("Wiegand: \(e.message); retrying every \(runtime.retryMs) ms", rateLimitKey: "wiegand:in:\(role)")
                }
            }
            let open = inputs.filter { $0.request != nil }.map(\.role)
            let errors = inputs.compactMap { $0.error?.message }
            state.withLock { s in
                s.open = open
                s.error = errors.isEmpty ? nil : errors.joined(separator: "; ")
                if !errors.isEmpty { s.lastErrorAt = WallClock.nowNanoseconds() }
            }
            if failed { nextRetry = now + retryNs }
        }

        while !inbox.isStopping {
            let now = WiegandClock.now()
            if inputs.contains(where: { $0.request == nil }) && now >= nextRetry { openMissing(now: now) }
            let requests = inputs.compactMap(\.request)
            guard !requests.isEmpty else {
                sleepThread(milliseconds: Double(min(sliceNs, max(1_000_000, nextRetry > now ? nextRetry - now : 0))) / 1e6)
                continue
            }
            // Wait for edges, at most until the next debounce ends or one slice.
            var wait = sliceNs
            for input in inputs { if let e = input.lastEdge { wait = min(wait, e + debounceNs > now ? e + debounceNs - now : 0) } }
            switch LineRequest.waitEdgeEvents(requests, timeoutNanoseconds: wait) {
            case .success(let ready):
                let seen = WiegandClock.now()
                for r in ready {
                    let request = requests[r]
                    guard let i = inputs.firstIndex(where: { $0.request === request }) else { continue }
                    // Drain what is pending (the kernel keeps at most 16 events per line).
                    var drained = 0
                    repeat {
                        guard case .success = request.readEdgeEvent() else { break }
                        drained += 1
                    } while drained < 16 && ((try? request.waitEdgeEvents(timeoutNanoseconds: 0).get()) == true)
                    inputs[i].lastEdge = seen
                }
            case .failure(let e):
                logger.error("Wiegand: panel inputs: waiting for edges failed: \(e); closing them, retrying every \(runtime.retryMs) ms",
                             rateLimitKey: "wiegand:inputs")
                closeAll(reason: "waiting for edges failed: \(e)")
                nextRetry = WiegandClock.now() + retryNs
                continue
            }
            // Settled inputs: read the level back and act on a change.
            let after = WiegandClock.now()
            for i in inputs.indices {
                guard let edge = inputs[i].lastEdge, after >= edge + debounceNs, let request = inputs[i].request else { continue }
                inputs[i].lastEdge = nil
                switch request.getValue() {
                case .success(let v):
                    if (v != 0) != inputs[i].stable { emit(i, active: v != 0) }
                case .failure(let e):
                    logger.error("Wiegand: reading the panel \(inputs[i].role.title) failed: \(e)", rateLimitKey: "wiegand:inputs")
                    if e.meansDeviceGone {
                        closeAll(reason: "reading \(inputs[i].title) failed: \(e)")
                        nextRetry = WiegandClock.now() + retryNs
                        break
                    }
                }
            }
        }
        closeAll(reason: nil)
    }
}
