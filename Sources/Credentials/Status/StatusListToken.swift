import Core
import Settings

/// A Status List Token (draft-ietf-oauth-status-list), signed by a key in credential-keys, in one of two forms:
/// - JWT: a JWS whose header has `typ: statuslist+jwt`, with the claims `sub` (the uri passes name), `iat`,
///   `exp` (required here: a kiosk must be able to tell a stale list), `ttl` (optional, positive) and
///   `status_list: {bits, lst}` (lst in base64url);
/// - CWT: a COSE_Sign1 (tag 18) whose protected header has typ (16) `application/statuslist+cwt`, with the
///   claims 2 (sub), 6 (iat), 4 (exp, required here too), 65534 (ttl) and 65533 (status_list: a map with
///   the text keys `bits` and `lst`, lst a byte string).
/// Untrusted until the signature verified; the claims are parsed only then.
public struct StatusListToken: Sendable {
    public let uri: String
    public let issuedAt: Int64
    public let expiresAt: Int64
    public let ttl: Int64?
    public let list: StatusList
    public let keyID: String
    /// TokenFingerprint of the token: its first characters, its length and a hash, for logs.
    public let fingerprint: String
    /// The form it was read in: jwt (statuslist+jwt) or cwt (application/statuslist+cwt).
    public var format: CredentialFormat = .jwt

    /// The largest token file read: 8 MiB of base64url (about 6 MiB compressed).
    public static let maxTokenBytes = 8 << 20
    public static let type = "statuslist+jwt"

    /// `statuslist+jwt`, or with the `application/` prefix RFC 7515 §4.1.9 allows; ASCII case-insensitive.
    public static func isStatusListType(_ text: String) -> Bool {
        let lower = lowercased(text)
        return lower.bytesEqual(type) || lower.bytesEqual("application/" + type)
    }

    /// Any status list token's typ, JWT or CWT (`statuslist+cwt`): what a pass must never carry.
    public static func isAnyStatusListType(_ text: String) -> Bool {
        let lower = lowercased(text)
        return isStatusListType(text) || lower.bytesEqual("statuslist+cwt") || lower.bytesEqual("application/statuslist+cwt")
    }

    private static func lowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// Verifies `token` (a status list file's bytes, in either form: see StatusListEncoding) with `keys`,
    /// then reads its claims.
    public static func verify(_ token: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm]) throws(StatusListError) -> StatusListToken {
        switch try StatusListEncoding.detect(token) {
        case .jwt(let text): return try verifyJWT(text, keys: keys, algorithms: algorithms)
        case .cwt(let bytes, _): return try verifyCWT(bytes, keys: keys, algorithms: algorithms, fingerprint: TokenFingerprint.describe(token))
        }
    }

    static func verifyJWT(_ text: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm]) throws(StatusListError) -> StatusListToken {
        let parsed: ParsedToken
        do throws(Refusal) {
            parsed = try JWS.parse(text, maxTokenBytes: maxTokenBytes, maxPayloadBytes: maxTokenBytes)
        } catch {
            throw StatusListError("not a JWS: \(error.detail)")
        }
        guard let typ = parsed.type, isStatusListType(typ) else {
            throw StatusListError("the header's typ is \(parsed.type.map { JSONText.asciiString($0) } ?? "missing"); a status list token has typ \(type)")
        }
        let key = try verifySignature(parsed, keys: keys, algorithms: algorithms)
        let claims = try Self.claims(parsed.payload)
        return StatusListToken(uri: claims.uri, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt, ttl: claims.ttl,
                               list: claims.list, keyID: key.keyID, fingerprint: TokenFingerprint.describe(text))
    }

    /// The CWT form (draft-ietf-oauth-status-list, "Status List Token in CWT Format"): a COSE_Sign1 with
    /// tag 18 and no CWT tag, typ `application/statuslist+cwt` (label 16) in its protected header.
    static func verifyCWT(_ bytes: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm],
                          fingerprint: String) throws(StatusListError) -> StatusListToken {
        let parsed: ParsedToken
        do throws(Refusal) {
            parsed = try COSESign1.message(bytes, limits: cwtLimits)
        } catch {
            throw StatusListError("not a COSE_Sign1 status list: \(error.detail)")
        }
        guard parsed.typeIsProtected, let typ = parsed.type, isCWTStatusListType(typ) else {
            let found = parsed.type.map { JSONText.asciiString($0) } ?? parsed.typeContentFormat.map { "the Content-Format \($0)" } ?? "missing"
            let place = parsed.typeIsProtected || found == "missing" ? "" : ", in the unprotected header (the signature does not cover it)"
            throw StatusListError("typ (16) is \(found)\(place); a status list token has typ \(cwtType) in its protected header")
        }
        let key = try verifySignature(parsed, keys: keys, algorithms: algorithms)
        let claims = try Self.cwtClaims(parsed.payload)
        var token = StatusListToken(uri: claims.uri, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt, ttl: claims.ttl,
                                    list: claims.list, keyID: key.keyID, fingerprint: fingerprint)
        token.format = .cwt
        return token
    }

    /// A status list CWT is read up to the token file's size, with room for a few hundred claims.
    static let cwtLimits = COSESign1.Limits(maxBytes: maxTokenBytes, maxItems: 1024, allowsCWTTag: false)

    /// `application/statuslist+cwt` (RFC 9596: a media type in COSE's typ), ASCII case-insensitive.
    public static let cwtType = "application/statuslist+cwt"
    public static func isCWTStatusListType(_ text: String) -> Bool { lowercased(text).bytesEqual(cwtType) }

    /// The algorithm within credential-algorithms, then the signature with credential-keys (as for passes).
    static func verifySignature(_ parsed: ParsedToken, keys: CredentialKeySet, algorithms: [SignatureAlgorithm]) throws(StatusListError) -> CredentialKey {
        guard let algorithm = parsed.algorithm, algorithms.contains(algorithm) else {
            throw StatusListError("alg \(JSONText.asciiString(parsed.algorithmName)) is not in credential-algorithms (\(algorithms.map(\.rawValue).joined(separator: ", ")))")
        }
        var settings = CredentialSettings()
        settings.algorithms = algorithms
        do throws(Refusal) {
            return try CredentialVerifier(settings: settings, keys: keys).verifySignature(parsed, algorithm)
        } catch {
            throw StatusListError("\(error.reason.rawValue): \(error.detail)")
        }
    }

    /// What the claims of a verified status list token say.
    public struct Claims: Equatable, Sendable {
        public let uri: String
        public let issuedAt: Int64
        public let expiresAt: Int64
        public let ttl: Int64?
        public let list: StatusList
    }

    /// The claims, strictly: a JSON object with sub, iat, exp, status_list {bits, lst} and optionally
    /// ttl. The fuzz target's entry point (no signature needed to reach it there).
    public static func claims(_ payload: [UInt8]) throws(StatusListError) -> Claims {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(payload, maxBytes: maxTokenBytes, maxDepth: 8)
        } catch {
            throw StatusListError("the claims: \(error)")
        }
        guard let object = value.objectValue else { throw StatusListError("the claims are not a JSON object") }
        guard let uri = object["sub"]?.stringValue, !uri.isEmpty, uri.utf8.count <= StatusReference.maxURIBytes else {
            throw StatusListError("sub must be the list's uri, a string of 1 to \(StatusReference.maxURIBytes) bytes")
        }
        let issuedAt = try seconds(object, "iat", required: true) ?? 0
        guard let expiresAt = try seconds(object, "exp", required: true) else {
            throw StatusListError("the list has no exp; a kiosk needs it to tell a stale list (policy-stale)")
        }
        guard expiresAt > issuedAt else { throw StatusListError("exp \(expiresAt) is not after iat \(issuedAt)") }
        let ttl = try seconds(object, "ttl", required: false)
        if let ttl, ttl <= 0 { throw StatusListError("ttl must be a positive number of seconds") }
        guard let listObject = object["status_list"]?.objectValue else {
            throw StatusListError("status_list must be a JSON object with bits and lst")
        }
        guard let bitsNumber = listObject["bits"]?.numberValue?.int64, let bits = Int(exactly: bitsNumber) else {
            throw StatusListError("status_list.bits must be 1, 2, 4 or 8")
        }
        guard let lst = listObject["lst"]?.stringValue else { throw StatusListError("status_list.lst must be a string") }
        let list = try StatusList.decode(bits: bits, lst: lst)
        return Claims(uri: uri, issuedAt: issuedAt, expiresAt: expiresAt, ttl: ttl, list: list)
    }

    /// The CWT claims, strictly: a CBOR map with 2 (sub), 6 (iat), 4 (exp), 65533 (status_list: a map with
    /// the text keys `bits`, an unsigned integer, and `lst`, a byte string) and optionally 65534 (ttl, an
    /// unsigned integer). Other claims are allowed and left alone. The fuzz target's entry point for CWT.
    public static func cwtClaims(_ payload: [UInt8]) throws(StatusListError) -> Claims {
        let decoded: CBORValue
        do throws(CBORError) {
            decoded = try CBORValue.decode(payload, maxBytes: maxTokenBytes, maxDepth: 8, maxItems: cwtLimits.maxItems)
        } catch {
            throw StatusListError("the CWT claims: \(error)")
        }
        guard let map = decoded.mapValue else { throw StatusListError("the CWT claims are not a CBOR map") }
        typealias Claim = COSESign1.Claim
        guard let uri = map[Claim.sub]?.textValue, !uri.isEmpty, uri.utf8.count <= StatusReference.maxURIBytes else {
            throw StatusListError("sub (2) must be the list's uri, a text string of 1 to \(StatusReference.maxURIBytes) bytes")
        }
        guard let issuedAt = try cwtSeconds(map, Claim.iat, "iat") else { throw StatusListError("the list has no iat (6)") }
        guard let expiresAt = try cwtSeconds(map, Claim.exp, "exp") else {
            throw StatusListError("the list has no exp (4); a kiosk needs it to tell a stale list (policy-stale)")
        }
        guard expiresAt > issuedAt else { throw StatusListError("exp \(expiresAt) is not after iat \(issuedAt)") }
        var ttl: Int64?
        if let value = map[Claim.ttl] {
            guard case .unsigned(let n) = value, n > 0, n < 100_000_000_000 else {
                throw StatusListError("ttl (65534) must be a positive unsigned integer of seconds")
            }
            ttl = Int64(n)
        }
        guard let value = map[Claim.statusList] else {
            throw StatusListError("the list has no status_list claim (65533)")
        }
        guard let listMap = value.mapValue else {
            throw StatusListError("status_list (65533) must be a map with the text keys bits and lst")
        }
        guard case .unsigned(let bitsNumber)? = listMap["bits"], let bits = Int(exactly: bitsNumber) else {
            throw StatusListError("status_list.bits must be 1, 2, 4 or 8 (an unsigned integer)")
        }
        guard let lst = listMap["lst"]?.bytesValue else {
            throw StatusListError("status_list.lst must be a byte string (the zlib-compressed list)")
        }
        let list = try StatusList.decode(bits: bits, compressed: lst)
        return Claims(uri: uri, issuedAt: issuedAt, expiresAt: expiresAt, ttl: ttl, list: list)
    }

    /// A CWT NumericDate (RFC 8392 §2): an integer, or a float rounded down; within ±1e11.
    private static func cwtSeconds(_ map: CBORMap, _ label: Int64, _ name: String) throws(StatusListError) -> Int64? {
        guard let value = map[label] else { return nil }
        switch value {
        case .unsigned, .negative:
            if let n = value.int64, abs(n) < 100_000_000_000 { return n }
        case .float(let d) where d.isFinite && abs(d) < 1e11:
            return Int64(d.rounded(.down))
        default:
            break
        }
        throw StatusListError("\(name) (\(label)) must be a number of seconds since 1970 (NumericDate)")
    }

    /// A NumericDate or a count of seconds, as whole seconds (a fraction rounds down); within ±1e11.
    private static func seconds(_ object: JSONObject, _ name: String, required: Bool) throws(StatusListError) -> Int64? {
        guard let value = object[name] else {
            if required { throw StatusListError("the list has no \(name)") }
            return nil
        }
        guard let number = value.numberValue, let d = number.double, d.isFinite, abs(d) < 1e11 else {
            throw StatusListError("\(name) must be a number of seconds")
        }
        return number.int64 ?? Int64(d.rounded(.down))
    }
}
