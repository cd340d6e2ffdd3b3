import Foundation
import XCTest

/// udev/*.rules: parsed by the real udev (systemd 252 has no `udevadm verify`, so `udevadm test` reads them
/// in a private mount namespace where /etc/udev/rules.d is a temporary folder), and checked rule by rule.
final class DeployUdevTests: XCTestCase {
    private let root = ConfigTestFiles.repositoryRoot
    private let files = ["60-scangate-camera.rules", "60-scangate-gpio.rules", "60-scangate-serial.rules"]

    private func rules(_ name: String) throws -> [String] {
        try ConfigTestFiles.read(root + "/udev/" + name).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// KEY{attr}OP"value" items of one rule line.
    private func items(_ rule: String) -> [(key: String, op: String, value: String)]? {
        var result: [(String, String, String)] = []
        var rest = Substring(rule)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard !rest.isEmpty else { break }
            let keyEnd = rest.firstIndex { "=!+:-".contains($0) } ?? rest.endIndex
            let key = String(rest[..<keyEnd])
            rest = rest[keyEnd...]
            let op = ["==", "!=", "+=", "-=", ":=", "="].first { rest.hasPrefix($0) }
            guard let op, !key.isEmpty else { return nil }
            rest = rest.dropFirst(op.count)
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { return nil }
            result.append((key, op, String(rest[rest.index(after: rest.startIndex)..<close])))
            rest = rest[rest.index(after: close)...]
        }
        return result
    }

    func testEveryRuleIsWellFormed() throws {
        let matchKeys: Set<String> = ["SUBSYSTEM", "KERNEL", "ACTION", "ENV", "ATTR", "ATTRS", "SUBSYSTEMS", "KERNELS"]
        let assignKeys: Set<String> = ["SYMLINK", "GROUP", "MODE", "OWNER", "TAG", "ENV"]
        for file in files {
            let lines = try rules(file)
            XCTAssertFalse(lines.isEmpty, file)
            XCTAssertTrue(try ConfigTestFiles.read(root + "/udev/" + file).contains("To adapt"), "\(file): say how to adapt it")
            for line in lines {
                let parsed = try XCTUnwrap(items(line), "\(file): cannot parse: \(line)")
                for item in parsed {
                    let base = String(item.key.prefix { $0 != "{" })
                    if item.op == "==" || item.op == "!=" {
                        XCTAssertTrue(matchKeys.contains(base), "\(file): \(item.key) is not a match key")
                    } else {
                        XCTAssertTrue(assignKeys.contains(base), "\(file): \(item.key) cannot be assigned")
                    }
                }
            }
        }
    }

    func testStableNamesAndPermissions() throws {
        let camera = try XCTUnwrap(items(try rules("60-scangate-camera.rules")[0]))
        XCTAssertTrue(camera.contains { $0 == ("SUBSYSTEM", "==", "video4linux") })
        XCTAssertTrue(camera.contains { $0 == ("ATTRS{idVendor}", "==", "046d") })
        XCTAssertTrue(camera.contains { $0 == ("ATTR{index}", "==", "0") }, "the capture node, not UVC metadata")
        XCTAssertTrue(camera.contains { $0 == ("SYMLINK", "+=", "scangate-camera") })
        let gpio = try XCTUnwrap(items(try rules("60-scangate-gpio.rules")[0]))
        XCTAssertTrue(gpio.contains { $0 == ("SUBSYSTEM", "==", "gpio") })
        XCTAssertTrue(gpio.contains { $0 == ("GROUP", "=", "gpio") })
        XCTAssertTrue(gpio.contains { $0 == ("MODE", "=", "0660") })
        let serial = try XCTUnwrap(items(try rules("60-scangate-serial.rules")[0]))
        XCTAssertTrue(serial.contains { $0 == ("SUBSYSTEM", "==", "tty") })
        XCTAssertTrue(serial.contains { $0 == ("SYMLINK", "+=", "scangate-serial") })
        XCTAssertTrue(serial.contains { $0 == ("GROUP", "=", "dialout") })
    }

    func testUdevItselfAcceptsTheRules() throws {
        let dir = try TestFiles.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/rules.d", withIntermediateDirectories: true)
        for file in files {
            try FileManager.default.copyItem(atPath: root + "/udev/" + file, toPath: dir + "/rules.d/" + file)
        }
        // The package creates the group gpio; give this namespace's /etc/group one too.
        var groups = try ConfigTestFiles.read("/etc/group")
        if !groups.contains("\ngpio:") && !groups.hasPrefix("gpio:") { groups += "gpio:x:64999:\n" }
        ConfigTestFiles.write(groups, to: dir + "/group")
        let device = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: "/sys/class/tty").sorted().first)
        let script = "mount --bind \(dir)/rules.d /etc/udev/rules.d && mount --bind \(dir)/group /etc/group"
            + " && udevadm test --action=add /sys/class/tty/\(device)"
        let result = try ConfigTestFiles.run("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
        XCTAssertEqual(result.status, 0, "udevadm test in a mount namespace (needs root): \(result.stderr)")
        let output = (result.stdout + result.stderr).split(separator: "\n").filter { $0.contains("scangate") }
        for file in files {
            XCTAssertTrue(output.contains { $0 == "Reading rules file: /etc/udev/rules.d/\(file)" }, "udev did not read \(file)")
        }
        let complaints = output.filter { !$0.hasPrefix("Reading rules file:") }
        XCTAssertEqual(complaints, [], "udev reports problems in the rules")
    }
}
