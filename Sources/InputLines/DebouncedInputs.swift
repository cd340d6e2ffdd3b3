import Core
import GPIO
import Platform
import Runtime
import Settings

/// GPIO inputs watched for both edges on a thread of their own (with its own chip handle): a level
/// counts once it has held for the debounce time, then `onChange(name, active)` is called on that
/// thread. The level is read back after the edges settle (not taken from the edge type), so bounce and
/// the active-low flag cannot leave an input on the wrong side. A missing or busy line is logged with the
/// option that names it and retried; a chip that goes away closes every input and is reopened.
///
/// Resources: one chip handle and one line request per input, one thread; all released by `close` (and
/// on every path out of the thread).
public final class DebouncedInputs: Sendable {
    public struct Input: Sendable {
        /// What `onChange` and `levels` call it: "tamper".
        public var name: String
        /// For logs: "the tamper switch".
        public var title: String
        /// The option that names the line, for errors: "osdp-tamper-line".
        public var option: String
        public var line: GPIOLineSpec
        public var activeLow: Bool

        public init(name: String, title: String, option: String, line: GPIOLineSpec, activeLow: Bool) {
            self.name = name
            self.title = title
            self.option = option
            self.line = line
            self.activeLow = activeLow
        }
    }

    public struct Runtime: Sendable {
        public var debounceMs: Double
        /// A chip or line that could not be requested is tried again this often.
        public var retryMs: Double
        /// Inputs still active when they are closed (at the end, or when the chip goes away) are reported
        /// inactive, so nothing driven by them is left on (the Wiegand panel's LED and beeper wires).
        public var releaseOnClose: Bool
        /// What the log calls the inputs as a group: "inputs", "panel inputs".
        public var groupTitle: String

        public init(debounceMs: Double, retryMs: Double = 5000, releaseOnClose: Bool = false, groupTitle: String = "inputs") {
            self.debounceMs = debounceMs
            self.retryMs = retryMs
            self.releaseOnClose = releaseOnClose
            self.groupTitle = groupTitle
        }
    }

    public struct Snapshot: Sendable {
        /// The debounced level of each input that is open (true: active).
        public var levels: [String: Bool] = [:]
        /// The names of the inputs held now.
        public var open: [String] = []
        public var error: String?
        /// When `error` was last set (wall clock, ns).
        public var lastErrorAt: Int64?
    }

    private let state = PosixMutex(Snapshot())
    private let worker: PosixMutex<Worker<Never>?> = PosixMutex(nil)
    private let logger: Logger
    private let prefix: String

    /// Starts the thread. `prefix` starts each log line ("osdp").
    public init(prefix: String, chip: String, inputs: [Input], runtime: Runtime, calls: any GpiodCalls, logger: Logger,
                onChange: @escaping @Sendable (_ name: String, _ active: Bool) -> Void) throws(SystemError) {
        self.logger = logger
        self.prefix = prefix
        let t = try Worker<Never>(name: "\(prefix)-inputs", capacity: 1, overflow: .refuse) { [self] inbox in
            self.run(inbox, chip: chip, specs: inputs, runtime: runtime, calls: calls, onChange: onChange)
        }
        worker.withLock { $0 = t }
    }

    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Stops the thread (within its 50 ms wait slice) and releases the lines. Returns by `deadline`.
    public func close(deadline: MonotonicInstant) {
        guard let worker = worker.withLock({ $0 }), !worker.isStopping else { return }
        if !worker.stop(deadline: deadline.adding(milliseconds: 100)) {
            logger.error("\(prefix): the input thread did not stop by the close deadline")
        }
    }

    deinit { close(deadline: MonotonicInstant.now().adding(milliseconds: 500)) }

    private struct Line {
        let input: Input
        var request: LineRequest?
        var title = ""
        var stable = false
        var lastEdge: UInt64?
        var error: GPIOError?
    }

    private func run(_ inbox: WorkerInbox<Never>, chip chipText: String, specs: [Input], runtime: Runtime, calls: any GpiodCalls,
                     onChange: @Sendable (String, Bool) -> Void) {
        var lines = specs.map { Line(input: $0) }
        var chip: GPIOChip?
        var nextRetry: UInt64 = 0
        let retryNs = UInt64(max(1, runtime.retryMs)) * 1_000_000
        let debounceNs = UInt64(max(0, runtime.debounceMs) * 1_000_000)
        let sliceNs: UInt64 = 50_000_000
        func now() -> UInt64 { MonotonicInstant.now().nanoseconds }

        func emit(_ i: Int, active: Bool) {
            lines[i].stable = active
            let name = lines[i].input.name
            state.withLock { $0.levels[name] = active }
            logger.info("\(prefix): \(lines[i].input.title) \(lines[i].title) \(active ? "active" : "released")")
            onChange(name, active)
        }

        func publish() {
            let open = lines.filter { $0.request != nil }.map(\.input.name)
            let errors = lines.compactMap { $0.error?.message }
            state.withLock { s in
                s.open = open
                s.error = errors.isEmpty ? nil : errors.joined(separator: "; ")
                if !errors.isEmpty { s.lastErrorAt = WallClock.nowNanoseconds() }
            }
        }

        func closeAll(reason: String?) {
            for i in lines.indices where lines[i].request != nil {
                lines[i].request?.release()
                lines[i].request = nil
                if runtime.releaseOnClose && lines[i].stable { emit(i, active: false) }
                lines[i].lastEdge = nil
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

        func openMissing(at t: UInt64) {
            if chip == nil {
                switch GPIOChip.open(chipText, calls: calls) {
                case .success(let c): chip = c
                case .failure(let e):
                    state.withLock { s in
                        s.error = e.message
                        s.lastErrorAt = WallClock.nowNanoseconds()
                    }
                    logger.error("\(prefix): \(runtime.groupTitle): \(e.message); retrying every \(Int(runtime.retryMs)) ms", rateLimitKey: "\(prefix):inputs")
                    nextRetry = t + retryNs
                    return
                }
            }
            guard let c = chip else { return }
            var failed = false
            for i in lines.indices where lines[i].request == nil {
                let input = lines[i].input
                let config = LineRequest.Config(purpose: "the " + input.title, lines: [.init(input.line, flag: "--\(input.option)")],
                                                direction: .bothEdges, activeLow: input.activeLow)
                switch c.request(config) {
                case .success(let request):
                    lines[i].request = request
                    lines[i].title = request.title
                    lines[i].error = nil
                    logger.info("\(prefix): \(input.title) on \(request.title), active \(input.activeLow ? "low" : "high")")
                    // Idle is the state assumed at start: only a level that differs from the last one
                    // reported (inactive at first) is reported.
                    let known = lines[i].stable
                    state.withLock { $0.levels[input.name] = known }
                    switch request.getValue() {
                    case .success(let v): if (v != 0) != known { emit(i, active: v != 0) }
                    case .failure(let e): logger.error("\(prefix): reading \(input.title) failed: \(e)")
                    }
                case .failure(let e):
                    failed = true
                    lines[i].error = e
                    logger.error("\(prefix): \(e.message); retrying every \(Int(runtime.retryMs)) ms", rateLimitKey: "\(prefix):in:\(input.name)")
                }
            }
            publish()
            if failed { nextRetry = t + retryNs }
        }

        while !inbox.isStopping {
            let t = now()
            if lines.contains(where: { $0.request == nil }) && t >= nextRetry { openMissing(at: t) }
            let requests = lines.compactMap(\.request)
            guard !requests.isEmpty else {
                sleepThread(milliseconds: Double(min(sliceNs, max(1_000_000, nextRetry > t ? nextRetry - t : 0))) / 1e6)
                continue
            }
            var wait = sliceNs
            for line in lines { if let e = line.lastEdge { wait = min(wait, e + debounceNs > t ? e + debounceNs - t : 0) } }
            switch LineRequest.waitEdgeEvents(requests, timeoutNanoseconds: wait) {
            case .success(let ready):
                let seen = now()
                for r in ready {
                    let request = requests[r]
                    guard let i = lines.firstIndex(where: { $0.request === request }) else { continue }
                    // Drain what is pending (the kernel keeps at most 16 events per line).
                    var drained = 0
                    repeat {
                        guard case .success = request.readEdgeEvent() else { break }
                        drained += 1
                    } while drained < 16 && ((try? request.waitEdgeEvents(timeoutNanoseconds: 0).get()) == true)
                    lines[i].lastEdge = seen
                }
            case .failure(let e):
                logger.error("\(prefix): \(runtime.groupTitle): waiting for edges failed: \(e); closing them, retrying every \(Int(runtime.retryMs)) ms",
                             rateLimitKey: "\(prefix):inputs")
                closeAll(reason: "waiting for edges failed: \(e)")
                nextRetry = now() + retryNs
                continue
            }
            let after = now()
            for i in lines.indices {
                guard let edge = lines[i].lastEdge, after >= edge + debounceNs, let request = lines[i].request else { continue }
                lines[i].lastEdge = nil
                switch request.getValue() {
                case .success(let v):
                    if (v != 0) != lines[i].stable { emit(i, active: v != 0) }
                case .failure(let e):
                    logger.error("\(prefix): reading \(lines[i].input.title) failed: \(e)", rateLimitKey: "\(prefix):inputs")
                    if e.meansDeviceGone {
                        closeAll(reason: "reading \(lines[i].title) failed: \(e)")
                        nextRetry = now() + retryNs
                        break
                    }
                }
            }
        }
        closeAll(reason: nil)
    }
}
