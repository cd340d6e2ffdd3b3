import Core
import GPIO
import Platform

/// Min, p50, p99 and max of a set of durations, in microseconds.
public struct WiegandTimingStats: Equatable, Sendable, CustomStringConvertible {
    public var count: Int
    public var minUs: Double
    public var p50Us: Double
    public var p99Us: Double
    public var maxUs: Double

    /// nil for no samples. Percentiles by nearest rank.
    public init?(_ samples: [Double]) {
        guard !samples.isEmpty else { return nil }
        let s = samples.sorted()
        func rank(_ p: Double) -> Double { s[min(s.count - 1, max(0, Int((p * Double(s.count)).rounded(.up)) - 1))] }
        count = s.count
        minUs = s[0]
        p50Us = rank(0.50)
        p99Us = rank(0.99)
        maxUs = s[s.count - 1]
    }

    public var description: String {
        func f(_ v: Double) -> String { String(Int(v.rounded())) }
        return "min \(f(minUs)) p50 \(f(p50Us)) p99 \(f(p99Us)) max \(f(maxUs)) us (\(count))"
    }
}

/// What the lines did, from the transmitter's own calls: each `setValues` on D0/D1 with its
/// CLOCK_MONOTONIC time. A pulse runs from a set with one line active to the next set; an interval
/// from one pulse's start to the next pulse's start within a frame.
public struct WiegandTimingReport: Equatable, Sendable {
    public struct Change: Equatable, Sendable {
        public var atNanoseconds: UInt64
        /// Logical levels [D0, D1] (1 = pulse).
        public var values: [Int32]
        public init(atNanoseconds: UInt64, values: [Int32]) {
            self.atNanoseconds = atNanoseconds
            self.values = values
        }
    }

    public var pulses: WiegandTimingStats?
    public var intervals: WiegandTimingStats?
    /// The bits sent, frame by frame ("0" for a D0 pulse, "1" for D1), split where the lines were
    /// idle for longer than `frameSplitMs`.
    public var frames: [String]
    /// Changes where both lines were active at once (must be 0).
    public var bothActive: Int

    public init(changes: [Change], frameSplitMs: Double = 25) {
        var pulseUs: [Double] = [], intervalUs: [Double] = []
        var frames: [String] = [], current = ""
        var bothActive = 0
        var pulseStart: UInt64?, lastStart: UInt64?, lastEnd: UInt64?
        for c in changes {
            let d0 = c.values.first ?? 0, d1 = c.values.count > 1 ? c.values[1] : 0
            if d0 != 0 && d1 != 0 { bothActive += 1 }
            if let start = pulseStart {
                pulseUs.append(Double(c.atNanoseconds - min(c.atNanoseconds, start)) / 1000)
                pulseStart = nil
                lastEnd = c.atNanoseconds
            }
            guard d0 != 0 || d1 != 0 else { continue }
            if let end = lastEnd, Double(c.atNanoseconds - min(c.atNanoseconds, end)) / 1e6 > frameSplitMs, !current.isEmpty {
                frames.append(current)
                current = ""
                lastStart = nil
            }
            if let previous = lastStart { intervalUs.append(Double(c.atNanoseconds - min(c.atNanoseconds, previous)) / 1000) }
            lastStart = c.atNanoseconds
            pulseStart = c.atNanoseconds
            current += d1 != 0 ? "1" : "0"
        }
        if !current.isEmpty { frames.append(current) }
        self.pulses = WiegandTimingStats(pulseUs)
        self.intervals = WiegandTimingStats(intervalUs)
        self.frames = frames
        self.bothActive = bothActive
    }
}

/// An in-memory chip behind the bulk gpiod seam ("wiegand-memory", lines GPIO0...GPIO15) that stamps
/// every `setValues` with CLOCK_MONOTONIC: the bench (and doctor's tests) run the real transmitter on
/// it, which measures ScanGate's own timing up to the gpiod call. No edge events: inputs stay idle.
public final class WiegandMemoryChip: GpiodBulkCalls {
    public static let label = "wiegand-memory"
    private let changes = PosixMutex<[WiegandTimingReport.Change]>([])
    private let chip = GpiodChipHandle(address: 1)

    public init() {
        changes.withLock { $0.reserveCapacity(4096) }
    }

    /// Every set so far.
    public var recorded: [WiegandTimingReport.Change] { changes.withLock { $0 } }

    public func chipPaths() -> [String] { ["/dev/gpiochip-wiegand-memory"] }
    public func openChip(path: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    public func openChip(name: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    public func openChip(label: String) -> Result<GpiodChipHandle, Errno> {
        label == Self.label ? .success(chip) : .failure(.noSuchFile)
    }
    public func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> { .success(chip) }
    public func closeChip(_ chip: GpiodChipHandle) {}
    public func chipName(_ chip: GpiodChipHandle) -> String { "gpiochip-wiegand-memory" }
    public func chipLabel(_ chip: GpiodChipHandle) -> String { Self.label }
    public func numLines(_ chip: GpiodChipHandle) -> Int { 16 }
    public func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> {
        (0..<16).contains(offset) ? .success(GpiodLineHandle(address: UInt(100 + offset))) : .failure(.invalidArgument)
    }
    public func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> {
        guard name.hasPrefix("GPIO"), let n = Int(name.dropFirst(4)), (0..<16).contains(n) else { return .failure(.noSuchFile) }
        return .success(GpiodLineHandle(address: UInt(100 + n)))
    }
    public func lineName(_ line: GpiodLineHandle) -> String? { "GPIO\(line.address - 100)" }
    public func lineConsumer(_ line: GpiodLineHandle) -> String? { nil }
    public func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32)
        -> Result<Void, Errno> { .success(()) }
    public func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno> { .success(()) }
    public func release(_ line: GpiodLineHandle) {}

    public func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno> { .success(()) }
    public func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno> {
        let now = WiegandClock.now()
        changes.withLock { $0.append(WiegandTimingReport.Change(atNanoseconds: now, values: values)) }
        return .success(())
    }
    public func release(_ lines: [GpiodLineHandle]) {}
    public func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno> {
        .success(())
    }
    public func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno> { .success(0) }
    public func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno> {
        sleepThread(milliseconds: Double(min(timeoutNanoseconds, 50_000_000)) / 1e6)
        return .success([])
    }
    public func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno> { .failure(.wouldBlock) }
}

/// Wraps real gpiod calls and stamps every `setValues` (doctor --test-wiegand on a real chip).
public final class WiegandRecordingCalls: GpiodBulkCalls {
    private let base: GpiodBulkCalls
    private let changes = PosixMutex<[WiegandTimingReport.Change]>([])

    public init(_ base: GpiodBulkCalls) {
        self.base = base
        changes.withLock { $0.reserveCapacity(1024) }
    }

    public var recorded: [WiegandTimingReport.Change] { changes.withLock { $0 } }

    public func chipPaths() -> [String] { base.chipPaths() }
    public func openChip(path: String) -> Result<GpiodChipHandle, Errno> { base.openChip(path: path) }
    public func openChip(name: String) -> Result<GpiodChipHandle, Errno> { base.openChip(name: name) }
    public func openChip(label: String) -> Result<GpiodChipHandle, Errno> { base.openChip(label: label) }
    public func openChip(lookup: String) -> Result<GpiodChipHandle, Errno> { base.openChip(lookup: lookup) }
    public func closeChip(_ chip: GpiodChipHandle) { base.closeChip(chip) }
    public func chipName(_ chip: GpiodChipHandle) -> String { base.chipName(chip) }
    public func chipLabel(_ chip: GpiodChipHandle) -> String { base.chipLabel(chip) }
    public func numLines(_ chip: GpiodChipHandle) -> Int { base.numLines(chip) }
    public func line(_ chip: GpiodChipHandle, offset: Int) -> Result<GpiodLineHandle, Errno> { base.line(chip, offset: offset) }
    public func findLine(_ chip: GpiodChipHandle, name: String) -> Result<GpiodLineHandle, Errno> { base.findLine(chip, name: name) }
    public func lineName(_ line: GpiodLineHandle) -> String? { base.lineName(line) }
    public func lineConsumer(_ line: GpiodLineHandle) -> String? { base.lineConsumer(line) }
    public func requestOutput(_ line: GpiodLineHandle, consumer: String, activeLow: Bool, initialValue: Int32)
        -> Result<Void, Errno> { base.requestOutput(line, consumer: consumer, activeLow: activeLow, initialValue: initialValue) }
    public func setValue(_ line: GpiodLineHandle, _ value: Int32) -> Result<Void, Errno> { base.setValue(line, value) }
    public func release(_ line: GpiodLineHandle) { base.release(line) }
    public func requestOutputs(_ lines: [GpiodLineHandle], consumer: String, activeLow: Bool, initialValues: [Int32])
        -> Result<Void, Errno> {
        base.requestOutputs(lines, consumer: consumer, activeLow: activeLow, initialValues: initialValues)
    }
    public func setValues(_ lines: [GpiodLineHandle], _ values: [Int32]) -> Result<Void, Errno> {
        let result = base.setValues(lines, values)
        let now = WiegandClock.now()
        changes.withLock { $0.append(WiegandTimingReport.Change(atNanoseconds: now, values: values)) }
        return result
    }
    public func release(_ lines: [GpiodLineHandle]) { base.release(lines) }
    public func requestBothEdges(_ line: GpiodLineHandle, consumer: String, activeLow: Bool) -> Result<Void, Errno> {
        base.requestBothEdges(line, consumer: consumer, activeLow: activeLow)
    }
    public func getValue(_ line: GpiodLineHandle) -> Result<Int32, Errno> { base.getValue(line) }
    public func waitEvents(_ lines: [GpiodLineHandle], timeoutNanoseconds: UInt64) -> Result<[GpiodLineHandle], Errno> {
        base.waitEvents(lines, timeoutNanoseconds: timeoutNanoseconds)
    }
    public func readEvent(_ line: GpiodLineHandle) -> Result<GpiodEdgeEvent, Errno> { base.readEvent(line) }
}
