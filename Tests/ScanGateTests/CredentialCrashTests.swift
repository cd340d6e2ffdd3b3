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

    func pass(ttl: Int64 = 3600) throws -> String {
        try PassIssuer.issue(PassRequest(format: .cwt, number: "4711", lifetimeSeconds: ttl, keyID: "gate", oneTime: true,
                                         now: CredentialFixtures.now), key: key)
    }

    /// A running `verify --stdin`, its stdout collected as it arrives.
    final class Gate: @unchecked Sendable {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        private let collected = PosixMutex<[UInt8]>([])
        private let finished = DispatchSemaphore(value: 0)

        init(_ args: [String]) throws {
            process.executableURL = URL(fileURLWithPath: ScangateProcess.binary)
            process.arguments = args
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
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
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if lines.count >= count { return true }
                usleep(2000)
            }
            return false
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
            for i in 0..<600 {
                let token = try pass(ttl: i % 6 == 0 ? 3600 : 2)
                if i % 6 == 0 { checked.append((token, i)) }
                lines.append(token)
            }
            let gate = try Gate(gateArgs)
            gate.send(lines)
            // Kill at a varying point. Even rounds: a delay from the start, which may land before the first
            // consume (start-up, loading the store) or in the stream of write + fdatasync. Odd rounds: a
            // delay after the first answer, so the kill lands in the stream whatever the machine's load.
            if round % 2 == 1 { XCTAssertTrue(gate.waitForLines(1, timeout: 30), "round \(round): no answer") }
            usleep(useconds_t(round % 2 == 1 ? (round * 7_919) % 30_000 : 5_000 + (round * 7_919) % 120_000))
            gate.kill9()
            let printed = gate.lines
            if printed.count > 0 && printed.count < lines.count { killedMidStream += 1 }
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
            // And through a new process, as a user would see it: the last checked pass printed accepted.
            if let last = checked.last(where: { $0.1 < printed.count }) {
                let again = try verifyOnce(last.0)
                XCTAssertEqual(again.reason, "replayed", "round \(round)")
            }
        }
        XCTAssertGreaterThan(accepted, 0, "no round got as far as accepting a pass")
        XCTAssertGreaterThan(killedMidStream, 0, "no kill landed while passes were being consumed")
        print("kill -9 loop: 30 rounds, \(killedMidStream) killed mid-stream; \(accepted) checked passes printed accepted before the kill, "
              + "all in the store and refused as replayed afterwards; \(recordedButUnprinted) recorded but killed before printing")
    }

    func testKillDuringCompactionKeepsEveryPass() throws {
        // A store of 20000 live and 20001 expired records: the gate's first consume rewrites it (20000
        // records, temp file, fsync, rename), and the kill lands before, during or after that.
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
            let gate = try Gate(gateArgs)
            gate.send(passes)
            // Every fourth round waits for the first answer (the compaction is done by then: it runs at the
            // first consume); the others kill after a varying delay, before, during or after it.
            if round % 4 == 3 { XCTAssertTrue(gate.waitForLines(1, timeout: 60), "round \(round): no answer") }
            usleep(useconds_t(round % 4 == 3 ? 0 : 10_000 + (round * 15_485) % 300_000))
            gate.kill9()
            let printed = gate.lines
            if FileManager.default.fileExists(atPath: store + ".tmp") { killedMidCompaction += 1 }
            var after = stat()
            stat(store, &after)
            if after.st_ino != before.st_ino { compacted += 1 }
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
        XCTAssertGreaterThan(compacted, 0, "no round got as far as compacting")
        print("kill -9 during compaction: 20 rounds; \(killedMidCompaction) killed with the temp file (partly) written but not renamed, "
              + "\(compacted) after the rename; \(accepted) passes printed accepted; no live entry and no accepted pass lost")
    }
}
