import Core
import Settings

/// What `scangate credential issue` puts in a pass.
public struct PassRequest: Sendable {
    public var format: CredentialFormat
    /// The credential number, written as `sub`.
    public var number: String
    /// Seconds from `now` to exp.
    public var lifetimeSeconds: Int64
    public var audience: String?
    public var issuer: String?
    /// nil: the key's default kid (`PublicKey.defaultKeyID`, as keygen writes it in the JWKS).
    public var keyID: String?
    /// Adds a random jti (JWT, 12 base64url characters) or cti (CWT, 8 bytes), which one-time use consumes.
    public var oneTime: Bool
    /// Seconds since the epoch.
    public var now: Int64
    /// The pass's entry in a Token Status List (`status` claim; CWT: 65535).
    public var status: StatusReference?
    /// The pass's group in the site policy (`grp`), when it has one.
    public var group: String? = nil
    /// The holder's public key (`cnf.jwk`, RFC 7800): the pass is then accepted only in a fresh
    /// presentation signed by it (credential-holder-binding). JWT only.
    public var holderKey: PublicKey? = nil

    public init(format: CredentialFormat, number: String, lifetimeSeconds: Int64, audience: String? = nil,
                issuer: String? = nil, keyID: String? = nil, oneTime: Bool = false, now: Int64, status: StatusReference? = nil) {
        self.status = status
        self.format = format
        self.number = number
        self.lifetimeSeconds = lifetimeSeconds
        self.audience = audience
        self.issuer = issuer
        self.keyID = keyID
        self.oneTime = oneTime
        self.now = now
    }
}

/// Issues passes with a private key: for a small site without a server, for tests and for the bench.
/// A site with a server issues them with any JOSE or COSE library (docs/credentials.md shows PyJWT and cwt).
public enum PassIssuer {
    /// The pass as text: a JWS compact token, or `SG1:` + base45 of a COSE_Sign1.
    ///
    /// JWT claims: sub, iat, exp, and aud, iss, jti when asked. CWT claims: sub (2), exp (4), and aud (3),
    /// iss (1), cti (7) when asked, with alg and kid in the protected header. A CWT leaves iat out: it
    /// costs 6 bytes, and without it a typical one-time pass (8-digit number, 8-character kid) is 172
    /// characters, which fits QR version 7 at ECC M (178); credential-max-lifetime-s then measures such a
    /// pass from the time of the read.
    public static func issue(_ request: PassRequest, key: PrivateKey) throws(CryptoError) -> String {
        let kid: String
        if let chosen = request.keyID { kid = chosen } else { kid = try key.publicKey().defaultKeyID() }
        let expires = request.now.addingReportingOverflow(request.lifetimeSeconds)
        guard !expires.overflow else { throw CryptoError("pass", "--ttl", "exp overflows") }
        switch request.format {
        case .jwt:
            let header = JSONText.object([("alg", JSONText.string(key.algorithm.joseName)), ("kid", JSONText.string(kid))])
            var claims: [(String, String)] = [("sub", JSONText.string(request.number))]
            if let iss = request.issuer { claims.append(("iss", JSONText.string(iss))) }
            if let aud = request.audience { claims.append(("aud", JSONText.string(aud))) }
            claims.append(("iat", String(request.now)))
            claims.append(("exp", String(expires.partialValue)))
            if request.oneTime { claims.append(("jti", JSONText.string(Base64.urlEncode(try CryptoDigest.randomBytes(9))))) }
            if let s = request.status {
                claims.append(("status", JSONText.object([("status_list", JSONText.object([("idx", String(s.index)), ("uri", JSONText.string(s.uri))]))])))
            }
            if let g = request.group { claims.append(("grp", JSONText.string(g))) }
            if let holder = request.holderKey {
                let jwk = JSONText.object(try holder.jwkMembers().map { ($0.0, JSONText.string($0.1)) })
                claims.append(("cnf", JSONText.object([("jwk", jwk)])))
            }
            let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(JSONText.object(claims).utf8))
            let signature = try key.sign(Array(input.utf8))
            return input + "." + Base64.urlEncode(signature)
        case .cwt:
            let protected = CBORValue.map(CBORMap([
                (.int(COSESign1.Label.alg), .int(key.algorithm.coseValue)),
                (.int(COSESign1.Label.kid), .bytes(Array(kid.utf8))),
            ]) ?? CBORMap()).encoded
            var claims: [(CBORValue, CBORValue)] = []
            if let iss = request.issuer { claims.append((.int(COSESign1.Claim.iss), .text(iss))) }
            claims.append((.int(COSESign1.Claim.sub), .text(request.number)))
            if let aud = request.audience { claims.append((.int(COSESign1.Claim.aud), .text(aud))) }
            claims.append((.int(COSESign1.Claim.exp), .int(expires.partialValue)))
            if request.oneTime { claims.append((.int(COSESign1.Claim.cti), .bytes(try CryptoDigest.randomBytes(8)))) }
            if let s = request.status {
                let reference = CBORValue.map(CBORMap([(.text("idx"), .int(Int64(s.index))), (.text("uri"), .text(s.uri))]) ?? CBORMap())
                claims.append((.int(COSESign1.Claim.status), .map(CBORMap([(.text("status_list"), reference)]) ?? CBORMap())))
            }
            if let g = request.group { claims.append((.text("grp"), .text(g))) }
            if let holder = request.holderKey {
                claims.append((.int(COSESign1.Claim.cnf), .map(CBORMap([(.int(1), .map(try coseKey(holder)))]) ?? CBORMap())))
            }
            let payload = CBORValue.map(CBORMap(claims) ?? CBORMap()).encoded
            let signature = try key.sign(COSESign1.sigStructure(protected: protected, payload: payload))
            let message = CBORValue.tagged(COSESign1.sign1Tag, .array([.bytes(protected), .map(CBORMap()), .bytes(payload), .bytes(signature)]))
            return COSESign1.prefix + Base45.encode(message.encoded)
        }
    }
}

extension PassIssuer {
    /// A public key as a COSE_Key (RFC 9052 §7): kty 1 OKP crv 6 Ed25519 x, or kty 2 EC2 crv 1 P-256 x y.
    static func coseKey(_ key: PublicKey) throws(CryptoError) -> CBORMap {
        var x: [UInt8] = [], y: [UInt8] = []
        for (name, value) in try key.jwkMembers() {
            if name == "x" { x = Base64.urlDecode(value) ?? [] }
            if name == "y" { y = Base64.urlDecode(value) ?? [] }
        }
        let pairs: [(CBORValue, CBORValue)] = key.algorithm == .ed25519
            ? [(.int(1), .int(1)), (.int(-1), .int(6)), (.int(-2), .bytes(x))]
            : [(.int(1), .int(2)), (.int(-1), .int(1)), (.int(-2), .bytes(x)), (.int(-3), .bytes(y))]
        return CBORMap(pairs) ?? CBORMap()
    }
}

/// Presentations of holder-bound passes (SD-JWT with Key Binding, RFC 9901 §4.3): for tests, the bench,
/// and a site without a wallet app. A phone makes them itself (deploy/wallet, or any SD-JWT library).
public enum PresentationMaker {
    /// `<pass>~<disclosures>~<KB-JWT>`: a plain JWT pass gets a `~`; an SD-JWT issuance (`JWT~D1~…~`) is
    /// presented with every disclosure it carries. The KB-JWT has typ kb+jwt, the holder key's alg, and
    /// iat `now`, aud, a random nonce and sd_hash over what precedes it.
    public static func present(_ pass: String, holderKey: PrivateKey, audience: String, now: Int64,
                               nonce: String? = nil) throws(CryptoError) -> String {
        var head = pass
        while head.hasSuffix("\n") || head.hasSuffix("\r") || head.hasSuffix(" ") { head.removeLast() }
        if head.hasPrefix(COSESign1.prefix) { return try presentCWT(head, holderKey: holderKey, audience: audience, now: now, nonce: nonce) }
        if !head.hasSuffix("~") { head += "~" }
        let digest = try CryptoDigest.sha256(Array(head.utf8))
        let header = JSONText.object([("alg", JSONText.string(holderKey.algorithm.joseName)), ("typ", JSONText.string("kb+jwt"))])
        var chosenNonce = nonce ?? ""
        if nonce == nil { chosenNonce = Base64.urlEncode(try CryptoDigest.randomBytes(12)) }
        let claims = JSONText.object([("iat", String(now)), ("aud", JSONText.string(audience)), ("nonce", JSONText.string(chosenNonce)),
                                      ("sd_hash", JSONText.string(Base64.urlEncode(digest)))])
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(claims.utf8))
        let signature = try holderKey.sign(Array(input.utf8))
        return head + input + "." + Base64.urlEncode(signature)
    }

    /// `SG2:` + base45 of [pass, proof]: the proof a COSE_Sign1 by the holder key over {3: aud, 6: iat,
    /// 7: nonce} with the pass's SHA-256 as external_aad (see CWTPresentation).
    static func presentCWT(_ pass: String, holderKey: PrivateKey, audience: String, now: Int64, nonce: String?) throws(CryptoError) -> String {
        let passBytes: [UInt8]
        do throws(Base45.DecodeError) {
            passBytes = try Base45.decode(Array(pass.utf8)[COSESign1.prefixBytes.count...])
        } catch {
            throw CryptoError("presentation", "--pass", "not base45 after \(COSESign1.prefix): \(error)")
        }
        var nonceBytes = Array((nonce ?? "").utf8)
        if nonce == nil { nonceBytes = try CryptoDigest.randomBytes(8) }
        let claims = CBORValue.map(CBORMap([(.int(COSESign1.Claim.aud), .text(audience)), (.int(COSESign1.Claim.iat), .int(now)),
                                            (.int(COSESign1.Claim.cti), .bytes(nonceBytes))]) ?? CBORMap()).encoded
        let protected = CBORValue.map(CBORMap([(.int(COSESign1.Label.alg), .int(holderKey.algorithm.coseValue))]) ?? CBORMap()).encoded
        let aad = try CryptoDigest.sha256(passBytes)
        let signature = try holderKey.sign(COSESign1.sigStructure(protected: protected, payload: claims, externalAAD: aad))
        let proof = CBORValue.tagged(COSESign1.sign1Tag, .array([.bytes(protected), .map(CBORMap()), .bytes(claims), .bytes(signature)])).encoded
        return CWTPresentation.prefix + Base45.encode(CBORValue.array([.bytes(passBytes), .bytes(proof)]).encoded)
    }
}
