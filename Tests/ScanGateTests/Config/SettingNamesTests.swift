import Foundation
import XCTest

/// One name and one syntax per setting (issue 27), through the binary: every spelling of a switch,
/// `credential verify --config` with the config's key names, and durations that carry their unit.
final class SettingNamesTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The effective value of `key` that `check-config FILE ARGS...` prints; fails the test on a non-zero exit.
    func effective(_ key: String, _ args: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        let result = try ScangateProcess.run(["check-config", dir + "/scangate.conf"] + args)
        XCTAssertEqual(result.status, 0, "\(args): \(result.stderr)", file: file, line: line)
        return result.stdoutLines.first { $0.hasPrefix(key + " = ") }.map { String($0.dropFirst(key.count + 3)) }
    }

    func testEverySpellingOfASwitchGivesTheRightValue() throws {
        // The file turns fast on and the clock requirement off, so each flag has something to change.
        try TestFiles.write("[camera]\nfast = yes\n[credential]\ncredential-require-synced-clock = off\n", to: dir + "/scangate.conf")
        XCTAssertEqual(try effective("fast", []), "true")
        XCTAssertEqual(try effective("credential-require-synced-clock", []), "false")
        let cases: [([String], String)] = [
            (["--no-fast"], "false"),
            (["--fast=no"], "false"),
            (["--fast", "no"], "false"),
            (["--fast", "off"], "false"),
            (["--fast", "FALSE"], "false"),
            (["--fast=off"], "false"),
            (["--no-fast", "--fast"], "true"),
            (["--no-fast", "--fast", "true"], "true"),
            (["--no-fast", "--fast=yes"], "true"),
            (["--no-fast", "--fast", "on"], "true"),
        ]
        for (args, value) in cases {
            XCTAssertEqual(try effective("fast", args), value, "\(args)")
        }
        let clock: [([String], String)] = [
            (["--credential-require-synced-clock"], "true"),
            (["--credential-require-synced-clock", "yes"], "true"),
            (["--credential-require-synced-clock=true"], "true"),
            (["--credential-require-synced-clock", "no"], "false"),
            (["--no-credential-require-synced-clock"], "false"),
        ]
        for (args, value) in clock {
            XCTAssertEqual(try effective("credential-require-synced-clock", args), value, "\(args)")
        }
        // `--X` followed by another option: the next option is not taken as the switch's value.
        let both = try ScangateProcess.run(["check-config", dir + "/scangate.conf", "--no-fast", "--loop", "--fast"])
        XCTAssertEqual(both.status, 0, both.stderr)
        XCTAssertTrue(both.stdoutLines.contains("loop = true"), both.stdoutText)
        XCTAssertTrue(both.stdoutLines.contains("fast = true"), both.stdoutText)
        // run takes the same spelling (here it stops at the missing file, after the flags were read).
        let run = try ScangateProcess.run(["run", "--credential-require-synced-clock", "no", "--config", dir + "/none.conf"])
        XCTAssertEqual(run.status, 2)
        XCTAssertTrue(run.stderr.contains("none.conf"), run.stderr)
        XCTAssertFalse(run.stderr.contains("unexpected argument"), run.stderr)
    }

    func testABadSwitchWordIsExit2WithOneLineNamingTheFlag() throws {
        try TestFiles.write("", to: dir + "/scangate.conf")
        let cases: [([String], String)] = [
            (["--fast=maybe"], "scangate check-config: --fast: 'maybe' is not yes, no, true, false, on or off\n"),
            (["--fast", "maybe"], "scangate check-config: --fast: 'maybe' is not yes, no, true, false, on or off\n"),
            (["--credential-one-time=2"], "scangate check-config: --credential-one-time: '2' is not yes, no, true, false, on or off\n"),
            (["--no-fast=yes"], "scangate check-config: --no-fast takes no value (write --fast=no or --no-fast)\n"),
        ]
        for (args, expected) in cases {
            let result = try ScangateProcess.run(["check-config", dir + "/scangate.conf"] + args)
            XCTAssertEqual(result.status, 2, "\(args)")
            XCTAssertEqual(result.stderr, expected, "\(args)")
            XCTAssertEqual(result.stdout, [], "\(args)")
        }
        let verify = try ScangateProcess.run(["credential", "verify", "x", "--credential-keys", dir + "/k.jwks",
                                              "--credential-require-synced-clock=maybe"])
        XCTAssertEqual(verify.status, 2)
        XCTAssertEqual(verify.stderr, "scangate: --credential-require-synced-clock: 'maybe' is not yes, no, true, false, on or off\n")
    }

    // MARK: - credential

    func keygenAndIssue(audience: String) throws -> (jwks: String, pass: String) {
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/issuer", "--kid", "site-1"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let issue = try ScangateProcess.run(["credential", "issue", "--key", dir + "/issuer/site-1.key", "--kid", "site-1",
                                             "--number", "4711", "--ttl", "1h", "--aud", audience, "--text"])
        XCTAssertEqual(issue.status, 0, issue.stderr)
        return (dir + "/issuer/credential-keys.jwks", issue.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func testCredentialVerifyReadsTheConfigAndTakesItsKeyNames() throws {
        let (jwks, pass) = try keygenAndIssue(audience: "front-door")
        let conf = dir + "/door.conf"
        try TestFiles.write("""
            [credential]
            credential-format = any
            credential-keys = \(jwks)
            credential-audience = front-door
            credential-require-synced-clock = no

            """, to: conf)
        // The file's keys and audience.
        let fromFile = try ScangateProcess.run(["credential", "verify", "--config", conf, pass])
        XCTAssertEqual(fromFile.status, 0, fromFile.stderr + fromFile.stdoutText)
        XCTAssertTrue(fromFile.stdoutText.hasPrefix("accepted "), fromFile.stdoutText)
        // A flag overrides the file, under the config's name and under the older one.
        for flag in ["--credential-audience", "--aud"] {
            let other = try ScangateProcess.run(["credential", "verify", "--config", conf, flag, "back-door", pass])
            XCTAssertEqual(other.status, 1, "\(flag): " + other.stderr)
            XCTAssertTrue(other.stdoutText.hasPrefix("refused: "), other.stdoutText)
        }
        // Without --config, the config's names as flags, and the older names still.
        let canonical = try ScangateProcess.run(["credential", "verify", "--credential-keys", jwks, "--credential-audience", "front-door",
                                                 "--credential-require-synced-clock=no", "--credential-leeway-s", "0", pass])
        XCTAssertEqual(canonical.status, 0, canonical.stderr + canonical.stdoutText)
        let aliases = try ScangateProcess.run(["credential", "verify", "--keys", jwks, "--aud", "front-door",
                                               "--require-synced-clock", "no", "--leeway", "0", pass])
        XCTAssertEqual(aliases.status, 0, aliases.stderr + aliases.stdoutText)
        // The file's audience, and without it the pass (which has an aud) is refused.
        let noAudience = try ScangateProcess.run(["credential", "verify", "--credential-keys", jwks, "--no-credential-require-synced-clock", pass])
        XCTAssertEqual(noAudience.status, 1, noAudience.stderr + noAudience.stdoutText)
        // An error in the file names the file.
        try TestFiles.write("[credential]\ncredential-leeway-s = 9999\n", to: dir + "/bad.conf")
        let bad = try ScangateProcess.run(["credential", "verify", "--config", dir + "/bad.conf", pass])
        XCTAssertEqual(bad.status, 2)
        XCTAssertEqual(bad.stderr.split(separator: "\n").count, 1, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("bad.conf") && bad.stderr.contains("credential-leeway-s"), bad.stderr)
        // Without keys anywhere: one line naming both ways to give them.
        let none = try ScangateProcess.run(["credential", "verify", pass])
        XCTAssertEqual(none.status, 2)
        XCTAssertEqual(none.stderr.split(separator: "\n").count, 1, none.stderr)
        XCTAssertTrue(none.stderr.contains("--credential-keys") && none.stderr.contains("--config"), none.stderr)
    }

    /// `credential issue --one-time` is spelled as every other switch: a pass issued with it off has no
    /// jti, which a one-time check refuses.
    func testIssueSwitchesTakeEverySpelling() throws {
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/issuer", "--kid", "site-1"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let jwks = dir + "/issuer/credential-keys.jwks"
        for (spelling, accepted) in [(["--one-time"], true), (["--one-time", "yes"], true), (["--one-time=on"], true),
                                     (["--one-time", "no"], false), (["--one-time=off"], false), (["--no-one-time"], false)] {
            let issue = try ScangateProcess.run(["credential", "issue", "--key", dir + "/issuer/site-1.key", "--kid", "site-1",
                                                 "--number", "1", "--ttl", "1h"] + spelling + ["--text"])
            XCTAssertEqual(issue.status, 0, "\(spelling): " + issue.stderr)
            let pass = issue.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            let verify = try ScangateProcess.run(["credential", "verify", "--credential-keys", jwks, "--credential-require-synced-clock=no",
                                                  "--credential-one-time", "--credential-replay-store", dir + "/replay", pass])
            XCTAssertEqual(verify.status, accepted ? 0 : 1, "\(spelling): " + verify.stderr + verify.stdoutText)
            if !accepted { XCTAssertTrue(verify.stdoutText.contains("has no cti"), "\(spelling): " + verify.stdoutText) }
        }
        let bad = try ScangateProcess.run(["credential", "issue", "--key", dir + "/issuer/site-1.key", "--number", "1",
                                           "--ttl", "1h", "--one-time=maybe", "--text"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertEqual(bad.stderr, "scangate: --one-time: 'maybe' is not yes, no, true, false, on or off\n")
    }

    /// On a clock that is not synchronised, verify says how to proceed (a fault stands in for a kiosk
    /// before NTP: the test machine's clock is synchronised).
    func testVerifyOnAnUnsynchronisedClockSaysHowToProceed() throws {
        let (jwks, pass) = try keygenAndIssue(audience: "front-door")
        let args = ["credential", "verify", "--credential-keys", jwks, "--credential-audience", "front-door", pass]
        let refused = try ScangateProcess.run(args, environment: ["SCANGATE_FAULT": "clock-unsynchronised"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stdoutText.hasPrefix("refused: clock not synchronised"), refused.stdoutText)
        XCTAssertTrue(refused.stderr.contains("wait for NTP (timedatectl")
                      && refused.stderr.contains("or pass --credential-require-synced-clock=no for a check that ignores the clock"),
                      refused.stderr)
        let ignoring = try ScangateProcess.run(args + ["--credential-require-synced-clock=no"],
                                               environment: ["SCANGATE_FAULT": "clock-unsynchronised"])
        XCTAssertEqual(ignoring.status, 0, ignoring.stderr + ignoring.stdoutText)
    }

    /// `credential issue --config` makes a pass the kiosk with that file accepts: its audience and
    /// one-time use; a --ttl over its credential-max-lifetime-s is refused.
    func testIssueWithTheKiosksConfigMakesAPassItAccepts() throws {
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/issuer", "--kid", "site-1"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let conf = dir + "/door.conf"
        try TestFiles.write("""
            [credential]
            credential-format = cwt
            credential-keys = \(dir)/issuer/credential-keys.jwks
            credential-audience = front-door
            credential-one-time = yes
            credential-replay-store = \(dir)/replay
            credential-max-lifetime-s = 86400
            credential-require-synced-clock = no

            """, to: conf)
        let issue = try ScangateProcess.run(["credential", "issue", "--config", conf, "--key", dir + "/issuer/site-1.key", "--kid", "site-1",
                                             "--number", "7", "--ttl", "8h", "--text"])
        XCTAssertEqual(issue.status, 0, issue.stderr)
        let pass = issue.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let first = try ScangateProcess.run(["credential", "verify", "--config", conf, pass])
        XCTAssertEqual(first.status, 0, first.stderr + first.stdoutText)
        let again = try ScangateProcess.run(["credential", "verify", "--config", conf, pass])
        XCTAssertEqual(again.status, 1, "one-time: " + again.stdoutText)
        XCTAssertTrue(again.stdoutText.hasPrefix("refused: replayed"), again.stdoutText)
        let long = try ScangateProcess.run(["credential", "issue", "--config", conf, "--key", dir + "/issuer/site-1.key",
                                            "--number", "7", "--ttl", "2d", "--text"])
        XCTAssertEqual(long.status, 2)
        XCTAssertEqual(long.stderr, "scangate: --ttl: 172800 s is longer than credential-max-lifetime-s = 86400 in \(conf); that kiosk would refuse the pass\n")
    }

    func testTTLNeedsAUnit() throws {
        let keygen = try ScangateProcess.run(["credential", "keygen", "--out", dir + "/issuer", "--kid", "site-1"])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let key = dir + "/issuer/site-1.key"
        let bare = try ScangateProcess.run(["credential", "issue", "--key", key, "--number", "1", "--ttl", "8", "--text"])
        XCTAssertEqual(bare.status, 2)
        XCTAssertEqual(bare.stdout, [])
        XCTAssertEqual(bare.stderr, "scangate: --ttl: '8' has no unit; write it with s, m, h or d (90s, 15m, 8h, 7d)\n")
        for ttl in ["8s", "15m", "8h", "7d"] {
            let ok = try ScangateProcess.run(["credential", "issue", "--key", key, "--number", "1", "--ttl", ttl, "--text"])
            XCTAssertEqual(ok.status, 0, "\(ttl): " + ok.stderr)
            XCTAssertFalse(ok.stdoutText.isEmpty, ttl)
        }
    }
}
