import Core
import Foundation
import Platform
@testable import Service
import XCTest

/// The status socket and `scangate status` against it.
final class ServiceStatusSocketTests: XCTestCase {
    static func report() -> StatusReport {
        var r = StatusReport(status: "scanning", version: "0.1.0", pid: 4242, uptimeSeconds: 7384.2,
                     frames: .init(captured: 1000, decoded: 990, dropped: 10),
                     reads: .init(reported: 12, rejected: 2, lastAt: 1_800_000_000_123_000_000),
                     drops: [.init(name: "stdout events", count: 0), .init(name: "mqtt spool", count: 3)],
                     devices: [
                        ComponentHealth(name: "camera", state: .ok, detail: "/dev/video0 640x480 YUYV"),
                        ComponentHealth(name: "serial", state: .down, detail: "/dev/ttyUSB0", lastError: "write: Input/output error (EIO)",
                                        lastErrorAt: 1_800_000_000_000_000_000, sent: 10, errors: 2),
                     ],
                     controller: .init(name: "osdp", online: true, detail: "polled by address 0"),
                     mqtt: .init(connected: false, detail: "not connected: connection refused", spoolEvents: 5, spoolBytes: 1800, dropped: 3),
                     rejections: [.init(name: "payload-filter", count: 1), .init(name: "revoked", count: 1)],
                     statusLists: [.init(uri: "https://s/1", entries: 1024, issuedAt: 1_799_990_000, expiresAt: 1_800_090_000, kept: true)])
        r.passbackSharing = .init(view: "offline", sent: 7, received: 5, applied: 4, waiting: 2, dropped: 0)
        return r
    }

    func socketPath() throws -> String { try TestFiles.temporaryDirectory() + "/run/" + StatusSocket.fileName }

    /// Connects, sends `request`, reads to EOF.
    func ask(_ path: String, _ request: String = "status\n", timeoutSeconds: Int = 0) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        if timeoutSeconds > 0 {   // as `scangate status` gives up
            var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            XCTAssertEqual(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)), 0)
        }
        let rc = StatusSocketAddress.with(path) { connect(fd, $0, $1) }
        guard rc == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    func testAClientGetsTheJSONDocument() throws {
        let path = try socketPath()
        let log = LogCapture()
        let socket = try StatusSocket(path: path, group: "scangate", provider: { Self.report() }, logger: log.logger)
        defer { socket.close() }
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
        let answer = try ask(path)
        XCTAssertTrue(answer.hasSuffix("}\n"))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
        XCTAssertEqual(json["status"] as? String, "scanning")
        XCTAssertEqual(json["pid"] as? Int, 4242)
        XCTAssertEqual((json["frames"] as? [String: Any])?["dropped"] as? Int, 10)
        XCTAssertEqual((json["reads"] as? [String: Any])?["last"] as? String, "2027-01-15T08:00:00.123Z")
        XCTAssertEqual((json["drops"] as? [String: Any])?["mqtt spool"] as? Int, 3)
        let devices = try XCTUnwrap(json["devices"] as? [[String: Any]])
        XCTAssertEqual(devices.map { $0["name"] as? String }, ["camera", "serial"])
        XCTAssertEqual(devices[1]["last_error"] as? String, "write: Input/output error (EIO)")
        XCTAssertEqual((json["controller"] as? [String: Any])?["online"] as? Bool, true)
        XCTAssertEqual((json["mqtt"] as? [String: Any])?["spool_events"] as? Int, 5)
        // The document reads back to the same report.
        XCTAssertEqual(try StatusReport(json: Array(answer.utf8)), Self.report())
        XCTAssertTrue(waitUntil(5) { socket.connectionsServed == 1 })
    }

    /// The socket's group is the one named, when it exists (here an existing system group stands in for
    /// scangate); a group that does not exist leaves the daemon's own.
    func testTheSocketGetsTheGroupWhenItExists() throws {
        guard let group = getgrnam("mosquitto") ?? getgrnam("daemon") else { throw MQTTTestError("no group mosquitto or daemon to test with") }
        let gid = group.pointee.gr_gid
        let path = try socketPath()
        let socket = try StatusSocket(path: path, group: String(cString: group.pointee.gr_name), provider: { Self.report() },
                                      logger: LogCapture().logger)
        defer { socket.close() }
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_gid, gid)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
        let other = try StatusSocket(path: try socketPath(), group: "no-such-group-here", provider: { Self.report() }, logger: LogCapture().logger)
        other.close()
    }

    func testRequestsAreBounded() throws {
        let path = try socketPath()
        let socket = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        defer { socket.close() }
        XCTAssertTrue(try ask(path, "hello\n").contains("unknown request \\\"hello\\\"; send 'status'"))
        XCTAssertTrue(try ask(path, String(repeating: "x", count: 1000)).contains("a request is at most 256 bytes"))
        // A client that connects and says nothing is dropped after the timeout, and the next one is served.
        let silent = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertEqual(StatusSocketAddress.with(path) { connect(silent, $0, $1) }, 0)
        XCTAssertTrue(try ask(path).contains("\"status\":\"scanning\""), "served after the silent one timed out")
        var byte: UInt8 = 0
        XCTAssertEqual(read(silent, &byte, 1), 0, "the silent client was closed")
        close(silent)
    }

    /// Twenty clients that connect and say nothing tie up nothing: a real request is answered meanwhile,
    /// and `close` returns with them still connected (they are closed, not waited for).
    func testIdleClientsDelayNeitherOthersNorClose() throws {
        let path = try socketPath()
        let socket = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for _ in 0..<20 {
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            XCTAssertEqual(StatusSocketAddress.with(path) { connect(fd, $0, $1) }, 0)
            idle.append(fd)
        }
        // More than maxClients are connected: the answer comes once an idle one times out, well inside the
        // 5 s `scangate status` waits (served one at a time, twenty idle clients took 40 s).
        XCTAssertTrue(try ask(path, timeoutSeconds: 5).contains("\"status\":\"scanning\""))
        for _ in 0..<4 {
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            XCTAssertEqual(StatusSocketAddress.with(path) { connect(fd, $0, $1) }, 0)
            idle.append(fd)
        }
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { socket.close(); closed.signal() }
        XCTAssertEqual(closed.wait(timeout: .now() + 10), .success, "close returned with idle clients connected")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "and removed the socket")
    }

    /// The temporary name the socket is bound under must fit sockaddr_un too: refused with the limit.
    func testAPathTooLongForTheTemporaryNameIsRefused() throws {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/" + String(repeating: "s", count: max(1, 100 - dir.utf8.count)) + ".sock"
        XCTAssertThrowsError(try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)) {
            XCTAssertTrue("\($0)".contains("a socket path is at most"), "\($0)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "nothing left behind")
    }

    func testAStaleSocketIsReplacedALiveOneIsAnErrorAndCloseRemovesIt() throws {
        let path = try socketPath()
        let first = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        XCTAssertThrowsError(try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)) { error in
            XCTAssertTrue("\(error)".contains("another scangate answers on it"), "\(error)")
        }
        first.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "removed at close")
        // A stale socket file (bound, its owner gone).
        let stale = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertEqual(StatusSocketAddress.with(path) { bind(stale, $0, $1) }, 0)
        close(stale)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        let second = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        defer { second.close() }
        XCTAssertTrue(try ask(path).contains("\"pid\":4242"))
    }

    func testDefaultPathFollowsRuntimeDirectory() {
        XCTAssertEqual(StatusSocket.defaultPath(environment: ["RUNTIME_DIRECTORY": "/run/scangate"]), "/run/scangate/status.sock")
        XCTAssertEqual(StatusSocket.defaultPath(environment: ["RUNTIME_DIRECTORY": "/run/a:/run/b"]), "/run/a/status.sock")
        XCTAssertEqual(StatusSocket.defaultPath(environment: [:]), "/run/scangate/status.sock")
    }

    // MARK: - scangate status

    func testScangateStatusPrintsASummaryAndTheJSON() throws {
        let path = try socketPath()
        let socket = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        defer { socket.close() }
        let summary = try ScangateProcess.run(["status", "--socket", path])
        XCTAssertEqual(summary.status, 0, summary.stderr)
        let lines = summary.stdoutLines
        XCTAssertEqual(lines.first, "scangate 0.1.0, pid 4242: scanning, up 2 h 3 min")
        XCTAssertTrue(lines.contains("frames: 1000 captured, 990 decoded, 10 dropped"), summary.stdoutText)
        XCTAssertTrue(lines.contains("reads: 12 (2 rejected), last at 2027-01-15T08:00:00.123Z"), summary.stdoutText)
        XCTAssertTrue(lines.contains("drops: mqtt spool 3"), summary.stdoutText)
        XCTAssertTrue(lines.contains("rejected by reason: payload-filter 1, revoked 1"), summary.stdoutText)
        XCTAssertTrue(lines.contains { $0.hasPrefix("status list https://s/1: 1024 entries, iat 2027-01-15T05:13:20.000Z (")
                                       && $0.contains("exp 2027-01-16T09:00:00.000Z (") && $0.hasSuffix(", the kept copy") }, summary.stdoutText)
        XCTAssertTrue(lines.contains { $0.contains("serial") && $0.contains("down") && $0.contains("(sent 10, errors 2)") }, summary.stdoutText)
        XCTAssertTrue(lines.contains { $0.contains("last error at 2027-01-15T08:00:00.000Z: write: Input/output error (EIO)") }, summary.stdoutText)
        XCTAssertTrue(lines.contains("controller: osdp online (polled by address 0)"), summary.stdoutText)
        XCTAssertTrue(lines.contains("mqtt: not connected (not connected: connection refused); spool 5 events (1800 bytes), 3 dropped"),
                      summary.stdoutText)
        XCTAssertTrue(lines.contains("anti-passback over MQTT: broker away, this kiosk's own view decides; 7 uses sent, 5 received (4 newer than ours), 2 waiting for the broker"),
                      summary.stdoutText)

        let json = try ScangateProcess.run(["status", "--json", "--socket", path])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(try StatusReport(json: json.stdout), Self.report())
    }

    /// Whatever answers on the socket is untrusted by `scangate status`: an uptime of 1e300 is shown as
    /// unknown, not a crash.
    func testScangateStatusSurvivesAnAbsurdUptime() throws {
        let path = try socketPath()
        var absurd = Self.report()
        absurd.uptimeSeconds = 1e300
        let report = absurd
        let socket = try StatusSocket(path: path, group: nil, provider: { report }, logger: LogCapture().logger)
        defer { socket.close() }
        let summary = try ScangateProcess.run(["status", "--socket", path])
        XCTAssertEqual(summary.status, 0, summary.stderr)
        XCTAssertEqual(summary.stdoutLines.first, "scangate 0.1.0, pid 4242: scanning, up ? s")
    }

    func testScangateStatusWithoutADaemonSaysSoAndExits1() throws {
        let path = try socketPath()
        let result = try ScangateProcess.run(["status", "--socket", path])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, [])
        XCTAssertEqual(result.stderr, "scangate status: nothing answers on \(path) (is scangate run running with this status-socket?)\n")
        let bad = try ScangateProcess.run(["status", "--bogus"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("unknown option '--bogus'"), bad.stderr)
    }

    /// `status --config FILE` asks the socket the file's status-socket names, as the daemon run with that
    /// file listens on; `--status-socket` (and the older `--socket`) override it.
    func testScangateStatusFindsTheSocketSetInTheConfig() throws {
        let path = try socketPath()
        let conf = try TestFiles.temporaryDirectory() + "/scangate.conf"
        try TestFiles.write("[service]\nstatus-socket = \(path)\n", to: conf)
        // Nothing listens yet: the message names the path from the file.
        let nobody = try ScangateProcess.run(["status", "--config", conf])
        XCTAssertEqual(nobody.status, 1)
        XCTAssertEqual(nobody.stderr, "scangate status: nothing answers on \(path) (is scangate run running with this status-socket?)\n")
        let socket = try StatusSocket(path: path, group: nil, provider: { Self.report() }, logger: LogCapture().logger)
        defer { socket.close() }
        let found = try ScangateProcess.run(["status", "--config", conf])
        XCTAssertEqual(found.status, 0, found.stderr)
        XCTAssertEqual(found.stdoutLines.first, "scangate 0.1.0, pid 4242: scanning, up 2 h 3 min")
        let json = try ScangateProcess.run(["status", "--json", "--config", conf])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(try StatusReport(json: json.stdout), Self.report())
        for flag in ["--status-socket", "--socket"] {
            let direct = try ScangateProcess.run(["status", flag, path])
            XCTAssertEqual(direct.status, 0, "\(flag): " + direct.stderr)
            // The flag overrides the file.
            let elsewhere = try TestFiles.temporaryDirectory() + "/other.sock"
            let overridden = try ScangateProcess.run(["status", "--config", conf, flag + "=" + elsewhere])
            XCTAssertEqual(overridden.status, 1, flag)
            XCTAssertEqual(overridden.stderr, "scangate status: nothing answers on \(elsewhere) (is scangate run running with this status-socket?)\n")
        }
        // A bad value or file is exit 2, one line.
        let relative = try ScangateProcess.run(["status", "--status-socket", "status.sock"])
        XCTAssertEqual(relative.status, 2)
        XCTAssertEqual(relative.stderr, "scangate status: --status-socket: 'status.sock' is not auto, off or an absolute path\n")
        try TestFiles.write("[service]\nstatus-socket = off\n", to: conf)
        let off = try ScangateProcess.run(["status", "--config", conf])
        XCTAssertEqual(off.status, 2)
        XCTAssertEqual(off.stderr.split(separator: "\n").count, 1, off.stderr)
        XCTAssertTrue(off.stderr.contains("status-socket is off in \(conf)"), off.stderr)
    }
}
