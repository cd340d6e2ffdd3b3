import Core
@testable import Credentials
import Foundation
import XCTest
import Settings
import Service
import Platform

/// CredentialPolicy as the decode queue uses it: verdicts and reasons on a ReadEvent, what door outputs
/// get, one-time use, the clock check (injected), reloads, logs, the JSON member.
final class CredentialPolicyTests: XCTestCase {
    var dir = ""
    var ed: PrivateKey!
    var keys: CredentialKeySet!
    let log = LogCapture()

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
        let (key, credentialKey) = try CredentialFixtures.keyPair(.ed25519, kid: "site")
        ed = key
        keys = CredentialKeySet(keys: [credentialKey], source: "test")
        log.clear()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func policy(_ configure: (inout CredentialSettings) -> Void = { _ in }, clock: @escaping ClockSyncCheck = ClockSync.fixed(true),
                store: ReplayStore? = nil) -> CredentialPolicy {
        var settings = CredentialFixtures.settings()
        configure(&settings)
        return CredentialPolicy(settings: settings, keys: keys, store: store, clock: clock, logger: log.logger)
    }

    func pass(_ format: CredentialFormat = .jwt, oneTime: Bool = true, ttl: Int64 = 600) throws -> String {
        try PassIssuer.issue(PassRequest(format: format, number: "12345678", lifetimeSeconds: ttl, keyID: "site", oneTime: oneTime,
                                         now: CredentialFixtures.now), key: ed)
    }

    func judged(_ policy: CredentialPolicy, _ token: String) -> ReadEvent {
        var event = CredentialFixtures.event(Array(token.utf8))
        policy.judge(&event)
        return event
    }

    func testAcceptedPassGivesDoorOutputsTheNumber() throws {
        for format in CredentialFormat.allCases {
            let token = try pass(format)
            let event = judged(policy(), token)
            XCTAssertEqual(event.verdict, .accepted)
            XCTAssertEqual(event.doorData, Array("12345678".utf8), "the number, not the token")
            let info = try XCTUnwrap(event.credential)
            XCTAssertEqual(info.format, format.rawValue)
            XCTAssertEqual(info.number, "12345678")
            XCTAssertEqual(info.keyID, "site")
            XCTAssertNotNil(info.tokenID)
            // credential-output = token: the whole token.
            let tokenEvent = judged(policy { $0.output = .token }, token)
            XCTAssertEqual(tokenEvent.doorData, Array(token.utf8))
        }
    }

    func testRefusalSetsTheReasonAndNoCredential() throws {
        let event = judged(policy { $0.audience = "front" }, try pass())
        XCTAssertEqual(event.verdict, .rejected(reason: "wrong-audience"))
        XCTAssertNil(event.credential)
        // A read another policy already refused is left alone.
        var refused = CredentialFixtures.event(Array(try pass().utf8)).with(verdict: .rejected(reason: "too long"))
        policy().judge(&refused)
        XCTAssertEqual(refused.verdict, .rejected(reason: "too long"))
        XCTAssertNil(refused.credential)
        // Not a pass at all.
        XCTAssertEqual(judged(policy(), "https://example.com/menu").verdict, .rejected(reason: "malformed"))
    }

    func testEveryReasonHasItsText() {
        XCTAssertEqual(RefusalReason.allCases.map(\.rawValue), [
            "bad-signature", "unknown-key", "algorithm-not-allowed", "expired", "not-yet-valid", "wrong-audience",
            "wrong-issuer", "lifetime-too-long", "replayed", "revoked", "outside-schedule", "policy-stale", "passback",
            "stale-presentation", "wrong-door", "bad-holder-signature", "holder-binding-required", "presentation-replayed",
            "malformed", "clock not synchronised", "replay store failed",
        ])
    }

    func testUnsynchronisedClockRefusesEveryPassAndIsLoggedOncePerChange() throws {
        let synced = PosixMutex(false)
        let clock: ClockSyncCheck = { ClockSyncStatus(synchronised: synced.withLock { $0 }, detail: "injected") }
        let policy = policy(clock: clock)
        let token = try pass(oneTime: false)
        for _ in 0..<5 {
            XCTAssertEqual(judged(policy, token).verdict, .rejected(reason: "clock not synchronised"))
        }
        XCTAssertEqual(log.all.filter { $0.contains("clock not synchronised") }.count, 1, "\(log.all)")
        XCTAssertEqual(log.all.filter { $0.contains("credential refused") }.count, 0, "no log line per read")
        synced.withLock { $0 = true }
        XCTAssertEqual(judged(policy, token).verdict, .accepted)
        XCTAssertEqual(judged(policy, token).verdict, .accepted)
        XCTAssertEqual(log.all.filter { $0.contains("clock synchronised (injected)") }.count, 1)
        synced.withLock { $0 = false }
        XCTAssertEqual(judged(policy, token).verdict, .rejected(reason: "clock not synchronised"))
        XCTAssertEqual(log.all.filter { $0.contains("'clock not synchronised'") }.count, 2)
        // credential-require-synced-clock = no does not ask.
        let unchecked = self.policy({ $0.requireSyncedClock = false }, clock: { XCTFail("the clock was consulted"); return ClockSyncStatus(synchronised: false, detail: "") })
        XCTAssertEqual(judged(unchecked, token).verdict, .accepted)
    }

    func testKernelClockRule() {
        let good = KernelTimex(state: 0, maxErrorMicroseconds: 12_000, estimatedErrorMicroseconds: 500, status: 0x2001)
        XCTAssertTrue(ClockSync.judge(timex: .success(good), flagFileTime: nil).synchronised)
        // chrony without rtcsync keeps STA_UNSYNC set while synchronised: maxerror decides.
        let chrony = KernelTimex(state: 5, maxErrorMicroseconds: 40_000, estimatedErrorMicroseconds: 100, status: KernelTimex.unsyncFlag)
        XCTAssertTrue(ClockSync.judge(timex: .success(chrony), flagFileTime: nil).synchronised)
        // Boot state: maxerror 16 s, no time daemon has spoken.
        let boot = KernelTimex(state: 5, maxErrorMicroseconds: 16_000_000, estimatedErrorMicroseconds: 16_000_000, status: KernelTimex.unsyncFlag)
        let refused = ClockSync.judge(timex: .success(boot), flagFileTime: nil)
        XCTAssertFalse(refused.synchronised)
        XCTAssertTrue(refused.detail.contains("16.0 s"), refused.detail)
        // timesyncd synchronised this boot, then the network went away for longer than the kernel's bound.
        XCTAssertTrue(ClockSync.judge(timex: .success(boot), flagFileTime: 1_800_000_000).synchronised)
        XCTAssertFalse(ClockSync.judge(timex: .failure(.permissionDenied), flagFileTime: nil).synchronised)
        // This machine's kernel answers (whatever it says).
        if case .failure(let e) = ClockSync.readTimex() { XCTFail("adjtimex failed: \(e)") }
    }

    func testOneTimePassIsRefusedTheSecondTimeAndAfterARestart() throws {
        let path = dir + "/replay"
        let first = policy({ $0.oneTime = true; $0.replayStore = path }, store: try ReplayStore(path: path))
        let token = try pass(.cwt)
        XCTAssertEqual(judged(first, token).verdict, .accepted)
        XCTAssertEqual(judged(first, token).verdict, .rejected(reason: "replayed"))
        // A new process on the same store.
        let second = policy({ $0.oneTime = true; $0.replayStore = path }, store: try ReplayStore(path: path))
        XCTAssertEqual(judged(second, token).verdict, .rejected(reason: "replayed"))
        XCTAssertEqual(judged(second, try pass(.cwt)).verdict, .accepted)
        // Without a jti a one-time kiosk cannot use the pass once: refused.
        let event = judged(second, try pass(.jwt, oneTime: false))
        XCTAssertEqual(event.verdict, .rejected(reason: "malformed"))
        XCTAssertTrue(log.all.contains { $0.contains("has no jti") }, "\(log.all)")
        // A pass refused on its claims is not consumed: the same store, a kiosk that accepts it, later.
        let store = try ReplayStore(path: path)
        let strict = policy({ $0.oneTime = true; $0.replayStore = path; $0.issuer = "site" }, store: store)
        let lenient = policy({ $0.oneTime = true; $0.replayStore = path }, store: store)
        let fresh = try pass(.jwt)
        XCTAssertEqual(judged(strict, fresh).verdict, .rejected(reason: "wrong-issuer"))
        XCTAssertEqual(judged(lenient, fresh).verdict, .accepted)
        XCTAssertEqual(judged(strict, try pass(.jwt, ttl: -100)).verdict, .rejected(reason: "expired"))
    }

    func testStoreFailureRefusesAndLogsAnError() throws {
        let path = dir + "/replay"
        let store = try ReplayStore(path: path)
        let policy = policy({ $0.oneTime = true; $0.replayStore = path }, store: store)
        // The next write fails for real: a file-size limit of 0 (EFBIG, as a full disk gives ENOSPC).
        signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        var limit = saved
        limit.rlim_cur = 0
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        let event = judged(policy, try pass())
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        signal(SIGXFSZ, SIG_DFL)
        XCTAssertEqual(event.verdict, .rejected(reason: "replay store failed"))
        XCTAssertNil(event.credential)
        let errors = log.all.filter { $0.hasPrefix("<3>") }
        XCTAssertEqual(errors.count, 1, "\(log.all)")
        XCTAssertTrue(errors[0].contains(path) && errors[0].contains("fail closed"), errors[0])
    }

    /// Anti-passback in the policy: soft marks the second entry and logs a notice; a store that cannot
    /// record fails closed under hard (refused, an error) and lets the read through under soft (an error).
    func testPassbackSoftMarksTheReadAndAStoreFailureFailsClosedOnlyUnderHard() throws {
        func withPassback(_ mode: SitePolicy.Antipassback.Mode, _ name: String) throws -> CredentialPolicy {
            let store = try PassbackStore(path: dir + "/" + name, timeoutSeconds: 0, now: CredentialFixtures.now)
            return CredentialPolicy(settings: CredentialFixtures.settings(), keys: keys, store: nil,
                                    passback: PassbackRule(mode: mode, direction: .entry, store: store), clock: ClockSync.fixed(true), logger: log.logger)
        }
        let soft = try withPassback(.soft, "soft")
        let token = try pass(oneTime: false)
        XCTAssertEqual(judged(soft, token).credential?.passback, false)
        let second = judged(soft, token)
        XCTAssertEqual(second.verdict, .accepted)
        XCTAssertEqual(second.credential?.passback, true)
        XCTAssertTrue(log.all.contains { $0.hasPrefix("<5>") && $0.contains("credentials: passback (soft): number 12345678 entered at ") }, "\(log.all)")
        let hard = try withPassback(.hard, "hard")
        XCTAssertEqual(judged(hard, token).verdict, .accepted)
        XCTAssertEqual(judged(hard, token).verdict, .rejected(reason: "passback"))

        // The store's next write fails for real: a file-size limit of 0 (EFBIG, as a full disk gives ENOSPC).
        let failingHard = try withPassback(.hard, "failing-hard"), failingSoft = try withPassback(.soft, "failing-soft")
        log.clear()
        signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        var limit = saved
        limit.rlim_cur = 0
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        let refused = judged(failingHard, token)
        let letThrough = judged(failingSoft, token)
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        signal(SIGXFSZ, SIG_DFL)
        XCTAssertEqual(refused.verdict, .rejected(reason: "replay store failed"))
        XCTAssertEqual(letThrough.verdict, .accepted)
        let errors = log.all.filter { $0.hasPrefix("<3>") }
        XCTAssertEqual(errors.count, 2, "\(log.all)")
        XCTAssertTrue(errors.contains { $0.contains(dir + "/failing-hard") && $0.contains("anti-passback hard fails closed") }, "\(errors)")
        XCTAssertTrue(errors.contains { $0.contains(dir + "/failing-soft") && $0.contains("the pass is accepted (anti-passback soft)") }, "\(errors)")
    }

    func testLogsNeverCarryTheWholeToken() throws {
        let token = try pass(.jwt)
        let policy = policy { $0.audience = "front" }
        _ = judged(policy, token)
        _ = judged(self.policy(), token)
        XCTAssertFalse(log.all.isEmpty)
        for line in log.all {
            XCTAssertFalse(line.contains(token), line)
            XCTAssertFalse(line.contains(String(token.split(separator: ".")[2])), "the signature: \(line)")
        }
        XCTAssertTrue(log.all.contains { $0.contains("credential refused: wrong-audience (eyJhbGci... \(token.utf8.count) bytes, sha256 ") }, "\(log.all)")
        XCTAssertTrue(log.all.contains { $0.contains("credential accepted: jwt number 12345678 kid site jti ") }, "\(log.all)")
    }

    func testReportOutputsSeeTheFingerprintNeverTheToken() throws {
        // Accepted (number and token output), refused as wrong-audience (a pass good at another door) and
        // as clock not synchronised (a pass good a minute later): the JSON line and the journal line carry
        // the fingerprint; only door outputs get the token, and only with credential-output = token.
        let token = try pass(.cwt)
        let fingerprint = TokenFingerprint.describe(Array(token.utf8))
        let unsynced = policy(clock: ClockSync.fixed(false))
        for (policy, expect) in [(policy(), Verdict.accepted), (policy { $0.output = .token }, .accepted),
                                 (policy { $0.audience = "front" }, .rejected(reason: "wrong-audience")),
                                 (unsynced, .rejected(reason: "clock not synchronised"))] {
            let event = judged(policy, token)
            XCTAssertEqual(event.verdict, expect)
            XCTAssertEqual(String(decoding: event.symbol.data, as: UTF8.self), fingerprint)
            XCTAssertEqual(event.symbol.symbology, .qr)
            let json = EventLine.json(event)
            XCTAssertFalse(json.contains(token), json)
            XCTAssertTrue(json.contains("\"data\":\"SG1:"), json)
            XCTAssertFalse(JournalLogSink.line(for: event).contains(token))
            XCTAssertFalse(EventLine.text(event)?.contains(token) ?? false)
            if policy.settings.output == .token, expect.isAccepted {
                XCTAssertEqual(event.doorData, Array(token.utf8))
            } else if expect.isAccepted {
                XCTAssertEqual(event.doorData, Array("12345678".utf8))
            }
        }
    }

    func testReloadSwapsKeysAndKeepsThemWhenTheFileIsBroken() throws {
        let rotated = try PrivateKey.generate(.ed25519)
        let path = try CredentialFixtures.writeJWKS([("site", ed), ("next", rotated)], in: dir)
        var settings = CredentialFixtures.settings()
        settings.keys = path
        settings.requireSyncedClock = false
        let policy = try CredentialPolicy.make(settings: settings, logger: log.logger)
        let next = try PassIssuer.issue(PassRequest(format: .jwt, number: "9", lifetimeSeconds: 60, keyID: "next", now: CredentialFixtures.now), key: rotated)
        XCTAssertEqual(judged(policy, next).verdict, .accepted, "two keys valid at once")
        // The site drops "next": after the reload its passes are unknown.
        _ = try CredentialFixtures.writeJWKS([("site", ed)], in: dir)
        XCTAssertNil(policy.reloadKeys())
        XCTAssertEqual(judged(policy, next).verdict, .rejected(reason: "unknown-key"))
        // A broken file on reload: an error, and the keys in use stay.
        try TestFiles.write("{\"keys\":[{\"kty\":\"OKP\"}]}", to: path)
        let error = try XCTUnwrap(policy.reloadKeys())
        XCTAssertTrue("\(error)".contains(path), "\(error)")
        XCTAssertEqual(judged(policy, try pass()).verdict, .accepted)
        XCTAssertTrue(log.all.contains { $0.hasPrefix("<3>credentials: reload failed, keeping the keys in use: credential-keys \(path)") }, "\(log.all)")
    }

    func testMakeNamesTheOptionOrFile() throws {
        var settings = CredentialSettings()
        settings.format = .jwt
        XCTAssertThrowsError(try CredentialPolicy.make(settings: settings, logger: log.logger)) {
            XCTAssertTrue("\($0)".hasPrefix("--credential-keys must be set when --credential-format is jwt"), "\($0)")
        }
        settings.keys = dir + "/none.jwks"
        XCTAssertThrowsError(try CredentialPolicy.make(settings: settings, logger: log.logger)) {
            XCTAssertTrue("\($0)".hasPrefix("credential-keys \(self.dir)/none.jwks: cannot open"), "\($0)")
        }
        settings.keys = try CredentialFixtures.writeJWKS([("site", ed)], in: dir)
        settings.oneTime = true
        settings.replayStore = dir + "/missing/replay"
        XCTAssertThrowsError(try CredentialPolicy.make(settings: settings, logger: log.logger)) {
            XCTAssertTrue("\($0)".hasPrefix("credential-replay-store \(self.dir)/missing/replay: cannot open"), "\($0)")
        }
    }

    func testSettingsValidation() throws {
        var s = CredentialSettings()
        XCTAssertNoThrow(try s.validate(), "off needs nothing")
        s.format = .any
        s.keys = "/etc/scangate/keys.jwks"
        XCTAssertNoThrow(try s.validate())
        let cases: [((inout CredentialSettings) -> Void, String)] = [
            ({ $0.algorithms = [] }, "--credential-algorithms is empty"),
            ({ $0.leewaySeconds = 3601 }, "--credential-leeway-s: 3601 is not a whole number from 0 to 3600"),
            ({ $0.maxLifetimeSeconds = -1 }, "--credential-max-lifetime-s"),
            ({ $0.numberClaim = "" }, "--credential-number-claim"),
            ({ $0.audience = "" }, "--credential-audience is empty"),
            ({ $0.issuer = "" }, "--credential-issuer is empty"),
            ({ $0.oneTime = true; $0.replayStore = "relative/path" }, "--credential-replay-store: 'relative/path' must be an absolute path"),
        ]
        for (change, expected) in cases {
            var bad = s
            change(&bad)
            XCTAssertThrowsError(try bad.validate()) { XCTAssertTrue("\($0)".hasPrefix(expected), "\($0)") }
        }
        XCTAssertEqual(try CredentialSettings.parseAlgorithms("EdDSA, es256,ed25519"), [.ed25519, .es256])
        XCTAssertThrowsError(try CredentialSettings.parseAlgorithms("ed25519,hs256")) { XCTAssertTrue("\($0)".contains("'hs256' is not one of ed25519, es256")) }
        XCTAssertEqual(try CredentialSettings.parseFormat(" CWT"), .cwt)
        XCTAssertThrowsError(try CredentialSettings.parseFormat("jws"))
        XCTAssertEqual(try CredentialSettings.parseOutput("token"), .token)
        XCTAssertThrowsError(try CredentialSettings.parseOutput("both"))
        // Defaults, as the issue and the brief give them.
        let d = CredentialSettings()
        XCTAssertEqual(d.format, .off)
        XCTAssertEqual(d.leewaySeconds, 30)
        XCTAssertEqual(d.numberClaim, "sub")
        XCTAssertEqual(d.replayStore, "/var/lib/scangate/credential-replay")
        XCTAssertTrue(d.requireSyncedClock)
        XCTAssertEqual(d.output, .number)
        XCTAssertFalse(d.oneTime)
    }

    func testCredentialJSONMemberParses() throws {
        let info = CredentialInfo(format: "cwt", number: "12\"34", keyID: "k\u{7}", tokenID: nil, expiresAt: 1_800_000_000)
        let text = CredentialJSON.object(info)
        XCTAssertEqual(text, "{\"format\":\"cwt\",\"number\":\"12\\\"34\",\"kid\":\"k\\u0007\",\"jti\":null,\"exp\":1800000000}")
        let parsed = try JSONValue.parse(text)
        XCTAssertEqual(parsed["number"]?.stringValue, "12\"34")
        XCTAssertEqual(parsed["jti"], .null)
        XCTAssertEqual(parsed["exp"]?.numberValue?.int64, 1_800_000_000)
        let withID = CredentialJSON.object(CredentialInfo(format: "jwt", number: "1", keyID: "k", tokenID: "abc", expiresAt: 5))
        XCTAssertEqual(try JSONValue.parse(withID)["jti"]?.stringValue, "abc")
        XCTAssertFalse(withID.contains("passback"), "passback appears only when set")
        let passback = CredentialJSON.object(CredentialInfo(format: "jwt", number: "1", keyID: "k", tokenID: nil, expiresAt: 5, passback: true))
        XCTAssertEqual(passback, "{\"format\":\"jwt\",\"number\":\"1\",\"kid\":\"k\",\"jti\":null,\"exp\":5,\"passback\":true}")
    }
}
