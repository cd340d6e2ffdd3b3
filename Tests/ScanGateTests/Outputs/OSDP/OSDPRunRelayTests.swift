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

/// The daemon of `scangate run` in this process (as OSDPRunDaemonTests builds it: the catalog's components,
/// MemoryGpiod for the chip), with a door relay driven by the panel (door-relay-driver = panel) and libosdp's
/// ControlPanel sending osdp_OUT over a pseudo-terminal, inside the secure channel. It shows the relay line:
/// idle at start and after the accepted read (reads no longer pulse it), a timed OUT pulsing it for about
/// the commanded time, a permanent ON holding until OFF, and the line inactive and released after the
/// daemon stops (the SIGTERM path) with the panel's permanent ON still in force.
final class OSDPRunRelayTests: XCTestCase {
    static let relay = 26

    func testPanelOUTPulsesAndHoldsTheDoorRelayAndStopLeavesItInactive() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0xB0 + $0) }
        let keyPath = dir + "/osdp-scbk"
        try TestFiles.write(Hex.string(key) + "\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
        // 120 s at 20 fps (the test stops the daemon long before); the code from 2 s to 3 s.
        let scenario = dir + "/door.scenario"
        try TestFiles.write("size 320x240\nfps 20\nframes 2400\ncode qr \"RELAY-1\" frames 40-60 module 3\n", to: scenario)
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
            osdp-serial = 7
            osdp-vendor-code = 0x0A0B0C
            osdp-ttl-ms = 60000
            [gpio]
            gpio-chip = pinctrl-rp1
            [door-relay]
            door-relay = GPIO26
            door-relay-ms = 3000
            door-relay-driver = panel
            [service]
            log-level = warning

            """, to: conf)
        let settings = try Configuration.resolve(configPath: conf, flagAssignments: [])
        let gpiod = MemoryGpiod.pi5()
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
                _ = ended.wait(timeout: .now() + 30)
            }
        }
        func levels() -> [Int32] { gpiod.sets.filter { $0.offset == Self.relay }.map(\.value) }
        func level() -> Int32 { gpiod.physical(offset: Self.relay) }

        XCTAssertTrue(waitUntil(20) { OSDPRunDaemonTests.descriptors(linkingTo: peer.device) > 0 }, "the daemon did not open \(peer.device)")
        XCTAssertTrue(waitUntil(10) { gpiod.consumer(offset: Self.relay) != nil }, "the relay line is requested")
        XCTAssertEqual(level(), 0, "idle at start")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events)")
        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "\(peer.events)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("RELAY-1".utf8)))
        XCTAssertFalse(levels().contains(1), "door-relay-driver = panel: the read pulsed the relay: \(levels())")

        // Temporary ON for 1.5 s (15 x 100 ms), then back to the permanent state (off).
        peer.send(["cmd": "output", "output_no": 0, "control_code": 5, "timer_count": 15])
        XCTAssertNotNil(peer.wait(for: "submitted", within: 5) { $0["cmd"] as? String == "output" && $0["ok"] as? Bool == true })
        XCTAssertTrue(waitUntil(10) { level() == 1 }, "the panel's OUT did not energise the relay: \(levels())")
        let on = MonotonicInstant.now()
        XCTAssertTrue(waitUntil(15) { level() == 0 }, "the timed OUT did not end: \(levels())")
        let heldMs = MonotonicInstant.now().milliseconds(since: on)
        XCTAssertGreaterThan(heldMs, 1000, "released well before 1.5 s")
        XCTAssertLessThan(heldMs, 6000, "held far past 1.5 s")
        XCTAssertEqual(levels(), [1, 0])

        // Permanent ON holds until the permanent OFF.
        peer.send(["cmd": "output", "output_no": 0, "control_code": 2, "timer_count": 0])
        XCTAssertTrue(waitUntil(10) { level() == 1 }, "permanent ON: \(levels())")
        XCTAssertFalse(waitUntil(2) { level() == 0 }, "permanent ON did not hold: \(levels())")
        peer.send(["cmd": "output", "output_no": 0, "control_code": 1, "timer_count": 0])
        XCTAssertTrue(waitUntil(10) { level() == 0 }, "permanent OFF: \(levels())")

        // Permanent ON again; then the daemon stops as SIGTERM stops it: the line ends inactive, released.
        peer.send(["cmd": "output", "output_no": 0, "control_code": 2, "timer_count": 0])
        XCTAssertTrue(waitUntil(10) { level() == 1 }, "permanent ON: \(levels())")
        // An output this reader does not have: NAK 09, and the relay keeps its state. (libosdp takes any
        // NAK for a link error and drops the PD for a while, so this comes last.)
        peer.clearEvents()
        peer.send(["cmd": "output", "output_no": 3, "control_code": 1, "timer_count": 0])
        XCTAssertNotNil(peer.wait(for: "completed", within: 10) { $0["status"] as? Int != 0 }, "the NAK: \(peer.events)")
        XCTAssertEqual(level(), 1, "output 3 changed the relay: \(levels())")
        daemon.requestStop()
        stopped = true
        XCTAssertEqual(ended.wait(timeout: .now() + 30), .success, "the daemon did not stop")
        XCTAssertEqual(exit.withLock { $0 }, 0)
        XCTAssertEqual(level(), 0, "the relay was left energised after stop: \(levels())")
        XCTAssertNil(gpiod.consumer(offset: Self.relay), "the relay line was not released")
        XCTAssertEqual(levels().last, 0)
    }
}
