import Core
@testable import Credentials
import Foundation
import XCTest

/// `scangate credential keygen|issue|verify` as a user runs them: files, images, exit codes, and one
/// stderr line naming the flag or file for bad input.
final class CredentialCommandTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func keygen() throws -> (key: String, jwks: String) {
        let result = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/issuer", "--kid", "site-1"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdoutText.hasPrefix("kid site-1: private key \(dir)/issuer/site-1.key (mode 0600"), result.stdoutText)
        return (dir + "/issuer/site-1.key", dir + "/issuer/credential-keys.jwks")
    }

    func testIssueToAnImageAndVerifyTheImage() throws {
        let (key, jwks) = try keygen()
        for format in ["cwt", "jwt"] {
            let png = dir + "/pass-\(format).png"
            let issued = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "0042",
                                                  "--ttl", "10m", "--one-time", "--format", format, "--out", png])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let verified = try ScangateProcess.run(["credential", "verify", "--image", png, "--keys", jwks, "--require-synced-clock", "no"])
            XCTAssertEqual(verified.status, 0, verified.stdoutText + verified.stderr)
            XCTAssertTrue(verified.stdoutText.hasPrefix("accepted \(format) pass: number 0042, kid site-1, jti "), verified.stdoutText)
            XCTAssertTrue(verified.stdoutLines[1].hasPrefix("claims {\"sub\":\"0042\""), verified.stdoutText)
        }
        // PGM too, and the terminal drawing: a CWT pass is QR version 7 (45 modules + 2 x 4 quiet = 49 columns).
        let art = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "12345678", "--ttl", "1h", "--one-time"])
        XCTAssertEqual(art.status, 0, art.stderr)
        XCTAssertEqual(art.stdoutLines.count, 25, "49 module rows in half blocks")
        XCTAssertEqual(art.stdoutLines[0].count, 49)
        let pgm = dir + "/pass.pgm"
        XCTAssertEqual(try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "1", "--ttl", "90s", "--out", pgm]).status, 0)
        XCTAssertEqual(try ScangateProcess.run(["credential", "verify", "--image", pgm, "--keys", jwks, "--require-synced-clock", "no"]).status, 0)
    }

    /// `issue --status-uri --status-idx` names the pass's entry in a status list: PyJWT reads the JWT's
    /// status claim as the draft spells it, and the CWT's claim 65535 comes back from verify.
    func testIssueNamesThePassesStatusListEntry() throws {
        let (key, jwks) = try keygen()
        let jwt = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "7", "--ttl", "10m",
                                           "--format", "jwt", "--text", "--status-uri", "https://s/1", "--status-idx", "1234"])
        XCTAssertEqual(jwt.status, 0, jwt.stderr)
        let peer = try PythonPeers.run("pyjwt_peer.py", ["verify", jwks, jwt.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)])
        XCTAssertEqual(peer.status, 0, peer.stdout)
        let claims = try JSONValue.parse(peer.stdout)
        XCTAssertEqual(claims["status"]?["status_list"]?["idx"]?.numberValue?.int64, 1234, peer.stdout)
        XCTAssertEqual(claims["status"]?["status_list"]?["uri"]?.stringValue, "https://s/1", peer.stdout)
        let cwt = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "7", "--ttl", "10m",
                                           "--text", "--status-uri", "https://s/1", "--status-idx", "0"])
        XCTAssertEqual(cwt.status, 0, cwt.stderr)
        let verified = try ScangateProcess.run(["credential", "verify", "--keys", jwks, "--require-synced-clock", "no",
                                                cwt.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)])
        XCTAssertEqual(verified.status, 0, verified.stderr)
        XCTAssertTrue(verified.stdoutText.contains("\"65535\":{\"status_list\":{\"idx\":0,\"uri\":\"https://s/1\"}}"), verified.stdoutText)
        for (args, message) in [(["--status-idx", "3"], "takes --status-uri URI and --status-idx N together"),
                                (["--status-uri", "https://s/1"], "takes --status-uri URI and --status-idx N together"),
                                (["--status-uri", "", "--status-idx", "3"], "--status-uri must be 1 to 2048 bytes"),
                                (["--status-uri", "u", "--status-idx", "-1"], "--status-idx")] {
            let bad = try ScangateProcess.run(["credential", "issue", "--key", key, "--number", "7", "--ttl", "10m", "--text"] + args)
            XCTAssertEqual(bad.status, 2, "\(args)")
            XCTAssertEqual(bad.stderr.split(separator: "\n").count, 1, bad.stderr)
            XCTAssertTrue(bad.stderr.contains(message), bad.stderr)
        }
    }

    func testVerifyRefusalsExitOneAndStdinHandlesEachLine() throws {
        let (key, jwks) = try keygen()
        let good = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "site-1", "--number", "7", "--ttl", "1h", "--text"]).stdoutText
            .trimmingCharacters(in: .newlines)
        let wrongKid = try ScangateProcess.run(["credential", "issue", "--key", key, "--kid", "other", "--number", "7", "--ttl", "1h", "--text"]).stdoutText
            .trimmingCharacters(in: .newlines)
        let refused = try ScangateProcess.run(["credential", "verify", wrongKid, "--keys", jwks, "--require-synced-clock", "no"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stdoutText, "refused: unknown-key: kid \"other\" is not in credential-keys (site-1)\n")
        let audience = try ScangateProcess.run(["credential", "verify", good, "--keys", jwks, "--aud", "door", "--require-synced-clock", "no", "--json"])
        XCTAssertEqual(audience.status, 1)
        XCTAssertTrue(audience.stdoutText.hasPrefix("{\"verdict\":\"rejected\",\"reason\":\"wrong-audience\""), audience.stdoutText)
        // --stdin: one answer per line (CR LF and a last line without a newline included), exit 1 if any was refused.
        let input = dir + "/lines"
        try TestFiles.write(good + "\r\n\n" + wrongKid + "\n" + good, to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
        process.arguments = ["credential", "verify", "--stdin", "--json", "--keys", jwks, "--require-synced-clock", "no"]
        process.standardInput = FileHandle(forReadingAtPath: input)
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(process.terminationStatus, 1)
        XCTAssertEqual(lines.count, 3, "\(lines)")
        XCTAssertTrue(lines[0].hasPrefix("{\"verdict\":\"accepted\""))
        XCTAssertTrue(lines[1].contains("\"reason\":\"unknown-key\""))
        XCTAssertTrue(lines[2].hasPrefix("{\"verdict\":\"accepted\""), "not one-time: accepted again")
    }

    func testBadInputIsOneLineNamingTheFlagOrFile() throws {
        let (key, jwks) = try keygen()
        let writable = dir + "/writable.jwks"
        try FileManager.default.copyItem(atPath: jwks, toPath: writable)
        chmod(writable, 0o666)
        let cases: [([String], String)] = [
            (["credential"], "scangate: credential needs keygen, issue, present or verify"),
            (["credential", "sign"], "scangate: credential: unknown subcommand 'sign'"),
            (["credential", "keygen"], "scangate: credential keygen needs --out DIR"),
            (["credential", "keygen", "--out", dir + "/k", "--algorithm", "rsa"], "scangate: --algorithm: 'rsa' is not ed25519 or es256"),
            (["credential", "keygen", "--out", dir + "/k", "--kid", "a/b"], "scangate: --out \(dir)/k: --kid must be"),
            (["credential", "issue", "--number", "1", "--ttl", "1h"], "scangate: credential issue needs --key FILE"),
            (["credential", "issue", "--key", key, "--ttl", "1h"], "scangate: credential issue needs --number N"),
            (["credential", "issue", "--key", key, "--number", "1"], "scangate: credential issue needs --ttl DURATION"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "0s"], "scangate: --ttl: '0s' is not a duration from 1s to 3650d"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "1y"], "scangate: --ttl: '1y' is not a duration"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "3651d"], "scangate: --ttl: '3651d' is not a duration"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "1h", "--format", "jws"], "scangate: --format: 'jws' is not jwt or cwt"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "1h", "--out", dir + "/p.gif"], "scangate: --out: '\(dir)/p.gif' must end in .png or .pgm"),
            (["credential", "issue", "--key", jwks, "--number", "1", "--ttl", "1h"], "scangate: --key \(jwks): mode 0644 lets group or others read"),
            (["credential", "issue", "--key", dir + "/none.key", "--number", "1", "--ttl", "1h"], "scangate: --key \(dir)/none.key: cannot open"),
            (["credential", "issue", "--key", key, "--number", "1", "--ttl", "1h", "--bogus"], "scangate: credential issue: unknown option --bogus"),
            (["credential", "verify", "x"], "scangate: credential verify needs --credential-keys FILE or --config FILE"),
            (["credential", "verify", "--keys", jwks], "scangate: credential verify takes a TEXT, --image FILE or --stdin"),
            (["credential", "verify", "x", "--stdin", "--keys", jwks], "scangate: credential verify takes a TEXT, --image FILE or --stdin"),
            (["credential", "verify", "x", "--keys", writable], "scangate: --keys \(writable): mode 0666 lets group or others write it"),
            (["credential", "verify", "x", "--keys", dir + "/none.jwks"], "scangate: --keys \(dir)/none.jwks: cannot open"),
            (["credential", "verify", "x", "--keys", jwks, "--leeway", "9999"], "scangate: --leeway: '9999' is not a whole number from 0 to 3600"),
            (["credential", "verify", "x", "--keys", jwks, "--algorithms", "hs256"], "scangate: --algorithms: 'hs256' is not one of ed25519, es256"),
            (["credential", "verify", "x", "--keys", jwks, "--format", "off"], "scangate: --format: 'off' is not jwt, cwt or any"),
            (["credential", "verify", "x", "--keys", jwks, "--require-synced-clock", "maybe"], "scangate: --require-synced-clock: 'maybe' is not yes, no, true, false, on or off"),
            (["credential", "verify", "x", "--keys", jwks, "--one-time", "--replay-store", "relative"], "scangate: --replay-store: 'relative' must be an absolute path"),
            (["credential", "verify", "x", "--keys", jwks, "--one-time", "--replay-store", dir + "/no/dir/store"], "scangate: --replay-store \(dir)/no/dir/store: cannot open"),
            (["credential", "verify", "--image", dir + "/none.png", "--keys", jwks], "scangate: "),
            (["credential", "verify", "--image", jwks, "--keys", jwks], "scangate: "),
        ]
        for (args, expected) in cases {
            let result = try ScangateProcess.run(args)
            XCTAssertEqual(result.status, 2, "\(args): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(args): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix(expected), "\(args): expected '\(expected)', got: \(result.stderr)")
            XCTAssertEqual(result.stdout, [], "\(args)")
        }
        // An image without a QR code names the file.
        let blank = dir + "/blank.pgm"
        try TestFiles.write(bytes: Array("P5\n8 8\n255\n".utf8) + [UInt8](repeating: 255, count: 64), to: blank)
        let none = try ScangateProcess.run(["credential", "verify", "--image", blank, "--keys", jwks])
        XCTAssertEqual(none.status, 2)
        XCTAssertEqual(none.stderr, "scangate: --image \(blank): no QR code found\n")
        // Help exits 0.
        XCTAssertEqual(try ScangateProcess.run(["credential", "--help"]).status, 0)
    }
}
