import Core
@testable import Credentials
import Foundation
import Platform
import XCTest

/// One-time use across a crash: `scangate credential verify --stdin --one-time --replay-store PATH` (a
/// manual gate reading passes from a keyboard-mode scanner) accepts passes and is killed with SIGKILL;
/// a new process must refuse every pass the killed one printed as accepted, as `replayed`.
final class CredentialCrashTests: XCTestCase {
    var dir = ""
    var key: PrivateKey!
    var jwks = ""
    var store = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        key = try PrivateKey.generate(.ed25519)
        jwks = try CredentialFixtures.writeJWKS([("gate", key)], in: dir)
        store = dir + "/credential-replay"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func pass(ttl: Int64 = 3600, now: Int64 = CredentialFixtures.now) throws -> String {
        try PassIssuer.issue(PassRequest(format: .cwt, number: "4711", lifetimeSeconds: ttl, keyID: "gate", oneTime: true,
                                         now: now), key: key)
    }

    /// A running `verify --stdin`, its stdout collected as it arrives.
    final class Gate: @unchecked Sendable {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        private let collected = PosixMutex<[UInt8]>([])
        private let collectedErrors = PosixMutex<[UInt8]>([])
        private let finished = DispatchSemaphore(value: 0)

        /// `environment` is added to this process's (SCANGATE_FAULT for a parked kill).
        init(_ args: [String], environment: [String: String] = [:]) throws {
            process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
            process.arguments = args
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errors
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            try process.run()
            let handle = output.fileHandleForReading
            DispatchQueue.global().async { [self] in
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    collected.withLock { $0 += Array(data) }
                }
                finished.signal()
            }
            let errorHandle = errors.fileHandleForReading
            DispatchQueue.global().async { [self] in
                while true {
                    let data = errorHandle.availableData
                    if data.isEmpty { break }
                    collectedErrors.withLock { $0 += Array(data) }
                }
            }
        }

        var stderrText: String { String(decoding: collectedErrors.withLock { $0 }, as: UTF8.self) }

        /// Waits for the marker of SCANGATE_FAULT=park-at:STEP: the process is then parked at STEP for ever.
        func waitUntilParked(at step: String, timeout: Double) -> Bool {
            waitUntil(timeout) { stderrText.contains("scangate: fault: parked at \(step) ") || !process.isRunning }
                && stderrText.contains("scangate: fault: parked at \(step) ")
        }

        /// Writes the lines from another thread (more than a pipe holds; the process may die meanwhile:
        /// EPIPE ends the writing, SIGPIPE is ignored).
        func send(_ lines: [String]) {
            signal(SIGPIPE, SIG_IGN)
            let bytes = Array((lines.joined(separator: "\n") + "\n").utf8)
            let fd = input.fileHandleForWriting.fileDescriptor
            DispatchQueue.global().async {
                var offset = 0
                while offset < bytes.count {
                    let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if n < 0 { if errno == EINTR { continue } else { break } }
                    offset += n
                }
            }
        }

        var lines: [String] {
            let bytes = collected.withLock { $0 }
            // Only whole lines: a line cut by the kill was not printed.
            guard let lastNewline = bytes.lastIndex(of: 0x0A) else { return [] }
            return String(decoding: bytes[...lastNewline], as: UTF8.self).split(separator: "\n").map(String.init)
        }

        /// Waits until `count` lines arrived (or the deadline).
        func waitForLines(_ count: Int, timeout: Double) -> Bool {
            waitUntil(timeout) { lines.count >= count }
        }

        func kill9() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            _ = finished.wait(timeout: .now() + 10)
        }
    }

    var gateArgs: [String] {
        ["credential", "verify", "--stdin", "--json", "--keys", jwks, "--one-time", "--replay-store", store,
         "--require-synced-clock", "no", "--leeway", "0"]
    }

    func verifyOnce(_ token: String) throws -> (status: Int32, reason: String?) {
        let result = try ScangateProcess.run(["credential", "verify", token, "--json", "--keys", jwks, "--one-time",
                                              "--replay-store", store, "--require-synced-clock", "no", "--leeway", "0"])
        let json = try JSONValue.parse(result.stdoutText.trimmingCharacters(in: .newlines))
        return (result.status, json["reason"]?.stringValue)
    }

    func testAcceptedPassIsReplayedAfterKill9() throws {
        let token = try pass()
        let gate = try Gate(gateArgs)
        gate.send([token])
        XCTAssertTrue(gate.waitForLines(1, timeout: 30), "the gate did not answer")
        XCTAssertEqual(try JSONValue.parse(gate.lines[0])["verdict"]?.stringValue, "accepted")
        gate.kill9()   // still running, waiting for the next line
        XCTAssertEqual(gate.process.terminationReason, .uncaughtSignal)
        let again = try verifyOnce(token)
        XCTAssertEqual(again.status, 1)
        XCTAssertEqual(again.reason, "replayed")
        XCTAssertEqual(try verifyOnce(try pass()).status, 0, "a new pass is still accepted")
    }

    func testKillDuringStoreWritesNeverLosesAnAcceptedPass() throws {
        var accepted = 0
        var recordedButUnprinted = 0
        var killedMidStream = 0
        let verifier = CredentialVerifier(settings: { var s = CredentialFixtures.settings(.cwt); s.leewaySeconds = 0; return s }(),
                                          keys: try CredentialKeySet.load(path: jwks))
        for round in 0..<30 {
            // 600 passes per round; every sixth lives an hour and is checked, the others expire in 2 s so
            // later rounds also prune and compact at their first consume (and may be killed doing it).
            var checked: [(String, Int)] = []
            var lines: [String] = []
            var issuedAt: [Int64] = []
            for i in 0..<600 {
                let now = CredentialFixtures.now
                issuedAt.append(now)
                let token = try pass(ttl: i % 6 == 0 ? 3600 : 2, now: now)
                if i % 6 == 0 { checked.append((token, i)) }
                lines.append(token)
            }
            // The kill lands at a named step of the n-th consume (fresh passes only; the 2-second ones
            // may have expired), where the gate parks (SCANGATE_FAULT): even rounds with the record written
            // but not fdatasync'd, odd rounds with it on disk but the pass not yet printed. Later rounds
            // also prune and compact at their first consume. No race with the clock: the marker says it is there.
            let step = round % 2 == 0 ? "replay-record-written" : "replay-record-synced"
            let n = 1 + (round * 37) % 100
            let gate = try Gate(gateArgs, environment: ["SCANGATE_FAULT": "park-at:\(step):\(n)"])
            gate.send(lines)
            XCTAssertTrue(gate.waitUntilParked(at: step, timeout: 120), "round \(round): never parked at \(step) #\(n): \(gate.stderrText)")
            gate.kill9()
            let printed = gate.lines
            if printed.count < lines.count { killedMidStream += 1 }
            // Lines are written before the next pass is read: exactly n - 1 consumes were printed as
            // accepted, and the parked pass is the line after the last printed one.
            XCTAssertEqual(printed.filter { (try? JSONValue.parse($0))?["verdict"]?.stringValue == "accepted" }.count, n - 1,
                           "round \(round): accepted lines before the parked consume #\(n)")
            // Read at the time it was issued: the parked pass may be a 2-second one, fresh when the gate
            // consumed it and expired by now (a slow run, under a sanitizer).
            let parked = try verifier.verify(Array(lines[printed.count].utf8), now: issuedAt[printed.count]).get()
            let parkedID = try ReplayKey.make(format: .cwt, issuer: nil, tokenID: try XCTUnwrap(parked.tokenIDBytes))
            // The store loads (a torn last record is cut off) in a new process, and every pass printed as
            // accepted is consumed.
            let reopened = try ReplayStore(path: store)
            // Line i answers pass i. The 1-second passes may already have expired; the checked ones are
            // accepted (each is new), and only after their record is on disk.
            var consumed = 0
            for (token, index) in checked {
                if index < printed.count {
                    XCTAssertEqual(try JSONValue.parse(printed[index])["verdict"]?.stringValue, "accepted", "round \(round) line \(index)")
                    accepted += 1
                }
                let pass = try verifier.verify(Array(token.utf8), now: CredentialFixtures.now).get()
                let id = try ReplayKey.make(format: .cwt, issuer: nil, tokenID: try XCTUnwrap(pass.tokenIDBytes))
                let inStore = reopened.contains(id)
                if index < printed.count {
                    XCTAssertTrue(inStore, "round \(round): pass \(index) was printed accepted but is not in the store")
                } else if inStore {
                    consumed += 1   // recorded, killed before it printed: refused later, never accepted twice
                }
            }
            recordedButUnprinted += consumed
            // The parked pass was written (and, at replay-record-synced, synced) before the kill: a kill -9
            // is not a power cut, so it is in the file, never printed, and refused from now on.
            XCTAssertTrue(reopened.contains(parkedID), "round \(round): the pass parked at \(step) is not in the store")
            // And through a new process, as a user would see it: the last checked pass printed accepted.
            if let last = checked.last(where: { $0.1 < printed.count }) {
                let again = try verifyOnce(last.0)
                XCTAssertEqual(again.reason, "replayed", "round \(round)")
            }
        }
        XCTAssertGreaterThan(accepted, 0, "no round got as far as accepting a pass")
        XCTAssertEqual(killedMidStream, 30, "every kill landed inside the stream (at the parked consume)")
        print("kill -9 loop: 30 rounds, \(killedMidStream) killed mid-stream, each parked at a named step of its n-th consume; "
              + "\(accepted) checked passes printed accepted before the kill, all in the store and refused as replayed afterwards; "
              + "every parked pass in the store; \(recordedButUnprinted) checked passes recorded (parked ones included, when checked) but killed before printing")
    }

    func testKillDuringCompactionKeepsEveryPass() throws {
        // A store of 20000 live and 20001 expired records: the gate's first consume rewrites it (20000
        // records, temp file, fsync, rename), and the kill lands before, during or after that, at a step
        // the gate is parked at.
        let now = CredentialFixtures.now
        var prefilled: [UInt8] = []
        var liveKeys: [ReplayKey] = []
        let bootID = try BootID.current().get()
        for n in 0..<40_001 {
            let key = try ReplayKey.make(format: .cwt, issuer: nil, tokenID: Array("prefilled-\(n)".utf8))
            let live = n % 2 == 0 && n < 40_000
            if live { liveKeys.append(key) }
            // This boot's records: the expired ones are past by both clocks (held 0 s from boot time 0).
            prefilled += ReplayStore.record(key, holdUntil: live ? now + 7200 : now - 100, bootID: bootID, bootAt: 0,
                                            bootHold: live ? 7200 : 0)
        }
        XCTAssertEqual(liveKeys.count, 20_000)
        var killedMidCompaction = 0, compacted = 0, accepted = 0
        for round in 0..<20 {
            unlink(store + ".tmp")
            try TestFiles.write(bytes: prefilled, to: store)
            chmod(store, 0o600)
            var before = stat()
            stat(store, &before)
            let passes = try (0..<40).map { _ in try pass() }
            // The compaction runs at the first consume, after its record is synced. The kill lands at a named
            // step where the gate parks (SCANGATE_FAULT), never at a moment picked by a clock: round % 4 = 0
            // before the compaction (the record synced), 1 with the temp file written and synced but not
            // renamed, 2 just after the rename; 3 waits for the first answer (the compaction is done by then).
            let steps = ["replay-record-synced", "replay-compaction-written", "replay-compaction-renamed", nil]
            let step = steps[round % 4]
            let gate = try Gate(gateArgs, environment: step.map { ["SCANGATE_FAULT": "park-at:\($0)"] } ?? [:])
            gate.send(passes)
            if let step {
                XCTAssertTrue(gate.waitUntilParked(at: step, timeout: 120), "round \(round): never parked at \(step): \(gate.stderrText)")
            } else {
                XCTAssertTrue(gate.waitForLines(1, timeout: 60), "round \(round): no answer")
            }
            gate.kill9()
            let printed = gate.lines
            let tempLeft = FileManager.default.fileExists(atPath: store + ".tmp")
            if tempLeft { killedMidCompaction += 1 }
            var after = stat()
            stat(store, &after)
            if after.st_ino != before.st_ino { compacted += 1 }
            XCTAssertEqual(tempLeft, round % 4 == 1, "round \(round): the temp file is left exactly when killed before the rename")
            XCTAssertEqual(after.st_ino != before.st_ino, round % 4 >= 2, "round \(round): the store is replaced exactly when killed after the rename")
            if step != nil { XCTAssertEqual(printed.count, 0, "round \(round): parked in the first consume, nothing printed") }
            let reopened = try ReplayStore(path: store)
            for key in liveKeys where !reopened.contains(key) {
                XCTFail("round \(round): a live entry was lost")
                break
            }
            for index in 0..<printed.count {
                XCTAssertEqual(try JSONValue.parse(printed[index])["verdict"]?.stringValue, "accepted", "round \(round)")
                let pass = try CredentialVerifier(settings: CredentialFixtures.settings(.cwt), keys: try CredentialKeySet.load(path: jwks))
                    .verify(Array(passes[index].utf8), now: now).get()
                let id = try ReplayKey.make(format: .cwt, issuer: nil, tokenID: try XCTUnwrap(pass.tokenIDBytes))
                XCTAssertTrue(reopened.contains(id), "round \(round): accepted pass \(index) lost")
            }
            accepted += printed.count
        }
        XCTAssertEqual(killedMidCompaction, 5, "rounds 1, 5, 9, 13, 17 were killed between the temp file and the rename")
        XCTAssertEqual(compacted, 10, "rounds 2, 3, 6, 7, ... were killed after the rename")
        print("kill -9 during compaction: 20 rounds, each parked at a named step; \(killedMidCompaction) killed with the temp file written and synced but not renamed, "
              + "\(compacted) after the rename; \(accepted) passes printed accepted; no live entry and no accepted pass lost")
    }
}
