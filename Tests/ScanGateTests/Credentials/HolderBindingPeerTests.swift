import Core
@testable import Credentials
import Foundation
import Platform
import Settings
import XCTest

/// Holder-bound passes (credential-holder-binding): SD-JWT passes with cnf and their key-binding
/// presentations, made by the IETF reference implementation (PyPI sd-jwt), judged by the policy as the
/// decode queue runs it, with a real replay store.
final class HolderBindingPeerTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    struct Case: Decodable {
        let name: String
        let token: String
        let expect: String
        let number: String?
        let require: String
    }

    struct Cases: Decodable {
        let jwks: String
        let cases: [Case]
    }

    func peerCases(_ script: String = "sdjwt_peer.py") throws -> Cases {
        let result = try PythonPeers.run(script, ["cases", dir])
        XCTAssertEqual(result.status, 0)
        return try JSONDecoder().decode(Cases.self, from: Data(result.stdout.utf8))
    }

    func policy(_ jwks: String, _ binding: HolderBinding, store: String, now: @escaping @Sendable () -> Int64 = { CredentialFixtures.now },
                log: LogCapture) throws -> CredentialPolicy {
        var settings = CredentialFixtures.settings(.any, audience: "north")
        settings.keys = jwks
        settings.holderBinding = binding
        settings.replayStore = store
        try settings.validate()
        return CredentialPolicy(settings: settings, keys: try CredentialKeySet.load(path: jwks), store: try ReplayStore(path: store),
                                clock: ClockSync.fixed(true), now: now, logger: log.logger)
    }

    func testReferenceImplementationPresentationsAreJudgedRight() throws {
        try judge(try peerCases(), count: 15)
    }

    /// The CWT form (`SG2:`), made with the `cwt` package: the pass with cnf (RFC 8747) and the holder's
    /// COSE_Sign1 proof over the pass's hash.
    func testCWTPackagePresentationsAreJudgedRight() throws {
        try judge(try peerCases("cwt_holder_peer.py"), count: 9)
    }

    func judge(_ peer: Cases, count: Int) throws {
        XCTAssertEqual(peer.cases.count, count)
        for binding in [HolderBinding.accept, .require] {
            let log = LogCapture()
            let policy = try policy(peer.jwks, binding, store: dir + "/replay-\(binding.rawValue)", log: log)
            for c in peer.cases {
                let expect = binding == .require ? c.require : c.expect
                var event = CredentialFixtures.event(Array(c.token.utf8))
                policy.judge(&event)
                if expect == "accepted" {
                    XCTAssertEqual(event.verdict, .accepted, "\(binding): \(c.name): \(log.all.suffix(1))")
                    XCTAssertEqual(event.credential?.number, c.number, "\(binding): \(c.name)")
                    XCTAssertEqual(event.doorData, Array((c.number ?? "").utf8), "\(binding): \(c.name)")
                } else {
                    XCTAssertEqual(event.verdict, .rejected(reason: expect), "\(binding): \(c.name): \(log.all.suffix(1))")
                    XCTAssertNil(event.credential)
                }
                // What goes on to the outputs and the log is the fingerprint, never the presentation.
                XCTAssertFalse(String(decoding: event.symbol.data, as: UTF8.self).contains("~"), c.name)
            }
            XCTAssertFalse(log.all.contains { $0.contains(peer.cases[0].token.prefix(40)) }, "no presentation is logged whole")
        }
    }

    func testAPresentationIsAcceptedOnceAndNotAfterItsWindow() throws {
        let peer = try peerCases()
        let token = try XCTUnwrap(peer.cases.first { $0.name.hasPrefix("bound pass, P-256") }?.token)
        let later = try XCTUnwrap(peer.cases.first { $0.name.hasPrefix("bound pass, Ed25519") }?.token)
        let clock = PosixMutex(CredentialFixtures.now)
        let log = LogCapture()
        let store = dir + "/replay"
        let policy = try policy(peer.jwks, .accept, store: store, now: { clock.withLock { $0 } }, log: log)
        var first = CredentialFixtures.event(Array(token.utf8))
        policy.judge(&first)
        XCTAssertEqual(first.verdict, .accepted, "\(log.all)")
        // Shown again: refused, also by a daemon started afterwards on the same store (it is durable).
        var again = CredentialFixtures.event(Array(token.utf8))
        policy.judge(&again)
        XCTAssertEqual(again.verdict, .rejected(reason: "presentation-replayed"))
        let restarted = try self.policy(peer.jwks, .accept, store: store, now: { clock.withLock { $0 } }, log: log)
        var afterRestart = CredentialFixtures.event(Array(token.utf8))
        restarted.judge(&afterRestart)
        XCTAssertEqual(afterRestart.verdict, .rejected(reason: "presentation-replayed"))
        // A fresh presentation of a pass is accepted (the pass itself is multi-use); 31 s later it is stale.
        clock.withLock { $0 += 31 }
        var stale = CredentialFixtures.event(Array(later.utf8))
        restarted.judge(&stale)
        XCTAssertEqual(stale.verdict, .rejected(reason: "stale-presentation"))
        XCTAssertTrue(log.all.contains { $0.contains("credential-presentation-window-s is 30") }, "\(log.all.suffix(2))")
    }

    /// Through `scangate run` on replayed PNG frames: a presentation is accepted, the same one shown again
    /// is refused, and so are another door's presentation and the pass without its holder's signature.
    func testPresentationsThroughScangateRunOnReplayedPNGFrames() throws {
        let peer = try peerCases()
        func token(_ name: String) throws -> String { try XCTUnwrap(peer.cases.first { $0.name.hasPrefix(name) }?.token, name) }
        let good = try token("bound pass, P-256"), otherDoor = try token("presented for another door"), bare = try token("the pass's JWT alone")
        // The CWT form from the cwt package, with its own issuer key (kid cwt-site): one JWKS holds both.
        let cwtPeer = try peerCases("cwt_holder_peer.py")
        let cwtGood = try XCTUnwrap(cwtPeer.cases.first { $0.name.hasPrefix("CWT pass, P-256") }?.token)
        let cwtBare = try XCTUnwrap(cwtPeer.cases.first { $0.name.hasPrefix("the CWT pass alone") }?.token)
        let both = try JSONValue.parse(String(decoding: try Data(contentsOf: URL(fileURLWithPath: peer.jwks)), as: UTF8.self))
        let cwtKeys = try JSONValue.parse(String(decoding: try Data(contentsOf: URL(fileURLWithPath: cwtPeer.jwks)), as: UTF8.self))
        let site = try XCTUnwrap(both["keys"]?.arrayValue?.first?.text), cwtSite = try XCTUnwrap(cwtKeys["keys"]?.arrayValue?.first?.text)
        let jwks = dir + "/both.jwks"
        try TestFiles.write("{\"keys\": [" + site + "," + cwtSite + "]}", to: jwks)
        // Drawn by the simulator into PNG frames (480x480, 3 pixels a module), which the kiosk replays.
        let scene = try PassScene.write([good, otherDoor, good, bare, cwtGood, cwtBare, cwtGood], in: dir, size: 480)
        let render = try ScangateProcess.run(["render", scene, "--out", dir + "/frames", "--format", "png"], timeout: 120)
        XCTAssertEqual(render.status, 0, render.stderr)
        let result = try ScangateProcess.run(["run", "--camera", "replay:" + dir + "/frames", "--fps", "30", "--fast", "--hold-off-ms", "100",
                                              "--credential-format", "any", "--credential-keys", jwks, "--credential-audience", "north",
                                              "--credential-holder-binding", "accept", "--credential-replay-store", dir + "/replay",
                                              "--credential-require-synced-clock=no"], timeout: 120)
        XCTAssertEqual(result.status, 0, result.stderr)
        let events = try result.stdoutLines.map { try JSONValue.parse($0) }
        XCTAssertEqual(events.map { $0["rejected"]?.stringValue ?? "accepted" },
                       ["accepted", "wrong-door", "presentation-replayed", "holder-binding-required",
                        "accepted", "holder-binding-required", "presentation-replayed"], result.stderr)
        XCTAssertEqual(events[4]["credential"]?["number"]?.stringValue, "9001")
        XCTAssertEqual(events[4]["credential"]?["format"]?.stringValue, "cwt")
        XCTAssertEqual(events.first?["credential"]?["number"]?.stringValue, "8001")
        XCTAssertFalse(result.stdoutText.contains("~"), "no presentation reaches stdout")
        XCTAssertFalse(result.stderr.contains(good.prefix(40)), "no presentation is logged whole")
        XCTAssertTrue(result.stderr.contains("holder binding accept (window 30 s, \(dir)/replay)"), result.stderr)
    }

    /// `credential issue --holder-key` and `credential present` make what the reference verifier accepts,
    /// and what the kiosk accepts once.
    func testOurPassesAndPresentationsVerifyWithTheReferenceImplementation() throws {
        XCTAssertEqual(try ScangateProcess.run(["credential", "keygen", "--out", dir + "/site", "--kid", "site"]).status, 0)
        let jwks = dir + "/site/credential-keys.jwks"
        for algorithm in ["es256", "ed25519"] {
            let phone = dir + "/phone-" + algorithm
            XCTAssertEqual(try ScangateProcess.run(["credential", "keygen", "--out", phone, "--kid", "phone", "--algorithm", algorithm]).status, 0)
            let issued = try ScangateProcess.run(["credential", "issue", "--key", dir + "/site/site.key", "--kid", "site", "--holder-key", phone + "/phone.key",
                                                  "--number", "8010", "--ttl", "30d", "--aud", "north", "--format", "jwt", "--text"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            try TestFiles.write(issued.stdoutText, to: dir + "/pass.txt")
            let presented = try ScangateProcess.run(["credential", "present", "--pass", dir + "/pass.txt", "--holder-key", phone + "/phone.key",
                                                     "--aud", "north", "--nonce", "n-1", "--text"])
            XCTAssertEqual(presented.status, 0, presented.stderr)
            let presentation = presented.stdoutText.trimmingCharacters(in: .newlines)
            // sd-jwt 0.10.4's verifier checks key-binding JWTs with ES256 only (its DEFAULT_SIGNING_ALG, not a
            // parameter), so an Ed25519 holder's presentation is checked by the kiosk alone below.
            if algorithm == "es256" {
                let byReference = try PythonPeers.run("sdjwt_peer.py", ["verify", jwks, presentation, "north", "n-1"])
                XCTAssertEqual(byReference.status, 0, "\(algorithm): \(byReference.stdout)")
                XCTAssertEqual(try JSONValue.parse(byReference.stdout.trimmingCharacters(in: .newlines))["sub"]?.stringValue, "8010")
                // The reference verifier refuses it for another door and another nonce: the checks are real.
                XCTAssertEqual(try PythonPeers.run("sdjwt_peer.py", ["verify", jwks, presentation, "south", "n-1"]).status, 1)
                XCTAssertEqual(try PythonPeers.run("sdjwt_peer.py", ["verify", jwks, presentation, "north", "n-2"]).status, 1)
            }
            let verify = ["credential", "verify", presentation, "--credential-keys", jwks, "--credential-audience", "north",
                          "--credential-holder-binding", "require", "--credential-replay-store", dir + "/replay-" + algorithm,
                          "--no-credential-require-synced-clock", "--json"]
            let first = try ScangateProcess.run(verify)
            XCTAssertEqual(first.status, 0, first.stdoutText + first.stderr)
            let again = try ScangateProcess.run(verify)
            XCTAssertEqual(again.status, 1)
            XCTAssertEqual(try JSONValue.parse(again.stdoutText.trimmingCharacters(in: .newlines))["reason"]?.stringValue, "presentation-replayed")
        }
        // The CWT form: the same keys, an SG1 pass with cnf and its SG2 presentation, checked by the cwt package.
        let cwtPass = try ScangateProcess.run(["credential", "issue", "--key", dir + "/site/site.key", "--kid", "site",
                                               "--holder-key", dir + "/phone-es256/phone.key", "--number", "8011", "--ttl", "30d",
                                               "--aud", "north", "--format", "cwt", "--text"])
        XCTAssertEqual(cwtPass.status, 0, cwtPass.stderr)
        XCTAssertTrue(cwtPass.stdoutText.hasPrefix("SG1:"))
        try TestFiles.write(cwtPass.stdoutText, to: dir + "/pass-cwt.txt")
        let cwtPresented = try ScangateProcess.run(["credential", "present", "--pass", dir + "/pass-cwt.txt", "--holder-key",
                                                    dir + "/phone-es256/phone.key", "--aud", "north", "--text"])
        XCTAssertEqual(cwtPresented.status, 0, cwtPresented.stderr)
        let cwtPresentation = cwtPresented.stdoutText.trimmingCharacters(in: .newlines)
        XCTAssertTrue(cwtPresentation.hasPrefix("SG2:"), cwtPresentation)
        let byCWT = try PythonPeers.run("cwt_holder_peer.py", ["verify", jwks, cwtPresentation, "north"])
        XCTAssertEqual(byCWT.status, 0, byCWT.stdout)
        XCTAssertEqual(try JSONValue.parse(byCWT.stdout.trimmingCharacters(in: .newlines))["2"]?.stringValue, "8011")
        XCTAssertEqual(try PythonPeers.run("cwt_holder_peer.py", ["verify", jwks, cwtPresentation, "south"]).status, 1)
        let cwtVerify = ["credential", "verify", cwtPresentation, "--credential-keys", jwks, "--credential-audience", "north",
                         "--credential-holder-binding", "require", "--credential-replay-store", dir + "/replay-cwt",
                         "--no-credential-require-synced-clock"]
        XCTAssertEqual(try ScangateProcess.run(cwtVerify).status, 0)
        XCTAssertEqual(try ScangateProcess.run(cwtVerify).status, 1, "shown twice")
        // Bad input: one line on stderr, exit 2.
        let noDoor = try ScangateProcess.run(["credential", "present", "--pass", dir + "/pass.txt", "--holder-key", dir + "/phone-es256/phone.key"])
        XCTAssertEqual(noDoor.status, 2)
        XCTAssertTrue(noDoor.stderr.contains("--aud DOOR"), noDoor.stderr)
    }

    func testSettingsNeedADoorAndAWindowInRange() {
        var s = CredentialFixtures.settings(.any, audience: nil)
        s.holderBinding = .accept
        XCTAssertThrowsError(try s.validate()) { XCTAssertTrue("\($0)".contains("needs --credential-audience"), "\($0)") }
        s.audience = "north"
        s.presentationWindowSeconds = 4
        XCTAssertThrowsError(try s.validate()) { XCTAssertTrue("\($0)".contains("5 to 300"), "\($0)") }
        s.presentationWindowSeconds = 30
        XCTAssertNoThrow(try s.validate())
        XCTAssertThrowsError(try CredentialSettings.parseHolderBinding("maybe"))
    }

    func testABoundPassIsRefusedWhenHolderBindingIsOff() throws {
        let peer = try peerCases()
        var settings = CredentialFixtures.settings(.any, audience: "north")
        settings.keys = peer.jwks
        let log = LogCapture()
        let policy = CredentialPolicy(settings: settings, keys: try CredentialKeySet.load(path: peer.jwks), store: nil,
                                      clock: ClockSync.fixed(true), logger: log.logger)
        for (name, expect) in [("bound pass, P-256 holder, presented", "malformed"), ("the pass's JWT alone", "holder-binding-required")] {
            let token = try XCTUnwrap(peer.cases.first { $0.name == name }?.token)
            var event = CredentialFixtures.event(Array(token.utf8))
            policy.judge(&event)
            XCTAssertEqual(event.verdict, .rejected(reason: expect), name)
        }
    }
}
