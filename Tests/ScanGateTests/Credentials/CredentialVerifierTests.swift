import Core
@testable import Credentials
import XCTest
import Settings

/// Each refusal reason, the parsers' strictness and the claim rules, on passes made here (the peer tests
/// use passes from PyJWT and cwt).
final class CredentialVerifierTests: XCTestCase {
    var ed: PrivateKey!
    var es: PrivateKey!
    var keys: CredentialKeySet!
    let now = CredentialFixtures.now

    override func setUpWithError() throws {
        let (edKey, edPublic) = try CredentialFixtures.keyPair(.ed25519, kid: "ed")
        let (esKey, esPublic) = try CredentialFixtures.keyPair(.es256, kid: "es")
        ed = edKey
        es = esKey
        keys = CredentialKeySet(keys: [edPublic, esPublic], source: "test")
    }

    func verify(_ token: String, _ configure: (inout CredentialSettings) -> Void = { _ in }) -> Result<VerifiedPass, Refusal> {
        var settings = CredentialFixtures.settings()
        configure(&settings)
        return CredentialVerifier(settings: settings, keys: keys).verify(Array(token.utf8), now: now)
    }

    func assertRefused(_ token: String, _ reason: RefusalReason, _ detail: String? = nil,
                       _ configure: (inout CredentialSettings) -> Void = { _ in }, file: StaticString = #filePath, line: UInt = #line) {
        switch verify(token, configure) {
        case .success(let pass): XCTFail("accepted \(pass.number); expected \(reason.rawValue)", file: file, line: line)
        case .failure(let refusal):
            XCTAssertEqual(refusal.reason, reason, refusal.detail, file: file, line: line)
            if let detail { XCTAssertTrue(refusal.detail.contains(detail), "'\(detail)' not in: \(refusal.detail)", file: file, line: line) }
        }
    }

    func issue(_ format: CredentialFormat, key: PrivateKey? = nil, kid: String = "ed", _ change: (inout PassRequest) -> Void = { _ in }) throws -> String {
        var request = PassRequest(format: format, number: "12345678", lifetimeSeconds: 600, keyID: kid, oneTime: true, now: now)
        change(&request)
        return try PassIssuer.issue(request, key: key ?? ed)
    }

    func testOwnPassesVerifyInBothFormatsAndAlgorithms() throws {
        for format in CredentialFormat.allCases {
            for (key, kid) in [(ed!, "ed"), (es!, "es")] {
                let token = try issue(format, key: key, kid: kid)
                let pass = try verify(token).get()
                XCTAssertEqual(pass.format, format)
                XCTAssertEqual(pass.number, "12345678")
                XCTAssertEqual(pass.keyID, kid)
                XCTAssertEqual(pass.expiresAtSeconds, now + 600)
                XCTAssertNotNil(pass.tokenID)
                XCTAssertEqual(pass.info, CredentialInfo(format: format.rawValue, number: "12345678", keyID: kid, tokenID: pass.tokenID, expiresAt: now + 600))
            }
        }
    }

    func testTypicalCWTPassFitsQRVersion7() throws {
        let token = try PassIssuer.issue(PassRequest(format: .cwt, number: "12345678", lifetimeSeconds: 3600, oneTime: true, now: now), key: ed)
        XCTAssertEqual(token.count, 172, token)   // QR version 7 at ECC M holds 178 alphanumeric characters
        XCTAssertTrue(token.utf8.allSatisfy { Base45.alphabet.contains($0) }, "every character is QR alphanumeric")
    }

    func testAlgorithmsOutsideTheListAreRefusedWhateverTheHeaderSays() throws {
        let claims = "{\"sub\":\"1\",\"exp\":\(now + 600)}"
        for alg in ["none", "HS256", "HS512", "RS256", "PS256", "ES384", "eddsa", "EDDSA", ""] {
            assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"\(alg)\",\"kid\":\"ed\"}", claims: claims, key: nil, signature: [1, 2, 3]),
                          .algorithmNotAllowed)
        }
        // HS256 "signed" with the public key's PEM text as the HMAC secret: refused before any key is used.
        assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"HS256\",\"kid\":\"ed\"}", claims: claims, key: nil,
                                                 signature: [UInt8](repeating: 9, count: 32)), .algorithmNotAllowed, "HS256")
        // credential-algorithms narrows the list.
        let esToken = try issue(.jwt, key: es, kid: "es")
        assertRefused(esToken, .algorithmNotAllowed, "not in credential-algorithms") { $0.algorithms = [.ed25519] }
        assertRefused(try issue(.cwt, key: es, kid: "es"), .algorithmNotAllowed, "not in credential-algorithms") { $0.algorithms = [.ed25519] }
        // A kid naming a key of the other type.
        assertRefused(try issue(.jwt, key: es, kid: "ed"), .algorithmNotAllowed, "is an Ed25519 key")
        // "Ed25519" (RFC 9864) is EdDSA by its fully-specified name.
        let fully = try CredentialFixtures.jws(header: "{\"alg\":\"Ed25519\",\"kid\":\"ed\"}", claims: claims, key: ed)
        XCTAssertEqual(try verify(fully).get().number, "1")
    }

    func testKeySelection() throws {
        assertRefused(try issue(.jwt, kid: "nobody"), .unknownKey, "\"nobody\"")
        assertRefused(try issue(.cwt, kid: "nobody"), .unknownKey, "\"nobody\"")
        // Signed by a key not in the set, under a kid that is: bad signature.
        assertRefused(try issue(.jwt, key: try PrivateKey.generate(.ed25519), kid: "ed"), .badSignature)
        assertRefused(try issue(.cwt, key: try PrivateKey.generate(.ed25519), kid: "ed"), .badSignature)
        // Without a kid every key of the algorithm is tried; the one that verifies is reported.
        let claims = "{\"sub\":\"7\",\"exp\":\(now + 600)}"
        let noKid = try CredentialFixtures.jws(header: "{\"alg\":\"ES256\"}", claims: claims, key: es)
        XCTAssertEqual(try verify(noKid).get().keyID, "es")
        let foreign = try CredentialFixtures.jws(header: "{\"alg\":\"ES256\"}", claims: claims, key: try PrivateKey.generate(.es256))
        assertRefused(foreign, .badSignature, "no kid")
        let onlyEd = CredentialKeySet(keys: [keys.keys[0]], source: "test")
        let result = CredentialVerifier(settings: CredentialFixtures.settings(), keys: onlyEd).verify(Array(noKid.utf8), now: now)
        XCTAssertEqual(result.failureReason, .unknownKey)
    }

    func testSignatureTampering() throws {
        for format in CredentialFormat.allCases {
            let token = try issue(format)
            if format == .jwt {
                let parts = token.split(separator: ".").map(String.init)
                var sig = try XCTUnwrap(Base64.urlDecode(parts[2]))
                sig[5] ^= 0x20
                assertRefused(parts[0] + "." + parts[1] + "." + Base64.urlEncode(sig), .badSignature)
                // The claims changed under the same signature.
                let other = Base64.urlEncode(Array("{\"sub\":\"99999999\",\"exp\":\(now + 600)}".utf8))
                assertRefused(parts[0] + "." + other + "." + parts[2], .badSignature)
                assertRefused(parts[0] + "." + parts[1] + ".", .badSignature)
            } else {
                var bytes = try Base45.decode(String(token.dropFirst(4)))
                bytes[bytes.count - 3] ^= 0x01
                assertRefused(COSESign1.prefix + Base45.encode(bytes), .badSignature)
            }
        }
    }

    func testJWSSyntaxIsStrict() throws {
        let good = try issue(.jwt)
        let parts = good.split(separator: ".").map(String.init)
        let claims = "{\"sub\":\"1\",\"exp\":\(now + 600)}"
        let cases: [(String, String)] = [
            ("", "three base64url parts"),
            ("abc", "three base64url parts"),
            (parts[0] + "." + parts[1], "three base64url parts"),
            (good + ".x", "three base64url parts"),                      // JWE has five parts
            (parts[0] + "=." + parts[1] + "." + parts[2], "header is not base64url"),
            (parts[0] + "." + parts[1] + "." + parts[2] + "=", "signature is not base64url"),
            ("." + parts[1] + "." + parts[2], "needs a header"),
            (Base64.urlEncode(Array("[]".utf8)) + "." + parts[1] + "." + parts[2], "not a JSON object"),
            (Base64.urlEncode(Array("{\"alg\":\"EdDSA\",\"alg\":\"none\"}".utf8)) + "." + parts[1] + "." + parts[2], "appears twice"),
            (Base64.urlEncode(Array("{\"kid\":\"ed\"}".utf8)) + "." + parts[1] + "." + parts[2], "no \"alg\""),
            (String(repeating: "a", count: 5000), "longer than a pass"),
        ]
        for (token, detail) in cases { assertRefused(token, .malformed, detail) }
        // crit (RFC 7515 §4.1.11): no extension is understood, so any crit refuses; b64 likewise.
        assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\",\"crit\":[\"exp\"],\"exp\":1}", claims: claims, key: ed),
                      .malformed, "critical")
        assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\",\"b64\":false}", claims: claims, key: ed), .malformed, "b64")
        assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":1}", claims: claims, key: ed), .malformed, "kid")
        // An embedded key (jwk, jku, x5c) is never used: the kid still picks our key.
        let embedded = try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\",\"jwk\":{\"kty\":\"OKP\"},\"jku\":\"http://x\"}",
                                                  claims: claims, key: try PrivateKey.generate(.ed25519))
        assertRefused(embedded, .badSignature)
        // Claims: duplicate members, wrong types, missing exp and number.
        let claimCases: [(String, String)] = [
            ("{\"sub\":\"1\",\"exp\":\(now + 600),\"exp\":\(now + 99999)}", "appears twice"),
            ("{\"sub\":\"1\"}", "no exp"),
            ("{\"sub\":\"1\",\"exp\":\"tomorrow\"}", "NumericDate"),
            ("{\"exp\":\(now + 600)}", "no \"sub\" claim"),
            ("{\"sub\":{\"a\":1},\"exp\":\(now + 600)}", "string or a whole number"),
            ("{\"sub\":\"a\\u0007b\",\"exp\":\(now + 600)}", "control characters"),
            ("{\"sub\":\"1\",\"exp\":\(now + 600),\"aud\":5}", "\"aud\" must be"),
            ("{\"sub\":\"1\",\"exp\":\(now + 600),\"iss\":[]}", "\"iss\" must be"),
            ("{\"sub\":\"1\",\"exp\":\(now + 600),\"jti\":\"\"}", "jti/cti"),
            ("[1]", "not a JSON object"),
        ]
        for (body, detail) in claimCases {
            assertRefused(try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\"}", claims: body, key: ed), .malformed, detail)
        }
    }

    func testCOSESyntaxIsStrict() throws {
        let claims = CredentialFixtures.map([(2, .text("1")), (4, .int(now + 600))])
        let protected = CredentialFixtures.map([(1, .int(-8)), (4, .bytes(Array("ed".utf8)))])
        XCTAssertEqual(try verify(try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed)).get().number, "1")
        // Inside CWT tag 61 is accepted; untagged, or another tag, is not.
        XCTAssertNoThrow(try verify(try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed, tag: 18)).get())
        assertRefused(try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed, tag: nil), .malformed, "tag 18")
        assertRefused(try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed, tag: 17), .malformed, "tag 18")
        // alg: required, protected, ours.
        let kidOnly = CredentialFixtures.map([(4, .bytes(Array("ed".utf8)))])
        assertRefused(try CredentialFixtures.cwt(protected: kidOnly, claims: claims, key: ed), .malformed, "no alg")
        assertRefused(try CredentialFixtures.cwt(protected: kidOnly, unprotected: CBORMap([(.int(1), .int(-8))])!, claims: claims, key: ed),
                      .malformed, "alg must be in the protected header")
        for alg: Int64 in [5, 6, 7, -35, -257, 0] {
            assertRefused(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(alg)), (4, .bytes(Array("ed".utf8)))]),
                                                     claims: claims, key: ed), .algorithmNotAllowed, "COSE alg \(alg)")
        }
        assertRefused(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .text("EdDSA"))]), claims: claims, key: ed), .algorithmNotAllowed)
        // -19 (Ed25519, RFC 9864) verifies like -8.
        XCTAssertNoThrow(try verify(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-19)), (4, .bytes(Array("ed".utf8)))]),
                                                               claims: claims, key: ed)).get())
        // A label in both buckets; crit; a kid that is not a byte string.
        assertRefused(try CredentialFixtures.cwt(protected: protected, unprotected: CBORMap([(.int(4), .bytes(Array("ed".utf8)))])!, claims: claims, key: ed),
                      .malformed, "both")
        assertRefused(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8)), (2, .array([.int(99)])), (99, .int(1))]),
                                                 claims: claims, key: ed), .malformed, "critical")
        assertRefused(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8)), (4, .text("ed"))]), claims: claims, key: ed),
                      .malformed, "kid")
        // A kid that is not UTF-8 matches no key.
        assertRefused(try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8)), (4, .bytes([0xFF, 0xFE]))]), claims: claims, key: ed),
                      .unknownKey, "fffe")
        // Duplicate labels in the protected header, as bytes (the CBOR decoder refuses them).
        let duplicateAlg: [UInt8] = [0xA2, 0x01, 0x27, 0x01, 0x26]
        let payload = claims.encoded
        let message = CBORValue.tagged(18, .array([.bytes(duplicateAlg), .map(CBORMap()), .bytes(payload),
                                                   .bytes(try ed.sign(COSESign1.sigStructure(protected: duplicateAlg, payload: payload)))]))
        assertRefused(COSESign1.prefix + Base45.encode(message.encoded), .malformed, "twice")
        // A detached payload (nil) is not a pass.
        let detached = CBORValue.tagged(18, .array([.bytes(protected.encoded), .map(CBORMap()), .null, .bytes([])]))
        assertRefused(COSESign1.prefix + Base45.encode(detached.encoded), .malformed, "detached")
        // Base45 and prefix errors.
        assertRefused("SG1:bb8", .malformed, "base45")
        assertRefused("SG1:GGW", .malformed, "two bytes")
        assertRefused("SG2:" + Base45.encode(message.encoded), .malformed) { $0.format = .cwt }
        // Claims with float dates (a NumericDate may be one), and wrong types.
        let floatExp = CredentialFixtures.map([(2, .text("1")), (4, .float(Double(now) + 600.5))])
        XCTAssertEqual(try verify(try CredentialFixtures.cwt(protected: protected, claims: floatExp, key: ed)).get().expiresAtSeconds, now + 600)
        let typeCases: [(CBORValue, String)] = [
            (CredentialFixtures.map([(2, .text("1")), (4, .text("soon"))]), "NumericDate"),
            (CredentialFixtures.map([(2, .text("1")), (4, .float(.infinity))]), "NumericDate"),
            (CredentialFixtures.map([(2, .text("1")), (4, .int(now + 600)), (7, .text("id"))]), "cti (7) must be a byte string"),
            (CredentialFixtures.map([(2, .text("1")), (4, .int(now + 600)), (3, .int(1))]), "aud (3)"),
            (CredentialFixtures.map([(2, .bytes([1])), (4, .int(now + 600))]), "number claim"),
            (CredentialFixtures.map([(4, .int(now + 600))]), "no \"sub\" claim"),
            (.array([.int(1)]), "not a map"),
        ]
        for (body, detail) in typeCases {
            assertRefused(try CredentialFixtures.cwt(protected: protected, claims: body, key: ed), .malformed, detail)
        }
    }

    func testTimeClaims() throws {
        func jwt(_ claims: String) throws -> String {
            try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\"}", claims: "{\"sub\":\"1\",\(claims)}", key: ed)
        }
        // exp, with the leeway (default 30 s): valid until exp + 30.
        XCTAssertNoThrow(try verify(try jwt("\"exp\":\(now - 29)")).get())
        assertRefused(try jwt("\"exp\":\(now - 30)"), .expired, "30 s ago")
        assertRefused(try jwt("\"exp\":\(now - 1)"), .expired) { $0.leewaySeconds = 0 }
        assertRefused(try jwt("\"exp\":-1e300"), .expired)
        XCTAssertNoThrow(try verify(try jwt("\"exp\":1e300")).get())
        // nbf.
        XCTAssertNoThrow(try verify(try jwt("\"exp\":\(now + 600),\"nbf\":\(now + 30)")).get())
        assertRefused(try jwt("\"exp\":\(now + 600),\"nbf\":\(now + 31)"), .notYetValid, "31 s ahead")
        // The lifetime: from nbf, else iat, else now.
        let limit: (inout CredentialSettings) -> Void = { $0.maxLifetimeSeconds = 3600 }
        XCTAssertNoThrow(try verify(try jwt("\"exp\":\(now + 3600),\"iat\":\(now)"), limit).get())
        assertRefused(try jwt("\"exp\":\(now + 3601),\"iat\":\(now)"), .lifetimeTooLong, "3601 s from iat", limit)
        assertRefused(try jwt("\"exp\":\(now + 600),\"iat\":\(now - 7200)"), .lifetimeTooLong, "from iat", limit)
        XCTAssertNoThrow(try verify(try jwt("\"exp\":\(now + 600),\"iat\":\(now - 7200),\"nbf\":\(now)"), limit).get())
        assertRefused(try jwt("\"exp\":\(now + 7200)"), .lifetimeTooLong, "from now", limit)
        XCTAssertNoThrow(try verify(try jwt("\"exp\":\(now + 99_999_999)")).get())   // 0 = no limit
    }

    func testAudienceIssuerAndNumberClaim() throws {
        func jwt(_ claims: String) throws -> String {
            try CredentialFixtures.jws(header: "{\"alg\":\"EdDSA\",\"kid\":\"ed\"}", claims: "{\"sub\":\"1\",\"exp\":\(now + 600)\(claims)}", key: ed)
        }
        let front: (inout CredentialSettings) -> Void = { $0.audience = "front" }
        XCTAssertNoThrow(try verify(try jwt(",\"aud\":\"front\""), front).get())
        XCTAssertNoThrow(try verify(try jwt(",\"aud\":[\"back\",\"front\"]"), front).get())
        assertRefused(try jwt(",\"aud\":\"back\""), .wrongAudience, "\"back\"", front)
        assertRefused(try jwt(",\"aud\":[]"), .wrongAudience, nil, front)
        assertRefused(try jwt(""), .wrongAudience, "no aud", front)
        // RFC 7519 §4.1.3: a pass with an aud this kiosk does not claim is refused.
        assertRefused(try jwt(",\"aud\":\"front\""), .wrongAudience, "credential-audience is not set")
        let site: (inout CredentialSettings) -> Void = { $0.issuer = "site" }
        XCTAssertNoThrow(try verify(try jwt(",\"iss\":\"site\""), site).get())
        assertRefused(try jwt(",\"iss\":\"other\""), .wrongIssuer, "\"other\"", site)
        assertRefused(try jwt(""), .wrongIssuer, "no iss", site)
        XCTAssertNoThrow(try verify(try jwt(",\"iss\":\"anyone\"")).get())
        // credential-number-claim: another claim, a whole number as text.
        let card: (inout CredentialSettings) -> Void = { $0.numberClaim = "card" }
        XCTAssertEqual(try verify(try jwt(",\"card\":4000123"), card).get().number, "4000123")
        XCTAssertEqual(try verify(try jwt(",\"card\":\"0042\""), card).get().number, "0042")
        assertRefused(try jwt(",\"card\":1.5"), .malformed, "whole number", card)
        // CWT: a registered name, an integer label, a text key.
        let protected = CredentialFixtures.map([(1, .int(-8)), (4, .bytes(Array("ed".utf8)))])
        let claims = CBORValue.map(CBORMap([(.int(2), .text("sub-value")), (.int(4), .int(now + 600)),
                                            (.int(-70000), .int(77)), (.text("card"), .text("c-1")), (.int(1), .text("site"))])!)
        let token = try CredentialFixtures.cwt(protected: protected, claims: claims, key: ed)
        XCTAssertEqual(try verify(token).get().number, "sub-value")
        XCTAssertEqual(try verify(token) { $0.numberClaim = "-70000" }.get().number, "77")
        XCTAssertEqual(try verify(token) { $0.numberClaim = "card" }.get().number, "c-1")
        XCTAssertEqual(try verify(token) { $0.numberClaim = "iss" }.get().number, "site")
        XCTAssertEqual(try verify(token) { $0.issuer = "site" }.get().issuer, "site")
        XCTAssertTrue(try verify(token).get().claimsJSON.contains("\"iss\":\"site\""))
    }

    func testFormatSettingPicksTheParser() throws {
        let jwt = try issue(.jwt), cwt = try issue(.cwt)
        XCTAssertNoThrow(try verify(jwt) { $0.format = .jwt }.get())
        assertRefused(cwt, .malformed, nil) { $0.format = .jwt }
        XCTAssertNoThrow(try verify(cwt) { $0.format = .cwt }.get())
        assertRefused(jwt, .malformed, "starts with SG1:") { $0.format = .cwt }
        assertRefused("HELLO WORLD", .malformed)
        assertRefused("", .malformed)
    }
}

extension Result where Failure == Refusal {
    var failureReason: RefusalReason? {
        if case .failure(let r) = self { return r.reason }
        return nil
    }
}
