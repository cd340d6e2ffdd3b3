import Core
@testable import Credentials
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `scangate policy verify FILE` and `scangate policy show` as a site's installer runs them, on status lists
/// made by an issuer that is not ours (Python's zlib and PyJWT, Peers/statuslist_peer.py), with the rollback
/// guard and the kept copies written by the real daemon: what is printed, the JSON, the exit codes, and that
/// neither command changes a byte on disk.
final class PolicyCommandTests: XCTestCase {
    var dir = ""
    let uri = "https://s/1"
    /// Read once per test, so that every iat a test writes and expects is from the same second.
    var now: Int64 = 0
    var jwks: String { dir + "/site.jwks" }
    var state: String { dir + "/policy-state" }

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        now = CredentialFixtures.now
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A status list token file from the peer (the site key and site.jwks are made on the first call).
    @discardableResult
    func writeList(_ file: String, _ args: [String]) throws -> String {
        let result = try PythonPeers.run("statuslist_peer.py", ["list", dir, dir + "/" + file, "--uri", uri] + args)
        XCTAssertEqual(result.status, 0)
        return dir + "/" + file
    }

    func token(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The flags that point the commands at this test's keys and state file.
    var settings: [String] { ["--credential-keys", jwks, "--policy-state-file", state] }

    /// The daemon, started on a blank scene, loads `list`: it records its iat in the state file and keeps a
    /// copy beside it, as at a kiosk.
    func runDaemon(list: String) throws {
        let scene = dir + "/blank.scenario"
        try TestFiles.write("size 320x320\nfps 30\nbackground 255\nframes 3\n", to: scene)
        let result = try ScangateProcess.run(["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "jwt",
                                              "--credential-status-list", list, "--credential-require-synced-clock=no"] + settings, timeout: 120)
        XCTAssertEqual(result.status, 0, result.stderr)
    }

    /// Each path under the state file (itself, the kept folder, each kept copy) with its bytes and mtime.
    func snapshot() throws -> [String: String] {
        var paths = [state, StatusListSet.keptDirectory(state)]
        paths += ((try? FileManager.default.contentsOfDirectory(atPath: StatusListSet.keptDirectory(state))) ?? []).map {
            StatusListSet.keptDirectory(state) + "/" + $0
        }
        var out: [String: String] = [:]
        for path in paths {
            var info = stat()
            guard lstat(path, &info) == 0 else { out[path] = "absent"; continue }
            let bytes = (info.st_mode & S_IFMT) == S_IFDIR ? "dir" : (FileManager.default.contents(atPath: path)?.base64EncodedString() ?? "unreadable")
            out[path] = "\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_size) \(bytes)"
        }
        return out
    }

    func json(_ result: ScangateProcess.Result, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        XCTAssertEqual(result.stdoutLines.count, 1, result.stdoutText, file: file, line: line)
        return try JSONValue.parse(result.stdoutText)
    }

    func testVerifyPrintsTheListAndItsFingerprintAndExits0() throws {
        let iat = now - 60
        let list = try writeList("list.jwt", ["--size", "16", "--bits", "2", "--set", "5=1", "--iat", String(iat),
                                              "--exp", String(iat + 86400), "--ttl", "3600"])
        let fingerprint = TokenFingerprint.describe(Array(try token(list).utf8))
        XCTAssertTrue(fingerprint.hasPrefix(String(try token(list).prefix(8)) + "... \(try token(list).utf8.count) bytes, sha256 "), fingerprint)
        let result = try ScangateProcess.run(["policy", "verify", list] + settings)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertEqual(result.stdoutLines.first, "\(list): would be used")
        let text = result.stdoutText
        for expected in ["  uri \"https://s/1\"\n", "  entries 16 of 2 bits\n", "  kid site\n",
                         "  iat \(CredentialVerifier.time(Double(iat))) (\(iat), ", "  exp \(CredentialVerifier.time(Double(iat + 86400))) (",
                         "  ttl 3600 s\n", "  fingerprint \(fingerprint)\n", "nothing held yet (a first start)"] {
            XCTAssertTrue(text.contains(expected), "missing \(expected) in\n\(text)")
        }
        XCTAssertFalse(text.contains(String(try token(list).suffix(40))), "the token is printed")
        // The same from the kiosk's config file, as JSON.
        try TestFiles.write("[credential]\ncredential-keys = \(jwks)\n[policy]\npolicy-state-file = \(state)\n", to: dir + "/scangate.conf")
        let viaConfig = try ScangateProcess.run(["policy", "verify", "--config", dir + "/scangate.conf", list, "--json"])
        XCTAssertEqual(viaConfig.status, 0, viaConfig.stderr)
        let object = try json(viaConfig)
        XCTAssertEqual(object["verdict"]?.stringValue, "accepted")
        XCTAssertEqual(object["file"]?.stringValue, list)
        XCTAssertEqual(object["uri"]?.stringValue, uri)
        XCTAssertEqual(object["entries"]?.numberValue?.int64, 16)
        XCTAssertEqual(object["bits"]?.numberValue?.int64, 2)
        XCTAssertEqual(object["kid"]?.stringValue, "site")
        XCTAssertEqual(object["iat"]?.numberValue?.int64, iat)
        XCTAssertEqual(object["exp"]?.numberValue?.int64, iat + 86400)
        XCTAssertEqual(object["ttl"]?.numberValue?.int64, 3600)
        XCTAssertEqual(object["expired"]?.boolValue, false)
        XCTAssertEqual(object["fingerprint"]?.stringValue, fingerprint)
        XCTAssertEqual(object["guard_iat"], .null)
        XCTAssertEqual(object["state_file"]?.stringValue, state)
        // Nothing was written: no state file, no kept copies.
        XCTAssertFalse(FileManager.default.fileExists(atPath: state), "policy verify wrote the rollback guard")
        XCTAssertFalse(FileManager.default.fileExists(atPath: StatusListSet.keptDirectory(state)), "policy verify kept a copy")
        // A list past its exp is still used (exit 0); the line says what its passes meet under policy-stale.
        let stale = try writeList("stale.jwt", ["--size", "8", "--iat", String(now - 7200), "--exp", String(now - 3600)])
        let expired = try ScangateProcess.run(["policy", "verify", stale] + settings)
        XCTAssertEqual(expired.status, 0, expired.stderr)
        XCTAssertTrue(expired.stdoutText.contains(" (\(now - 3600), EXPIRED 36"), expired.stdoutText)
        XCTAssertTrue(expired.stdoutText.contains("its passes are refused as policy-stale (policy-stale = deny))"), expired.stdoutText)
        let allowKnown = try ScangateProcess.run(["policy", "verify", stale, "--policy-stale", "allow-known", "--json"] + settings)
        XCTAssertEqual(try json(allowKnown)["expired"]?.boolValue, true)
        XCTAssertEqual(try json(allowKnown)["policy_stale"]?.stringValue, "allow-known")
        print("policy verify: \(result.stdoutLines.first ?? ""); \(fingerprint)")
    }

    /// A CWT list (raw COSE_Sign1 bytes, and the same in hex): verified as CWT, its form said, and refused
    /// with its reason when its typ is not the status list's; neither form is printed whole.
    func testVerifyReadsACWTListInBinaryAndHex() throws {
        let binary = try writeList("list.cwt", ["--size", "16", "--set", "5=1", "--form", "cwt", "--ttl", "60"])
        let hex = try writeList("list.hex", ["--size", "16", "--set", "5=1", "--form", "cwt", "--encoding", "hex"])
        for list in [binary, hex] {
            let bytes = Array(FileManager.default.contents(atPath: list) ?? Data())
            let result = try ScangateProcess.run(["policy", "verify", list] + settings)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdoutLines.first, "\(list): would be used")
            for expected in ["  uri \"https://s/1\"\n", "  form statuslist+cwt (COSE_Sign1)\n", "  entries 16 of 1 bit\n", "  kid site\n",
                             "  fingerprint \(TokenFingerprint.describe(bytes))\n"] {
                XCTAssertTrue(result.stdoutText.contains(expected), "missing \(expected) in\n\(result.stdoutText)")
            }
            let asJSON = try json(try ScangateProcess.run(["policy", "verify", list, "--json"] + settings))
            XCTAssertEqual(asJSON["format"]?.stringValue, "cwt")
        }
        XCTAssertFalse(try ScangateProcess.run(["policy", "verify", hex] + settings).stdoutText.contains(String(try token(hex).suffix(40))))
        let wrong = try writeList("wrong.cwt", ["--size", "16", "--form", "cwt", "--typ", "application/cwt"])
        let refused = try ScangateProcess.run(["policy", "verify", wrong] + settings)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("\(wrong) (") && refused.stderr.contains("typ (16) is \"application/cwt\""), refused.stderr)
    }

    func testARolledBackListIsRefusedWithExit1AndNothingChanges() throws {
        let newer = try writeList("list.jwt", ["--size", "8", "--iat", String(now - 10)])
        try runDaemon(list: newer)
        XCTAssertEqual(try String(contentsOfFile: state, encoding: .utf8), "{\"status_lists\":[{\"uri\":\"https://s/1\",\"iat\":\(now - 10)}]}\n")
        let before = try snapshot()
        // An older list, correctly signed, that revokes entry 1: the daemon would refuse it.
        let older = try writeList("older.jwt", ["--size", "8", "--set", "1=1", "--iat", String(now - 100)])
        let refused = try ScangateProcess.run(["policy", "verify", older] + settings)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        let lines = refused.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.hasPrefix("scangate: policy verify: \(older) ("), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("refused: rolled back: iat \(CredentialVerifier.time(Double(now - 100))) is older than "
                                              + "\(CredentialVerifier.time(Double(now - 10)))"), refused.stderr)
        XCTAssertEqual(refused.stdoutLines.first, "\(older): refused (rolled back)")
        XCTAssertTrue(refused.stdoutText.contains("this list is older: refused"), refused.stdoutText)
        let object = try json(try ScangateProcess.run(["policy", "verify", older, "--json"] + settings))
        XCTAssertEqual(object["verdict"]?.stringValue, "refused")
        XCTAssertTrue(object["reason"]?.stringValue?.hasPrefix("rolled back: iat ") == true, "\(object)")
        XCTAssertEqual(object["iat"]?.numberValue?.int64, now - 100)
        XCTAssertEqual(object["guard_iat"]?.numberValue?.int64, now - 10)
        // The list the guard holds, and a newer one, would be used.
        let same = try ScangateProcess.run(["policy", "verify", newer] + settings)
        XCTAssertEqual(same.status, 0, same.stderr)
        XCTAssertTrue(same.stdoutText.contains("this list has the same iat"), same.stdoutText)
        let newest = try writeList("newest.jwt", ["--size", "8", "--iat", String(now - 1)])
        let ahead = try ScangateProcess.run(["policy", "verify", newest] + settings)
        XCTAssertEqual(ahead.status, 0, ahead.stderr)
        XCTAssertTrue(ahead.stdoutText.contains("this list is newer: the daemon would record its iat"), ahead.stdoutText)
        XCTAssertEqual(try snapshot(), before, "policy verify changed the state file or the kept copies")
        print("policy verify of a rolled-back list: exit \(refused.status): \(refused.stderr)")
    }

    func testATamperedSignatureIsRefusedWithItsReason() throws {
        let list = try writeList("list.jwt", ["--size", "8"])
        var parts = try token(list).split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        // One character of the signature changed (still base64url).
        let first = parts[2].removeFirst()
        parts[2] = (first == "A" ? "B" : "A") + parts[2]
        let tampered = dir + "/tampered.jwt"
        try TestFiles.write(parts.joined(separator: ".") + "\n", to: tampered)
        let result = try ScangateProcess.run(["policy", "verify", tampered] + settings)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdoutText, "")
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.hasPrefix("scangate: policy verify: \(tampered) (eyJ"), result.stderr)
        XCTAssertTrue(result.stderr.contains("): refused: bad-signature: "), result.stderr)
        XCTAssertFalse(result.stderr.contains(parts[2]), "the token is printed")
        let object = try json(try ScangateProcess.run(["policy", "verify", tampered, "--json"] + settings))
        XCTAssertEqual(object["verdict"]?.stringValue, "refused")
        XCTAssertTrue(object["reason"]?.stringValue?.hasPrefix("bad-signature: ") == true, "\(object)")
        XCTAssertEqual(object["uri"], nil, "an unverified list's claims are not shown")
        // A list signed by the right key with an algorithm the kiosk does not allow is refused too, and says what is allowed.
        let algorithm = try ScangateProcess.run(["policy", "verify", list, "--credential-algorithms", "es256"] + settings)
        XCTAssertEqual(algorithm.status, 1)
        XCTAssertTrue(algorithm.stderr.contains("alg \"EdDSA\" is not in credential-algorithms (es256)"), algorithm.stderr)
        print("policy verify of a tampered list: \(result.stderr)")
    }

    func testBadUsageExits2WithOneLine() throws {
        let list = try writeList("list.jwt", ["--size", "8"])
        let cases: [([String], String)] = [
            (["policy", "verify"] + settings, "policy verify needs a FILE"),
            (["policy", "verify", list, list] + settings, "policy verify takes one FILE, not 2"),
            (["policy", "verify", list, "--frobnicate"] + settings, "unknown option '--frobnicate' (see scangate policy --help)"),
            (["policy", "verify", list, "--policy-state-file", state], "policy needs --credential-keys PATH or --config FILE with credential-keys"),
            (["policy", "verify", dir + "/absent.jwt"] + settings, "policy verify \(dir)/absent.jwt: "),
            (["policy", "verify", list, "--policy-state-file", "relative", "--credential-keys", jwks], "--policy-state-file: 'relative' must be an absolute path"),
            (["policy", "show"] + settings, "policy show needs --policy-file PATH or --credential-status-list PATH"),
            (["policy", "show", "--credential-status-list", dir + "/absent.jwt"] + settings, "credential-status-list \(dir)/absent.jwt: "),
            (["policy", "show", "--config", dir + "/absent.conf"], "absent.conf"),
            (["policy"], "policy needs verify or show"),
            (["policy", "revoke"], "policy: unknown subcommand 'revoke' (verify, show)"),
        ]
        for (arguments, expected) in cases {
            let result = try ScangateProcess.run(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("scangate: ") && result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdoutText, "", "\(arguments)")
        }
        // A state file changed by hand stops both, naming it.
        try TestFiles.write("{not json", to: state)
        for sub in [["verify", list], ["show", "--credential-status-list", list]] {
            let result = try ScangateProcess.run(["policy"] + sub + settings)
            XCTAssertEqual(result.status, 2, result.stderr)
            XCTAssertTrue(result.stderr.contains("policy-state-file \(state): "), result.stderr)
        }
        for help in [["policy", "--help"], ["policy", "verify", "--help"], ["policy", "show", "--help"]] {
            let result = try ScangateProcess.run(help)
            XCTAssertEqual(result.status, 0)
            XCTAssertTrue(result.stdoutText.hasPrefix("Usage: scangate policy verify FILE"), result.stdoutText)
        }
        let top = try ScangateProcess.run(["--help"])
        XCTAssertTrue(top.stdoutText.contains("\n  policy          status lists as the daemon takes them"), top.stdoutText)
    }

    func testShowListsTheKeptCopyTheRefusedFileAndTheGuard() throws {
        let list = try writeList("list.jwt", ["--size", "8", "--iat", String(now - 10)])
        let kept = try token(list)
        try runDaemon(list: list)
        // The file is replaced by an older list: the daemon would refuse it and keep the copy it verified before.
        try writeList("list.jwt", ["--size", "8", "--set", "1=1", "--iat", String(now - 100)])
        let before = try snapshot()
        let result = try ScangateProcess.run(["policy", "show", "--credential-status-list", list] + settings)
        XCTAssertEqual(result.status, 0, result.stderr)
        let text = result.stdoutText
        let keptFile = StatusListSet.keptPath(state, uri: uri)
        for expected in ["status lists from \(list) (policy-stale = deny); rollback guard \(state)\n", "in force: 1\n",
                         "  from the kept copy \(keptFile) (", "    uri \"https://s/1\"\n", "    entries 8 of 1 bit\n",
                         "    iat \(CredentialVerifier.time(Double(now - 10))) (\(now - 10), ",
                         "    fingerprint \(TokenFingerprint.describe(Array(kept.utf8)))\n",
                         "refused: 1\n  \(list) (", "rolled back: iat \(CredentialVerifier.time(Double(now - 100)))",
                         "rollback guard: 1 uri\n  \"https://s/1\": iat \(CredentialVerifier.time(Double(now - 10)))\n"] {
            XCTAssertTrue(text.contains(expected), "missing \(expected) in\n\(text)")
        }
        XCTAssertFalse(text.contains(String(kept.suffix(40))), "the token is printed")
        let object = try json(try ScangateProcess.run(["policy", "show", "--credential-status-list", list, "--json"] + settings))
        XCTAssertEqual(object["state_file"]?.stringValue, state)
        XCTAssertEqual(object["policy_stale"]?.stringValue, "deny")
        let lists = object["lists"]?.arrayValue ?? []
        XCTAssertEqual(lists.count, 1, "\(object)")
        XCTAssertEqual(lists.first?["uri"]?.stringValue, uri)
        XCTAssertEqual(lists.first?["source"]?.stringValue, "kept")
        XCTAssertEqual(lists.first?["path"]?.stringValue, keptFile)
        XCTAssertEqual(lists.first?["iat"]?.numberValue?.int64, now - 10)
        XCTAssertEqual(lists.first?["entries"]?.numberValue?.int64, 8)
        XCTAssertEqual(lists.first?["expired"]?.boolValue, false)
        XCTAssertGreaterThanOrEqual(lists.first?["age_s"]?.numberValue?.int64 ?? -1, 10)
        let refused = object["refused"]?.arrayValue?.compactMap(\.stringValue) ?? []
        XCTAssertEqual(refused.count, 1, "\(object)")
        XCTAssertTrue(refused.first?.hasPrefix(list + " (") == true && refused.first?.contains("rolled back") == true, "\(refused)")
        let guardEntries = object["guard"]?.arrayValue ?? []
        XCTAssertEqual(guardEntries.count, 1)
        XCTAssertEqual(guardEntries.first?["uri"]?.stringValue, uri)
        XCTAssertEqual(guardEntries.first?["iat"]?.numberValue?.int64, now - 10)
        XCTAssertEqual(guardEntries.first?["next_start_iat"]?.numberValue?.int64, now - 10)
        XCTAssertEqual(try snapshot(), before, "policy show changed the state file or the kept copies")
        // A newer file in its place: shown from the file, expired or not, and the guard's next iat.
        try writeList("list.jwt", ["--size", "8", "--iat", String(now - 5), "--exp", String(now - 1)])
        let fresh = try json(try ScangateProcess.run(["policy", "show", "--credential-status-list", list, "--json"] + settings))
        XCTAssertEqual(fresh["lists"]?.arrayValue?.first?["source"]?.stringValue, "file")
        XCTAssertEqual(fresh["lists"]?.arrayValue?.first?["path"]?.stringValue, list)
        XCTAssertEqual(fresh["lists"]?.arrayValue?.first?["expired"]?.boolValue, true)
        XCTAssertEqual(fresh["refused"]?.arrayValue?.count, 0)
        XCTAssertEqual(fresh["guard"]?.arrayValue?.first?["iat"]?.numberValue?.int64, now - 10)
        XCTAssertEqual(fresh["guard"]?.arrayValue?.first?["next_start_iat"]?.numberValue?.int64, now - 5)
        XCTAssertEqual(try snapshot(), before, "policy show changed the state file or the kept copies")
        print("policy show:\n\(text)")
    }
}
