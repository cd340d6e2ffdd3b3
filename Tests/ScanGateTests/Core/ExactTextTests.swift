import Core
@testable import Credentials
import Foundation
import MQTT
import Policies
import Settings
import XCTest

/// Issue 19 item 6: text a security decision depends on is compared byte for byte (UTF-8), never by
/// Unicode canonical equivalence, which Swift's `String ==` uses. "\u{212A}" (KELVIN SIGN) is
/// canonically "K"; "cafe\u{301}" (decomposed) is canonically "caf\u{E9}" (composed).
final class ExactTextTests: XCTestCase {
    static let kelvin = "\u{212A}"
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    var ed: PrivateKey!
    var keys: CredentialKeySet!
    let now = CredentialFixtures.now

    override func setUpWithError() throws {
        let (key, publicKey) = try CredentialFixtures.keyPair(.ed25519, kid: "K1")
        ed = key
        keys = CredentialKeySet(keys: [publicKey], source: "test")
    }

    func testTheHelperComparesBytes() {
        // What the fix is about: Swift's own comparisons call these equal.
        XCTAssertEqual("K", Self.kelvin)
        XCTAssertEqual(Self.composed, Self.decomposed)
        XCTAssertFalse("K".bytesEqual(Self.kelvin))
        XCTAssertFalse(Self.composed.bytesEqual(Self.decomposed))
        XCTAssertTrue("front-door-K".bytesEqual("front-door-K"))
        XCTAssertFalse("\(Self.kelvin)1".bytesStart(with: "K"))
        XCTAssertTrue("K1".bytesStart(with: "K"))
        XCTAssertEqual(Set([UTF8Key("K"), UTF8Key(Self.kelvin), UTF8Key("K")]).count, 2)
        XCTAssertEqual(JSONText.asciiString("front-door-\(Self.kelvin) \u{1F600}"), #""front-door-\u212a \ud83d\ude00""#)
        XCTAssertEqual(JSONText.asciiString("plain \"ascii\""), JSONText.string("plain \"ascii\""))
    }

    func verify(_ token: String, _ configure: (inout CredentialSettings) -> Void) -> Result<VerifiedPass, Refusal> {
        var settings = CredentialFixtures.settings()
        configure(&settings)
        return CredentialVerifier(settings: settings, keys: keys).verify(Array(token.utf8), now: now)
    }

    func refusal(_ token: String, _ configure: (inout CredentialSettings) -> Void) throws -> Refusal {
        switch verify(token, configure) {
        case .success(let pass): XCTFail("accepted \(pass.number)"); throw NSError(domain: "accepted", code: 1)
        case .failure(let r): return r
        }
    }

    func issue(_ format: CredentialFormat, aud: String? = nil, iss: String? = nil, kid: String = "K1") throws -> String {
        try PassIssuer.issue(PassRequest(format: format, number: "4711", lifetimeSeconds: 600, audience: aud, issuer: iss,
                                         keyID: kid, now: now), key: ed)
    }

    func testAudienceIsComparedByteForByte() throws {
        for format in CredentialFormat.allCases {
            // The same characters: accepted, as before.
            XCTAssertEqual(try verify(try issue(format, aud: "front-door-K")) { $0.audience = "front-door-K" }.get().number, "4711")
            // KELVIN SIGN in the pass, K in credential-audience (and the other way round): refused.
            let r = try refusal(try issue(format, aud: "front-door-\(Self.kelvin)")) { $0.audience = "front-door-K" }
            XCTAssertEqual(r.reason, .wrongAudience, "\(format)")
            XCTAssertEqual(r.detail, #"aud "front-door-\u212a" does not include "front-door-K" (equal only as Unicode-equivalent text; compared byte for byte)"#)
            XCTAssertEqual(try refusal(try issue(format, aud: "front-door-K")) { $0.audience = "front-door-\(Self.kelvin)" }.reason, .wrongAudience)
            XCTAssertEqual(try refusal(try issue(format, aud: Self.decomposed)) { $0.audience = Self.composed }.reason, .wrongAudience)
        }
        // In an aud array too.
        let claims = "{\"sub\":\"1\",\"exp\":\(now + 600),\"aud\":[\"back\",\"front-door-\\u212a\"]}"
        let token = try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"K1\"}", claims: claims, key: ed)
        XCTAssertEqual(try refusal(token) { $0.audience = "front-door-K" }.reason, .wrongAudience)
    }

    func testIssuerIsComparedByteForByte() throws {
        for format in CredentialFormat.allCases {
            XCTAssertNoThrow(try verify(try issue(format, iss: Self.composed)) { $0.issuer = Self.composed }.get())
            let r = try refusal(try issue(format, iss: Self.decomposed)) { $0.issuer = Self.composed }
            XCTAssertEqual(r.reason, .wrongIssuer, "\(format)")
            XCTAssertEqual(r.detail, #"iss "cafe\u0301" is not "caf\u00e9" (equal only as Unicode-equivalent text; compared byte for byte)"#)
            XCTAssertEqual(try refusal(try issue(format, iss: Self.composed)) { $0.issuer = Self.decomposed }.reason, .wrongIssuer)
            XCTAssertEqual(try refusal(try issue(format, iss: "site-\(Self.kelvin)")) { $0.issuer = "site-K" }.reason, .wrongIssuer)
        }
    }

    func testKidFindsOnlyTheKeyWithTheSameBytes() throws {
        XCTAssertNil(keys.key(id: "\(Self.kelvin)1"))
        XCTAssertNotNil(keys.key(id: "K1"))
        for format in CredentialFormat.allCases {
            XCTAssertEqual(try verify(try issue(format)) { _ in }.get().keyID, "K1")
            // Signed with the right key, but the header names kid "\u212A1": no key has that kid.
            let r = try refusal(try issue(format, kid: "\(Self.kelvin)1")) { _ in }
            XCTAssertEqual(r.reason, .unknownKey, "\(format)")
            XCTAssertEqual(r.detail, #"kid "\u212a1" is not in credential-keys (K1)"#)
        }
    }

    func testJWSHeaderMemberNamesAreExact() throws {
        let claims = "{\"sub\":\"1\",\"exp\":\(now + 600)}"
        // "\u212Aid" is not "kid" (nor "Kid"): the token has no kid, so every Ed25519 key is tried.
        let lookAlike = try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"\\u212aid\":\"nobody\"}", claims: claims, key: ed)
        guard case .success(let header) = TokenParser.header(Array(lookAlike.utf8), format: .jwt) else { return XCTFail("header refused") }
        XCTAssertNil(header.keyID)
        XCTAssertEqual(try verify(lookAlike) { _ in }.get().keyID, "K1")
        // "Kid" and "\u212Aid" are two members, not a duplicate; the real kid beside them is read.
        let both = try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"Kid\":\"x\",\"\\u212aid\":\"y\",\"kid\":\"K1\"}", claims: claims, key: ed)
        XCTAssertEqual(try verify(both) { _ in }.get().keyID, "K1")
        // A claim name that is canonically credential-number-claim is not it.
        let badge = try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"K1\"}",
                                               claims: "{\"badge-\\u212a\":\"66\",\"exp\":\(now + 600)}", key: ed)
        let r = try refusal(badge) { $0.numberClaim = "badge-K" }
        XCTAssertEqual(r.reason, .malformed)
        XCTAssertTrue(r.detail.contains("has no \"badge-K\" claim"), r.detail)
    }

    func testJSONMemberNamesAreDistinctByBytesAndExactDuplicatesStillRefused() throws {
        let object = try XCTUnwrap(JSONValue.parse(#"{"caf\u00e9":1,"cafe\u0301":2,"K":3,"\u212a":4}"#).objectValue)
        XCTAssertEqual(object.count, 4)
        XCTAssertEqual(object[Self.composed]?.numberValue?.int64, 1)
        XCTAssertEqual(object[Self.decomposed]?.numberValue?.int64, 2)
        XCTAssertEqual(object["K"]?.numberValue?.int64, 3)
        XCTAssertEqual(object[Self.kelvin]?.numberValue?.int64, 4)
        XCTAssertNil(try JSONValue.parse(#"{"\u212aid":1}"#)["Kid"])
        // The same bytes, however written, are a duplicate.
        for text in [#"{"kid":1,"kid":2}"#, #"{"K":1,"\u004b":2}"#, #"{"caf\u00e9":1,"café":2}"#] {
            XCTAssertThrowsError(try JSONValue.parse(text), text) { error in
                XCTAssertTrue("\(error)".contains("appears twice"), "\(error)")
            }
        }
        XCTAssertNotEqual(JSONValue.string("K"), JSONValue.string(Self.kelvin))
        XCTAssertEqual(JSONValue.string("K"), JSONValue.string("K"))
    }

    func testCBORTextKeysAreDistinctByBytes() throws {
        let map = try XCTUnwrap(CBORMap([(.text("K1"), .int(1)), (.text("\(Self.kelvin)1"), .int(2))]))
        let decoded = try XCTUnwrap(CBORValue.decode(CBORValue.map(map).encoded).mapValue)
        XCTAssertEqual(decoded.count, 2)
        XCTAssertEqual(decoded["K1"]?.int64, 1)
        XCTAssertEqual(decoded["\(Self.kelvin)1"]?.int64, 2)
        // The same bytes twice: still refused.
        let twice: [UInt8] = [0xA2, 0x62, 0x4B, 0x31, 0x01, 0x62, 0x4B, 0x31, 0x02]
        XCTAssertThrowsError(try CBORValue.decode(twice)) { XCTAssertTrue("\($0)".contains("appears twice"), "\($0)") }
        // A CWT text claim that is canonically credential-number-claim is not it.
        let protected = CredentialFixtures.map([(1, .int(-8)), (4, .bytes(Array("K1".utf8)))])
        let claims = CBORValue.map(CBORMap([(.text("badge-\(Self.kelvin)"), .text("66")), (.int(4), .int(now + 600))])!)
        let token = try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed)
        XCTAssertEqual(try refusal(token) { $0.numberClaim = "badge-K" }.reason, .malformed)
    }

    func testJWKSMembersAndKidsAreExact() throws {
        let x = try XCTUnwrap(try ed.publicKey().jwkMembers().first { $0.0 == "x" }?.1)
        // kty "O\u212AP" is no OKP key: skipped, so the set holds none.
        let lookAlike = #"{"keys":[{"kty":"O\u212aP","crv":"Ed25519","x":"\#(x)","kid":"a"}]}"#
        XCTAssertThrowsError(try CredentialKeySet.parseJWKS(Array(lookAlike.utf8), file: "k.jwks")) { error in
            XCTAssertTrue("\(error)".contains("holds no Ed25519 (OKP) or P-256 (EC) signing key"), "\(error)")
        }
        // kids "K1" and "\u212A1" are two kids; each finds its own key.
        let two = #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"\#(x)","kid":"K1"},{"kty":"OKP","crv":"Ed25519","x":"\#(x)","kid":"\u212a1"}]}"#
        let set = try CredentialKeySet.parseJWKS(Array(two.utf8), file: "k.jwks")
        XCTAssertEqual(set.keys.count, 2)
        XCTAssertEqual(set.key(id: "\(Self.kelvin)1")?.source, "k.jwks key 2")
        XCTAssertEqual(set.key(id: "K1")?.source, "k.jwks key 1")
        // alg names are exact.
        XCTAssertEqual(SignatureAlgorithm(joseName: "EdDSA"), .ed25519)
        XCTAssertNil(SignatureAlgorithm(joseName: "eddsa"))
    }

    func testMQTTCommandTopicIsMatchedByBytes() {
        let topics = MQTTTopics(prefix: "site/kiosk-K")
        XCTAssertEqual(topics.commandName(ofTopic: "site/kiosk-K/cmd/pause"), "pause")
        XCTAssertNil(topics.commandName(ofTopic: "site/kiosk-\(Self.kelvin)/cmd/pause"))
        XCTAssertNil(topics.commandName(ofTopic: "site/kiosk-K/cmd/a/b"))
        XCTAssertNil(topics.commandName(ofTopic: "site/kiosk-K/cmd/"))
        // A combining mark after '/' does not hide the level separator.
        XCTAssertNil(topics.commandName(ofTopic: "site/kiosk-K/cmd/x/\u{301}pause"))
    }

    func testPayloadFilterComparesBytes() throws {
        func verdict(_ payload: String, _ configure: (inout FilterSettings) -> Void) throws -> Verdict {
            var s = FilterSettings()
            configure(&s)
            return try PayloadFilter(settings: s).verdict(for: DecodedSymbol(symbology: .qr, data: Array(payload.utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)))
        }
        XCTAssertTrue(try verdict("K1") { $0.allowPrefixes = ["K"] }.isAccepted)
        XCTAssertFalse(try verdict("\(Self.kelvin)1") { $0.allowPrefixes = ["K"] }.isAccepted)
        XCTAssertFalse(try verdict(Self.decomposed + "-1") { $0.allowPrefixes = [Self.composed] }.isAccepted)
        // allow-regex: a literal matches its own bytes only.
        XCTAssertTrue(try verdict(Self.composed + "-12") { $0.allowRegex = "caf\u{E9}-[0-9]+" }.isAccepted)
        XCTAssertEqual(try verdict(Self.decomposed + "-12") { $0.allowRegex = "caf\u{E9}-[0-9]+" },
                       .rejected(reason: "payload does not match allow-regex"))
        XCTAssertTrue(try verdict("Z\u{FC}rich") { $0.allowRegex = "\\w+" }.isAccepted)
        // ASCII payloads match as before (the CR LF pair is one character to Swift's Regex).
        XCTAssertTrue(try verdict("a\r\nb") { $0.allowRegex = "a\\sb" }.isAccepted)
    }

    // MARK: - Through `scangate credential verify`, with passes made by PyJWT and by the cwt package.

    func verifyCommand(_ token: String, keys: String, _ options: [String]) throws -> (status: Int32, verdict: String?, reason: String?, stderr: String) {
        let result = try ScangateProcess.run(["credential", "verify", token, "--keys", keys, "--require-synced-clock", "no", "--json"] + options)
        let json = try JSONValue.parse(result.stdoutText.trimmingCharacters(in: .newlines))
        return (result.status, json["verdict"]?.stringValue, json["reason"]?.stringValue, result.stderr)
    }

    func peerPass(_ script: String, _ directory: String, _ options: [String]) throws -> (jwks: String, token: String) {
        let out = try PythonPeers.run(script, ["issue", directory] + options)
        XCTAssertEqual(out.status, 0, out.stdout)
        let json = try JSONValue.parse(out.stdout.trimmingCharacters(in: .newlines))
        return (try XCTUnwrap(json["jwks"]?.stringValue), try XCTUnwrap(json["token"]?.stringValue))
    }

    func testPeerPassesWithLookAlikeClaimsAreRefusedByTheCommand() throws {
        let dir = try TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for script in ["pyjwt_peer.py", "cwt_peer.py"] {
            // The control: the peer's pass with aud front-door-K is accepted, so the refusals below are the aud's.
            let plain = try peerPass(script, dir, ["--aud", "front-door-K"])
            let ok = try verifyCommand(plain.token, keys: plain.jwks, ["--aud", "front-door-K"])
            XCTAssertEqual(ok.status, 0, "\(script): \(ok.stderr)")
            XCTAssertEqual(ok.verdict, "accepted", script)

            let kelvin = try peerPass(script, dir, ["--aud", "front-door-\(Self.kelvin)"])
            let aud = try verifyCommand(kelvin.token, keys: kelvin.jwks, ["--aud", "front-door-K"])
            XCTAssertEqual(aud.status, 1, "\(script): exit 1 is a refused pass")
            XCTAssertEqual(aud.verdict, "rejected", script)
            XCTAssertEqual(aud.reason, "wrong-audience", script)

            let kid = try peerPass(script, dir, ["--key-kid", "K1", "--kid", "\(Self.kelvin)1"])
            let unknown = try verifyCommand(kid.token, keys: kid.jwks, [])
            XCTAssertEqual(unknown.status, 1, script)
            XCTAssertEqual(unknown.reason, "unknown-key", script)

            let iss = try peerPass(script, dir, ["--iss", Self.decomposed])
            let issuer = try verifyCommand(iss.token, keys: iss.jwks, ["--iss", Self.composed])
            XCTAssertEqual(issuer.status, 1, script)
            XCTAssertEqual(issuer.reason, "wrong-issuer", script)
        }
        // The text output names both values so that they can be told apart (its backslashes escaped, as every line's).
        let kelvin = try peerPass("pyjwt_peer.py", dir, ["--aud", "front-door-\(Self.kelvin)"])
        let text = try ScangateProcess.run(["credential", "verify", kelvin.token, "--keys", kelvin.jwks, "--require-synced-clock", "no",
                                            "--aud", "front-door-K"])
        XCTAssertEqual(text.status, 1)
        XCTAssertTrue(text.stdoutText.contains(#"refused: wrong-audience: aud "front-door-\\u212a" does not include "front-door-K" (equal only as Unicode-equivalent text"#),
                      text.stdoutText)
    }
}
