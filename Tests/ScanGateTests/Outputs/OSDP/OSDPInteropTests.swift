#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
@testable import Core
@testable import OSDP
import Platform
import Settings

/// libosdp's ControlPanel (PyPI libosdp 3.2.9 in .build/venv, Tests/ScanGateTests/Peers/osdp_control_panel.py)
/// polling an `OSDPOutput` over a real pseudo-terminal.
final class OSDPInteropTests: XCTestCase {
    var dir = ""
    let logs = LogCapture(repeatInterval: 0)

    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func settings(device: String, secure: OSDPSecureMode = .required) -> OSDPSettings {
        var s = OSDPSettings()
        s.device = device
        s.vendorCode = 0x0A0B0C
        s.secure = secure
        s.scbkFile = dir + "/scbk"
        s.stateFile = dir + "/state"
        s.serial = 0x0102_0304
        s.vendorCode = 0x00A1B2
        return s
    }

    func writeKey(_ key: [UInt8]) throws {
        let path = dir + "/scbk"
        try TestFiles.write(Hex.string(key) + "\n", to: path)
        XCTAssertEqual(chmod(path, 0o600), 0)
    }

    func output(_ s: OSDPSettings, feedback: RecordingFeedback, link: RecordingLink) throws -> OSDPOutput {
        try OSDPOutput(settings: s, features: OSDPReaderFeatures(leds: .redGreen, buzzer: true), feedback: feedback,
                       linkObserver: link, logger: logs.logger, firmware: [0, 1, 0])
    }

    func event(seq: UInt64, payload: String) -> ReadEvent {
        let now = MonotonicInstant.now()
        return ReadEvent(seq: seq, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                         symbol: DecodedSymbol(symbology: .qr, data: Array(payload.utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                         frame: 1, dequeuedAt: now, emittedAt: now)
    }

    // MARK: - Tests

    func testOnlineWithEnforceSecureOneCardReadAndTheLEDAndBuzzerCommands() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x60 + $0) }
        try writeKey(key)
        let feedback = RecordingFeedback(), link = RecordingLink()
        let out = try output(settings(device: peer.device), feedback: feedback, link: link)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }

        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        let online = try XCTUnwrap(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true },
                                   "libosdp's CP did not bring the reader online with EnforceSecure: \(peer.events) \(logs.all)")
        XCTAssertEqual(online["sc"] as? Bool, true)
        XCTAssertTrue(waitUntil(5) { link.changes.first?.online == true }, "the link observer heard the panel: \(link.changes)")
        XCTAssertTrue(waitUntil(5) { out.health.state == .ok }, "\(out.health)")
        XCTAssertTrue(out.health.detail.contains("secure channel up"), out.health.detail)

        XCTAssertEqual(out.offer(event(seq: 1, payload: "PASS-0042-QR")), .taken)
        let card = try XCTUnwrap(peer.wait(for: "card", within: 10), "no CardRead: \(peer.events)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("PASS-0042-QR".utf8)))
        XCTAssertEqual(card["format"] as? Int, 0)
        XCTAssertEqual(card["bits"] as? Int, 96)
        XCTAssertTrue(waitUntil(5) { out.health.sent == 1 })

        // LED: temporary green 5 on / 5 off (x100 ms) for 30 (x100 ms), off colour black.
        peer.send(["cmd": "led", "temporary": true, "control_code": 2, "on_count": 5, "off_count": 5,
                   "on_color": 2, "off_color": 0, "timer_count": 30])
        let led = FeedbackRequest.command(FeedbackCommand(led: LEDCommand(
            temporary: .show(LEDBlink(onColor: .green, offColor: .off, onMs: 500, offMs: 500), for: .milliseconds(3000)))))
        XCTAssertTrue(waitUntil(10) { feedback.requests.contains(led) }, "LED: \(feedback.requests) \(peer.events)")
        // LED: permanent steady red (on 1, off 0).
        peer.send(["cmd": "led", "temporary": false, "control_code": 1, "on_count": 1, "off_count": 0,
                   "on_color": 1, "off_color": 0])
        let steady = FeedbackRequest.command(FeedbackCommand(led: LEDCommand(
            permanent: LEDBlink(onColor: .red, offColor: .off, onMs: 100, offMs: 0))))
        XCTAssertTrue(waitUntil(10) { feedback.requests.contains(steady) }, "LED: \(feedback.requests)")
        // BUZ: default tone, 3 on / 2 off, 4 times.
        peer.send(["cmd": "buzzer", "control_code": 2, "on_count": 3, "off_count": 2, "rep_count": 4])
        let tone = FeedbackRequest.command(FeedbackCommand(tone: ToneCommand(onMs: 300, offMs: 200, duration: .cycles(4))))
        XCTAssertTrue(waitUntil(10) { feedback.requests.contains(tone) }, "BUZ: \(feedback.requests)")
        peer.send(["cmd": "text", "data": "Welcome"])
        XCTAssertTrue(waitUntil(10) { self.logs.contains("TEXT from the panel (this reader has no display): \"Welcome\"") })

        // Exactly one CardRead, and each command played once, after everything above went through.
        XCTAssertEqual(peer.events.filter { $0["event"] as? String == "card" }.count, 1)
        XCTAssertEqual(feedback.requests.filter { $0 == led }.count, 1)
        XCTAssertEqual(feedback.requests.filter { $0 == tone }.count, 1)
        XCTAssertTrue(feedback.origins.allSatisfy { $0 == "osdp" })
    }

    func testPlainLinkWithoutTheSecureChannel() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let feedback = RecordingFeedback(), link = RecordingLink()
        let out = try output(settings(device: peer.device, secure: .off), feedback: feedback, link: link)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == false }, "\(peer.events) \(logs.all)")
        XCTAssertEqual(out.offer(event(seq: 5, payload: "plain")), .taken)
        let card = try XCTUnwrap(peer.wait(for: "card", within: 10))
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("plain".utf8)))
        XCTAssertTrue(out.health.detail.contains("no secure channel"), out.health.detail + " " + logs.all.joined(separator: "\n"))
        XCTAssertEqual(out.health.state, .ok, "secure off: a plain link is all that is asked")
    }

    func testAPayloadOverTheLimitIsRefusedForOSDPOnly() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let out = try output(settings(device: peer.device, secure: .off), feedback: RecordingFeedback(), link: RecordingLink())
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        let offer = out.offer(event(seq: 1, payload: String(repeating: "x", count: 65)))
        XCTAssertEqual(offer, .refused(reason: "osdp: 65 bytes, more than osdp-max-card-bytes (64); panels built on libosdp cannot decode a longer osdp_RAW"))
        XCTAssertEqual(out.offer(event(seq: 2, payload: String(repeating: "x", count: 64))), .taken)
    }

    func testInstallModeKeysetThenARestartComesUpWithTheNewKey() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let newKey = (0..<16).map { UInt8(0xC0 + $0) }
        var s = settings(device: peer.device)
        s.installMode = true
        let link = RecordingLink()
        var out: OSDPOutput? = try output(s, feedback: RecordingFeedback(), link: link)
        // Without EnforceSecure libosdp's CP tries its key, falls back to SCBK-D, sends KEYSET with its key,
        // then opens the channel again with it.
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": false])
        XCTAssertTrue(waitUntil(20) { (try? OSDPFiles.loadKey(self.dir + "/scbk"))??.bytes == newKey },
                      "the key file did not get the panel's key: \(peer.events) \(logs.all)")
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(logs.all)")
        XCTAssertTrue(logs.contains("the panel installed a new secure channel key"))
        var info = stat()
        XCTAssertEqual(stat(dir + "/scbk", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)

        // A restart: the old output closes, a new one starts with the same settings (install mode still
        // set), and a panel that insists on the secure channel with the new key gets it.
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        out?.close(deadline: .now().adding(milliseconds: 2000))
        out = nil
        let restarted = try output(s, feedback: RecordingFeedback(), link: RecordingLink())
        defer { restarted.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(logs.contains("osdp-install-mode = yes is not used: the panel already installed the key"), "\(logs.all)")
        peer.clearEvents()
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(newKey), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(logs.all)")
        XCTAssertFalse(restarted.health.detail.contains("install mode"), restarted.health.detail)
    }

    func testComsetMovesTheReaderAndARestartKeepsTheNewAddressAndSpeed() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let s = settings(device: peer.device, secure: .off)
        var out: OSDPOutput? = try output(s, feedback: RecordingFeedback(), link: RecordingLink())
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20), "\(peer.events) \(logs.all)")
        peer.send(["cmd": "comset", "address": 3, "baud_rate": 19200])
        XCTAssertTrue(waitUntil(10) { out?.health.detail.contains("19200 baud 8N1, address 3") ?? false },
                      "\(String(describing: out?.health)) \(logs.all)")
        XCTAssertEqual(try OSDPPersistedState.load(s.stateFile), OSDPPersistedState(address: 3, baud: 19200))
        // libosdp's CP follows the reader to address 3 and keeps polling it: a read still arrives.
        XCTAssertEqual(out?.offer(event(seq: 1, payload: "moved")), .taken)
        XCTAssertEqual(try XCTUnwrap(peer.wait(for: "card", within: 10))["data"] as? String, Hex.string(Array("moved".utf8)))

        // A restart: the new output answers at address 3 (the configuration still says 0).
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        out?.close(deadline: .now().adding(milliseconds: 2000))
        out = nil
        let restarted = try output(s, feedback: RecordingFeedback(), link: RecordingLink())
        defer { restarted.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(logs.contains("osdp: address 3 from \(s.stateFile) (set by the panel) instead of osdp-address 0"), "\(logs.all)")
        peer.clearEvents()
        peer.send(["cmd": "start", "address": 3, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20), "\(peer.events) \(logs.all)")
        XCTAssertTrue(restarted.health.detail.contains("19200 baud 8N1, address 3"), restarted.health.detail)
    }

    func testWiegandCardFormatSendsTheEncodersBitsAsFormatOne() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        var s = settings(device: peer.device, secure: .off)
        s.cardFormat = .wiegand
        // Stands in for the Wiegand output's encoder: H10301 FC 90 CN 324 for "324", a refusal otherwise.
        let bits = "00101101000000001010001000".map { $0 == "1" }
        let encoder: @Sendable (ReadEvent) -> Result<[Bool], OSDPCardRefusal> = { event in
            event.doorData == Array("324".utf8) ? .success(bits) : .failure(OSDPCardRefusal("card number out of range for H10301"))
        }
        XCTAssertThrowsError(try output(s, feedback: RecordingFeedback(), link: RecordingLink()), "wiegand needs the encoder")
        let out = try OSDPOutput(settings: s, features: OSDPReaderFeatures(leds: .none, buzzer: false), feedback: RecordingFeedback(),
                                 linkObserver: RecordingLink(), logger: logs.logger, wiegandBits: encoder)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        peer.send(["cmd": "start", "address": 0, "scbk": NSNull(), "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20), "\(peer.events)")
        XCTAssertEqual(out.offer(event(seq: 1, payload: "99999999")), .refused(reason: "osdp (wiegand): card number out of range for H10301"))
        XCTAssertEqual(out.offer(event(seq: 2, payload: "324")), .taken)
        let card = try XCTUnwrap(peer.wait(for: "card", within: 10))
        XCTAssertEqual(card["format"] as? Int, 1, "osdp_RAW format 1: Wiegand, parity and data")
        XCTAssertEqual(card["bits"] as? Int, 26)
        XCTAssertEqual(card["data"] as? String, "2D00A200")
    }

    func testAPanelThatStopsPollingIsOfflineAndAStaleReadIsDroppedNotSentLate() throws {
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0x11 * ($0 % 15 + 1)) }
        try writeKey(key)
        var s = settings(device: peer.device)
        s.offlineAfterMs = 1000
        s.ttlMs = 300
        let link = RecordingLink()
        let out = try output(s, feedback: RecordingFeedback(), link: link)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events) \(logs.all)")

        peer.send(["cmd": "stop"])
        XCTAssertNotNil(peer.wait(for: "stopped", within: 10))
        XCTAssertTrue(waitUntil(10) { link.changes.last?.online == false }, "\(link.changes)")
        XCTAssertEqual(link.changes.last?.detail, "no command from the panel for 1.0 s")
        XCTAssertTrue(logs.contains("secure channel dropped: the panel stopped polling"), "\(logs.all)")
        XCTAssertEqual(out.health.state, .degraded)

        XCTAssertEqual(out.offer(event(seq: 9, payload: "late")), .taken)
        XCTAssertTrue(waitUntil(10) { out.health.errors == 1 }, "\(out.health)")
        XCTAssertTrue(out.health.lastError?.contains("read #9 dropped: the panel did not poll within osdp-ttl-ms (300 ms)") ?? false,
                      "\(String(describing: out.health.lastError))")

        // The panel comes back (a fresh CP: libosdp's would wait 300 s after marking the reader offline):
        // online again, secure channel again, and the stale read never arrives.
        peer.send(["cmd": "teardown"])
        XCTAssertNotNil(peer.wait(for: "torn-down", within: 10))
        peer.clearEvents()
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events)")
        XCTAssertTrue(waitUntil(5) { link.changes.last?.online == true })
        XCTAssertEqual(out.offer(event(seq: 10, payload: "fresh")), .taken)
        let card = try XCTUnwrap(peer.wait(for: "card", within: 10))
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("fresh".utf8)), "the first card after the break is the fresh one")
        XCTAssertEqual(peer.events.filter { $0["event"] as? String == "card" }.count, 1)
        XCTAssertEqual(out.health.sent, 1)
    }
}

// MARK: - Helpers

// waitUntil comes from Support/Waiting.swift.

// RecordingFeedback comes from Support/RecordingFeedback.swift.

final class RecordingLink: ControllerLinkObserver {
    private let seen = PosixMutex<[(online: Bool, detail: String)]>([])
    func controllerLink(_ output: String, online: Bool, detail: String) { seen.withLock { $0.append((online, detail)) } }
    var changes: [(online: Bool, detail: String)] { seen.withLock { $0 } }
}

/// The Python peer process: JSON lines in, "@@ " JSON lines out, collected by a reader thread.
final class OSDPControlPanelPeer: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let collected = PeerEvents()
    private let reader: Thread
    let device: String

    init(file: StaticString = #filePath, line: UInt = #line) throws {
        let python = PythonPeers.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            XCTFail("libosdp's control panel is not installed: run scripts/python-env (PyPI libosdp 3.2.9 into .build/venv)", file: file, line: line)
            throw UsageError("no .build/venv")
        }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", PythonPeers.directory + "/osdp_control_panel.py"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        let handle = output.fileHandleForReading
        let collected = self.collected
        reader = Thread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    guard line.hasPrefix("@@ "),
                          let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any]
                    else { continue }
                    collected.append(object)
                }
            }
        }
        reader.start()
        var path: String?
        let ready = waitUntil(30) {
            path = collected.all.first { $0["event"] as? String == "ready" }?["device"] as? String
            return path != nil
        }
        guard ready, let path else {
            process.terminate()
            XCTFail("the control panel peer did not start", file: file, line: line)
            throw UsageError("peer did not start")
        }
        device = path
    }

    var events: [[String: Any]] { collected.all }

    func clearEvents() { collected.clear() }

    func send(_ command: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: command) else { return XCTFail("bad command \(command)") }
        input.fileHandleForWriting.write(data + Data([0x0A]))
    }

    /// The first event named `name` (matching `predicate`) seen so far or within `seconds`.
    func wait(for name: String, within seconds: Double, where predicate: @escaping ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
        var found: [String: Any]?
        _ = waitUntil(seconds) {
            found = events.first { $0["event"] as? String == name && predicate($0) }
            return found != nil
        }
        return found
    }

    func close() {
        send(["cmd": "quit"])
        try? input.fileHandleForWriting.close()
        let done = waitUntil(10) { !self.process.isRunning }
        if !done { process.terminate() }
        process.waitUntilExit()
    }
}

/// The peer's events (JSON objects are not Sendable: a lock guards them).
final class PeerEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [[String: Any]] = []
    func append(_ event: [String: Any]) { lock.lock(); list.append(event); lock.unlock() }
    var all: [[String: Any]] { lock.lock(); defer { lock.unlock() }; return list }
    func clear() { lock.lock(); list.removeAll(); lock.unlock() }
}
