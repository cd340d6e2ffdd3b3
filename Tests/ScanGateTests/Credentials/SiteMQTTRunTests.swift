import Components
import Core
import Foundation
import Platform
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The site over MQTT, through `scangate run` and Debian's mosquitto: a site policy document pushed to
/// `<prefix>/policy` takes effect without a restart (and a rollback is refused with a result message),
/// and anti-passback travels between two kiosks on `<site>/passback/+`, including while the broker is
/// away. Policies and passes are signed by PyJWT (Peers/policy_peer.py).
final class SiteMQTTRunTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    var now: Int64 { Int64(Glibc.time(nil)) }

    /// Signs a policy into `dir/NAME.jwt`; returns its path.
    @discardableResult
    func writePolicy(_ name: String, ver: Int, door: String, role: String, mode: String = "off", timeout: Int64 = 3600,
                     deny: String = "[]") throws -> String {
        let now = self.now
        let doc = "{\"ver\":\(ver),\"iat\":\(now - 600 + Int64(ver)),\"exp\":\(now + 3600),\"tz\":\"UTC\",\"door\":{\"id\":\"\(door)\",\"role\":\"\(role)\"},"
            + "\"antipassback\":{\"mode\":\"\(mode)\",\"timeout_s\":\(timeout)},\"deny\":\(deny)}"
        let path = dir + "/\(name).jwt"
        let result = try PythonPeers.run("policy_peer.py", ["policy", dir, path, "--doc", doc])
        XCTAssertEqual(result.status, 0, result.stdout)
        return path
    }

    func pass(_ sub: String) throws -> String {
        try PythonPeers.run("policy_peer.py", ["pass", dir, "--sub", sub]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func text(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A scene: `lead` blank frames, then `token` for 4 frames, then 10 blank ones; looped when `loop`.
    func scenario(_ token: String, lead: Int = 0, loop: Bool = false) throws -> String {
        let text = "size 320x320\nfps 30\nbackground 255\nframes \(lead + 14)\n" + (loop ? "loop\n" : "")
            + "code qr \"\(token)\" frames \(lead)-\(lead + 3) module 3\n"
        let path = dir + "/scene-\(UUID().uuidString.prefix(8)).scenario"
        try TestFiles.write(text, to: path)
        return path
    }

    func kioskArguments(_ kiosk: String, broker: MQTTTestBroker, scene: String, policy: String?, extra: [String] = []) -> [String] {
        ["run", "--camera", "sim:" + scene, "--hold-off-ms", "200", "--credential-format", "any",
         "--credential-keys", dir + "/site.jwks", "--credential-require-synced-clock=no",
         "--policy-state-file", dir + "/\(kiosk)/policy-state",
         "--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--mqtt-client-id", kiosk,
         "--mqtt-spool", dir + "/\(kiosk)/spool", "--mqtt-keepalive-s", "5", "--status-socket", dir + "/\(kiosk)/status.sock"]
            + (policy.map { ["--policy-file", $0] } ?? []) + extra
    }

    func makeKioskDirectory(_ kiosk: String) throws {
        try FileManager.default.createDirectory(atPath: dir + "/" + kiosk, withIntermediateDirectories: true)
    }

    static func events(_ lines: [String]) -> [JSONValue] { lines.compactMap { try? JSONValue.parse($0) } }
    static func verdict(_ e: JSONValue) -> String { e["rejected"]?.stringValue ?? "accepted" }

    // MARK: - A policy over MQTT

    func testAPolicyPushedOverMosquittoTakesEffectWithoutARestartAndARollbackIsRefused() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let results = try MQTTTestSubscriber(port: broker.port, topics: ["scangate/kiosk-p/policy/result"])
        results.waitSubscribed(port: broker.port)
        try makeKioskDirectory("kiosk-p")
        let v1 = try writePolicy("v1", ver: 1, door: "lobby", role: "both")
        let v2 = try writePolicy("v2", ver: 2, door: "lobby", role: "both", deny: "[\"9001\"]")
        let scene = try scenario(try pass("9001"), loop: true)
        let d = try DaemonUnderTest(kioskArguments("kiosk-p", broker: broker, scene: scene, policy: v1, extra: ["--mqtt-policy"]))
        defer { d.stop() }
        XCTAssertTrue(waitUntil(30) { Self.events(d.stdout).contains { Self.verdict($0) == "accepted" } }, "\(d.stderr.suffix(8))")

        // ver 2 denies 9001: published retained, as a site's back end would, it takes effect in the running daemon.
        XCTAssertEqual(mosquittoPub(port: broker.port, topic: "scangate/kiosk-p/policy", message: try text(v2), retain: true), 0)
        XCTAssertTrue(results.wait(timeout: 30) { m in m.contains { $0.json?["outcome"] as? String == "installed" } },
                      "\(results.messages.map(\.text)) \(d.stderr.suffix(8))")
        let installed = try XCTUnwrap(results.messages.first?.json)
        XCTAssertEqual(installed["topic"] as? String, "scangate/kiosk-p/policy")
        XCTAssertTrue((installed["detail"] as? String ?? "").hasPrefix("ver 2 ("), "\(installed)")
        let before = Self.events(d.stdout).count
        XCTAssertTrue(waitUntil(30) { Self.events(d.stdout).dropFirst(before).contains { Self.verdict($0) == "revoked" } },
                      "\(d.stderr.suffix(8))")
        XCTAssertTrue(d.stderr.contains { $0.contains("site policy over MQTT: reloading") }, "\(d.stderr)")
        XCTAssertTrue(d.stderr.contains { $0.contains("credentials: site policy ver 2") }, "\(d.stderr.suffix(20))")

        // ver 1 again is a rollback; a document that is not signed is refused too; ver 2 stays in force.
        XCTAssertEqual(mosquittoPub(port: broker.port, topic: "scangate/kiosk-p/policy", message: try text(v1)), 0)
        XCTAssertTrue(results.wait(timeout: 30) { m in m.contains { ($0.json?["detail"] as? String ?? "").contains("rollback") } },
                      "\(results.messages.map(\.text))")
        XCTAssertEqual(mosquittoPub(port: broker.port, topic: "scangate/kiosk-p/policy", message: "ver 3, trust me"), 0)
        XCTAssertTrue(results.wait(timeout: 30) { m in m.filter { $0.json?["outcome"] as? String == "refused" }.count >= 2 },
                      "\(results.messages.map(\.text))")
        XCTAssertEqual(results.messages.filter { $0.json?["outcome"] as? String == "installed" }.count, 1, "\(results.messages.map(\.text))")
        let mark = Self.events(d.stdout).count
        XCTAssertTrue(waitUntil(30) { Self.events(d.stdout).dropFirst(mark).contains { Self.verdict($0) == "revoked" } })
        XCTAssertFalse(Self.events(d.stdout).dropFirst(mark).contains { Self.verdict($0) == "accepted" })
        XCTAssertEqual(d.stop(), 0)

        // Restarted with no policy-file at all: the kept ver 2 decides from the first frame, and the retained
        // document that comes again at the connection is answered as unchanged.
        let again = try DaemonUnderTest(kioskArguments("kiosk-p", broker: broker, scene: scene, policy: nil, extra: ["--mqtt-policy"]))
        defer { again.stop() }
        XCTAssertTrue(results.wait(timeout: 30) { m in m.contains { $0.json?["outcome"] as? String == "unchanged" } },
                      "\(results.messages.map(\.text)) \(again.stderr.suffix(8))")
        XCTAssertTrue(waitUntil(30) { Self.events(again.stdout).count >= 2 })
        XCTAssertEqual(Set(Self.events(again.stdout).map(Self.verdict)), ["revoked"], "\(again.stdout)")
        XCTAssertEqual(again.stop(), 0)
        results.stop()
    }

    // MARK: - Anti-passback between kiosks

    func testAntipassbackHardAcrossTwoKiosksAndWhileTheBrokerIsAway() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let uses = try MQTTTestSubscriber(port: broker.port, topics: ["site/hq/passback/#"])
        uses.waitSubscribed(port: broker.port)
        for k in ["kiosk-a", "kiosk-b", "kiosk-c"] { try makeKioskDirectory(k) }
        let north = try writePolicy("north", ver: 1, door: "north", role: "in", mode: "hard")
        let south = try writePolicy("south", ver: 1, door: "south", role: "in", mode: "hard")
        let west = try writePolicy("west", ver: 1, door: "west", role: "in", mode: "soft")
        let site = ["--mqtt-site-topic", "site/hq"]

        // 8001 enters at the north door (kiosk A): the use is published, retained, under its number. The code
        // shows after 3 s of blank frames, once A's MQTT session is up (with --fast it read before that: offline).
        let pass8001 = try pass("8001")
        let a = try ScangateProcess.run(kioskArguments("kiosk-a", broker: broker, scene: try scenario(pass8001, lead: 90), policy: north,
                                                       extra: site), timeout: 120)
        XCTAssertEqual(a.status, 0, a.stderr)
        let aEvents = Self.events(a.stdoutLines)
        XCTAssertEqual(aEvents.map(Self.verdict), ["accepted"], a.stderr)
        XCTAssertNil(aEvents.first?["credential"]?["passback_view"], "the broker was there: no offline flag")
        XCTAssertTrue(uses.wait(timeout: 30) { m in m.contains { $0.topic == "site/hq/passback/38303031" } }, "\(uses.messages.map(\.topic))")
        let use = try XCTUnwrap(uses.messages.first { $0.topic == "site/hq/passback/38303031" }?.json)
        XCTAssertEqual(use["kiosk"] as? String, "kiosk-a")
        XCTAssertEqual(use["door"] as? String, "north")
        XCTAssertEqual(use["number"] as? String, "8001")
        XCTAssertEqual(use["dir"] as? String, "in")

        // The same number at the south door (kiosk B, started afterwards): the retained use reaches it, so
        // a second entry is refused as passback. The code shows after 3 s of blank frames.
        let b = try ScangateProcess.run(kioskArguments("kiosk-b", broker: broker, scene: try scenario(pass8001, lead: 90), policy: south,
                                                       extra: site), timeout: 120)
        XCTAssertEqual(b.status, 0, b.stderr)
        XCTAssertTrue(b.stderr.contains("anti-passback: number 8001 entered at kiosk kiosk-a (door north)"), b.stderr)
        XCTAssertEqual(Self.events(b.stdoutLines).map(Self.verdict), ["passback"], b.stderr)
        XCTAssertTrue(b.stderr.contains("credential refused: passback ("), b.stderr)

        // The broker goes away.
        broker.stop()
        // Soft, offline (kiosk C): 8001 entered at north, but this kiosk never heard: allowed and flagged.
        let c = try ScangateProcess.run(kioskArguments("kiosk-c", broker: broker, scene: try scenario(pass8001), policy: west,
                                                       extra: site + ["--fast"]), timeout: 120)
        XCTAssertEqual(c.status, 0, c.stderr)
        let cEvents = Self.events(c.stdoutLines)
        XCTAssertEqual(cEvents.map(Self.verdict), ["accepted"], c.stderr)
        XCTAssertEqual(cEvents.first?["credential"]?["passback_view"]?.stringValue, "offline", c.stdoutText)

        // Hard, offline (kiosk A, running): its own view decides. 8002 enters (flagged offline); shown again
        // after the hold-off it is refused from A's own record.
        let pass8002 = try pass("8002")
        let running = try DaemonUnderTest(kioskArguments("kiosk-a", broker: broker, scene: try scenario(pass8002, loop: true),
                                                         policy: north, extra: site))
        defer { running.stop() }
        XCTAssertTrue(waitUntil(30) { Self.events(running.stdout).count >= 2 }, "\(running.stderr.suffix(8))")
        let offline = Self.events(running.stdout)
        XCTAssertEqual(Self.verdict(offline[0]), "accepted")
        XCTAssertEqual(offline[0]["credential"]?["passback_view"]?.stringValue, "offline")
        XCTAssertEqual(Self.verdict(offline[1]), "passback")
        let away = try XCTUnwrap(sharing("kiosk-a"), "scangate status answers")
        XCTAssertEqual(away["view"]?.stringValue, "offline", "\(away)")
        XCTAssertEqual(away["waiting"]?.numberValue?.int64, 1, "the use of 8002 waits for the broker: \(away)")

        // The broker is back: A's use of 8002, held while it was away, is published when A reconnects, and
        // kiosk B (started afterwards) refuses 8002.
        try broker.start()
        XCTAssertTrue(waitUntil(70) { running.stderr.contains { $0.contains("mqtt: connected to") } }, "\(running.stderr.suffix(8))")
        let late = try MQTTTestSubscriber(port: broker.port, topics: ["site/hq/passback/38303032"])
        XCTAssertTrue(late.wait(timeout: 30) { m in m.contains { $0.json?["kiosk"] as? String == "kiosk-a" && $0.retained } },
                      "\(late.messages.map(\.text))")
        late.stop()
        let back = try XCTUnwrap(sharing("kiosk-a"))
        XCTAssertEqual(back["view"]?.stringValue, "shared", "\(back)")
        XCTAssertEqual(back["waiting"]?.numberValue?.int64, 0, "\(back)")
        XCTAssertEqual(back["sent"]?.numberValue?.int64, 1, "\(back)")
        let b2 = try ScangateProcess.run(kioskArguments("kiosk-b", broker: broker, scene: try scenario(pass8002, lead: 90), policy: south,
                                                        extra: site), timeout: 120)
        XCTAssertEqual(b2.status, 0, b2.stderr + "\n----\n" + running.stderr.joined(separator: "\n"))
        XCTAssertEqual(Self.events(b2.stdoutLines).map(Self.verdict), ["passback"], b2.stderr)
        XCTAssertEqual(running.stop(), 0)
        uses.stop()
    }

    /// `passback_sharing` from `scangate status --json` of a running kiosk.
    func sharing(_ kiosk: String) -> JSONValue? {
        guard let r = try? ScangateProcess.run(["status", "--json", "--socket", dir + "/\(kiosk)/status.sock"]), r.status == 0 else { return nil }
        return (try? JSONValue.parse(r.stdout))?["passback_sharing"]
    }

    // MARK: - The message

    func testAPassbackMessageFromTheBusIsCheckedBeforeItIsBelieved() {
        let ok = Array(#"{"v":1,"kiosk":"k2","door":"d","number":"4711","dir":"out","at":1764590000}"#.utf8)
        guard case .success(let use) = SiteLink.parse(ok) else { return XCTFail("a good message") }
        XCTAssertEqual(use, SiteLink.PassbackUse(kiosk: "k2", door: "d", number: Array("4711".utf8), entry: false, at: 1_764_590_000))
        XCTAssertEqual(SiteLink.message(use), String(decoding: ok, as: UTF8.self), "written as it is read")
        for (bad, why) in [
            (#"{"v":2,"kiosk":"k2","door":"d","number":"4711","dir":"out","at":1}"#, "\"v\" must be 1"),
            (#"{"v":1,"kiosk":"","door":"d","number":"4711","dir":"out","at":1}"#, "\"kiosk\""),
            (#"{"v":1,"kiosk":"k","door":"d","number":"","dir":"out","at":1}"#, "\"number\""),
            (#"{"v":1,"kiosk":"k","door":"d","number":"1","dir":"sideways","at":1}"#, "\"dir\""),
            (#"{"v":1,"kiosk":"k","door":"d","number":"1","dir":"in","at":-5}"#, "\"at\""),
            (#"{"v":1,"v":1,"kiosk":"k","door":"d","number":"1","dir":"in","at":5}"#, "not JSON"),
            ("[1,2]", "not a JSON object"),
        ] {
            guard case .failure(let error) = SiteLink.parse(Array(bad.utf8)) else { XCTFail("accepted: \(bad)"); continue }
            XCTAssertTrue(error.text.contains(why), "\(bad): \(error.text)")
        }
        if case .success = SiteLink.parse(Array(repeating: 0x20, count: SiteLink.maxMessageBytes + 1)) { XCTFail("an oversized message") }
    }
}
