#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// SIGTERM while the serial line is stuck: the daemon ends cleanly (exit 0) and promptly.
final class ShutdownTests: XCTestCase {
    func testSIGTERMDuringABlockedSerialWriteExitsCleanly() throws {
        let pty = try PseudoTerminal()
        // Suspend output on the line: the daemon's frame stays queued, its write cannot complete.
        XCTAssertEqual(tcflow(pty.device, TCOOFF), 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = ["run", "--camera", "sim:STUCK", "--serial", pty.name, "--serial-write-timeout-ms", "30000",
                             "--serial-ttl-ms", "60000"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        let firstLine = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = out.fileHandleForReading.availableData
            firstLine.signal()
        }
        XCTAssertEqual(firstLine.wait(timeout: .now() + 30), .success, "no event within 30 s")
        // The frame is now queued on a line that does not move.
        let sent = Date()
        process.terminate()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "did not stop within 10 s of SIGTERM")
        let seconds = Date().timeIntervalSince(sent)
        print("SIGTERM with a blocked serial write: exited after \(String(format: "%.3f", seconds)) s")
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("SIGTERM"), log)
        XCTAssertEqual(tcflow(pty.device, TCOON), 0)
    }
}
