#if canImport(Glibc)
import Glibc
#endif
import Core
import Components
@testable import Credentials
import Foundation
import Platform
import Settings
import XCTest

/// Token Status Lists (draft-ietf-oauth-status-list): the draft's own example lists, lists made by an
/// issuer that is not ours (Python's zlib and PyJWT: Peers/statuslist_peer.py), the bounded inflate, the
/// policy-stale modes and the rollback guard across a reload of its state file.
final class CredentialStatusListTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = try TestFiles.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    // MARK: the draft's examples

    /// The draft's 1-bit example (16 entries) and 2-bit example (12 entries): each `lst` decodes to the
    /// statuses the draft lists, and to the bytes Python's zlib inflates it to.
    func testTheDraftsExampleListsDecodeToTheDraftsBitsAndToPythonsBytes() throws {
        let one: [UInt8] = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
        let two: [UInt8] = [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3]
        let listOne = try StatusList.decode(bits: 1, lst: "eNrbuRgAAhcBXQ")
        let listTwo = try StatusList.decode(bits: 2, lst: "eNo76fITAAPfAgc")
        XCTAssertEqual(listOne.bytes, [0xB9, 0xA3])
        XCTAssertEqual(listTwo.bytes, [0xC9, 0x44, 0xF9])
        XCTAssertEqual((0..<16).map { listOne.status(at: $0) }, one.map { Optional($0) })
        XCTAssertEqual((0..<12).map { listTwo.status(at: $0) }, two.map { Optional($0) })
        XCTAssertNil(listOne.status(at: 16))
        XCTAssertNil(listTwo.status(at: 12))
        let python = try PythonPeers.run("statuslist_peer.py", ["vectors"])
        let vectors = try JSONValue.parse(python.stdout)
        XCTAssertEqual(vectors["one"]?["bytes"]?.stringValue, Hex.string(listOne.bytes, lowercase: true))
        XCTAssertEqual(vectors["two"]?["bytes"]?.stringValue, Hex.string(listTwo.bytes, lowercase: true))
    }

    func testBitsOtherThan1248AreRefused() {
        for bits in [0, 3, 16] {
            XCTAssertThrowsError(try StatusList.decode(bits: bits, lst: "eNrbuRgAAhcBXQ")) {
                XCTAssertTrue("\($0)".contains("must be 1, 2, 4 or 8"), "\($0)")
            }
        }
    }

    // MARK: zlib

    func testInflateIsBoundedAndRefusesBrokenStreams() throws {
        let draft = Base64.urlDecode("eNrbuRgAAhcBXQ") ?? []
        XCTAssertEqual(try ZlibInflate.inflate(draft, maxOutput: 2), [0xB9, 0xA3])
        XCTAssertThrowsError(try ZlibInflate.inflate(draft, maxOutput: 1)) {
            XCTAssertEqual(($0 as? ZlibError)?.operation, "limit", "\($0)")
        }
        XCTAssertThrowsError(try ZlibInflate.inflate(Array(draft.dropLast(2)), maxOutput: 100)) {
            XCTAssertTrue("\($0)".contains("truncated"), "\($0)")
        }
        XCTAssertThrowsError(try ZlibInflate.inflate(draft + [0], maxOutput: 100)) {
            XCTAssertTrue("\($0)".contains("follow the end"), "\($0)")
        }
        var corrupt = draft
        corrupt[corrupt.count - 1] ^= 0xFF   // the Adler-32
        XCTAssertThrowsError(try ZlibInflate.inflate(corrupt, maxOutput: 100)) {
            XCTAssertEqual(($0 as? ZlibError)?.operation, "inflate", "\($0)")
            XCTAssertTrue("\($0)".contains("Z_DATA_ERROR"), "\($0)")
        }
        XCTAssertThrowsError(try ZlibInflate.inflate([], maxOutput: 100))
    }

    /// A 200 MB run of zeros compressed by Python's zlib (about 200 KB) in a signed list: refused at the
    /// 16 MiB limit, without the 200 MB ever being held.
    func testAZipBombListIsRefusedAtTheLimit() throws {
        let made = try makeList("bomb.jwt", ["--uri", "https://site/bomb", "--size", "1", "--bomb", "200"])
        let keys = try CredentialKeySet.load(path: made.jwks)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: made.file))
        XCTAssertThrowsError(try StatusListToken.verify(Array(bytes), keys: keys, algorithms: [.ed25519])) {
            XCTAssertTrue("\($0)".contains("inflates to more than \(StatusList.maxBytes) bytes"), "\($0)")
        }
    }

    /// A folder of five lists of 16 MiB each: four are held (64 MiB in all), the fifth is refused.
    func testAllListsTogetherAreBounded() throws {
        let lists = dir + "/lists"
        try FileManager.default.createDirectory(atPath: lists, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(lists, 0o755), 0)
        var jwks = ""
        for n in 1...5 {
            jwks = try makeList("lists/\(n).jwt", ["--uri", "https://s/\(n)", "--size", "1", "--bomb", "16"]).jwks
        }
        let set = try StatusListSet.load(path: lists, keys: try CredentialKeySet.load(path: jwks), algorithms: [.ed25519],
                                         statePath: dir + "/policy-state")
        XCTAssertEqual(set.lists.map(\.uri), ["https://s/1", "https://s/2", "https://s/3", "https://s/4"])
        XCTAssertEqual(set.refused.count, 1)
        XCTAssertTrue(set.refused.first?.contains("5.jwt") == true && set.refused.first?.contains("all lists together may hold 67108864") == true,
                      "\(set.refused)")
    }

    // MARK: tokens

    struct Made { let jwks: String; let file: String }

    func makeList(_ name: String, _ args: [String]) throws -> Made {
        let out = dir + "/" + name
        let result = try PythonPeers.run("statuslist_peer.py", ["list", dir, out] + args)
        XCTAssertEqual(result.status, 0)
        return Made(jwks: dir + "/site.jwks", file: out)
    }

    func testAListFromPyJWTVerifiesAndReadsItsEntries() throws {
        let made = try makeList("l.jwt", ["--uri", "https://site/lists/1", "--size", "100", "--bits", "2",
                                          "--set", "7=1,8=2,99=3", "--iat", "1800000000", "--exp", "1800086400", "--ttl", "3600"])
        let keys = try CredentialKeySet.load(path: made.jwks)
        let token = try StatusListToken.verify(Array(try XCTUnwrap(FileManager.default.contents(atPath: made.file))), keys: keys,
                                               algorithms: [.ed25519, .es256])
        XCTAssertEqual(token.uri, "https://site/lists/1")
        XCTAssertEqual(token.issuedAt, 1_800_000_000)
        XCTAssertEqual(token.expiresAt, 1_800_086_400)
        XCTAssertEqual(token.ttl, 3600)
        XCTAssertEqual(token.keyID, "site")
        XCTAssertEqual(token.list.bits, 2)
        XCTAssertEqual(token.list.count, 100)
        XCTAssertEqual([6, 7, 8, 9, 99].map { token.list.status(at: $0) }, [0, 1, 2, 0, 3])
        // Not allowed by credential-algorithms; another key set: refused.
        XCTAssertThrowsError(try StatusListToken.verify(Array(FileManager.default.contents(atPath: made.file) ?? Data()), keys: keys,
                                                        algorithms: [.es256]))
        let other = try CredentialFixtures.keyPair(.ed25519, kid: "site").1
        XCTAssertThrowsError(try StatusListToken.verify(Array(FileManager.default.contents(atPath: made.file) ?? Data()),
                                                        keys: CredentialKeySet(keys: [other], source: "test"), algorithms: [.ed25519])) {
            XCTAssertTrue("\($0)".hasPrefix("bad-signature"), "\($0)")
        }
    }

    func testAListWithoutItsTypOrExpIsRefused() throws {
        let made = try makeList("typ.jwt", ["--uri", "https://site/1", "--size", "8", "--typ", "JWT"])
        let keys = try CredentialKeySet.load(path: made.jwks)
        XCTAssertThrowsError(try StatusListToken.verify(Array(FileManager.default.contents(atPath: made.file) ?? Data()), keys: keys,
                                                        algorithms: [.ed25519])) {
            XCTAssertTrue("\($0)".contains("a status list token has typ statuslist+jwt"), "\($0)")
        }
        XCTAssertThrowsError(try StatusListToken.claims(Array(#"{"sub":"u","iat":1,"status_list":{"bits":1,"lst":"eNrbuRgAAhcBXQ"}}"#.utf8))) {
            XCTAssertTrue("\($0)".contains("no exp"), "\($0)")
        }
        XCTAssertThrowsError(try StatusListToken.claims(Array(#"{"sub":"u","iat":1,"exp":2,"ttl":0,"status_list":{"bits":1,"lst":"eNrbuRgAAhcBXQ"}}"#.utf8)))
    }

    /// A status list token signed by the site's key must not open the door as a pass (its sub is a uri).
    func testAStatusListTokenShownAsAPassIsRefused() throws {
        let made = try makeList("small.jwt", ["--uri", "https://site/1", "--size", "8"])
        var settings = CredentialFixtures.settings(.jwt)
        settings.numberClaim = "sub"
        let verifier = CredentialVerifier(settings: settings, keys: try CredentialKeySet.load(path: made.jwks))
        let text = String(decoding: FileManager.default.contents(atPath: made.file) ?? Data(), as: UTF8.self)
        let token = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard case .failure(let refusal) = verifier.verify(token, now: CredentialFixtures.now) else {
            return XCTFail("a status list token was accepted as a pass")
        }
        XCTAssertEqual(refusal.reason, .malformed)
        XCTAssertTrue(refusal.detail.contains("status list token, not a pass"), refusal.detail)
        // Signed by a trusted key but dressed as a pass: no typ with a status_list claim, or a CWT list.
        let (key, credential) = try CredentialFixtures.keyPair(.ed25519, kid: "k")
        let both = CredentialVerifier(settings: CredentialFixtures.settings(.any), keys: CredentialKeySet(keys: [credential], source: "test"))
        let now = CredentialFixtures.now
        let untyped = try CredentialFixtures.jws(header: #"{"alg":"EdDSA","kid":"k"}"#,
                                                 claims: #"{"sub":"https://s/1","iat":\#(now),"exp":\#(now + 600),"status_list":{"bits":1,"lst":"eNrbuRgAAhcBXQ"}}"#, key: key)
        let kid = CBORMap([(.int(4), .bytes(Array("k".utf8)))])!
        let listClaims = CredentialFixtures.map([(2, .text("https://s/1")), (6, .int(now)), (4, .int(now + 600)),
                                                 (65533, .map(CBORMap([(.text("bits"), .int(1)), (.text("lst"), .bytes([0x78, 0xDA, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]))])!))])
        let cwtList = try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8)), (16, .text("application/statuslist+cwt"))]),
                                                 unprotected: kid, claims: CredentialFixtures.map([(2, .text("https://s/1")), (4, .int(now + 600))]), key: key)
        let cwtUntyped = try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8))]), unprotected: kid, claims: listClaims, key: key)
        for (name, token) in [("JWT with status_list", untyped), ("CWT typ statuslist+cwt", cwtList), ("CWT with 65533", cwtUntyped)] {
            guard case .failure(let r) = both.verify(Array(token.utf8), now: now) else { XCTFail("\(name) was accepted as a pass"); continue }
            XCTAssertEqual(r.reason, .malformed, name)
            XCTAssertTrue(r.detail.contains("not a pass"), "\(name): \(r.detail)")
        }
    }

    // MARK: the CWT form

    /// The draft's Status List Token in CWT form (examples/status_list_cwt.md, hex wrapped at 68 characters
    /// as the draft prints it), verified with the draft's own example key (kid "12", P-256, src/util.py).
    static let draftCWT = """
        d2845820a2012610781a6170706c69636174696f6e2f7374617475736c6973742b63
        7774a1044231325850a502782168747470733a2f2f6578616d706c652e636f6d2f73
        74617475736c697374732f31061a648c5bea041a8898dfea19fffe19a8c019fffda2
        646269747301636c73744a78dadbb918000217015d584093fa4d01032b18c35e2fe1
        101b77fd6cc9440022caa4694450c4e4e9feab4e99d1fa6d9772ce2bf3a12e0323de
        d7c982c5e101a5e67f0cbc1e2b6f57ce99c279
        """
    static let draftJWKS = #"{"keys":[{"kty":"EC","crv":"P-256","x":"I3HWm_0Ds1dPMI-IWmf4mBmH-YaeAVbPVu7vB27CxXo","y":"6N_d5Elj9bs1htgV3okJKIdbHEpkgTmAluYKJemzn1M","kid":"12"}]}"#

    /// What a verified list says, in one line to compare.
    static func described(_ t: StatusListToken) -> String {
        "\(t.format) \(t.uri) iat \(t.issuedAt) exp \(t.expiresAt) ttl \(t.ttl.map { String($0) } ?? "-") kid \(t.keyID), \(t.list.count) of \(t.list.bits) bit"
    }

    func testTheDraftsCWTExampleVerifiesWithTheDraftsKeyAndDecodesToTheDraftsBits() throws {
        let keys = try CredentialKeySet.parseJWKS(Array(Self.draftJWKS.utf8), file: "draft.jwks")
        let text = Array(Self.draftCWT.utf8)
        for form in [text, Hex.decode(Self.draftCWT.filter { !$0.isWhitespace }) ?? []] {
            let token = try StatusListToken.verify(form, keys: keys, algorithms: [.es256])
            XCTAssertEqual(Self.described(token), "cwt https://example.com/statuslists/1 iat 1686920170 exp 2291720170 ttl 43200 kid 12, 16 of 1 bit")
            XCTAssertEqual(token.list.bytes, [0xB9, 0xA3])
        }
        // One byte of the signature changed: refused.
        var broken = Hex.decode(Self.draftCWT.filter { !$0.isWhitespace }) ?? []
        broken[broken.count - 1] ^= 0x01
        XCTAssertThrowsError(try StatusListToken.verify(broken, keys: keys, algorithms: [.es256])) {
            XCTAssertTrue("\($0)".hasPrefix("bad-signature"), "\($0)")
        }
        // The draft's CBOR Status Lists (examples/status_list_encoding_cbor.md, ..._encoding2_cbor.md).
        for (hex, bits, bytes) in [("a2646269747301636c73744a78dadbb918000217015d", 1, [0xB9, 0xA3] as [UInt8]),
                                   ("a2646269747302636c73744b78da3be9f2130003df0207", 2, [0xC9, 0x44, 0xF9])] {
            let map = try XCTUnwrap(try CBORValue.decode(Hex.decode(hex) ?? []).mapValue)
            XCTAssertEqual(map["bits"], .unsigned(UInt64(bits)))
            let list = try StatusList.decode(bits: bits, compressed: try XCTUnwrap(map["lst"]?.bytesValue))
            XCTAssertEqual(list.bytes, bytes)
        }
    }

    func testACWTListFromTheCWTPackageVerifiesAsBinaryAndAsHex() throws {
        let args = ["--uri", "https://site/lists/2", "--size", "100", "--bits", "2", "--set", "7=1,8=2,99=3",
                    "--iat", "1800000000", "--exp", "1800086400", "--ttl", "3600", "--form", "cwt"]
        let binary = try makeList("l.cwt", args)
        let hex = try makeList("l.hex", args + ["--encoding", "hex"])
        let keys = try CredentialKeySet.load(path: binary.jwks)
        let raw = Array(try XCTUnwrap(FileManager.default.contents(atPath: binary.file)))
        XCTAssertEqual(raw.first, 0xD2, "tag 18")
        let hexText = String(decoding: try XCTUnwrap(FileManager.default.contents(atPath: hex.file)), as: UTF8.self)
        XCTAssertEqual(try StatusListEncoding.detect(Array(hexText.utf8)), .cwt(Hex.decode(hexText.filter { !$0.isWhitespace }) ?? [], hex: true))
        for bytes in [raw, Array(hexText.utf8)] {
            let token = try StatusListToken.verify(bytes, keys: keys, algorithms: [.ed25519])
            XCTAssertEqual(Self.described(token), "cwt https://site/lists/2 iat 1800000000 exp 1800086400 ttl 3600 kid site, 100 of 2 bit")
            XCTAssertEqual([6, 7, 8, 9, 99].map { token.list.status(at: $0) }, [0, 1, 2, 0, 3])
            XCTAssertEqual(token.fingerprint, TokenFingerprint.describe(bytes))
        }
        XCTAssertThrowsError(try StatusListToken.verify(raw, keys: keys, algorithms: [.es256])) {
            XCTAssertTrue("\($0)".contains("is not in credential-algorithms"), "\($0)")
        }
        XCTAssertThrowsError(try StatusListToken.verify(Array("d2845".utf8), keys: keys, algorithms: [.ed25519])) {
            XCTAssertTrue("\($0)".contains("an odd number"), "\($0)")
        }
    }

    func testCWTListsThatAreNotRightAreRefusedWithWhy() throws {
        let base = ["--uri", "https://site/1", "--size", "16", "--form", "cwt"]
        let cases: [(String, [String], String)] = [
            ("flipped signature", ["--flip-signature", "yes"], "bad-signature: the signature does not verify with key \"site\""),
            ("wrong typ", ["--typ", "application/cwt"], "typ (16) is \"application/cwt\"; a status list token has typ application/statuslist+cwt in its protected header"),
            ("the JWT typ", ["--typ", "statuslist+jwt"], "typ (16) is \"statuslist+jwt\""),
            ("typ unprotected", ["--typ-header", "unprotected"], "in the unprotected header (the signature does not cover it)"),
            ("no typ", ["--typ-header", "none"], "typ (16) is missing"),
            ("no 65533", ["--omit-status-list", "yes"], "the list has no status_list claim (65533)"),
            ("CWT tag", ["--tag61", "yes"], "the CWT tag (61) wraps it"),
            ("3 bits", ["--bits", "3"], "status_list.bits is 3; it must be 1, 2, 4 or 8"),
            ("no exp before iat", ["--iat", "1800000000", "--exp", "1800000000"], "exp 1800000000 is not after iat 1800000000"),
            ("zip bomb", ["--size", "1", "--bomb", "200"], "inflates to more than \(StatusList.maxBytes) bytes"),
        ]
        var jwks = ""
        for (n, (name, extra, why)) in cases.enumerated() {
            let made = try makeList("bad\(n).cwt", base + extra)
            jwks = made.jwks
            let bytes = Array(try XCTUnwrap(FileManager.default.contents(atPath: made.file)))
            XCTAssertThrowsError(try StatusListToken.verify(bytes, keys: try CredentialKeySet.load(path: made.jwks), algorithms: [.ed25519]), name) {
                XCTAssertTrue("\($0)".contains(why), "\(name): \($0)")
            }
        }
        // Another key set: refused; as a set, each file is named with why and its fingerprint, never the token.
        let other = try CredentialFixtures.keyPair(.ed25519, kid: "site").1
        let good = try makeList("good.cwt", base)
        let goodBytes = Array(try XCTUnwrap(FileManager.default.contents(atPath: good.file)))
        XCTAssertThrowsError(try StatusListToken.verify(goodBytes, keys: CredentialKeySet(keys: [other], source: "test"), algorithms: [.ed25519])) {
            XCTAssertTrue("\($0)".hasPrefix("bad-signature"), "\($0)")
        }
        let set = try StatusListSet.load(path: dir, keys: try CredentialKeySet.load(path: jwks), algorithms: [.ed25519], statePath: dir + "/state")
        XCTAssertEqual(set.lists.map(\.uri), ["https://site/1"])
        XCTAssertEqual(set.refused.count, cases.count + 2, "\(set.refused)")   // + site.jwks and site.pem, which are not lists
        let line = try XCTUnwrap(set.refused.first { $0.hasPrefix(dir + "/bad0.cwt (") })
        XCTAssertTrue(line.contains(TokenFingerprint.describe(Array(try XCTUnwrap(FileManager.default.contents(atPath: dir + "/bad0.cwt")))) + "): bad-signature"), line)
        XCTAssertLessThan(line.count, 300, line)
    }

    /// A CWT list's kept copy holds its bytes as read and is verified again as CWT; a rolled-back CWT list is
    /// refused as a JWT one is; JWT and CWT lists sit side by side in one folder.
    func testCWTListsKeepTheirCopyAndMeetTheRollbackGuard() throws {
        let (statePath, lists) = try stateAndListFolders()
        let newer = try makeList("lists/a.cwt", ["--uri", "https://site/cwt", "--size", "8", "--set", "2=1", "--form", "cwt",
                                                 "--iat", "1800000200", "--exp", "4000000000"])
        _ = try makeList("lists/b.jwt", ["--uri", "https://site/jwt", "--size", "8", "--iat", "1800000200", "--exp", "4000000000"])
        let keys = try CredentialKeySet.load(path: newer.jwks)
        let first = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertEqual(first.lists.map(\.uri), ["https://site/cwt", "https://site/jwt"], "\(first.refused)")
        XCTAssertEqual(first.lists.map(\.format), [.cwt, .jwt])
        XCTAssertTrue(first.summary.contains("\"https://site/cwt\": CWT, 8 entries of 1 bit"), first.summary)
        let raw = Array(try XCTUnwrap(FileManager.default.contents(atPath: newer.file)))
        XCTAssertEqual(StatusListSet.keptBytes(statePath, uri: "https://site/cwt"), raw, "the kept copy is the file's bytes")
        // An older CWT list put in its place: refused as rolled back; the kept copy, verified again as CWT, stays.
        _ = try makeList("lists/a.cwt", ["--uri", "https://site/cwt", "--size", "8", "--form", "cwt", "--iat", "1800000100", "--exp", "4000000000"])
        let second = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertTrue(second.refused.contains { $0.hasPrefix(lists + "/a.cwt (") && $0.contains("rolled back") }, "\(second.refused)")
        let kept = try XCTUnwrap(second.list(uri: "https://site/cwt"))
        XCTAssertTrue(second.isKept(kept))
        XCTAssertEqual(kept.format, .cwt)
        XCTAssertEqual(kept.issuedAt, 1_800_000_200)
        XCTAssertEqual(kept.list.status(at: 2), 1)
    }

    // MARK: the status claim in passes

    func testPassesCarryTheirStatusClaimInBothFormats() throws {
        let (key, credential) = try CredentialFixtures.keyPair(.ed25519, kid: "k")
        let keys = CredentialKeySet(keys: [credential], source: "test")
        let now = CredentialFixtures.now
        let jwt = try CredentialFixtures.jws(header: #"{"alg":"EdDSA","kid":"k"}"#,
                                             claims: #"{"sub":"1","exp":\#(now + 600),"status":{"status_list":{"idx":5,"uri":"https://s/1"}}}"#, key: key)
        let cwt = try CredentialFixtures.cwt(protected: CredentialFixtures.map([(1, .int(-8))]), unprotected: CBORMap([(.int(4), .bytes(Array("k".utf8)))])!,
                                             claims: CredentialFixtures.map([(2, .text("2")), (4, .int(now + 600)),
                                                                             (65535, .map(CBORMap([(.text("status_list"), .map(CBORMap([(.text("idx"), .int(9)), (.text("uri"), .text("https://s/2"))])!))])!))]),
                                             key: key)
        let verifier = CredentialVerifier(settings: CredentialFixtures.settings(.any), keys: keys)
        XCTAssertEqual(try verifier.verify(Array(jwt.utf8), now: now).get().status, StatusReference(index: 5, uri: "https://s/1"))
        XCTAssertEqual(try verifier.verify(Array(cwt.utf8), now: now).get().status, StatusReference(index: 9, uri: "https://s/2"))
        for bad in [#""status":{"status_list":{"idx":-1,"uri":"u"}}"#, #""status":{"status_list":{"idx":1}}"#, #""status":[]"#] {
            let token = try CredentialFixtures.jws(header: #"{"alg":"EdDSA","kid":"k"}"#, claims: #"{"sub":"1","exp":\#(now + 600),\#(bad)}"#, key: key)
            guard case .failure(let refusal) = verifier.verify(Array(token.utf8), now: now) else { return XCTFail(bad) }
            XCTAssertEqual(refusal.reason, .malformed, bad)
        }
    }

    // MARK: the lists in force

    func set(_ lists: [StatusListToken]) -> StatusListSet {
        StatusListSet(lists: lists, refused: [], refusedURIs: [], state: PolicyState())
    }

    func token(uri: String, exp: Int64, statuses: [Int: UInt8]) throws -> StatusListToken {
        var bytes = [UInt8](repeating: 0, count: 4)
        for (i, v) in statuses { bytes[i / 8] |= v << UInt8(i % 8) }
        return StatusListToken(uri: uri, issuedAt: exp - 1000, expiresAt: exp, ttl: nil, list: try StatusList(bits: 1, bytes: bytes),
                               keyID: "k", fingerprint: "f")
    }

    func testStatusAndStalenessUnderEachPolicyStaleMode() throws {
        let now: Int64 = 1_800_000_000
        let lists = set([try token(uri: "https://s/fresh", exp: now + 10, statuses: [3: 1]),
                         try token(uri: "https://s/stale", exp: now, statuses: [3: 1])])
        func verdict(_ uri: String, _ idx: Int, _ stale: PolicyStale) -> String {
            switch lists.check(StatusReference(index: idx, uri: uri), now: now, stale: stale) {
            case .success: return "accepted"
            case .failure(let r): return r.reason.rawValue
            }
        }
        for mode in PolicyStale.allCases {
            XCTAssertEqual(verdict("https://s/fresh", 3, mode), "revoked")
            XCTAssertEqual(verdict("https://s/fresh", 4, mode), "accepted")
            XCTAssertEqual(verdict("https://s/fresh", 32, mode), "revoked", "beyond the list")
        }
        XCTAssertEqual(verdict("https://s/stale", 4, .deny), "policy-stale")
        XCTAssertEqual(verdict("https://s/stale", 3, .deny), "policy-stale")
        XCTAssertEqual(verdict("https://s/stale", 4, .allowKnown), "accepted")
        XCTAssertEqual(verdict("https://s/stale", 3, .allowKnown), "revoked")
        XCTAssertEqual(verdict("https://s/stale", 4, .allow), "accepted")
        XCTAssertEqual(verdict("https://s/stale", 3, .allow), "revoked")
        XCTAssertEqual(verdict("https://s/none", 0, .deny), "policy-stale")
        XCTAssertEqual(verdict("https://s/none", 0, .allowKnown), "policy-stale")
        XCTAssertEqual(verdict("https://s/none", 0, .allow), "accepted")
        // uris are compared byte for byte: a Unicode-equivalent uri is another list.
        let decomposed = set([try token(uri: "https://s/cafe\u{301}", exp: now + 10, statuses: [:])])
        guard case .failure(let r) = decomposed.check(StatusReference(index: 0, uri: "https://s/caf\u{e9}"), now: now, stale: .deny) else {
            return XCTFail("a look-alike uri found the list")
        }
        XCTAssertEqual(r.reason, .policyStale)
    }

    /// The status is checked before one-time use: a revoked pass is not consumed, and the log names the
    /// reason with the pass's fingerprint only.
    func testARevokedOneTimePassIsNotConsumed() throws {
        let (key, credential) = try CredentialFixtures.keyPair(.ed25519, kid: "k")
        var settings = CredentialFixtures.settings(.jwt)
        settings.oneTime = true
        settings.replayStore = dir + "/replay"
        let store = try ReplayStore(path: settings.replayStore)
        let now = CredentialFixtures.now
        let log = LogCapture()
        let policy = CredentialPolicy(settings: settings, keys: CredentialKeySet(keys: [credential], source: "test"), store: store,
                                      statusLists: set([try token(uri: "https://s/1", exp: now + 600, statuses: [1: 1])]),
                                      clock: ClockSync.fixed(true), logger: log.logger)
        func pass(_ idx: Int) throws -> [UInt8] {
            Array(try CredentialFixtures.jws(header: #"{"alg":"EdDSA","kid":"k"}"#,
                                             claims: #"{"sub":"\#(idx)","exp":\#(now + 600),"jti":"j\#(idx)","status":{"status_list":{"idx":\#(idx),"uri":"https://s/1"}}}"#,
                                             key: key).utf8)
        }
        let revoked = try pass(1)
        guard case .failure(let refusal) = policy.evaluate(revoked) else { return XCTFail("a revoked pass was accepted") }
        XCTAssertEqual(refusal.reason, .revoked)
        XCTAssertEqual(store.entryCount, 0, "a revoked pass was consumed")
        XCTAssertTrue(log.contains("credential refused: revoked (\(TokenFingerprint.describe(revoked))): status list \"https://s/1\" idx 1 is 1 INVALID"), log.text)
        XCTAssertFalse(log.text.contains(String(decoding: revoked.suffix(40), as: UTF8.self)), "the token is in the log")
        XCTAssertEqual(try policy.evaluate(try pass(2)).get().number, "2")
        XCTAssertEqual(store.entryCount, 1)
    }

    // MARK: the rollback guard

    /// `state/policy-state` and a `lists` folder (0755) under the test's directory.
    func stateAndListFolders() throws -> (state: String, lists: String) {
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        let lists = dir + "/lists"
        try FileManager.default.createDirectory(atPath: lists, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(lists, 0o755), 0)
        return (dir + "/state/policy-state", lists)
    }

    func testAnOlderListIsRefusedAfterTheNewerOneWasUsedAcrossAReload() throws {
        let (statePath, lists) = try stateAndListFolders()
        let newer = try makeList("lists/site.jwt", ["--uri", "https://site/1", "--size", "8", "--iat", "1800000200", "--exp", "4000000000"])
        let keys = try CredentialKeySet.load(path: newer.jwks)
        let first = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertEqual(first.lists.map(\.issuedAt), [1_800_000_200])
        XCTAssertEqual(try PolicyState.load(path: statePath).issuedAt(uri: "https://site/1"), 1_800_000_200)
        // The older list put back in place (a rollback), read by a new start.
        _ = try makeList("lists/site.jwt", ["--uri", "https://site/1", "--size", "8", "--iat", "1800000100", "--exp", "4000000000"])
        let second = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertEqual(second.refused.count, 1)
        XCTAssertTrue(second.refused[0].contains("rolled back"), second.refused[0])
        XCTAssertFalse(second.refused[0].contains(String(decoding: FileManager.default.contents(atPath: newer.file) ?? Data(), as: UTF8.self).prefix(60)),
                       "the log line holds the token")
        // The newer list, kept beside the state file when it was used, stays in force.
        XCTAssertEqual(second.lists.map(\.issuedAt), [1_800_000_200])
        XCTAssertEqual(second.kept.count, 1)
        XCTAssertTrue(second.kept[0].hasPrefix("the kept copy of \"https://site/1\" stays in force"), second.kept[0])
        XCTAssertNoThrow(try second.check(StatusReference(index: 0, uri: "https://site/1"), now: 1_800_000_300, stale: .deny).get())
        // Without the kept copy, the rolled-back list leaves its passes to policy-stale.
        try FileManager.default.removeItem(atPath: StatusListSet.keptDirectory(statePath))
        let third = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertEqual(third.lists.count, 0)
        guard case .failure(let r) = third.check(StatusReference(index: 0, uri: "https://site/1"), now: 1_800_000_300, stale: .deny) else {
            return XCTFail("a pass was accepted against a rolled-back list")
        }
        XCTAssertEqual(r.reason, .policyStale)
        XCTAssertTrue(r.detail.contains("refused at start"), r.detail)
        // A kept copy that is not the list the guard holds (an older one planted there) is not used.
        try FileManager.default.createDirectory(atPath: StatusListSet.keptDirectory(statePath), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: newer.file, toPath: StatusListSet.keptPath(statePath, uri: "https://site/1"))
        let planted = try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath)
        XCTAssertEqual(planted.lists.count, 0)
        XCTAssertTrue(planted.refused.contains { $0.contains("not the list the guard holds") }, "\(planted.refused)")
        // The same iat again is the same list: accepted.
        _ = try makeList("lists/site.jwt", ["--uri", "https://site/1", "--size", "8", "--iat", "1800000200", "--exp", "4000000000"])
        XCTAssertEqual(try StatusListSet.load(path: lists, keys: keys, algorithms: [.ed25519], statePath: statePath).lists.count, 1)
    }

    /// doctor's row: the lists as run would hold them, their age and expiry; a stale list fails under
    /// policy-stale = deny and warns otherwise; a rolled-back list fails; nothing is recorded.
    func testDoctorShowsTheListsTheirAgesAndWhatIsWrong() throws {
        let now = CredentialFixtures.now
        let made = try makeList("l.jwt", ["--uri", "https://s/1", "--size", "8", "--iat", String(now - 60), "--exp", String(now + 3600)])
        var settings = CredentialFixtures.settings(.jwt)
        settings.keys = made.jwks
        settings.statusList = made.file
        var policy = PolicySettings()
        policy.stateFile = dir + "/policy-state"
        func row(_ stale: PolicyStale = .deny) -> DoctorRow? {
            policy.stale = stale
            return CredentialDoctor.rows(settings, policy: policy, clock: ClockSync.fixed(true), now: now).last
        }
        XCTAssertEqual(row()?.check, "credential status lists")
        XCTAssertEqual(row()?.result, .pass)
        XCTAssertTrue(row()?.detail.contains("\"https://s/1\": 8 entries, issued 60 s ago, expires in 3600 s") ?? false, row()?.detail ?? "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: policy.stateFile), "doctor recorded the rollback guard")
        _ = try makeList("l.jwt", ["--uri", "https://s/1", "--size", "8", "--iat", String(now - 7200), "--exp", String(now - 60)])
        XCTAssertEqual(row(.deny)?.result, .fail)
        XCTAssertTrue(row(.deny)?.detail.contains("EXPIRED 60 s ago") ?? false, row(.deny)?.detail ?? "")
        XCTAssertEqual(row(.allowKnown)?.result, .warn)
        var state = PolicyState()
        state.record(uri: "https://s/1", issuedAt: now)
        try state.save(path: policy.stateFile)
        XCTAssertEqual(row()?.result, .fail)
        XCTAssertTrue(row()?.detail.contains("rolled back") ?? false, row()?.detail ?? "")
    }

    func testAStateFileChangedByHandStopsTheStartWithItsName() throws {
        let statePath = dir + "/policy-state"
        try TestFiles.write("{\"status_lists\": [oops", to: statePath)
        XCTAssertThrowsError(try PolicyState.load(path: statePath)) {
            XCTAssertTrue("\($0)".hasPrefix("policy-state-file \(statePath): "), "\($0)")
        }
        XCTAssertEqual(try PolicyState.load(path: dir + "/absent"), PolicyState())
        var state = PolicyState()
        state.record(uri: "https://s/\"1\"", issuedAt: 5)
        XCTAssertFalse(state.record(uri: "https://s/\"1\"", issuedAt: 4))
        try state.save(path: statePath)
        XCTAssertEqual(try PolicyState.load(path: statePath), state)
    }
}
