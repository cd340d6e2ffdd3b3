import Core
import GPIO
import Platform
import Settings

/// `scangate doctor --test-wiegand`: sends one test number through the real transmitter on the
/// configured lines and says what was sent and how the pulses were timed (as ScanGate drove them).
public enum WiegandDoctor {
    public struct Result: Sendable {
        /// True when the frame went out whole.
        public var passed: Bool
        /// One line: what was sent, or why not, with the fix.
        public var summary: String
        /// The frame (when one was built).
        public var frame: WiegandFrame?
        /// The timing of the pulses as driven (nil when nothing was sent).
        public var timing: WiegandTimingReport?
    }

    /// The test number: card 12345 (cut to the card field of narrow raw formats), and the configured
    /// facility, or 1 when none is configured (formats with a facility field).
    public static func testFrame(for settings: WiegandSettings, card: UInt64? = nil, facility: UInt64? = nil) -> WiegandFrame? {
        let format = settings.format
        let c = min(card ?? 12345, format.maxCard)
        var f: UInt64?
        if format.facilityBits > 0 {
            if let facility { f = facility }
            else if case .fixed(let configured) = settings.facility { f = configured }
            else { f = 1 }
        }
        let encoder = WiegandEncoder(format: format, map: .decimal, facility: .none, overRange: .refuse)
        guard let fv = f else { return try? encoder.frame(number: c, facility: nil).get() }
        return try? encoder.frame(number: c, facility: fv).get()
    }

    /// Opens the lines (as the daemon would: real-time when allowed), sends the test frame, waits for
    /// it and closes. `calls` defaults to the real libgpiod.
    public static func sendTest(settings: WiegandSettings, logger: Logger, card: UInt64? = nil, facility: UInt64? = nil,
                                calls: any GpiodCalls = SystemGpiodCalls(), runtime: WiegandRuntime = WiegandRuntime())
        -> Result {
        var quiet = runtime
        quiet.retryMs = 3_600_000   // one attempt: doctor reports, it does not wait for a fix
        let recorder = WiegandSetLog()
        quiet.setLog = recorder
        guard let frame = testFrame(for: settings, card: card, facility: facility) else {
            return Result(passed: false, summary: "cannot build a test number for wiegand-format \(settings.format)")
        }
        let output: WiegandOutput
        do {
            var plain = settings
            plain.ledInput = nil
            plain.beeperInput = nil
            output = try WiegandOutput(settings: plain, logger: logger, feedback: nil, calls: calls, runtime: quiet)
        } catch {
            return Result(passed: false, summary: "\(error)", frame: frame)
        }
        defer { output.close(deadline: .now().adding(milliseconds: 1000)) }
        let offer = output.send(frame)
        guard offer.isTaken else {
            let reason: String
            if case .refused(let r) = offer { reason = r } else { reason = "refused" }
            return Result(passed: false, summary: "not sent: \(reason)", frame: frame)
        }
        let budgetMs = frame.bits.count * settings.intervalUs / 1000 + 2000
        guard output.waitUntilSent(timeoutMs: budgetMs) else {
            return Result(passed: false, summary: "the test frame was not sent within \(budgetMs) ms", frame: frame)
        }
        let timing = WiegandTimingReport(changes: recorder.recorded)
        let sent = timing.frames.first ?? ""
        let ok = sent == frame.bits.description && output.health.sent == 1 && timing.bothActive == 0
        let how = "pulses \(timing.pulses.map(\.description) ?? "none"), intervals \(timing.intervals.map(\.description) ?? "none")"
        let where_ = output.health.detail
        let summary = ok
            ? "sent \(frame.summary) on \(where_); \(how)"
            : "the lines carried \(sent.isEmpty ? "nothing" : sent), not \(frame.bits); \(output.health.lastError ?? "")"
        return Result(passed: ok, summary: summary, frame: frame, timing: timing)
    }
}
