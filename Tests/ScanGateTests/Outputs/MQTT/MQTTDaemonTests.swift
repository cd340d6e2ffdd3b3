#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// `scangate run` with `[mqtt]` against Debian's mosquitto on 127.0.0.1, consumed with mosquitto_sub:
/// events once and in order by id, the will after kill -9, nothing lost across a broker outage or a
/// daemon crash, commands, `scangate status` and the metrics file, all through the real binary.
final class MQTTDaemonTests: XCTestCase {
    /// A scenario that shows `count` distinct codes, `perCode` frames each with as many blank frames after.
    func codes(_ dir: String, count: Int, prefix: String = "C", fps: Int = 30, perCode: Int = 2, loop: Bool = true,
               blankTail: Int = 0) throws -> String {
        var text = "size 320x240\nfps \(fps)\nframes \(count * perCode * 2 + blankTail)\n" + (loop ? "loop\n" : "")
        for i in 0..<count {
            let first = i * perCode * 2
            text += "code qr \"\(prefix)-\(i)\" frames \(first)-\(first + perCode - 1) module 3\n"
        }
        let path = dir + "/codes.scenario"
        try TestFiles.write(text, to: path)
        return path
    }

    func daemon(_ dir: String, broker: MQTTTestBroker, scenario: String, extra: [String] = []) throws -> DaemonUnderTest {
        try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--hold-off-ms", "200",
                             "--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--mqtt-client-id", "kiosk-t",
                             "--mqtt-spool", dir + "/spool", "--mqtt-keepalive-s", "5",
                             "--status-socket", dir + "/status.sock"] + extra)
    }

    /// (seq, id, data) of the events a subscriber received, in arrival order.
    func events(_ sub: MQTTTestSubscriber) -> [(seq: Int, id: String, data: String)] {
        sub.messages(on: "scangate/kiosk-t/event").compactMap { m in
            guard let j = m.json, let seq = j["seq"] as? Int, let id = j["id"] as? String, let data = j["data"] as? String else { return nil }
            XCTAssertEqual(j["kiosk"] as? String, "kiosk-t")
            return (seq, id, data)
        }
    }

    /// The events the daemon's spool holds, from `scangate status --json`; nil while it does not answer.
    func spoolEvents(_ dir: String) -> Int? {
        guard let r = try? ScangateProcess.run(["status", "--json", "--status-socket", dir + "/status.sock"]), r.status == 0,
              let doc = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any],
              let mqtt = doc["mqtt"] as? [String: Any] else { return nil }
        return mqtt["spool_events"] as? Int
    }

    func stdoutSeqs(_ d: DaemonUnderTest) -> [Int] {
        d.stdout.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }.compactMap { $0["seq"] as? Int }
    }

    func testEventsArriveOnceInOrderStatusOnlineAndTheWillAfterKill9() throws {
        let dir = try TestFiles.temporaryDirectory()
        let broker = try MQTTTestBroker()
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/#"])
        sub.waitSubscribed(port: broker.port)
        let d = try daemon(dir, broker: broker, scenario: try codes(dir, count: 12))
        defer { d.stop() }
        XCTAssertTrue(sub.wait(timeout: 30) { _ in self.events(sub).count >= 12 }, "\(d.stderr.suffix(5))")
        let got = events(sub)
        XCTAssertEqual(got.map(\.seq), Array(1...got.count), "once each, in order")
        XCTAssertEqual(Set(got.map(\.id)).count, got.count, "ids are unique")
        XCTAssertEqual(Array(got.prefix(12).map(\.data)), (0..<12).map { "C-\($0)" })
        let status = sub.messages(on: "scangate/kiosk-t/status")
        XCTAssertEqual(status.last?.text, "online")
        XCTAssertEqual(status.last?.retained, false, "seen live") // retained copies go to later subscribers
        XCTAssertTrue(sub.wait(timeout: 70) { m in m.contains { $0.topic == "scangate/kiosk-t/state" } }, "the state document")

        // scangate status asks the running daemon.
        let report = try ScangateProcess.run(["status", "--json", "--socket", dir + "/status.sock"])
        XCTAssertEqual(report.status, 0, report.stderr)
        let json = try XCTUnwrap((try? JSONSerialization.jsonObject(with: Data(report.stdout))) as? [String: Any], report.stdoutText)
        XCTAssertEqual(json["status"] as? String, "scanning")
        XCTAssertEqual((json["mqtt"] as? [String: Any])?["connected"] as? Bool, true, report.stdoutText)
        let devices = (json["devices"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        XCTAssertTrue(devices.contains("camera") && devices.contains("mqtt") && devices.contains("stdout"), "\(devices)")

        kill(d.pid, SIGKILL)
        XCTAssertTrue(sub.wait(timeout: 20) { m in m.last(where: { $0.topic == "scangate/kiosk-t/status" })?.text == "offline" },
                      "the broker publishes the will after kill -9")
        let late = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/status"])
        XCTAssertTrue(late.wait(timeout: 10) { m in m.contains { $0.text == "offline" && $0.retained } }, "retained offline")
        late.stop()
        sub.stop()
    }

    /// The broker is stopped while 200 codes are read, then started again: every event arrives, in order.
    func testABrokerOutageLosesNothing() throws {
        let dir = try TestFiles.temporaryDirectory()
        let broker = try MQTTTestBroker()
        try broker.start()
        let before = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/event"])
        before.waitSubscribed(port: broker.port)
        let d = try daemon(dir, broker: broker, scenario: try codes(dir, count: 50, fps: 60, perCode: 1))
        defer { d.stop() }
        XCTAssertTrue(before.wait(timeout: 30) { _ in self.events(before).count >= 3 }, "\(d.stderr.suffix(5))")
        broker.stop()
        let stoppedAt = stdoutSeqs(d).last ?? 0
        XCTAssertTrue(waitUntil(60) { (self.stdoutSeqs(d).last ?? 0) >= stoppedAt + 200 }, "200 codes read while the broker is down")
        try broker.start()
        let after = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/event"])
        after.waitSubscribed(port: broker.port)
        let target = stoppedAt + 200
        XCTAssertTrue(after.wait(timeout: 90) { _ in self.events(after).contains { $0.seq >= target } },
                      "the spool drains after the broker is back: \(d.stderr.suffix(5))")
        XCTAssertEqual(d.stop(), 0)
        let seen = Dictionary(events(before).map { ($0.seq, 1) } + events(after).map { ($0.seq, 1) }, uniquingKeysWith: +)
        let missing = (1...target).filter { seen[$0] == nil }
        XCTAssertEqual(missing, [], "every event arrived")
        let replayed = events(after).map(\.seq).filter { $0 <= target }
        XCTAssertEqual(replayed, replayed.sorted(), "in order")
        before.stop()
        after.stop()
    }

    /// kill -9 with events in the spool (the broker down), then a restart on the same spool: they arrive
    /// with their first ids.
    func testEventsInTheSpoolSurviveADaemonCrash() throws {
        let dir = try TestFiles.temporaryDirectory()
        let broker = try MQTTTestBroker()
        // Blank frames after the codes keep the daemon running (a source that ends stops it) until the kill.
        let first = try daemon(dir, broker: broker, scenario: try codes(dir, count: 20, loop: false, blankTail: 6000))
        XCTAssertTrue(waitUntil(30) { self.stdoutSeqs(first).count >= 20 }, "\(first.stderr.suffix(5))")
        // On stdout is not yet in the spool: kill only once the daemon says the spool holds all 20.
        XCTAssertTrue(waitUntil(30) { self.spoolEvents(dir) == 20 }, "spool: \(String(describing: self.spoolEvents(dir)))")
        kill(first.pid, SIGKILL)
        _ = first.waitForExit(seconds: 10)
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/event"])
        sub.waitSubscribed(port: broker.port)
        let blank = dir + "/blank.scenario"
        try TestFiles.write("size 320x240\nfps 10\nframes 10\nloop\n", to: blank)
        let second = try daemon(dir, broker: broker, scenario: blank)
        defer { second.stop() }
        // At least once: a repeat (same id) is dropped as a consumer does.
        func unique() -> [String] {
            var seen = Set<String>()
            return events(sub).filter { seen.insert($0.id).inserted }.map(\.data)
        }
        XCTAssertTrue(sub.wait(timeout: 30) { _ in unique().count >= 20 }, "\(second.stderr.suffix(5))")
        XCTAssertEqual(unique(), (0..<20).map { "C-\($0)" }, "the spooled events, in order")
        sub.stop()
    }

    /// Commands from a central server: pause and resume change the status and the retained state;
    /// feedback reaches the feedback seam; an expired command, a repeated id and a malformed command are
    /// refused, each with a result message.
    func testCommandsPauseResumeFeedbackAndRefusals() throws {
        let dir = try TestFiles.temporaryDirectory()
        let broker = try MQTTTestBroker()
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/#"])
        sub.waitSubscribed(port: broker.port)
        let d = try daemon(dir, broker: broker, scenario: try codes(dir, count: 4), extra: ["--mqtt-commands", "--log-level", "debug"])
        defer { d.stop() }
        XCTAssertTrue(sub.wait(timeout: 30) { m in m.contains { $0.topic == "scangate/kiosk-t/status" && $0.text == "online" } })
        let expires = Int(Date().timeIntervalSince1970) + 300
        func command(_ name: String, _ body: String) { mosquittoPub(port: broker.port, topic: "scangate/kiosk-t/cmd/\(name)", message: body) }
        func result(_ name: String, id: String) -> [String: Any]? {
            sub.messages(on: "scangate/kiosk-t/cmd/\(name)/result").compactMap(\.json).last { ($0["id"] as? String) == id }
        }
        command("pause", #"{"id":"p1","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in result("pause", id: "p1") != nil })
        XCTAssertEqual(result("pause", id: "p1")?["result"] as? String, "ok")
        XCTAssertTrue(sub.wait(timeout: 15) { m in
            m.last { $0.topic == "scangate/kiosk-t/state" }?.json?["status"] as? String == "paused"
        }, "the retained state says paused")
        // While paused the camera keeps streaming and nothing is decoded or reported.
        func frames() -> (captured: Int, decoded: Int)? {
            guard let r = try? ScangateProcess.run(["status", "--json", "--socket", dir + "/status.sock"]), r.status == 0,
                  let j = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [String: Any],
                  let f = j["frames"] as? [String: Any], let c = f["captured"] as? Int, let dd = f["decoded"] as? Int else { return nil }
            return (c, dd)
        }
        let atPause = try XCTUnwrap(frames())
        XCTAssertTrue(waitUntil(10) { (frames()?.captured ?? 0) >= atPause.captured + 10 })
        let settled = try XCTUnwrap(frames())
        let reportedWhilePaused = d.stdout.count
        XCTAssertTrue(waitUntil(15) { (frames()?.captured ?? 0) >= settled.captured + 60 }, "the camera streams while paused")
        XCTAssertEqual(frames()?.decoded, settled.decoded, "no frame decoded while paused")
        XCTAssertEqual(d.stdout.count, reportedWhilePaused, "no read reported while paused")
        command("resume", #"{"id":"r1","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { m in
            m.last { $0.topic == "scangate/kiosk-t/state" }?.json?["status"] as? String == "scanning"
        }, "and scanning again")
        command("feedback", #"{"id":"f1","expires":\#(expires),"play":"grant"}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in result("feedback", id: "f1") != nil })
        XCTAssertEqual(result("feedback", id: "f1")?["result"] as? String, "ok", "\(sub.messages.map(\.text).suffix(3))")
        XCTAssertTrue(waitUntil(10) { d.stderr.contains { $0.contains("feedback from mqtt: grant") } }, "\(d.stderr.suffix(5))")
        command("pause", #"{"id":"p2","expires":\#(expires - 600)}"#)
        command("pause", #"{"id":"p1","expires":\#(expires)}"#)
        command("pause", #"{"id":"p3","expires":"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in result("pause", id: "p2") != nil && self.refusals(sub) >= 3 }, "\(sub.messages.map(\.text))")
        XCTAssertEqual(result("pause", id: "p2")?["result"] as? String, "refused")
        XCTAssertTrue((result("pause", id: "p2")?["detail"] as? String ?? "").contains("expired"))
        XCTAssertTrue(d.stdout.count > 0)
        XCTAssertEqual(d.stop(), 0)
        sub.stop()
    }

    /// `reload` over MQTT says whether the file loads: a broken one is refused with the reason and the
    /// daemon keeps running on the old settings; a good one is reloaded.
    func testAReloadCommandSaysWhetherTheConfigurationLoads() throws {
        let dir = try TestFiles.temporaryDirectory()
        let broker = try MQTTTestBroker()
        try broker.start()
        let sub = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-t/#"])
        sub.waitSubscribed(port: broker.port)
        let conf = dir + "/scangate.conf"
        try TestFiles.write("[debounce]\nhold-off-ms = 200\n", to: conf)
        let d = try daemon(dir, broker: broker, scenario: try codes(dir, count: 4), extra: ["--config", conf, "--mqtt-commands"])
        defer { d.stop() }
        XCTAssertTrue(sub.wait(timeout: 30) { m in m.contains { $0.topic == "scangate/kiosk-t/status" && $0.text == "online" } })
        let expires = Int(Date().timeIntervalSince1970) + 300
        func result(_ id: String) -> [String: Any]? {
            sub.messages(on: "scangate/kiosk-t/cmd/reload/result").compactMap(\.json).last { ($0["id"] as? String) == id }
        }
        try TestFiles.write("[debounce]\nhold-off-ms = banana\n", to: conf)
        mosquittoPub(port: broker.port, topic: "scangate/kiosk-t/cmd/reload", message: #"{"id":"bad","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in result("bad") != nil })
        XCTAssertEqual(result("bad")?["result"] as? String, "failed")
        XCTAssertTrue((result("bad")?["detail"] as? String ?? "").contains("hold-off-ms"), "\(String(describing: result("bad")))")
        XCTAssertFalse(d.stderr.contains { $0.contains("MQTT command reload: reloading") }, "no reload was started")

        try TestFiles.write("[debounce]\nhold-off-ms = 300\n", to: conf)
        mosquittoPub(port: broker.port, topic: "scangate/kiosk-t/cmd/reload", message: #"{"id":"good","expires":\#(expires)}"#)
        XCTAssertTrue(sub.wait(timeout: 15) { _ in result("good") != nil })
        XCTAssertEqual(result("good")?["result"] as? String, "ok")
        XCTAssertTrue(waitUntil(15) { d.stderr.contains { $0.contains("camera settings unchanged: the stream stays open") } },
                      "\(d.stderr.suffix(5))")
        XCTAssertEqual(d.stop(), 0)
        sub.stop()
    }

    private func refusals(_ sub: MQTTTestSubscriber) -> Int {
        sub.messages(on: "scangate/kiosk-t/cmd/pause/result").compactMap(\.json).filter { ($0["result"] as? String) == "refused" }.count
    }

    /// The node exporter's textfile format, from the daemon's own counters, written while it runs and
    /// left saying down at exit.
    func testTheMetricsFileFollowsTheDaemon() throws {
        let dir = try TestFiles.temporaryDirectory()
        let prom = dir + "/scangate.prom"
        let d = try DaemonUnderTest(["run", "--camera", "sim:" + (try codes(dir, count: 3)), "--hold-off-ms", "200",
                                     "--metrics-textfile", prom, "--metrics-interval-s", "1", "--status-socket", "off"])
        defer { d.stop() }
        func value(_ line: String) -> Double? {
            let text = (try? String(contentsOfFile: prom, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        XCTAssertTrue(waitUntil(20) { (value("scangate_reads_total{symbology=\"QR-Code\",verdict=\"accepted\"}") ?? 0) >= 3 },
                      (try? String(contentsOfFile: prom, encoding: .utf8)) ?? "no file")
        XCTAssertGreaterThan(value("scangate_frames_captured_total") ?? 0, 0)
        XCTAssertEqual(value("scangate_camera_up"), 1)
        XCTAssertGreaterThan(value("scangate_decode_seconds_count") ?? 0, 0)
        XCTAssertEqual(value("scangate_up"), 1)
        XCTAssertEqual(d.stop(), 0)
        XCTAssertEqual(value("scangate_up"), 0, "a stopped daemon does not look alive")
    }
}
