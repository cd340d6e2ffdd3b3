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

    func testToolCommandsRefuseBadValuesWithRunsWording() throws {
        // One line, exit 2, the flag and what is allowed, worded as run's options are.
        try assertBadInput(["make-code", "X", "--scale", "0"], mentions: "--scale: '0' is not a whole number from 1 to 64")
        try assertBadInput(["make-code", "X", "--out"], mentions: "--out needs a FILE.png or FILE.pgm")
        try assertBadInput(["render", "sim:X", "--out", "/tmp/x.y4m", "--width", "wide"],
                           mentions: "--width: 'wide' is not a whole number from 16 to 4096")
        try assertBadInput(["render", "sim:X", "--out", "/tmp/x.y4m", "--fps", "0"],
                           mentions: "--fps: '0' is not a number from 0.5 to 240")
        try assertBadInput(["decode-image", "--corpus"], mentions: "--corpus needs a DIR")
        try assertBadInput(["decode-image", "--symbologies"], mentions: "--symbologies needs a LIST")
        try assertBadInput(["bench", "--rounds", "0"], mentions: "--rounds: '0' is not a whole number from 1 to 10000000")
        try assertBadInput(["bench", "--memory-frames"], mentions: "--memory-frames needs a whole number from 1 to 10000000")
        try assertBadInput(["soak", "--frames", "10"], mentions: "--frames: '10' is not a whole number from 300 to 100000000")
        try assertBadInput(["soak", "--bogus"], mentions: "unknown option --bogus")
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

    /// The events that matter to a consumer: symbology, payload, frame.
    func events(_ r: ScangateProcess.Result) throws -> [String] {
        try r.stdoutLines.map { line in
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return "\(o["seq"] ?? "") \(o["symbology"] ?? "") \(o["data"] ?? o["data_base64"] ?? "") \(o["frame"] ?? "")"
        }
    }

    func testReplayOfY4MAndPGMFolderGivesTheSameEventsAsTheScenario() throws {
        let dir = try TestFiles.temporaryDirectory()
        let scenario = dir + "/door.scenario"
        try TestFiles.write("""
            fps 10
            frames 90
            noise 2
            code qr "DOOR-1" frames 5-20 at 40,40 module 4
            code ean13 "4006381333931" frames 30-40 module 3
            code qr "DOOR-2" frames 50-60 module 4 rotate 15
            code qr "DOOR-1" frames 80-89 at 300,200 module 4
            """, to: scenario)
        let common = ["--fast", "--symbologies", "qr,ean13"]
        let sim = try ScangateProcess.run(["run", "--camera", "sim:" + scenario] + common)
        XCTAssertEqual(sim.status, 0, sim.stderr)
        let expected = try events(sim)
        XCTAssertEqual(expected.count, 4, "\(expected)")

        let y4m = dir + "/door.y4m"
        XCTAssertEqual(try ScangateProcess.run(["render", scenario, "--out", y4m]).status, 0)
        let fromY4M = try ScangateProcess.run(["run", "--camera", "replay:" + y4m] + common)
        XCTAssertEqual(fromY4M.status, 0, fromY4M.stderr)
        XCTAssertEqual(try events(fromY4M), expected)

        let frames = dir + "/frames"
        XCTAssertEqual(try ScangateProcess.run(["render", scenario, "--out", frames, "--format", "pgm"]).status, 0)
        let fromPGM = try ScangateProcess.run(["run", "--camera", "replay:" + frames, "--fps", "10"] + common)
        XCTAssertEqual(fromPGM.status, 0, fromPGM.stderr)
        XCTAssertEqual(try events(fromPGM), expected)
    }

    func testTruncatedY4MExits2AfterTheEventsBeforeIt() throws {
        let dir = try TestFiles.temporaryDirectory()
        let scenario = dir + "/t.scenario"
        try TestFiles.write("fps 10\nframes 20\ncode qr \"T\" frames 0-19 module 4\n", to: scenario)
        let y4m = dir + "/t.y4m"
        XCTAssertEqual(try ScangateProcess.run(["render", scenario, "--out", y4m]).status, 0)
        let full = try Data(contentsOf: URL(fileURLWithPath: y4m))
        try full.prefix(full.count - 1000).write(to: URL(fileURLWithPath: dir + "/cut.y4m"))
        let r = try ScangateProcess.run(["run", "--camera", "replay:" + dir + "/cut.y4m", "--fast", "--output", "text"])
        XCTAssertEqual(r.status, 2)
        XCTAssertEqual(r.stdoutLines, ["QR-Code:T"], "the code read before the cut is still reported")
        XCTAssertTrue(r.stderr.contains("cut.y4m"), r.stderr)
    }

    func testMakeCodeDecodeImageRoundTripForEveryECCLevel() throws {
        let dir = try TestFiles.temporaryDirectory()
        for ecc in ["L", "M", "Q", "H"] {
            let png = dir + "/code-\(ecc).png"
            XCTAssertEqual(try ScangateProcess.run(["make-code", "ROUND-TRIP-\(ecc)", "--ecc", ecc, "--out", png]).status, 0)
            let r = try ScangateProcess.run(["decode-image", png])
            XCTAssertEqual(r.status, 0)
            XCTAssertEqual(r.stdoutText, "ROUND-TRIP-\(ecc)\n")
        }
        let long = String(repeating: "0123456789abcdefghij", count: 50)
        let pgm = dir + "/long.pgm"
        XCTAssertEqual(try ScangateProcess.run(["make-code", long, "--out", pgm]).status, 0)
        XCTAssertEqual(try ScangateProcess.run(["decode-image", pgm]).stdoutText, long + "\n")
    }

    func testBinaryPayloadComesOutAsBase64InJSON() throws {
        let dir = try TestFiles.temporaryDirectory()
        let bytes: [UInt8] = [0x00, 0xFF, 0xFE, 0x80, 0x0D, 0x0A, 0x41]
        try TestFiles.write(bytes: bytes, to: dir + "/payload.bin")
        let png = dir + "/bin.png"
        XCTAssertEqual(try ScangateProcess.run(["make-code", "--data-file", dir + "/payload.bin", "--out", png]).status, 0)
        let raw = try ScangateProcess.run(["decode-image", "--raw-qr", png])
        XCTAssertEqual(raw.stdout, bytes + [0x0A], "decode-image --raw-qr prints the exact bytes")
        // Through the daemon: a scenario showing that binary payload.
        let scenario = dir + "/bin.scenario"
        try TestFiles.write("fps 10\nframes 10\ncode qr \"\\x00\\xff\\xfe\\x80\\r\\nA\" frames 0-9 module 4\n", to: scenario)
        let r = try ScangateProcess.run(["run", "--camera", "sim:" + scenario, "--fast"])
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdoutLines.first?.utf8 ?? "".utf8)) as? [String: Any])
        XCTAssertNil(o["data"])
        XCTAssertEqual((o["data_base64"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init), bytes)
    }
}
