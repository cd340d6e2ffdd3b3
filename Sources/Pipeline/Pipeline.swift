import Core
import Debounce
import Decoding
import Dispatch
import Platform
import Synchronization

/// Source → capture thread → newest-frame handoff → decode queue (decoder, debouncer, payload policies)
/// → sinks. `run()` blocks until the source ends, `stop()` is called, or `--oneshot` is satisfied.
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

    private let policies: [PayloadPolicy]
    private let sinks: [EventSink]
    private let logger: Logger
    private let options: Options
    private let stopRequested = Atomic<Bool>(false)
    private let pausedFlag = Atomic<Bool>(false)
    private let status = Mutex<DaemonStatus>(.starting)
    /// Called on the decode queue after each decoded frame (watchdog progress, bench).
    private let onFrameDecoded: (@Sendable (Frame, Double) -> Void)?
    /// Called once when the source first delivers a frame (READY=1).
    private let onFirstFrame: (@Sendable () -> Void)?
    private var handoff: FrameHandoff!

    public init(source: FrameSource, decoder: Decoder, debouncer: Debouncer, policies: [PayloadPolicy] = [],
                sinks: [EventSink], logger: Logger, options: Options = Options(),
                onFirstFrame: (@Sendable () -> Void)? = nil,
                onFrameDecoded: (@Sendable (Frame, Double) -> Void)? = nil) {
        self.source = source
        self.decoder = decoder
        self.debouncer = debouncer
        self.policies = policies
        self.sinks = sinks
        self.logger = logger
        self.options = options
        self.onFirstFrame = onFirstFrame
        self.onFrameDecoded = onFrameDecoded
        self.nextSeq = options.firstSeq
        self.handoff = FrameHandoff(live: source.isLive) { [unowned self] frame in self.decodeStep(frame) }
    }

    public var droppedFrames: UInt64 { handoff.droppedCount }
    /// After run(): the next event's seq and the debouncer's state, to carry over a config reload.
    public var carryOver: (nextSeq: UInt64, debouncer: Debouncer) { handoff.queue.sync { (nextSeq, debouncer) } }
    public var currentStatus: DaemonStatus { status.withLock { $0 } }

    /// Asks the pipeline to finish (oneshot). Safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        source.interrupt()
    }
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
    public var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

    /// Pause (SIGUSR1): frames are still captured (the camera keeps streaming) but not decoded.
    public func setPaused(_ paused: Bool) {
        pausedFlag.store(paused, ordering: .relaxed)
        setStatus(paused ? .paused : .scanning)
        logger.notice(paused ? "paused: not decoding until SIGUSR1" : "resumed: scanning")
    }
    public var isPaused: Bool { pausedFlag.load(ordering: .relaxed) }

    /// Runs the capture loop on a dedicated capture thread and waits for it.
    public func run() -> Outcome {
        let result = Mutex<Outcome>(.finished)
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
        // Ending on its own (end of replay, --oneshot, --max-frames): let started feedback finish.
        if !signalled.load(ordering: .relaxed) {
            for sink in sinks { sink.finishPending(timeoutMilliseconds: 1500) }
        }
        setStatus(.stopping)
        // Closed side by side: shutdown takes as long as the slowest sink's bound, not their sum.
        let sinks = self.sinks
        DispatchQueue.concurrentPerform(iterations: sinks.count) { sinks[$0].close() }
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
                    if currentStatus == .cameraLost { logger.notice("camera back: \(source.name)") }
                    setStatus(isPaused ? .paused : .scanning)
                } catch let error as CaptureError where source.isReconnectable {
                    if case .badInput(let message) = error { return .badInput(message) }
                    reportLost(error.description)
                    waitBackoff(&backoffMs)
                    continue
                } catch let error as UsageError {
                    return .badInput(error.message)
                } catch {
                    if source.isReconnectable {
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
                frame = try source.nextFrame()
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
            if !isPaused { handoff.offer(frame) }
            if options.maxFrames > 0 && stats.captured >= options.maxFrames { return .finished }
        }
        return .finished
    }

    private func reportLost(_ reason: String) {
        if currentStatus != .cameraLost {
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

    private func setStatus(_ new: DaemonStatus) {
        let changed = status.withLock { s in
            guard s != new else { return false }
            s = new
            return true
        }
        if changed { for sink in sinks { sink.statusChanged(new) } }
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
        for symbol in toReport {
            let verdict = policies.lazy.map { $0.verdict(for: symbol) }.first { !$0.isAccepted } ?? .accepted
            let event = ReadEvent(seq: nextSeq, wallTimeNanoseconds: WallClock.nowNanoseconds(), symbol: symbol,
                                  frame: frame.sequence, dequeuedAt: frame.dequeuedAt, emittedAt: .now(),
                                  verdict: verdict)
            nextSeq += 1
            stats.codeReported(accepted: verdict.isAccepted)
            let sinkStart = MonotonicInstant.now()
            for sink in sinks { sink.handle(event) }
            stats.stageTimed(\.sinks, MonotonicInstant.now().nanoseconds &- sinkStart.nanoseconds)
            if options.oneshot && verdict.isAccepted {
                stop()
                return
            }
        }
    }
}
