import Foundation
import XCTest

/// The scangate binary as users run it: exit codes, one clear line on stderr, nothing on stdout.
final class CommandLineTests: XCTestCase {
    func assertBadInput(_ args: [String], mentions: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try ScangateProcess.run(args)
        XCTAssertEqual(r.status, 2, "exit 2 for \(args)", file: file, line: line)
        XCTAssertTrue(r.stdout.isEmpty, "nothing on stdout, got \(r.stdoutText)", file: file, line: line)
        let lines = r.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one line on stderr, got \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(mentions), "stderr names \(mentions): \(r.stderr)", file: file, line: line)
    }

    func testUnknownFlagExits2() throws {
        try assertBadInput(["run", "--camera", "sim:X", "--frobnicate"], mentions: "--frobnicate")
        try assertBadInput(["run", "--width", "abc"], mentions: "--width")
        try assertBadInput(["run", "--symbologies", "qr,pdf999"], mentions: "pdf999")
        try assertBadInput(["nonsense-command"], mentions: "nonsense-command")
        try assertBadInput(["decode-image", "--bogus", "x.png"], mentions: "--bogus")
    }

    func testMalformedScenarioExits2NamingFileAndLine() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/bad.scenario"
        try TestFiles.write("fps 10\ncode qr \"OK\" frames 1-5\ncode qr frames 7-9\n", to: path)
        try assertBadInput(["run", "--camera", "sim:" + path, "--fast"], mentions: "bad.scenario:3")
    }

    func testUnreadableImageExits2() throws {
        let dir = try TestFiles.temporaryDirectory()
        try TestFiles.write("this is not an image", to: dir + "/garbage.png")
        try assertBadInput(["decode-image", dir + "/garbage.png"], mentions: "garbage.png")
        try assertBadInput(["decode-image", dir + "/missing.png"], mentions: "missing.png")
    }

    func testDecodeImageOfBlankImageExits1() throws {
        let dir = try TestFiles.temporaryDirectory()
        var pgm = Array("P5\n64 64\n255\n".utf8)
        pgm += [UInt8](repeating: 200, count: 64 * 64)
        try TestFiles.write(bytes: pgm, to: dir + "/blank.pgm")
        let r = try ScangateProcess.run(["decode-image", dir + "/blank.pgm"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.isEmpty)
    }

    func testSimulatedRunPrintsJSONLinesAndMaxFramesEndsIt() throws {
        let r = try ScangateProcess.run(["run", "--camera", "sim:HELLO", "--fast", "--max-frames", "200"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertGreaterThanOrEqual(r.stdoutLines.count, 2)
        for line in r.stdoutLines {
            let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(obj["data"] as? String, "HELLO")
            XCTAssertEqual(obj["symbology"] as? String, "QR-Code")
        }
        XCTAssertFalse(r.stderr.contains("HELLO\"}"), "events never go to stderr as JSON")
    }

    func testOneshotExitsAfterFirstCodeInTextFormat() throws {
        let r = try ScangateProcess.run(["run", "--camera", "sim:ONCE", "--oneshot", "--output", "text"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdoutLines, ["QR-Code:ONCE"])
    }

    func testSIGTERMExits0() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = ["run", "--camera", "sim:TERM"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        // Wait for the first event line: the daemon is running.
        let firstLine = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = out.fileHandleForReading.availableData
            firstLine.signal()
        }
        XCTAssertEqual(firstLine.wait(timeout: .now() + 30), .success, "no event within 30 s")
        process.terminate()   // SIGTERM
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "did not stop within 10 s of SIGTERM")
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
    }

    func testHelpEverywhere() throws {
        for args in [["--help"], ["run", "--help"], ["decode-image", "--help"]] {
            let r = try ScangateProcess.run(args)
            XCTAssertEqual(r.status, 0)
            XCTAssertTrue(r.stdoutText.contains("Usage"), "\(args)")
        }
    }
}
