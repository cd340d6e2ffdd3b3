#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
@testable import Core
@testable import OSDP
import Platform
import Settings

/// `OSDPOutput` on a real pseudo-terminal, driven with frames written by the test: the link thread's
/// replies, a port that vanishes and comes back, and closing.
final class OSDPOutputTests: XCTestCase {
    var dir = ""
    let logs = LogCapture(repeatInterval: 0)

    override func setUpWithError() throws { dir = try TestFiles.temporaryDirectory() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func output(device: String, link: RecordingLink = RecordingLink()) throws -> OSDPOutput {
        var s = OSDPSettings()
        s.device = device
        s.vendorCode = 0x0A0B0C
        s.secure = .off
        s.stateFile = dir + "/state"
        s.serial = 1
        return try OSDPOutput(settings: s, features: OSDPReaderFeatures(leds: .none, buzzer: false), feedback: RecordingFeedback(),
                              linkObserver: link, logger: logs.logger)
    }

    /// Writes a POLL with sequence `seq` and returns what came back within `seconds`.
    func poll(_ pty: PseudoTerminal, seq: UInt8, within seconds: Double = 5) -> [UInt8] {
        let frame = [OSDPWire.mark] + OSDPFrameBuilder.build(address: 0, sequence: seq, crc: true, code: 0x60)
        _ = FileDescriptor(rawValue: pty.controller).writeAll(frame)
        return pty.read(count: 9, within: seconds)
    }

    func ack(_ seq: UInt8) -> [UInt8] {
        [OSDPWire.mark] + OSDPFrameBuilder.build(address: 0x80, sequence: seq, crc: true, code: 0x40)
    }

    func testThePortIsReopenedAfterItVanishes() throws {
        // The output opens a symbolic link, as users open /dev/serial/by-id/...: the test points it at a
        // new pseudo-terminal after the first one hung up, like an adapter plugged in again.
        let first = try PseudoTerminal()
        let link = dir + "/tty"
        XCTAssertEqual(symlink(first.name, link), 0)
        let observer = RecordingLink()
        let out = try output(device: link, link: observer)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(5) { out.health.state != .down }, "\(out.health)")
        XCTAssertEqual(poll(first, seq: 0), ack(0))
        XCTAssertTrue(waitUntil(5) { observer.changes.last?.online == true })

        first.hangUp()
        XCTAssertTrue(waitUntil(5) { out.health.state == .down }, "\(out.health)")
        XCTAssertTrue(logs.contains("went away"), "\(logs.all)")

        let second = try PseudoTerminal()
        XCTAssertEqual(unlink(link), 0)
        XCTAssertEqual(symlink(second.name, link), 0)
        XCTAssertTrue(waitUntil(10) { out.health.state != .down }, "reopened with backoff: \(out.health) \(logs.all)")
        XCTAssertEqual(poll(second, seq: 1), ack(1), "the link state survived the reopen")
    }

    func testAPortThatIsMissingAtStartIsRetriedNotFatal() throws {
        let path = dir + "/not-yet"
        let out = try output(device: path)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(waitUntil(5) { out.health.lastError?.contains(path) ?? false }, "\(out.health)")
        XCTAssertEqual(out.health.state, .down)
        let pty = try PseudoTerminal()
        XCTAssertEqual(symlink(pty.name, path), 0)
        XCTAssertTrue(waitUntil(10) { out.health.state != .down }, "\(out.health)")
        XCTAssertEqual(poll(pty, seq: 0), ack(0))
    }

    func testCloseStopsAnsweringReleasesThePortAndDropsWaitingReads() throws {
        let pty = try PseudoTerminal()
        let out = try output(device: pty.name)
        XCTAssertTrue(waitUntil(5) { out.health.state != .down })
        XCTAssertEqual(poll(pty, seq: 0), ack(0))
        let now = MonotonicInstant.now()
        let event = ReadEvent(seq: 4, wallTimeNanoseconds: 0, symbol: DecodedSymbol(symbology: .qr, data: [0x41], bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                              frame: 1, dequeuedAt: now, emittedAt: now)
        XCTAssertEqual(out.offer(event), .taken)
        let started = MonotonicInstant.now()
        out.close(deadline: started.adding(milliseconds: 2000))
        XCTAssertLessThan(MonotonicInstant.now(), started.adding(milliseconds: 2000), "closed by the deadline")
        XCTAssertEqual(out.health.state, .down)
        XCTAssertTrue(logs.contains("closing with 1 read(s) not polled by the panel; they are dropped"), "\(logs.all)")
        XCTAssertEqual(out.offer(event), .refused(reason: "osdp: the output is closing"))
        XCTAssertEqual(poll(pty, seq: 1, within: 0.3), [], "nothing answers after close")
    }
}
