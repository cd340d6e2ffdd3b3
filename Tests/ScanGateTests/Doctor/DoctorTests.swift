#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Catalog
@testable import App
import Config
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Camera
import CV4L2
import Simulator
import Components
import Doctor
import Settings

/// `scangate doctor`: the table, the fixes and the exit codes, against the simulator, a real
/// pseudo-terminal, ALSA's null and missing devices, missing device nodes, and the gpiod fake.
final class DoctorTests: XCTestCase {
    // MARK: - Helpers

    /// Runs doctor in-process with `arguments` as the command line (run flags plus doctor's own).
    private func doctor(_ arguments: [String], system: DoctorSystem = DoctorSystem(),
                        blinkMilliseconds: Double? = nil,
                        file: StaticString = #filePath, line: UInt = #line) throws -> DoctorCommand.Outcome {
        var (options, rest) = try DoctorOptions.extract(arguments, flags: Catalog.components().flatMap(\.doctorFlags))
        if let ms = blinkMilliseconds { options.blinkMilliseconds = ms }
        let parsed = try CommandLineParser.parse(rest)
        return DoctorCommand.execute(configPath: parsed.configPath, flags: parsed.assignments, options: options,
                                     system: system)
    }

    private func row(_ outcome: DoctorCommand.Outcome, _ check: String,
                     file: StaticString = #filePath, line: UInt = #line) throws -> DoctorRow {
        let report = try XCTUnwrap(outcome.report, "no report", file: file, line: line)
        return try XCTUnwrap(report.rows.first { $0.check == check },
                             "no row '\(check)' in:\n\(report.table)", file: file, line: line)
    }

    // MARK: - Camera

    func testSimulatedCameraPassesAndTheCodeInViewIsDecoded() throws {
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "1"])
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        XCTAssertEqual(try row(outcome, "config").result, .pass)
        XCTAssertEqual(try row(outcome, "camera open").result, .pass)
        let capture = try row(outcome, "camera capture")
        XCTAssertEqual(capture.result, .pass)
        XCTAssertTrue(capture.detail.contains("640x480"), capture.detail)
        let decode = try row(outcome, "camera decode")
        XCTAssertEqual(decode.result, .pass)
        XCTAssertTrue(decode.detail.contains("HELLO (QR-Code"), decode.detail)
        XCTAssertTrue(outcome.stdout.hasPrefix("CHECK"), outcome.stdout)
        XCTAssertTrue(outcome.stdout.hasSuffix("4 passed, 0 failed"), outcome.stdout)
        XCTAssertNil(outcome.stderr)
        // Only the camera and the config: no GPIO, sound or serial configured.
        XCTAssertEqual(Set(outcome.report?.rows.map(\.part) ?? []), [.config, .camera])
    }

    func testNothingInViewStillPasses() throws {
        let dir = try TestFiles.temporaryDirectory()
        let scenario = dir + "/empty.scenario"
        try TestFiles.write("size 320x240\nfps 30\nframes 10\n", to: scenario)
        let outcome = try doctor(["--camera", "sim:" + scenario, "--fast"])
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        let capture = try row(outcome, "camera capture")
        XCTAssertTrue(capture.detail.hasPrefix("10 frames of 320x240"), capture.detail)
        XCTAssertTrue(try row(outcome, "camera decode").detail.hasPrefix("nothing in view"))
    }

    func testMissingCameraFailsWithTheFixAndExit1() throws {
        let outcome = try doctor(["--camera", "/dev/video99", "--capture-seconds", "0.5"],
                                 system: DoctorSystem(videoNodes: { ["/dev/video0", "/dev/video1"] }))
        XCTAssertEqual(outcome.exitCode, 1, outcome.stdout)
        let device = try row(outcome, "camera device")
        XCTAssertEqual(device.result, .fail)
        XCTAssertTrue(device.detail.contains("/dev/video99"), device.detail)
        XCTAssertTrue(device.detail.contains("ENOENT"), device.detail)
        XCTAssertTrue(device.fix.hasPrefix("device missing: check the cable"), device.fix)
        XCTAssertTrue(device.fix.contains("scangate list-cameras"), device.fix)
        XCTAssertTrue(device.fix.contains("/dev/video0, /dev/video1"), device.fix)
        XCTAssertTrue(device.fix.contains("udev"), device.fix)
        for check in ["camera open", "camera capture", "camera decode"] {
            XCTAssertEqual(try row(outcome, check).result, .skip, check)
        }
        XCTAssertTrue(outcome.stdout.contains("fix: device missing"), outcome.stdout)
    }

    /// The V4L2 path through the scripted device: offers listed, the format negotiated, frames captured
    /// and the code in them read; the device is closed and unmapped afterwards.
    func testV4L2CameraThroughTheScriptedDevice() throws {
        var sim = CaptureSettings()
        sim.fast = true
        let camera = try SimulatedCamera(spec: "V4L2-CODE", settings: sim)
        try camera.open()
        let luma = try XCTUnwrap(try camera.nextFrame()).luma
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 640, height: 480)])])
        fake.onPoll = { device in device.deliver(luma) }
        let outcome = try doctor(["--camera", "/dev/video7", "--capture-seconds", "0.3"],
                                 system: DoctorSystem(v4l2: fake))
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        let device = try row(outcome, "camera device")
        XCTAssertTrue(device.detail.hasPrefix("/dev/video7: Fake Camera (driver fake): GREY 640x480"), device.detail)
        XCTAssertEqual(try row(outcome, "camera open").detail, "/dev/video7: streaming GREY 640x480")
        XCTAssertTrue(try row(outcome, "camera capture").detail.contains("of 640x480"))
        XCTAssertTrue(try row(outcome, "camera decode").detail.contains("V4L2-CODE (QR-Code"))
        XCTAssertEqual(fake.openDescriptors, [])
        XCTAssertEqual(fake.mappedCount, 0)
    }

    func testV4L2CameraControlsThatMatterForAimingAreListed() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .grey, sizes: [FrameSize(width: 640, height: 480)])])
        fake.controls = [
            .init(id: 0x0098_0900, name: "Brightness", minimum: 0, maximum: 255, defaultValue: 128, value: 140),
            .init(id: 0x0098_0903, name: "Hue", minimum: -128, maximum: 127, defaultValue: 0, value: 0),
            .init(id: 0x009a_0901, name: "Auto Exposure", type: V4L2_CTRL_TYPE_MENU, minimum: 0, maximum: 3,
                  defaultValue: 3, value: 1),
            .init(id: 0x009a_0902, name: "Exposure Time, Absolute", minimum: 1, maximum: 5000, step: 2,
                  defaultValue: 156, value: 300),
        ]
        let grey = [UInt8](repeating: 90, count: 640 * 480)
        fake.onPoll = { device in device.deliver(grey) }
        let outcome = try doctor(["--camera", "/dev/video7", "--capture-seconds", "0.1"], system: DoctorSystem(v4l2: fake))
        XCTAssertEqual(try row(outcome, "control brightness").detail, "int: min 0 max 255 step 1 default 128 current 140")
        XCTAssertEqual(try row(outcome, "control auto_exposure").detail, "menu: min 0 max 3 step 1 default 3 current 1")
        XCTAssertEqual(try row(outcome, "control exposure_time_absolute").detail,
                       "int: min 1 max 5000 step 2 default 156 current 300")
        XCTAssertFalse(outcome.stdout.contains("control hue"), "hue does not matter for aiming:\n\(outcome.stdout)")
        XCTAssertTrue(outcome.stdout.contains("control brightness"), outcome.stdout)
    }

    func testV4L2CameraHeldByAnotherProcess() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [FrameSize(width: 640, height: 480)])])
        fake.failures[.requestBuffers] = .busy
        let outcome = try doctor(["--camera", "/dev/video7"], system: DoctorSystem(v4l2: fake))
        XCTAssertEqual(outcome.exitCode, 1, outcome.stdout)
        XCTAssertEqual(try row(outcome, "camera device").result, .pass)
        let open = try row(outcome, "camera open")
        XCTAssertEqual(open.result, .fail)
        XCTAssertTrue(open.detail.contains("EBUSY"), open.detail)
        XCTAssertTrue(open.fix.hasPrefix("held by another process (fuser -v /dev/video7)"), open.fix)
    }

    func testV4L2SizeTheCameraDoesNotOfferNamesTheOffers() throws {
        let fake = FakeV4L2Device(formats: [.init(fourcc: .yuyv, sizes: [FrameSize(width: 320, height: 240)])])
        let outcome = try doctor(["--camera", "/dev/video7"], system: DoctorSystem(v4l2: fake))
        XCTAssertEqual(outcome.exitCode, 1, outcome.stdout)
        let open = try row(outcome, "camera open")
        XCTAssertEqual(open.result, .fail)
        XCTAssertTrue(open.detail.contains("320x240"), open.detail)
        XCTAssertTrue(open.fix.contains("--width"), open.fix)
    }

    func testCameraFailureWinsOverOtherFailuresForTheExitCode() throws {
        let outcome = try doctor(["--camera", "/dev/video99", "--serial", "/dev/scangate-no-such-tty"])
        XCTAssertEqual(outcome.exitCode, 1)
        XCTAssertEqual(try row(outcome, "serial port").result, .fail)
    }

    func testBadSimulatorSourceFailsTheCamera() throws {
        let outcome = try doctor(["--camera", "replay:/nonexistent/clip.y4m"])
        XCTAssertEqual(outcome.exitCode, 1)
        let open = try row(outcome, "camera open")
        XCTAssertEqual(open.result, .fail)
        XCTAssertTrue(open.detail.contains("/nonexistent/clip.y4m"), open.detail)
        XCTAssertTrue(open.fix.contains("--camera"), open.fix)
    }

    // MARK: - Config and flags

    func testBadConfigExits2NamingFileLineAndKey() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = sim:HELLO\nwidht = 320\n", to: path)
        let outcome = try doctor(["--config", path])
        XCTAssertEqual(outcome.exitCode, 2)
        let config = try row(outcome, "config")
        XCTAssertEqual(config.result, .fail)
        XCTAssertTrue(config.detail.hasPrefix("\(path):3:"), config.detail)
        XCTAssertTrue(config.detail.contains("widht"), config.detail)
        XCTAssertTrue(config.fix.contains("scangate check-config \(path)"), config.fix)
        XCTAssertEqual(outcome.report?.rows.count, 1, "no device is probed with a broken config")
        XCTAssertEqual(outcome.stderr, config.detail)
    }

    func testGoodConfigIsUsedAndFlagsOverrideIt() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = /dev/video99\n", to: path)
        let outcome = try doctor(["--config", path, "--camera", "sim:FROM-FLAG", "--capture-seconds", "0.3"])
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        XCTAssertTrue(try row(outcome, "config").detail.contains(path))
        XCTAssertTrue(try row(outcome, "camera decode").detail.contains("FROM-FLAG"))
    }

    func testDoctorFlagsAreTakenOutAndBadOnesExit2() throws {
        let (options, rest) = try DoctorOptions.extract(
            ["--blink", "--camera", "sim:X", "--test-beep", "--capture-seconds=1.5", "--test-frame", "--fast"],
            flags: Catalog.components().flatMap(\.doctorFlags))
        XCTAssertTrue(options.blink && options.testBeep && options.testFrame)
        XCTAssertEqual(options.captureSeconds, 1.5)
        XCTAssertEqual(rest, ["--camera", "sim:X", "--fast"])

        for bad in [["--capture-seconds", "abc"], ["--capture-seconds", "0"], ["--capture-seconds"], ["--nope"]] {
            let outcome = DoctorCommand.execute(bad)
            XCTAssertEqual(outcome.exitCode, 2, "\(bad)")
            XCTAssertNil(outcome.report)
            XCTAssertEqual(outcome.stdout, "")
            let message = try XCTUnwrap(outcome.stderr)
            XCTAssertTrue(message.contains(bad[0].hasPrefix("--capture") ? "--capture-seconds" : "--nope"), message)
        }
        XCTAssertEqual(DoctorCommand.execute(["--help"]).exitCode, 0)
        XCTAssertTrue(DoctorCommand.execute(["--help"]).stdout.contains("--test-frame"))
    }

    func testExitCodes() {
        func report(_ rows: [DoctorRow]) -> DoctorReport { DoctorReport(rows: rows) }
        let ok = DoctorRow.pass(.camera, "camera open", "")
        XCTAssertEqual(report([ok, .skip(.gpio, "gpio green", "")]).exitCode, 0)
        XCTAssertEqual(report([ok, .fail(.serial, "serial port", "", fix: "x")]).exitCode, 4)
        XCTAssertEqual(report([.fail(.camera, "camera open", "", fix: "x"), .fail(.gpio, "gpio chip", "", fix: "x")])
            .exitCode, 1)
        XCTAssertEqual(report([.fail(.config, "config", "", fix: "x")]).exitCode, 2)
    }

    func testPayloadControlCharactersAreEscapedInTheTable() {
        let table = DoctorReport(rows: [.pass(.camera, "camera decode", "in view: A\u{1B}[31mB\r\nC")]).table
        XCTAssertFalse(table.contains("\u{1B}"))
        XCTAssertTrue(table.contains("A\\x1B[31mB\\x0D\\x0AC"), table)
    }

    // MARK: - Serial

    func testSerialOpensReadsBackAndTheTestFrameArrivesFramed() throws {
        let pty = try PseudoTerminal()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--serial", pty.name, "--serial-baud", "19200", "--serial-format", "8N2",
                                  "--serial-framing", "stx-etx", "--serial-checksum", "lrc", "--test-frame"])
        let received = pty.read(count: 17, within: 10)
        let body = Array("SCANGATE-TEST".utf8) + [0x03]
        let lrc = body.reduce(UInt8(0), ^)
        let expected = [0x02] + body + Array(String(format: "%02X", lrc).utf8)
        XCTAssertEqual(received, expected, String(decoding: received, as: UTF8.self))
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        let port = try row(outcome, "serial port")
        XCTAssertEqual(port.result, .pass)
        XCTAssertTrue(port.detail.contains("19200 baud 8N2 (read back)"), port.detail)
        let frame = try row(outcome, "serial frame")
        XCTAssertEqual(frame.result, .pass)
        XCTAssertTrue(frame.detail.contains("wrote 17 bytes"), frame.detail)
        // The driver really holds the configured line settings.
        var t = try pty.deviceAttributes()
        XCTAssertEqual(cfgetospeed(&t), speed_t(B19200))
        XCTAssertNotEqual(t.c_cflag & tcflag_t(CSTOPB), 0)
    }

    func testPlainFramingTestFrame() throws {
        let pty = try PseudoTerminal()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2", "--serial", pty.name,
                                  "--serial-prefix", "@", "--test-frame"])
        XCTAssertEqual(pty.read(count: 16, within: 10), Array("@SCANGATE-TEST\r\n".utf8))
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
    }

    /// A pty always keeps 8 data bits without parity: exactly the "driver did not take it" case of a
    /// USB adapter that cannot do 7E1.
    func testFormatThePortDoesNotKeepFailsWithTheFix() throws {
        let pty = try PseudoTerminal()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2", "--serial", pty.name,
                                  "--serial-format", "7E1", "--test-frame"])
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let port = try row(outcome, "serial port")
        XCTAssertEqual(port.result, .fail)
        XCTAssertTrue(port.detail.contains("driver kept 9600 baud 8N1"), port.detail)
        XCTAssertTrue(port.fix.contains("does not take 9600 baud 7E1"), port.fix)
        XCTAssertEqual(pty.drain(), [])
    }

    func testSerialWithoutTestFrameSendsNothing() throws {
        let pty = try PseudoTerminal()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2", "--serial", pty.name])
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        XCTAssertEqual(try row(outcome, "serial port").result, .pass)
        XCTAssertNil(outcome.report?.rows.first { $0.check == "serial frame" })
        XCTAssertEqual(pty.drain(), [])
    }

    func testMissingSerialPortFailsWithFixAndExit4() throws {
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--serial", "/dev/scangate-no-such-tty", "--test-frame"])
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let port = try row(outcome, "serial port")
        XCTAssertEqual(port.result, .fail)
        XCTAssertTrue(port.detail.contains("/dev/scangate-no-such-tty"), port.detail)
        XCTAssertTrue(port.fix.hasPrefix("device missing"), port.fix)
        XCTAssertTrue(port.fix.contains("/dev/scangate-serial"), port.fix)
        XCTAssertEqual(try row(outcome, "serial frame").result, .skip)
    }

    func testSerialPortThatIsNoTtyIsNamed() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/not-a-tty"
        try TestFiles.write("x", to: path)
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2", "--serial", path])
        let port = try row(outcome, "serial port")
        XCTAssertEqual(port.result, .fail)
        XCTAssertTrue(port.fix.contains("is not a serial port"), port.fix)
    }

    // MARK: - GPIO

    func testMissingGPIOChipFailsListingTheChips() throws {
        let fake = MemoryGpiod.pi5()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--gpio-chip", "pinctrl-bcm2711", "--led-green", "GPIO17"],
                                 system: DoctorSystem(gpiod: fake))
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let chip = try row(outcome, "gpio chip")
        XCTAssertEqual(chip.result, .fail)
        XCTAssertTrue(chip.detail.contains("pinctrl-bcm2711"), chip.detail)
        XCTAssertTrue(chip.detail.contains("gpiochip0 [pinctrl-rp1] (54 lines)"), chip.detail)
        XCTAssertTrue(chip.fix.contains("--gpio-chip"), chip.fix)
        XCTAssertEqual(try row(outcome, "gpio green").result, .skip)
        XCTAssertEqual(fake.openChipHandles, 0)
    }

    func testGPIOChipWithoutPermissionSaysWhichGroup() throws {
        let fake = MemoryGpiod(chips: [MemoryGpiod.Chip(path: "/dev/gpiochip0", name: "gpiochip0", label: "pinctrl-bcm2711",
                                                    lineNames: ["GPIO0"], openError: .permissionDenied)])
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--gpio-chip", "gpiochip0", "--led-green", "0"], system: DoctorSystem(gpiod: fake))
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let chip = try row(outcome, "gpio chip")
        XCTAssertEqual(chip.result, .fail)
        XCTAssertTrue(chip.detail.contains("EACCES"), chip.detail)
        XCTAssertTrue(chip.fix.hasPrefix("add user scangate to group gpio"), chip.fix)
    }

    func testNoGPIOChipOnThisMachineThroughRealLibgpiod() throws {
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--gpio-chip", "scangate-no-such-chip", "--led-green", "17"])
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let chip = try row(outcome, "gpio chip")
        XCTAssertEqual(chip.result, .fail)
        XCTAssertTrue(chip.detail.contains("no GPIO chip with label 'scangate-no-such-chip'"), chip.detail)
        XCTAssertFalse(chip.fix.isEmpty)
    }

    func testGPIOLinesRequestedBlinkedAndLeftInactiveWithFixesForBusyAndMissingLines() throws {
        let fake = MemoryGpiod.pi5()
        fake.hold(chip: "gpiochip0", offset: 22, consumer: "gpioset")
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--gpio-chip", "pinctrl-rp1", "--led-green", "GPIO17", "--buzzer", "23",
                                  "--led-red", "GPIO22", "--status-led", "GPIO99", "--gpio-active-low", "buzzer",
                                  "--blink"],
                                 system: DoctorSystem(gpiod: fake), blinkMilliseconds: 10)
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let chip = try row(outcome, "gpio chip")
        XCTAssertEqual(chip.result, .pass)
        XCTAssertEqual(chip.detail, "pinctrl-rp1 (gpiochip0) at /dev/gpiochip0, 54 lines")

        let green = try row(outcome, "gpio green")
        XCTAssertEqual(green.result, .pass, green.detail)
        XCTAssertTrue(green.detail.contains("line GPIO17"), green.detail)
        XCTAssertTrue(green.detail.contains("blinked 10 ms"), green.detail)
        let buzzer = try row(outcome, "gpio buzzer")
        XCTAssertEqual(buzzer.result, .pass, buzzer.detail)
        XCTAssertTrue(buzzer.detail.contains("active-low"), buzzer.detail)

        let red = try row(outcome, "gpio red")
        XCTAssertEqual(red.result, .fail)
        XCTAssertTrue(red.detail.contains("held by 'gpioset'"), red.detail)
        XCTAssertTrue(red.fix.hasPrefix("free the line"), red.fix)
        let status = try row(outcome, "gpio status")
        XCTAssertEqual(status.result, .fail)
        XCTAssertTrue(status.detail.contains("no such line GPIO99 on pinctrl-rp1"), status.detail)
        XCTAssertTrue(status.detail.contains("lines are GPIO0, GPIO1"), status.detail)
        XCTAssertFalse(status.fix.isEmpty)

        // Each blinked line went active once and back; all lines are inactive and released afterwards.
        let greenSets = fake.sets.filter { $0.offset == 17 }.map(\.value)
        XCTAssertEqual(greenSets.first, 1)
        XCTAssertEqual(greenSets.dropFirst().first, 0)
        XCTAssertEqual(fake.physical(offset: 17), 0)
        XCTAssertEqual(fake.physical(offset: 23), 1, "active-low buzzer rests high")
        XCTAssertNil(fake.consumer(offset: 17))
        XCTAssertNil(fake.consumer(offset: 23))
        XCTAssertEqual(fake.consumer(offset: 22), "gpioset", "the other consumer's line is untouched")
        XCTAssertEqual(fake.openChipHandles, 0)
        XCTAssertTrue(fake.requests.allSatisfy { $0.initialValue == 0 }, "lines start inactive")
    }

    func testGPIOWithoutBlinkDrivesNothingActive() throws {
        let fake = MemoryGpiod.pi5()
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--gpio-chip", "/dev/gpiochip0", "--led-green", "4"],
                                 system: DoctorSystem(gpiod: fake))
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        let green = try row(outcome, "gpio green")
        XCTAssertTrue(green.detail.contains("line GPIO4 (offset 4)"), green.detail)
        XCTAssertFalse(fake.sets.contains { $0.value == 1 })
        XCTAssertNil(fake.consumer(offset: 4))
    }

    // MARK: - Sound

    func testMissingBeepDeviceFails() throws {
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--beep", "2000:100", "--beep-device", "hw:99", "--test-beep"])
        XCTAssertEqual(outcome.exitCode, 4, outcome.stdout)
        let device = try row(outcome, "sound device")
        XCTAssertEqual(device.result, .fail)
        XCTAssertTrue(device.detail.contains("hw:99"), device.detail)
        XCTAssertTrue(device.fix.contains("aplay -l"), device.fix)
        XCTAssertTrue(device.fix.contains("--beep-device"), device.fix)
        XCTAssertEqual(try row(outcome, "sound beep").result, .skip)
    }

    func testTestBeepPlaysOnALSANullDevice() throws {
        let outcome = try doctor(["--camera", "sim:HELLO", "--capture-seconds", "0.2",
                                  "--beep", "1800:40,0:20,1800:40", "--beep-device", "null", "--test-beep"])
        XCTAssertEqual(outcome.exitCode, 0, outcome.stdout)
        XCTAssertTrue(try row(outcome, "sound device").detail.hasPrefix("ALSA null: "))
        XCTAssertEqual(try row(outcome, "sound beep").detail, "played 1800:40,0:20,1800:40 at volume 0.5 (did it beep?)")
    }

    // MARK: - As users run it

    func testBinaryAgainstTheSimulator() throws {
        let result = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "0.5"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdoutLines.contains { $0.hasPrefix("camera decode") && $0.contains("HELLO") },
                      result.stdoutText)
        XCTAssertEqual(result.stdoutLines.last, "4 passed, 0 failed")
        XCTAssertEqual(result.stderr, "")
    }

    func testBinaryWithMissingCameraAndBadConfig() throws {
        let missing = try ScangateProcess.run(["doctor", "--camera", "/dev/video99"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stdoutLines.contains { $0.hasPrefix("camera device ") && $0.contains(" FAIL ") },
                      missing.stdoutText)
        XCTAssertTrue(missing.stdoutText.contains("fix: device missing"), missing.stdoutText)

        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/bad.conf"
        try TestFiles.write("[serial]\nserial-baud = 12345\n", to: path)
        let bad = try ScangateProcess.run(["doctor", "--config", path])
        XCTAssertEqual(bad.status, 2)
        let lines = bad.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, bad.stderr)
        XCTAssertTrue(bad.stderr.hasPrefix("scangate doctor: \(path):2:"), bad.stderr)
        XCTAssertTrue(bad.stdoutText.contains("config  FAIL"), bad.stdoutText)

        let flag = try ScangateProcess.run(["doctor", "--capture-seconds", "x"])
        XCTAssertEqual(flag.status, 2)
        XCTAssertEqual(flag.stdout, [])
    }
}
