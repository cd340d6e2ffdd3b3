import Foundation
import XCTest

/// deploy/debian/build-deb: the package's contents, control fields, conffiles and maintainer scripts,
/// built from a stand-in binary; then installed, upgraded and purged in a throwaway chroot
/// (deploy/debian/test-install-chroot: an overlay of this machine's root in a private mount namespace).
final class DeployDebianPackageTests: XCTestCase {
    private let root = ConfigTestFiles.repositoryRoot
    private var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        ConfigTestFiles.write("#!/bin/sh\necho scangate stand-in\n", to: dir + "/scangate")
        chmod(dir + "/scangate", 0o755)
    }

    private func buildDeb(version: String) throws -> String {
        let result = try ConfigTestFiles.run(root + "/deploy/debian/build-deb",
                                             ["--version", version, "--arch", "amd64", "--out", dir, dir + "/scangate"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let deb = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(deb, "\(dir)/scangate_\(version)_amd64.deb")
        return deb
    }

    private func tool(_ path: String, _ args: [String]) throws -> String {
        let result = try ConfigTestFiles.run(path, args)
        XCTAssertEqual(result.status, 0, "\(path) \(args): \(result.stderr)")
        return result.stdout
    }

    func testContentsOwnersAndModes() throws {
        let deb = try buildDeb(version: "1.2.3")
        let listing = try tool("/usr/bin/dpkg-deb", ["-c", deb]).split(separator: "\n")
        var files: [String: String] = [:]
        for line in listing {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            XCTAssertEqual(fields[1], "root/root", "owned by root: \(line)")
            if fields[0].hasPrefix("-") { files[String(fields.last!)] = String(fields[0]) }
        }
        XCTAssertEqual(files, [
            "./usr/bin/scangate": "-rwxr-xr-x",
            "./lib/systemd/system/scangate.service": "-rw-r--r--",
            "./lib/udev/rules.d/60-scangate-camera.rules": "-rw-r--r--",
            "./lib/udev/rules.d/60-scangate-gpio.rules": "-rw-r--r--",
            "./lib/udev/rules.d/60-scangate-serial.rules": "-rw-r--r--",
            "./etc/scangate/scangate.conf": "-rw-r--r--",
            "./usr/share/man/man1/scangate.1.gz": "-rw-r--r--",
            "./usr/share/doc/scangate/copyright": "-rw-r--r--",
            "./usr/share/doc/scangate/changelog.gz": "-rw-r--r--",
            "./usr/share/scangate/mqtt-network.conf": "-rw-r--r--",
            "./usr/share/scangate/mqtt/mosquitto-scangate.conf": "-rw-r--r--",
            "./usr/share/scangate/mqtt/scangate.acl": "-rw-r--r--",
            "./usr/share/scangate/mqtt/consumer.py": "-rwxr-xr-x",
        ])
        // The files are the repository's own.
        let unpacked = dir + "/unpacked"
        _ = try tool("/usr/bin/dpkg-deb", ["-x", deb, unpacked])
        XCTAssertEqual(try ConfigTestFiles.read(unpacked + "/etc/scangate/scangate.conf"),
                       try ConfigTestFiles.read(root + "/deploy/scangate.conf"))
        XCTAssertEqual(try ConfigTestFiles.read(unpacked + "/lib/systemd/system/scangate.service"),
                       try ConfigTestFiles.read(root + "/deploy/scangate.service"))
        XCTAssertEqual(try tool("/bin/sh", ["-c", "gzip -dc \(unpacked)/usr/share/man/man1/scangate.1.gz"]),
                       try ConfigTestFiles.read(root + "/deploy/debian/scangate.1"))
        let man = try ConfigTestFiles.run("/usr/bin/man", ["--warnings", "-l", unpacked + "/usr/share/man/man1/scangate.1.gz"])
        XCTAssertEqual(man.status, 0)
        XCTAssertEqual(man.stderr, "", "man page warnings")
        XCTAssertTrue(man.stdout.contains("check-config"))
    }

    func testControlFieldsAndDepends() throws {
        let deb = try buildDeb(version: "1.2.3")
        func field(_ name: String) throws -> String {
            try tool("/usr/bin/dpkg-deb", ["-f", deb, name]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try field("Package"), "scangate")
        XCTAssertEqual(try field("Version"), "1.2.3")
        XCTAssertEqual(try field("Architecture"), "amd64")
        XCTAssertFalse(try field("Maintainer").isEmpty)
        XCTAssertFalse(try field("Description").isEmpty)
        XCTAssertNotNil(Int(try field("Installed-Size")))
        let depends = Set(try field("Depends").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        for package in ["libzbar0", "libv4l-0", "libgpiod2", "libasound2", "libqrencode4", "libinih1", "libsystemd0",
                        "libturbojpeg0", "libpng16-16", "adduser"] {
            XCTAssertTrue(depends.contains(package), "Depends lacks \(package)")
        }
        // Every Debian library the binary links (as the debug build shows it) comes from a package in Depends.
        let binary = root + "/.build/debug/scangate"
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: binary), "build first: swift build")
        let needed = try tool("/usr/bin/readelf", ["-d", binary]).split(separator: "\n").compactMap { line -> String? in
            guard line.contains("(NEEDED)"), let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        XCTAssertFalse(needed.isEmpty)
        for soname in needed where !soname.hasPrefix("libswift") && !["libdispatch.so", "libBlocksRuntime.so", "libFoundation.so"].contains(soname) {
            let owner = try ConfigTestFiles.run("/usr/bin/dpkg", ["-S", "*/\(soname)"])
            XCTAssertEqual(owner.status, 0, "no Debian package has \(soname)")
            let packages = Set(owner.stdout.split(separator: "\n").map { String($0.split(separator: ":")[0]) })
            XCTAssertFalse(packages.isDisjoint(with: depends), "\(soname) comes from \(packages), not in Depends")
        }
    }

    func testConffilesAndMaintainerScripts() throws {
        let deb = try buildDeb(version: "1.2.3")
        let control = dir + "/control"
        _ = try tool("/usr/bin/dpkg-deb", ["-e", deb, control])
        XCTAssertEqual(try ConfigTestFiles.read(control + "/conffiles"), "/etc/scangate/scangate.conf\n")
        for script in ["postinst", "prerm", "postrm"] {
            let path = control + "/" + script
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: path), script)
            XCTAssertTrue(try ConfigTestFiles.read(path).hasPrefix("#!/bin/sh\n"), script)
            let syntax = try ConfigTestFiles.run("/bin/sh", ["-n", path])
            XCTAssertEqual(syntax.status, 0, "\(script): \(syntax.stderr)")
        }
        let postinst = try ConfigTestFiles.read(control + "/postinst")
        XCTAssertTrue(postinst.contains("adduser --system --group"), "creates the system user")
        XCTAssertTrue(postinst.contains("addgroup --system --quiet gpio"), "creates the group gpio if missing")
        XCTAssertTrue(postinst.contains("udevadm control --reload-rules"))
        XCTAssertTrue(postinst.contains("deb-systemd-helper enable scangate.service"))
        XCTAssertFalse(postinst.contains("deb-systemd-invoke start"), "enabled, not started")
        let postrm = try ConfigTestFiles.read(control + "/postrm")
        XCTAssertTrue(postrm.contains("deluser --system"))
        XCTAssertTrue(postrm.contains("rm -rf /etc/scangate"))
        // md5sums covers every shipped file but the conffile.
        let sums = try ConfigTestFiles.read(control + "/md5sums")
        XCTAssertTrue(sums.contains("  usr/bin/scangate\n"))
        XCTAssertFalse(sums.contains("etc/scangate"))
    }

    func testBadArgumentsExit2() throws {
        let result = try ConfigTestFiles.run(root + "/deploy/debian/build-deb", ["--out", dir, dir + "/missing"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("is not an executable file"), result.stderr)
    }

    /// Install, upgrade (keeping an edited conffile), disable-survives-reinstall, remove and purge, in a chroot.
    func testInstallUpgradePurgeInAChroot() throws {
        let old = try buildDeb(version: "1.0.0")
        let new = try buildDeb(version: "1.1.0")
        let result = try ConfigTestFiles.run(root + "/deploy/debian/test-install-chroot", [old, new])
        print(result.stdout)
        XCTAssertEqual(result.status, 0, "\(result.stdout)\n\(result.stderr)")
        XCTAssertTrue(result.stdout.hasSuffix(" passed, 0 failed\n"), result.stdout)
        XCTAssertFalse(result.stdout.contains("FAIL"))
    }
}
