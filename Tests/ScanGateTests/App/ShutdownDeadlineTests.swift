#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// SIGTERM always ends the process: with the decode queue stuck in a call that never returns (the
/// `hang-decode` test fault), the signal thread gives up after stop-timeout-ms, drives the outputs
/// inactive itself, and exits 0. (Exit times are measured against the bound in the HIL suite, on
/// gpio-sim; here the path itself is checked.)
final class ShutdownDeadlineTests: XCTestCase {
    func testSIGTERMEndsTheProcessWhenADecodeNeverReturns() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["SCANGATE_FAULT"] = "hang-decode"
        let prom = try TestFiles.temporaryDirectory() + "/scangate.prom"
        let daemon = try DaemonUnderTest(["run", "--camera", "sim:STUCK", "--stop-timeout-ms", "500", "--status-socket", "off",
                                          "--metrics-textfile", prom, "--metrics-interval-s", "1"],
                                         environment: environment)
        defer { daemon.stop() }
        XCTAssertTrue(waitUntil(20) { daemon.stdout.contains { $0.contains("\"data\":\"STUCK\"") } }, "\(daemon.stderr)")
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(seconds: 30)
        XCTAssertEqual(status, 0, "exit 0: a stop that was asked for; \(daemon.stderr)")
        XCTAssertTrue(daemon.stderr.contains { $0.hasPrefix("<3>shutdown did not finish within 500 ms (stop-timeout-ms)") },
                      "\(daemon.stderr)")
        // The metrics file does not go on saying the daemon is up.
        let metrics = try String(contentsOfFile: prom, encoding: .utf8)
        XCTAssertTrue(metrics.contains("\nscangate_up 0\n"), metrics)
    }

    /// Without a stuck thread the deadline never fires: the normal path closes everything in time.
    func testANormalStopDoesNotNeedTheDeadline() throws {
        let daemon = try DaemonUnderTest(["run", "--camera", "sim:FREE", "--stop-timeout-ms", "3000"])
        defer { daemon.stop() }
        XCTAssertTrue(waitUntil(20) { daemon.stdout.contains { $0.contains("\"data\":\"FREE\"") } }, "\(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)
        XCTAssertFalse(daemon.stderr.contains { $0.contains("shutdown did not finish") }, "\(daemon.stderr)")
        XCTAssertTrue(daemon.stderr.contains { $0.contains("status: stopping") }, "\(daemon.stderr)")
    }
}
