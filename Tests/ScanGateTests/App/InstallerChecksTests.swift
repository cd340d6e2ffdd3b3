import Foundation
import XCTest

/// Issue 27, through the binary as an installer runs it: a broken config is refused alike by
/// `check-config`, `run` and `doctor` (one set of checks, the same line), and a doctor test switch for
/// a device that is not configured fails instead of passing what it did not test.
final class InstallerChecksTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Configs check-config passed while `run` refused them (exit 2, so systemd never restarts it), and
    /// the words the refusal must carry.
    var brokenConfigs: [(name: String, text: String, says: String)] {
        [
            ("cwt without keys", "[credential]\ncredential-format = cwt\n", "credential-keys must be set"),
            ("keys that are not there", "[credential]\ncredential-format = cwt\ncredential-keys = \(dir)/no-such.jwks\n",
             "credential-keys \(dir)/no-such.jwks: cannot open"),
            ("a relay without a chip", "[door-relay]\ndoor-relay = GPIO25\n", "door-relay needs a GPIO chip"),
            ("wiegand-d0 alone", "[wiegand]\nwiegand-chip = gpiochip0\nwiegand-d0 = 5\n", "wiegand-d1 is missing"),
            ("a relay on an LED's line", "[gpio]\ngpio-chip = gpiochip0\nled-green = 25\n[door-relay]\ndoor-relay = 25\n",
             "[gpio] led-green: line 25 on gpiochip0 is also claimed by [door-relay] door-relay"),
            ("two LEDs on one line", "[gpio]\ngpio-chip = gpiochip0\nled-green = 5\nled-red = 5\n",
             "[gpio] led-red: line 5 on gpiochip0 is also claimed by [gpio] led-green"),
        ]
    }

    func testEachBrokenConfigIsRefusedAlikeByCheckConfigRunAndDoctor() throws {
        for config in brokenConfigs {
            let path = dir + "/scangate.conf"
            try TestFiles.write("[camera]\ncamera = sim:HELLO\n" + config.text, to: path)
            let check = try ScangateProcess.run(["check-config", path])
            XCTAssertEqual(check.status, 2, "\(config.name): check-config said valid")
            let checkLines = check.stderr.split(separator: "\n")
            XCTAssertEqual(checkLines.count, 1, "\(config.name): \(check.stderr)")
            XCTAssertTrue(check.stderr.contains(config.says), "\(config.name): \(check.stderr)")
            XCTAssertTrue(check.stderr.contains(path), "\(config.name): the file is named: \(check.stderr)")

            let run = try ScangateProcess.run(["run", "--config", path, "--oneshot"], timeout: 30)
            XCTAssertEqual(run.status, 2, "\(config.name): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(config.says), "\(config.name): \(run.stderr)")

            let doctor = try ScangateProcess.run(["doctor", "--config", path, "--capture-seconds", "0.2"], timeout: 30)
            XCTAssertEqual(doctor.status, 2, "\(config.name): \(doctor.stdoutText)")
            XCTAssertTrue(doctor.stderr.contains(config.says), "\(config.name): \(doctor.stderr)")
            // Its advice is true: check-config shows the same error.
            XCTAssertTrue(doctor.stdoutText.contains("scangate check-config \(path)` shows the same error"), doctor.stdoutText)
        }
    }

    func testAValidConfigSaysWhatIsLeftToDoctor() throws {
        let path = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = sim:HELLO\n[gpio]\ngpio-chip = gpiochip0\nled-green = 5\n", to: path)
        let check = try ScangateProcess.run(["check-config", path])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stdoutText.contains("# left to `scangate doctor --config \(path)`: the camera (sim:HELLO), the LED and buzzer lines"),
                      check.stdoutText)
    }

    /// `doctor --blink --test-beep --test-wiegand --test-relay --test-frame` with none of those devices
    /// configured printed "passed" for tests it never ran. Each is now a failure with how to configure it.
    func testATestSwitchForADeviceThatIsNotConfiguredFails() throws {
        let switches = ["blink", "test-beep", "test-wiegand", "test-relay", "test-frame"]
        let doctor = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "0.2"] + switches.map { "--" + $0 },
                                             timeout: 60)
        XCTAssertEqual(doctor.status, 4, "a failed check beside a camera that passed: \(doctor.stdoutText)")
        let table = doctor.stdoutText
        for name in switches {
            let row = table.split(separator: "\n").first { $0.contains("--\(name)") }
            XCTAssertNotNil(row, "no row for --\(name): \(table)")
            XCTAssertTrue(row?.contains("FAIL") == true, "\(name): \(row ?? "")")
        }
        for fix in ["in [gpio]", "in [beep]", "in [wiegand]", "in [door-relay]", "in [serial]"] {
            XCTAssertTrue(table.contains(fix), "the fix says where: \(fix): \(table)")
        }
        XCTAssertFalse(table.contains("0 failed"), table)
        // The same switches with nothing to ask of them: the camera alone passes.
        let plain = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "0.2"], timeout: 60)
        XCTAssertEqual(plain.status, 0, plain.stdoutText)
    }
}
