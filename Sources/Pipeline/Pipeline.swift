import Core
import Debounce
import Decoding
import Dispatch
import Platform
import Synchronization

/// Source → capture thread → newest-frame handoff → decode queue (decoder, debouncer) → the dispatcher
/// (policies, door outputs, report outputs, feedback). `run()` blocks until the source ends, `stop()` is
/// called, or `--oneshot` is satisfied. The pipeline owns none of the outputs: the daemon builds them
/// once and hands each run a dispatcher over them. Each run has its own stop token, so a source kept open
/// across a reload starts the next run fresh.
public final class Pipeline: @unchecked Sendable {
    public struct Options: Sendable {
        /// Stop after the first accepted code.
        public var oneshot = false
        /// Stop after this many captured frames (0: no limit).
        public var maxFrames: UInt64 = 0
        /// Reconnect backoff for a lost camera: first and longest wait.
        public var reconnectInitialMs: Double = 250
        public var reconnectMaxMs: Double = 2000
        /// The source is already open (kept open across a config reload).
        public var sourceAlreadyOpen = false
        /// The `seq` of the first event (a reload continues the numbering).
        public var firstSeq: UInt64 = 1
        public init() {}
    }

    public enum Outcome: Equatable, Sendable {
        /// The source ended, max-frames or oneshot was reached, or stop() was called.
        case finished
        /// The source cannot work (bad file, unsupported format): exit 2.
        case badInput(String)
        /// A non-reconnectable source failed.
        case failed(String)
    }

    public let stats = PipelineStats()
    private let source: FrameSource
    // Confined to the decode queue (the handoff's queue):
    private let decoder: Decoder
    private var debouncer: Debouncer
    private var nextSeq: UInt64 = 1

    private let dispatcher: ReadDispatcher
    private let status: StatusBoard?
    private let logger: Logger
    private let options: Options
    private let stopToken = StopToken()
    private let pausedFlag = Atomic<Bool>(false)
    private let capture = PosixMutex<CaptureState>(.starting)
    /// Called on the decode queue after each decoded frame (watchdog progress, bench).
    private let onFrameDecoded: (@Sendable (Frame, Double) -> Void)?
    /// Called once when the source first delivers a frame (READY=1).
    private let onFirstFrame: (@Sendable () -> Void)?
    /// camera-tamper: confined to the capture thread, which shows it every frame (paused or not).
    private let sceneWatch: SceneWatch?
    /// `status --snapshot`: fed the newest frame (capture thread) and the codes of the newest decoded one.
    private let liveView: LiveView?
    /// Confined to the decode queue: the payloads shown for the codes in view.
    private var shownPayloads = ShownPayloads()
    private var handoff: FrameHandoff!

    public init(source: FrameSource, decoder: Decoder, debouncer: Debouncer, dispatcher: ReadDispatcher,
                status: StatusBoard? = nil, logger: Logger, options: Options = Options(),
                sceneWatch: SceneWatch? = nil, liveView: LiveView? = nil,
                onFirstFrame: (@Sendable () -> Void)? = nil,
                onFrameDecoded: (@Sendable (Frame, Double) -> Void)? = nil) {
        self.source = source
        self.decoder = decoder
        self.debouncer = debouncer
        self.dispatcher = dispatcher
        self.status = status
        self.logger = logger
        self.options = options
        self.onFirstFrame = onFirstFrame
        self.sceneWatch = sceneWatch
        self.liveView = liveView
        self.onFrameDecoded = onFrameDecoded
        self.nextSeq = options.firstSeq
        self.handoff = FrameHandoff(live: source.isLive) { [unowned self] frame in self.decodeStep(frame) }
    }

    public var droppedFrames: UInt64 { handoff.droppedCount }
    /// After run(): the next event's seq and the debouncer's state, to carry over a config reload.
    public var carryOver: (nextSeq: UInt64, debouncer: Debouncer) { handoff.queue.sync { (nextSeq, debouncer) } }
    public var currentCapture: CaptureState { capture.withLock { $0 } }

    /// Asks the pipeline to finish (oneshot). Safe from any thread.
    public func stop() { stopToken.stop() }
    /// Stops at once for SIGTERM/SIGINT: feedback in progress is cut short, outputs go inactive.
    public func stopForSignal() {
        signalled.store(true, ordering: .relaxed)
        stop()
    }
    private let signalled = Atomic<Bool>(false)
    /// Stops for a config reload (SIGHUP): the source stays open for the next pipeline.
    public func stopForReload() {
        keepSource.store(true, ordering: .relaxed)
        stopForSignal()
    }
    private let keepSource = Atomic<Bool>(false)
    private let sourceOpenAtEnd = Atomic<Bool>(false)
    /// After run(): the source was left open (stopForReload) and can be handed to the next pipeline.
    public var sourceLeftOpen: Bool { sourceOpenAtEnd.load(ordering: .relaxed) }
    public var isStopping: Bool { stopToken.isStopped }
    /// Stopped by a signal (SIGTERM, SIGINT, SIGHUP) rather than by its own end.
    public var wasSignalled: Bool { signalled.load(ordering: .relaxed) }

    /// Pause (SIGUSR1): frames are still captured (the camera keeps streaming) but not decoded.
    public func setPaused(_ paused: Bool) {
        pausedFlag.store(paused, ordering: .relaxed)
        setStatus(paused ? .paused : .scanning)
        logger.notice(paused ? "paused: not decoding until resumed (SIGUSR1 or an MQTT resume)" : "resumed: scanning")
    }
    public var isPaused: Bool { pausedFlag.load(ordering: .relaxed) }

    /// Runs the capture loop on a dedicated capture thread, waits for it, and lets the decode queue
    /// finish the frames handed to it. The outputs stay open: they belong to the daemon.
    public func run() -> Outcome {
        let result = PosixMutex<Outcome>(.finished)
        do {
            let thread = try PosixThread(name: "scangate-capture") { [self] in
                let outcome = captureLoop()
                result.withLock { $0 = outcome }
            }
            thread.join()
        } catch {
            return .failed("cannot start the capture thread: \(error)")
        }
        handoff.drain()
        return result.withLock { $0 }
    }

    // MARK: capture thread

    private func captureLoop() -> Outcome {
        var opened = options.sourceAlreadyOpen
        var firstFrameSeen = false
        if opened { setStatus(isPaused ? .paused : .scanning) }
        defer {
            if opened && keepSource.load(ordering: .relaxed) {
                sourceOpenAtEnd.store(true, ordering: .relaxed)
            } else if opened {
                source.close()
            }
        }
        var backoffMs = options.reconnectInitialMs
        while !isStopping {
            if !opened {
                do {
                    try source.open()
                    opened = true
                    backoffMs = options.reconnectInitialMs
                    if currentCapture == .cameraLost { logger.notice("camera back: \(source.name)") }
                    setStatus(isPaused ? .paused : .scanning)
                } catch let error as CaptureError where source.isReconnectable {
                    if case .badInput(let message) = error { return .badInput(message) }
                    // --oneshot is a check run by a person: a camera missing at start is its answer.
                    if options.oneshot && !firstFrameSeen { return .failed("\(error.description) (--oneshot does not wait for the camera)") }
                    reportLost(error.description)
                    waitBackoff(&backoffMs)
                    continue
                } catch let error as UsageError {
                    return .badInput(error.message)
                } catch {
                    if source.isReconnectable {
                        if options.oneshot && !firstFrameSeen { return .failed("\(error) (--oneshot does not wait for the camera)") }
                        reportLost("\(error)")
                        waitBackoff(&backoffMs)
                        continue
                    }
                    return .badInput("\(error)")
                }
            }
            let frame: Frame?
            let captureStart = MonotonicInstant.now()
            do {
                frame = try source.nextFrame(until: stopToken)
            } catch let error as CaptureError {
                if case .badInput(let message) = error { return .badInput(message) }
                guard source.isReconnectable else { return .failed(error.description) }
                source.close()
                opened = false
                reportLost(error.description)
                waitBackoff(&backoffMs)
                continue
            } catch let error as UsageError {
                return .badInput(error.message)
            } catch {
                return .failed("\(source.name): \(error)")
            }
            guard let frame else { return .finished }
            if !firstFrameSeen {
                firstFrameSeen = true
                onFirstFrame?()
            }
            stats.frameCaptured(captureNanoseconds: MonotonicInstant.now().nanoseconds &- captureStart.nanoseconds)
            sceneWatch?.observe(frame)
            liveView?.captured(frame)
            if !isPaused { handoff.offer(frame) }
            if options.maxFrames > 0 && stats.captured >= options.maxFrames { return .finished }
        }
        return .finished
    }

    private func reportLost(_ reason: String) {
        if currentCapture != .cameraLost {
            stats.cameraLost()
            setStatus(.cameraLost)
        }
        logger.error("\(reason); retrying", rateLimitKey: "camera-lost")
    }

    /// Waits before the next reopen, waking early on stop.
    private func waitBackoff(_ backoffMs: inout Double) {
        let deadline = MonotonicInstant.now().adding(milliseconds: backoffMs)
        while !isStopping && MonotonicInstant.now() < deadline { sleepThread(milliseconds: 20) }
        backoffMs = min(backoffMs * 2, options.reconnectMaxMs)
    }

    private func setStatus(_ new: CaptureState) {
        let changed = capture.withLock { s in
            guard s != new else { return false }
            s = new
            return true
        }
        if changed { status?.setCapture(new) }
    }

    // MARK: decode queue

    private func decodeStep(_ frame: Frame) {
        if isStopping && options.oneshot { return }
        let started = MonotonicInstant.now()
        stats.stageTimed(\.handoff, started.nanoseconds &- frame.dequeuedAt.nanoseconds)
        let symbols = decoder.decode(frame)
        let decodedAt = MonotonicInstant.now()
        stats.frameDecoded(nanoseconds: decodedAt.nanoseconds - started.nanoseconds)
        stats.stageTimed(\.decode, decodedAt.nanoseconds - started.nanoseconds)
        onFrameDecoded?(frame, decodedAt.milliseconds(since: started))
        let toReport = debouncer.process(time: frame.captureTime, symbols: symbols)
        stats.stageTimed(\.debounce, MonotonicInstant.now().nanoseconds &- decodedAt.nanoseconds)
        var reported: [(symbol: DecodedSymbol, event: ReadEvent)] = []
        defer {
            if let liveView { liveView.decoded(frame: frame.sequence, codes: shownPayloads.codes(for: symbols, reported: reported)) }
        }
        for symbol in toReport {
            let read = ReadEvent(seq: nextSeq, wallTimeNanoseconds: WallClock.nowNanoseconds(), symbol: symbol,
                                 frame: frame.sequence, dequeuedAt: frame.dequeuedAt, emittedAt: .now())
            nextSeq += 1
            let outputStart = MonotonicInstant.now()
            let event = dispatcher.dispatch(read)
            if liveView != nil { reported.append((symbol, event)) }
            stats.stageTimed(\.outputs, MonotonicInstant.now().nanoseconds &- outputStart.nanoseconds)
            stats.codeReported(accepted: event.verdict.isAccepted)
            if options.oneshot && event.verdict.isAccepted {
                stop()
                return
            }
        }
    }
}
