import Core
@testable import MQTT
import Foundation
import Platform
@testable import Service
import XCTest

/// The MQTT spool on a full disk: events that cannot be written are dropped at once and counted, named
/// in the state document, `scangate status --json`, the metrics and a log line naming the spool and the
/// full file system; once there is room, events are spooled again.
final class MQTTFullDiskTests: XCTestCase {
    func testEventsThatCannotBeSpooledAreDroppedCountedAndNamed() throws {
        let library = try MosquittoLibrary()
        let port = try FreePort.make()   // no broker: what is written stays in the spool
        let log = LogCapture()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let disk = TestFullDisk(at: .write)
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: port, spool: spool), library: library, log: log,
                                                writeFaults: disk.faults)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        for seq in 1...3 as ClosedRange<UInt64> {
            output.report(MQTTTestEvents.event(seq: seq, text: "CODE-\(seq)"))
            XCTAssertTrue(waitUntil(10) { output.link.noSpaceDropped == seq }, "event \(seq): \(output.link)")
        }
        let link = output.link
        XCTAssertEqual(link.spool.records, 0)
        XCTAssertEqual(link.dropped, 3)
        XCTAssertEqual(link.queueDropped, 0, "not blamed on a slow disk")
        XCTAssertEqual(output.context.queuedCount, 0, "nothing held in memory")
        XCTAssertEqual(output.health.state, .down)
        XCTAssertTrue(output.health.lastError?.contains("No space left on device (ENOSPC)") ?? false, "\(output.health)")
        XCTAssertTrue(log.all.contains { $0.contains("cannot write the spool") && $0.contains(spool) && $0.contains("is full")
                                         && $0.contains("dropped 1 event, 1 dropped for lack of space so far") },
                      log.all.joined(separator: "\n"))

        // What a consumer parses: the retained state document, the status socket's JSON, the metrics file.
        let state = MQTTJSON.state(MQTTTestEvents.state(), kiosk: "kiosk-1", link: link, wallTimeNanoseconds: 0)
        let mqtt = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(state.utf8)) as? [String: Any])?["mqtt"] as? [String: Any])
        XCTAssertEqual(mqtt["spool_dropped_no_space"] as? Int, 3, state)
        XCTAssertEqual(mqtt["queue_dropped"] as? Int, 0, state)
        let report = StatusReport(status: "scanning", version: "t", pid: 1, uptimeSeconds: 1,
                                  mqtt: StatusReport.MQTT(connected: link.connected, detail: link.detail, spoolEvents: link.spool.records,
                                                          spoolBytes: link.spool.bytes, dropped: link.dropped, droppedNoSpace: link.noSpaceDropped))
        let status = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])?["mqtt"] as? [String: Any])
        XCTAssertEqual(status["dropped"] as? Int, 3, report.json)
        XCTAssertEqual(status["dropped_no_space"] as? Int, 3, report.json)
        XCTAssertEqual(try StatusReport(json: Array(report.json.utf8)).mqtt?.droppedNoSpace, 3)
        var metrics = MetricsSnapshot()
        metrics.mqttSpoolDropped = link.dropped
        metrics.mqttSpoolDroppedNoSpace = link.noSpaceDropped
        let text = PrometheusText.render(metrics)
        XCTAssertTrue(text.contains("\nscangate_mqtt_spool_dropped_no_space_total 3\n"), text)
        XCTAssertTrue(text.contains("\nscangate_mqtt_spool_dropped_total 3\n"), text)

        // Room again: the next event is spooled, the output is no longer down, the count stays.
        disk.clear()
        output.report(MQTTTestEvents.event(seq: 4, text: "CODE-4"))
        XCTAssertTrue(waitUntil(10) { output.link.spool.records == 1 }, "\(output.link)")
        XCTAssertEqual(output.link.noSpaceDropped, 3)
        XCTAssertNotEqual(output.health.state, .down)
        XCTAssertTrue(log.contains("writing again"), log.all.joined(separator: "\n"))
    }

    /// An older daemon's status (no dropped_no_space) still reads, as 0.
    func testStatusWithoutTheNoSpaceCountReadsAsZero() throws {
        let report = StatusReport(status: "scanning", version: "t", pid: 1, uptimeSeconds: 1,
                                  mqtt: StatusReport.MQTT(connected: true, detail: "d", spoolEvents: 0, spoolBytes: 0, dropped: 2))
        let old = report.json.replacingOccurrences(of: ",\"dropped_no_space\":0", with: "")
        XCTAssertFalse(old.contains("dropped_no_space"), old)
        XCTAssertEqual(try StatusReport(json: Array(old.utf8)).mqtt?.droppedNoSpace, 0)
        XCTAssertEqual(try StatusReport(json: Array(old.utf8)).mqtt?.dropped, 2)
    }
}
