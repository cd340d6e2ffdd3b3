import Core
@testable import MQTT
import Foundation
import Core
import Platform
import XCTest
import Settings
import Components

/// The MQTT output against Debian's mosquitto broker, with mosquitto_sub as the consumer.
final class MQTTOutputTests: XCTestCase {
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
        let log = LogCapture()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library, log: log)
        for seq in 1...50 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "code-\(seq)")) }
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

        XCTAssertTrue(waitUntil(10) { output.link.spool.records == 0 && output.link.acknowledged == 50 },
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
        let log = LogCapture()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(sub.wait(timeout: 10) { $0.last { $0.topic == prefix + "/status" }?.text == "online" })
        output.testHookDropConnection()
        XCTAssertTrue(sub.wait(timeout: 15) { $0.filter { $0.topic == prefix + "/status" }.map(\.text).suffix(2) == ["offline", "online"] },
                      "offline (the will), then online again: \(sub.messages(on: prefix + "/status").map(\.text))")
        XCTAssertTrue(broker.log.contains("Client kiosk-1 closed its connection.") || broker.log.contains("kiosk-1 disconnected"),
                      broker.log)
        XCTAssertTrue(log.contains("lost the connection to broker 127.0.0.1:\(broker.port)"), log.all.joined(separator: "\n"))
        output.report(MQTTTestEvents.event(seq: 1, text: "after the reconnect"))
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
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library, log: LogCapture())
        XCTAssertTrue(sub.wait(timeout: 10) { $0.last?.text == "online" })
        output.testHookCrash()
        XCTAssertTrue(sub.wait(timeout: 15) { $0.last?.text == "offline" }, "\(sub.messages.map(\.text))")
        XCTAssertEqual(sub.messages.last?.retained, false, "delivered live (the retained copy is what later subscribers get)")
        let after = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/status"])
        XCTAssertTrue(after.wait(timeout: 10) { !$0.isEmpty })
        XCTAssertEqual(after.messages.first?.text, "offline")
        XCTAssertEqual(after.messages.first?.retained, true)
    }

    /// The broker is stopped while 200 codes are read, then started again: every event arrives, in
    /// order, none missing (the consumer keeps a persistent session, as a real one would).
    func testBrokerOutageLosesNothingAndKeepsOrder() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/event"], clientID: "consumer", persistent: true)
        sub.waitSubscribed(port: broker.port)
        let log = LogCapture()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        for seq in 1...20 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "code-\(seq)")) }
        XCTAssertTrue(sub.wait(timeout: 15) { self.uniqueEvents($0).count == 20 })

        broker.stop()
        XCTAssertTrue(waitUntil(10) { !output.link.connected }, "the output sees the broker go")
        for seq in 21...220 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "code-\(seq)")) }
        XCTAssertTrue(waitUntil(15) { output.link.spool.records == 200 }, "200 events durable in the spool: \(output.link.spool)")
        XCTAssertEqual(output.health.state, .degraded)
        XCTAssertNotNil(output.health.lastError)

        try broker.start()
        for seq in 221...240 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "code-\(seq)")) }
        XCTAssertTrue(sub.wait(timeout: 60) { self.uniqueEvents($0).count == 240 },
                      "every event after the outage; got \(uniqueEvents(sub.messages).count)")
        XCTAssertEqual(uniqueEvents(sub.messages).map { $0["seq"] as? Int }, Array(1...240), "in order, none missing")
        XCTAssertTrue(waitUntil(10) { output.link.spool.records == 0 }, "\(output.link.spool)")
        XCTAssertEqual(output.link.dropped, 0)
        XCTAssertTrue(output.link.connected)
        XCTAssertNil(output.link.retryInSeconds, "no next attempt while connected")
        XCTAssertTrue(log.contains("cannot connect to broker 127.0.0.1:\(broker.port)") || log.contains("lost the connection"),
                      log.all.joined(separator: "\n"))
        XCTAssertTrue(log.contains("sending 200 spooled events") || log.contains("spooled events"), log.all.joined(separator: "\n"))
    }

    /// The broker is not the door controller: its link is the output's own (`link`, health), never told to
    /// the daemon's controller link (the status LED, STATUS=), through the catalog's factory as the daemon
    /// builds it.
    func testTheBrokerLinkIsNotReportedAsTheControllerLink() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let links = RecordingLinkObserver()
        let log = LogCapture()
        guard case .output(let factory) = MQTTOutput.component().role else { return XCTFail("the mqtt component is an output") }
        var run = RunSettings()
        run.mqtt = MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool")
        let made = try factory.make(run, OutputContext(logger: log.logger, feedback: RecordingFeedback(), links: links))
        let output = try XCTUnwrap(made as? MQTTOutput)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(waitUntil(10) { output.link.connected }, "\(output.link)")
        broker.stop()
        XCTAssertTrue(waitUntil(10) { !output.link.connected && output.link.retryInSeconds != nil }, "\(output.link)")
        XCTAssertEqual(output.health.state, .degraded, "the output's own health says it")
        XCTAssertEqual(links.seen.count, 0, "no controller link from MQTT: \(links.seen)")
    }

    /// The session is killed with events in the spool (the broker was down); a new output on the same
    /// spool sends them when the broker is there, before newer events.
    func testCrashWithEventsInTheSpoolThenRestartDeliversThem() throws {
        let port = try FreePort.make()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let first = try MQTTTestEvents.output(MQTTTestEvents.settings(port: port, spool: spool), library: library, log: LogCapture())
        for seq in 1...30 as ClosedRange<UInt64> { first.report(MQTTTestEvents.event(seq: seq, text: "before the crash \(seq)")) }
        XCTAssertTrue(waitUntil(10) { first.link.spool.records == 30 }, "\(first.link.spool)")
        let firstRun = first.ids.run
        first.testHookCrash()

        let broker = MQTTTestBrokerOnPort(port: port)
        let b = try broker.make()
        try b.start()
        let sub = try MQTTTestSubscriber(port: port, topics: ["scangate/kiosk-1/event"])
        sub.waitSubscribed(port: port)
        let log = LogCapture()
        let second = try MQTTTestEvents.output(MQTTTestEvents.settings(port: port, spool: spool), library: library, log: log)
        defer { second.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(log.contains("30 events not yet acknowledged by the broker will be sent again"), log.all.joined(separator: "\n"))
        for seq in 1...5 as ClosedRange<UInt64> { second.report(MQTTTestEvents.event(seq: seq, text: "after the restart \(seq)")) }
        XCTAssertTrue(sub.wait(timeout: 20) { self.uniqueEvents($0).count == 35 }, "\(sub.messages.count)")
        let events = uniqueEvents(sub.messages)
        XCTAssertEqual(events.map { $0["data"] as? String },
                       (1...30).map { "before the crash \($0)" } + (1...5).map { "after the restart \($0)" })
        XCTAssertTrue(events.prefix(30).allSatisfy { ($0["id"] as? String)?.hasPrefix(firstRun + "-") == true },
                      "the spooled events keep the ids they were given before the crash")
        XCTAssertTrue(events.suffix(5).allSatisfy { ($0["id"] as? String)?.hasPrefix(second.ids.run + "-") == true })
        XCTAssertNotEqual(firstRun, second.ids.run, "a new run value after a restart, so seq 1 again has a new id")
    }

    /// The power-cut suite's hook: with SCANGATE_TRACE_SPOOL set, each event's id is written there once its
    /// batch is on the disk, and only then: the ids traced are the ids spooled, in order, before delivery.
    func testTheSpoolTraceNamesEachEventOnceItIsDurable() throws {
        let port = try FreePort.make()
        let dir = try TestFiles.temporaryDirectory()
        let trace = dir + "/durable"
        setenv(SpoolTrace.variable, trace, 1)
        let log = LogCapture()
        let output: MQTTOutput
        do {
            defer { unsetenv(SpoolTrace.variable) }
            output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: port, spool: dir + "/spool"), library: library, log: log)
        }
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(log.contains("SCANGATE_TRACE_SPOOL=\(trace): each durable spool batch is traced there (a test hook)"),
                      log.all.joined(separator: "\n"))
        for seq in 1...12 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "traced \(seq)")) }
        // No broker: nothing is delivered, so every traced id is one the spool holds.
        XCTAssertTrue(waitUntil(10) { output.link.spool.records == 12 }, "\(output.link.spool)")
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, (1...12).map { "durable \(output.ids.run)-\($0)" })
        XCTAssertEqual(SpoolTrace.eventID(Array("{\"id\":\"ab-7\",\"kiosk\":\"k\"}".utf8)), Array("ab-7".utf8))
        XCTAssertEqual(SpoolTrace.eventID(Array("{\"kiosk\":\"k\"}".utf8)), Array("?".utf8))
    }

    /// A full spool drops the oldest events, counts the drops and reports them (health, state, log).
    func testFullSpoolDropsTheOldestCountsAndReportsThem() throws {
        let port = try FreePort.make()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        var settings = MQTTTestEvents.settings(port: port, spool: spool)
        settings.spoolMaxMB = 1
        let log = LogCapture()
        let output = try MQTTTestEvents.output(settings, library: library, log: log)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        // 400 events of about 4 KiB: more than 1 MiB, so the oldest must go.
        let filler = String(repeating: "x", count: 4000)
        for seq in 1...400 as ClosedRange<UInt64> {
            output.report(MQTTTestEvents.event(seq: seq, text: "\(seq) " + filler))
            if seq % 50 == 0 { _ = waitUntil(5) { output.link.spool.records + output.link.spool.droppedFull == seq } }
        }
        XCTAssertTrue(waitUntil(10) { output.link.spool.records + output.link.spool.droppedFull == 400 }, "\(output.link.spool)")
        let link = output.link
        XCTAssertGreaterThan(link.spool.droppedFull, 100)
        XCTAssertLessThanOrEqual(link.spool.bytes, 1 << 20)
        XCTAssertEqual(output.health.errors, link.spool.droppedFull, "health counts the drops")
        XCTAssertTrue(output.health.detail.contains("\(link.spool.droppedFull) dropped"), output.health.detail)
        XCTAssertTrue(log.contains("the spool is full (mqtt-spool-max-mb = 1 MiB): dropped the oldest event (record 1,"),
                      log.all.joined(separator: "\n"))
        XCTAssertLessThan(log.all.filter { $0.contains("the spool is full") }.count, 5, "rate-limited")

        let b = try MQTTTestBrokerOnPort(port: port).make()
        try b.start()
        let sub = try MQTTTestSubscriber(port: port, topics: ["scangate/kiosk-1/event", "scangate/kiosk-1/state"])
        let kept = Int(link.spool.records)
        XCTAssertTrue(sub.wait(timeout: 30) { self.uniqueEvents($0.filter { $0.topic.hasSuffix("/event") }).count == kept })
        let seqs = uniqueEvents(sub.messages(on: "scangate/kiosk-1/event")).compactMap { $0["seq"] as? Int }
        XCTAssertEqual(seqs, Array((400 - kept + 1)...400), "the newest survive, in order; the oldest were dropped")
        XCTAssertTrue(sub.wait(timeout: 10) { !$0.filter { $0.topic.hasSuffix("/state") }.isEmpty })
        let state = try XCTUnwrap(sub.messages(on: "scangate/kiosk-1/state").last?.json)
        XCTAssertEqual((state["mqtt"] as? [String: Any])?["spool_dropped_full"] as? Int, Int(link.spool.droppedFull))
    }

    /// A payload that imitates JSON or MQTT topics stays one event, with its exact bytes, on the event topic.
    func testHostilePayloadsStayOneEventWithTheirExactBytes() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let spool = try TestFiles.temporaryDirectory() + "/spool"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["#"])
        sub.waitSubscribed(port: broker.port)
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: spool), library: library, log: LogCapture())
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let payloads: [[UInt8]] = [
            Array(#""},"id":"forged","kiosk":"evil","x":{""#.utf8),
            Array(#"{"id":"p9","expires":99999999999}"#.utf8),
            Array("scangate/kiosk-1/cmd/pause".utf8),
            Array("+/#".utf8),
            Array("$SYS/broker/clients".utf8),
            Array("line one\r\nline two\u{2028}\u{0}end\\".utf8),
            [0xFF, 0xFE, 0x00, 0x7B, 0x22, 0x0A, 0x80],
            Array(String(repeating: "}{\"", count: 700).utf8),
        ]
        for (i, p) in payloads.enumerated() { output.report(MQTTTestEvents.event(seq: UInt64(i + 1), payload: p)) }
        XCTAssertTrue(sub.wait(timeout: 20) { $0.filter { $0.topic == "scangate/kiosk-1/event" }.count == payloads.count })
        let events = sub.messages(on: "scangate/kiosk-1/event")
        XCTAssertEqual(events.count, payloads.count, "one message per read")
        for (i, m) in events.enumerated() {
            let json = try XCTUnwrap(m.json, "event \(i + 1) is one JSON object: \(m.text)")
            XCTAssertEqual(json["id"] as? String, output.ids.id(seq: UInt64(i + 1)), "the id is ours, not one from the payload")
            XCTAssertEqual(json["kiosk"] as? String, "kiosk-1")
            let bytes: [UInt8]
            if let text = json["data"] as? String {
                bytes = Array(text.utf8)
            } else {
                bytes = [UInt8](try XCTUnwrap(Data(base64Encoded: try XCTUnwrap(json["data_base64"] as? String))))
            }
            XCTAssertEqual(bytes, payloads[i], "event \(i + 1) carries the payload's exact bytes")
        }
        let others = sub.messages.filter { !$0.topic.hasPrefix("scangate/kiosk-1/") || $0.topic.contains("/cmd/") }
        XCTAssertEqual(others.map(\.topic), [], "nothing leaked onto another topic")
    }

    func stateOutput(_ broker: MQTTTestBroker, interval: Int, camera: CameraState) throws -> MQTTOutput {
        var settings = MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool")
        settings.stateIntervalSeconds = interval   // may be below validate()'s minimum of 5, to keep the test short
        let configuration = MQTTConfiguration(settings: settings, clientID: "kiosk-1", topics: MQTTTopics(prefix: "scangate/kiosk-1"),
                                              password: nil)
        return try MQTTOutput(configuration: configuration, dependencies: MQTTOutputDependencies(
            library: library, eventLine: EventLine.json,
            state: { MQTTState(status: .scanning, version: "t", uptimeSeconds: 1, components: [camera.health]) },
            logger: LogCapture().logger))
    }

    /// The retained state goes out on connect and then every interval.
    func testStateIsPublishedEveryInterval() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-1/state"])
        sub.waitSubscribed(port: broker.port)
        let output = try stateOutput(broker, interval: 1, camera: CameraState())
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(sub.wait(timeout: 10) { $0.count >= 3 }, "on connect, then every second: \(sub.messages.count)")
        let times = sub.messages.compactMap { $0.json?["time"] as? String }
        XCTAssertEqual(Set(times).count, times.count, "each a new document")
    }

    /// With an hour's interval, a change (the camera going down) still goes out at once.
    func testStateIsPublishedOnChange() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-1/state"])
        sub.waitSubscribed(port: broker.port)
        let camera = CameraState()
        let output = try stateOutput(broker, interval: 3600, camera: camera)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(sub.wait(timeout: 10) { $0.count == 1 }, "the state on connect")
        camera.fail("VIDIOC_DQBUF: No such device (ENODEV)")
        XCTAssertTrue(sub.wait(timeout: 10) { $0.count == 2 }, "the change, long before the interval")
        let down = try XCTUnwrap(sub.messages.last?.json?["components"] as? [[String: Any]])
        XCTAssertEqual(down.first?["state"] as? String, "down")
        XCTAssertEqual(down.first?["last_error"] as? String, "VIDIOC_DQBUF: No such device (ENODEV)")
        XCTAssertEqual(sub.messages.last?.retained, false, "live; a late subscriber gets the retained copy")
        let late = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-1/state"])
        XCTAssertTrue(late.wait(timeout: 10) { !$0.isEmpty })
        XCTAssertEqual(late.messages.first?.retained, true)
        XCTAssertEqual((late.messages.first?.json?["components"] as? [[String: Any]])?.first?["state"] as? String, "down")
    }

    /// Inside the shipped unit (no network) the connect error says so and names the drop-in; elsewhere it does not.
    func testAConnectRefusedByTheSandboxNamesTheNetworkDropIn() {
        let dropIn = "/usr/share/scangate/mqtt-network.conf"
        XCTAssertTrue(MQTTSession.sandboxHint(Errno(rawValue: EAFNOSUPPORT), interfaces: { ["eth0", "lo"] }).contains(dropIn))
        XCTAssertTrue(MQTTSession.sandboxHint(Errno(rawValue: ECONNREFUSED), interfaces: { ["lo"] }).contains(dropIn))
        XCTAssertEqual(MQTTSession.sandboxHint(Errno(rawValue: ECONNREFUSED), interfaces: { ["eth0", "lo", "wlan0"] }), "")
        XCTAssertEqual(MQTTSession.sandboxHint(Errno(rawValue: ETIMEDOUT), interfaces: { ["lo"] }), "")
        XCTAssertEqual(MQTTSession.sandboxHint(nil), "")
    }

    func testTheDoctorProbeConnectsOrSaysWhyNot() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let settings = MQTTTestEvents.settings(port: broker.port, spool: "/nonexistent/spool")
        let ok = MQTTProbe.check(try settings.resolve(hostName: "h"), library: library, timeoutSeconds: 5)
        XCTAssertEqual(ok, .connected("connected to broker 127.0.0.1:\(broker.port) as kiosk-1-doctor (MQTT v5)"))
        broker.stop()
        let down = MQTTProbe.check(try settings.resolve(hostName: "h"), library: library, timeoutSeconds: 5)
        guard case .failed(let why) = down else { return XCTFail("\(down)") }
        XCTAssertTrue(why.contains("Connection refused") || why.contains("connection closed") || why.contains("The connection was lost"), why)
    }
}

/// A camera component whose health a test changes.
final class CameraState: Sendable {
    private let state = PosixMutex(ComponentHealth(name: "camera", state: .ok, detail: "sim"))
    var health: ComponentHealth { state.withLock { $0 } }
    func fail(_ error: String) {
        state.withLock {
            $0.state = .down
            $0.lastError = error
            $0.lastErrorAt = WallClock.nowNanoseconds()
        }
    }
}

/// A broker on a given port (for a test whose output was already pointed at that port).
struct MQTTTestBrokerOnPort {
    let port: Int
    func make() throws -> MQTTTestBroker { try MQTTTestBroker(port: port) }
}
