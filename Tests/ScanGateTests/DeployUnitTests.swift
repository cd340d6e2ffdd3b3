import Foundation
import XCTest

/// deploy/scangate.service, checked by systemd's own tools (systemd is installed by scripts/install-deps deb;
/// a missing tool fails these tests, it never skips them).
final class DeployUnitTests: XCTestCase {
    private let root = ConfigTestFiles.repositoryRoot
    private let analyze = "/usr/bin/systemd-analyze"

    private func requireAnalyze() throws {
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            throw DeployToolMissing(message: "\(analyze) is missing: run scripts/install-deps deb")
        }
    }

    private func unitLines() throws -> [(key: String, value: String)] {
        try ConfigTestFiles.read(root + "/deploy/scangate.service").split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix("["), let eq = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<eq]), String(line[line.index(after: eq)...]))
        }
    }

    private func values(_ key: String) throws -> [String] { try unitLines().filter { $0.key == key }.map(\.value) }

    func testSystemdAnalyzeVerifyIsClean() throws {
        try requireAnalyze()
        let dir = NSTemporaryDirectory() + "scangate-verify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/man/man1", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The unit as installed, except that ExecStart points at a stand-in for /usr/bin/scangate.
        ConfigTestFiles.write("#!/bin/sh\n", to: dir + "/scangate")
        chmod(dir + "/scangate", 0o755)
        let unit = try ConfigTestFiles.read(root + "/deploy/scangate.service")
            .replacingOccurrences(of: "/usr/bin/scangate", with: dir + "/scangate")
        ConfigTestFiles.write(unit, to: dir + "/scangate.service")
        // Documentation=man:scangate(1) is checked against the package's man page.
        try FileManager.default.copyItem(atPath: root + "/deploy/debian/scangate.1", toPath: dir + "/man/man1/scangate.1")
        var env = ProcessInfo.processInfo.environment
        env["MANPATH"] = dir + "/man"
        let result = try ConfigTestFiles.run(analyze, ["verify", dir + "/scangate.service"], environment: env)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "", "systemd-analyze verify warns")
        XCTAssertEqual(result.stdout, "")
    }

    func testSecurityExposureIsAtMost2() throws {
        try requireAnalyze()
        let result = try ConfigTestFiles.run(analyze, ["security", "--offline=yes", "--no-pager",
                                                       root + "/deploy/scangate.service"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let marker = "Overall exposure level for scangate.service: "
        let line = try XCTUnwrap(result.stdout.split(separator: "\n").first { $0.contains(marker) }, result.stdout)
        let figure = try XCTUnwrap(Double(line.components(separatedBy: marker)[1].split(separator: " ")[0]))
        XCTAssertLessThanOrEqual(figure, 2.0, "systemd-analyze security exposure \(figure) > 2.0:\n\(result.stdout)")
        print("systemd-analyze security exposure: \(figure)")
    }

    func testServiceIsANotifyServiceWithAWatchdog() throws {
        XCTAssertEqual(try values("Type"), ["notify"])
        XCTAssertEqual(try values("Restart"), ["on-failure"])
        let watchdog = try XCTUnwrap(try values("WatchdogSec").first.flatMap { Int($0) })
        XCTAssertGreaterThanOrEqual(watchdog, 10)
        XCTAssertEqual(try values("ExecStart"), ["/usr/bin/scangate run --config /etc/scangate/scangate.conf"])
        XCTAssertEqual(try values("ExecReload"), ["/bin/kill -HUP $MAINPID"])
        XCTAssertEqual(try values("WantedBy"), ["multi-user.target"])
    }

    func testRunsAsScangateWithExactlyItsDevices() throws {
        XCTAssertEqual(try values("User"), ["scangate"])
        XCTAssertEqual(Set(try values("SupplementaryGroups").flatMap { $0.split(separator: " ").map(String.init) }),
                       ["video", "gpio", "dialout", "audio"])
        XCTAssertEqual(try values("DevicePolicy"), ["closed"])
        // Names as the kernel lists them in /proc/devices.
        XCTAssertEqual(Set(try values("DeviceAllow")),
                       ["char-video4linux rw", "char-gpiochip rw", "char-ttyS rw", "char-ttyUSB rw", "char-ttyACM rw",
                        "char-ttyAMA rw", "char-alsa rw"])
    }

    func testHardening() throws {
        let expected: [String: String] = [
            "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
            "RestrictAddressFamilies": "AF_UNIX", "CapabilityBoundingSet": "", "PrivateNetwork": "yes",
            "MemoryDenyWriteExecute": "yes",
        ]
        for (key, value) in expected {
            XCTAssertEqual(try values(key), [value], key)
        }
        XCTAssertEqual(try values("SystemCallFilter").first, "@system-service")
    }
}

/// A tool the deploy checks need is not installed: the test fails (it never skips).
struct DeployToolMissing: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
