import Core
import MemoryGPIO
import Platform
import Wiegand
import Settings

/// `scangate bench`: the Wiegand transmitter's achieved timing. The real `WiegandOutput` (its thread,
/// queue, real-time set-up and busy-waits) sends frames on an in-memory chip that stamps every line
/// change with CLOCK_MONOTONIC, so the figures are ScanGate's own timing up to the gpiod call (the
/// kernel's part is measured on gpio-sim in the hardware-in-the-loop suite).
public struct WiegandBench: Sendable {
    public struct Figures: Sendable, CustomStringConvertible {
        /// Pulse widths (target `pulseUs`) and bit intervals, start to start (target `intervalUs`).
        public var pulses: WiegandTimingStats?
        public var intervals: WiegandTimingStats?
        public var framesSent: Int
        public var framesExpected: Int
        /// Pulses outside 20-100 us and intervals outside 200 us-20 ms (the SIA windows).
        public var pulsesOutOfSpec: Int
        public var intervalsOutOfSpec: Int
        /// The transmitter's health line (real-time scheduling and memory lock, as granted here).
        public var detail: String

        public var description: String {
            "Wiegand \(framesSent)/\(framesExpected) frames: pulse \(pulses.map(\.description) ?? "none") "
                + "(\(pulsesOutOfSpec) outside 20-100 us), interval \(intervals.map(\.description) ?? "none") "
                + "(\(intervalsOutOfSpec) outside 200-20000 us); \(detail)"
        }
    }

    public var frames: Int
    public var settings: WiegandSettings
    public var realtime: Bool
    /// The transmitter's stall limit (nil: the real one). A test of the bench sets it long, so a loaded
    /// test machine cannot cut a frame; `scangate bench` keeps the real limit and reports what it cuts.
    public var stallLimitMs: Int?

    /// `frames` 26-bit frames at the defaults (50 us pulses, 2000 us intervals), 50 ms apart.
    public init(frames: Int = 20, realtime: Bool = true) {
        var s = WiegandSettings()
        s.chip = MemoryGpiod.label
        s.d0 = .name("GPIO0")
        s.d1 = .name("GPIO1")
        s.frameGapMs = 50
        self.frames = max(1, frames)
        self.settings = s
        self.realtime = realtime
    }

    /// Sends the frames (each waits for the previous, so the queue never refuses one) and measures.
    public func run(logger: Logger = Logger(level: .error)) throws -> Figures {
        let chip = MemoryGpiod.single()
        var runtime = WiegandRuntime()
        runtime.realtime = realtime
        runtime.queueCapacity = 1
        runtime.stallLimitMs = stallLimitMs
        let output = try WiegandOutput(settings: settings, logger: logger, feedback: nil, calls: chip, runtime: runtime)
        defer { output.close(deadline: .now().adding(milliseconds: 2000)) }
        let perFrameMs = 26 * settings.intervalUs / 1000 + settings.frameGapMs + 1000
        var expected: [String] = []
        for i in 0..<frames {
            // Different numbers, so every bit pattern is exercised; facility 1-250, card 0-65535.
            guard let frame = WiegandDoctor.testFrame(for: settings, card: UInt64(i) &* 2654435761 % 65536,
                                                      facility: UInt64(1 + i % 250)) else { continue }
            guard output.send(frame).isTaken else { continue }
            expected.append(frame.bits.description)
            output.waitUntilSent(timeoutMs: perFrameMs)
        }
        let changes = chip.changes.map { WiegandTimingReport.Change(atNanoseconds: $0.atNanoseconds, values: $0.values) }
        let report = WiegandTimingReport(changes: changes, frameSplitMs: Double(settings.frameGapMs) / 2)
        let sent = zip(report.frames, expected).filter { $0 == $1 }.count
        let pulseUs = WiegandSettings.pulseUsRange, intervalUs = WiegandSettings.intervalUsRange
        func outside(_ samples: [Double], _ r: ClosedRange<Int>) -> Int {
            samples.filter { $0 < Double(r.lowerBound) || $0 > Double(r.upperBound) }.count
        }
        let (pulses, intervals) = Self.samples(changes)
        return Figures(pulses: report.pulses, intervals: report.intervals, framesSent: sent, framesExpected: frames,
                       pulsesOutOfSpec: outside(pulses, pulseUs), intervalsOutOfSpec: outside(intervals, intervalUs),
                       detail: output.health.detail)
    }

    /// The raw pulse and interval samples (us) of a recording, frames split at 25 ms of idle.
    static func samples(_ changes: [WiegandTimingReport.Change]) -> ([Double], [Double]) {
        var pulses: [Double] = [], intervals: [Double] = []
        var start: UInt64?, lastStart: UInt64?
        for c in changes {
            let active = c.values.contains { $0 != 0 }
            if let s = start {
                pulses.append(Double(c.atNanoseconds - s) / 1000)
                start = nil
            }
            guard active else { continue }
            if let l = lastStart, c.atNanoseconds - l < 25_000_000 { intervals.append(Double(c.atNanoseconds - l) / 1000) }
            lastStart = c.atNanoseconds
            start = c.atNanoseconds
        }
        return (pulses, intervals)
    }
}
