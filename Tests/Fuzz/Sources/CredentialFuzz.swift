import Core
import Credentials
import Settings

/// Signed passes on hostile input: the JWS parser, base45, CBOR/COSE, and the JWKS reader.
enum CredentialFuzz {
    /// The public keys the JWS seeds were signed with (kids `peer-ed`, Ed25519, and `peer-es`, P-256), as in
    /// Tests/Fuzz/corpus/jwks/peer: the seeds' valid passes verify their signature against them (and are
    /// then refused: they expired before `now`), so mutations start inside the signature code.
    static let peerJWKS = #"{"keys": [{"x": "KjSxFw3YyuT3qCoA6fIuqnjoahIJa9SphSVILHcxgZM", "kty": "OKP", "crv": "Ed25519", "kid": "peer-ed"}, {"kty": "EC", "crv": "P-256", "x": "ulJ77klrqlX3xHnPWxZrcbFkXWqXfE_-iI-s_-PW1yI", "y": "G00W1nbyEP5K2ihXRFoivrhoEdiNidjrnhvHStTIvBk", "kid": "peer-es"}]}"#

    /// The keys the COSE seeds (valid-eddsa, valid-es256, tag61, flipped-sig) were signed with, kids
    /// `cose-ed` and `cose-es`, as in Tests/Fuzz/corpus/jwks/cose (the private keys were not kept).
    static let coseJWKS = #"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "3XHUHgIFCtcAPuiDzxgmNlwpvivWo_YQWbV9cCpBums", "kid": "cose-ed"}, {"kty": "EC", "crv": "P-256", "x": "6gK_MoN8105KXjjUr2HjRZ6Ds3CO1JCkD_l4CV47ex4", "y": "m3gOJz3ORfUVoaHU3uPmOs7fDeVintF6_59JiPrm7Ic", "kid": "cose-es"}]}"#

    /// One fixed key set: RFC 8037's example key (kid `k`) and the seeds' keys. A random input must
    /// never verify against it (no private key is here).
    static let keys: CredentialKeySet = {
        let x = Base64.urlDecode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo") ?? []   // RFC 8037's example key
        let key = try? PublicKey.ed25519(x: x, subject: "fuzz")
        let peer = (try? CredentialKeySet.parseJWKS(Array(peerJWKS.utf8), file: "peer.jwks"))?.keys ?? []
        let cose = (try? CredentialKeySet.parseJWKS(Array(coseJWKS.utf8), file: "cose.jwks"))?.keys ?? []
        return CredentialKeySet(keys: (key.map { [CredentialKey(keyID: "k", publicKey: $0, source: "fuzz")] } ?? []) + peer + cose,
                                source: "fuzz")
    }()

    /// What the seeds must reach (`ScanGateFuzz --seed-reach`).
    static let steps = ["the signature check", "a good signature (refused later, for a claim)"]

    /// Which of `steps` the verifier reached, told by its refusal: bad-signature comes from the signature
    /// check; expired, not-yet-valid, wrong-audience, wrong-issuer and lifetime-too-long only after a good
    /// signature (CredentialVerifier's order). malformed, unknown-key and algorithm-not-allowed count as
    /// not reached (malformed can also follow a good signature: this undercounts, never overcounts).
    static func reached(_ result: Result<VerifiedPass, Refusal>) -> Set<String> {
        switch result {
        case .success: return Set(steps)
        case .failure(let refusal):
            switch refusal.reason {
            case .badSignature: return [steps[0]]
            case .expired, .notYetValid, .wrongAudience, .wrongIssuer, .lifetimeTooLong: return Set(steps)
            default: return []
            }
        }
    }

    @Sendable static func jwsReach(_ bytes: [UInt8]) -> Set<String> {
        jws(bytes)
        return reached(verifier(.jwt).verify(bytes, now: now))
    }

    @Sendable static func coseReach(_ bytes: [UInt8]) -> Set<String> {
        cose(bytes)
        return reached(verifier(.cwt).verify(Array((COSESign1.prefix + Base45.encode(bytes)).utf8), now: now))
    }

    static func verifier(_ format: CredentialFormatSetting) -> CredentialVerifier {
        var settings = CredentialSettings()
        settings.format = format
        settings.keys = "fuzz"
        return CredentialVerifier(settings: settings, keys: keys)
    }

    static let now: Int64 = 1_800_000_000

    /// The JWS compact parser and the JWT claims parser.
    static func jws(_ bytes: [UInt8]) {
        require(keys.keys.map(\.keyID) == ["k", "peer-ed", "peer-es", "cose-ed", "cose-es"], "the RFC 8037 key and the seeds' keys load")
        if case .success(let header) = TokenParser.header(bytes, format: .jwt) {
            let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
            require(dots.count == 2, "a parsed JWS has exactly two dots")
            require(header.signingInput == Array(bytes[..<dots[1]]), "the signing input is header.payload as received")
            require(bytes.count <= 4096, "the size limit holds")
        }
        // The same bytes as claims.
        if case .success(let claims) = TokenParser.claims(bytes, format: .jwt) {
            if case .failure(let e) = Result(catching: { try JSONValue.parse(claims.json) }) {
                require(false, "claims JSON does not parse back: \(e)")
            }
        }
        // No input verifies without the private key.
        if case .success(let pass) = verifier(.jwt).verify(bytes, now: now) {
            require(false, "a fuzz input verified as a pass: \(pass.number)")
        }
    }

    /// base45: a decoded text is the one encoding of its bytes; bytes round-trip.
    static func base45(_ bytes: [UInt8]) {
        if let decoded = try? Base45.decode(bytes) {
            require(Array(Base45.encode(decoded).utf8) == bytes, "base45 text that decodes is the canonical encoding of its bytes")
        }
        let encoded = Base45.encode(bytes)
        require((try? Base45.decode(encoded)) == bytes, "base45 round trip")
        require(encoded.utf8.count == bytes.count / 2 * 3 + (bytes.count % 2) * 2, "base45 length")
    }

    /// The CBOR decoder, the COSE_Sign1 reader and the CWT claims reader on raw CBOR bytes.
    static func cose(_ bytes: [UInt8]) {
        require(keys.keys.map(\.keyID) == ["k", "peer-ed", "peer-es", "cose-ed", "cose-es"], "the RFC 8037 key and the seeds' keys load")
        if let value = try? CBORValue.decode(bytes) {
            let again = try? CBORValue.decode(value.encoded)
            require(again == value || hasNaN(value), "CBOR re-encodes to an equal value")
        }
        let token = Array((COSESign1.prefix + Base45.encode(bytes)).utf8)
        if case .success(let header) = TokenParser.header(token, format: .cwt) {
            require(header.signingInput.starts(with: [0x84, 0x6A] + Array("Signature1".utf8)), "Sig_structure starts with Signature1")
        }
        if case .success(let claims) = TokenParser.claims(bytes, format: .cwt) {
            if case .failure(let e) = Result(catching: { try JSONValue.parse(claims.json) }) {
                require(false, "CWT claims JSON does not parse back: \(e)")
            }
        }
        if case .success(let pass) = verifier(.cwt).verify(token, now: now) {
            require(false, "a fuzz input verified as a CWT pass: \(pass.number)")
        }
    }

    static func hasNaN(_ value: CBORValue) -> Bool {
        switch value {
        case .float(let d): return d.isNaN
        case .array(let a): return a.contains(where: hasNaN)
        case .map(let m): return m.entries.contains { hasNaN($0.key) || hasNaN($0.value) }
        case .tagged(_, let v): return hasNaN(v)
        default: return false
        }
    }

    /// The JWKS reader: keys are unique, bounded, and written back they read the same.
    static func jwks(_ bytes: [UInt8]) {
        guard let set = try? CredentialKeySet.parseJWKS(bytes, file: "fuzz.jwks") else { return }
        require(!set.keys.isEmpty && set.keys.count <= CredentialKeySet.maxKeys, "a loaded set has 1-64 keys")
        // Unique as bytes: "K1" and "\u{212A}1" (KELVIN SIGN) are two kids, as the verifier looks them up.
        require(Set(set.keys.map { UTF8Key($0.keyID) }).count == set.keys.count, "kids are unique")
        require(set.keys.allSatisfy { !$0.keyID.isEmpty && $0.keyID.utf8.count <= CredentialKeySet.maxKeyIDLength }, "kids are 1-128 bytes")
        guard let text = try? CredentialKeySet.jwksText(set.keys.map { ($0.keyID, $0.publicKey) }),
              let again = try? CredentialKeySet.parseJWKS(Array(text.utf8), file: "again") else {
            require(false, "a loaded set writes back as a JWKS that loads")
            return
        }
        require(again.keys.map(\.keyID).elementsEqual(set.keys.map(\.keyID), by: { $0.bytesEqual($1) }), "kids survive the round trip byte for byte")
        require(again.keys.map(\.algorithm) == set.keys.map(\.algorithm), "key types survive the round trip")
    }
}
