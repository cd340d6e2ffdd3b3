import Core
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
