import Core
@testable import Credentials
import Foundation
import Platform
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The signed site policy (policy-file) through `scangate run`, as a site runs it: the document signed by
/// an issuer that is not ours (PyJWT, and the `cwt` package's COSE; Peers/policy_peer.py), the passes by
/// PyJWT, shown to the daemon as QR codes in a simulated scene. Hours at the daylight-saving changes are
/// checked against Python's zoneinfo, with the daemon's wall clock set by Debian's faketime.
final class SitePolicyRunTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    var now: Int64 { Int64(Glibc.time(nil)) }

    /// Signs `doc` into `file` (JWS, or `form: "cwt"`); returns the site's JWKS.
    @discardableResult
    func writePolicy(_ file: String, _ doc: String, extra: [String] = []) throws -> String {
        let result = try PythonPeers.run("policy_peer.py", ["policy", dir, dir + "/" + file, "--doc", doc] + extra)
        XCTAssertEqual(result.status, 0)
        return dir + "/site.jwks"
    }

    func pass(_ sub: String, group: String? = nil, iat: Int64? = nil, exp: Int64? = nil) throws -> String {
        var args = ["pass", dir, "--sub", sub]
        if let group { args += ["--grp", group] }
        if let iat { args += ["--iat", String(iat)] }
        if let exp { args += ["--exp", String(exp)] }
        return try PythonPeers.run("policy_peer.py", args).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A scene showing each token for 4 frames, then 3 blank ones.
    func scenario(_ tokens: [String]) throws -> String { try PassScene.write(tokens, in: dir) }

    func args(_ scene: String, policy: String = "policy.jwt", extra: [String] = []) -> [String] {
        ["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "any", "--credential-keys", dir + "/site.jwks",
         "--policy-file", dir + "/" + policy, "--policy-state-file", dir + "/policy-state",
         "--credential-require-synced-clock=no"] + extra
    }

    func run(_ arguments: [String], launcher: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> (verdicts: [String], log: String) {
        var environment: [String: String] = [:]
        if !launcher.isEmpty {
            environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            environment["TZ"] = "UTC"
        }
        let result = try ScangateProcess.run(arguments, timeout: 120, environment: environment, launcher: launcher,
                                             executable: launcher.isEmpty ? nil : CredentialTrustTests.fakedClockBinary)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        let events = try result.stdoutLines.map { try JSONValue.parse($0) }
        return (events.map { $0["rejected"]?.stringValue ?? "accepted" }, result.stderr)
    }

    func document(ver: Int, iat: Int64, exp: Int64, tz: String = "UTC", groups: String = "{}", holidays: String = "[]",
                  deny: String = "[]") -> String {
        "{\"ver\":\(ver),\"iat\":\(iat),\"exp\":\(exp),\"tz\":\"\(tz)\",\"door\":{\"id\":\"north-1\",\"role\":\"both\"},"
            + "\"groups\":\(groups),\"holidays\":\(holidays),\"antipassback\":{\"mode\":\"off\"},\"deny\":\(deny)}"
    }

    static let openAndClosed = "{\"open\":{\"schedule\":[{\"days\":[\"mon\",\"tue\",\"wed\",\"thu\",\"fri\",\"sat\",\"sun\"],\"from\":\"00:00\",\"to\":\"24:00\"}]},"
        + "\"closed\":{\"schedule\":[]}}"

    func testTheDenyListAndTheGroupsDecideAndEachRefusalSaysWhy() throws {
        let now = self.now
        try writePolicy("policy.jwt", document(ver: 3, iat: now - 60, exp: now + 3600, groups: Self.openAndClosed, deny: "[\"4711\", 90210]"))
        let tokens = [try pass("4711", group: "open"), try pass("1001", group: "open"), try pass("1002", group: "closed"),
                      try pass("1003", group: "nobody"), try pass("1004"), try pass("90210")]
        let out = try run(args(try scenario(tokens)))
        XCTAssertEqual(out.verdicts, ["revoked", "accepted", "outside-schedule", "outside-schedule", "accepted", "revoked"], out.log)
        XCTAssertTrue(out.log.contains("credentials: site policy ver 3, door \"north-1\" role both, tz \"UTC\", 2 groups with 1 windows, 0 holidays, 2 denied numbers"), out.log)
        XCTAssertTrue(out.log.contains("number 4711 is on the deny list of site policy ver 3"), out.log)
        XCTAssertTrue(out.log.contains("is outside the hours of group \"closed\""), out.log)
        XCTAssertTrue(out.log.contains("group \"nobody\" is not in site policy ver 3"), out.log)
        let state = String(decoding: FileManager.default.contents(atPath: dir + "/policy-state") ?? Data(), as: UTF8.self)
        XCTAssertEqual(state, "{\"status_lists\":[],\"policy\":{\"ver\":3,\"iat\":\(now - 60)}}\n")
        for token in tokens { XCTAssertFalse(out.log.contains(String(token.suffix(40))), "a pass is in the log") }
    }

    /// The COSE_Sign1 form, signed by the `cwt` package's COSE, binary and hex, decides as the JWS does.
    func testTheCOSEFormFromTheCWTPackageDecidesAsTheJWSDoes() throws {
        let now = self.now
        let doc = document(ver: 1, iat: now - 60, exp: now + 3600, groups: Self.openAndClosed, deny: "[\"4711\"]")
        try writePolicy("policy.cose", doc, extra: ["--form", "cwt"])
        try writePolicy("policy.hex", doc, extra: ["--form", "cwt", "--encoding", "hex"])
        let scene = try scenario([try pass("4711"), try pass("1001", group: "open"), try pass("1002", group: "closed")])
        for file in ["policy.cose", "policy.hex"] {
            try? FileManager.default.removeItem(atPath: dir + "/policy-state")
            let out = try run(args(scene, policy: file))
            XCTAssertEqual(out.verdicts, ["revoked", "accepted", "outside-schedule"], out.log)
        }
        // A COSE document whose typ is a status list's is refused, and without a kept copy its passes meet policy-stale.
        try writePolicy("policy.wrongtyp", doc, extra: ["--form", "cwt", "--typ", "application/statuslist+cwt"])
        try? FileManager.default.removeItem(atPath: dir + "/policy-state.policy")
        let out = try run(args(scene, policy: "policy.wrongtyp"))
        XCTAssertEqual(out.verdicts, ["policy-stale", "policy-stale", "policy-stale"], out.log)
        XCTAssertTrue(out.log.contains("site policy refused: policy-file \(dir)/policy.wrongtyp: typ (16) is \"application/statuslist+cwt\""), out.log)
    }

    /// Hours in the site's zone on the days its clocks change, with the daemon's clock set there: each verdict
    /// equals what Python's zoneinfo says of the same instant.
    func testHoursAtTheDaylightSavingChangesAgreeWithPythonsZoneinfo() throws {
        // Europe/Berlin springs forward on 2026-03-29 at 01:00 UTC and falls back on 2026-10-25 at 01:00 UTC;
        // America/New_York on 2026-03-08 at 07:00 UTC and 2026-11-01 at 06:00 UTC. The windows start at 03:00
        // local on Sundays: an hour's error either way flips a verdict.
        let groups = "{\"night\":{\"schedule\":[{\"days\":[\"sun\"],\"from\":\"03:00\",\"to\":\"04:00\"},{\"days\":[\"sat\"],\"from\":\"23:30\",\"to\":\"01:30\"}]}}"
        let cases: [(tz: String, instants: [String])] = [
            ("Europe/Berlin", ["2026-03-29 00:30:00", "2026-03-29 01:30:00", "2026-03-29 02:30:00", "2026-10-25 00:30:00",
                               "2026-10-25 01:30:00", "2026-10-25 02:30:00", "2026-03-28 22:40:00", "2026-10-24 23:10:00"]),
            ("America/New_York", ["2026-03-08 06:30:00", "2026-03-08 07:30:00", "2026-11-01 06:30:00", "2026-11-01 07:30:00",
                                  "2026-11-01 08:30:00"]),
        ]
        var agreed = 0
        var seen = Set<String>()
        for (tz, instants) in cases {
            let epochs = instants.map { Self.epoch($0) }
            let doc = document(ver: 1, iat: epochs.min()! - 86400, exp: epochs.max()! + 86400, tz: tz, groups: groups)
            let python = try PythonPeers.run("policy_peer.py", ["inside", doc, "night"] + epochs.map(String.init)).stdout
                .split(separator: "\n").map(String.init)
            XCTAssertEqual(python.count, epochs.count)
            for (i, t) in epochs.enumerated() {
                try? FileManager.default.removeItem(atPath: dir + "/policy-state")
                try writePolicy("policy.jwt", doc)
                let scene = try scenario([try pass("5001", group: "night", iat: t - 600, exp: t + 86400)])
                let out = try run(args(scene), launcher: [CredentialTrustTests.faketime, "-f", "@" + instants[i]])
                let expected = python[i].hasPrefix("1") ? "accepted" : "outside-schedule"
                XCTAssertEqual(out.verdicts, [expected], "\(tz) at \(instants[i]) UTC, zoneinfo: \(python[i])\n\(out.log)")
                if out.verdicts == [expected] { agreed += 1 }
                seen.insert(expected)
            }
        }
        XCTAssertEqual(seen, ["accepted", "outside-schedule"], "the instants must cover both verdicts")
        print("hours at DST changes: \(agreed) of 13 verdicts agree with Python's zoneinfo")
    }

    /// "YYYY-MM-DD HH:MM:SS" in UTC as seconds since 1970.
    static func epoch(_ text: String) -> Int64 {
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == " " || $0 == ":" }).compactMap { Int($0) }
        let days = CivilDate.days(year: parts[0], month: parts[1], day: parts[2])
        return Int64(days) * 86400 + Int64(parts[3] * 3600 + parts[4] * 60 + parts[5])
    }

    func testARolledBackVersionIsRefusedAfterARestartAndTheKeptOneStaysInForce() throws {
        let now = self.now
        try writePolicy("policy.jwt", document(ver: 5, iat: now - 60, exp: now + 3600, deny: "[\"6001\"]"))
        let scene = try scenario([try pass("6001"), try pass("6002")])
        let first = try run(args(scene))
        XCTAssertEqual(first.verdicts, ["revoked", "accepted"], first.log)
        // An older version, correctly signed, that denies nobody, put in its place: refused at the next start.
        try writePolicy("policy.jwt", document(ver: 4, iat: now - 30, exp: now + 3600))
        let second = try run(args(scene))
        XCTAssertEqual(second.verdicts, ["revoked", "accepted"], second.log)
        XCTAssertTrue(second.log.contains("ver 4 (iat \(now - 30)) is older than ver 5 (iat \(now - 60)) already used here: refused as a rollback"), second.log)
        XCTAssertTrue(second.log.contains("from the kept copy \(dir)/policy-state.policy"), second.log)
        // Without the kept copy the old version is still refused: the passes meet policy-stale.
        try FileManager.default.removeItem(atPath: dir + "/policy-state.policy")
        let third = try run(args(scene))
        XCTAssertEqual(third.verdicts, ["policy-stale", "policy-stale"], third.log)
        // A higher version is taken.
        try writePolicy("policy.jwt", document(ver: 6, iat: now - 10, exp: now + 3600, deny: "[\"6002\"]"))
        let fourth = try run(args(scene))
        XCTAssertEqual(fourth.verdicts, ["accepted", "revoked"], fourth.log)
    }

    func testAnExpiredPolicyIsHandledAsPolicyStaleSays() throws {
        let now = self.now
        try writePolicy("policy.jwt", document(ver: 1, iat: now - 7200, exp: now - 3600, groups: Self.openAndClosed))
        let scene = try scenario([try pass("7001", group: "open"), try pass("7002", group: "closed")])
        var seen: [String: [String]] = [:]
        for mode in ["deny", "allow-known", "allow"] {
            seen[mode] = try run(args(scene, extra: ["--policy-stale", mode])).verdicts
        }
        XCTAssertEqual(seen["deny"], ["policy-stale", "policy-stale"])
        XCTAssertEqual(seen["allow-known"], ["accepted", "outside-schedule"])
        XCTAssertEqual(seen["allow"], ["accepted", "outside-schedule"])
        // No document at all: refused under deny and allow-known, not checked under allow.
        try FileManager.default.removeItem(atPath: dir + "/policy.jwt")
        try FileManager.default.removeItem(atPath: dir + "/policy-state.policy")
        XCTAssertEqual(try run(args(scene, extra: ["--policy-stale", "allow-known"])).verdicts, ["policy-stale", "policy-stale"])
        XCTAssertEqual(try run(args(scene, extra: ["--policy-stale", "allow"])).verdicts, ["accepted", "accepted"])
    }

    /// policy-keys: a policy signed by a key of its own (not a pass issuer's) is verified with that set,
    /// and one signed by the pass issuer is then refused.
    func testPolicyKeysAreASetOfTheirOwn() throws {
        let now = self.now
        let policyDir = dir + "/policy-issuer"
        try FileManager.default.createDirectory(atPath: policyDir, withIntermediateDirectories: true)
        let doc = document(ver: 1, iat: now - 60, exp: now + 3600, deny: "[\"8001\"]")
        let result = try PythonPeers.run("policy_peer.py", ["policy", policyDir, dir + "/own.jwt", "--doc", doc])
        XCTAssertEqual(result.status, 0)
        try writePolicy("issuer.jwt", doc)
        let scene = try scenario([try pass("8001"), try pass("8002")])
        let own = try run(args(scene, policy: "own.jwt", extra: ["--policy-keys", policyDir + "/site.jwks"]))
        XCTAssertEqual(own.verdicts, ["revoked", "accepted"], own.log)
        try FileManager.default.removeItem(atPath: dir + "/policy-state.policy")
        let wrong = try run(args(scene, policy: "issuer.jwt", extra: ["--policy-keys", policyDir + "/site.jwks"]))
        XCTAssertEqual(wrong.verdicts, ["policy-stale", "policy-stale"], wrong.log)
        XCTAssertTrue(wrong.log.contains("site policy refused: policy-file \(dir)/issuer.jwt: bad-signature"), wrong.log)
    }

    /// A policy changed on disk is read without SIGHUP (inotify): a newer ver that denies the pass takes
    /// effect in the running daemon; an older ver renamed into place is refused, the newer one staying in force.
    func testAChangedPolicyTakesEffectWithoutARestartAndAnOlderOneIsRefused() throws {
        let now = self.now
        try writePolicy("policy.jwt", document(ver: 1, iat: now - 100, exp: now + 3600))
        let token = try pass("9001")
        let scene = dir + "/loop.scenario"
        try TestFiles.write("size 320x320\nfps 20\nframes 20\nloop\ncode qr \"\(token)\" frames 0-4 module 3\n", to: scene)
        let daemon = try RunningScangate(args(scene).filter { $0 != "--fast" } + ["--hold-off-ms", "300"], in: dir)
        func verdicts() -> [String] { daemon.stdoutLines.compactMap { try? JSONValue.parse($0) }.map { $0["rejected"]?.stringValue ?? "accepted" } }
        func loads(_ ver: Int) -> Int { daemon.stderrLines.filter { $0.contains("credentials: site policy ver \(ver),") }.count }
        XCTAssertTrue(waitUntil(60) { verdicts().contains("accepted") && daemon.stderrLines.contains { $0.contains("site policy: watching \(dir)/policy.jwt") } },
                      daemon.stderrText)
        try writePolicy("policy.jwt", document(ver: 2, iat: now - 10, exp: now + 3600, deny: "[\"9001\"]"))
        XCTAssertTrue(waitUntil(30) { loads(2) >= 1 && daemon.stderrLines.contains { $0.contains("site policy change in \(dir) (policy.jwt): reloading") } },
                      daemon.stderrText)
        var seen = verdicts().count
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 && verdicts().last == "revoked" }, daemon.stderrText)
        try writePolicy("old.jwt", document(ver: 1, iat: now - 100, exp: now + 3600))
        XCTAssertEqual(rename(dir + "/old.jwt", dir + "/policy.jwt"), 0)
        XCTAssertTrue(waitUntil(30) { daemon.stderrLines.contains { $0.contains("refused as a rollback") } && loads(2) >= 2 }, daemon.stderrText)
        seen = verdicts().count
        XCTAssertTrue(waitUntil(30) { verdicts().count > seen + 1 }, daemon.stderrText)
        XCTAssertEqual(verdicts().last, "revoked", "the rolled-back policy let the denied pass in")
        XCTAssertEqual(daemon.stop(), 0)
    }

    /// `scangate policy verify` and `policy show` on site policies, as an installer runs them before putting
    /// a file in place: what is printed, the JSON, the exit codes; a rolled-back ver is refused once the
    /// daemon used a higher one; the denied numbers are never printed; nothing on disk changes.
    func testPolicyVerifyAndShowSayWhatTheDaemonWouldDo() throws {
        let now = self.now
        let groups = "{\"cleaning\":{\"schedule\":[{\"days\":[\"mon\",\"fri\"],\"from\":\"18:00\",\"to\":\"22:00\"}]}}"
        try writePolicy("v2.jwt", document(ver: 2, iat: now - 60, exp: now + 3600, tz: "Europe/Berlin", groups: groups, deny: "[\"31337\"]"))
        try writePolicy("v1.cose", document(ver: 1, iat: now - 600, exp: now + 3600), extra: ["--form", "cwt"])
        let flags = ["--credential-keys", dir + "/site.jwks", "--policy-state-file", dir + "/policy-state"]
        let first = try ScangateProcess.run(["policy", "verify", dir + "/v2.jwt"] + flags)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdoutText.contains("v2.jwt: site policy, would be used"), first.stdoutText)
        for line in ["  ver 2", "  tz \"Europe/Berlin\"", "  door \"north-1\", role both", "  group \"cleaning\": mon,fri 18:00-22:00",
                     "  holidays 0, denied numbers 1", "  rollback guard \(dir)/policy-state: no ver held yet (a first start)"] {
            XCTAssertTrue(first.stdoutText.contains(line + "\n"), "\(line) in:\n\(first.stdoutText)")
        }
        XCTAssertFalse(first.stdoutText.contains("31337"), "a denied number is printed")
        // The daemon uses ver 2; ver 1 (the COSE form) is then a rollback, for verify too.
        let scene = try scenario([])
        XCTAssertEqual(try run(args(scene, policy: "v2.jwt")).verdicts, [])
        let before = try String(contentsOfFile: dir + "/policy-state", encoding: .utf8)
        let old = try ScangateProcess.run(["policy", "verify", dir + "/v1.cose", "--json"] + flags)
        XCTAssertEqual(old.status, 1, old.stderr)
        let json = try JSONValue.parse(old.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(json["kind"]?.stringValue, "site-policy")
        XCTAssertEqual(json["verdict"]?.stringValue, "refused")
        XCTAssertEqual(json["ver"]?.numberValue?.int64, 1)
        XCTAssertEqual(json["format"]?.stringValue, "cwt")
        XCTAssertEqual(json["guard_ver"]?.numberValue?.int64, 2)
        XCTAssertTrue(json["reason"]?.stringValue?.contains("refused as a rollback") == true, old.stdoutText)
        XCTAssertEqual(old.stderr.split(separator: "\n").count, 1, old.stderr)
        // A document signed by another key: refused, exit 1.
        let otherDir = dir + "/other"
        try FileManager.default.createDirectory(atPath: otherDir, withIntermediateDirectories: true)
        XCTAssertEqual(try PythonPeers.run("policy_peer.py", ["policy", otherDir, dir + "/forged.jwt", "--doc",
                                                              document(ver: 9, iat: now, exp: now + 60)]).status, 0)
        let forged = try ScangateProcess.run(["policy", "verify", dir + "/forged.jwt"] + flags)
        XCTAssertEqual(forged.status, 1)
        XCTAssertTrue(forged.stderr.contains("refused: bad-signature"), forged.stderr)
        // show: the policy in force, from the file.
        let show = try ScangateProcess.run(["policy", "show", "--policy-file", dir + "/v2.jwt", "--json"] + flags)
        XCTAssertEqual(show.status, 0, show.stderr)
        let shown = try JSONValue.parse(show.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(shown["site_policy"]?["source"]?.stringValue, "file")
        XCTAssertEqual(shown["site_policy"]?["ver"]?.numberValue?.int64, 2)
        XCTAssertEqual(shown["site_policy"]?["deny"]?.numberValue?.int64, 1)
        XCTAssertEqual(try String(contentsOfFile: dir + "/policy-state", encoding: .utf8), before, "verify and show write nothing")
    }

    /// What a fleet operator sees of the site policy on a running daemon: `scangate status` (text and JSON),
    /// the metrics file (its ver, iat, exp; refusals by reason), and doctor's row.
    func testStatusMetricsAndDoctorShowThePolicyInForce() throws {
        let iat = now - 120, exp = iat + 3720
        try writePolicy("policy.jwt", document(ver: 12, iat: iat, exp: exp, groups: Self.openAndClosed))
        let tokens = [try pass("1101", group: "closed"), try pass("1102", group: "open")]
        var scene = try String(contentsOfFile: try scenario(tokens), encoding: .utf8)
        scene = scene.replacingOccurrences(of: "frames \(tokens.count * 7 + 3)\n", with: "frames 100000\n")
        let scenePath = dir + "/long.scenario"
        try TestFiles.write(scene, to: scenePath)
        let socket = dir + "/status.sock", metrics = dir + "/scangate.prom"
        let d = try DaemonUnderTest(args(scenePath).filter { $0 != "--fast" }
                                    + ["--status-socket", socket, "--metrics-textfile", metrics, "--metrics-interval-s", "1"])
        defer { d.stop() }
        waitUntil(60, failure: "two JSON lines: \(d.stderr.suffix(5))") { d.stdout.count >= 2 }
        XCTAssertEqual(try d.stdout.map { try JSONValue.parse($0)["rejected"]?.stringValue ?? "accepted" }, ["outside-schedule", "accepted"])
        let json = try ScangateProcess.run(["status", "--json", "--status-socket", socket])
        XCTAssertEqual(json.status, 0, json.stderr)
        let doc = try JSONValue.parse(json.stdout)
        XCTAssertEqual(doc["reads"]?["rejected_by_reason"]?["outside-schedule"]?.numberValue?.int64, 1, json.stdoutText)
        XCTAssertEqual(doc["site_policy"]?["ver"]?.numberValue?.int64, 12, json.stdoutText)
        XCTAssertEqual(doc["site_policy"]?["iat"]?.numberValue?.int64, iat)
        XCTAssertEqual(doc["site_policy"]?["exp"]?.numberValue?.int64, exp)
        XCTAssertEqual(doc["site_policy"]?["kept"]?.boolValue, false)
        let text = try ScangateProcess.run(["status", "--status-socket", socket])
        XCTAssertTrue(text.stdoutLines.contains { $0.hasPrefix("site policy ver 12: iat ") && $0.contains(" old), exp ") }, text.stdoutText)
        var prom = ""
        waitUntil(20, failure: "the refusal in the metrics file: \(prom)") {
            prom = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
            return prom.contains("scangate_reads_rejected_total{reason=\"outside-schedule\"} 1\n")
        }
        XCTAssertTrue(prom.contains("scangate_site_policy_version{source=\"file\"} 12\n"), prom)
        XCTAssertTrue(prom.contains("scangate_site_policy_issued_timestamp_seconds{source=\"file\"} \(iat)\n"), prom)
        XCTAssertTrue(prom.contains("scangate_site_policy_expiry_timestamp_seconds{source=\"file\"} \(exp)\n"), prom)
        XCTAssertEqual(d.stop(), 0)
        let doctor = try ScangateProcess.run(["doctor", "--camera", "sim:HELLO", "--credential-format", "jwt", "--credential-keys", dir + "/site.jwks",
                                              "--policy-file", dir + "/policy.jwt", "--policy-state-file", dir + "/policy-state",
                                              "--credential-require-synced-clock=no"], timeout: 60)
        let row = doctor.stdoutLines.first { $0.contains("site policy") } ?? ""
        XCTAssertTrue(row.contains("ver 12 issued ") && row.contains("2 groups, 0 holidays, 0 denied numbers"), doctor.stdoutText)
    }

    func testBadPolicyOptionsExit2WithOneLineNamingThem() throws {
        let jwks = try writePolicy("policy.jwt", document(ver: 1, iat: now, exp: now + 60))
        let scene = try scenario([])
        for (option, value) in [("--policy-keys", dir + "/missing.jwks"), ("--policy-state-file", "relative/state")] {
            let result = try ScangateProcess.run(["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "jwt", "--credential-keys", jwks,
                                                  "--policy-file", dir + "/policy.jwt", "--policy-state-file", dir + "/policy-state",
                                                  option, value], timeout: 30)
            XCTAssertEqual(result.status, 2, result.stderr)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains(option.dropFirst(2)), result.stderr)
        }
    }
}
