import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import XCTest
import Wiegand
import Bench
import Settings

/// The output as the daemon, doctor and bench use it: construction, health, doctor's test frame and
/// the bench's figures on the in-memory chip (figures are reported, not asserted).
final class WiegandOutputTests: XCTestCase {
    func settings(chip: String = MemoryGpiod.label) -> WiegandSettings {
        var s = WiegandSettings()
        s.chip = chip
        s.d0 = .name("GPIO0")
        s.d1 = .name("GPIO1")
        return s
    }

    func testInvalidSettingsAreRefusedAtConstruction() {
        var s = settings()
        s.pulseUs = 500
        XCTAssertThrowsError(try WiegandOutput(settings: s, logger: Logger(level: .error), feedback: nil,
                                               calls: MemoryGpiod.single())) { error in
            XCTAssertEqual("\(error)", "wiegand-pulse-us 500 is out of range: allowed 20-100 (microseconds)")
        }
        XCTAssertThrowsError(try WiegandOutput(settings: WiegandSettings(), logger: Logger(level: .error), feedback: nil,
                                               calls: MemoryGpiod.single()))
    }

    func testHealthSaysWhereAndHow() throws {
        var r = WiegandRuntime()
        r.stallLimitMs = 60_000   // a loaded test machine must not cut the frame
        r.realtime = false
        let out = try WiegandOutput(settings: settings(), logger: Logger(level: .error), feedback: nil,
                                    calls: MemoryGpiod.single(), runtime: r)
        defer { out.close(deadline: .now().adding(milliseconds: 500)) }
        let h = out.health
        XCTAssertEqual(h.name, "wiegand")
        XCTAssertEqual(h.state, .ok)
        XCTAssertEqual(h.detail, "D0 GPIO0 / D1 GPIO1 of memory (gpiochip0), 26 (H10301); not asked")
        XCTAssertEqual(out.name, "wiegand")
    }

    func testDoctorSendsTheTestNumberAndSaysWhatWasSent() throws {
        var r = WiegandRuntime()
        r.stallLimitMs = 60_000   // a loaded test machine must not cut the frame
        r.realtime = false
        var s = settings()
        s.facility = .fixed(90)
        let result = WiegandDoctor.sendTest(settings: s, logger: Logger(level: .error), card: 324, calls: MemoryGpiod.single(),
                                            runtime: r)
        XCTAssertTrue(result.passed, result.summary)
        XCTAssertEqual(result.frame?.bits.description, "00101101000000001010001000")
        XCTAssertTrue(result.summary.hasPrefix("sent facility code 90, card 324 as 26 bits 00101101000000001010001000 on D0 GPIO0 / D1 GPIO1"),
                      result.summary)
        XCTAssertTrue(result.summary.contains("pulses min "), result.summary)
        XCTAssertEqual(result.timing?.frames, ["00101101000000001010001000"])
        XCTAssertEqual(result.timing?.pulses?.count, 26)
        XCTAssertEqual(result.timing?.intervals?.count, 25)
        // The default test number fits every format.
        for f in WiegandFormat.named + [.raw(bits: 1), .raw(bits: 64)] {
            var t = settings()
            t.format = f
            XCTAssertNotNil(WiegandDoctor.testFrame(for: t), "\(f)")
        }
    }

    func testDoctorReportsLinesThatCannotBeUsed() {
        var r = WiegandRuntime()
        r.stallLimitMs = 60_000   // a loaded test machine must not cut the frame
        r.realtime = false
        let result = WiegandDoctor.sendTest(settings: settings(chip: "pinctrl-rp1"), logger: Logger(level: .error),
                                            calls: MemoryGpiod.single(), runtime: r)
        XCTAssertFalse(result.passed)
        XCTAssertTrue(result.summary.hasPrefix("not sent: Wiegand lines not available: no GPIO chip with label 'pinctrl-rp1'"),
                      result.summary)
    }

    func testBenchSendsEveryFrameThroughTheRealTransmitter() throws {
        var bench = WiegandBench(frames: 5, realtime: false)
        bench.stallLimitMs = 60_000   // a loaded test machine must not cut a frame
        let figures = try bench.run()
        XCTAssertEqual(figures.framesSent, 5, "\(figures)")
        XCTAssertEqual(figures.pulses?.count, 5 * 26)
        XCTAssertEqual(figures.intervals?.count, 5 * 25)
        print("Wiegand bench (in-memory chip, no real-time): \(figures)")
    }

    func testTimingReportSplitsFramesAndCountsBothActive() {
        let ms: UInt64 = 1_000_000
        let changes: [WiegandTimingReport.Change] = [
            .init(atNanoseconds: 0, values: [1, 0]), .init(atNanoseconds: 50_000, values: [0, 0]),
            .init(atNanoseconds: 2 * ms, values: [0, 1]), .init(atNanoseconds: 2 * ms + 60_000, values: [0, 0]),
            .init(atNanoseconds: 100 * ms, values: [1, 1]), .init(atNanoseconds: 100 * ms + 40_000, values: [0, 0]),
        ]
        let report = WiegandTimingReport(changes: changes)
        XCTAssertEqual(report.frames, ["01", "1"])
        XCTAssertEqual(report.bothActive, 1)
        XCTAssertEqual(report.pulses?.minUs, 40)
        XCTAssertEqual(report.pulses?.maxUs, 60)
        XCTAssertEqual(report.intervals?.count, 1)
        XCTAssertEqual(report.intervals?.p50Us, 2000)
    }
}
