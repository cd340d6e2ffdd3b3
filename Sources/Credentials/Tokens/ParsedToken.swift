import Settings
/// A token split into what its signature covers and what selects the key, before anything in its claims
/// is believed: the claims are parsed only after the signature verified.
struct ParsedToken: Sendable {
    let format: CredentialFormat
    /// The algorithm as the token names it, for messages: `"HS256"`, `COSE -7`.
    let algorithmName: String
    /// nil: not an algorithm this program verifies (none, HS*, RS*, ...).
    let algorithm: SignatureAlgorithm?
    /// The kid, when the token has one. `keyIDIsText` is false for a COSE kid that is not UTF-8 (it then
    /// matches no key).
    let keyID: String?
    let keyIDIsText: Bool
    /// The bytes the signature covers: `header.payload` (JWS) or the Sig_structure (COSE).
    let signingInput: [UInt8]
    let signature: [UInt8]
    /// The claims, still encoded: JSON (JWT) or CBOR (CWT).
    let payload: [UInt8]
    /// The header's typ as text, when it has one (a status list token says `statuslist+jwt`, or in COSE
    /// `application/statuslist+cwt`).
    var type: String? = nil
    /// COSE only: whether typ (label 16) is in the protected header, where the signature covers it.
    var typeIsProtected = false
    /// COSE only: typ as a CoAP Content-Format number (RFC 9596), when it is an integer.
    var typeContentFormat: Int64? = nil
}

/// A pass's `status.status_list` claim (draft-ietf-oauth-status-list, Referenced Token): the index of its
/// entry in the status list that `uri` names. JWT: `"status": {"status_list": {"idx", "uri"}}`; CWT: claim
/// 65535, a map with the text key `status_list` whose map has `idx` and `uri`.
public struct StatusReference: Equatable, Sendable {
    public let index: Int
    public let uri: String

    public init(index: Int, uri: String) {
        self.index = index
        self.uri = uri
    }

    /// The largest idx read (a list of 2^31 entries is far beyond any status list a kiosk holds).
    public static let maxIndex = Int(Int32.max)
    public static let maxURIBytes = 2048
}

/// A token's claims after its signature verified, in one form for both formats.
struct PassClaims: Sendable {
    var issuer: String?
    /// nil when the token has no aud; otherwise the one string or the array's strings.
    var audience: [String]?
    var expiresAt: Double?
    var notBefore: Double?
    var issuedAt: Double?
    /// jti (JWT, its UTF-8 bytes) or cti (CWT, its bytes): what one-time use consumes.
    var tokenID: [UInt8]?
    /// How CredentialInfo and logs show the token id: the jti text, or the cti in lower-case hex.
    var tokenIDText: String?
    /// The credential-number-claim value as text, nil when absent.
    var number: String?
    /// Every claim as one JSON object (CWT labels by name: iss, sub, aud, exp, nbf, iat, cti), for
    /// `scangate credential verify`.
    var json: String
    /// status.status_list, when the pass has one.
    var status: StatusReference? = nil
    /// grp: the pass's group in the site policy's schedules (1 to 64 bytes), when it has one.
    var group: String? = nil
}

extension PassClaims {
    /// The most bytes a `grp` claim may have.
    static let maxGroupBytes = 64

    /// Checks a `grp` value read from the claims.
    static func checkedGroup(_ text: String?, present: Bool) throws(Refusal) -> String? {
        guard present else { return nil }
        guard let text, !text.isEmpty, text.utf8.count <= maxGroupBytes else {
            throw Refusal(.malformed, "grp must be a string of 1 to \(maxGroupBytes) bytes (the pass's group in the site policy)")
        }
        return text
    }
}
