import Core
import Platform

/// `scangate soak`: a long replay through `scangate run` as users run it, checked against the scenario:
/// no event lost or duplicated, RSS growth under 1 MiB, a constant number of open descriptors.
public struct Soak {
    public struct Result: Sendable {
        public var frames: Int
        public var seconds: Double
        public var startMiB: Double
        public var endMiB: Double
        public var maxMiB: Double
        public var descriptorsStart: Int
        public var descriptorsEnd: Int
        public var expectedEvents: Int
        public var events: Int
        /// Events whose (frame, payload) differ from the scenario's expectation.
        public var mismatches: [String]
        public var exitStatus: Int32

        public var growthMiB: Double { endMiB - startMiB }
        public var passed: Bool {
            exitStatus == 0 && mismatches.isEmpty && events == expectedEvents && growthMiB < 1
                && descriptorsStart == descriptorsEnd
        }
    }

    /// The traffic scenario's reads within one 300-frame pass: (frame offset, payload).
    public static let readsPerPass: [(Int, String)] = [
        (10, "ACCESS-0001"), (90, "ACCESS-0002"), (170, "VISITOR-ABCDEFGHIJ-0003"), (240, "ACCESS-0001"),
    ]

    public static func run(executable: String, y4mPath: String, frames: Int,
                           progress: @escaping (String) -> Void) throws -> Result {
        let total = max(300, frames / 300 * 300)
        let r = try DaemonProcess.run(executable, ["run", "--camera", "replay:" + y4mPath, "--fast", "--loop",
                                                   "--max-frames", String(total), "--output", "text",
                                                   "--log-level", "warning"],
                                      intervalMs: 500, keepLines: true,
                                      progress: { t in progress("soak: \(Int(t)) s of a \(total)-frame run") })
        // Expected, in order: each pass's reads. --output text gives "QR-Code:payload" lines; frames are
        // checked through the order and count (one line per read).
        var expected: [String] = []
        for _ in 0..<(total / 300) { expected += readsPerPass.map { "QR-Code:" + $0.1 } }
        var mismatches: [String] = []
        for (i, line) in r.lines.enumerated() where i >= expected.count || expected[i] != line {
            mismatches.append("event \(i + 1): got \(line), expected \(i < expected.count ? expected[i] : "nothing")")
            if mismatches.count >= 5 { break }
        }
        if r.lines.count < expected.count && mismatches.count < 5 {
            mismatches.append("\(expected.count - r.lines.count) events missing; first: \(expected[r.lines.count])")
        }
        let s = r.samples
        guard s.count >= 4 else { throw UsageError("soak: scangate ended after \(s.count) samples (status \(r.exitStatus))") }
        let (earlyWindow, lateWindow) = DaemonProcess.steadyWindows(s)
        let early = earlyWindow.map(\.residentMiB)
        let late = lateWindow.map(\.residentMiB)
        let mean = { (v: [Double]) in v.reduce(0, +) / Double(max(1, v.count)) }
        return Result(frames: total, seconds: r.seconds, startMiB: mean(early), endMiB: mean(late),
                      maxMiB: s.map(\.residentMiB).max() ?? .nan, descriptorsStart: earlyWindow.first?.descriptors ?? -1,
                      descriptorsEnd: lateWindow.last?.descriptors ?? -1, expectedEvents: expected.count,
                      events: r.lines.count, mismatches: mismatches, exitStatus: r.exitStatus)
    }
}
