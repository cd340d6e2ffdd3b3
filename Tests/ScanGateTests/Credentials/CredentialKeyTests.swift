import Core
@testable import Credentials
import Foundation
import XCTest
import Settings

/// The libcrypto wrappers and credential-keys: JWKS, PEM files, KID.pem directories, permissions.
final class CredentialKeyTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    // MARK: libcrypto

    func testEd25519VerifiesRFC8037Example() throws {
        // RFC 8037 Appendix A.1 (key) and A.4 (JWS "Example of Ed25519 signing" with alg EdDSA).
        let x = try XCTUnwrap(Base64.urlDecode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"))
        let key = try PublicKey.ed25519(x: x, subject: "RFC 8037")
        let input = Array("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc".utf8)
        var signature = try XCTUnwrap(Base64.urlDecode("hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"))
        XCTAssertTrue(try key.verify(signature: signature, message: input))
        signature[0] ^= 1
        XCTAssertFalse(try key.verify(signature: signature, message: input))
        XCTAssertFalse(try key.verify(signature: Array(signature.prefix(63)), message: input))
        // RFC 8037 A.3: the thumbprint of that key.
        XCTAssertEqual(Base64.urlEncode(try key.thumbprint()), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }

    func testSignAndVerifyBothAlgorithms() throws {
        for algorithm in SignatureAlgorithm.allCases {
            let key = try PrivateKey.generate(algorithm)
            let publicKey = try key.publicKey()
            let message = Array("a pass".utf8)
            let signature = try key.sign(message)
            XCTAssertEqual(signature.count, 64, "\(algorithm): JOSE/COSE signatures are 64 bytes")
            XCTAssertTrue(try publicKey.verify(signature: signature, message: message))
            XCTAssertFalse(try publicKey.verify(signature: signature, message: message + [0]))
            // Another key of the same type does not verify it.
            XCTAssertFalse(try PrivateKey.generate(algorithm).publicKey().verify(signature: signature, message: message))
            // Non-canonical lengths are refused, not padded.
            XCTAssertFalse(try publicKey.verify(signature: [0] + signature, message: message))
            XCTAssertFalse(try publicKey.verify(signature: Array(signature.dropLast()), message: message))
            XCTAssertFalse(try publicKey.verify(signature: [], message: message))
            // The key survives a PEM round trip.
            let again = try PrivateKey.fromPEM(try key.pkcs8PEM(), subject: "test")
            XCTAssertTrue(try again.publicKey().verify(signature: try again.sign(message), message: message))
        }
    }

    func testECDSASignatureConversions() throws {
        // r = 1, s = 2: DER 30 06 02 01 01 02 01 02.
        let raw = [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31) + [2]
        XCTAssertEqual(ECDSASignature.der(fromRaw: raw), [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02])
        XCTAssertEqual(ECDSASignature.raw(fromDER: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02]), raw)
        XCTAssertNil(ECDSASignature.der(fromRaw: Array(raw.prefix(63))))
        XCTAssertNil(ECDSASignature.raw(fromDER: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02, 0x00]))   // trailing byte
        // An s of zero is not a signature.
        let es = try PrivateKey.generate(.es256)
        let zero = Array(try es.sign([1]).prefix(32)) + [UInt8](repeating: 0, count: 32)
        XCTAssertFalse(try es.publicKey().verify(signature: zero, message: [1]))
    }

    func testP256PointMustBeOnTheCurve() throws {
        let good = try PrivateKey.generate(.es256).publicKey().jwkMembers()
        let x = try XCTUnwrap(Base64.urlDecode(good[2].1)), y = try XCTUnwrap(Base64.urlDecode(good[3].1))
        XCTAssertNoThrow(try PublicKey.p256(x: x, y: y, subject: "good"))
        var bent = y
        bent[31] ^= 1
        XCTAssertThrowsError(try PublicKey.p256(x: x, y: bent, subject: "bent")) { XCTAssertTrue("\($0)".contains("curve") || "\($0)".contains("validation"), "\($0)") }
        XCTAssertThrowsError(try PublicKey.p256(x: Array(x.dropFirst()), y: y, subject: "short")) { XCTAssertTrue("\($0)".contains("must be 32")) }
        XCTAssertThrowsError(try PublicKey.ed25519(x: Array(x.prefix(31)), subject: "short")) { XCTAssertTrue("\($0)".contains("32")) }
    }

    // MARK: JWKS

    func jwks(_ keys: [String]) -> [UInt8] { Array("{\"keys\":[\(keys.joined(separator: ","))]}".utf8) }

    func jwk(_ key: PrivateKey, _ extra: String) throws -> String {
        let members = try key.publicKey().jwkMembers().map { JSONText.string($0.0) + ":" + JSONText.string($0.1) }
        return "{" + (members + (extra.isEmpty ? [] : [extra])).joined(separator: ",") + "}"
    }

    func testJWKSWithSeveralKeys() throws {
        let ed = try PrivateKey.generate(.ed25519), es = try PrivateKey.generate(.es256)
        let set = try CredentialKeySet.parseJWKS(jwks([
            try jwk(ed, "\"kid\":\"2025\",\"alg\":\"EdDSA\",\"use\":\"sig\""),
            try jwk(es, "\"kid\":\"2026\",\"alg\":\"ES256\",\"key_ops\":[\"verify\"]"),
            "{\"kty\":\"RSA\",\"kid\":\"old-rsa\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
            try jwk(ed, "\"kid\":\"enc\",\"use\":\"enc\""),
        ]), file: "keys.jwks")
        XCTAssertEqual(set.keys.map(\.keyID), ["2025", "2026"])
        XCTAssertEqual(set.keys.map(\.algorithm), [.ed25519, .es256])
        XCTAssertEqual(set.ignored.count, 2)
        XCTAssertTrue(set.ignored[0].contains("\"RSA\""), set.ignored[0])
        XCTAssertTrue(set.ignored[1].contains("\"enc\""), set.ignored[1])
        XCTAssertEqual(set.summary, "2 keys (2025 ed25519, 2026 es256) from keys.jwks")
    }

    func testJWKSErrorsNameTheFileAndTheKey() throws {
        let ed = try PrivateKey.generate(.ed25519)
        let cases: [([UInt8], String)] = [
            (jwks([try jwk(ed, "")]), "keys.jwks: key 1: has no \"kid\""),
            (jwks([try jwk(ed, "\"kid\":\"a\""), try jwk(ed, "\"kid\":\"a\"")]), "key 2 (kid \"a\"): kid appears twice"),
            (jwks(["{\"kty\":\"oct\",\"kid\":\"h\",\"k\":\"c2VjcmV0\"}"]), "key 1 (kid \"h\"): is a symmetric (oct) key"),
            (jwks([try jwk(ed, "\"kid\":\"p\",\"d\":\"AAAA\"")]), "key 1 (kid \"p\"): holds private key material (\"d\")"),
            (jwks([try jwk(ed, "\"kid\":\"b\",\"alg\":\"HS256\"")]), "key 1 (kid \"b\"): \"alg\" \"HS256\" does not fit"),
            (jwks(["{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"x\",\"x\":\"AAAA=\"}"]), "key 1 (kid \"x\"): \"x\" is not base64url"),
            (jwks(["{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"x\",\"x\":\"AAAA\"}"]), "key 1 (kid \"x\"): x is 3 bytes"),
            (jwks(["{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e\",\"x\":\"AAAA\"}"]), "key 1 (kid \"e\"): has no \"y\""),
            (jwks(["{\"kty\":\"RSA\",\"kid\":\"r\"}"]), "holds no Ed25519 (OKP) or P-256 (EC) signing key"),
            (Array("{\"keys\":[],\"keys\":[]}".utf8), "appears twice"),
            (Array("{\"kid\":\"a\"}".utf8), "\"keys\" array"),
            (Array("[1,2".utf8), "invalid JSON"),
            (jwks(["\"not an object\""]), "key 1: is not a JSON object"),
            (jwks([try jwk(ed, "\"kid\":7")]), "\"kid\" must be a string"),
        ]
        for (bytes, expected) in cases {
            XCTAssertThrowsError(try CredentialKeySet.parseJWKS(bytes, file: "keys.jwks")) { error in
                XCTAssertTrue("\(error)".hasPrefix("keys.jwks"), "\(error)")
                XCTAssertTrue("\(error)".contains(expected), "expected '\(expected)' in: \(error)")
            }
        }
        let tooMany = jwks(try (0...CredentialKeySet.maxKeys).map { try jwk(ed, "\"kid\":\"k\($0)\"") })
        XCTAssertThrowsError(try CredentialKeySet.parseJWKS(tooMany, file: "keys.jwks")) { XCTAssertTrue("\($0)".contains("at most 64"), "\($0)") }
    }

    // MARK: Files

    func testJWKSFileLoadsAndPermissionsAreChecked() throws {
        let ed = try PrivateKey.generate(.ed25519)
        let path = try CredentialFixtures.writeJWKS([("site-1", ed)], in: dir)
        XCTAssertEqual(try CredentialKeySet.load(path: path).keys.map(\.keyID), ["site-1"])
        XCTAssertEqual(chmod(path, 0o664), 0)
        XCTAssertThrowsError(try CredentialKeySet.load(path: path)) { error in
            XCTAssertEqual("\(error)", "\(path): mode 0664 lets group or others write it (anyone could add a key); chmod go-w")
        }
        XCTAssertEqual(chmod(path, 0o646), 0)
        XCTAssertThrowsError(try CredentialKeySet.load(path: path))
        XCTAssertEqual(chmod(path, 0o600), 0)
        XCTAssertNoThrow(try CredentialKeySet.load(path: path))
        // Owned by another user (this test runs as root, who may chown): refused, naming the owner.
        if geteuid() == 0 {
            XCTAssertEqual(chown(path, 4242, 4242), 0)
            XCTAssertThrowsError(try CredentialKeySet.load(path: path)) { XCTAssertTrue("\($0)".contains("owned by uid 4242"), "\($0)") }
            XCTAssertEqual(chown(path, 0, 0), 0)
        }
        XCTAssertThrowsError(try CredentialKeySet.load(path: dir + "/missing.jwks")) {
            XCTAssertTrue("\($0)".hasPrefix(dir + "/missing.jwks: cannot open: "), "\($0)")
        }
        let big = dir + "/big.jwks"
        try TestFiles.write(String(repeating: " ", count: KeyFileReader.maxFileBytes + 1) + "{}", to: big)
        chmod(big, 0o644)
        XCTAssertThrowsError(try CredentialKeySet.load(path: big)) { XCTAssertTrue("\($0)".contains("at most 65536"), "\($0)") }
        let junk = dir + "/junk"
        try TestFiles.write("hello", to: junk)
        chmod(junk, 0o644)
        XCTAssertThrowsError(try CredentialKeySet.load(path: junk)) { XCTAssertTrue("\($0)".contains("neither a JWKS"), "\($0)") }
    }

    func testPEMFileAndDirectoryOfKidPEMs() throws {
        let ed = try PrivateKey.generate(.ed25519), es = try PrivateKey.generate(.es256)
        let keys = dir + "/keys"
        XCTAssertEqual(mkdir(keys, 0o755), 0)
        try TestFiles.write(bytes: try ed.publicPEM(), to: keys + "/site-2025.pem")
        try TestFiles.write(bytes: try es.publicPEM(), to: keys + "/site-2026.pem")
        try TestFiles.write("notes", to: keys + "/README")
        for f in ["site-2025.pem", "site-2026.pem", "README"] { chmod(keys + "/" + f, 0o644) }
        let set = try CredentialKeySet.load(path: keys)
        XCTAssertEqual(set.keys.map(\.keyID), ["site-2025", "site-2026"])
        XCTAssertEqual(set.keys.map(\.algorithm), [.ed25519, .es256])
        XCTAssertEqual(set.ignored, ["\(keys)/README: not a NAME.pem file"])
        // A single PEM file: its kid is its name.
        XCTAssertEqual(try CredentialKeySet.load(path: keys + "/site-2026.pem").keys.map(\.keyID), ["site-2026"])
        // A private key among them is refused, naming the file and kid.
        try TestFiles.write(bytes: try ed.pkcs8PEM(), to: keys + "/oops.pem")
        chmod(keys + "/oops.pem", 0o600)
        XCTAssertThrowsError(try CredentialKeySet.load(path: keys)) {
            XCTAssertEqual("\($0)", "\(keys)/oops.pem: kid \"oops\": holds a private key; the kiosk needs only the public key (openssl pkey -pubout)")
        }
        try TestFiles.write(bytes: try ed.publicPEM() + es.publicPEM(), to: keys + "/oops.pem")
        XCTAssertThrowsError(try CredentialKeySet.load(path: keys)) { XCTAssertTrue("\($0)".contains("holds 2 PEM blocks"), "\($0)") }
        try TestFiles.write("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", to: keys + "/oops.pem")
        XCTAssertThrowsError(try CredentialKeySet.load(path: keys)) { XCTAssertTrue("\($0)".hasPrefix("\(keys)/oops.pem: kid \"oops\": not a PEM public key"), "\($0)") }
        unlink(keys + "/oops.pem")
        try TestFiles.write(bytes: try ed.publicPEM(), to: keys + "/bad kid.pem")
        chmod(keys + "/bad kid.pem", 0o644)
        XCTAssertThrowsError(try CredentialKeySet.load(path: keys)) { XCTAssertTrue("\($0)".contains("must be KID.pem"), "\($0)") }
        unlink(keys + "/bad kid.pem")
        // The directory must not let others add a key.
        chmod(keys, 0o777)
        XCTAssertThrowsError(try CredentialKeySet.load(path: keys)) { XCTAssertTrue("\($0)".contains("lets group or others add files"), "\($0)") }
        chmod(keys, 0o755)
        XCTAssertNoThrow(try CredentialKeySet.load(path: keys))
    }

    func testKeygenWritesAKeyAndExtendsTheSet() throws {
        let out = dir + "/issuer"
        let first = try KeyGeneration.generate(directory: out, algorithm: .ed25519, keyID: nil)
        XCTAssertEqual(first.keyID.count, 8)
        var info = stat()
        XCTAssertEqual(stat(first.privateKeyFile, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(first.jwksFile, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644)
        let second = try KeyGeneration.generate(directory: out, algorithm: .es256, keyID: "next")
        XCTAssertEqual(second.keysInSet, 2)
        let set = try CredentialKeySet.load(path: second.jwksFile)
        XCTAssertEqual(set.keys.map(\.keyID), [first.keyID, "next"])
        // The default kid is the one `issue` derives from the private key.
        let key = try KeyGeneration.loadPrivateKey(first.privateKeyFile)
        XCTAssertEqual(try key.publicKey().defaultKeyID(), first.keyID)
        XCTAssertThrowsError(try KeyGeneration.generate(directory: out, algorithm: .ed25519, keyID: "next")) {
            XCTAssertTrue("\($0)".contains("already holds this kid"), "\($0)")
        }
        // A private key others can read is refused.
        chmod(first.privateKeyFile, 0o640)
        XCTAssertThrowsError(try KeyGeneration.loadPrivateKey(first.privateKeyFile)) {
            XCTAssertEqual("\($0)", "\(first.privateKeyFile): mode 0640 lets group or others read or write this private key; chmod 600")
        }
    }

    /// Issue 23: keygen on a disk that fills up while the key is written leaves no partial KID.key (nor a
    /// temporary file), so running it again once there is room works instead of refusing the kid.
    func testAKeygenCutOffByAFullDiskLeavesNothingAndCanBeRunAgain() throws {
        let out = dir + "/issuer"
        // A full disk, for real: RLIMIT_FSIZE lets 10 bytes of the key through, then EFBIG.
        signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        var limit = saved
        limit.rlim_cur = 10
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit), 0)
        let failed = Result { try KeyGeneration.generate(directory: out, algorithm: .ed25519, keyID: "k1") }
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved), 0)
        signal(SIGXFSZ, SIG_DFL)
        guard case .failure(let error) = failed else { return XCTFail("the write cannot have succeeded") }
        XCTAssertTrue("\(error)".contains("write: ") && ("\(error)".contains("EFBIG") || "\(error)".contains("File too large")), "\(error)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out), [], "no partial key, no temporary file")
        let written = try KeyGeneration.generate(directory: out, algorithm: .ed25519, keyID: "k1")
        XCTAssertEqual(written.privateKeyFile, out + "/k1.key")
        XCTAssertNoThrow(try KeyGeneration.loadPrivateKey(written.privateKeyFile))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out).sorted(), ["credential-keys.jwks", "k1.key"])
    }
}
