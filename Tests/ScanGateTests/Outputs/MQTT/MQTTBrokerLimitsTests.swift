import Core
@testable import MQTT
import Foundation
import Platform
import XCTest

/// What the broker may send us and what it can take from us: the Maximum Packet Size in CONNECT (an
/// oversized command, live or retained, never reaches libmosquitto), retained commands seen as retained
/// (Retain As Published), and our own messages too large for the broker (skipped or dropped, the
/// connection kept).
final class MQTTBrokerLimitsTests: XCTestCase {
    var library: MosquittoLibrary!

    override func setUpWithError() throws {
        library = try MosquittoLibrary()
    }

    /// mosquitto_pub of a file's bytes (a payload too large for a command line argument).
    @discardableResult
    func publishFile(port: Int, topic: String, bytes: Int, retain: Bool = false) throws -> Int32 {
        let path = try TestFiles.temporaryDirectory() + "/payload"
        var payload = Data(#"{"id":"huge","expires":9999999999,"pad":""#.utf8)
        payload += Data(repeating: 0x61, count: bytes)
        payload += Data(#""}"#.utf8)
        try payload.write(to: URL(fileURLWithPath: path))
        let pub = Process()
        pub.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        pub.arguments = ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-f", path] + (retain ? ["-r"] : [])
        pub.standardError = FileHandle.nullDevice
        try pub.run()
        pub.waitUntilExit()
        return pub.terminationStatus
    }

    func occurrences(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    /// A 300 KiB command, live on cmd/pause and retained on cmd/reload: the broker drops both for this
    /// client (its Maximum Packet Size is 16 KiB), so neither is read into memory, answered or acted on;
    /// the connection stays up and a normal command and events still go through.
    func testAnOversizedCommandNeverReachesTheKioskAndTheSessionStaysUp() throws {
        let rig = try MQTTCommandRig(topics: ["/event"])
        let (broker, sub, prefix, results) = (rig.broker, rig.sub, rig.prefix, rig.results)
        XCTAssertEqual(try publishFile(port: broker.port, topic: prefix + "/cmd/reload", bytes: 300 << 10, retain: true), 0)
        let handler = RecordingCommandHandler()
        let log = LogCapture()
        let output = try MQTTTestEvents.output(rig.settings, library: library, log: log, commands: handler)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let expires = Int64(Date().timeIntervalSince1970) + 60
        // Once a normal command is answered, the subscription (and with it the retained one) is done.
        XCTAssertTrue(rig.waitForCommandSubscription(expires: expires), log.all.joined(separator: "\n"))
        XCTAssertEqual(try publishFile(port: broker.port, topic: prefix + "/cmd/pause", bytes: 300 << 10), 0)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"after","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in !results("pause").isEmpty }, "\(sub.messages.map(\.topic))")
        XCTAssertEqual(results("pause").map { $0["id"] as? String }, ["after"], "the oversized one got no answer: it never arrived")
        XCTAssertEqual(results("pause").first?["result"] as? String, "ok")
        XCTAssertEqual(results("reload").count, 0, "the retained oversized one was not delivered at subscribe either")
        XCTAssertEqual(handler.performed, [.pause])
        let brokerLog = broker.log
        XCTAssertGreaterThanOrEqual(occurrences("Dropping too large outgoing PUBLISH for kiosk-1", in: brokerLog), 2,
                                    "the broker dropped both for this client:\n\(brokerLog)")
        output.report(MQTTTestEvents.event(seq: 1, text: "still delivering"))
        XCTAssertTrue(sub.wait(timeout: 10) { $0.contains { $0.topic == prefix + "/event" } })
        XCTAssertTrue(output.link.connected)
        XCTAssertEqual(occurrences("as kiosk-1 (", in: broker.log), 1, "one connection all along:\n\(broker.log)")
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/reload", message: "", retain: true)
    }

    /// A command published with retain while the kiosk is connected: the broker forwards it with the
    /// retain flag (Retain As Published), so it is refused like one that was waiting in the broker, and not
    /// acted on. Clearing it (an empty retained message) is not answered.
    func testARetainedCommandPublishedLiveIsRefused() throws {
        let rig = try MQTTCommandRig()
        let (broker, sub, prefix, results) = (rig.broker, rig.sub, rig.prefix, rig.results)
        let handler = RecordingCommandHandler()
        let log = LogCapture()
        let output = try MQTTTestEvents.output(rig.settings, library: library, log: log, commands: handler)
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        let expires = Int64(Date().timeIntervalSince1970) + 60
        XCTAssertTrue(rig.waitForCommandSubscription(expires: expires), "subscribed")
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"live-retained","expires":\#(expires)}"#, retain: true)
        XCTAssertTrue(sub.wait(timeout: 10) { _ in !results("pause").isEmpty })
        XCTAssertEqual(results("pause").first?["result"] as? String, "refused")
        XCTAssertTrue((results("pause").first?["detail"] as? String)?.contains("retained command is refused") == true, "\(results("pause"))")
        XCTAssertEqual(handler.performed, [], "not acted on")
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: "", retain: true)
        mosquittoPub(port: broker.port, topic: prefix + "/cmd/pause", message: #"{"id":"plain","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 10) { _ in results("pause").count >= 2 })
        XCTAssertEqual(results("pause").map { $0["id"] as? String }, [nil, "plain"], "the clear got no answer: \(results("pause"))")
        XCTAssertEqual(handler.performed, [.pause])
    }

    /// A broker with a Maximum Packet Size of 4 KiB (max_packet_size): a state document larger than that is
    /// skipped with a log line, not a reason to drop the connection; an event larger than it can never be
    /// sent, so it is dropped from the spool, counted as refused, and the events behind it drain.
    func testMessagesTooLargeForTheBrokerAreSkippedAndTheRestGoOn() throws {
        let broker = try MQTTTestBroker(listener: { port, _ in "listener \(port) 127.0.0.1\nallow_anonymous true\nmax_packet_size 4096\n" })
        try broker.start()
        let prefix = "scangate/kiosk-1"
        let sub = try MQTTTestSubscriber(port: broker.port, topics: [prefix + "/event", prefix + "/status"])
        sub.waitSubscribed(port: broker.port)
        let big = ComponentHealth(name: "camera", state: .ok, detail: String(repeating: "d", count: 6000))
        let log = LogCapture()
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool"),
                                                library: library, log: log,
                                                state: { MQTTState(status: .scanning, version: "t", uptimeSeconds: 1, components: [big]) })
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        XCTAssertTrue(waitUntil(10) { log.contains("the message on \(prefix)/state") }, log.all.joined(separator: "\n"))
        XCTAssertTrue(log.contains("is larger than broker 127.0.0.1:\(broker.port)'s maximum packet size; skipped"), log.all.joined(separator: "\n"))
        output.report(MQTTTestEvents.event(seq: 1, text: "small-1"))
        output.report(MQTTTestEvents.event(seq: 2, text: String(repeating: "B", count: 8000)))
        output.report(MQTTTestEvents.event(seq: 3, text: "small-3"))
        XCTAssertTrue(sub.wait(timeout: 15) { $0.filter { $0.topic == prefix + "/event" }.count == 2 }, log.all.joined(separator: "\n"))
        XCTAssertEqual(sub.messages(on: prefix + "/event").compactMap { $0.json?["data"] as? String }, ["small-1", "small-3"])
        XCTAssertTrue(waitUntil(10) { output.link.spool.records == 0 }, "\(output.link.spool)")
        XCTAssertEqual(output.link.spool.droppedRefused, 1)
        XCTAssertEqual(output.link.acknowledged, 2)
        XCTAssertTrue(log.contains("(record 2) is larger than broker 127.0.0.1:\(broker.port)'s maximum packet size"), log.all.joined(separator: "\n"))
        XCTAssertTrue(output.link.connected)
        XCTAssertEqual(sub.messages(on: prefix + "/status").map(\.text), ["online"], "one connection all along")
    }
}
