import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// A spool whose lock is still held (a reload rebuilt the output while the old session was stuck, say in
/// a DNS lookup): the new output does not fail for good; its spool thread waits for the lock, says so,
/// and starts spooling once it is free.
final class MQTTSpoolLockTests: XCTestCase {
    func testTheNewOutputWaitsForTheSpoolLockAndThenSpools() throws {
        let library = try MosquittoLibrary()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let log = LogCapture()
        let holder = try EventSpool(directory: spool, limits: SpoolLimits(maxBytes: 1 << 20, maxAgeNanoseconds: 0), logger: log.logger)
        let port = try FreePort.make()   // no broker: the events stay in the spool
        var settings = MQTTTestEvents.settings(port: port, spool: spool)
        settings.commands = true
        let output = try MQTTTestEvents.output(settings, library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        for seq in 1...3 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "while locked \(seq)")) }
        XCTAssertTrue(waitUntil(20) { log.contains("in use by another scangate or MQTT output") && log.contains("retrying every 2 s") },
                      log.all.joined(separator: "\n"))
        XCTAssertEqual(output.health.state, .down, "said in health while it waits: \(output.health)")
        XCTAssertEqual(output.link.spool.records, 0)
        holder.close()
        XCTAssertTrue(waitUntil(15) { output.link.spool.records == 3 }, "\(output.link.spool) \(log.all.suffix(3))")
        XCTAssertTrue(log.contains("open now; "), log.all.joined(separator: "\n"))
        XCTAssertNotEqual(output.health.state, .down)
        if case .failure(let e) = output.context.commandIDs() { XCTFail("the command id file comes with the spool: \(e)") }
    }

    /// Closing an output releases the spool's lock once its spool thread is done, so the next one on the
    /// same directory opens it at once.
    func testClosingAnOutputReleasesTheLock() throws {
        let library = try MosquittoLibrary()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let settings = MQTTTestEvents.settings(port: try FreePort.make(), spool: spool)
        let first = try MQTTTestEvents.output(settings, library: library, log: LogCapture())
        first.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000))
        XCTAssertNoThrow(try EventSpool(directory: spool, limits: SpoolLimits(maxBytes: 1 << 20, maxAgeNanoseconds: 0),
                                        logger: LogCapture().logger).close())
    }
}
