import Core
@testable import Credentials
import Foundation
import XCTest
import Platform

/// Passes from issuers that are not ours - PyJWT with cryptography, and the `cwt` package - judged by
/// the policy and by `scangate credential verify`; and our passes verified by PyJWT and cwt.
final class CredentialPeerTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func judgeEveryCase(_ script: String, expectedCases: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let peer = try PythonPeers.cases(script, in: dir)
        XCTAssertEqual(peer.cases.count, expectedCases, file: file, line: line)
        var settings = CredentialFixtures.settings(.any, audience: "front-door")
        settings.keys = peer.jwks
        let log = LogCapture()
        let policy = CredentialPolicy(settings: settings, keys: try CredentialKeySet.load(path: peer.jwks), store: nil,
                                      clock: ClockSync.fixed(true), logger: log.logger)
        for c in peer.cases {
            // Through the policy, as the decode queue runs it.
            var event = CredentialFixtures.event(Array(c.token.utf8))
            policy.judge(&event)
            if c.expect == "accepted" {
                XCTAssertEqual(event.verdict, .accepted, "\(script): \(c.name)", file: file, line: line)
                XCTAssertEqual(event.doorData, Array((c.number ?? "").utf8), "\(script): \(c.name)", file: file, line: line)
                XCTAssertEqual(event.credential?.number, c.number, "\(script): \(c.name)", file: file, line: line)
            } else {
                XCTAssertEqual(event.verdict, .rejected(reason: c.expect), "\(script): \(c.name)", file: file, line: line)
                XCTAssertNil(event.credential, file: file, line: line)
            }
            // Through the command a user runs.
            let result = try ScangateProcess.run(["credential", "verify", c.token, "--keys", peer.jwks, "--aud", "front-door",
                                                  "--require-synced-clock", "no", "--json"])
            XCTAssertEqual(result.status, c.expect == "accepted" ? 0 : 1, "\(script): \(c.name): \(result.stderr)", file: file, line: line)
            XCTAssertEqual(result.stdoutLines.count, 1, "\(script): \(c.name)", file: file, line: line)
            let json = try JSONValue.parse(result.stdoutText.trimmingCharacters(in: .newlines))
            if c.expect == "accepted" {
                XCTAssertEqual(json["verdict"]?.stringValue, "accepted", "\(script): \(c.name)", file: file, line: line)
                XCTAssertEqual(json["credential"]?["number"]?.stringValue, c.number, file: file, line: line)
            } else {
                XCTAssertEqual(json["verdict"]?.stringValue, "rejected", file: file, line: line)
                XCTAssertEqual(json["reason"]?.stringValue, c.expect, "\(script): \(c.name): \(result.stdoutText)", file: file, line: line)
            }
        }
    }

    func testPyJWTPassesAreJudgedRight() throws {
        // valid EdDSA, ES256 and aud array; expired; not yet valid; wrong audience; flipped signature bytes
        // (Ed25519, ES256); a foreign key; an unknown kid; alg none; HS256 keyed with the public key (PEM,
        // JWK x); an ES256 header on the Ed25519 kid.
        try judgeEveryCase("pyjwt_peer.py", expectedCases: 14)
    }

    func testCWTPackagePassesAreJudgedRight() throws {
        // valid EdDSA, ES256 and inside CWT tag 61; expired; not yet valid; wrong audience; a flipped
        // signature byte; a foreign key; an unknown kid; an HMAC alg keyed with the public key; ES256 on
        // the Ed25519 kid.
        try judgeEveryCase("cwt_peer.py", expectedCases: 11)
    }

    func testOurPassesVerifyWithPyJWTAndCWT() throws {
        for algorithm in ["ed25519", "es256"] {
            let keysDir = dir + "/" + algorithm
            let keygen = try ScangateProcess.run(["credential", "keygen", "--out", keysDir, "--algorithm", algorithm])
            XCTAssertEqual(keygen.status, 0, keygen.stderr)
            let keyFile = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: keysDir).first { $0.hasSuffix(".key") })
            let jwks = keysDir + "/credential-keys.jwks"
            let jwt = try ScangateProcess.run(["credential", "issue", "--key", keysDir + "/" + keyFile, "--number", "4711", "--ttl", "15m",
                                               "--aud", "front-door", "--iss", "site", "--one-time", "--format", "jwt", "--text"])
            XCTAssertEqual(jwt.status, 0, jwt.stderr)
            let token = jwt.stdoutText.trimmingCharacters(in: .newlines)
            let byPyJWT = try PythonPeers.run("pyjwt_peer.py", ["verify", jwks, token, "--aud", "front-door", "--iss", "site"])
            XCTAssertEqual(byPyJWT.status, 0, "\(algorithm): \(byPyJWT.stdout)")
            let claims = try JSONValue.parse(byPyJWT.stdout.trimmingCharacters(in: .newlines))
            XCTAssertEqual(claims["sub"]?.stringValue, "4711")
            XCTAssertEqual(claims["aud"]?.stringValue, "front-door")
            XCTAssertNotNil(claims["jti"]?.stringValue)
            let expires = try XCTUnwrap(claims["exp"]?.numberValue?.int64), issued = try XCTUnwrap(claims["iat"]?.numberValue?.int64)
            XCTAssertEqual(expires - issued, 900)
            // PyJWT refuses it for another audience: the check is real.
            XCTAssertEqual(try PythonPeers.run("pyjwt_peer.py", ["verify", jwks, token, "--aud", "back-door"]).status, 1)

            let cwt = try ScangateProcess.run(["credential", "issue", "--key", keysDir + "/" + keyFile, "--number", "4711", "--ttl", "15m",
                                               "--aud", "front-door", "--one-time", "--format", "cwt", "--text"])
            XCTAssertEqual(cwt.status, 0, cwt.stderr)
            let pass = cwt.stdoutText.trimmingCharacters(in: .newlines)
            XCTAssertTrue(pass.hasPrefix("SG1:"))
            let byCWT = try PythonPeers.run("cwt_peer.py", ["verify", jwks, pass, "--aud", "front-door"])
            XCTAssertEqual(byCWT.status, 0, "\(algorithm): \(byCWT.stdout)")
            let cwtClaims = try JSONValue.parse(byCWT.stdout.trimmingCharacters(in: .newlines))
            XCTAssertEqual(cwtClaims["2"]?.stringValue, "4711")
            XCTAssertEqual(cwtClaims["3"]?.stringValue, "front-door")
            XCTAssertEqual(cwtClaims["7"]?.stringValue?.count, 16, "an 8-byte cti")
            // A byte flipped in the signature: cwt refuses it too.
            var bytes = try Base45.decode(String(pass.dropFirst(4)))
            bytes[bytes.count - 1] ^= 1
            XCTAssertEqual(try PythonPeers.run("cwt_peer.py", ["verify", jwks, "SG1:" + Base45.encode(bytes)]).status, 1)
        }
    }
}
