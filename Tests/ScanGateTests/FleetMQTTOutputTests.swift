import Core
@testable import Fleet
import Foundation
import Outputs
import Platform
import Synchronization
import XCTest

/// The MQTT output against Debian's mosquitto broker, with mosquitto_sub as the consumer.
final class FleetMQTTOutputTests: XCTestCase {
    var library: MosquittoLibrary!

    override func setUpWithError() throws {
        library = try MosquittoLibrary()
    }

    /// The events of `messages` by id, in arrival order, duplicates dropped as a consumer would.
    func uniqueEvents(_ messages: [MQTTTestSubscriber.Message]) -> [[String: Any]] {
        var seen = Set<String>()
        var out: [[String: Any]] = []
        for m in messages {
            guard let json = m.json, let id = json["id"] as? String else { continue }
            if seen.insert(id).inserted { out.append(json) }
        }
        return out
    }

    func testEventsArriveOnceInOrderByIdAndStatusIsRetainedOnline() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/#"])
        sub.waitSubscribed(port: broker.port)
        let log = RecordingLog()
        let output = try FleetTestEvents.output(FleetTestEvents.settings(port: broker.port, spool: spool), library: library, log: log)
        for seq in 1...50 as ClosedRange<UInt64> { output.report(FleetTestEvents.event(seq: seq, text: "code-\(seq)")) }
        XCTAssertTrue(sub.wait(timeout: 20) { self.uniqueEvents($0.filter { $0.topic == prefix + "/event" }).count == 50 },
                      "50 events on \(prefix)/event; got \(sub.messages(on: prefix + "/event").count)")
        let events = uniqueEvents(sub.messages(on: prefix + "/event"))
        XCTAssertEqual(events.map { $0["data"] as? String }, (1...50).map { "code-\($0)" }, "in order")
        XCTAssertEqual(events.map { $0["seq"] as? Int }, Array(1...50))
        XCTAssertEqual(Set(events.compactMap { $0["kiosk"] as? String }), ["kiosk-1"])
        let ids = events.compactMap { $0["id"] as? String }
        XCTAssertEqual(Set(ids).count, 50)
        XCTAssertTrue(ids.allSatisfy { $0.hasPrefix(output.ids.run + "-") }, "ids are <run>-<seq>: \(ids.prefix(3))")
        XCTAssertEqual(sub.messages(on: prefix + "/event").count, 50, "no duplicate while the connection stayed up")
        // Each event is the stdout JSON line with id and kiosk in front.
        let first = try XCTUnwrap(sub.messages(on: prefix + "/event").first)
        XCTAssertTrue(first.text.hasPrefix("{\"id\":\"\(output.ids.run)-1\",\"kiosk\":\"kiosk-1\",\"seq\":1,"), first.text)

        // status: retained online, as a new subscriber sees it.
        let late = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status", prefix + "/state"])
        XCTAssertTrue(late.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/status" } && $0.contains { $0.topic == prefix + "/state" } })
        let status = try XCTUnwrap(late.messages(on: prefix + "/status").first)
        XCTAssertEqual(status.text, "online")
        XCTAssertTrue(status.retained)
        let state = try XCTUnwrap(late.messages(on: prefix + "/state").first?.json)
        XCTAssertEqual(state["status"] as? String, "scanning")
        XCTAssertEqual(state["version"] as? String, "0.1.0-test")
        XCTAssertEqual((state["mqtt"] as? [String: Any])?["connected"] as? Bool, true)
        XCTAssertEqual((state["counters"] as? [String: Any])?["frames_captured"] as? Int, 100)
        XCTAssertEqual(((state["components"] as? [[String: Any]])?.first)?["name"] as? String, "camera")

        XCTAssertTrue(waitUntil(timeout: 10) { output.link.spool.records == 0 && output.link.acknowledged == 50 },
                      "every event acknowledged and out of the spool: \(output.link)")
        XCTAssertEqual(output.health.state, .ok)

        // A clean exit: offline, retained.
        output.close(deadline: MonotonicInstant.now().adding(milliseconds: 5000))
        XCTAssertTrue(sub.wait(timeout: 10) { $0.last { $0.topic == prefix + "/status" }?.text == "offline" })
        let after = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status"])
        XCTAssertTrue(after.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/status" } })
        XCTAssertEqual(after.messages(on: prefix + "/status").first?.text, "offline")
        XCTAssertEqual(after.messages(on: prefix + "/status").first?.retained, true)
        XCTAssertTrue(broker.log.contains("Client kiosk-1 disconnected."), "a DISCONNECT, not a lost connection:\n\(broker.log)")
    }

    /// A connection that ends without DISCONNECT (what kill -9 or a pulled cable does to the TCP
    /// session): the broker publishes the will, `offline` retained; the session reconnects, `online` again.
    func testConnectionLostWithoutDisconnectPublishesTheWillThenReconnects() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status", prefix + "/event"])
        sub.waitSubscribed(port: broker.port)
        let log = RecordingLog()
        let output = try FleetTestEvents.output(FleetTestEvents.settings(port: broker.port, spool: spool), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(sub.wait(timeout: 10) { $0.last { $0.topic == prefix + "/status" }?.text == "online" })
        output.testHookDropConnection()
        XCTAssertTrue(sub.wait(timeout: 15) { $0.filter { $0.topic == prefix + "/status" }.map(\.text).suffix(2) == ["offline", "online"] },
                      "offline (the will), then online again: \(sub.messages(on: prefix + "/status").map(\.text))")
        XCTAssertTrue(broker.log.contains("Client kiosk-1 closed its connection.") || broker.log.contains("kiosk-1 disconnected"),
                      broker.log)
        XCTAssertTrue(log.contains("lost the connection to broker 127.0.0.1:\(broker.port)"), log.all.joined(separator: "\n"))
        output.report(FleetTestEvents.event(seq: 1, text: "after the reconnect"))
        XCTAssertTrue(sub.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/event" } })
    }

    /// The session ends as kill -9 leaves it (no DISCONNECT, no offline message, nothing more written):
    /// the broker publishes the will.
    func testCrashPublishesTheWill() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status"])
        sub.waitSubscribed(port: broker.port)
        let output = try FleetTestEvents.output(FleetTestEvents.settings(port: broker.port, spool: spool), library: library, log: RecordingLog())
        XCTAssertTrue(sub.wait(timeout: 10) { $0.last?.text == "online" })
        output.testHookCrash()
        XCTAssertTrue(sub.wait(timeout: 15) { $0.last?.text == "offline" }, "\(sub.messages.map(\.text))")
        XCTAssertEqual(sub.messages.last?.retained, false, "delivered live (the retained copy is what later subscribers get)")
        let after = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status"])
        XCTAssertTrue(after.wait(timeout: 10) { !$0.isEmpty })
        XCTAssertEqual(after.messages.first?.text, "offline")
        XCTAssertEqual(after.messages.first?.retained, true)
    }
}
