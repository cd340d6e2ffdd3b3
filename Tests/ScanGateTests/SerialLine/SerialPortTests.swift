#if canImport(Glibc)
import Glibc
#endif
import CShim
import Platform
import XCTest
@testable import Core
@testable import Serial
import SerialLine
import Settings

/// termios settings of a real tty (a pseudo-terminal), read back from the device side.
final class SerialPortTests: XCTestCase {
    private func open(_ pty: PseudoTerminal, _ change: (inout SerialSettings) -> Void) throws -> SerialPort {
        var s = SerialSettings()
        s.path = pty.name
        change(&s)
        return try SerialPort.open(path: pty.name, line: SerialLineConfig(s), system: GlibcSerialSystemCalls())
    }

    /// A Linux pty keeps speed, CSTOPB, CRTSCTS and the raw-mode flags, but always forces CS8 and
    /// clears PARENB; so 8-bit formats here, and every format through the recording seam below.
    func testSpeedStopBitsFlowControlAndRawModeOnARealTty() throws {
        let cases: [(Int, String, Bool)] = [(9600, "8N1", false), (115200, "8N2", true), (1200, "8N1", false),
                                            (921600, "8N2", false), (57600, "8N1", true), (2400, "8N1", false)]
        for (baud, formatText, rtscts) in cases {
            let pty = try PseudoTerminal()
            let port = try open(pty) {
                $0.baud = SerialBaudRate(baud)!
                $0.format = SerialLineFormat(formatText)!
                $0.rtscts = rtscts
            }
            defer { port.close() }
            var t = try pty.deviceAttributes()
            let label = "\(baud) \(formatText) rtscts=\(rtscts)"
            XCTAssertEqual(SerialBaudRate.bitsPerSecond(forSpeed: cfgetospeed(&t)), baud, label)
            XCTAssertEqual(SerialBaudRate.bitsPerSecond(forSpeed: cfgetispeed(&t)), baud, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CSIZE), tcflag_t(CS8), label)
            XCTAssertEqual(t.c_cflag & tcflag_t(PARENB), 0, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CSTOPB) != 0, formatText.hasSuffix("2"), label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CRTSCTS) != 0, rtscts, label)
            XCTAssertNotEqual(t.c_cflag & tcflag_t(CLOCAL), 0, label)
            XCTAssertNotEqual(t.c_cflag & tcflag_t(CREAD), 0, label)
            // Raw: no output processing (LF stays LF), no echo, no canonical mode, no XON/XOFF.
            XCTAssertEqual(t.c_oflag & tcflag_t(OPOST), 0, label)
            XCTAssertEqual(t.c_lflag & tcflag_t(ECHO | ICANON | ISIG), 0, label)
            XCTAssertEqual(t.c_iflag & tcflag_t(IXON | ICRNL), 0, label)
        }
    }

    /// What is asked of the driver for every format, through a seam that records tcsetattr.
    func testRequestedTermiosForEveryFormat() throws {
        let cases: [(Int, String, Bool)] = [(9600, "8N1", false), (115200, "7E1", true), (1200, "8O1", false),
                                            (921600, "7O1", false), (19200, "8N2", true), (57600, "7N1", false),
                                            (4800, "5N1", false), (38400, "6E2", false), (230400, "8E1", false)]
        for (baud, formatText, rtscts) in cases {
            let fake = FakeSerialSystem()
            var s = SerialSettings()
            s.path = "/dev/ttyFAKE0"
            s.baud = SerialBaudRate(baud)!
            s.format = SerialLineFormat(formatText)!
            s.rtscts = rtscts
            let port = try SerialPort.open(path: "/dev/ttyFAKE0", line: SerialLineConfig(s), system: fake)
            port.close()
            var t = try XCTUnwrap(fake.lastAttributes)
            let format = s.format
            let label = "\(baud) \(formatText) rtscts=\(rtscts)"
            XCTAssertEqual(SerialBaudRate.bitsPerSecond(forSpeed: cfgetospeed(&t)), baud, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CSIZE), [5: tcflag_t(CS5), 6: tcflag_t(CS6), 7: tcflag_t(CS7), 8: tcflag_t(CS8)][format.dataBits], label)
            XCTAssertEqual(t.c_cflag & tcflag_t(PARENB) != 0, format.parity != .none, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(PARODD) != 0, format.parity == .odd, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CSTOPB) != 0, format.stopBits == 2, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CRTSCTS) != 0, rtscts, label)
            XCTAssertEqual(t.c_cflag & tcflag_t(CLOCAL | CREAD), tcflag_t(CLOCAL | CREAD), label)
            XCTAssertEqual(t.c_oflag & tcflag_t(OPOST), 0, label)
            XCTAssertEqual(fake.closedCount, 1, label)
        }
    }

    /// tcsetattr succeeds when the driver takes any part of the request: what it did not take is an error.
    func testFormatTheDriverDoesNotKeepIsRefused() throws {
        let pty = try PseudoTerminal()
        XCTAssertThrowsError(try open(pty) { $0.format = SerialLineFormat("7E1")! }) { error in
            XCTAssertEqual("\(error)", "set 9600 baud 7E1 (driver kept 9600 baud 8N1) on \(pty.name): Invalid argument (EINVAL)")
        }
    }

    func testOpenedNonBlockingWithoutControllingTerminal() throws {
        let pty = try PseudoTerminal()
        let spy = OpenFlagsSpy()
        var s = SerialSettings()
        s.path = pty.name
        let port = try SerialPort.open(path: pty.name, line: SerialLineConfig(s), system: spy)
        port.close()
        let flags = try XCTUnwrap(spy.flags.first)
        XCTAssertNotEqual(flags & O_NONBLOCK, 0)
        XCTAssertNotEqual(flags & O_NOCTTY, 0)
        XCTAssertEqual(flags & O_ACCMODE, O_RDWR)
    }

    func testBytesArriveExactlyThroughARealTty() throws {
        let pty = try PseudoTerminal()
        let port = try open(pty) { _ in }
        defer { port.close() }
        let frame: [UInt8] = [0x02, 0x00, 0x0A, 0x0D, 0xFF, 0x03, 0x11, 0x13]
        let outcome = port.write(frame, deadline: { MonotonicInstant.now().adding(milliseconds: 5000) }, now: { .now() })
        XCTAssertEqual(outcome, .sent)
        XCTAssertEqual(pty.read(count: frame.count), frame)
    }

    func testRS485OnADeviceWithoutItIsAClearError() throws {
        let pty = try PseudoTerminal()
        XCTAssertThrowsError(try open(pty) { $0.rs485 = true }) { error in
            XCTAssertTrue("\(error)".hasPrefix("enable RS-485 (TIOCSRS485) on \(pty.name): "), "\(error)")
        }
    }

    func testMissingDeviceNamesPathAndErrno() {
        var s = SerialSettings()
        s.path = "/dev/does-not-exist-scangate"
        XCTAssertThrowsError(try SerialPort.open(path: s.path!, line: SerialLineConfig(s), system: GlibcSerialSystemCalls())) { error in
            XCTAssertEqual("\(error)", "open /dev/does-not-exist-scangate: No such file or directory (ENOENT)")
        }
    }

    func testNotATtyIsRefused() {
        var s = SerialSettings()
        s.path = "/dev/null"
        XCTAssertThrowsError(try SerialPort.open(path: "/dev/null", line: SerialLineConfig(s), system: GlibcSerialSystemCalls())) { error in
            XCTAssertTrue("\(error)".hasPrefix("tcgetattr /dev/null: "), "\(error)")
        }
    }
}

/// The real calls, recording the open flags.
final class OpenFlagsSpy: SerialSystemCalls {
    let real = GlibcSerialSystemCalls()
    private let recorded = PosixMutex<[Int32]>([])
    var flags: [Int32] { recorded.withLock { $0 } }

    func open(_ path: String, flags f: Int32) -> Result<Int32, Errno> {
        recorded.withLock { $0.append(f) }
        return real.open(path, flags: f)
    }
    func getAttributes(_ fd: Int32) -> Result<termios, Errno> { real.getAttributes(fd) }
    func setAttributes(_ fd: Int32, _ a: termios) -> Result<Void, Errno> { real.setAttributes(fd, a) }
    func enableRS485(_ fd: Int32) -> Result<Void, Errno> { real.enableRS485(fd) }
    func write(_ fd: Int32, _ b: UnsafeRawBufferPointer) -> Result<Int, Errno> { real.write(fd, b) }
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        real.poll(fd, events: events, timeoutMilliseconds: timeoutMilliseconds)
    }
    func outputQueueLength(_ fd: Int32) -> Result<Int, Errno> { real.outputQueueLength(fd) }
    func discardOutput(_ fd: Int32) -> Result<Void, Errno> { real.discardOutput(fd) }
    func close(_ fd: Int32) -> Result<Void, Errno> { real.close(fd) }
}
