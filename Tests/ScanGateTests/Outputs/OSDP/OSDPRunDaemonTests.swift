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
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Settings
import Sound

/// The daemon of `scangate run`, in this process, built as `run` builds it (the catalog's components over
/// device seams: MemoryGpiod for the GPIO chip, libasound with an in-process `file` PCM for the beep), polled
/// by libosdp's ControlPanel over a pseudo-terminal. It proves what a child process cannot show on a
/// machine without GPIO: the panel's LED and BUZ commands as levels on the LED and buzzer lines, the
/// status LED's slow blink when the panel stops polling, and, with `feedback = controller`, that the read
/// itself lights nothing. The daemon ends by itself at the end of its scenario (as `run` does at the end
/// of a recording), so every line is checked inactive and released after it.
final class OSDPRunDaemonTests: XCTestCase {
    static let green = 17, red = 27, buzzer = 22, status = 23

    func testPanelLEDAndBuzzerCommandsDriveTheLinesAndAStoppedPanelBlinksTheStatusLED() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let peer = try OSDPControlPanelPeer()
        defer { peer.close() }
        let key = (0..<16).map { UInt8(0xA0 + $0) }
        let keyPath = dir + "/osdp-scbk"
        try TestFiles.write(Hex.string(key) + "\n", to: keyPath)
        XCTAssertEqual(chmod(keyPath, 0o600), 0)
        // 18 s at 20 fps; the code from 2 s to 3 s. The daemon exits when the scenario ends.
        let scenario = dir + "/door.scenario"
        try TestFiles.write("size 320x240\nfps 20\nframes 360\ncode qr \"LINES-1\" frames 40-60 module 3\n", to: scenario)
        let rawPath = dir + "/beep.raw"
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
            osdp-offline-after-ms = 1000
            [feedback]
            feedback = controller
            feedback-read-cue = false
            [gpio]
            gpio-chip = pinctrl-rp1
            led-green = GPIO17
            led-red = GPIO27
            buzzer = GPIO22
            status-led = GPIO23
            heartbeat-ms = 0
            controller-offline-blink-ms = 300
            [beep]
            beep = 1000:100
            beep-device = beeptest
            beep-tone-hz = 2500
            [service]
            log-level = warning

            """, to: conf)
        let settings = try Configuration.resolve(configPath: conf, flagAssignments: [])
        let gpiod = MemoryGpiod.pi5()
        let alsa = try InProcessALSA(configuration: ALSAConfiguration(text: """
            pcm.beeptest {
                type file
                slave { pcm { type null } }
                file "\(rawPath)"
                format "raw"
            }
            """))
        let daemon = Daemon(configPath: conf, flags: [], settings: settings,
                            seams: DeviceSeams(gpiod: gpiod, alsa: alsa))
        let exit = PosixMutex<Int32?>(nil)
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            let status = daemon.run()
            exit.withLock { $0 = status }
            ended.signal()
        }
        thread.start()
        func levels(_ offset: Int) -> [Int32] { gpiod.sets.filter { $0.offset == offset }.map(\.value) }
        func risingEdges(_ offset: Int) -> Int {
            let v = levels(offset)
            return zip([0] + v, v).filter { $0 == 0 && $1 == 1 }.count
        }

        // The port is open (this process holds a descriptor on the pty) before the panel starts polling.
        XCTAssertTrue(waitUntil(20) { Self.descriptors(linkingTo: peer.device) > 0 }, "the daemon did not open \(peer.device)")
        XCTAssertTrue(waitUntil(10) { gpiod.consumer(offset: Self.green) != nil }, "the LED lines are requested")
        peer.send(["cmd": "start", "address": 0, "scbk": Hex.string(key), "enforce_secure": true])
        XCTAssertNotNil(peer.wait(for: "online", within: 20) { $0["sc"] as? Bool == true }, "\(peer.events)")
        let card = try XCTUnwrap(peer.wait(for: "card", within: 30), "\(peer.events)")
        XCTAssertEqual(card["data"] as? String, Hex.string(Array("LINES-1".utf8)))
        // feedback = controller, read cue off: the read itself drives no LED and no buzzer.
        XCTAssertFalse(levels(Self.green).contains(1), "green lit by the read: \(levels(Self.green))")
        XCTAssertFalse(levels(Self.red).contains(1))
        XCTAssertFalse(levels(Self.buzzer).contains(1))

        // The panel grants: temporary green, 500 ms on / 500 ms off for 3 s, then back to the permanent
        // state (off): three flashes.
        peer.send(["cmd": "led", "temporary": true, "control_code": 2, "on_count": 5, "off_count": 5,
                   "on_color": 2, "off_color": 0, "timer_count": 30])
        XCTAssertTrue(waitUntil(15) { risingEdges(Self.green) == 3 && gpiod.physical(offset: Self.green) == 0 && levels(Self.green).last == 0 },
                      "green: \(levels(Self.green))")
        // Then a permanent steady red.
        peer.send(["cmd": "led", "temporary": false, "control_code": 1, "on_count": 1, "off_count": 0,
                   "on_color": 1, "off_color": 0])
        XCTAssertTrue(waitUntil(10) { gpiod.physical(offset: Self.red) == 1 }, "red: \(levels(Self.red))")
        // BUZ: 300 ms on / 200 ms off, 4 times, on the buzzer line and the beep.
        peer.send(["cmd": "buzzer", "control_code": 2, "on_count": 3, "off_count": 2, "rep_count": 4])
        XCTAssertTrue(waitUntil(15) { risingEdges(Self.buzzer) == 4 && gpiod.physical(offset: Self.buzzer) == 0 },
                      "buzzer: \(levels(Self.buzzer))")

        // The panel stops polling: controller offline, the status LED blinks (heartbeat-ms = 0: it is dark
        // while scanning, so every flash is the offline blink).
        XCTAssertFalse(levels(Self.status).contains(1), "status LED dark while scanning: \(levels(Self.status))")
        peer.send(["cmd": "stop"])
        XCTAssertNotNil(peer.wait(for: "stopped", within: 10))
        XCTAssertTrue(waitUntil(15) { risingEdges(Self.status) >= 3 }, "status LED: \(levels(Self.status))")

        XCTAssertEqual(ended.wait(timeout: .now() + 60), .success, "the daemon did not end with its scenario")
        XCTAssertEqual(exit.withLock { $0 }, 0)
        for offset in [Self.green, Self.red, Self.buzzer, Self.status] {
            XCTAssertEqual(gpiod.physical(offset: offset), 0, "line \(offset) left active")
            XCTAssertNil(gpiod.consumer(offset: offset), "line \(offset) not released")
        }
        XCTAssertEqual(Self.descriptors(linkingTo: peer.device), 0, "the OSDP port is closed")
        XCTAssertEqual(risingEdges(Self.green), 3, "green flashed three times, for the panel only: \(levels(Self.green))")
        XCTAssertEqual(risingEdges(Self.buzzer), 4, "\(levels(Self.buzzer))")

        // The beep: the panel's four 2500 Hz tones of 300 ms with 200 ms pauses, and nothing else (no
        // good-read beep under feedback = controller).
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: rawPath)))
        let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        let tones = SoundSignalAnalysis.tones(samples, rate: 48_000)
        XCTAssertEqual(tones.count, 4, "\(tones)")
        for tone in tones {
            XCTAssertEqual(tone.hertz, 2500, accuracy: 50, "\(tone)")
            XCTAssertEqual(tone.milliseconds, 300, accuracy: 3, "\(tone)")
        }
        XCTAssertEqual(peer.events.filter { $0["event"] as? String == "card" }.count, 1)
    }

    /// Descriptors of this process on `path`.
    static func descriptors(linkingTo path: String) -> Int {
        let dir = "/proc/self/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return 0 }
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + $0)) == path }.count
    }
}

/// libasound, with PCMs opened from an in-process configuration (a `file` PCM) instead of the system's.
struct InProcessALSA: ALSACalls {
    let configuration: ALSAConfiguration
    let system = LibASound()

    func pcmOpen(_ name: String, nonBlocking: Bool, config: OpaquePointer?) -> (code: Int32, pcm: OpaquePointer?) {
        system.pcmOpen(name, nonBlocking: nonBlocking, config: config ?? configuration.handle)
    }
    func pcmSetParams(_ pcm: OpaquePointer, channels: UInt32, rate: UInt32, latencyMicroseconds: UInt32) -> Int32 {
        system.pcmSetParams(pcm, channels: channels, rate: rate, latencyMicroseconds: latencyMicroseconds)
    }
    func pcmCurrentRate(_ pcm: OpaquePointer) -> (code: Int32, rate: UInt32) { system.pcmCurrentRate(pcm) }
    func pcmPrepare(_ pcm: OpaquePointer) -> Int32 { system.pcmPrepare(pcm) }
    func pcmWritei(_ pcm: OpaquePointer, _ buffer: UnsafeRawPointer, frames: Int) -> Int { system.pcmWritei(pcm, buffer, frames: frames) }
    func pcmRecover(_ pcm: OpaquePointer, _ error: Int32) -> Int32 { system.pcmRecover(pcm, error) }
    func pcmWait(_ pcm: OpaquePointer, timeoutMilliseconds: Int32) -> Int32 { system.pcmWait(pcm, timeoutMilliseconds: timeoutMilliseconds) }
    func pcmState(_ pcm: OpaquePointer) -> PCMState { system.pcmState(pcm) }
    func pcmDrain(_ pcm: OpaquePointer) -> Int32 { system.pcmDrain(pcm) }
    func pcmDrop(_ pcm: OpaquePointer) -> Int32 { system.pcmDrop(pcm) }
    func pcmClose(_ pcm: OpaquePointer) -> Int32 { system.pcmClose(pcm) }
    func errorText(_ code: Int32) -> String { system.errorText(code) }
}
