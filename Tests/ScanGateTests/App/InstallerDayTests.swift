#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Images
import XCTest

/// Issue 27's smaller findings, each through the binary as the installer met it: bare `scangate`, a
/// `--oneshot` run on a missing camera, a reload that logged like a crash, decode-image's silence, the
/// doctor's advice in flag names without a line, doubled backslashes, and a bench that could not be
/// interrupted.
final class InstallerDayTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testBareScangatePrintsHelpInsteadOfRunningTheDaemon() throws {
        let bare = try ScangateProcess.run([], timeout: 10)
        XCTAssertEqual(bare.status, 2)
        XCTAssertTrue(bare.stderr.contains("Usage: scangate COMMAND"), bare.stderr)
        XCTAssertTrue(bare.stderr.contains("no command given (the daemon is `scangate run`)"), bare.stderr)
        XCTAssertFalse(bare.stderr.contains("/dev/video0"), "it did not start reading a camera: \(bare.stderr)")
    }

    func testOneshotOnAMissingCameraExitsAtOnce() throws {
        let run = try ScangateProcess.run(["run", "--camera", dir + "/no-such-video", "--oneshot"], timeout: 30)
        XCTAssertEqual(run.status, 3, run.stderr)
        XCTAssertTrue(run.stderr.contains("no-such-video") && run.stderr.contains("--oneshot does not wait for the camera"), run.stderr)
    }

    func testAReloadLogsReloadedNotStopped() throws {
        let path = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = sim:HELLO\n[debounce]\nhold-off-ms = 1500\n", to: path)
        let daemon = try RunningScangate(["run", "--config", path, "--status-socket", dir + "/status.sock"], in: dir)
        defer { daemon.kill9() }
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("status: scanning") } }, daemon.stderrText)
        try TestFiles.write("[camera]\ncamera = sim:HELLO\n[debounce]\nhold-off-ms = 2000\n", to: path)
        kill(daemon.process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("reloaded: defaults, then \(path); scanning") } },
                      daemon.stderrText)
        XCTAssertTrue(daemon.stderrText.contains("reloading the configuration (this run: "), daemon.stderrText)
        XCTAssertFalse(daemon.stderrText.contains("stopped: "), "a reload is not a stop: \(daemon.stderrText)")
        kill(daemon.process.processIdentifier, SIGTERM)
        XCTAssertEqual(daemon.waitForExit(seconds: 30), 0)
        XCTAssertTrue(daemon.stderrText.contains("stopped: "), daemon.stderrText)
    }

    func testDecodeImageNamesTheFilesWithNothingInThem() throws {
        let blank = dir + "/blank.png", code = dir + "/code.png"
        try ImageFile.write(LumaImage(width: 64, height: 64, fill: 255), to: blank, format: .png)
        XCTAssertEqual(try ScangateProcess.run(["make-code", "HELLO", "--out", code]).status, 0)
        let one = try ScangateProcess.run(["decode-image", blank])
        XCTAssertEqual(one.status, 1)
        XCTAssertEqual(one.stderr, "scangate: \(blank): no code found\n")
        let both = try ScangateProcess.run(["decode-image", blank, code])
        XCTAssertEqual(both.status, 0)
        XCTAssertEqual(both.stdoutText, "HELLO\n")
        XCTAssertEqual(both.stderr, "scangate: \(blank): no code found\n")
    }

    /// An error in the file is told in the file's words: its keys (not flags), with the file and line.
    func testConfigErrorsNameTheKeyAndItsLine() throws {
        let path = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = sim:HELLO\n\n[door-relay]\ndoor-relay = GPIO25\n", to: path)
        for command in [["check-config", path], ["doctor", "--config", path], ["run", "--config", path]] {
            let result = try ScangateProcess.run(command, timeout: 30)
            XCTAssertEqual(result.status, 2, "\(command[0]): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("\(path):5: door-relay needs a GPIO chip: set door-relay-chip or gpio-chip"),
                          "\(command[0]): \(result.stderr)")
        }
        // Given as flags, the same error speaks of flags.
        let flags = try ScangateProcess.run(["check-config", path, "--door-relay", "GPIO26"])
        XCTAssertTrue(flags.stderr.contains("--door-relay needs a GPIO chip"), flags.stderr)
    }

    func testDoctorShowsASerialPrefixWithOneBackslash() throws {
        let pty = try PseudoTerminal()
        let doctor = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "0.2", "--serial", pty.name,
                                              "--serial-prefix", "\\x02", "--test-frame"], timeout: 60)
        let row = doctor.stdoutText.split(separator: "\n").filter { $0.contains("serial frame") }
        XCTAssertEqual(row.count, 1, doctor.stdoutText)
        XCTAssertTrue(row.first?.hasSuffix("wrote 16 bytes: \\x02SCANGATE-TEST\\r\\n") == true, doctor.stdoutText)
        XCTAssertFalse(doctor.stdoutText.contains("\\\\x02"), doctor.stdoutText)
    }

    /// The progress line moves (the stage and its seconds), and Ctrl-C prints the figures measured so far
    /// (none yet, in the first stage: the table's head) and exits 130.
    func testBenchProgressMovesAndCtrlCPrintsWhatItMeasured() throws {
        let bench = try RunningScangate(["bench", "--memory-frames", "1000", "--rounds", "1"], in: dir)
        defer { bench.kill9() }
        // Not a terminal: a line every 5 s, with the seconds spent in the stage ("throughput round 1/1, 5 s").
        // Any stage's line 5 s or more into it says the line moves (a fast stage ends before its first).
        let movedOn = { (line: String) -> Bool in
            guard line.hasPrefix("bench: "), line.hasSuffix(" s"), let comma = line.lastIndex(of: ",") else { return false }
            return Int(line[line.index(after: comma)...].dropLast(2).trimmingCharacters(in: .whitespaces)).map { $0 >= 5 } ?? false
        }
        XCTAssertTrue(waitUntil(120) { bench.stderrText.contains("bench: 1/") && bench.stderrLines.contains(where: movedOn) },
                      bench.stderrText)
        kill(bench.process.processIdentifier, SIGINT)
        XCTAssertEqual(bench.waitForExit(seconds: 60), 130, bench.stderrText)
        // The stage, as the line last named it ("1/12 throughput", or an inner step "throughput round 1/1"),
        // and what was measured before it. Which stage that is depends on the decoder's speed (zxing-cpp's
        // first stage can end within the 5 s): any stage the progress line named.
        let interrupted = bench.stderrLines.first { $0.hasPrefix("bench: interrupted during ") } ?? ""
        let stage = interrupted.dropFirst("bench: interrupted during ".count).split(separator: ";").first.map(String.init) ?? "?"
        XCTAssertTrue(bench.stderrText.contains("bench: " + stage), "\(stage) was named by the progress line: \(bench.stderrText)")
        XCTAssertTrue(interrupted.contains(" figures measured before it"), bench.stderrText)
        XCTAssertFalse(bench.stdoutText.isEmpty, "the table, with what there was")
    }
}
