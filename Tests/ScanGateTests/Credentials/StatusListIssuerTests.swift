import Core
import Settings
@testable import Credentials
import XCTest

/// The issuing side the bench and tests use: lists packed and compressed as the draft says (its own
/// example encodes to the same bytes), read back by the kiosk's verifier; passes that name their entry.
final class StatusListIssuerTests: XCTestCase {
    let now: Int64 = 1_800_000_000

    func keys() throws -> (PrivateKey, CredentialKeySet) {
        let key = try PrivateKey.generate(.ed25519)
        return (key, CredentialKeySet(keys: [CredentialKey(keyID: "site", publicKey: try key.publicKey(), source: "test")], source: "test"))
    }

    /// draft-ietf-oauth-status-list, the 1-bit example: statuses 1 0 0 1 1 1 0 1  1 1 0 0 0 1 0 1 are the
    /// bytes b9 a3, and zlib at level 9 gives "eNrbuRgAAhcBXQ".
    func testTheDraftsExampleEncodesToItsBytes() throws {
        let (key, set) = try keys()
        let statuses: [UInt8] = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
        let token = try StatusListIssuer.jwt(uri: "https://s/1", bits: 1, statuses: statuses, issuedAt: now, expiresAt: now + 60,
                                             keyID: "site", key: key)
        let claims = try JSONValue.parse(Base64.urlDecode(String(token.split(separator: ".")[1])) ?? [])
        XCTAssertEqual(claims["status_list"]?["lst"]?.stringValue, "eNrbuRgAAhcBXQ")
        let verified = try StatusListToken.verify(Array(token.utf8), keys: set, algorithms: [.ed25519])
        XCTAssertEqual(verified.list.bytes, [0xB9, 0xA3])
        XCTAssertEqual((0..<16).map { verified.list.status(at: $0) }, statuses.map { Optional($0) })
        XCTAssertEqual(verified.uri, "https://s/1")
        XCTAssertEqual(verified.expiresAt, now + 60)
    }

    func testTwoBitEntriesAndValuesThatDoNotFitAreRefused() throws {
        let (key, set) = try keys()
        let token = try StatusListIssuer.jwt(uri: "u", bits: 2, statuses: [0, 1, 2, 3, 0, 2], issuedAt: now, expiresAt: now + 60,
                                             keyID: "site", key: key)
        let verified = try StatusListToken.verify(Array(token.utf8), keys: set, algorithms: [.ed25519])
        XCTAssertEqual((0..<6).map { verified.list.status(at: $0) }, [0, 1, 2, 3, 0, 2])
        XCTAssertThrowsError(try StatusListIssuer.jwt(uri: "u", bits: 1, statuses: [2], issuedAt: now, expiresAt: now + 60, keyID: "site", key: key))
        XCTAssertThrowsError(try StatusListIssuer.jwt(uri: "u", bits: 3, statuses: [1], issuedAt: now, expiresAt: now + 60, keyID: "site", key: key))
    }

    /// A pass made with a status reference carries it in both forms, and the verifier reads it back.
    func testPassesCarryTheirStatusReference() throws {
        let (key, set) = try keys()
        var settings = CredentialSettings()
        settings.format = .any
        settings.keys = "test"
        let verifier = CredentialVerifier(settings: settings, keys: set)
        for format in [CredentialFormat.jwt, .cwt] {
            let pass = try PassIssuer.issue(PassRequest(format: format, number: "42", lifetimeSeconds: 60, keyID: "site", now: now,
                                                        status: StatusReference(index: 999_999, uri: "https://s/1")), key: key)
            guard case .success(let verified) = verifier.verify(Array(pass.utf8), now: now) else {
                return XCTFail("\(format): \(verifier.verify(Array(pass.utf8), now: now))")
            }
            XCTAssertEqual(verified.status, StatusReference(index: 999_999, uri: "https://s/1"), "\(format)")
        }
    }
}
