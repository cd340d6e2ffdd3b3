import Core
import Platform
import Settings

/// A pass whose signature and claims passed: what CredentialInfo, the log and one-time use need.
public struct VerifiedPass: Equatable, Sendable {
    public let format: CredentialFormat
    public let algorithm: SignatureAlgorithm
    public let number: String
    public let keyID: String
    /// jti (JWT) or cti in lower-case hex (CWT); nil when the pass has none.
    public let tokenID: String?
    /// The raw jti / cti bytes, for the replay store.
    public let tokenIDBytes: [UInt8]?
    public let issuer: String?
    /// exp, seconds since the epoch (fractions kept).
    public let expiresAt: Double
    /// Every claim as a JSON object (for `scangate credential verify`).
    public let claimsJSON: String
    /// status.status_list (CWT: claim 65535), checked against credential-status-list.
    public var status: StatusReference? = nil
    /// grp: the pass's group in the site policy (policy-file); nil: the group `default`.
    public var group: String? = nil
    /// Set by the credential policy when anti-passback is soft and this read is a passback (accepted, reported).
    public var passback = false
    /// Set by the credential policy when anti-passback is shared over MQTT and the broker is away.
    public var passbackOffline = false
    /// A presentation by the pass's holder (credential-holder-binding): what accepts it once.
    public var presentation: PresentationID? = nil

    /// exp in whole seconds (a fraction rounds down).
    public var expiresAtSeconds: Int64 {
        guard expiresAt.isFinite, abs(expiresAt) < 9e18 else { return expiresAt > 0 ? Int64.max : Int64.min }
        return Int64(expiresAt.rounded(.down))
    }

    public var info: CredentialInfo {
        var info = CredentialInfo(format: format.rawValue, number: number, keyID: keyID, tokenID: tokenID, expiresAt: expiresAtSeconds, passback: passback)
        info.passbackOffline = passbackOffline
        return info
    }
}

/// One presentation, for accepting it once: the SHA-256 of its key-binding JWT (CWT: of its proof), held in
/// the replay store until the wall clock reaches `holdUntil` (its iat plus the largest window, 300 s, plus 1 s).
public struct PresentationID: Equatable, Sendable {
    public let digest: [UInt8]
    public let holdUntil: Int64
}

/// Verifies passes against a key set and the claim rules of CredentialSettings. A value: the daemon
/// builds a new one when SIGHUP reloads the keys. Pure apart from libcrypto; time comes in as `now`.
///
/// The order of checks, and the reason each gives:
/// 1. the format (JWT: three base64url parts; CWT: `SG1:` + base45 + COSE_Sign1) - malformed; a token
///    whose typ is statuslist+jwt or statuslist+cwt is a status list token, never a pass - malformed;
/// 2. alg: EdDSA/Ed25519/ES256 (COSE -8/-19/-7/-9) within credential-algorithms - algorithm-not-allowed
///    (none, HS256 even when "signed" with the public key as the secret, RS256, ...);
/// 3. the key: the kid's key (not in the set: unknown-key; a key of another type: algorithm-not-allowed);
///    a token without a kid is tried against every key of its algorithm (none: unknown-key);
/// 4. the signature - bad-signature;
/// 5. only now the claims are parsed (malformed), then exp (required) - expired, nbf - not-yet-valid,
///    aud - wrong-audience, iss - wrong-issuer, the lifetime - lifetime-too-long, the number claim
///    (required, 1-128 printable characters) - malformed, status.status_list when present - malformed, and a
///    status_list claim (JWT) or 65533 (CWT), which only status list tokens hold - malformed.
/// The status itself (revoked, policy-stale) is CredentialPolicy's, against the lists it holds.
public struct CredentialVerifier: Sendable {
    public let settings: CredentialSettings
    public let keys: CredentialKeySet

    public init(settings: CredentialSettings, keys: CredentialKeySet) {
        self.settings = settings
        self.keys = keys
    }

    /// The longest credential number door outputs are given.
    public static let maxNumberLength = 128

    public func verify(_ payload: [UInt8], now: Int64) -> Result<VerifiedPass, Refusal> {
        do throws(Refusal) {
            return .success(try check(payload, now: Double(now)))
        } catch {
            return .failure(error)
        }
    }

    func check(_ payload: [UInt8], now: Double) throws(Refusal) -> VerifiedPass {
        if settings.format == .cwt || settings.format == .any, CWTPresentation.hasPrefix(payload) {
            return try checkCWTPresentation(try CWTPresentation.parse(payload), now: now)
        }
        if settings.format == .jwt || settings.format == .any, !COSESign1.hasPrefix(payload), let presentation = try SDJWTPresentation.split(payload) {
            return try checkPresentation(presentation, now: now)
        }
        let (pass, holder) = try checkPass(try parse(payload), now: now, disclosures: nil)
        if holder != nil {
            throw Refusal(.holderBindingRequired, "the pass names a holder key (cnf): it is accepted only inside a fresh presentation signed by that key")
        }
        if settings.holderBinding == .require {
            throw Refusal(.holderBindingRequired, "credential-holder-binding is require and this is a bare pass, not a presentation by its holder")
        }
        return pass
    }

    /// An SD-JWT presentation: the issuer's JWT as a pass (with its disclosures applied), then the
    /// key-binding JWT: typ kb+jwt, its signature by the pass's cnf key - bad-holder-signature; sd_hash
    /// over this presentation - bad-holder-signature; aud equal to credential-audience - wrong-door; iat
    /// within credential-presentation-window-s of now - stale-presentation.
    func checkPresentation(_ presentation: SDJWTPresentation, now: Double) throws(Refusal) -> VerifiedPass {
        guard settings.holderBinding != .off else {
            throw Refusal(.malformed, "an SD-JWT presentation (it has '~'); credential-holder-binding is off")
        }
        let issuerToken = try JWS.parse(presentation.issuerJWT)
        if let type = issuerToken.type, type.bytesEqual("kb+jwt") {
            throw Refusal(.malformed, "the issuer-signed part is typ kb+jwt: a key-binding JWT is not a pass")
        }
        var (pass, holder) = try checkPass(issuerToken, now: now, disclosures: presentation.disclosures)
        guard let holder else {
            if settings.holderBinding == .require {
                throw Refusal(.holderBindingRequired, "credential-holder-binding is require and the pass names no holder key (cnf)")
            }
            guard presentation.keyBinding == nil else {
                throw Refusal(.malformed, "a key-binding JWT for a pass that names no holder key (cnf)")
            }
            return pass
        }
        guard let kbBytes = presentation.keyBinding else {
            throw Refusal(.holderBindingRequired, "the pass names a holder key (cnf) and the presentation has no key-binding JWT")
        }
        let kb = try JWS.parse(kbBytes)
        guard let type = kb.type, type.bytesEqual("kb+jwt") else {
            throw Refusal(.malformed, "the key-binding JWT's typ is \(kb.type.map { Self.shown($0) } ?? "missing"); it must be kb+jwt")
        }
        try verifyHolderSignature(kb, holder: holder, what: "the key-binding JWT")
        let claims = try KeyBindingClaims.parse(kb.payload)
        guard claims.sdHash.bytesEqual(try presentation.sdHash()) else {
            throw Refusal(.badHolderSignature, "the key-binding JWT's sd_hash is for another presentation")
        }
        pass.presentation = try checkDoorAndWindow(audience: claims.audience, issuedAt: claims.issuedAt, now: now, proof: kbBytes)
        return pass
    }

    /// A CWT presentation (`SG2:`): the pass as any CWT pass, then the holder's proof, whose signature by
    /// the cnf key covers the pass's hash as external_aad - bad-holder-signature; its aud - wrong-door;
    /// its iat - stale-presentation.
    func checkCWTPresentation(_ presentation: CWTPresentation, now: Double) throws(Refusal) -> VerifiedPass {
        guard settings.holderBinding != .off else {
            throw Refusal(.malformed, "a CWT presentation (\(CWTPresentation.prefix)); credential-holder-binding is off")
        }
        var (pass, holder) = try checkPass(try COSESign1.message(presentation.pass, limits: .pass), now: now, disclosures: nil)
        guard let holder else {
            if settings.holderBinding == .require {
                throw Refusal(.holderBindingRequired, "credential-holder-binding is require and the pass names no holder key (cnf)")
            }
            throw Refusal(.malformed, "a holder's proof for a pass that names no holder key (cnf)")
        }
        let proof = try COSESign1.message(presentation.proof, limits: .pass, externalAAD: try CWTPresentation.passHash(presentation.pass))
        try verifyHolderSignature(proof, holder: holder, what: "the holder's proof")
        let claims = try HolderProofClaims.parse(proof.payload)
        pass.presentation = try checkDoorAndWindow(audience: claims.audience, issuedAt: claims.issuedAt, now: now, proof: presentation.proof)
        return pass
    }

    /// The holder's signature: the holder key's algorithm, within credential-algorithms, and valid.
    func verifyHolderSignature(_ token: ParsedToken, holder: PublicKey, what: String) throws(Refusal) {
        guard let algorithm = token.algorithm, settings.algorithms.contains(algorithm) else {
            throw Refusal(.algorithmNotAllowed, "\(what)'s alg \(token.algorithmName) is not in credential-algorithms")
        }
        guard algorithm == holder.algorithm else {
            throw Refusal(.badHolderSignature, "\(what) is \(token.algorithmName); the holder key is \(holder.algorithm.keyDescription)")
        }
        let valid: Bool
        do throws(CryptoError) {
            valid = try holder.verify(signature: token.signature, message: token.signingInput)
        } catch {
            throw Refusal(.badHolderSignature, "libcrypto could not verify the holder's signature: \(error)")
        }
        guard valid else { throw Refusal(.badHolderSignature, "\(what)'s signature does not verify with the holder key the pass names (cnf)") }
    }

    /// The presentation's door and time; what accepts it once (the SHA-256 of the holder's signed part).
    func checkDoorAndWindow(audience: String, issuedAt: Double, now: Double, proof: [UInt8]) throws(Refusal) -> PresentationID {
        guard let door = settings.audience, audience.bytesEqual(door) else {
            throw Refusal(.wrongDoor, "the presentation is for \(Self.shown(audience)); this door is \(settings.audience.map { Self.shown($0) } ?? "not set (credential-audience)")")
        }
        let window = Double(settings.presentationWindowSeconds)
        guard abs(now - issuedAt) <= window else {
            let ago = now - issuedAt
            throw Refusal(.stalePresentation, "made at \(Self.time(issuedAt)), \(Self.whole(abs(ago))) s \(ago >= 0 ? "ago" : "ahead of this clock"); credential-presentation-window-s is \(settings.presentationWindowSeconds)")
        }
        let id: [UInt8]
        do throws(CryptoError) {
            id = try CryptoDigest.sha256(proof)
        } catch {
            throw Refusal(.replayStoreFailed, "cannot hash the presentation: \(error)")
        }
        // Held past iat by the largest window any consumer of the store may apply, not this one's (as a pass
        // is held past exp by the largest leeway): a `credential verify` with a wider window shares the file.
        // Within the window, so iat is within 300 s of a sane now.
        return PresentationID(digest: id, holdUntil: Int64(issuedAt.rounded(.up)) + Int64(CredentialSettings.presentationWindowRange.upperBound) + 1)
    }

    /// The pass's own checks (below); returns the holder key its cnf names, if any.
    func checkPass(_ token: ParsedToken, now: Double, disclosures: [[UInt8]]?) throws(Refusal) -> (VerifiedPass, PublicKey?) {
        // A status list token signed by a site key must never pass for a pass (its sub is a uri).
        if let type = token.type, StatusListToken.isAnyStatusListType(type) {
            throw Refusal(.malformed, "typ \(Self.shown(type)) is a status list token, not a pass")
        }
        // ParsedToken carries an algorithm only when it is one of ours; the parsers refuse the rest.
        guard let algorithm = token.algorithm else {
            throw Refusal(.algorithmNotAllowed, "alg \(token.algorithmName) is not allowed")
        }
        guard settings.algorithms.contains(algorithm) else {
            throw Refusal(.algorithmNotAllowed, "alg \(token.algorithmName) (\(algorithm)) is not in credential-algorithms (\(settings.algorithms.map(\.rawValue).joined(separator: ", ")))")
        }
        let key = try verifySignature(token, algorithm)
        let claims: PassClaims
        var holder: PublicKey?
        switch token.format {
        case .jwt:
            var payload = token.payload
            var object = try Self.claimsObject(payload)
            // An SD-JWT's JWT shown alone is the same as one with no disclosures: its digests are dropped.
            if disclosures != nil || object["_sd"] != nil || object["_sd_alg"] != nil {
                object = try SelectiveDisclosure.apply(object, disclosures: disclosures ?? [])
                payload = Array(JSONValue.object(object).text.utf8)
            }
            if let cnf = object["cnf"] { holder = try HolderKey.parse(cnf) }
            claims = try JWS.claims(payload, numberClaim: settings.numberClaim)
        case .cwt:
            claims = try COSESign1.claims(token.payload, numberClaim: settings.numberClaim)
            // COSESign1.claims read the map already: it is a map of at most 256 items.
            if case .map(let map)? = try? CBORValue.decode(token.payload, maxBytes: COSESign1.maxBytes, maxDepth: 8, maxItems: 256),
               let cnf = map[COSESign1.Claim.cnf] {
                holder = try HolderKey.parseCOSE(cnf)
            }
        }
        try checkTimes(claims, now: now)
        try checkAudienceAndIssuer(claims)
        guard let number = claims.number else {
            throw Refusal(.malformed, "the pass has no \(JSONText.string(settings.numberClaim)) claim (credential-number-claim)")
        }
        guard !number.isEmpty, number.count <= Self.maxNumberLength,
              number.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) }) else {
            throw Refusal(.malformed, "the number claim must be 1 to \(Self.maxNumberLength) characters without control characters")
        }
        if let id = claims.tokenID, id.isEmpty || id.count > 128 {
            throw Refusal(.malformed, "jti/cti must be 1 to 128 bytes")
        }
        let pass = VerifiedPass(format: token.format, algorithm: algorithm, number: number, keyID: key.keyID,
                                tokenID: claims.tokenIDText, tokenIDBytes: claims.tokenID, issuer: claims.issuer,
                                expiresAt: claims.expiresAt ?? 0, claimsJSON: claims.json, status: claims.status, group: claims.group)
        return (pass, holder)
    }

    static func claimsObject(_ payload: [UInt8]) throws(Refusal) -> JSONObject {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(payload, maxBytes: JWS.maxClaimsBytes, maxDepth: 8)
        } catch {
            throw Refusal(.malformed, "the claims: \(error)")
        }
        guard let object = value.objectValue else { throw Refusal(.malformed, "the claims are not a JSON object") }
        return object
    }

    func parse(_ payload: [UInt8]) throws(Refusal) -> ParsedToken {
        switch settings.format {
        case .off: throw Refusal(.malformed, "credential-format is off")
        case .jwt: return try JWS.parse(payload)
        case .cwt: return try COSESign1.parse(payload)
        case .any: return COSESign1.hasPrefix(payload) ? try COSESign1.parse(payload) : try JWS.parse(payload)
        }
    }

    /// Picks the key (kid, or every key of the algorithm when the token has none) and verifies.
    func verifySignature(_ token: ParsedToken, _ algorithm: SignatureAlgorithm) throws(Refusal) -> CredentialKey {
        let candidates: [CredentialKey]
        if let kid = token.keyID {
            guard token.keyIDIsText, let key = keys.key(id: kid) else {
                // Non-ASCII escaped: kids are compared byte for byte, and "\u212a1" must not look like "K1".
                throw Refusal(.unknownKey, "kid \(Self.shown(kid)) is not in credential-keys (\(keys.keys.map { Self.listed($0.keyID) }.joined(separator: ", ")))")
            }
            guard key.algorithm == algorithm else {
                throw Refusal(.algorithmNotAllowed, "kid \(JSONText.string(kid)) is \(key.algorithm.keyDescription); the pass says \(token.algorithmName)")
            }
            candidates = [key]
        } else {
            candidates = keys.keys(for: algorithm)
            guard !candidates.isEmpty else {
                throw Refusal(.unknownKey, "the pass has no kid and credential-keys holds no \(algorithm) key")
            }
        }
        for key in candidates {
            let valid: Bool
            do throws(CryptoError) {
                valid = try key.publicKey.verify(signature: token.signature, message: token.signingInput)
            } catch {
                throw Refusal(.badSignature, "libcrypto could not verify: \(error)")
            }
            if valid { return key }
        }
        if let kid = token.keyID {
            throw Refusal(.badSignature, "the signature does not verify with key \(JSONText.string(kid))")
        }
        throw Refusal(.badSignature, "the pass has no kid and its signature verifies with none of the \(candidates.count) \(algorithm) keys")
    }

    func checkTimes(_ claims: PassClaims, now: Double) throws(Refusal) {
        let leeway = Double(settings.leewaySeconds)
        guard let exp = claims.expiresAt else { throw Refusal(.malformed, "the pass has no exp; passes must expire") }
        guard now < exp + leeway else {
            throw Refusal(.expired, "exp \(Self.time(exp)) is \(Self.whole(now - exp)) s ago (leeway \(settings.leewaySeconds) s)")
        }
        if let nbf = claims.notBefore, now + leeway < nbf {
            throw Refusal(.notYetValid, "nbf \(Self.time(nbf)) is \(Self.whole(nbf - now)) s ahead (leeway \(settings.leewaySeconds) s)")
        }
        if settings.maxLifetimeSeconds > 0 {
            let start = claims.notBefore ?? claims.issuedAt ?? now
            let lifetime = exp - start
            if lifetime > Double(settings.maxLifetimeSeconds) {
                let from = claims.notBefore != nil ? "nbf" : claims.issuedAt != nil ? "iat" : "now"
                throw Refusal(.lifetimeTooLong, "valid for \(Self.whole(lifetime)) s from \(from) to exp; credential-max-lifetime-s is \(settings.maxLifetimeSeconds)")
            }
        }
    }

    /// aud and iss are compared as exact strings (RFC 7519 §2 StringOrURI, §4.1.1, §4.1.3): byte for
    /// byte, never by Unicode equivalence ("front-door-\u{212A}" is not "front-door-K"). The messages
    /// escape non-ASCII, so that two strings that look alike are told apart.
    func checkAudienceAndIssuer(_ claims: PassClaims) throws(Refusal) {
        switch (settings.audience, claims.audience) {
        case (nil, nil): break
        case (nil, .some(let aud)):
            throw Refusal(.wrongAudience, "the pass is for \(aud.map { Self.shown($0) }.joined(separator: ", ")) and credential-audience is not set")
        case (.some(let wanted), nil):
            throw Refusal(.wrongAudience, "the pass has no aud; credential-audience is \(Self.shown(wanted))")
        case (.some(let wanted), .some(let aud)):
            guard aud.contains(where: { $0.bytesEqual(wanted) }) else {
                throw Refusal(.wrongAudience, "aud \(aud.map { Self.shown($0) }.joined(separator: ", ")) does not include \(Self.shown(wanted))"
                              + Self.lookAlike(aud, wanted))
            }
        }
        if let wanted = settings.issuer {
            guard let iss = claims.issuer else { throw Refusal(.wrongIssuer, "the pass has no iss; credential-issuer is \(Self.shown(wanted))") }
            guard iss.bytesEqual(wanted) else {
                throw Refusal(.wrongIssuer, "iss \(Self.shown(iss)) is not \(Self.shown(wanted))" + Self.lookAlike([iss], wanted))
            }
        }
    }

    /// A claim or kid in a message: JSON, non-ASCII escaped.
    static func shown(_ text: String) -> String { JSONText.asciiString(text) }

    /// A kid in the list of a key set: as it is when ASCII, else escaped as `shown` does (without quotes).
    static func listed(_ kid: String) -> String {
        kid.unicodeScalars.allSatisfy(\.isASCII) ? kid : String(shown(kid).dropFirst().dropLast())
    }

    /// " (equal only as Unicode-equivalent text; compared byte for byte)" when one of `values` is.
    static func lookAlike(_ values: [String], _ wanted: String) -> String {
        values.contains(where: { $0 == wanted }) ? " (equal only as Unicode-equivalent text; compared byte for byte)" : ""
    }

    /// A span in whole seconds for a message; a value beyond Int64 (a hostile exp of 1e300) is written as is.
    static func whole(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 9e18 else { return String(seconds) }
        return String(Int64(seconds.rounded()))
    }

    /// "2026-11-30T14:01:23Z".
    public static func time(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 9e9 else { return String(seconds) }
        let millis = WallClock.rfc3339(nanoseconds: Int64(seconds.rounded(.down)) * 1_000_000_000)
        return String(millis.prefix(19)) + "Z"
    }
}
