import Foundation
import XCTest

/// The examples a newcomer copies, run as printed: docs/signed-passes.md's "Issuing passes from your own
/// server" with the project's PyJWT and cwt (.build/venv), with a key from `scangate credential keygen`
/// as signing-key.pem, each pass verified with `scangate credential verify` against the JWKS keygen wrote;
/// and the README's door configs and pass commands (issue 27: its example set credential-audience but
/// issued passes without --aud, so every pass was refused).
final class ReadmeExampleTests: XCTestCase {
    func pythonBlocks(_ title: String = "## Issuing passes from your own server", until next: String = "## A site without a server") throws -> [String] {
        let readme = try String(contentsOfFile: TestFiles.repositoryRoot + "/docs/signed-passes.md", encoding: .utf8)
        guard let section = readme.range(of: title),
              let end = readme.range(of: next, range: section.upperBound..<readme.endIndex) else {
            XCTFail("docs/signed-passes.md has no \"\(title)\" section")
            return []
        }
        let text = readme[section.upperBound..<end.lowerBound]
        return text.components(separatedBy: "```python\n").dropFirst().map { String($0.components(separatedBy: "```")[0]) }
    }

    /// Runs one Python example in `dir` (with .build/venv) and returns what printing `variable` gives.
    func runExample(_ block: String, printing variable: String, in dir: String) throws -> String {
        let script = dir + "/example.py"
        try TestFiles.write(block + "\nprint(\(variable))\n", to: script)
        guard FileManager.default.isExecutableFile(atPath: PythonPeers.python) else {
            XCTFail("the Python peers are missing: run scripts/python-env")
            return ""
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PythonPeers.python)
        process.arguments = [script]
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(variable) example: \(errors)")
        return printed.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testIssuingExamplesRunAndTheirPassesVerify() throws {
        let blocks = try pythonBlocks()
        XCTAssertEqual(blocks.count, 2, "the PyJWT and the cwt example")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/keys", "--kid", "site-2025"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        try FileManager.default.copyItem(atPath: dir + "/keys/site-2025.key", toPath: dir + "/signing-key.pem")
        for (block, variable) in zip(blocks, ["token", "qr_text"]) {
            let pass = try runExample(block, printing: variable, in: dir)
            XCTAssertEqual(pass.hasPrefix("SG1:"), variable == "qr_text", pass)
            let verified = try ScangateProcess.run(["credential", "verify", pass, "--keys", dir + "/keys/credential-keys.jwks",
                                                    "--aud", "front-door", "--require-synced-clock", "no"])
            XCTAssertEqual(verified.status, 0, "\(variable): \(verified.stdoutText) \(verified.stderr)")
            XCTAssertTrue(verified.stdoutText.contains("number 12345678, kid site-2025"), verified.stdoutText)
            print("README \(variable) example: \(pass.count) characters, verified: \(verified.stdoutLines.first ?? "")")
        }
    }

    /// The README section `title`'s indented lines (4 spaces: commands and config), blank ones left out.
    func readmeLines(_ title: String) throws -> [String] {
        let readme = try String(contentsOfFile: TestFiles.repositoryRoot + "/README.md", encoding: .utf8)
        guard let start = readme.range(of: "## " + title + "\n") else {
            XCTFail("README has no \"\(title)\" section")
            return []
        }
        let rest = readme[start.upperBound...]
        let body = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        return body.split(separator: "\n").filter { $0.hasPrefix("    ") && $0.count > 4 }.map { String($0.dropFirst(4)) }
    }

    /// The INI lines among `lines`: sections and `key = value`.
    func configLines(_ lines: [String]) -> [String] { lines.filter { $0.hasPrefix("[") || $0.contains(" = ") } }

    func testTheControllerDoorConfigChecks() throws {
        let config = configLines(try readmeLines("A door with a controller"))
        XCTAssertEqual(config.first, "[camera]")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try TestFiles.write(config.joined(separator: "\n") + "\n", to: dir + "/scangate.conf")
        let check = try ScangateProcess.run(["check-config", dir + "/scangate.conf"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stdoutText.contains("serial = /dev/scangate-serial"), check.stdoutText)
    }

    func testTheRevocationConfigChecks() throws {
        let all = configLines(try readmeLines("Revocation, hours and anti-passback"))
        let config = Array(all.prefix(5))
        XCTAssertEqual(config, ["[credential]", "credential-status-list = /etc/scangate/status-lists", "[policy]",
                                "policy-file = /etc/scangate/site-policy.jwt", "policy-stale = deny"])
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try TestFiles.write(config.joined(separator: "\n") + "\n", to: dir + "/scangate.conf")
        let check = try ScangateProcess.run(["check-config", dir + "/scangate.conf"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stdoutText.contains("credential-status-list = /etc/scangate/status-lists"), check.stdoutText)
        XCTAssertTrue(check.stdoutText.contains("policy-stale = deny"), check.stdoutText)
        XCTAssertTrue(check.stdoutText.contains("policy-file = /etc/scangate/site-policy.jwt"), check.stdoutText)

        // The MQTT block, with signed passes on (mqtt-policy needs them).
        let mqtt = Array(all.dropFirst(5))
        XCTAssertEqual(mqtt, ["[mqtt]", "mqtt-host = broker.example.org", "mqtt-policy = yes", "mqtt-site-topic = scangate-site"])
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/passes"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let passes = ["[credential]", "credential-format = jwt", "credential-keys = \(dir)/passes/credential-keys.jwks"]
        try TestFiles.write((passes + mqtt).joined(separator: "\n") + "\n", to: dir + "/mqtt.conf")
        let mqttCheck = try ScangateProcess.run(["check-config", dir + "/mqtt.conf"])
        XCTAssertEqual(mqttCheck.status, 0, mqttCheck.stderr)
        XCTAssertTrue(mqttCheck.stdoutText.contains("mqtt-site-topic = scangate-site"), mqttCheck.stdoutText)
        // Without signed passes the same block is refused, in one line naming the option.
        try TestFiles.write(mqtt.joined(separator: "\n") + "\n", to: dir + "/no-passes.conf")
        let refused = try ScangateProcess.run(["check-config", dir + "/no-passes.conf"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("mqtt-policy: a site policy decides on signed passes"), refused.stderr)
    }

    /// The signed-pass section as an installer runs it: keygen, issue, verify, and the config checked
    /// with the keys keygen wrote; the pass is accepted by a verify that uses the config's audience.
    func testTheSignedPassDoorCommandsAndConfigAgree() throws {
        let lines = try readmeLines("A door with signed passes")
        let commands = lines.filter { $0.hasPrefix("scangate ") || $0.hasPrefix("scp ") }
        let config = configLines(lines)
        XCTAssertEqual(config.first, "[credential]")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func local(_ text: String) -> String {
            text.replacingOccurrences(of: "/root/passes", with: dir + "/passes")
                .replacingOccurrences(of: "/etc/scangate/credential-keys.jwks", with: dir + "/passes/credential-keys.jwks")
                .replacingOccurrences(of: "/etc/scangate/scangate.conf", with: dir + "/scangate.conf")
                .replacingOccurrences(of: " pass.png", with: " \(dir)/pass.png")
        }
        try TestFiles.write(local(config.joined(separator: "\n")) + "\n", to: dir + "/scangate.conf")
        var ran = 0
        for line in commands {
            let command = String(line.split(separator: "#", maxSplits: 1)[0]).trimmingCharacters(in: .whitespaces)
            guard command.hasPrefix("scangate ") else { continue }   // scp to the kiosk
            var args = local(command).split(separator: " ").map(String.init).dropFirst().map { $0 }
            if args.starts(with: ["credential", "issue"]) {
                // KID.key: the one file keygen wrote.
                let key = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dir + "/passes").first { $0.hasSuffix(".key") })
                args = args.map { $0.hasSuffix("/KID.key") ? dir + "/passes/" + key : $0 }
            }
            if args.starts(with: ["credential", "verify"]) { args += ["--credential-require-synced-clock=no"] }
            let result = try ScangateProcess.run(args)
            XCTAssertEqual(result.status, 0, "\(command): \(result.stdoutText) \(result.stderr)")
            ran += 1
        }
        XCTAssertEqual(ran, 3, "keygen, issue, verify")
        let check = try ScangateProcess.run(["check-config", dir + "/scangate.conf"])
        XCTAssertEqual(check.status, 0, check.stderr)
        // The pass the README issues is for the audience its config sets.
        let audience = try XCTUnwrap(config.first { $0.hasPrefix("credential-audience = ") }?.dropFirst("credential-audience = ".count))
        let verified = try ScangateProcess.run(["credential", "verify", "--image", dir + "/pass.png", "--keys", dir + "/passes/credential-keys.jwks",
                                                "--aud", String(audience), "--require-synced-clock", "no"])
        XCTAssertEqual(verified.status, 0, verified.stdoutText + verified.stderr)
    }

    /// docs/signed-passes.md's holder-bound examples (the sd-jwt reference implementation, PyJWT, cwt): each
    /// presentation is accepted once by a verify that requires holder binding.
    func testHolderBoundExamplesRunAndTheirPresentationsVerify() throws {
        let blocks = try pythonBlocks("## Passes bound to a phone", until: "## Revocation: Token Status Lists")
        XCTAssertEqual(blocks.count, 3, "the sd-jwt, PyJWT and cwt examples")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        XCTAssertEqual(try ScangateProcess.run(["credential", "keygen", "--out", dir + "/keys", "--kid", "site-2025"]).status, 0)
        try FileManager.default.copyItem(atPath: dir + "/keys/site-2025.key", toPath: dir + "/signing-key.pem")
        for (n, block) in blocks.enumerated() {
            let presentation = try runExample(block, printing: "qr_text", in: dir)
            XCTAssertEqual(presentation.hasPrefix("SG2:"), n == 2, presentation)
            let verify = ["credential", "verify", presentation, "--credential-keys", dir + "/keys/credential-keys.jwks",
                          "--credential-audience", "front-door", "--credential-holder-binding", "require",
                          "--credential-replay-store", dir + "/replay", "--no-credential-require-synced-clock"]
            let verified = try ScangateProcess.run(verify)
            XCTAssertEqual(verified.status, 0, "example \(n + 1): \(verified.stdoutText) \(verified.stderr)")
            XCTAssertTrue(verified.stdoutText.contains("number 12345678, kid site-2025"), verified.stdoutText)
            XCTAssertTrue(try ScangateProcess.run(verify).stdoutText.contains("presentation-replayed"), "example \(n + 1) shown twice")
            print("holder-bound example \(n + 1): \(presentation.count) characters, verified: \(verified.stdoutLines.first ?? "")")
        }
    }

    /// The README's holder-binding commands and config, as an installer runs them.
    func testThePhoneBoundPassCommandsAndConfigAgree() throws {
        let lines = try readmeLines("Passes bound to a phone")
        let commands = lines.filter { $0.hasPrefix("scangate ") }
        let config = configLines(lines)
        XCTAssertEqual(config.first, "[credential]")
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        XCTAssertEqual(try ScangateProcess.run(["credential", "keygen", "--out", dir + "/passes"]).status, 0, "the site's key, as in \"A door with signed passes\"")
        func local(_ text: String) -> String {
            text.replacingOccurrences(of: "/root/", with: dir + "/")
                .replacingOccurrences(of: "/etc/scangate/credential-keys.jwks", with: dir + "/passes/credential-keys.jwks")
                .replacingOccurrences(of: "/etc/scangate/scangate.conf", with: dir + "/scangate.conf")
                .replacingOccurrences(of: "/var/lib/scangate/", with: dir + "/")
                .replacingOccurrences(of: " pass.txt", with: " \(dir)/pass.txt").replacingOccurrences(of: " now.png", with: " \(dir)/now.png")
        }
        try TestFiles.write(local(config.joined(separator: "\n")) + "\n", to: dir + "/scangate.conf")
        XCTAssertEqual(try ScangateProcess.run(["check-config", dir + "/scangate.conf"]).status, 0)
        var ran = 0
        for line in commands {
            let command = String(line.split(separator: "#", maxSplits: 1)[0]).trimmingCharacters(in: .whitespaces)
            var args = local(command).split(separator: " ").map(String.init).dropFirst().map { $0 }
            // KID.key: the one key keygen wrote in that folder.
            args = try args.map { arg in
                guard arg.hasSuffix("/KID.key") else { return arg }
                let folder = String(arg.dropLast("/KID.key".count))
                let key = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".key") })
                return folder + "/" + key
            }
            var output: String?
            if let redirect = args.firstIndex(of: ">") {
                output = args[redirect + 1]
                args = Array(args[..<redirect])
            }
            if args.starts(with: ["credential", "verify"]) { args += ["--credential-require-synced-clock=no"] }
            let result = try ScangateProcess.run(args)
            XCTAssertEqual(result.status, 0, "\(command): \(result.stdoutText) \(result.stderr)")
            if let output { try TestFiles.write(result.stdoutText, to: output) }
            ran += 1
        }
        XCTAssertEqual(ran, 4, "keygen, issue, present, verify")
        // The presentation was consumed by verify (the config's replay store): shown again, it is refused.
        let again = try ScangateProcess.run(["credential", "verify", "--image", dir + "/now.png", "--config", dir + "/scangate.conf",
                                             "--credential-require-synced-clock=no"])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stdoutText.contains("presentation-replayed"), again.stdoutText)
    }
}
