#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import XCTest
@testable import App
import Catalog
import Config
import Core
import GPIO
import MemoryGPIO
import Platform
import Settings

/// Issue 24, through the daemon `run` builds (the catalog's components, MemoryGpiod for the chip) and
/// libosdp's ControlPanel over a pseudo-terminal: the PDID's vendor code, the tamper switch and the door
/// contact as the panel sees them (unsolicited osdp_LSTATR and osdp_ISTATR, and asked for), and the build
/// id from osdp_MFG.
final class OSDPStatusDaemonTests: XCTestCase {
    static let tamper = 5, door = 6, power = 13

    func testTamperDoorContactAndPowerReachThePanelAndPDIDCarriesTheVendorCode() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0xB0 + $0) }
        let keyPath = dir + "/osdp-scbk"
        try TestFiles.write(Hex.string(key) + "\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
        let scenario = dir + "/idle.scenario"
        try TestFiles.write("size 320x240\nfps 20\nframes 100000\n", to: scenario)
        let conf = dir + "/scangate.conf"
        try TestFiles.write("""
            [camera]
            camera = sim:\(scenario)
            [output]
            output = none
            [osdp]
            osdp = \(peer.device)
            osdp-scbk-file = \(keyPath)
            osdp-state-file = \(dir)/osdp-state
            osdp-serial = 9
            osdp-vendor-code = 0x0A0B0C
            osdp-tamper-line = GPIO\(Self.tamper)
            osdp-tamper-active-low = true
            osdp-power-line = GPIO\(Self.power)
            door-contact-line = GPIO\(Self.door)
            osdp-input-debounce-ms = 10
            [gpio]
            gpio-chip = pinctrl-rp1
            [service]
            log-level = warning
            status-socket = \(dir)/status.sock
            metrics-textfile = \(dir)/scangate.prom
            metrics-interval-s = 1

            """, to: conf)
        let settings = try Configuration.resolve(configPath: conf, flagAssignments: [])
        let gpiod = MemoryGpiod.pi5()
        // The tamper switch is closed (high) with the case shut: active low, so normal at start.
        gpiod.drive(offset: Self.tamper, physical: 1)
        let daemon = Daemon(configPath: conf, flags: [], settings: settings, seams: DeviceSeams(gpiod: gpiod))
        let exit = PosixMutex<Int32?>(nil)
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            let status = daemon.run()
            exit.withLock { $0 = status }
            ended.signal()
        }
        thread.start()
        var stopped = false
        defer {
            if !stopped {
                daemon.requestStop()
                _ = ended.wait(timeout: .now() + 20)
            }
        }

        XCTAssertTrue(waitUntil(20) { gpiod.consumer(offset: Self.tamper) != nil && gpiod.consumer(offset: Self.door) != nil },
                      "the input lines are requested")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events)")

        // PDID: the configured vendor code, not zeros.
        peer.send(["cmd": "pd_id"])
        let id = try XCTUnwrap(peer.wait(for: "pd_id", within: 10), "\(peer.events)")
        XCTAssertEqual(id["vendor_code"] as? Int, 0x0A0B0C, "\(id)")
        XCTAssertEqual(id["serial_number"] as? Int, 9, "\(id)")

        // Asked for: tamper normal, power normal; both inputs inactive.
        peer.send(["cmd": "status", "type": "local"])
        XCTAssertNotNil(peer.wait(for: "status", within: 10) { $0["type"] as? String == "local" && $0["report"] as? String == "0000" }, "\(peer.events)")
        peer.send(["cmd": "status", "type": "input"])
        XCTAssertNotNil(peer.wait(for: "status", within: 10) { $0["type"] as? String == "input" && $0["report"] as? String == "0000" }, "\(peer.events)")

        // The case is opened: the switch opens (low). The panel hears it without asking.
        let opened = MonotonicInstant.now()
        gpiod.drive(offset: Self.tamper, physical: 0)
        let tamper = peer.wait(for: "status", within: 10) { $0["type"] as? String == "local" && $0["report"] as? String == "0100" }
        XCTAssertNotNil(tamper, "no unsolicited LSTATR with tamper: \(peer.events)")
        print("tamper edge to the panel's LSTATR event: \(Int(MonotonicInstant.now().milliseconds(since: opened))) ms (debounce 10 ms, libosdp polls every 50 ms)")
        XCTAssertNotNil(peer.wait(for: "status", within: 10) { $0["type"] as? String == "input" && $0["report"] as? String == "0100" },
                        "ISTATR input 0 (tamper): \(peer.events)")
        // The door opens, then the supply fails.
        gpiod.drive(offset: Self.door, physical: 1)
        XCTAssertNotNil(peer.wait(for: "status", within: 10) { $0["type"] as? String == "input" && $0["report"] as? String == "0101" },
                        "ISTATR input 1 (door contact): \(peer.events)")
        gpiod.drive(offset: Self.power, physical: 1)
        XCTAssertNotNil(peer.wait(for: "status", within: 10) { $0["type"] as? String == "local" && $0["report"] as? String == "0101" },
                        "LSTATR power failure: \(peer.events)")

        // `scangate status` and the metrics keep both alarms.
        let json = try ScangateProcess.run(["status", "--json", "--status-socket", dir + "/status.sock"]).stdoutText
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
        let devices = try XCTUnwrap(doc["devices"] as? [[String: Any]], json)
        let osdp = try XCTUnwrap(devices.first { $0["name"] as? String == "osdp" }, json)
        XCTAssertEqual(osdp["state"] as? String, "degraded", json)
        XCTAssertEqual(osdp["alarms"] as? [String: Bool], ["tamper": true, "power-failure": true], json)
        XCTAssertTrue((osdp["detail"] as? String ?? "").contains("TAMPER, POWER FAILURE, door open"), json)
        let text = try ScangateProcess.run(["status", "--status-socket", dir + "/status.sock"]).stdoutText
        XCTAssertTrue(text.contains("alarms: tamper ACTIVE, power-failure ACTIVE"), text)
        XCTAssertTrue(waitUntil(10) {
            let prom = (try? String(contentsOfFile: dir + "/scangate.prom", encoding: .utf8)) ?? ""
            return prom.contains("scangate_alarm{output=\"osdp\",alarm=\"tamper\"} 1")
                && prom.contains("scangate_alarm{output=\"osdp\",alarm=\"power-failure\"} 1")
        }, (try? String(contentsOfFile: dir + "/scangate.prom", encoding: .utf8)) ?? "no metrics file")

        // osdp_MFG: the build id for this vendor code.
        peer.send(["cmd": "mfg", "vendor_code": 0x0A0B0C, "data": "01"])
        let mfg = try XCTUnwrap(peer.wait(for: "mfgrep", within: 10), "\(peer.events)")
        XCTAssertEqual(mfg["vendor_code"] as? Int, 0x0A0B0C)
        let data = try XCTUnwrap(Hex.decode(mfg["data"] as? String ?? ""))
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "\u{1}scangate \(Catalog.version)", "\(mfg)")

        // Stopped as SIGTERM stops it: the input lines are released.
        daemon.requestStop()
        XCTAssertEqual(ended.wait(timeout: .now() + 20), .success, "the daemon did not stop")
        stopped = true
        XCTAssertEqual(exit.withLock { $0 }, 0)
        for offset in [Self.tamper, Self.door, Self.power] {
            XCTAssertNil(gpiod.consumer(offset: offset), "line \(offset) not released")
        }
    }

    /// camera-tamper: the simulated camera is covered for 3 s; once that has lasted camera-tamper-after-s
    /// (2 s) the panel hears tamper in an unsolicited LSTATR, `scangate status` shows the camera's alarm and
    /// the OSDP tamper, and 2 s after the lens is free the panel hears tamper normal again.
    func testACoveredCameraReachesThePanelAsTamper() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let scenario = dir + "/room.scenario"
        // 20 fps: the room, covered from 4.0 s to 6.95 s, then the room again.
        try TestFiles.write("size 320x240\nfps 20\nframes 100000\nbackdrop 9\nnoise 2\ncover frames 80-139\n", to: scenario)
        let conf = dir + "/scangate.conf"
        try TestFiles.write("""
            [camera]
            camera = sim:\(scenario)
            camera-tamper = true
            camera-tamper-after-s = 2
            [output]
            output = none
            [osdp]
            osdp = \(peer.device)
            osdp-secure = off
            osdp-state-file = \(dir)/osdp-state
            osdp-serial = 9
            osdp-vendor-code = 0x0A0B0C
            [service]
            log-level = warning
            status-socket = \(dir)/status.sock
            metrics-textfile = \(dir)/scangate.prom
            metrics-interval-s = 1

            """, to: conf)
        let settings = try Configuration.resolve(configPath: conf, flagAssignments: [])
        let daemon = Daemon(configPath: conf, flags: [], settings: settings, seams: DeviceSeams(gpiod: MemoryGpiod.pi5()))
        let exit = PosixMutex<Int32?>(nil)
        let ended = DispatchSemaphore(value: 0)
        let started = MonotonicInstant.now()
        let thread = Thread {
            let status = daemon.run()
            exit.withLock { $0 = status }
            ended.signal()
        }
        thread.start()
        var stopped = false
        defer {
            if !stopped {
                daemon.requestStop()
                _ = ended.wait(timeout: .now() + 20)
            }
        }
        peer.send(["cmd": "start", "address": 0, "enforce_secure": false])
        XCTAssertNotNil(peer.wait(for: "online", within: 20), "\(peer.events)")
        let online = MonotonicInstant.now().milliseconds(since: started)

        let tamper = peer.wait(for: "status", within: 20) { $0["type"] as? String == "local" && $0["report"] as? String == "0100" }
        XCTAssertNotNil(tamper, "no unsolicited LSTATR with tamper: \(peer.events)")
        let raisedAt = MonotonicInstant.now().milliseconds(since: started)
        let json = try ScangateProcess.run(["status", "--json", "--status-socket", dir + "/status.sock"]).stdoutText
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
        let devices = try XCTUnwrap(doc["devices"] as? [[String: Any]], json)
        let camera = try XCTUnwrap(devices.first { $0["name"] as? String == "camera" }, json)
        XCTAssertEqual(camera["alarms"] as? [String: Bool], ["camera-tamper": true], json)
        XCTAssertEqual(camera["state"] as? String, "degraded", json)
        XCTAssertTrue((camera["detail"] as? String ?? "").contains("COVERED"), json)
        let osdp = try XCTUnwrap(devices.first { $0["name"] as? String == "osdp" }, json)
        XCTAssertEqual(osdp["alarms"] as? [String: Bool], ["tamper": true], json)
        XCTAssertTrue(waitUntil(10) {
            ((try? String(contentsOfFile: dir + "/scangate.prom", encoding: .utf8)) ?? "").contains("scangate_alarm{output=\"camera\",alarm=\"camera-tamper\"} 1")
        }, (try? String(contentsOfFile: dir + "/scangate.prom", encoding: .utf8)) ?? "no metrics file")

        XCTAssertNotNil(peer.wait(for: "status", within: 20) { $0["type"] as? String == "local" && $0["report"] as? String == "0000" },
                        "no LSTATR with tamper normal once the lens is free: \(peer.events)")
        let clearedAt = MonotonicInstant.now().milliseconds(since: started)
        // The scene's clock starts with the first frame, a little after `started`: the covered lens is
        // reported at 6 s of scene time, cleared at 9 s.
        print("camera tamper through the daemon: online \(Int(online)) ms, LSTATR tamper at \(Int(raisedAt)) ms (6,000 ms of scene time), normal at \(Int(clearedAt)) ms (9,000)")
        XCTAssertGreaterThanOrEqual(raisedAt, 6000, "tamper before the cover had lasted 2 s")
        XCTAssertGreaterThanOrEqual(clearedAt, 9000, "cleared before the lens had been free for 2 s")
        daemon.requestStop()
        XCTAssertEqual(ended.wait(timeout: .now() + 20), .success, "the daemon did not stop")
        stopped = true
        XCTAssertEqual(exit.withLock { $0 }, 0)
    }
}
