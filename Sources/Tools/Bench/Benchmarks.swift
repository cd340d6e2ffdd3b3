import Core
import Soak
import Debounce
import Decoding
import Dispatch
import Feedback
import Stdout
import Pipeline
import GPIO
import MemoryGPIO
import Platform
import Serial
#if canImport(Glibc)
import Glibc
import Settings
#endif

/// The measurements behind `scangate bench`. Each compares two things measured in the same run on the
/// same machine, so the ratios hold on a noisy shared machine where absolute times do not.
public struct Benchmarks {
    public struct Options: Sendable {
        /// Frames for the memory run (RSS growth).
        public var memoryFrames = 100_000
        public var rounds = 3
        public var progress: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    let options: Options
    let decoderSettings: DecoderSettings
    let quiet = Logger(level: .error)

    public init(options: Options, decoderSettings: DecoderSettings = DecoderSettings()) {
        self.options = options
        self.decoderSettings = decoderSettings
    }

    var ungated: DecoderSettings {
        var s = decoderSettings
        s.idleRescanFrames = 0
        return s
    }

    func devNull() -> FileDescriptor {
        FileDescriptor(rawValue: open("/dev/null", O_WRONLY | O_CLOEXEC))
    }

    // MARK: throughput

    public struct Throughput: Sendable {
        public var bareFPS: Double
        public var daemonFPS: Double
        public var stages: StageTimes
        public var dropped: UInt64
        public var ratio: Double { daemonFPS / bareFPS }
    }

    /// The whole daemon (handoff → decode → debounce → stdout JSON to /dev/null, --fast) against a bare
    /// loop calling zbar on the same frames with the same settings. Gating is off in both, so they do
    /// the same decoding work; best of `rounds` alternating runs each.
    /// `alsoReportingTo`: more report outputs next to stdout (the MQTT bench's connected output).
    /// `liveView`: the pipeline feeds it as the daemon's does (the preview bench asks it for snapshots).
    public func throughput(frames: [Frame], alsoReportingTo extra: [any ReportOutput] = [], liveView: LiveView? = nil) throws -> Throughput {
        var bestBare = Double.infinity, bestDaemon = Double.infinity
        var stages = StageTimes()
        var dropped: UInt64 = 0
        let null = devNull()
        defer { _ = null.close() }
        for round in 0..<options.rounds {
            options.progress("throughput round \(round + 1)/\(options.rounds)")
            let bare = try StreamDecoder.bare(settings: ungated)
            let t0 = BenchClock.wallMilliseconds()
            var found = 0
            for f in frames { found += bare.decode(f).count }
            bestBare = min(bestBare, BenchClock.wallMilliseconds() - t0)

            var out = OutputSettings()
            out.format = .json
            let stdout = StdoutOutput(settings: out, logger: quiet, fd: null)
            let pipeline = Pipeline(source: MemoryFrameSource(frames: frames), decoder: try StreamDecoder.bare(settings: ungated),
                                    debouncer: Debouncer(settings: DebounceSettings()),
                                    dispatcher: ReadDispatcher(reports: [stdout] + extra), logger: quiet, liveView: liveView)
            let t1 = BenchClock.wallMilliseconds()
            _ = pipeline.run()
            let daemon = BenchClock.wallMilliseconds() - t1
            stdout.close(deadline: .now().adding(milliseconds: 2000))
            if daemon < bestDaemon {
                bestDaemon = daemon
                stages = pipeline.stats.stageTimes
                dropped = pipeline.droppedFrames
            }
            _ = found
        }
        let n = Double(frames.count)
        return Throughput(bareFPS: n / bestBare * 1000, daemonFPS: n / bestDaemon * 1000, stages: stages, dropped: dropped)
    }

    // MARK: idle cost

    public struct Idle: Sendable {
        public var fullPassMs: Double
        public var gatedMs: Double
        public var ratio: Double { gatedMs / fullPassMs }
    }

    /// CPU time per frame on a static scene: one full zbar pass (the baseline the target was set against)
    /// vs the gated decoder the daemon runs (zxing by default, whose own full pass costs about a fifth
    /// of zbar's: against it the gate's fixed ~0.3-0.6 ms is a fifth, not a tenth).
    public func idleCost(frames: [Frame]) throws -> Idle {
        options.progress("idle cost")
        var bestFull = Double.infinity, bestGated = Double.infinity
        for _ in 0..<options.rounds {
            var zbarSettings = ungated
            zbarSettings.engine = .zbar
            zbarSettings.symbologies = ungated.zbarSymbologies.isEmpty ? [.qr] : ungated.zbarSymbologies
            let full = try ZbarDecoder(settings: zbarSettings)
            let c0 = BenchClock.threadCPUMilliseconds()
            for f in frames { _ = full.decode(f) }
            bestFull = min(bestFull, (BenchClock.threadCPUMilliseconds() - c0) / Double(frames.count))

            let gated = try StreamDecoder.make(settings: decoderSettings)
            let c1 = BenchClock.threadCPUMilliseconds()
            for f in frames { _ = gated.decode(f) }
            bestGated = min(bestGated, (BenchClock.threadCPUMilliseconds() - c1) / Double(frames.count))
        }
        return Idle(fullPassMs: bestFull, gatedMs: bestGated)
    }

    // MARK: first readable frame

    /// With gating on, a code appearing in an idle scene is read in the first frame it is in view.
    /// Returns (read on the first frame, cases).
    public func firstFrameReads() throws -> (Int, Int) {
        options.progress("first-frame reads")
        let variants = [
            "module 2 at 40,40", "module 3 at 300,200", "module 4", "module 3 rotate 20", "module 5 at 10,10",
            "module 2 at 500,360", "module 3 contrast 0.5", "module 4 blur 1",
        ]
        var onFirst = 0
        for (i, v) in variants.enumerated() {
            let text = "fps 15\nframes 70\nnoise 3\ncode qr \"FIRST-\(i)\" frames 37-69 \(v)\n"
            let frames = try BenchFrames.render(text, name: "first-frame-\(i)")
            let collected = CollectingOutput()
            let pipeline = Pipeline(source: MemoryFrameSource(frames: frames), decoder: try StreamDecoder.make(settings: decoderSettings),
                                    debouncer: Debouncer(settings: DebounceSettings()),
                                    dispatcher: ReadDispatcher(reports: [collected]), logger: quiet)
            _ = pipeline.run()
            if collected.frames.first == 37 { onFirst += 1 }
        }
        return (onFirst, variants.count)
    }

    // MARK: latency

    public struct Latency: Sendable {
        /// Frame dequeue → bytes of the frame arrived at the far end of the serial line (a real pty).
        public var serial: Percentiles
        /// Frame dequeue → the green LED line set (gpiod_line_set_value through the GPIO seam).
        public var gpio: Percentiles
        /// max(serial, GPIO) beyond that frame's own decode time.
        public var excess: Percentiles
        public var events: Int
        public var serialFrames: Int
        public var gpioSets: Int
        public var dropped: UInt64
    }

    /// A live source at 30 fps with codes coming and going (hold-off 0, so every frame with a code is an
    /// event; LED and buzz pulses of 5 ms so each event sets the line again), with the real serial output
    /// writing to a pseudo-terminal and the real GPIO feedback driving an in-memory chip.
    public func latency(frames: [Frame]) throws -> Latency {
        options.progress("latency")
        let decodeTimes = DecodeTimes()
        let probe = LatencyProbe(decodeTimes: decodeTimes)
        var debounce = DebounceSettings()
        debounce.holdOffMs = 0
        let null = devNull()
        defer { _ = null.close() }
        var out = OutputSettings()
        out.format = .json
        let peer = try TimedSerialPeer()
        defer { peer.close() }
        var serialSettings = SerialSettings()
        serialSettings.path = peer.name
        serialSettings.baud = .default9600
        let hub = FeedbackHub(settings: FeedbackSettings(), logger: quiet)
        let status = StatusBoard(logger: quiet, observers: [hub])
        let context = OutputContext(logger: quiet, feedback: hub, links: status)
        let serial = try SerialOutput.make(settings: serialSettings, context: context)
        // The bench has no GPIO hardware: it measures ScanGate's own path up to the gpiod call.
        let gpiod = MemoryGpiod.single(lines: 8)
        var gpioSettings = GPIOSettings()
        gpioSettings.chip = MemoryGpiod.label
        gpioSettings.lines = [.green: .name("GPIO1"), .buzzer: .name("GPIO2")]
        gpioSettings.goodLedMs = 5
        gpioSettings.goodBuzzMs = 5
        guard let gpio = GPIOFeedback.make(settings: gpioSettings, logger: quiet, calls: gpiod, clock: SystemFeedbackClock()) else {
            throw UsageError("bench: no GPIO feedback")
        }
        hub.install(gpio, slot: "gpio")
        let stdout = StdoutOutput(settings: out, logger: quiet, fd: null)
        let dispatcher = ReadDispatcher(doors: [serial], reports: [stdout, probe], feedback: hub)
        let pipeline = Pipeline(source: MemoryFrameSource(frames: frames, live: true, paceMs: 1000.0 / 30),
                                decoder: try ZbarDecoder(settings: ungated), debouncer: Debouncer(settings: debounce),
                                dispatcher: dispatcher, status: status, logger: quiet,
                                onFrameDecoded: { f, ms in decodeTimes.record(f.sequence, ms) })
        _ = pipeline.run()
        let closeBy = MonotonicInstant.now().adding(milliseconds: 2000)
        serial.close(deadline: closeBy)
        stdout.close(deadline: closeBy)
        hub.close(deadline: closeBy)
        let events = probe.events
        let arrivals = peer.frameArrivals
        let greenOn = gpiod.changes.filter { $0.offsets == [1] && $0.values == [1] }.map { MonotonicInstant(nanoseconds: $0.atNanoseconds) }
        var serialMs: [Double] = [], gpioMs: [Double] = [], excess: [Double] = []
        for (i, e) in events.enumerated() {
            let s = i < arrivals.count ? arrivals[i].milliseconds(since: e.dequeuedAt) : nil
            let g = i < greenOn.count ? greenOn[i].milliseconds(since: e.dequeuedAt) : nil
            if let s { serialMs.append(s) }
            if let g { gpioMs.append(g) }
            if let s, let g { excess.append(max(s, g) - e.decodeMs) }
        }
        return Latency(serial: Percentiles(serialMs), gpio: Percentiles(gpioMs), excess: Percentiles(excess),
                       events: events.count, serialFrames: arrivals.count, gpioSets: greenOn.count,
                       dropped: pipeline.droppedFrames)
    }

    // MARK: memory

    public struct Memory: Sendable {
        public var frames: Int
        public var steadyMiB: Double
        public var growthMiB: Double
        public var descriptorsFirst: Int
        public var descriptorsLast: Int
        public var reported: Int
        public var expected: Int
        public var seconds: Double
    }

    /// `memoryFrames` frames of the traffic scenario (four appearances per 300 frames) through
    /// `scangate run` as users run it (a child process, --fast, gated decoding, JSON to a pipe), with
    /// its RSS and descriptors sampled from /proc. Steady RSS: the largest sample after the first 20%
    /// of the run; growth and descriptors: the samples at 90% against those at 20%.
    public func memory(executable: String, scenarioPath: String) throws -> Memory {
        let frames = max(300, options.memoryFrames / 300 * 300)
        let progress = options.progress
        let result = try DaemonProcess.run(executable, ["run", "--camera", "sim:" + scenarioPath, "--fast", "--loop",
                                                        "--max-frames", String(frames), "--log-level", "warning"],
                                           progress: { t in progress("memory: \(Int(t)) s, \(frames) frames") })
        let samples = result.samples
        guard samples.count >= 5, result.exitStatus == 0 else {
            throw UsageError("bench: the memory run of scangate ended with status \(result.exitStatus) after \(samples.count) samples")
        }
        let from = samples.count / 5
        let (earlyWindow, lateWindow) = DaemonProcess.steadyWindows(samples)
        let early = earlyWindow.map(\.residentMiB)
        let late = lateWindow.map(\.residentMiB)
        let mean = { (v: [Double]) in v.reduce(0, +) / Double(max(1, v.count)) }
        return Memory(frames: frames, steadyMiB: samples[from...].map(\.residentMiB).max() ?? .nan,
                      growthMiB: mean(late) - mean(early), descriptorsFirst: earlyWindow.first?.descriptors ?? -1,
                      descriptorsLast: lateWindow.last?.descriptors ?? -1, reported: result.eventLines,
                      expected: frames / 300 * 4, seconds: result.seconds)
    }
}

/// Collects event frame numbers (first-frame check).
final class CollectingOutput: ReportOutput, @unchecked Sendable {
    let name = "collect"
    private let lock = PosixMutex<[UInt64]>([])
    func report(_ event: ReadEvent) { lock.withLock { $0.append(event.frame) } }
    func close(deadline: MonotonicInstant) {}
    var frames: [UInt64] { lock.withLock { $0 } }
}

/// Records each event's dequeue time and its frame's decode time, in order.
final class LatencyProbe: ReportOutput, @unchecked Sendable {
    struct Event { var dequeuedAt: MonotonicInstant; var decodeMs: Double }
    let name = "latency-probe"
    private let decodeTimes: DecodeTimes
    private let lock = PosixMutex<[Event]>([])
    init(decodeTimes: DecodeTimes) { self.decodeTimes = decodeTimes }
    func report(_ event: ReadEvent) {
        let decode = decodeTimes.take(event.frame) ?? 0
        lock.withLock { $0.append(Event(dequeuedAt: event.dequeuedAt, decodeMs: decode)) }
    }
    func close(deadline: MonotonicInstant) {}
    var events: [Event] { lock.withLock { $0 } }
}

/// Decode time of each frame, written on the decode queue and read by the probe.
final class DecodeTimes: Sendable {
    private let times = PosixMutex<[UInt64: Double]>([:])
    func record(_ frame: UInt64, _ ms: Double) { times.withLock { $0[frame] = ms } }
    func take(_ frame: UInt64) -> Double? { times.withLock { $0.removeValue(forKey: frame) } }
}
