import Core
import Settings

/// JWS compact serialization (RFC 7515 §7.1) carrying JWT claims (RFC 7519), read strictly.
enum JWS {
    /// Longer tokens are refused before any decoding (a QR code holds at most 2953 bytes).
    static let maxTokenBytes = 4096
    static let maxHeaderBytes = 1024
    static let maxClaimsBytes = 3072

    /// Splits and decodes a token; refuses anything that is not three base64url parts with a JSON
    /// object header naming `alg`. Only the header is read here: the claims wait for the signature.
    /// `maxTokenBytes` and `maxPayloadBytes` are a pass's unless given (a status list token is larger).
    static func parse(_ token: [UInt8], maxTokenBytes: Int = maxTokenBytes, maxPayloadBytes: Int = maxClaimsBytes) throws(Refusal) -> ParsedToken {
        guard token.count <= maxTokenBytes else {
            throw Refusal(.malformed, "\(token.count) bytes is longer than a pass may be (\(maxTokenBytes))")
        }
        var dots: [Int] = []
        for (i, b) in token.enumerated() where b == UInt8(ascii: ".") {
            dots.append(i)
            guard dots.count <= 2 else { break }
        }
        guard dots.count == 2 else {
            throw Refusal(.malformed, "a JWT has three base64url parts separated by two dots")
        }
        let headerPart = Array(token[..<dots[0]])
        let payloadPart = Array(token[(dots[0] + 1)..<dots[1]])
        let signaturePart = Array(token[(dots[1] + 1)...])
        guard !headerPart.isEmpty, !payloadPart.isEmpty else {
            throw Refusal(.malformed, "a JWT needs a header and a payload")
        }
        guard let headerBytes = decode(headerPart), headerBytes.count <= maxHeaderBytes else {
            throw Refusal(.malformed, "the header is not base64url without padding (or longer than \(maxHeaderBytes) bytes)")
        }
        guard let payload = decode(payloadPart), payload.count <= maxPayloadBytes else {
            throw Refusal(.malformed, "the payload is not base64url without padding (or longer than \(maxPayloadBytes) bytes)")
        }
        guard let signature = decode(signaturePart) else {
            throw Refusal(.malformed, "the signature is not base64url without padding")
        }
        let headerValue: JSONValue
        do throws(JSONParseError) {
            headerValue = try JSONValue.parse(headerBytes, maxBytes: maxHeaderBytes, maxDepth: 4)
        } catch {
            throw Refusal(.malformed, "the header: \(error)")
        }
        guard let header = headerValue.objectValue else { throw Refusal(.malformed, "the header is not a JSON object") }
        guard let alg = header["alg"]?.stringValue else {
            throw Refusal(.malformed, "the header has no \"alg\" string")
        }
        let algorithm = SignatureAlgorithm(joseName: alg)
        guard algorithm != nil else {
            throw Refusal(.algorithmNotAllowed, "alg \(JSONText.string(alg)) is not allowed (passes use EdDSA, Ed25519 or ES256)")
        }
        // RFC 7515 §4.1.11: a recipient that does not understand an extension listed in crit must refuse
        // the JWS. This verifier implements none, so any crit (and b64, which RFC 7797 puts in crit) refuses.
        if let crit = header["crit"] {
            throw Refusal(.malformed, "the header lists critical extensions \(crit.text); none is supported (RFC 7515 section 4.1.11)")
        }
        if header["b64"] != nil {
            throw Refusal(.malformed, "the header has \"b64\" (RFC 7797 unencoded payload); not supported")
        }
        var keyID: String?
        if let kid = header["kid"] {
            guard let text = kid.stringValue else { throw Refusal(.malformed, "the header's \"kid\" is not a string") }
            keyID = text
        }
        var type: String?
        if let typ = header["typ"] {
            guard let text = typ.stringValue else { throw Refusal(.malformed, "the header's \"typ\" is not a string") }
            type = text
        }
        var parsed = ParsedToken(format: .jwt, algorithmName: alg, algorithm: algorithm, keyID: keyID, keyIDIsText: true,
                                 signingInput: Array(token[..<dots[1]]), signature: signature, payload: payload)
        parsed.type = type
        return parsed
    }

    private static func decode(_ part: [UInt8]) -> [UInt8]? {
        Base64.urlDecode(String(decoding: part, as: UTF8.self))
    }

    /// The claims of a verified token. Strict JSON: a second `"exp"` cannot hide the first.
    static func claims(_ payload: [UInt8], numberClaim: String) throws(Refusal) -> PassClaims {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(payload, maxBytes: maxClaimsBytes, maxDepth: 8)
        } catch {
            throw Refusal(.malformed, "the claims: \(error)")
        }
        guard let object = value.objectValue else { throw Refusal(.malformed, "the claims are not a JSON object") }
        var claims = PassClaims(json: JSONValue.object(object).text)
        claims.issuer = try string(object, "iss")
        if let aud = object["aud"] {
            if let one = aud.stringValue {
                claims.audience = [one]
            } else if let many = aud.arrayValue, many.allSatisfy({ $0.stringValue != nil }) {
                claims.audience = many.compactMap(\.stringValue)
            } else {
                throw Refusal(.malformed, "\"aud\" must be a string or an array of strings")
            }
        }
        claims.expiresAt = try date(object, "exp")
        claims.notBefore = try date(object, "nbf")
        claims.issuedAt = try date(object, "iat")
        if let jti = try string(object, "jti") {
            claims.tokenID = Array(jti.utf8)
            claims.tokenIDText = jti
        }
        // A status list token (its status_list claim) is never a pass, whatever its typ says.
        if object["status_list"] != nil {
            throw Refusal(.malformed, "the claims hold a status_list: a status list token is not a pass")
        }
        if let status = object["status"] {
            claims.status = try statusReference(status)
        }
        claims.group = try PassClaims.checkedGroup(object["grp"]?.stringValue, present: object["grp"] != nil)
        if let value = object[numberClaim] {
            if let text = value.stringValue {
                claims.number = text
            } else if let number = value.numberValue, let whole = number.int64 {
                claims.number = String(whole)
            } else {
                throw Refusal(.malformed, "the number claim \(JSONText.string(numberClaim)) must be a string or a whole number")
            }
        }
        return claims
    }

    /// `status` (draft-ietf-oauth-status-list, Referenced Token in JWT format): an object; its
    /// `status_list`, when present, holds exactly `idx` (a non-negative integer) and `uri` (a string).
    /// Other status mechanisms are left alone (nil).
    static func statusReference(_ status: JSONValue) throws(Refusal) -> StatusReference? {
        guard let object = status.objectValue else { throw Refusal(.malformed, "\"status\" must be a JSON object") }
        guard let list = object["status_list"] else { return nil }
        guard let entry = list.objectValue else { throw Refusal(.malformed, "\"status\".\"status_list\" must be a JSON object") }
        guard let idx = entry["idx"]?.numberValue?.int64, idx >= 0, idx <= Int64(StatusReference.maxIndex) else {
            throw Refusal(.malformed, "status_list.idx must be a whole number from 0 to \(StatusReference.maxIndex)")
        }
        guard let uri = entry["uri"]?.stringValue, !uri.isEmpty, uri.utf8.count <= StatusReference.maxURIBytes else {
            throw Refusal(.malformed, "status_list.uri must be a string of 1 to \(StatusReference.maxURIBytes) bytes")
        }
        return StatusReference(index: Int(idx), uri: uri)
    }

    private static func string(_ object: JSONObject, _ name: String) throws(Refusal) -> String? {
        guard let value = object[name] else { return nil }
        guard let text = value.stringValue else { throw Refusal(.malformed, "\"\(name)\" must be a string") }
        return text
    }

    /// A NumericDate (RFC 7519 §2): a JSON number of seconds since the epoch, fractions allowed.
    private static func date(_ object: JSONObject, _ name: String) throws(Refusal) -> Double? {
        guard let value = object[name] else { return nil }
        guard let number = value.numberValue, let seconds = number.double else {
            throw Refusal(.malformed, "\"\(name)\" must be a number of seconds since 1970 (NumericDate)")
        }
        return seconds
    }
}
