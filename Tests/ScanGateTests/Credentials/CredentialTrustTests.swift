#if canImport(Glibc)
import Glibc
#endif
import Core
@testable import Credentials
import Foundation
import Pipeline
import Platform
@testable import Policies
import Service
import Settings
import XCTest

/// Issue 19's findings on one-time use and on what a refused pass leaves behind, each through the binary
/// where it was found there: passes issued by PyJWT (not ScanGate), a store shared by a manual gate with
/// leeway 0 and the daemon with leeway 30, a wall clock stepped two days ahead by Debian's `faketime`
/// (the boot clock is left alone, as an NTP step leaves it), and a pass that a payload filter
/// refuses before the credential policy sees it.
final class CredentialTrustTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Debian's faketime: it preloads libfaketime with its shared state already in the environment. (Setting
    /// LD_PRELOAD by hand makes libfaketime call setenv at start, which moves `environ`, and the Swift
    /// runtime, which finds argv just below the initial environment, then sees no arguments.)
    static let faketime = "/usr/bin/faketime"

    /// The scangate that runs under faketime. libfaketime's constructor allocates while a sanitizer's
    /// runtime initialises, which deadlocks ThreadSanitizer's allocator (seen in the TSan run: the child
    /// asleep in its allocator lock), so the sanitizer runs give that one step the plain build of the same
    /// sources (`make test` builds it first, in test-unit); every other step runs the sanitizer build.
    static var fakedClockBinary: String {
        let own = ScangateProcess.binary
        guard own.contains("/.build-tsan/") || own.contains("/.build-asan/") else { return own }
        return TestFiles.repositoryRoot + "/.build/debug/scangate"
    }

    /// `count` one-time JWT passes from PyJWT, valid from now + `offset` for `ttl` seconds; the key set
    /// is `dir/batch.jwks`.
    func passes(_ count: Int, ttl: Int, offset: Int = 0, audience: String? = nil) throws -> [String] {
        var args = ["batch", dir, String(count), String(ttl), String(offset)]
        if let audience { args += ["--aud", audience] }
        let (status, out) = try PythonPeers.run("pyjwt_peer.py", args)
        XCTAssertEqual(status, 0)
        let tokens = out.split(separator: "\n").map(String.init)
        XCTAssertEqual(tokens.count, count)
        return tokens
    }

    /// `scangate credential verify --one-time --stdin --json` on `tokens`: each verdict, "accepted" or the reason.
    func verify(_ tokens: [String], store: String, extra: [String] = [], launcher: [String] = []) throws -> [String] {
        var environment: [String: String] = [:]
        if !launcher.isEmpty {
            environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: Self.fakedClockBinary),
                          "\(Self.fakedClockBinary) is missing: the sanitizer runs need the plain build too (make test-unit)")
        }
        let result = try ScangateProcess.run(["credential", "verify", "--stdin", "--json", "--one-time", "--replay-store", store,
                                              "--keys", dir + "/batch.jwks", "--require-synced-clock", "no"] + extra,
                                             timeout: 120, environment: environment,
                                             stdin: tokens.joined(separator: "\n") + "\n", launcher: launcher,
                                             executable: launcher.isEmpty ? nil : Self.fakedClockBinary)
        let lines = result.stdoutLines
        XCTAssertEqual(lines.count, tokens.count, result.stderr)
        return try lines.map { line in
            let json = try JSONValue.parse(line)
            return json["verdict"]?.stringValue == "accepted" ? "accepted" : (json["reason"]?.stringValue ?? "?")
        }
    }

    /// A scenario showing each token as a QR code for one frame, then blank frames.
    func scenario(_ tokens: [String]) throws -> String {
        var text = "size 320x320\nfps 30\nbackground 255\nframes \(tokens.count * 3 + 5)\n"
        for (n, token) in tokens.enumerated() {
            text += "code qr \"\(token)\" frames \(n * 3)-\(n * 3) module 3\n"
        }
        let path = dir + "/passes.scenario"
        try TestFiles.write(text, to: path)
        return path
    }

    // MARK: 1. one-time use does not depend on the consumer's leeway

    /// A manual gate with leeway 0 uses a pass; after its exp the daemon, with leeway 30, sees it: refused
    /// as replayed (the store held the entry only until exp + 0 + 1 before).
    func testAPassUsedAtAGateWithNoLeewayIsRefusedByTheDaemonAfterItsExp() throws {
        let token = try XCTUnwrap(try passes(1, ttl: 2).first)
        let store = dir + "/replay"
        XCTAssertEqual(try verify([token], store: store, extra: ["--leeway", "0"]), ["accepted"])
        // Wait for the pass's exp (2 s) to pass on the wall clock: the gate would now call it expired.
        let claims = try XCTUnwrap(Base64.urlDecode(token.split(separator: ".")[1]))
        let exp = Double(try XCTUnwrap(try JSONValue.parse(String(decoding: claims, as: UTF8.self))["exp"]?.numberValue?.int64))
        XCTAssertTrue(waitUntil(10) { Double(WallClock.nowNanoseconds()) / 1e9 > exp + 1.5 })
        XCTAssertEqual(try verify([token], store: store, extra: ["--leeway", "0"]), ["expired"])
        let daemon = try RunningScangate(["run", "--camera", "sim:" + (try scenario([token])), "--fast",
                                          "--credential-format", "jwt", "--credential-keys", dir + "/batch.jwks",
                                          "--credential-one-time", "--credential-replay-store", store,
                                          "--credential-require-synced-clock=no"], in: dir)
        XCTAssertEqual(daemon.waitForExit(seconds: 120), 0, daemon.stderrText)
        let lines = daemon.stdoutLines
        XCTAssertEqual(lines.count, 1, daemon.stdoutText + daemon.stderrText)
        let event = try JSONValue.parse(try XCTUnwrap(lines.first))
        XCTAssertEqual(event["rejected"]?.stringValue, "replayed", lines.first ?? "")
        XCTAssertNil(event["credential"])
    }

    /// The same at the policy: a store shared by a policy with leeway 0 and one with leeway 30.
    func testTheStoreHoldsAPassForTheLargestLeeway() throws {
        let (key, credentialKey) = try CredentialFixtures.keyPair(.ed25519, kid: "site")
        let keys = CredentialKeySet(keys: [credentialKey], source: "test")
        let t0 = CredentialFixtures.now
        let token = try PassIssuer.issue(PassRequest(format: .jwt, number: "7", lifetimeSeconds: 10, keyID: "site", oneTime: true, now: t0),
                                         key: key)
        let store = try ReplayStore(path: dir + "/replay")
        let log = LogCapture()
        func policy(leeway: Int, at time: Int64) -> CredentialPolicy {
            var settings = CredentialFixtures.settings()
            settings.oneTime = true
            settings.replayStore = dir + "/replay"
            settings.leewaySeconds = leeway
            return CredentialPolicy(settings: settings, keys: keys, store: store, clock: ClockSync.fixed(true), now: { time }, logger: log.logger)
        }
        XCTAssertEqual(policy(leeway: 0, at: t0).evaluate(Array(token.utf8)).map(\.number), .success("7"))
        for late in [11, 40, 3605] as [Int64] {
            guard case .failure(let refusal) = policy(leeway: 3600, at: t0 + late).evaluate(Array(token.utf8)) else {
                return XCTFail("accepted again \(late) s after it was used")
            }
            XCTAssertEqual(refusal.reason, .replayed, "\(late) s later")
        }
    }

    // MARK: 2. a forward clock step erases no used pass

    /// Issue 19's finding, as it was made: 300 used passes; one pass used while the wall clock is two days
    /// ahead (libfaketime; CLOCK_BOOTTIME is not faked, as an NTP step does not move it); back at the real
    /// time, every one of the 300 is still refused as replayed (299 worked again before).
    func testAForwardClockStepErasesNoUsedPass() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: Self.faketime),
                      "Debian's faketime is not installed (scripts/install-deps test)")
        let store = dir + "/replay"
        let used = try passes(300, ttl: 3600)
        XCTAssertEqual(try verify(used, store: store), Array(repeating: "accepted", count: 300))
        // One read two days ahead, of a pass valid then: the first consume of that process prunes.
        let ahead = try passes(1, ttl: 3600, offset: 2 * 86_400)
        let twoDaysAhead = [Self.faketime, "-f", "+2d"]
        XCTAssertEqual(try verify(ahead, store: store, launcher: twoDaysAhead), ["accepted"])
        // Back at the real time, in a new process.
        let again = try verify(used, store: store)
        XCTAssertEqual(again.filter { $0 == "replayed" }.count, 300, "accepted again: \(again.filter { $0 == "accepted" }.count)")
        XCTAssertEqual(try verify(ahead, store: store, launcher: twoDaysAhead), ["replayed"])
    }

    // MARK: 3. a pass refused by a payload filter is never written whole

    /// With allow-prefix SG1: (CWT passes only) a JWT pass is refused by the filter before the credential
    /// policy sees it: the JSON line and the log carry its fingerprint, never the token.
    func testAPassRefusedByAPayloadFilterIsShownByItsFingerprintOnly() throws {
        let token = try XCTUnwrap(try passes(1, ttl: 3600).first)
        let daemon = try RunningScangate(["run", "--camera", "sim:" + (try scenario([token])), "--fast", "--allow-prefix", "SG1:",
                                          "--credential-format", "any", "--credential-keys", dir + "/batch.jwks",
                                          "--credential-require-synced-clock=no", "--log-level", "debug"], in: dir)
        XCTAssertEqual(daemon.waitForExit(seconds: 120), 0, daemon.stderrText)
        let lines = daemon.stdoutLines
        XCTAssertEqual(lines.count, 1, daemon.stdoutText + daemon.stderrText)
        let event = try JSONValue.parse(try XCTUnwrap(lines.first))
        XCTAssertEqual(event["rejected"]?.stringValue, "payload does not start with an allowed prefix")
        XCTAssertEqual(event["data"]?.stringValue, TokenFingerprint.describe(Array(token.utf8)))
        let signature = String(token.split(separator: ".")[2])
        let claims = String(token.split(separator: ".")[1])
        for (name, text) in [("stdout", daemon.stdoutText), ("the log", daemon.stderrText)] {
            XCTAssertFalse(text.contains(claims) || text.contains(signature), "\(name) carries the token: \(text)")
        }
        XCTAssertTrue(daemon.stderrText.contains("rejected #1 QR-Code"), daemon.stderrText)
    }

    /// The dispatcher conceals for every report output, whichever policy refused: the journal line and
    /// the text output too; a code that is not a pass is concealed the same way (it might be one).
    func testTheDispatcherConcealsWhicheverPolicyRefused() throws {
        let (_, credentialKey) = try CredentialFixtures.keyPair(.ed25519, kid: "site")
        let log = LogCapture()
        var settings = CredentialFixtures.settings()
        settings.format = .any
        let credential = CredentialPolicy(settings: settings, keys: CredentialKeySet(keys: [credentialKey], source: "test"), store: nil,
                                          clock: ClockSync.fixed(true), logger: log.logger)
        var short = FilterSettings()
        short.maxLength = 20
        let filter = try PayloadFilter(settings: short)
        let dispatcher = ReadDispatcher(policies: [filter, credential])
        let secret = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw"
        let event = dispatcher.dispatch(CredentialFixtures.event(Array(secret.utf8)))
        XCTAssertEqual(event.verdict, .rejected(reason: "payload longer than max-length 20 (\(secret.utf8.count) bytes)"))
        XCTAssertEqual(event.symbol.data, Array(TokenFingerprint.describe(Array(secret.utf8)).utf8))
        XCTAssertTrue(event.doorData.isEmpty)
        XCTAssertFalse(JournalLogSink.line(for: event).contains("c2lnbmF0dXJl"), JournalLogSink.line(for: event))
        XCTAssertFalse(EventLine.json(event).contains("c2lnbmF0dXJl"))
        // Accepted by the filter, refused by the credential policy: concealed once, not twice.
        let wide = ReadDispatcher(policies: [try PayloadFilter(settings: FilterSettings()), credential])
        let judged = wide.dispatch(CredentialFixtures.event(Array(secret.utf8)))
        XCTAssertEqual(judged.symbol.data, Array(TokenFingerprint.describe(Array(secret.utf8)).utf8))
        // Without a credential policy nothing is concealed.
        let plain = ReadDispatcher(policies: [filter]).dispatch(CredentialFixtures.event(Array("HELLO".utf8)))
        XCTAssertEqual(plain.symbol.data, Array("HELLO".utf8))
    }
}
