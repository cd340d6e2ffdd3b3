#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Platform
import XCTest
import SerialLine
import Service
import Settings

/// Two daemons on one kiosk, through the real binary: the daemon lock beside the status socket, the serial
/// port's TIOCEXCL and UUCP lock file, and the metrics file the first one keeps writing.
final class DaemonLockTests: XCTestCase {
    var dir = ""
    var scenario = ""
    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        scenario = dir + "/pulse.scenario"
        // A code in view for 0.25 s of every second: each appearance is one read, one frame on the line.
        try TestFiles.write("size 320x240\nfps 20\nframes 20\nloop\ncode qr \"R\" frames 0-4 module 3\n", to: scenario)
    }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func arguments(_ pty: PseudoTerminal, socket: String = "status.sock", metrics: String = "scangate.prom") -> [String] {
        ["run", "--camera", "sim:" + scenario, "--serial", pty.name, "--status-socket", dir + "/" + socket,
         "--metrics-textfile", dir + "/" + metrics, "--metrics-interval-s", "1", "--hold-off-ms", "300"]
    }

    /// Started, a code reported, the port open and the metrics file saying it is up.
    func startFirst(_ pty: PseudoTerminal, _ arguments: [String], metrics: String = "scangate.prom") throws -> DaemonUnderTest {
        let first = try DaemonUnderTest(arguments)
        XCTAssertTrue(waitUntil(30) { first.stdout.count >= 1 && !first.descriptors(linkingTo: pty.name).isEmpty },
                      "the first daemon is not up: \(first.stderr)")
        XCTAssertTrue(waitUntil(10) { self.metric(metrics).contains("scangate_up 1") }, "metrics: \(metric(metrics))")
        return first
    }

    func metric(_ name: String) -> String {
        FileManager.default.contents(atPath: dir + "/" + name).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    func lines(_ bytes: [UInt8]) -> Int { bytes.split(separator: 0x0A).filter { $0.elementsEqual(Array("R\r".utf8)) }.count }

    /// The same config twice: the second exits 2 at once with one line naming the first's pid and the lock;
    /// the first keeps its port (every code it reports is on the line once) and its metrics say it is up.
    func testSecondIdenticalDaemonIsRefusedAndTheFirstKeepsItsPortAndMetrics() throws {
        let pty = try PseudoTerminal()
        let first = try startFirst(pty, arguments(pty))
        defer { first.stop() }

        let second = try DaemonUnderTest(arguments(pty))
        defer { second.stop() }
        XCTAssertEqual(second.waitForExit(seconds: 10), 2, "the second daemon: \(second.stderr)")
        XCTAssertEqual(second.stderr.count, 1, "one line: \(second.stderr)")
        let line = second.stderr.first ?? ""
        XCTAssertTrue(line.hasPrefix("scangate: another scangate (pid \(first.pid)) runs with status socket \(dir)/status.sock "
                                     + "(lock \(dir)/status.sock.lock)"), line)
        XCTAssertTrue(second.stdout.isEmpty, "\(second.stdout)")
        XCTAssertTrue(metric("scangate.prom").contains("scangate_up 1\n"), "the second wrote the metrics: \(metric("scangate.prom"))")
        XCTAssertEqual(metric("status.sock.lock"), "\(first.pid)\n")

        // The first keeps the port: a code shown after the refusal reaches the line, each one once.
        let reported = first.stdout.count
        XCTAssertTrue(waitUntil(20) { first.stdout.count >= reported + 1 }, "no code after the refusal: \(first.stderr)")
        XCTAssertTrue(first.process.isRunning)
        XCTAssertEqual(first.stop(), 0, first.stderr.suffix(30).joined(separator: "\n"))
        let events = first.stdout.filter { $0.contains("\"data\":\"R\"") }.count
        XCTAssertGreaterThanOrEqual(events, 2)
        XCTAssertEqual(lines(pty.drain()), events, "every code once on the line, nothing from the second daemon")
        XCTAssertTrue(metric("scangate.prom").contains("scangate_up 0\n"), "the first's own last word")
        let lock = try XCTUnwrap(SerialDeviceLock.lockPath(device: pty.name))
        XCTAssertFalse(FileManager.default.fileExists(atPath: lock), "the port's lock file is removed at exit")
    }

    /// Its own status socket and metrics file, but the first one's serial port: refused, naming the port,
    /// the holder's pid and its lock file.
    func testSecondDaemonOnTheSameSerialPortIsRefusedNamingPortAndHolder() throws {
        let pty = try PseudoTerminal()
        let first = try startFirst(pty, arguments(pty))
        defer { first.stop() }
        let lock = try XCTUnwrap(SerialDeviceLock.lockPath(device: pty.name))
        XCTAssertEqual(FileManager.default.contents(atPath: lock).map { String(decoding: $0, as: UTF8.self) },
                       String(repeating: " ", count: 10 - String(first.pid).count) + "\(first.pid)\n", "the UUCP lock file")

        let second = try DaemonUnderTest(arguments(pty, socket: "other.sock", metrics: "other.prom"))
        defer { second.stop() }
        XCTAssertEqual(second.waitForExit(seconds: 10), 2, "the second daemon: \(second.stderr)")
        XCTAssertEqual(second.stderr, ["scangate: serial port \(pty.name) (in use by pid \(first.pid), lock \(lock): "
                                       + "stop that process first); or give this scangate another serial device"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/other.prom"))
        XCTAssertTrue(first.process.isRunning)
        XCTAssertEqual(first.stop(), 0, first.stderr.suffix(30).joined(separator: "\n"))
    }

    /// Its own status socket but the first one's metrics file: refused before it writes `scangate_up 0` there.
    func testSecondDaemonOnTheSameMetricsFileIsRefused() throws {
        let first = try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--status-socket", dir + "/a.sock",
                                         "--metrics-textfile", dir + "/scangate.prom", "--metrics-interval-s", "1"])
        defer { first.stop() }
        XCTAssertTrue(waitUntil(30) { self.metric("scangate.prom").contains("scangate_up 1") }, "\(first.stderr)")
        let second = try DaemonUnderTest(["run", "--camera", "sim:" + scenario, "--status-socket", dir + "/b.sock",
                                          "--metrics-textfile", dir + "/scangate.prom"])
        defer { second.stop() }
        XCTAssertEqual(second.waitForExit(seconds: 10), 2, "the second daemon: \(second.stderr)")
        XCTAssertEqual(second.stderr, ["scangate: another scangate (pid \(first.pid)) writes metrics-textfile \(dir)/scangate.prom "
                                       + "(lock \(dir)/scangate.prom.lock); stop it first, or give this one its own metrics-textfile"])
        XCTAssertTrue(metric("scangate.prom").contains("scangate_up 1\n"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/b.sock"))
        XCTAssertTrue(first.process.isRunning)
        XCTAssertEqual(first.stop(), 0, first.stderr.suffix(30).joined(separator: "\n"))
    }

    /// kill -9 leaves the daemon's lock file (its flock went with the process), a UUCP lock naming a dead
    /// pid and the tty's exclusive flag (the test holds the pty open): the next daemon starts and takes it all.
    func testNextDaemonStartsAfterTheFirstIsKilled() throws {
        let pty = try PseudoTerminal()
        let first = try startFirst(pty, arguments(pty))
        let lock = try XCTUnwrap(SerialDeviceLock.lockPath(device: pty.name))
        first.signal(SIGKILL)
        XCTAssertNotNil(first.waitForExit(seconds: 10))
        XCTAssertTrue(FileManager.default.fileExists(atPath: lock), "a killed daemon leaves its lock file")

        let next = try DaemonUnderTest(arguments(pty))
        defer { next.stop() }
        XCTAssertTrue(waitUntil(30) { next.stdout.count >= 1 && !next.descriptors(linkingTo: pty.name).isEmpty },
                      "the next daemon did not start: \(next.stderr)")
        XCTAssertTrue(waitUntil(10) { self.metric("status.sock.lock") == "\(next.pid)\n" })
        XCTAssertTrue(FileManager.default.contents(atPath: lock).map { String(decoding: $0, as: UTF8.self) }?
                        .hasSuffix(" \(next.pid)\n") ?? false, "the stale lock file was taken over")
        let reported = next.stdout.count
        XCTAssertTrue(waitUntil(20) { next.stdout.count >= reported + 1 })
        XCTAssertEqual(next.stop(), 0, next.stderr.suffix(30).joined(separator: "\n"))
        XCTAssertFalse(next.stderr.contains { $0.contains("serial: ") && $0.contains("retrying") }, "\(next.stderr)")
    }
}

/// The serial port's own exclusivity, in one process.
final class SerialPortExclusiveTests: XCTestCase {
    func open(_ pty: PseudoTerminal) throws -> SerialPort {
        try SerialPort.open(path: pty.name, line: SerialLineConfig(baud: .default9600), system: GlibcSerialSystemCalls())
    }

    func testASecondOpenIsRefusedUntilTheFirstCloses() throws {
        let pty = try PseudoTerminal()
        let port = try open(pty)
        let lock = try XCTUnwrap(SerialDeviceLock.lockPath(device: pty.name))
        XCTAssertEqual(port.exclusivity, .lockFile(lock))
        XCTAssertEqual(try GlibcSerialSystemCalls().isExclusive(port.descriptor).get(), true, "TIOCEXCL is set")
        XCTAssertThrowsError(try open(pty)) { error in
            XCTAssertEqual("\(error)", "open \(pty.name) (in use by pid \(getpid()), lock \(lock): stop that process first): "
                           + "\(Errno.busy)")
        }
        port.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: lock))
        let again = try open(pty)
        again.close()
    }

    func testAStaleLockIsTakenOverAndAnUnreadableOneIsLeftAlone() throws {
        let pty = try PseudoTerminal()
        let lock = try XCTUnwrap(SerialDeviceLock.lockPath(device: pty.name))
        defer { unlink(lock) }
        // A pid no process has.
        let dead = try XCTUnwrap((1..<1000).lazy.map { Int32(4_000_000 - $0) }.first { kill($0, 0) != 0 && errno == ESRCH })
        try TestFiles.write(String(format: "%10d\n", dead), to: lock)
        let port = try open(pty)
        XCTAssertEqual(FileManager.default.contents(atPath: lock), Data(String(format: "%10d\n", getpid()).utf8))
        port.close()

        try TestFiles.write("", to: lock)
        XCTAssertThrowsError(try open(pty)) { error in
            XCTAssertTrue("\(error)".contains("its lock holds no pid; remove it if no program uses the port, lock \(lock))"), "\(error)")
        }
    }

    func testALockDirectoryThatCannotBeWrittenLeavesTIOCEXCLAlone() throws {
        let pty = try PseudoTerminal()
        guard case .unavailable(let reason) = SerialDeviceLock.acquire(device: pty.name, directory: "/nonexistent-scangate") else {
            return XCTFail("a missing lock directory is not a lock")
        }
        XCTAssertTrue("\(reason)".hasPrefix("create /nonexistent-scangate/LTMP."), "\(reason)")
        XCTAssertEqual(SerialDeviceLock.lockName(resolvedDevice: "/dev/ttyS0"), "LCK..ttyS0")
        XCTAssertEqual(SerialDeviceLock.lockName(resolvedDevice: "/dev/pts/3"), "LCK..pts_3")
    }
}
