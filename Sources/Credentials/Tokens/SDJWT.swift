import Core
import Settings

/// An SD-JWT presentation (RFC 9901): `<issuer-signed JWT>~<disclosure>~…~<KB-JWT>`, read strictly.
///
/// The issuer's JWT is a pass as `JWS` reads it; the disclosures reveal selectively disclosable claims;
/// the key-binding JWT (empty when the holder did not bind it) is signed by the holder key the pass's
/// `cnf` names. Nothing here is believed before the signatures verify (CredentialVerifier).
struct SDJWTPresentation: Sendable {
    /// At most this many disclosures (a QR code holds 2953 bytes; each disclosure is 30 bytes or more).
    static let maxDisclosures = 32

    let issuerJWT: [UInt8]
    /// Each disclosure as presented (base64url text), in order.
    let disclosures: [[UInt8]]
    /// The key-binding JWT; nil when the presentation ends with `~` (no key binding).
    let keyBinding: [UInt8]?
    /// What `sd_hash` covers: the presentation up to and including the last `~` (RFC 9901 §4.3.1).
    let hashedPart: [UInt8]

    /// Splits a payload at `~`; nil when it has none (a plain JWT). Sizes are the JWS ones: a presentation
    /// is never longer than a pass may be.
    static func split(_ payload: [UInt8]) throws(Refusal) -> SDJWTPresentation? {
        guard let last = payload.lastIndex(of: UInt8(ascii: "~")) else { return nil }
        guard payload.count <= JWS.maxTokenBytes else {
            throw Refusal(.malformed, "\(payload.count) bytes is longer than a presentation may be (\(JWS.maxTokenBytes))")
        }
        let parts = payload.split(separator: UInt8(ascii: "~"), omittingEmptySubsequences: false).map { Array($0) }
        // parts: the issuer JWT, the disclosures, then what follows the last "~" (the KB-JWT, or empty).
        guard parts.count >= 2, let issuer = parts.first, !issuer.isEmpty else {
            throw Refusal(.malformed, "an SD-JWT presentation starts with the issuer-signed JWT before its first '~'")
        }
        let disclosures = Array(parts[1..<(parts.count - 1)])
        guard disclosures.count <= maxDisclosures else {
            throw Refusal(.malformed, "\(disclosures.count) disclosures; a presentation may carry at most \(maxDisclosures)")
        }
        guard disclosures.allSatisfy({ !$0.isEmpty }) else {
            throw Refusal(.malformed, "an empty disclosure ('~~') in the presentation")
        }
        let tail = parts[parts.count - 1]
        return SDJWTPresentation(issuerJWT: issuer, disclosures: disclosures, keyBinding: tail.isEmpty ? nil : tail,
                                 hashedPart: Array(payload[...last]))
    }

    /// `sd_hash`: base64url of the SHA-256 of `hashedPart`.
    func sdHash() throws(Refusal) -> String {
        do throws(CryptoError) {
            return Base64.urlEncode(try CryptoDigest.sha256(hashedPart))
        } catch {
            throw Refusal(.malformed, "cannot hash the presentation: \(error)")
        }
    }
}

/// Applies disclosures to an SD-JWT's verified claims (RFC 9901 §7.1, steps 3-4): each `_sd` digest with
/// a disclosure becomes its claim, each array element `{"...": digest}` with one becomes its value, the
/// digests without one (decoys, undisclosed claims) are dropped, and `_sd` and `_sd_alg` go. Refused as
/// malformed: a hash algorithm other than sha-256, a disclosure that is not valid or that no digest
/// names, one named twice, a digest that appears twice, and a disclosed name that is already a claim.
enum SelectiveDisclosure {
    struct Disclosure {
        /// [salt, name, value] (an object member) or [salt, value] (an array element).
        let name: String?
        let value: JSONValue
        var used = false
    }

    static func apply(_ claims: JSONObject, disclosures encoded: [[UInt8]]) throws(Refusal) -> JSONObject {
        if let alg = claims["_sd_alg"] {
            guard let name = alg.stringValue, name.bytesEqual("sha-256") else {
                throw Refusal(.malformed, "_sd_alg \(alg.text) is not sha-256, the one hash this kiosk checks disclosures with")
            }
        }
        var table: [String: Disclosure] = [:]
        for (n, text) in encoded.enumerated() {
            let digest: String
            do throws(CryptoError) {
                digest = Base64.urlEncode(try CryptoDigest.sha256(text))
            } catch {
                throw Refusal(.malformed, "cannot hash disclosure \(n + 1): \(error)")
            }
            guard table[digest] == nil else { throw Refusal(.malformed, "disclosure \(n + 1) is presented twice") }
            table[digest] = try decode(text, index: n + 1)
        }
        var seen = Set<String>()
        let out = try object(claims, top: true, table: &table, seen: &seen, depth: 0)
        if let unused = table.values.first(where: { !$0.used }) {
            throw Refusal(.malformed, "a disclosure (\(unused.name.map { "claim " + JSONText.asciiString($0) } ?? "an array element")) is not named by any digest in the pass")
        }
        return out
    }

    static func decode(_ text: [UInt8], index: Int) throws(Refusal) -> Disclosure {
        guard let bytes = Base64.urlDecode(String(decoding: text, as: UTF8.self)) else {
            throw Refusal(.malformed, "disclosure \(index) is not base64url")
        }
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(bytes, maxBytes: JWS.maxClaimsBytes, maxDepth: 6)
        } catch {
            throw Refusal(.malformed, "disclosure \(index): \(error)")
        }
        guard let items = value.arrayValue, items.first?.stringValue != nil else {
            throw Refusal(.malformed, "disclosure \(index) is not a JSON array starting with its salt")
        }
        switch items.count {
        case 3:
            guard let name = items[1].stringValue else { throw Refusal(.malformed, "disclosure \(index): the claim name is not a string") }
            guard !name.bytesEqual("_sd"), !name.bytesEqual("..."), !name.bytesEqual("_sd_alg") else {
                throw Refusal(.malformed, "disclosure \(index) names the reserved claim \(JSONText.string(name))")
            }
            return Disclosure(name: name, value: items[2])
        case 2:
            return Disclosure(name: nil, value: items[1])
        default:
            throw Refusal(.malformed, "disclosure \(index) has \(items.count) elements; it has 3 (an object member) or 2 (an array element)")
        }
    }

    private static func object(_ input: JSONObject, top: Bool, table: inout [String: Disclosure], seen: inout Set<String>,
                               depth: Int) throws(Refusal) -> JSONObject {
        guard depth < 8 else { throw Refusal(.malformed, "the disclosed claims nest deeper than 8 levels") }
        var pairs: [(String, JSONValue)] = []
        var digests: [JSONValue] = []
        for (key, value) in input.members {
            if key.bytesEqual("_sd") {
                guard let list = value.arrayValue else { throw Refusal(.malformed, "\"_sd\" is not an array of digests") }
                digests = list
            } else if top && key.bytesEqual("_sd_alg") {
                continue
            } else {
                pairs.append((key, try self.value(value, table: &table, seen: &seen, depth: depth + 1)))
            }
        }
        for item in digests {
            guard let digest = item.stringValue else { throw Refusal(.malformed, "an \"_sd\" digest is not a string") }
            guard seen.insert(digest).inserted else { throw Refusal(.malformed, "the digest \(JSONText.asciiString(digest)) appears twice") }
            guard var found = table[digest] else { continue }
            guard let name = found.name else {
                throw Refusal(.malformed, "an \"_sd\" digest names an array-element disclosure")
            }
            guard !found.used else { throw Refusal(.malformed, "a disclosure is named twice") }
            found.used = true
            table[digest] = found
            guard !pairs.contains(where: { $0.0.bytesEqual(name) }) else {
                throw Refusal(.malformed, "the disclosed claim \(JSONText.asciiString(name)) is already a claim")
            }
            pairs.append((name, try value(found.value, table: &table, seen: &seen, depth: depth + 1)))
        }
        guard let out = JSONObject(pairs) else { throw Refusal(.malformed, "a claim name repeats") }
        return out
    }

    private static func value(_ input: JSONValue, table: inout [String: Disclosure], seen: inout Set<String>,
                              depth: Int) throws(Refusal) -> JSONValue {
        switch input {
        case .object(let o):
            return .object(try object(o, top: false, table: &table, seen: &seen, depth: depth))
        case .array(let items):
            guard depth < 8 else { throw Refusal(.malformed, "the disclosed claims nest deeper than 8 levels") }
            var out: [JSONValue] = []
            for item in items {
                if let o = item.objectValue, o.count == 1, let reference = o["..."] {
                    guard let digest = reference.stringValue else { throw Refusal(.malformed, "an array element's \"...\" is not a digest string") }
                    guard seen.insert(digest).inserted else { throw Refusal(.malformed, "the digest \(JSONText.asciiString(digest)) appears twice") }
                    guard var found = table[digest] else { continue }
                    guard found.name == nil else { throw Refusal(.malformed, "an array element's digest names an object-member disclosure") }
                    guard !found.used else { throw Refusal(.malformed, "a disclosure is named twice") }
                    found.used = true
                    table[digest] = found
                    out.append(try value(found.value, table: &table, seen: &seen, depth: depth + 1))
                } else {
                    out.append(try value(item, table: &table, seen: &seen, depth: depth + 1))
                }
            }
            return .array(out)
        default:
            return input
        }
    }
}

/// The holder key a pass names: `cnf` with a `jwk` (RFC 7800 §3.2), Ed25519 (OKP) or P-256 (EC).
enum HolderKey {
    static func parse(_ cnf: JSONValue) throws(Refusal) -> PublicKey {
        guard let jwk = cnf["jwk"]?.objectValue else {
            throw Refusal(.malformed, "\"cnf\" has no \"jwk\" object (the holder's public key, RFC 7800)")
        }
        func coordinate(_ name: String) throws(Refusal) -> [UInt8] {
            guard let text = jwk[name]?.stringValue, let bytes = Base64.urlDecode(text) else {
                throw Refusal(.malformed, "cnf.jwk has no base64url \"\(name)\"")
            }
            return bytes
        }
        let kty = jwk["kty"]?.stringValue ?? "", crv = jwk["crv"]?.stringValue ?? ""
        if kty.bytesEqual("OKP") && crv.bytesEqual("Ed25519") {
            let x = try coordinate("x")
            do throws(CryptoError) { return try PublicKey.ed25519(x: x, subject: "cnf.jwk") } catch {
                throw Refusal(.malformed, "cnf.jwk is not a valid key: \(error)")
            }
        }
        if kty.bytesEqual("EC") && crv.bytesEqual("P-256") {
            let x = try coordinate("x"), y = try coordinate("y")
            do throws(CryptoError) { return try PublicKey.p256(x: x, y: y, subject: "cnf.jwk") } catch {
                throw Refusal(.malformed, "cnf.jwk is not a valid key: \(error)")
            }
        }
        throw Refusal(.malformed, "cnf.jwk is kty \(JSONText.asciiString(kty)) crv \(JSONText.asciiString(crv)); holder keys are OKP Ed25519 or EC P-256")
    }
}

/// A key-binding JWT after its signature verified with the holder key (RFC 9901 §4.3).
struct KeyBindingClaims {
    let issuedAt: Double
    let audience: String
    let nonce: String
    let sdHash: String

    static let maxBytes = 1024

    static func parse(_ payload: [UInt8]) throws(Refusal) -> KeyBindingClaims {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(payload, maxBytes: maxBytes, maxDepth: 4)
        } catch {
            throw Refusal(.malformed, "the key-binding JWT's claims: \(error)")
        }
        guard let o = value.objectValue else { throw Refusal(.malformed, "the key-binding JWT's claims are not a JSON object") }
        guard let iat = o["iat"]?.numberValue?.double, iat.isFinite else {
            throw Refusal(.malformed, "the key-binding JWT has no iat (a number of seconds since 1970)")
        }
        guard let aud = o["aud"]?.stringValue else { throw Refusal(.malformed, "the key-binding JWT has no aud string (the door)") }
        guard let nonce = o["nonce"]?.stringValue, !nonce.isEmpty else {
            throw Refusal(.malformed, "the key-binding JWT has no nonce string")
        }
        guard let hash = o["sd_hash"]?.stringValue else { throw Refusal(.malformed, "the key-binding JWT has no sd_hash string") }
        return KeyBindingClaims(issuedAt: iat, audience: aud, nonce: nonce, sdHash: hash)
    }
}

/// A CWT presentation: `SG2:` + base45 of a CBOR array of two byte strings, the pass (the tagged
/// COSE_Sign1 an `SG1:` code carries) and the holder's proof, a COSE_Sign1 by the key the pass's cnf
/// names (RFC 8747) whose claims are aud (3, the door), iat (6) and cti (7, a nonce), signed with the
/// SHA-256 of the pass as external_aad, so the proof is for that pass alone.
///
/// Why a prefix of its own: a kiosk tells a bare pass (`SG1:`) from a presentation before it parses
/// anything, an `SG1:` code with cnf can be refused as the screenshot it is, and both stay within the
/// QR alphanumeric set. Why two byte strings: each signature covers exact bytes, and the proof's
/// external_aad is the hash of the pass as it was shown.
struct CWTPresentation: Sendable {
    static let prefix = "SG2:"
    static let prefixBytes = Array(prefix.utf8)
    static let maxBytes = 3072

    let pass: [UInt8]
    let proof: [UInt8]

    static func hasPrefix(_ payload: [UInt8]) -> Bool { payload.starts(with: prefixBytes) }

    static func parse(_ payload: [UInt8]) throws(Refusal) -> CWTPresentation {
        guard payload.count <= JWS.maxTokenBytes else {
            throw Refusal(.malformed, "\(payload.count) bytes is longer than a presentation may be (\(JWS.maxTokenBytes))")
        }
        let bytes: [UInt8]
        do throws(Base45.DecodeError) {
            bytes = try Base45.decode(payload[prefixBytes.count...], maxBytes: maxBytes)
        } catch {
            throw Refusal(.malformed, "after \(prefix): \(error)")
        }
        let item: CBORValue
        do throws(CBORError) {
            item = try CBORValue.decode(bytes, maxBytes: maxBytes, maxDepth: 2, maxItems: 3)
        } catch {
            throw Refusal(.malformed, "the presentation: \(error)")
        }
        guard let parts = item.arrayValue, parts.count == 2, let pass = parts[0].bytesValue, let proof = parts[1].bytesValue else {
            throw Refusal(.malformed, "a CWT presentation is an array of two byte strings: the pass and the holder's proof")
        }
        return CWTPresentation(pass: pass, proof: proof)
    }

    /// The proof's external_aad: the SHA-256 of the pass's bytes.
    static func passHash(_ pass: [UInt8]) throws(Refusal) -> [UInt8] {
        do throws(CryptoError) {
            return try CryptoDigest.sha256(pass)
        } catch {
            throw Refusal(.malformed, "cannot hash the pass: \(error)")
        }
    }
}

/// The holder's proof in a CWT presentation, after its signature verified.
struct HolderProofClaims {
    let issuedAt: Double
    let audience: String
    let nonce: [UInt8]

    static func parse(_ payload: [UInt8]) throws(Refusal) -> HolderProofClaims {
        let map: CBORMap
        do throws(CBORError) {
            guard let parsed = try CBORValue.decode(payload, maxBytes: 512, maxDepth: 2, maxItems: 16).mapValue else {
                throw CBORError(offset: 0, reason: "not a map")
            }
            map = parsed
        } catch {
            throw Refusal(.malformed, "the holder's proof claims: \(error)")
        }
        guard let aud = map[COSESign1.Claim.aud]?.textValue else { throw Refusal(.malformed, "the holder's proof has no aud (3) text (the door)") }
        let iat: Double
        switch map[COSESign1.Claim.iat] {
        case .some(.unsigned(let n)): iat = Double(n)
        case .some(.float(let d)) where d.isFinite: iat = d
        default: throw Refusal(.malformed, "the holder's proof has no iat (6) (seconds since 1970)")
        }
        guard let nonce = map[COSESign1.Claim.cti]?.bytesValue, (1...64).contains(nonce.count) else {
            throw Refusal(.malformed, "the holder's proof has no cti (7) of 1 to 64 bytes (its nonce)")
        }
        return HolderProofClaims(issuedAt: iat, audience: aud, nonce: nonce)
    }
}

extension HolderKey {
    /// cnf (CWT claim 8) holding a COSE_Key (label 1, RFC 8747 §3.2): kty 1 (OKP) crv 6 (Ed25519) x, or
    /// kty 2 (EC2) crv 1 (P-256) x y.
    static func parseCOSE(_ cnf: CBORValue) throws(Refusal) -> PublicKey {
        guard let key = cnf.mapValue?[1]?.mapValue else {
            throw Refusal(.malformed, "cnf (8) has no COSE_Key (label 1, the holder's public key, RFC 8747)")
        }
        let kty = key[1]?.int64, crv = key[-1]?.int64
        guard let x = key[-2]?.bytesValue else { throw Refusal(.malformed, "the cnf COSE_Key has no x (-2) byte string") }
        do throws(CryptoError) {
            if kty == 1 && crv == 6 { return try PublicKey.ed25519(x: x, subject: "cnf COSE_Key") }
            if kty == 2 && crv == 1 {
                guard let y = key[-3]?.bytesValue else { throw CryptoError("P-256 key", "cnf COSE_Key", "no y (-3) byte string") }
                return try PublicKey.p256(x: x, y: y, subject: "cnf COSE_Key")
            }
        } catch {
            throw Refusal(.malformed, "the cnf COSE_Key is not a valid key: \(error)")
        }
        throw Refusal(.malformed, "the cnf COSE_Key is kty \(kty.map(String.init) ?? "?") crv \(crv.map(String.init) ?? "?"); holder keys are OKP Ed25519 (1, 6) or EC2 P-256 (2, 1)")
    }
}
