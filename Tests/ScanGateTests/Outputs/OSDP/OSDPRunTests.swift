#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Core
import Platform

/// `scangate run --osdp PTY ...` (the real binary, as a child process) polled by libosdp's ControlPanel
/// (PyPI libosdp 3.2.9 in .build/venv, Tests/ScanGateTests/Peers/osdp_control_panel.py) over a
/// pseudo-terminal, with codes from a simulator scenario and the beep on a real ALSA `file` PCM
/// (ALSA_CONFIG_PATH points the child at a configuration that defines it).
final class OSDPRunTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    var keyPath: String { dir + "/osdp-scbk" }
    var statePath: String { dir + "/osdp-state" }
    var rawPath: String { dir + "/beep.raw" }

    func writeKey(_ key: [UInt8]) throws {
        try TestFiles.write(Hex.string(key) + "\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
    }

    /// A scenario at 20 fps: `codes` = [(payload, first frame, last frame)], blank around them.
    func scenario(frames: Int, codes: [(String, Int, Int)], size: String = "320x240") throws -> String {
        let path = dir + "/codes.scenario"
        var text = "size \(size)\nfps 20\nframes \(frames)\n"
        for (payload, first, last) in codes { text += "code qr \"\(payload)\" frames \(first)-\(last) module 3\n" }
        try TestFiles.write(text, to: path)
        return path
    }

    /// The environment of the child: this process's, plus an ALSA configuration whose `beeptest` PCM
    /// writes every sample played to `rawPath` (S16_LE mono 48 kHz).
    func environment(_ extra: [String: String] = [:]) throws -> [String: String] {
        let conf = dir + "/asound.conf"
        try TestFiles.write("""
            pcm.beeptest {
                type file
                slave { pcm { type null } }
                file "\(rawPath)"
                format "raw"
            }
            """, to: conf)
        var env = ProcessInfo.processInfo.environment
        env["ALSA_CONFIG_PATH"] = conf
        env.removeValue(forKey: "NOTIFY_SOCKET")
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// Starts `scangate run` on the peer's pseudo-terminal and waits until it listens there.
    func startDaemon(_ peer: OSDPControlPanelPeer, camera: String, _ flags: [String],
                     environment extra: [String: String] = [:]) throws -> DaemonUnderTest {
        let args = ["run", "--camera", "sim:" + camera, "--osdp", peer.device, "--osdp-scbk-file", keyPath,
                    "--osdp-state-file", statePath, "--osdp-serial", "16909060", "--osdp-vendor-code", "0x0A0B0C", "--log-level", "debug"] + flags
        let daemon = try DaemonUnderTest(args, environment: try environment(extra))
        XCTAssertTrue(waitUntil(20) { daemon.stderr.contains { $0.contains("osdp: listening on \(peer.device)") } },
                      "scangate did not open the OSDP port: \(daemon.stderr)")
        return daemon
    }

    func events(_ daemon: DaemonUnderTest) -> [[String: Any]] {
        daemon.stdout.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func cards(_ peer: OSDPControlPanelPeer) -> [[String: Any]] {
        peer.events.filter { $0["event"] as? String == "card" }
    }

    func logged(_ daemon: DaemonUnderTest, _ text: String) -> Bool { daemon.stderr.contains { $0.contains(text) } }

    func samples() throws -> [Int16] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: rawPath)))
        return stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }

    /// LED lines in the settings, on a chip this machine does not have: osdp_PDCAP then reports LEDs
    /// and the panel's LED commands reach the feedback hub (its debug line shows them); the GPIO device
    /// itself keeps retrying the chip. The lines being driven is OSDPRunDaemonTests' and HIL's proof.
    static let absentLEDs = ["--gpio-chip", "no-such-gpio-chip", "--led-green", "17", "--led-red", "27"]

    // MARK: - Tests

    /// The issue's first proof: online with EnforceSecure; one code on the camera is one CardRead with its
    /// bytes (and one JSON line); the panel's LED command reaches feedback; its BUZ command is a tone in
    /// the beep's PCM at beep-tone-hz, 300 ms on and 200 ms off, four times.
    func testRunOnlineWithEnforceSecureOneCardReadLEDAndBuzzerTone() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x60 + $0) }
        try writeKey(key)
        // The code from 3 s to 4 s; the read waits (osdp-ttl-ms) for the secure channel if it is not up yet.
        let camera = try scenario(frames: 2000, codes: [("PASS-0042-QR", 60, 80)])
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-ttl-ms", "60000", "--beep", "1000:100",
                                                            "--beep-device", "beeptest", "--beep-tone-hz", "2500"] + Self.absentLEDs)
        defer { daemon.stop() }

        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true },
                        "libosdp's CP did not bring `scangate run` online with EnforceSecure: \(peer.events) \(daemon.stderr)")
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "controller online: osdp") }, "\(daemon.stderr)")
        XCTAssertTrue(logged(daemon, "osdp: secure channel up"), "\(daemon.stderr)")

        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "no CardRead: \(peer.events) \(daemon.stderr)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("PASS-0042-QR".utf8)))
        XCTAssertEqual(card["format"] as? Int, 0)
        XCTAssertEqual(card["bits"] as? Int, 12 * 8)
        XCTAssertTrue(waitUntil(10) { self.events(daemon).count == 1 }, "\(daemon.stdout)")
        let event = try XCTUnwrap(events(daemon).first)
        XCTAssertEqual(event["data"] as? String, "PASS-0042-QR")
        XCTAssertNil(event["refused"], "OSDP took it: \(event)")
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "beep: played 1000:100 on beeptest") }, "\(daemon.stderr)")

        // LED: temporary green 5 on / 5 off (x100 ms) for 30 (x100 ms), off colour black; then BUZ: default
        // tone, 3 on / 2 off (x100 ms), 4 times.
        peer.send(["cmd": "led", "temporary": true, "control_code": 2, "on_count": 5, "off_count": 5,
                   "on_color": 2, "off_color": 0, "timer_count": 30])
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "feedback from osdp: LED green 500 ms / off 500 ms for 3000 ms") },
                      "\(daemon.stderr)")
        let playedBefore = daemon.stderr.filter { $0.contains("beep: played") }.count
        peer.send(["cmd": "buzzer", "control_code": 2, "on_count": 3, "off_count": 2, "rep_count": 4])
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "feedback from osdp: tone 300/200 ms for 4 cycles") }, "\(daemon.stderr)")
        XCTAssertTrue(waitUntil(15) { daemon.stderr.filter { $0.contains("beep: played") }.count > playedBefore },
                      "the BUZ tone was not played: \(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)

        // The file holds what was played, back to back: the good-read beep (1000 Hz, 100 ms: 4800
        // samples), then the panel's four tones with their pauses.
        let all = try samples()
        let good = SoundSignalAnalysis.tones(Array(all.prefix(4800)), rate: 48_000)
        let buzz = SoundSignalAnalysis.tones(Array(all.dropFirst(4800)), rate: 48_000)
        XCTAssertEqual(good.count, 1, "\(good)")
        XCTAssertEqual(good.first?.hertz ?? 0, 1000, accuracy: 20, "\(good)")
        XCTAssertEqual(buzz.count, 4, "four BUZ tones: \(buzz)")
        for tone in buzz { XCTAssertEqual(tone.hertz, 2500, accuracy: 50, "at beep-tone-hz: \(tone)") }
        for tone in buzz { XCTAssertEqual(tone.milliseconds, 300, accuracy: 3, "\(tone)") }
        for (a, b) in zip(buzz, buzz.dropFirst()) {
            XCTAssertEqual(b.startMilliseconds - (a.startMilliseconds + a.milliseconds), 200, accuracy: 3, "\(buzz)")
        }
        XCTAssertEqual(cards(peer).count, 1, "exactly one CardRead: \(peer.events)")
    }

    /// osdp-secure = off: a plain link, and a code over osdp-max-card-bytes is refused for OSDP only: the
    /// JSON line still reports it, with the reason under "refused", and the panel never gets it; the next
    /// code goes through.
    func testPlainLinkAndACodeOverTheLimitIsRefusedForOSDPOnlyWithTheReasonInJSON() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let long = String(repeating: "L", count: 60) + "-0065"
        let camera = try scenario(frames: 2000, codes: [(long, 60, 80), ("SHORT-OK", 120, 140)], size: "480x360")
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-secure", "off", "--osdp-ttl-ms", "60000"])
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == false }, "\(peer.events) \(daemon.stderr)")

        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "\(peer.events) \(daemon.stderr)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("SHORT-OK".utf8)))
        XCTAssertTrue(waitUntil(10) { self.events(daemon).count == 2 }, "\(daemon.stdout)")
        let reported = events(daemon)
        XCTAssertEqual(reported.map { $0["data"] as? String }, [long, "SHORT-OK"])
        let refused = try XCTUnwrap(reported.first?["refused"] as? [String: Any], "\(reported)")
        XCTAssertEqual(refused["osdp"] as? String,
                       "osdp: 65 bytes, more than osdp-max-card-bytes (64); panels built on libosdp cannot decode a longer osdp_RAW")
        XCTAssertEqual(refused.count, 1, "refused by OSDP only: \(refused)")
        XCTAssertNil(reported.last?["refused"])
        XCTAssertTrue(logged(daemon, "refused by osdp (osdp: 65 bytes, more than osdp-max-card-bytes (64)"), "\(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)
        XCTAssertEqual(cards(peer).count, 1, "the long code never reached the panel: \(peer.events)")
    }

    /// osdp-install-mode: the panel falls back to SCBK-D, sends KEYSET with its key, the key file gets it
    /// (0600) and the channel comes up with it; the next `scangate run` (same flags) uses the new key and
    /// a panel that insists on it (EnforceSecure) is online at once.
    func testInstallModeKeysetThenTheNextStartUsesTheNewKey() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let newKey = (0..<16).map { UInt8(0xC0 + $0) }
        let camera = try scenario(frames: 4000, codes: [])
        let flags = ["--osdp-install-mode"]
        let first = try startDaemon(peer, camera: camera, flags)
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": false])
        XCTAssertTrue(waitUntil(20) { (try? String(contentsOfFile: self.keyPath, encoding: .utf8))?.contains(Hex.string(newKey)) ?? false },
                      "the key file did not get the panel's key: \(peer.events) \(first.stderr)")
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(first.stderr)")
        XCTAssertTrue(waitUntil(5) { self.logged(first, "the panel installed a new secure channel key") }, "\(first.stderr)")
        XCTAssertFalse(first.stderr.contains { $0.contains(Hex.string(newKey)) }, "the key is never logged")
        var info = stat()
        XCTAssertEqual(stat(keyPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)

        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        XCTAssertEqual(first.stop(), 0)

        peer.clearEvents()
        let second = try startDaemon(peer, camera: camera, flags)
        defer { second.stop() }
        XCTAssertTrue(logged(second, "osdp-install-mode = yes is not used: the panel already installed the key"), "\(second.stderr)")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(second.stderr)")
        XCTAssertTrue(waitUntil(5) { self.logged(second, "osdp: secure channel up") }, "\(second.stderr)")
        XCTAssertEqual(second.stop(), 0)
    }

    /// Sends the hostile device (osdp_attacker_cp.py, on the same line, no CP running) and returns its report.
    func attack(_ peer: OSDPControlPanelPeer, key: [UInt8]) throws -> [String: Any] {
        peer.clearEvents()
        peer.send(["cmd": "attack", "address": 0, "key": Hex.string(key)])
        return try XCTUnwrap(peer.wait(for: "attack", within: 20), "the attacker did not report: \(peer.events)")
    }

    /// The attacker's CHLNG for SCBK-D got NAK 06 and its KEYSET did not take.
    func assertRefused(_ report: [String: Any], _ daemon: DaemonUnderTest, file: StaticString = #filePath, line: UInt = #line) {
        let steps = report["steps"] as? [[String: Any]] ?? []
        XCTAssertEqual(steps.first?["sent"] as? String, "CHLNG SCBK-D", "\(report)", file: file, line: line)
        XCTAssertEqual(steps.first?["reply"] as? String, "NAK", "SCBK-D must be refused: \(report) \(daemon.stderr)", file: file, line: line)
        XCTAssertEqual(steps.first?["nak"] as? Int, 6, "\(report)", file: file, line: line)
        XCTAssertTrue(steps.dropFirst().allSatisfy { $0["reply"] as? String == "NAK" }, "\(report)", file: file, line: line)
        XCTAssertEqual(report["took_over"] as? Bool, false, "\(report)", file: file, line: line)
    }

    /// Issue 19 item 4: install mode left on with a key file present. A second device on the line opens
    /// the channel with SCBK-D and sends KEYSET with its own key: NAK 06, the key file is unchanged, the
    /// log says so, and libosdp's panel with the real key still gets the card reads.
    func testInstallModeWithAKeyFileRefusesAnSCBKDTakeoverAndThePanelStillGetsReads() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x70 + $0) }
        try writeKey(key)
        let before = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        let camera = try scenario(frames: 2000, codes: [("AFTER-ATTACK", 60, 80)])
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-install-mode", "--osdp-ttl-ms", "60000"])
        defer { daemon.stop() }
        XCTAssertTrue(logged(daemon, "osdp-install-mode = yes is not used: \(keyPath) holds a key"), "\(daemon.stderr)")

        let attacker = (0..<16).map { UInt8(0xA0 + $0) }
        assertRefused(try attack(peer, key: attacker), daemon)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: keyPath)), before, "the key file is unchanged")
        XCTAssertTrue(waitUntil(5) { self.logged(daemon, "a CHLNG for the default key SCBK-D was refused with NAK 06: a key is installed") },
                      "\(daemon.stderr)")
        XCTAssertFalse(logged(daemon, "the panel installed a new secure channel key"), "\(daemon.stderr)")

        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(daemon.stderr)")
        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "no CardRead: \(peer.events) \(daemon.stderr)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("AFTER-ATTACK".utf8)))
        XCTAssertEqual(daemon.stop(), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: keyPath)), before)
        XCTAssertFalse(daemon.stderr.contains { $0.contains(Hex.string(attacker)) || $0.contains(Hex.string(key)) }, "keys are never logged")
    }

    /// Issue 19 item 4, after enrolment: the panel installs its key in install mode; restarts with
    /// --osdp-install-mode still on refuse SCBK-D, with the state file's record and without it; and with
    /// the record but no key file, `scangate run` refuses to start rather than reopen install mode.
    func testAfterAnInstallModeKeysetRestartsInInstallModeRefuseSCBKD() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let newKey = (0..<16).map { UInt8(0xC0 + $0) }
        let attacker = (0..<16).map { UInt8(0x0A + $0) }
        let camera = try scenario(frames: 4000, codes: [])
        let flags = ["--osdp-install-mode"]
        let first = try startDaemon(peer, camera: camera, flags)
        XCTAssertTrue(logged(first, "osdp: install mode is open: no key in \(keyPath) yet"), "\(first.stderr)")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": false])
        XCTAssertTrue(waitUntil(20) { (try? String(contentsOfFile: self.keyPath, encoding: .utf8))?.contains(Hex.string(newKey)) ?? false },
                      "the key file did not get the panel's key: \(peer.events) \(first.stderr)")
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(first.stderr)")
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        XCTAssertEqual(first.stop(), 0)
        let enrolled = try Data(contentsOf: URL(fileURLWithPath: keyPath))

        // Restart, install mode still on, the state file records the key.
        let second = try startDaemon(peer, camera: camera, flags)
        assertRefused(try attack(peer, key: attacker), second)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: keyPath)), enrolled)
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(second.stderr)")
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        XCTAssertEqual(second.stop(), 0)

        // The key file gone but the record there: no start, a message naming both files.
        let keyAside = dir + "/osdp-scbk.aside"
        XCTAssertEqual(rename(keyPath, keyAside), 0)
        let refused = try DaemonUnderTest(["run", "--camera", "sim:" + camera, "--osdp", peer.device, "--osdp-scbk-file", keyPath,
                                           "--osdp-state-file", statePath, "--osdp-serial", "16909060", "--osdp-vendor-code", "0x0A0B0C", "--osdp-install-mode"],
                                          environment: try environment())
        defer { refused.stop() }
        XCTAssertEqual(refused.waitForExit(seconds: 20), 2, "\(refused.stderr)")
        XCTAssertTrue(refused.stderr.contains { $0.contains("osdp-scbk-file \(keyPath): does not exist, but osdp-state-file \(statePath) records that a panel installed a key") },
                      "\(refused.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: keyPath), "no key was made up")
        XCTAssertEqual(rename(keyAside, keyPath), 0)

        // The state file lost: the key file alone keeps install mode shut.
        XCTAssertEqual(unlink(statePath), 0)
        let third = try startDaemon(peer, camera: camera, flags)
        defer { third.stop() }
        assertRefused(try attack(peer, key: attacker), third)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: keyPath)), enrolled)
        XCTAssertEqual(third.stop(), 0)
    }

    /// A panel that stops polling: STATUS=controller offline on a real NOTIFY_SOCKET, the warning line, the
    /// journal's status line; a read then waits past osdp-ttl-ms and is dropped (logged), and none of the
    /// dropped reads reaches the panel when it comes back (STATUS=scanning again, later reads delivered).
    func testAPanelThatStopsPollingIsControllerOfflineAndAReadPastItsTTLIsDropped() throws {
        let notify = try ServiceNotifySocket()
        defer { notify.close() }
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x11 * ($0 % 15 + 1)) }
        try writeKey(key)
        // A new code every 1.5 s for 120 s: R001, R002, ...
        let camera = try scenario(frames: 2400, codes: (1...78).map { (String(format: "R%03d", $0), $0 * 30, $0 * 30 + 5) })
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-offline-after-ms", "1000", "--osdp-ttl-ms", "300"],
                                     environment: ["NOTIFY_SOCKET": notify.path])
        defer { daemon.stop() }
        var messages: [String] = []
        func waitFor(_ wanted: String, seconds: Double = 20) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                guard let m = notify.receive(timeoutSeconds: deadline.timeIntervalSinceNow) else { return false }
                messages.append(m)
                if m.split(separator: "\n").contains(where: { $0 == wanted }) { return true }
            }
            return false
        }
        XCTAssertTrue(waitFor("STATUS=scanning"), "\(messages)")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(daemon.stderr)")
        XCTAssertNotNil(peer.wait(for: "card", within: 20), "reads reach the panel while it polls: \(daemon.stderr)")

        peer.send(["cmd": "stop"])
        XCTAssertNotNil(peer.wait(for: "stopped", within: 10))
        XCTAssertTrue(waitFor("STATUS=controller offline"), "\(messages)")
        XCTAssertTrue(waitUntil(5) { self.logged(daemon, "<4>controller offline: osdp: no command from the panel for 1.0 s") },
                      "\(daemon.stderr)")
        XCTAssertTrue(waitUntil(5) { self.logged(daemon, "<4>status: controller offline") }, "the journal line: \(daemon.stderr)")
        XCTAssertTrue(waitUntil(5) { self.logged(daemon, "secure channel dropped: the panel stopped polling") }, "\(daemon.stderr)")

        // The next code is reported on stdout, waits for a poll that does not come, and is dropped.
        let droppedLine = try XCTUnwrap({ () -> String? in
            var line: String?
            _ = waitUntil(20) {
                line = daemon.stderr.first { $0.contains("dropped: the panel did not poll within osdp-ttl-ms (300 ms)") }
                return line != nil
            }
            return line
        }(), "no read was dropped: \(daemon.stderr)")
        let seq = try XCTUnwrap(droppedLine.split(separator: "#").last?.split(separator: " ").first.flatMap { Int($0) }, droppedLine)
        let dropped = try XCTUnwrap(events(daemon).first { $0["seq"] as? Int == seq }, "read #\(seq) on stdout: \(daemon.stdout)")
        let droppedPayload = try XCTUnwrap(dropped["data"] as? String)

        // The panel comes back (a fresh CP: libosdp's own would wait 300 s after losing the reader).
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        let cardsBefore = cards(peer).count
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events)")
        XCTAssertTrue(waitFor("STATUS=scanning"), "back to scanning: \(messages)")
        XCTAssertTrue(waitUntil(20) { self.cards(peer).count > cardsBefore }, "reads flow again: \(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)
        let delivered = cards(peer).compactMap { ($0["data"] as? String).flatMap { Hex.decode($0) }.map { String(decoding: $0, as: UTF8.self) } }
        XCTAssertFalse(delivered.contains(droppedPayload), "the dropped read \(droppedPayload) was sent late: \(delivered)")
        let droppedSeqs = Set(daemon.stderr.compactMap { line -> Int? in
            guard line.contains("dropped: the panel did not poll within osdp-ttl-ms") else { return nil }
            return line.split(separator: "#").last?.split(separator: " ").first.flatMap { Int($0) }
        })
        let droppedPayloads = Set(events(daemon).filter { droppedSeqs.contains($0["seq"] as? Int ?? -1) }.compactMap { $0["data"] as? String })
        XCTAssertTrue(droppedPayloads.isDisjoint(with: delivered), "dropped \(droppedPayloads), delivered \(delivered)")
        XCTAssertEqual(Set(delivered).count, delivered.count, "no read delivered twice: \(delivered)")
    }

    /// feedback = controller: a read plays only the read cue (2500 Hz, 40 ms here), never the good-read
    /// beep; grant is what the panel says: its LED command is played, and its BUZ is the only other tone.
    func testWithFeedbackControllerThePanelsCommandsAreTheOnlyGrantSignal() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x21 + $0) }
        try writeKey(key)
        let camera = try scenario(frames: 2000, codes: [("DOOR-7", 60, 80)])
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-ttl-ms", "60000", "--feedback", "controller",
                                                            "--beep", "1000:100", "--beep-cue", "3000:40",
                                                            "--beep-device", "beeptest", "--beep-tone-hz", "1500"] + Self.absentLEDs)
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(daemon.stderr)")
        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "\(peer.events) \(daemon.stderr)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("DOOR-7".utf8)))
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "feedback from read: read cue") }, "\(daemon.stderr)")
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "beep: played 3000:40 on beeptest") }, "\(daemon.stderr)")

        // The panel grants: green for 1 s (temporary, steady), and one 200 ms tone.
        peer.send(["cmd": "led", "temporary": true, "control_code": 2, "on_count": 10, "off_count": 0,
                   "on_color": 2, "off_color": 0, "timer_count": 10])
        XCTAssertTrue(waitUntil(10) { self.logged(daemon, "feedback from osdp: LED green for 1000 ms") }, "\(daemon.stderr)")
        peer.send(["cmd": "buzzer", "control_code": 2, "on_count": 2, "off_count": 0, "rep_count": 1])
        XCTAssertTrue(waitUntil(15) { daemon.stderr.filter { $0.contains("beep: played") }.count >= 2 }, "\(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)

        XCTAssertFalse(daemon.stderr.contains { $0.contains("feedback from read: grant") || $0.contains("feedback from read: deny") },
                       "the read itself never grants or denies: \(daemon.stderr.filter { $0.contains("feedback from") })")
        // Back to back in the file: the cue (40 ms: 1920 samples), then the panel's 200 ms tone; nothing else.
        let all = try samples()
        XCTAssertEqual(all.count, (40 + 200) * 48, "the cue and the panel's tone, nothing else")
        let cue = SoundSignalAnalysis.tones(Array(all.prefix(1920)), rate: 48_000)
        let granted = SoundSignalAnalysis.tones(Array(all.dropFirst(1920)), rate: 48_000)
        XCTAssertEqual(cue.count, 1, "\(cue)")
        XCTAssertEqual(cue.first?.hertz ?? 0, 3000, accuracy: 60, "the read cue first: \(cue)")
        XCTAssertEqual(granted.count, 1, "\(granted)")
        XCTAssertEqual(granted.first?.hertz ?? 0, 1500, accuracy: 30, "then the panel's BUZ at beep-tone-hz: \(granted)")
        XCTAssertEqual(granted.first?.milliseconds ?? 0, 200, accuracy: 3)
    }

    // MARK: - osdp_FILETRANSFER: a config file from the panel

    /// The panel (libosdp's CP, in the secure channel) sends a config file as file type 1: it passes the
    /// check, replaces the config file the daemon was started with, and the daemon reloads it.
    func testAConfigFileSentByThePanelIsInstalledAndReloaded() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x70 + $0) }
        try writeKey(key)
        let conf = dir + "/scangate.conf"
        try TestFiles.write("[debounce]\nhold-off-ms = 1500\n", to: conf)
        let sent = dir + "/from-panel.conf"
        let newText = "# sent by the panel\n[debounce]\nhold-off-ms = 2000\n" + String(repeating: "# padding\n", count: 300)
        try TestFiles.write(newText, to: sent)
        let camera = try scenario(frames: 4000, codes: [])
        let daemon = try startDaemon(peer, camera: camera, ["--config", conf])
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(daemon.stderr)")

        peer.send(["cmd": "file", "id": 1, "path": sent])
        XCTAssertNotNil(peer.wait(for: "submitted", within: 10) { $0["cmd"] as? String == "file" && $0["ok"] as? Bool == true },
                        "\(peer.events)")
        XCTAssertTrue(waitUntil(60) { self.logged(daemon, "reloaded: defaults, then \(conf)") }, "\(peer.events) \(daemon.stderr)")
        XCTAssertTrue(logged(daemon, "osdp file transfer: installed a \(newText.utf8.count)-byte config file as"), "\(daemon.stderr)")
        XCTAssertEqual(try String(contentsOfFile: conf, encoding: .utf8), newText)
        XCTAssertNotNil(peer.wait(for: "file-done", within: 20), "\(peer.events)")
        XCTAssertTrue(peer.events.contains { $0["event"] as? String == "file-progress" && ($0["offset"] as? Int ?? 0) > 0 },
                      "the file went in more than one fragment: \(peer.events)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".tmp") }, [],
                       "no temporary file left")
        XCTAssertEqual(daemon.stop(), 0)
    }

    /// The panel (libosdp's CP, in the secure channel) cancels a file transfer half way: libosdp sends
    /// osdp_ABORT, the reader drops the partial file with a log line and the config file stays as it was;
    /// the next file, from offset 0, is installed.
    func testAFileTransferThePanelAbortsLeavesTheConfigFileAndTheNextFileInstalls() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x70 + $0) }
        try writeKey(key)
        let conf = dir + "/scangate.conf"
        let original = "[debounce]\nhold-off-ms = 1500\n"
        try TestFiles.write(original, to: conf)
        let big = dir + "/big.conf"
        try TestFiles.write("[debounce]\nhold-off-ms = 2500\n" + String(repeating: "# padding\n", count: 6000), to: big)
        let small = dir + "/small.conf"
        let newText = "# sent by the panel after the abort\n[debounce]\nhold-off-ms = 2000\n"
        try TestFiles.write(newText, to: small)
        let camera = try scenario(frames: 4000, codes: [])
        let daemon = try startDaemon(peer, camera: camera, ["--config", conf])
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(daemon.stderr)")

        peer.send(["cmd": "file", "id": 1, "path": big])
        XCTAssertNotNil(peer.wait(for: "file-progress", within: 20) { ($0["offset"] as? Int ?? 0) > 0 }, "\(peer.events)")
        peer.send(["cmd": "file-cancel", "id": 1])
        XCTAssertTrue(waitUntil(20) { self.logged(daemon, "was aborted by the panel (ABORT) and dropped") },
                      "\(peer.events) \(daemon.stderr)")
        XCTAssertNotNil(peer.wait(for: "file-done", within: 20), "\(peer.events)")
        XCTAssertEqual(try String(contentsOfFile: conf, encoding: .utf8), original, "the config file is not touched")
        XCTAssertFalse(logged(daemon, "installed a"), "\(daemon.stderr)")

        peer.clearEvents()
        peer.send(["cmd": "file", "id": 1, "path": small])
        XCTAssertTrue(waitUntil(60) { self.logged(daemon, "reloaded: defaults, then \(conf)") }, "\(peer.events) \(daemon.stderr)")
        XCTAssertEqual(try String(contentsOfFile: conf, encoding: .utf8), newText)
        XCTAssertEqual(daemon.stop(), 0)
    }

    /// With no config file (flags only) there is nothing to replace: the transfer is refused at its first
    /// fragment, with a log line that says why.
    func testWithoutAConfigFileAFileTransferIsRefused() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let sent = dir + "/from-panel.conf"
        try TestFiles.write("[debounce]\nhold-off-ms = 2000\n", to: sent)
        let camera = try scenario(frames: 4000, codes: [])
        let daemon = try startDaemon(peer, camera: camera, ["--osdp-secure", "off"])
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == false }, "\(peer.events) \(daemon.stderr)")
        peer.send(["cmd": "file", "id": 1, "path": sent])
        XCTAssertTrue(waitUntil(30) { self.logged(daemon, "file transfer refused: scangate runs without a config file (flags only)") },
                      "\(peer.events) \(daemon.stderr)")
        XCTAssertFalse(logged(daemon, "reloading"), "\(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)
    }

    /// A file that would not load (a bad value) is refused with the reason logged; the config file stays
    /// byte for byte what it was and nothing reloads. Another file type is refused too.
    func testABrokenConfigFileFromThePanelIsRefusedAndTheConfigFileIsUnchanged() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let conf = dir + "/scangate.conf"
        let original = "[debounce]\nhold-off-ms = 1500\n"
        try TestFiles.write(original, to: conf)
        let broken = dir + "/broken.conf"
        try TestFiles.write("[debounce]\nhold-off-ms = banana\n", to: broken)
        let camera = try scenario(frames: 4000, codes: [])
        let daemon = try startDaemon(peer, camera: camera, ["--config", conf, "--osdp-secure", "off"])
        defer { daemon.stop() }
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == false }, "\(peer.events) \(daemon.stderr)")

        peer.send(["cmd": "file", "id": 1, "path": broken])
        XCTAssertTrue(waitUntil(30) { self.logged(daemon, "config file was refused, the config in force is unchanged") },
                      "\(peer.events) \(daemon.stderr)")
        XCTAssertTrue(logged(daemon, "hold-off-ms"), "the reason names the key: \(daemon.stderr)")
        XCTAssertNotNil(peer.wait(for: "file-done", within: 20), "\(peer.events)")

        // libosdp 3.2.9 counts the negative FTSTAT as a failed reply and keeps the transfer; a fresh CP
        // sends the next file.
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10), "\(peer.events)")
        peer.clearEvents()
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 30) { $0["sc"] as? Bool == false }, "\(peer.events) \(daemon.stderr)")
        peer.send(["cmd": "file", "id": 7, "path": broken])
        XCTAssertTrue(waitUntil(30) { self.logged(daemon, "file type 7 refused") }, "\(peer.events) \(daemon.stderr)")

        XCTAssertEqual(try String(contentsOfFile: conf, encoding: .utf8), original)
        XCTAssertFalse(logged(daemon, "reloading \(conf)"), "\(daemon.stderr)")
        XCTAssertFalse(logged(daemon, "installed a"), "\(daemon.stderr)")
        XCTAssertEqual(daemon.stop(), 0)
    }
}

/// `scangate doctor --osdp PTY ...` (the real binary) against libosdp's ControlPanel: the port, the polls
/// heard and from which address, and whether the secure channel comes up with the key file.
final class OSDPDoctorTests: XCTestCase {
    var dir = ""
    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// Runs doctor on the peer's pty with `key` in the key file; the panel (with `panelKey`, EnforceSecure)
    /// starts once doctor has the port open, as a panel that is already running would be heard.
    func doctor(_ peer: OSDPControlPanelPeer, key: [UInt8], panelKey: [UInt8]?, address: Int = 0) throws -> (Int32?, [String]) {
        let keyPath = dir + "/osdp-scbk"
        try TestFiles.write(Hex.string(key) + "\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
        let doctor = try DaemonUnderTest(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "2", "--osdp", peer.device,
                                          "--osdp-scbk-file", keyPath, "--osdp-state-file", dir + "/osdp-state",
                                          "--osdp-address", String(address), "--osdp-vendor-code", "0x0A0B0C"])
        defer { doctor.stop() }
        XCTAssertTrue(waitUntil(30) { !doctor.descriptors(linkingTo: peer.device).isEmpty }, "doctor never opened \(peer.device)")
        if let panelKey { peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(panelKey), "enforce_secure": true]) }
        let status = doctor.waitForExit(seconds: 60)
        return (status, doctor.stdout)
    }

    func row(_ lines: [String], _ check: String) -> String? {
        lines.first { $0.hasPrefix(check + " ") }.map { String($0.dropFirst(check.count)).trimmingCharacters(in: .whitespaces) }
    }

    func testDoctorReportsThePortThePollsFromAddressZeroAndTheSecureChannelUp() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x31 + $0 * 3) }
        let (status, table) = try doctor(peer, key: key, panelKey: key)
        XCTAssertEqual(status, 0, table.joined(separator: "\n"))
        XCTAssertEqual(row(table, "osdp port"), "PASS    \(peer.device): 9600 baud 8N1, address 0")
        let polls = try XCTUnwrap(row(table, "osdp polls"), "\(table)")
        XCTAssertTrue(polls.hasPrefix("PASS    commands for address 0 ("), polls)
        let secure = try XCTUnwrap(row(table, "osdp secure channel"), "\(table)")
        XCTAssertTrue(secure.hasPrefix("PASS") && secure.contains("panel polling, secure channel up"), secure)
        XCTAssertNotNil(peer.wait(for: "online", within: 1) { $0["sc"] as? Bool == true }, "the panel saw the reader online: \(peer.events)")
        let disk = try XCTUnwrap(table.first { $0.hasPrefix("disk ") }, "\(table)")
        XCTAssertTrue(disk.contains(" PASS ") && disk.contains(" free on ") && disk.hasSuffix("for osdp-state-file, osdp-scbk-file"), disk)
        XCTAssertEqual(table.last, "8 passed, 0 failed")
    }

    func testDoctorWithTheWrongKeyFailsTheSecureChannelRowWithTheFix() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let (status, table) = try doctor(peer, key: (0..<16).map { UInt8($0) }, panelKey: (0..<16).map { UInt8(0xF0 - $0) })
        XCTAssertEqual(status, 4, "another device failed while the camera passed: \(table)")
        XCTAssertTrue(row(table, "osdp polls")?.hasPrefix("PASS") ?? false, "\(table)")
        let secure = try XCTUnwrap(row(table, "osdp secure channel"), "\(table)")
        XCTAssertTrue(secure.hasPrefix("FAIL    not up within 8 s"), secure)
        XCTAssertTrue(table.contains { $0.contains("the panel's key and osdp-scbk-file must be the same key") }, "\(table)")
    }

    /// Issue 19: doctor says what osdp-secure = optional gives up, and that install mode is open (no key
    /// yet) or inert (a key file is there), before it looks at the line.
    func testDoctorWarnsAboutOptionalModeAndSaysWhetherInstallModeIsOpen() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let keyPath = dir + "/osdp-scbk"
        func run() throws -> [String] {
            let doctor = try DaemonUnderTest(["doctor", "--camera", "sim:HELLO", "--capture-seconds", "1", "--osdp", peer.device,
                                              "--osdp-scbk-file", keyPath, "--osdp-state-file", dir + "/osdp-state",
                                              "--osdp-secure", "optional", "--osdp-install-mode", "--osdp-vendor-code", "0x0A0B0C"])
            defer { doctor.stop() }
            XCTAssertEqual(doctor.waitForExit(seconds: 60), 4, "no panel polls: \(doctor.stdout)")
            return doctor.stdout
        }
        var table = try run()
        let optional = try XCTUnwrap(row(table, "osdp secure mode"), "\(table)")
        XCTAssertTrue(optional.hasPrefix("WARN    plain text allowed: any device on the bus may move the reader with a plain-text COMSET"), optional)
        XCTAssertTrue(table.contains { $0.contains("fix: set osdp-secure = required once the panel uses the secure channel") }, "\(table)")
        let open = try XCTUnwrap(row(table, "osdp install mode"), "\(table)")
        XCTAssertTrue(open.hasPrefix("WARN    open: no key in \(keyPath) yet"), open)
        XCTAssertTrue(table.last?.hasSuffix(", 2 warnings") ?? false, "\(table)")

        try TestFiles.write("00112233445566778899AABBCCDDEEFF\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
        table = try run()
        let inert = try XCTUnwrap(row(table, "osdp install mode"), "\(table)")
        XCTAssertTrue(inert.hasPrefix("PASS    on but inert: \(keyPath) holds a key (check value "), inert)
        XCTAssertFalse(table.joined().contains("00112233445566778899AABBCCDDEEFF"), "the key is never shown")
    }

    func testDoctorOnALineWhereThePanelPollsAnotherAddressSaysWhichOne() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x40 + $0) }
        let (status, table) = try doctor(peer, key: key, panelKey: key, address: 5)
        XCTAssertEqual(status, 4, "\(table)")
        let polls = try XCTUnwrap(row(table, "osdp polls"), "\(table)")
        XCTAssertTrue(polls.hasPrefix("FAIL    none for address 5 in 2 s: commands for address 0"), polls)
        XCTAssertTrue(table.contains { $0.contains("set osdp-address to the one the panel expects") }, "\(table)")
        XCTAssertNil(row(table, "osdp secure channel"), "not tried without polls for this reader")
    }
}
