import Feedback
import GPIO
import XCTest
import Wiegand
import Settings

/// The settings: defaults, every limit refused with the option and the allowed range, and conflicts.
final class WiegandSettingsTests: XCTestCase {
    func valid() -> WiegandSettings {
        var s = WiegandSettings()
        s.chip = "scangate-sim"
        s.d0 = .name("GPIO12")
        s.d1 = .name("GPIO13")
        return s
    }

    func error(_ s: WiegandSettings, file: StaticString = #filePath, line: UInt = #line) -> WiegandSettingsError? {
        do {
            try s.validate()
            XCTFail("expected validate() to refuse \(s.summary)", file: file, line: line)
            return nil
        } catch { return error }
    }

    func applyError(_ option: String, _ value: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        var s = valid()
        do {
            try s.apply(option: option, value: value)
            XCTFail("\(option) = \(value) was accepted", file: file, line: line)
            return ""
        } catch { return error.message }
    }

    func testDefaults() throws {
        let s = WiegandSettings()
        XCTAssertFalse(s.isEnabled)
        XCTAssertEqual(s.format, .h10301)
        XCTAssertEqual(s.map, .decimal)
        XCTAssertEqual(s.facility, WiegandFacility.none)
        XCTAssertEqual(s.overRange, .refuse)
        XCTAssertEqual(s.pulseUs, 50)
        XCTAssertEqual(s.intervalUs, 2000)
        XCTAssertEqual(s.frameGapMs, 100)
        XCTAssertFalse(s.activeHigh)
        XCTAssertFalse(s.inputActiveHigh)
        XCTAssertNoThrow(try s.validate(), "no Wiegand output configured is valid")
        XCTAssertNoThrow(try valid().validate())
    }

    func testTimingLimitsNameTheOptionAndTheRange() {
        var s = valid()
        s.pulseUs = 19
        XCTAssertEqual(error(s)?.message, "wiegand-pulse-us 19 is out of range: allowed 20-100 (microseconds)")
        s.pulseUs = 101
        XCTAssertEqual(error(s)?.option, "wiegand-pulse-us")
        s = valid()
        s.intervalUs = 199
        XCTAssertEqual(error(s)?.message, "wiegand-interval-us 199 is out of range: allowed 200-20000 (microseconds)")
        s.intervalUs = 20001
        XCTAssertEqual(error(s)?.option, "wiegand-interval-us")
        s = valid()
        s.frameGapMs = 49
        XCTAssertEqual(error(s)?.message, "wiegand-frame-gap-ms 49 is out of range: allowed 50-10000 (milliseconds)")
        for (p, i, g) in [(20, 200, 50), (100, 20000, 10000)] {
            s = valid()
            s.pulseUs = p; s.intervalUs = i; s.frameGapMs = g
            XCTAssertNoThrow(try s.validate(), "\(p) \(i) \(g) are the limits themselves")
        }
    }

    func testApplyParsesEveryOption() throws {
        var s = WiegandSettings()
        let values = [("wiegand-chip", "scangate-sim"), ("wiegand-d0", "GPIO12"), ("wiegand-d1", "13"),
                      ("wiegand-format", "35"), ("wiegand-map", "digits:3-9"), ("wiegand-facility", "digits:1-2"),
                      ("wiegand-over-range", "low-bits"), ("wiegand-pulse-us", "40"), ("wiegand-interval-us", "1000"),
                      ("wiegand-frame-gap-ms", "250"), ("wiegand-active-high", "yes"), ("wiegand-led-input", "GPIO16"),
                      ("wiegand-beeper-input", "26"), ("wiegand-input-active-high", "no")]
        for (o, v) in values { try s.apply(option: o, value: v) }
        XCTAssertEqual(s.chip, "scangate-sim")
        XCTAssertEqual(s.d0, .name("GPIO12"))
        XCTAssertEqual(s.d1, .offset(13))
        XCTAssertEqual(s.format, .corporate1000)
        XCTAssertEqual(s.map, .digits(from: 3, to: 9))
        XCTAssertEqual(s.facility, .digits(from: 1, to: 2))
        XCTAssertEqual(s.overRange, .lowBits)
        XCTAssertEqual([s.pulseUs, s.intervalUs, s.frameGapMs], [40, 1000, 250])
        XCTAssertTrue(s.activeHigh)
        XCTAssertEqual(s.ledInput, .name("GPIO16"))
        XCTAssertEqual(s.beeperInput, .offset(26))
        XCTAssertFalse(s.inputActiveHigh)
        XCTAssertNoThrow(try s.validate())
    }

    func testApplyRefusalsSayWhatIsAllowed() {
        XCTAssertEqual(applyError("wiegand-pulse-us", "10"), "wiegand-pulse-us '10' is out of range: allowed 20-100 (microseconds)")
        XCTAssertEqual(applyError("wiegand-pulse-us", "fast"), "wiegand-pulse-us 'fast' is out of range: allowed 20-100 (microseconds)")
        XCTAssertEqual(applyError("wiegand-interval-us", "99999999999"),
                       "wiegand-interval-us '99999999999' is out of range: allowed 200-20000 (microseconds)")
        XCTAssertEqual(applyError("wiegand-format", "36"),
                       "wiegand-format '36' is not a format: allowed 26, 34, 35, 37, 37-h10302 or raw:N (N 1-64)")
        XCTAssertEqual(applyError("wiegand-format", "raw:65"),
                       "wiegand-format 'raw:65' is not a format: allowed 26, 34, 35, 37, 37-h10302 or raw:N (N 1-64)")
        XCTAssertEqual(applyError("wiegand-map", "digits:9-3"),
                       "wiegand-map 'digits:9-3' is not a mapping: allowed decimal, hex, digits:A-B (1 <= A <= B <= 4096, at most 20 digits) or credential")
        XCTAssertEqual(applyError("wiegand-over-range", "truncate"),
                       "wiegand-over-range 'truncate' is not allowed: allowed refuse or low-bits")
        XCTAssertEqual(applyError("wiegand-d0", "GPIO 5"), "wiegand-d0 'GPIO 5' is not a line: give a line name (GPIO17) or an offset (17)")
        XCTAssertEqual(applyError("wiegand-active-high", "maybe"), "wiegand-active-high 'maybe' is not yes or no")
        XCTAssertTrue(applyError("wiegand-speed", "1").hasPrefix("unknown Wiegand option 'wiegand-speed' (options: wiegand-d0, "))
    }

    func testLinesAndChip() {
        var s = valid()
        s.d1 = nil
        XCTAssertEqual(error(s)?.message,
                       "wiegand-d1 is missing: Wiegand needs both wiegand-d0 and wiegand-d1 (line names like GPIO5 or offsets)")
        s = valid()
        s.chip = nil
        XCTAssertEqual(error(s)?.message,
                       "wiegand-d0/wiegand-d1 need a GPIO chip (--gpio-chip, or --wiegand-chip for another chip): a label like pinctrl-rp1, a name like gpiochip0 or a path")
        // D0, D1 and the inputs on one line: LineOwnerTests (the catalogue's one-owner check).
        s = WiegandSettings()
        s.ledInput = .offset(16)
        XCTAssertEqual(error(s)?.message,
                       "wiegand-led-input given without wiegand-d0 and wiegand-d1: the panel's inputs belong to a Wiegand reader; give D0 and D1 too")
    }

    func testFacilityAgainstTheFormat() {
        var s = valid()
        s.facility = .fixed(256)
        XCTAssertEqual(error(s)?.message, "wiegand-facility 256 does not fit wiegand-format 26 (H10301): allowed 0-255")
        s.format = .corporate1000
        s.facility = .fixed(4095)
        XCTAssertNoThrow(try s.validate())
        s.format = .h10302
        XCTAssertEqual(error(s)?.message,
                       "wiegand-facility is given but wiegand-format 37-h10302 (H10302) has no facility field; leave wiegand-facility unset")
        s = valid()
        s.facility = .digits(from: 1, to: 3)
        XCTAssertEqual(error(s)?.message,
                       "wiegand-facility digits:1-3 takes digits of the payload, which needs wiegand-map digits:A-B (it is decimal); or give a fixed facility code")
    }
}
