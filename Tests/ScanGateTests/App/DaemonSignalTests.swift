#if canImport(Glibc)
import Glibc
#endif
import Core
import Foundation
import XCTest

/// `scangate run` under a real NOTIFY_SOCKET, driven by signals as systemd and an operator drive it.
final class DaemonSignalTests: XCTestCase {
    /// Collects a child's output lines as they come.
    final class Lines: @unchecked Sendable {
        private let lines = PosixMutex<[String]>([])
        private let partial = PosixMutex<[UInt8]>([])
        /// Signalled once at end of file: every line the child wrote has been collected.
        let ended = DispatchSemaphore(value: 0)
        func attach(_ handle: FileHandle) {
            handle.readabilityHandler = { [self] h in
                let data = h.availableData
                guard !data.isEmpty else { h.readabilityHandler = nil; ended.signal(); return }
                partial.withLock { p in
                    p += data
                    while let nl = p.firstIndex(of: 0x0A) {
                        let line = String(decoding: p[..<nl], as: UTF8.self)
                        lines.withLock { $0.append(line) }
                        p.removeSubrange(...nl)
                    }
                }
            }
        }
        var all: [String] { lines.withLock { $0 } }
    }

    func testNotifyWatchdogPauseReloadAndStop() throws {
        let notify = try ServiceNotifySocket()
        defer { notify.close() }
        setenv("WATCHDOG_USEC", "2000000", 1)
        let dir = try TestFiles.temporaryDirectory()
        let conf = dir + "/scangate.conf"
        try TestFiles.write("[camera]\ncamera = sim:NOTIFY\n[output]\noutput = json\n", to: conf)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = ["run", "--config", conf]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdout = Lines(), stderr = Lines()
        stdout.attach(out.fileHandleForReading)
        stderr.attach(err.fileHandleForReading)
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        unsetenv("WATCHDOG_USEC")

        var messages: [String] = []
        func waitFor(_ wanted: String, seconds: Double = 15) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                guard let m = notify.receive(timeoutSeconds: deadline.timeIntervalSinceNow) else { return false }
                messages.append(m)
                if m.split(separator: "\n").contains(where: { $0 == wanted }) { return true }
            }
            return false
        }
        func waitForLine(_ lines: Lines, seconds: Double = 15, _ match: (String) -> Bool) -> Bool {
            waitUntil(seconds) { lines.all.contains(where: match) }
        }

        XCTAssertTrue(waitFor("READY=1"), "READY=1 once the camera streams: \(messages)")
        XCTAssertTrue(waitFor("WATCHDOG=1"), "watchdog fed while frames are decoded: \(messages)")
        XCTAssertTrue(waitForLine(stdout) { $0.contains("\"data\":\"NOTIFY\"") }, "a JSON event")

        kill(process.processIdentifier, SIGUSR1)
        XCTAssertTrue(waitFor("STATUS=paused"), "\(messages)")
        kill(process.processIdentifier, SIGUSR1)
        XCTAssertTrue(waitFor("STATUS=scanning"), "\(messages)")

        // Reload with another output format: the camera settings are the same, so the stream stays open.
        try TestFiles.write("[camera]\ncamera = sim:NOTIFY\n[output]\noutput = text\n", to: conf)
        kill(process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitFor("RELOADING=1"), "\(messages)")
        XCTAssertTrue(waitFor("READY=1"), "ready again after the reload: \(messages)")
        XCTAssertTrue(waitForLine(stdout) { $0 == "QR-Code:NOTIFY" }, "events in the new format: \(stdout.all)")
        XCTAssertTrue(stderr.all.contains { $0.contains("the stream stays open") }, "\(stderr.all)")

        // A broken file on reload: logged, the running configuration kept.
        try TestFiles.write("[camera]\nwidht = 5\n", to: conf)
        kill(process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitForLine(stderr) { $0.hasPrefix("<3>") && $0.contains("reload failed") && $0.contains("widht") },
                      "\(stderr.all)")
        XCTAssertTrue(process.isRunning)

        process.terminate()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(waitFor("STOPPING=1", seconds: 5), "\(messages)")
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertFalse(stdout.all.contains { $0.contains("<") }, "no log line on stdout")
    }
}
