#if canImport(Glibc)
import Glibc
#endif
import Platform
import XCTest
@testable import Core
@testable import Serial
import SerialLine
import Settings

/// `SerialPort.read` on a real pseudo-terminal: raw mode with VMIN = VTIME = 0 makes read(2) return 0 when
/// nothing is waiting, which is not a hang-up.
final class SerialPortReadTests: XCTestCase {
    private func open(_ pty: PseudoTerminal) throws -> SerialPort {
        var s = SerialSettings()
        s.path = pty.name
        return try SerialPort.open(path: pty.name, line: SerialLineConfig(s), system: GlibcSerialSystemCalls())
    }

    func testNothingWaitingIsATimeoutNotALostDevice() throws {
        let pty = try PseudoTerminal()
        let port = try open(pty)
        defer { port.close() }
        let deadline = MonotonicInstant.now().adding(milliseconds: 120)
        XCTAssertEqual(port.read(maxBytes: 64, deadline: { deadline }, now: { .now() }), .timedOut)
    }

    func testBytesThatArriveDuringTheWaitAreReturned() throws {
        let pty = try PseudoTerminal()
        let port = try open(pty)
        defer { port.close() }
        let controller = pty.controller
        let writer = try PosixThread(name: "pty-writer") {
            sleepThread(milliseconds: 30)
            _ = FileDescriptor(rawValue: controller).writeAll([0x53, 0x00, 0x08])
        }
        let deadline = MonotonicInstant.now().adding(milliseconds: 5000)
        XCTAssertEqual(port.read(maxBytes: 64, deadline: { deadline }, now: { .now() }), .bytes([0x53, 0x00, 0x08]))
        writer.join()
    }

    func testAHangUpIsALostDevice() throws {
        let pty = try PseudoTerminal()
        let port = try open(pty)
        defer { port.close() }
        pty.hangUp()
        let deadline = MonotonicInstant.now().adding(milliseconds: 5000)
        guard case .lost = port.read(maxBytes: 64, deadline: { deadline }, now: { .now() }) else {
            return XCTFail("a closed controller side must read as a lost device")
        }
    }
}
