import Core
@testable import Credentials
import Foundation
import Platform
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Token Status Lists through `scangate run`, as a site runs it: the lists and the passes made by an issuer
/// that is not ours (Python's zlib and PyJWT, Peers/statuslist_peer.py), shown to the daemon as QR codes in
/// a simulated scene; each pass judged once with its reason in the JSON line and the log.
final class CredentialStatusListRunTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    let uri = "https://s/1"
    var now: Int64 { CredentialFixtures.now }

    /// A status list token file from the peer; returns the site's JWKS.
    @discardableResult
    func writeList(_ file: String, _ args: [String]) throws -> String {
        let result = try PythonPeers.run("statuslist_peer.py", ["list", dir, dir + "/" + file, "--uri", uri] + args)
        XCTAssertEqual(result.status, 0)
        return dir + "/site.jwks"
    }

    /// A PyJWT pass for `sub` whose status names entry `idx` of the list.
    func pass(_ sub: String, idx: Int) throws -> String {
        try PythonPeers.run("statuslist_peer.py", ["pass", dir, "--sub", sub, "--idx", String(idx), "--uri", uri])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A scene showing each token for 4 frames, then 3 blank ones (a `sim:` scenario).
    func scenario(_ tokens: [String]) throws -> String { try PassScene.write(tokens, in: dir) }

    func args(_ scene: String, jwks: String, list: String, extra: [String] = []) -> [String] {
        ["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "jwt", "--credential-keys", jwks,
         "--credential-status-list", dir + "/" + list, "--policy-state-file", dir + "/policy-state",
         "--credential-require-synced-clock=no"] + extra
    }

    /// Runs the daemon to the end of the scene: its exit status, the verdict of each JSON line, the log.
    func run(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> (verdicts: [String], events: [JSONValue], log: String) {
        let result = try ScangateProcess.run(arguments, timeout: 120)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        let events = try result.stdoutLines.map { try JSONValue.parse($0) }
        return (events.map { $0["rejected"]?.stringValue ?? "accepted" }, events, result.stderr)
    }

    func testARevokedPassIsRefusedAndThePassNextToItIsAccepted() throws {
        let jwks = try writeList("list.jwt", ["--size", "16", "--bits", "2", "--set", "5=1,7=2"])
        let tokens = [try pass("1005", idx: 5), try pass("1006", idx: 6), try pass("1007", idx: 7)]
        let out = try run(args(try scenario(tokens), jwks: jwks, list: "list.jwt"))
        XCTAssertEqual(out.verdicts, ["revoked", "accepted", "revoked"], out.log)
        XCTAssertEqual(out.events[1]["credential"]?["number"]?.stringValue, "1006")
        XCTAssertNil(out.events[0]["credential"])
        XCTAssertTrue(out.log.contains("credentials: 1 status list (\"https://s/1\": 16 entries of 2 bits, kid site"), out.log)
        let refusals = out.log.split(separator: "\n").filter { $0.contains("credential refused: revoked (") }
        XCTAssertEqual(refusals.count, 2, out.log)
        XCTAssertTrue(refusals[0].contains("idx 5 is 1 INVALID"), String(refusals[0]))
        XCTAssertTrue(refusals[1].contains("idx 7 is 2 SUSPENDED"), String(refusals[1]))
        // Neither a pass nor the list token is ever printed whole.
        let listToken = String(decoding: FileManager.default.contents(atPath: dir + "/list.jwt") ?? Data(), as: UTF8.self)
        for token in tokens + [listToken.trimmingCharacters(in: .whitespacesAndNewlines)] {
            XCTAssertFalse(out.log.contains(String(token.suffix(40))), "a token is in the log")
        }
        print("status list through run: \(out.verdicts.joined(separator: ", "))")
    }

    /// credential-status-list-keys: lists signed by an issuer of their own are verified with its key set, and
    /// without that option (credential-keys only) the same list is refused and its passes meet policy-stale.
    func testListsSignedByAKeySetOfTheirOwn() throws {
        let listIssuer = dir + "/list-issuer"
        try FileManager.default.createDirectory(atPath: listIssuer, withIntermediateDirectories: true)
        let made = try PythonPeers.run("statuslist_peer.py", ["list", listIssuer, dir + "/own.jwt", "--uri", uri, "--size", "8", "--set", "3=1"])
        XCTAssertEqual(made.status, 0)
        let tokens = [try pass("1103", idx: 3), try pass("1104", idx: 4)]
        let jwks = dir + "/site.jwks"
        let scene = try scenario(tokens)
        let own = try run(args(scene, jwks: jwks, list: "own.jwt", extra: ["--credential-status-list-keys", listIssuer + "/site.jwks"]))
        XCTAssertEqual(own.verdicts, ["revoked", "accepted"], own.log)
        try? FileManager.default.removeItem(atPath: dir + "/policy-state.lists")
        let without = try run(args(scene, jwks: jwks, list: "own.jwt"))
        XCTAssertEqual(without.verdicts, ["policy-stale", "policy-stale"], without.log)
        XCTAssertTrue(without.log.contains("credential-status-list refused: ") && without.log.contains("own.jwt"), without.log)
    }

    /// What a fleet operator sees of revocation on a running daemon: `scangate status` (text and JSON) and
    /// the metrics file count the rejected reads by reason and show the list in force with its iat and exp.
    func testStatusAndMetricsShowTheListInForceAndRejectionsByReason() throws {
        let iat = Int64(Glibc.time(nil)) - 120, exp = iat + 3720
        let jwks = try writeList("list.jwt", ["--size", "16", "--set", "5=1", "--iat", String(iat), "--exp", String(exp)])
        let tokens = [try pass("1005", idx: 5), try pass("1006", idx: 6)]
        // The scene plays in real time with a long blank tail, so the daemon is still running when asked.
        var scene = try String(contentsOfFile: try scenario(tokens), encoding: .utf8)
        scene = scene.replacingOccurrences(of: "frames \(tokens.count * 7 + 3)\n", with: "frames 100000\n")
        let scenePath = dir + "/long.scenario"
        try TestFiles.write(scene, to: scenePath)
        let socket = dir + "/status.sock", metrics = dir + "/scangate.prom"
        let d = try DaemonUnderTest(args(scenePath, jwks: jwks, list: "list.jwt").filter { $0 != "--fast" }
                                    + ["--status-socket", socket, "--metrics-textfile", metrics, "--metrics-interval-s", "1"])
        defer { d.stop() }
        waitUntil(60, failure: "two JSON lines: \(d.stderr.suffix(5))") { d.stdout.count >= 2 }
        let verdicts = try d.stdout.map { try JSONValue.parse($0)["rejected"]?.stringValue ?? "accepted" }
        XCTAssertEqual(verdicts, ["revoked", "accepted"])

        let json = try ScangateProcess.run(["status", "--json", "--status-socket", socket])
        XCTAssertEqual(json.status, 0, json.stderr)
        let doc = try JSONValue.parse(json.stdout)
        XCTAssertEqual(doc["reads"]?["rejected_by_reason"]?["revoked"]?.numberValue?.int64, 1, json.stdoutText)
        XCTAssertNil(doc["reads"]?["rejected_by_reason"]?["policy-stale"], json.stdoutText)
        let lists = doc["status_lists"]?.arrayValue ?? []
        XCTAssertEqual(lists.count, 1, json.stdoutText)
        XCTAssertEqual(lists.first?["uri"]?.stringValue, uri)
        XCTAssertEqual(lists.first?["entries"]?.numberValue?.int64, 16)
        XCTAssertEqual(lists.first?["iat"]?.numberValue?.int64, iat, json.stdoutText)
        XCTAssertEqual(lists.first?["exp"]?.numberValue?.int64, exp, json.stdoutText)
        XCTAssertEqual(lists.first?["kept"]?.boolValue, false)

        let text = try ScangateProcess.run(["status", "--status-socket", socket])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdoutLines.contains("rejected by reason: revoked 1"), text.stdoutText)
        XCTAssertTrue(text.stdoutLines.contains { $0.hasPrefix("status list \(uri): 16 entries, iat ") && $0.contains(" old), exp ") },
                      text.stdoutText)

        var prom = ""
        waitUntil(20, failure: "the rejection in the metrics file: \(prom)") {
            prom = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
            return prom.contains("scangate_reads_rejected_total{reason=\"revoked\"} 1\n")
        }
        XCTAssertTrue(prom.contains("scangate_status_list_issued_timestamp_seconds{uri=\"\(uri)\",source=\"file\"} \(iat)\n"), prom)
        XCTAssertTrue(prom.contains("scangate_status_list_expiry_timestamp_seconds{uri=\"\(uri)\",source=\"file\"} \(exp)\n"), prom)
        XCTAssertTrue(prom.contains("scangate_status_list_entries{uri=\"\(uri)\",source=\"file\"} 16\n"), prom)
        XCTAssertEqual(d.stop(), 0)
    }

    /// CWT passes from the `cwt` package, whose status claim (65535) names entries of the same list.
    func testCWTPassesFromTheCWTPackageAreCheckedAgainstTheList() throws {
        let siteJWKS = try writeList("list.jwt", ["--size", "16", "--set", "5=1"])
        var keys: [JSONValue] = try JSONValue.parse(String(contentsOfFile: siteJWKS, encoding: .utf8))["keys"]?.arrayValue ?? []
        var tokens: [String] = []
        for (n, idx) in [5, 6].enumerated() {
            let peerDir = dir + "/cwt\(n)"
            try FileManager.default.createDirectory(atPath: peerDir, withIntermediateDirectories: true)
            let made = try JSONValue.parse(try PythonPeers.run("cwt_peer.py", ["issue", peerDir, "--key-kid", "cwt-\(n)",
                                                                               "--status-idx", String(idx), "--status-uri", uri]).stdout)
            tokens.append(made["token"]?.stringValue ?? "")
            keys += try JSONValue.parse(String(contentsOfFile: peerDir + "/peer-cwt.jwks", encoding: .utf8))["keys"]?.arrayValue ?? []
        }
        let jwks = dir + "/all.jwks"
        try TestFiles.write("{\"keys\":[" + keys.map(\.text).joined(separator: ",") + "]}", to: jwks)
        XCTAssertEqual(chmod(jwks, 0o644), 0)
        let out = try run(args(try scenario(tokens), jwks: jwks, list: "list.jwt").map { $0 == "jwt" ? "any" : $0 })
        XCTAssertEqual(out.verdicts, ["revoked", "accepted"], out.log)
        XCTAssertEqual(out.events[1]["credential"]?["format"]?.stringValue, "cwt")
        print("cwt package passes through run: \(out.verdicts.joined(separator: ", "))")
    }

    /// A status list in CWT form (the `cwt` package, raw COSE_Sign1 bytes as the draft serves them) decides JWT
    /// and CWT passes alike: each revoked pass is refused, the pass of the next entry accepted.
    func testACWTListRevokesAPassAndThePassNextToItIsAccepted() throws {
        let jwks = try writeList("list.cwt", ["--size", "16", "--set", "5=1,7=1", "--form", "cwt"])
        func cwtPass(_ sub: String, idx: Int) throws -> String {
            try PythonPeers.run("statuslist_peer.py", ["pass", dir, "--sub", sub, "--idx", String(idx), "--uri", uri, "--form", "cwt"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let tokens = [try pass("1005", idx: 5), try pass("1006", idx: 6), try cwtPass("1007", idx: 7), try cwtPass("1008", idx: 8)]
        let out = try run(args(try scenario(tokens), jwks: jwks, list: "list.cwt").map { $0 == "jwt" ? "any" : $0 })
        XCTAssertEqual(out.verdicts, ["revoked", "accepted", "revoked", "accepted"], out.log)
        XCTAssertEqual(out.events[1]["credential"]?["number"]?.stringValue, "1006")
        XCTAssertEqual(out.events[3]["credential"]?["format"]?.stringValue, "cwt")
        XCTAssertEqual(out.events[3]["credential"]?["number"]?.stringValue, "1008")
        XCTAssertTrue(out.log.contains("credentials: 1 status list (\"https://s/1\": CWT, 16 entries of 1 bit, kid site"), out.log)
        let refusals = out.log.split(separator: "\n").filter { $0.contains("credential refused: revoked (") }
        XCTAssertEqual(refusals.count, 2, out.log)
        XCTAssertTrue(refusals.allSatisfy { $0.contains("is 1 INVALID") }, out.log)
        // The list's bytes are kept beside the state file as read.
        XCTAssertEqual(StatusListSet.keptBytes(dir + "/policy-state", uri: uri), Array(FileManager.default.contents(atPath: dir + "/list.cwt") ?? Data()))
        for token in tokens { XCTAssertFalse(out.log.contains(String(token.suffix(40))), "a token is in the log") }
        print("CWT status list through run: \(out.verdicts.joined(separator: ", "))")
    }

    func testAStaleListIsHandledAsPolicyStaleSays() throws {
        let now = self.now
        let jwks = try writeList("stale.jwt", ["--size", "8", "--set", "2=1", "--iat", String(now - 7200), "--exp", String(now - 3600)])
        let tokens = [try pass("2001", idx: 1), try pass("2002", idx: 2)]
        let scene = try scenario(tokens)
        var seen: [String: [String]] = [:]
        for mode in ["deny", "allow-known", "allow"] {
            let out = try run(args(scene, jwks: jwks, list: "stale.jwt", extra: ["--policy-stale", mode]))
            seen[mode] = out.verdicts
            if mode != "deny" {
                XCTAssertTrue(out.log.contains("expired at") && out.log.contains("it still decides (policy-stale = \(mode))"), out.log)
            }
        }
        XCTAssertEqual(seen["deny"], ["policy-stale", "policy-stale"])
        XCTAssertEqual(seen["allow-known"], ["accepted", "revoked"])
        XCTAssertEqual(seen["allow"], ["accepted", "revoked"])
        // The default is deny.
        let byDefault = try run(args(scene, jwks: jwks, list: "stale.jwt"))
        XCTAssertEqual(byDefault.verdicts, ["policy-stale", "policy-stale"])
        print("stale list through run: \(seen.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.joined(separator: ","))" }.joined(separator: "; "))")
    }

    func testARolledBackListIsRefusedAfterARestart() throws {
        let now = self.now
        let jwks = try writeList("list.jwt", ["--size", "8", "--iat", String(now - 10)])
        let scene = try scenario([try pass("3001", idx: 1)])
        let first = try run(args(scene, jwks: jwks, list: "list.jwt"))
        XCTAssertEqual(first.verdicts, ["accepted"], first.log)
        let state = String(decoding: FileManager.default.contents(atPath: dir + "/policy-state") ?? Data(), as: UTF8.self)
        XCTAssertEqual(state, "{\"status_lists\":[{\"uri\":\"https://s/1\",\"iat\":\(now - 10)}]}\n")
        // An older list, correctly signed, that revokes the pass, put in its place: refused at the next start;
        // the newer list, kept beside the state file, stays in force.
        try writeList("list.jwt", ["--size", "8", "--set", "1=1", "--iat", String(now - 100)])
        let second = try run(args(scene, jwks: jwks, list: "list.jwt"))
        XCTAssertEqual(second.verdicts, ["accepted"], second.log)
        XCTAssertTrue(second.log.contains("credential-status-list refused: ") && second.log.contains("rolled back: iat"), second.log)
        XCTAssertTrue(second.log.contains("credential-status-list: the kept copy of \"https://s/1\" stays in force"), second.log)
        XCTAssertEqual(String(decoding: FileManager.default.contents(atPath: dir + "/policy-state") ?? Data(), as: UTF8.self), state,
                       "the rollback guard still holds the newer iat")
        // Without the kept copy the rolled-back list is still refused, and its passes meet policy-stale.
        try FileManager.default.removeItem(atPath: dir + "/policy-state.lists")
        let third = try run(args(scene, jwks: jwks, list: "list.jwt"))
        XCTAssertEqual(third.verdicts, ["policy-stale"], third.log)
        XCTAssertTrue(third.log.contains("its list was refused at start"), third.log)
        print("rollback through run: \(first.verdicts[0]) with iat now-10; after a restart with iat now-100: \(second.verdicts[0]) "
              + "(the kept list), \(third.verdicts[0]) without it")
    }

    /// SIGHUP re-reads the lists with the configuration: a pass accepted on the first list is refused as
    /// revoked after a newer list revokes it, and an older list put back is refused (rolled back) without
    /// a restart, the kept newer one staying in force. The pass stays in a looping scene; each step waits for the log line that says it happened.
    func testSIGHUPReadsANewerListAndRefusesARolledBackOne() throws {
        let now = self.now
        let jwks = try writeList("list.jwt", ["--size", "8", "--iat", String(now - 100)])
        let token = try pass("4001", idx: 5)
        let scene = dir + "/loop.scenario"
        try TestFiles.write("size 320x320\nfps 20\nframes 20\nloop\ncode qr \"\(token)\" frames 0-4 module 3\n", to: scene)
        let daemon = try RunningScangate(args(scene, jwks: jwks, list: "list.jwt").filter { $0 != "--fast" } + ["--hold-off-ms", "300"], in: dir)
        func verdicts() -> [String] { daemon.stdoutLines.compactMap { try? JSONValue.parse($0) }.map { $0["rejected"]?.stringValue ?? "accepted" } }
        func loads() -> Int { daemon.stderrLines.filter { $0.contains("credentials: ") && $0.contains("policy-stale = deny, rollback guard") }.count }
        XCTAssertTrue(waitUntil(60) { verdicts().contains("accepted") }, daemon.stderrText)
        // A newer list that revokes entry 5.
        try writeList("list.jwt", ["--size", "8", "--set", "5=1", "--iat", String(now - 10)])
        var seen = verdicts().count
        kill(daemon.process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(30) { loads() >= 2 }, daemon.stderrText)
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 && verdicts().last == "revoked" }, daemon.stderrText)
        // The first list again (older iat, entry 5 still VALID): refused; the kept newer list stays in force.
        try writeList("list.jwt", ["--size", "8", "--iat", String(now - 100)])
        seen = verdicts().count
        kill(daemon.process.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("rolled back: iat") } }, daemon.stderrText)
        XCTAssertTrue(waitUntil(30) { loads() >= 3 }, daemon.stderrText)
        seen = verdicts().count   // read after the reload from here on (one may still be on its way)
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 }, daemon.stderrText)
        XCTAssertEqual(verdicts().last, "revoked", "the rolled-back list let the revoked pass in")
        XCTAssertTrue(daemon.stderrLines.contains { $0.contains("the kept copy of \"https://s/1\" stays in force") }, daemon.stderrText)
        XCTAssertEqual(daemon.stop(), 0)
        print("SIGHUP through run: \(Array(Set(verdicts())).sorted().joined(separator: ", ")) over \(verdicts().count) reads")
    }

    /// A list changed on disk is read without SIGHUP (inotify): rewritten in place, renamed into place
    /// (a rolled-back one, refused), and in a folder of lists, a new file dropped in.
    func testAChangedListIsReadWithoutSIGHUP() throws {
        let now = self.now
        let jwks = try writeList("list.jwt", ["--size", "8", "--iat", String(now - 100)])
        let token = try pass("4001", idx: 5)
        let scene = dir + "/loop.scenario"
        try TestFiles.write("size 320x320\nfps 20\nframes 20\nloop\ncode qr \"\(token)\" frames 0-4 module 3\n", to: scene)
        let daemon = try RunningScangate(args(scene, jwks: jwks, list: "list.jwt").filter { $0 != "--fast" } + ["--hold-off-ms", "300"], in: dir)
        func verdicts() -> [String] { daemon.stdoutLines.compactMap { try? JSONValue.parse($0) }.map { $0["rejected"]?.stringValue ?? "accepted" } }
        func loads() -> Int { daemon.stderrLines.filter { $0.contains("credentials: ") && $0.contains("policy-stale = deny, rollback guard") }.count }
        func changes() -> Int { daemon.stderrLines.filter { $0.contains("status list change in \(dir) (list.jwt): reloading") }.count }
        XCTAssertTrue(waitUntil(60) { verdicts().contains("accepted") && daemon.stderrLines.contains { $0.contains("status lists: watching") } },
                      daemon.stderrText)
        // Rewritten in place with a newer list that revokes entry 5: no signal.
        try writeList("list.jwt", ["--size", "8", "--set", "5=1", "--iat", String(now - 10)])
        XCTAssertTrue(waitUntil(30) { changes() >= 1 && loads() >= 2 }, daemon.stderrText)
        var seen = verdicts().count
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 && verdicts().last == "revoked" }, daemon.stderrText)
        // The first list again, renamed into place: refused as rolled back; the kept newer list stays in force.
        try writeList("old.jwt", ["--size", "8", "--iat", String(now - 100)])
        XCTAssertEqual(rename(dir + "/old.jwt", dir + "/list.jwt"), 0)
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("rolled back: iat") } && loads() >= 3 }, daemon.stderrText)
        seen = verdicts().count
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 }, daemon.stderrText)
        XCTAssertEqual(verdicts().last, "revoked", "the rolled-back list let the revoked pass in")
        // Other files in the directory are not the list: no reload for them.
        XCTAssertEqual(changes(), 2, daemon.stderrText)
        XCTAssertEqual(daemon.stop(), 0)
        XCTAssertFalse(daemon.stderrLines.contains { $0.contains("SIGHUP") && $0.contains("reloading") }, daemon.stderrText)
    }

    func testANewListInTheFolderIsReadWithoutSIGHUP() throws {
        let now = self.now
        XCTAssertEqual(mkdir(dir + "/lists", 0o755), 0)
        let jwks = try writeList("lists/a.jwt", ["--size", "8", "--iat", String(now - 100)])
        let token = try pass("4001", idx: 5)
        let scene = dir + "/loop.scenario"
        try TestFiles.write("size 320x320\nfps 20\nframes 20\nloop\ncode qr \"\(token)\" frames 0-4 module 3\n", to: scene)
        let daemon = try RunningScangate(args(scene, jwks: jwks, list: "lists").filter { $0 != "--fast" } + ["--hold-off-ms", "300"], in: dir)
        func verdicts() -> [String] { daemon.stdoutLines.compactMap { try? JSONValue.parse($0) }.map { $0["rejected"]?.stringValue ?? "accepted" } }
        XCTAssertTrue(waitUntil(60) { verdicts().contains("accepted") && daemon.stderrLines.contains { $0.contains("status lists: watching \(dir)/lists/") } },
                      daemon.stderrText)
        // A newer list for the same uri, written under a hidden name and renamed in, as an installer does.
        try writeList("lists/.b.tmp", ["--size", "8", "--set", "5=1", "--iat", String(now - 10)])
        XCTAssertEqual(rename(dir + "/lists/.b.tmp", dir + "/lists/b.jwt"), 0)
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("status list change in \(dir)/lists (b.jwt): reloading") } },
                      daemon.stderrText)
        let seen = verdicts().count
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 && verdicts().last == "revoked" }, daemon.stderrText)
        XCTAssertFalse(daemon.stderrLines.contains { $0.contains(".b.tmp") && $0.contains("reloading") }, "a hidden file is not a list")
        XCTAssertEqual(daemon.stop(), 0)
    }

    func testBadStatusListOptionsExit2WithOneLineNamingThem() throws {
        let jwks = try writeList("list.jwt", ["--size", "8"])
        let scene = try scenario([])
        let missing = args(scene, jwks: jwks, list: "list.jwt").map { $0 == dir + "/list.jwt" ? dir + "/absent.jwt" : $0 }
        let a = try ScangateProcess.run(missing)
        XCTAssertEqual(a.status, 2)
        XCTAssertEqual(a.stderr.split(separator: "\n").count, 1, a.stderr)
        XCTAssertTrue(a.stderr.contains("credential-status-list \(dir)/absent.jwt: "), a.stderr)
        // check-config refuses it alike (and records nothing in the state file).
        try TestFiles.write("[credential]\ncredential-format = jwt\ncredential-keys = \(jwks)\ncredential-status-list = \(dir)/absent.jwt\n"
                            + "[policy]\npolicy-state-file = \(dir)/policy-state\n", to: dir + "/scangate.conf")
        let checked = try ScangateProcess.run(["check-config", dir + "/scangate.conf"])
        XCTAssertEqual(checked.status, 2, checked.stderr)
        XCTAssertTrue(checked.stderr.contains("credential-status-list \(dir)/absent.jwt: "), checked.stderr)
        try TestFiles.write("[credential]\ncredential-format = jwt\ncredential-keys = \(jwks)\ncredential-status-list = \(dir)/list.jwt\n"
                            + "[policy]\npolicy-state-file = \(dir)/policy-state\n", to: dir + "/scangate.conf")
        let good = try ScangateProcess.run(["check-config", dir + "/scangate.conf"])
        XCTAssertEqual(good.status, 0, good.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/policy-state"), "check-config wrote the rollback guard")
        let b = try ScangateProcess.run(args(scene, jwks: jwks, list: "list.jwt", extra: ["--policy-stale", "maybe"]))
        XCTAssertEqual(b.status, 2)
        XCTAssertEqual(b.stderr.split(separator: "\n").count, 1, b.stderr)
        XCTAssertTrue(b.stderr.contains("policy-stale") && b.stderr.contains("deny, allow-known, allow"), b.stderr)
        let c = try ScangateProcess.run(args(scene, jwks: jwks, list: "list.jwt", extra: ["--policy-state-file", "relative"]))
        XCTAssertEqual(c.status, 2)
        XCTAssertTrue(c.stderr.contains("--policy-state-file: 'relative' must be an absolute path"), c.stderr)
    }
}
