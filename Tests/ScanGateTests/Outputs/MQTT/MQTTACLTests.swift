import Core
@testable import MQTT
import Foundation
import Platform
import XCTest
import Settings

/// deploy/mqtt/mosquitto-scangate.conf and scangate.acl, loaded into Debian's mosquitto (only the port
/// and the directory replaced): TLS client certificates, each kiosk confined to its own topics.
final class MQTTACLTests: XCTestCase {
    func testTheDeployedACLConfinesEachKioskToItsOwnTopics() throws {
        let library = try MosquittoLibrary()
        let ca = try MQTTTestCA()
        let server = try ca.issue("server", commonName: "broker", subjectAltName: "IP:127.0.0.1")
        let deploy = TestFiles.repositoryRoot + "/deploy/mqtt"
        let conf = try String(contentsOfFile: deploy + "/mosquitto-scangate.conf", encoding: .utf8)
        let acl = try String(contentsOfFile: deploy + "/scangate.acl", encoding: .utf8)
        XCTAssertTrue(conf.contains("\nlistener 8883\n") && conf.contains("/etc/mosquitto/scangate/"), "the example's shape changed")
        let broker = try MQTTTestBroker(listener: { port, dir in
            try? FileManager.default.copyItem(atPath: ca.certificate, toPath: dir + "/ca.crt")
            try? FileManager.default.copyItem(atPath: server.cert, toPath: dir + "/broker.crt")
            try? FileManager.default.copyItem(atPath: server.key, toPath: dir + "/broker.key")
            try? TestFiles.write(acl, to: dir + "/scangate.acl")
            return conf.replacingOccurrences(of: "\nlistener 8883\n", with: "\nlistener \(port) 127.0.0.1\n")
                .replacingOccurrences(of: "/etc/mosquitto/scangate/", with: dir + "/")
        })
        try broker.start()

        let backendCert = try ca.issue("backend", commonName: "backend")
        let kioskA = try ca.issue("kiosk-a", commonName: "kiosk-a")
        let kioskB = try ca.issue("kiosk-b", commonName: "kiosk-b")
        let kioskC = try ca.issue("kiosk-c", commonName: "kiosk-c")

        // The back end and kiosk-b each as one connection (the certificate's CN is also the client id, so a
        // second connection with the same certificate would take the first one's place).
        let backend = try PahoPeer(port: broker.port, id: "backend", subscribe: ["scangate/#", "homeassistant/#"],
                                   tls: (ca.certificate, backendCert.cert, backendCert.key))
        // kiosk-b tries to read kiosk-a's topics (and reads its own commands, to know it is subscribed).
        let snoop = try PahoPeer(port: broker.port, id: "kiosk-b", subscribe: ["scangate/kiosk-a/#", "scangate/kiosk-b/cmd/+"],
                                 tls: (ca.certificate, kioskB.cert, kioskB.key))
        XCTAssertTrue(waitUntil(15) {
            backend.publish("scangate/kiosk-b/cmd/probe", "probe")
            return snoop.wait(timeout: 0.3) { $0.contains { $0.topic == "scangate/kiosk-b/cmd/probe" } }
                && backend.wait(timeout: 0.3) { $0.contains { $0.topic == "scangate/kiosk-b/cmd/probe" } }
        }, "the back end may write commands and kiosk-b may read its own: \(backend.output) \(snoop.output)\n\(broker.log)")

        func settings(_ id: String, _ cert: (cert: String, key: String), prefix: String = "") throws -> MQTTSettings {
            var s = MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool", clientID: id)
            s.tlsCA = ca.certificate
            s.tlsCert = cert.cert
            s.tlsKey = cert.key
            s.commands = true
            s.homeAssistant = true
            s.topicPrefix = prefix
            return s
        }
        let handler = RecordingCommandHandler()
        let log = LogCapture()
        let a = try MQTTTestEvents.output(try settings("kiosk-a", kioskA), library: library, log: log, commands: handler)
        defer { a.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        a.report(MQTTTestEvents.event(seq: 1, text: "a-1"))
        XCTAssertTrue(backend.wait(timeout: 15) { $0.contains { $0.topic == "scangate/kiosk-a/event" } }, broker.log + log.all.joined(separator: "\n") + "\(backend.output)")
        XCTAssertTrue(backend.wait(timeout: 10) { m in
            m.contains { $0.topic == "scangate/kiosk-a/status" && $0.text == "online" }
                && m.contains { $0.topic == "homeassistant/binary_sensor/kiosk-a/online/config" }
                && m.contains { $0.topic == "scangate/kiosk-a/state" }
        }, "status, state and discovery are allowed: \(backend.messages.map(\.topic))")

        // kiosk-b publishes as kiosk-a: an event and a command. The broker refuses both (v5 reason 135).
        let expires = Int64(Date().timeIntervalSince1970) + 60
        snoop.publish("scangate/kiosk-a/event", #"{"id":"forged"}"#)
        snoop.publish("scangate/kiosk-a/cmd/pause", #"{"id":"evil","expires":\#(expires)}"#)
        XCTAssertTrue(waitUntil(10) { snoop.pubacks.count == 2 }, "\(snoop.output)")
        XCTAssertEqual(snoop.pubacks, [135, 135], "not authorised")
        // The back end's command does go through, and its result comes back.
        backend.publish("scangate/kiosk-a/cmd/resume", #"{"id":"ok1","expires":\#(expires)}"#)
        XCTAssertTrue(backend.wait(timeout: 15) { $0.contains { $0.topic == "scangate/kiosk-a/cmd/resume/result" } },
                      "\(backend.messages.map(\.topic))")
        a.report(MQTTTestEvents.event(seq: 2, text: "a-2"))
        XCTAssertTrue(backend.wait(timeout: 10) { $0.contains { $0.json?["data"] as? String == "a-2" } })
        XCTAssertEqual(handler.performed, [.resume], "kiosk-b's pause never reached kiosk-a")
        XCTAssertFalse(backend.messages.contains { $0.text.contains("forged") }, "kiosk-b cannot publish kiosk-a's events")
        XCTAssertEqual(snoop.messages.filter { $0.topic.hasPrefix("scangate/kiosk-a/") }.map(\.topic), [],
                       "kiosk-b reads nothing of kiosk-a's")

        // A kiosk pointed at another kiosk's prefix: the broker refuses its events (MQTT v5 reason
        // "not authorised"); each stays in its spool and is tried again, up to three times.
        let c = try MQTTTestEvents.output(try settings("kiosk-c", kioskC, prefix: "scangate/kiosk-a"), library: library, log: log)
        defer { c.close(deadline: MonotonicInstant.now().adding(milliseconds: 2000)) }
        c.report(MQTTTestEvents.event(seq: 1, text: "c-1"))
        XCTAssertTrue(waitUntil(15) { log.contains("the broker refused an event on scangate/kiosk-a/event: Not authorized") },
                      log.all.joined(separator: "\n"))
        XCTAssertEqual(c.link.spool.records, 1, "kept in the spool")
        XCTAssertEqual(c.link.acknowledged, 0)
        // Sent again after the backoff; refused for the third time, it is dropped and counted, so a refused
        // event cannot block the spool behind it for ever.
        XCTAssertTrue(waitUntil(30) { c.link.spool.droppedRefused == 1 }, "\(c.link.spool)\n" + log.all.joined(separator: "\n"))
        XCTAssertEqual(c.link.spool.records, 0)
        XCTAssertEqual(c.link.acknowledged, 0, "refused is not delivered")
        XCTAssertTrue(log.contains("refused an event on scangate/kiosk-a/event (record 1) 3 times: Not authorized"),
                      log.all.joined(separator: "\n"))
        XCTAssertFalse(backend.messages.contains { $0.json?["data"] as? String == "c-1" })
    }
}

/// deploy/mqtt/consumer.py (paho-mqtt) against Debian's mosquitto and an MQTT output: one line per read,
/// repeats dropped by id.
final class MQTTConsumerExampleTests: XCTestCase {
    func testTheConsumerExamplePrintsEachReadOnce() throws {
        try PahoPeer.requireVenv()
        let library = try MosquittoLibrary()
        let broker = try MQTTTestBroker()
        try broker.start()
        let consumer = Process()
        consumer.executableURL = URL(fileURLWithPath: PahoPeer.python)
        consumer.arguments = [TestFiles.repositoryRoot + "/deploy/mqtt/consumer.py", "--host", "127.0.0.1", "--port", String(broker.port)]
        let out = Pipe()
        consumer.standardOutput = out
        consumer.standardError = FileHandle.nullDevice
        let lines = MQTTTestSubscriber.Lines()
        out.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            if d.isEmpty { h.readabilityHandler = nil; return }
            lines.state.withLock { c in
                for b in d {
                    if b == 0x0A {
                        c.lines.append(MQTTTestSubscriber.Message(topic: "", payload: c.partial, retained: false))
                        c.partial.removeAll()
                    } else { c.partial.append(b) }
                }
            }
        }
        try consumer.run()
        defer { kill(consumer.processIdentifier, SIGTERM); consumer.waitUntilExit() }
        func printed() -> [[String: Any]] { lines.state.withLock { $0.lines }.compactMap(\.json) }

        // Until it is subscribed: the same probe event again and again, printed once.
        let probe = #"{"id":"probe-1","kiosk":"probe","seq":0}"#
        XCTAssertTrue(waitUntil(20) {
            mosquittoPub(port: broker.port, topic: "scangate/probe/event", message: probe)
            return waitUntil(0.3) { !printed().isEmpty }
        })
        let output = try MQTTTestEvents.output(MQTTTestEvents.settings(port: broker.port, spool: try TestFiles.temporaryDirectory() + "/spool"),
                                                library: library, log: LogCapture())
        defer { output.close(deadline: MonotonicInstant.now().adding(milliseconds: 3000)) }
        for seq in 1...20 as ClosedRange<UInt64> { output.report(MQTTTestEvents.event(seq: seq, text: "read \(seq)")) }
        XCTAssertTrue(waitUntil(20) { printed().filter { $0["kiosk"] as? String == "kiosk-1" }.count == 20 })
        // At-least-once repeats: events 3 and 7 again, byte for byte, and the probe again.
        for seq in [3, 7] {
            let line = MQTTOutput.eventPayload(#"{"seq":\#(seq),"data":"read \#(seq)"}"#, id: output.ids.id(seq: UInt64(seq)), kiosk: "kiosk-1")
            mosquittoPub(port: broker.port, topic: "scangate/kiosk-1/event", message: line)
        }
        mosquittoPub(port: broker.port, topic: "scangate/probe/event", message: probe)
        output.report(MQTTTestEvents.event(seq: 21, text: "read 21"))
        XCTAssertTrue(waitUntil(20) { printed().filter { $0["kiosk"] as? String == "kiosk-1" }.count >= 21 })
        let kiosk = printed().filter { $0["kiosk"] as? String == "kiosk-1" }
        XCTAssertEqual(kiosk.map { $0["data"] as? String }, (1...21).map { "read \($0)" }, "each read once, in order")
        XCTAssertEqual(printed().filter { $0["kiosk"] as? String == "probe" }.count, 1)
    }
}
