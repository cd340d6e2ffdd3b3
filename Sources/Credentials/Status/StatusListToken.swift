import Core
import Settings

/// A Status List Token in JWT form (draft-ietf-oauth-status-list): a JWS whose header has
/// `typ: statuslist+jwt`, signed by a key in credential-keys, with the claims `sub` (the uri passes name),
/// `iat`, `exp` (required here: a kiosk must be able to tell a stale list), `ttl` (optional, positive) and
/// `status_list: {bits, lst}`. Untrusted until the signature verified; the claims are parsed only then.
public struct StatusListToken: Sendable {
    public let uri: String
    public let issuedAt: Int64
    public let expiresAt: Int64
    public let ttl: Int64?
    public let list: StatusList
    public let keyID: String
    /// TokenFingerprint of the token: its first characters, its length and a hash, for logs.
    public let fingerprint: String

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

    /// Verifies `token` (the file's bytes, surrounding whitespace dropped) with `keys`, then reads its claims.
    public static func verify(_ token: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm]) throws(StatusListError) -> StatusListToken {
        var bytes = token[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { bytes.removeLast() }
        while let first = bytes.first, first == 0x0A || first == 0x0D || first == 0x20 || first == 0x09 { bytes.removeFirst() }
        let text = Array(bytes)
        let parsed: ParsedToken
        do throws(Refusal) {
            parsed = try JWS.parse(text, maxTokenBytes: maxTokenBytes, maxPayloadBytes: maxTokenBytes)
        } catch {
            throw StatusListError("not a JWS: \(error.detail)")
        }
        guard let typ = parsed.type, isStatusListType(typ) else {
            throw StatusListError("the header's typ is \(parsed.type.map { JSONText.asciiString($0) } ?? "missing"); a status list token has typ \(type)")
        }
        guard let algorithm = parsed.algorithm, algorithms.contains(algorithm) else {
            throw StatusListError("alg \(JSONText.asciiString(parsed.algorithmName)) is not in credential-algorithms (\(algorithms.map(\.rawValue).joined(separator: ", ")))")
        }
        var settings = CredentialSettings()
        settings.algorithms = algorithms
        let key: CredentialKey
        do throws(Refusal) {
            key = try CredentialVerifier(settings: settings, keys: keys).verifySignature(parsed, algorithm)
        } catch {
            throw StatusListError("\(error.reason.rawValue): \(error.detail)")
        }
        let claims = try Self.claims(parsed.payload)
        return StatusListToken(uri: claims.uri, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt, ttl: claims.ttl,
                               list: claims.list, keyID: key.keyID, fingerprint: TokenFingerprint.describe(text))
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
