import XCTest
import Core
import Config
import Feedback
import GPIO
import Settings

/// The [gpio] options: flags map onto GPIOSettings, defaults match, bad values name the flag.
final class GPIOOptionsTests: XCTestCase {
    func settings(_ args: [String]) throws -> RunSettings {
        var s = RunSettings()
        try CommandLineParser.apply(CommandLineParser.parse(args).assignments, to: &s)
        return s
    }

    func error(_ args: [String]) -> String? {
        do { _ = try settings(args); return nil } catch { return "\(error)" }
    }

    func testFlagsFillGPIOSettings() throws {
        let s = try settings(["--gpio-chip", "pinctrl-rp1", "--led-green", "GPIO17", "--led-red=27",
                              "--status-led", "GPIO22", "--buzzer", "18", "--gpio-active-low", "buzzer, red",
                              "--good-led-ms", "500", "--good-buzz-ms", "0", "--error-blinks", "3",
                              "--error-blink-ms", "100", "--error-buzz-ms", "40", "--heartbeat-ms", "50",
                              "--heartbeat-period-ms", "1000", "--camera-lost-blink-ms", "200", "--gpio-retry-ms", "2000"]).gpio
        XCTAssertEqual(s.chip, "pinctrl-rp1")
        XCTAssertEqual(s.lines, [.green: .name("GPIO17"), .red: .offset(27), .status: .name("GPIO22"), .buzzer: .offset(18)])
        XCTAssertEqual(s.activeLow, [.buzzer, .red])
        XCTAssertEqual([s.goodLedMs, s.goodBuzzMs, s.errorBlinks, s.errorBlinkMs, s.errorBuzzMs, s.heartbeatMs,
                        s.heartbeatPeriodMs, s.cameraLostBlinkMs, s.retryMs],
                       [500, 0, 3, 100, 40, 50, 1000, 200, 2000])
    }

    func testDefaultsShownAreTheSettingsDefaults() throws {
        let names = ["gpio-chip", "led-green", "led-red", "status-led", "buzzer", "gpio-active-low", "good-led-ms",
                     "good-buzz-ms", "error-blinks", "error-blink-ms", "error-buzz-ms", "heartbeat-ms",
                     "heartbeat-period-ms", "camera-lost-blink-ms", "gpio-retry-ms"]
        for name in names {
            let option = try XCTUnwrap(OptionTable.find(name), name)
            XCTAssertEqual(option.section, .gpio, name)
            XCTAssertEqual(option.show(RunSettings()), option.defaultText, name)
            XCTAssertFalse(option.help.isEmpty, name)
        }
        XCTAssertEqual(OptionTable.find("good-led-ms")?.defaultText, "800")
        XCTAssertEqual(OptionTable.find("good-buzz-ms")?.defaultText, "100")
        XCTAssertNil(GPIOSettings().chip, "no chip is assumed")
        // Every value shown reads back to the same settings (check-config round trip).
        let s = try settings(["--gpio-chip", "/dev/gpiochip0", "--buzzer", "GPIO18", "--gpio-active-low", "status,green"])
        var again = RunSettings()
        for name in names {
            let option = try XCTUnwrap(OptionTable.find(name))
            try option.apply(&again, option.show(s))
        }
        XCTAssertEqual(again.gpio, s.gpio)
    }

    func testBadValuesNameTheFlagAndWhatIsAllowed() {
        XCTAssertEqual(error(["--gpio-active-low", "green,blue"]),
                       "--gpio-active-low: 'blue' is not one of green, red, status, buzzer")
        XCTAssertEqual(error(["--led-green", "GPIO 17"]),
                       "--led-green: 'GPIO 17' is not a line offset (0-65535) or a line name like GPIO17")
        XCTAssertEqual(error(["--good-led-ms", "-5"]), "--good-led-ms: '-5' is not a whole number from 0 to 60000")
        XCTAssertEqual(error(["--error-blinks", "many"]), "--error-blinks: 'many' is not a whole number from 0 to 20")
    }
}
