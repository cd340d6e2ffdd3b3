import Core
@testable import Credentials
import Foundation
import Platform
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Anti-passback (the site policy's `door.role` and `antipassback`) through `scangate run`: the policy
/// signed by PyJWT (Peers/policy_peer.py), the passes too, shown as QR codes in a simulated scene. Each
/// showing is its own run of the daemon, so every second verdict also proves the use survived a restart
/// (STATE.passback beside policy-state-file).
final class AntipassbackRunTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    var now: Int64 { Int64(Glibc.time(nil)) }

    func writePolicy(ver: Int, role: String, mode: String, timeout: Int64 = 0, deny: String = "[]") throws {
        let now = self.now
        let doc = "{\"ver\":\(ver),\"iat\":\(now - 600 + Int64(ver)),\"exp\":\(now + 3600),\"tz\":\"UTC\",\"door\":{\"id\":\"lobby\",\"role\":\"\(role)\"},"
            + "\"antipassback\":{\"mode\":\"\(mode)\",\"timeout_s\":\(timeout)},\"deny\":\(deny)}"
        let result = try PythonPeers.run("policy_peer.py", ["policy", dir, dir + "/policy-\(ver).jwt", "--doc", doc])
        XCTAssertEqual(result.status, 0, result.stdout)
    }

    func pass(_ sub: String) throws -> String {
        try PythonPeers.run("policy_peer.py", ["pass", dir, "--sub", sub]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A scene showing each token for 4 frames, then 3 blank ones.
    func scenario(_ tokens: [String]) throws -> String {
        var text = "size 320x320\nfps 30\nbackground 255\nframes \(tokens.count * 7 + 3)\n"
        for (n, token) in tokens.enumerated() {
            text += "code qr \"\(token)\" frames \(n * 7)-\(n * 7 + 3) module 3\n"
        }
        let path = dir + "/passes-\(UUID().uuidString.prefix(8)).scenario"
        try TestFiles.write(text, to: path)
        return path
    }

    struct Run {
        var events: [JSONValue]
        var log: String
        var verdicts: [String] { events.map { $0["rejected"]?.stringValue ?? "accepted" } }
    }

    /// One run of the daemon over `scene` with the site policy of version `ver`.
    func run(_ scene: String, ver: Int, file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        let result = try ScangateProcess.run(["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "any",
                                              "--credential-keys", dir + "/site.jwks", "--policy-file", dir + "/policy-\(ver).jwt",
                                              "--policy-state-file", dir + "/policy-state", "--credential-require-synced-clock=no"],
                                             timeout: 120)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        return Run(events: try result.stdoutLines.map { try JSONValue.parse($0) }, log: result.stderr)
    }

    /// Waits (polling the clock, no fixed sleep) until the wall clock reads `t` or later.
    func waitForTime(_ t: Int64) {
        XCTAssertTrue(waitUntil(Double(t - now + 5)) { self.now >= t })
    }

    func testHardRefusesASecondEntryAcrossARestartUntilTheTimeoutHasPassed() throws {
        try writePolicy(ver: 1, role: "in", mode: "hard", timeout: 3600)
        let scene = try scenario([try pass("4711")])
        let first = try run(scene, ver: 1)
        XCTAssertEqual(first.verdicts, ["accepted"], first.log)
        XCTAssertTrue(first.log.contains("credentials: anti-passback hard at door role in, timeout 3600 s; \(dir)/policy-state.passback holds 0 numbers"), first.log)
        let second = try run(scene, ver: 1)
        XCTAssertEqual(second.verdicts, ["passback"], second.log)
        XCTAssertTrue(second.log.contains("holds 1 numbers"), second.log)
        XCTAssertTrue(second.log.contains("credential refused: passback ("), second.log)
        XCTAssertTrue(second.log.contains("): number 4711 entered at 20") && second.log.contains("and has not exited since (timeout 3600 s)"), second.log)
        XCTAssertNil(second.events.first?["credential"].flatMap { $0.objectValue }, "a refused read carries no credential")
        // Another pass is not affected.
        XCTAssertEqual(try run(try scenario([try pass("4712")]), ver: 1).verdicts, ["accepted"])

        // timeout_s 1: once the time has passed, the pass enters again.
        try writePolicy(ver: 2, role: "in", mode: "hard", timeout: 1)
        let timed = try scenario([try pass("5001")])
        XCTAssertEqual(try run(timed, ver: 2).verdicts, ["accepted"])
        waitForTime(now + 2)
        let later = try run(timed, ver: 2)
        XCTAssertEqual(later.verdicts, ["accepted"], later.log)
    }

    func testSoftAcceptsAndReportsThePassback() throws {
        try writePolicy(ver: 1, role: "in", mode: "soft")
        let scene = try scenario([try pass("6001")])
        let first = try run(scene, ver: 1)
        XCTAssertEqual(first.verdicts, ["accepted"], first.log)
        XCTAssertNil(first.events.first?["credential"]?["passback"], "no passback member on an ordinary read")
        XCTAssertFalse(first.log.contains("passback (soft)"), first.log)
        let second = try run(scene, ver: 1)
        XCTAssertEqual(second.verdicts, ["accepted"], second.log)
        XCTAssertEqual(second.events.first?["credential"]?["passback"]?.boolValue, true, second.log)
        XCTAssertEqual(second.events.first?["credential"]?["number"]?.stringValue, "6001")
        XCTAssertTrue(second.log.contains("credentials: passback (soft): number 6001 entered at 20"), second.log)
    }

    func testAnExitAtADoorOfRoleOutFollowsAnEntryAndTwoExitsAreAPassback() throws {
        let scene = try scenario([try pass("7001")])
        try writePolicy(ver: 1, role: "in", mode: "hard")
        XCTAssertEqual(try run(scene, ver: 1).verdicts, ["accepted"])
        try writePolicy(ver: 2, role: "out", mode: "hard")
        let out = try run(scene, ver: 2)
        XCTAssertEqual(out.verdicts, ["accepted"], out.log)
        let twice = try run(scene, ver: 2)
        XCTAssertEqual(twice.verdicts, ["passback"], twice.log)
        XCTAssertTrue(twice.log.contains("number 7001 exited at 20") && twice.log.contains("has not entered since"), twice.log)
        // Having exited, it enters again.
        try writePolicy(ver: 3, role: "in", mode: "hard")
        XCTAssertEqual(try run(scene, ver: 3).verdicts, ["accepted"])
    }

    /// Only a read finally accepted records its use: one refused for another reason (here the deny list)
    /// leaves no entry behind, and a passback refused leaves the first entry's time as it was.
    func testARefusedReadRecordsNothing() throws {
        let scene = try scenario([try pass("9001")])
        try writePolicy(ver: 1, role: "in", mode: "hard", deny: "[\"9001\"]")
        XCTAssertEqual(try run(scene, ver: 1).verdicts, ["revoked"])
        try writePolicy(ver: 2, role: "in", mode: "hard")
        let first = try run(scene, ver: 2)
        XCTAssertEqual(first.verdicts, ["accepted"], first.log)
        let store = try PassbackStore(path: dir + "/policy-state.passback", timeoutSeconds: 0, now: now)
        let entered = try XCTUnwrap(store.lastUse(Array("9001".utf8)))
        XCTAssertEqual(store.fileRecords, 1)
        store.close()
        waitForTime(entered.at + 1)
        XCTAssertEqual(try run(scene, ver: 2).verdicts, ["passback"])
        let after = try PassbackStore(path: dir + "/policy-state.passback", timeoutSeconds: 0, now: now)
        XCTAssertEqual(after.lastUse(Array("9001".utf8)), entered, "the refused read changed the recorded use")
        XCTAssertEqual(after.fileRecords, 1)
    }

    /// The use is on disk before the read is reported: a daemon killed (-9) at the record written and at
    /// the record synced has printed no line for it, and the restart refuses the pass as a passback.
    func testAKillAfterTheRecordNeitherReportsTheReadNorForgetsIt() throws {
        try writePolicy(ver: 1, role: "in", mode: "hard")
        for (i, step) in ["passback-record-written", "passback-record-synced"].enumerated() {
            let scene = try scenario([try pass("950\(i)")])
            let daemon = try RunningScangate(["run", "--camera", "sim:" + scene, "--fast", "--credential-format", "any",
                                              "--credential-keys", dir + "/site.jwks", "--policy-file", dir + "/policy-1.jwt",
                                              "--policy-state-file", dir + "/policy-state", "--credential-require-synced-clock=no"],
                                             in: dir, environment: ["SCANGATE_FAULT": "park-at:\(step)"])
            XCTAssertTrue(daemon.waitUntilParked(at: step, seconds: 120), daemon.stderrText)
            daemon.kill9()
            XCTAssertEqual(daemon.stdoutLines, [], "a line printed before the use was on disk")
            let again = try run(scene, ver: 1)
            XCTAssertEqual(again.verdicts, ["passback"], again.log)
        }
    }

    func testADoorOfRoleBothDoesNotCheckAndSaysSoOnce() throws {
        try writePolicy(ver: 1, role: "both", mode: "hard")
        let scene = try scenario([try pass("8001")])
        for _ in 0..<2 {
            let out = try run(scene, ver: 1)
            XCTAssertEqual(out.verdicts, ["accepted"], out.log)
            XCTAssertEqual(out.log.components(separatedBy: "anti-passback hard in site policy ver 1 does not apply: door role both").count, 2, out.log)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/policy-state.passback"), "no store is opened")
    }
}
