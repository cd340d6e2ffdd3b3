import Core
import Platform
import Settings

/// A CWT (RFC 8392) in a COSE_Sign1 (RFC 9052 §4.2, tag 18), base45-encoded (RFC 9285) behind the
/// context prefix `SG1:` ("ScanGate pass, version 1"), as the EU's COVID certificates put `HC1:` before
/// theirs. The prefix keeps passes apart from other QR codes and leaves room for a version 2; every
/// character of it and of base45 is in QR alphanumeric mode. Unlike HC1, the COSE bytes are not
/// zlib-compressed: a pass is ~120 bytes, where deflate gains almost nothing.
public enum COSESign1 {
    /// The context prefix in front of the base45 text.
    public static let prefix = "SG1:"
    static let prefixBytes = Array(prefix.utf8)
    /// Decoded COSE bytes beyond this are refused.
    static let maxBytes = 2048

    /// COSE header labels (RFC 9052 §3.1).
    enum Label {
        static let alg: Int64 = 1
        static let crit: Int64 = 2
        static let kid: Int64 = 4
        /// typ (RFC 9596): a status list token says application/statuslist+cwt.
        static let typ: Int64 = 16
    }

    /// CWT claim keys (RFC 8392 §3.1).
    public enum Claim {
        public static let iss: Int64 = 1
        public static let sub: Int64 = 2
        public static let aud: Int64 = 3
        public static let exp: Int64 = 4
        public static let nbf: Int64 = 5
        public static let iat: Int64 = 6
        public static let cti: Int64 = 7
        /// cnf (RFC 8747): the holder's key.
        public static let cnf: Int64 = 8
        /// status (draft-ietf-oauth-status-list, Referenced Token in CWT format).
        public static let status: Int64 = 65535
        /// status_list (draft-ietf-oauth-status-list, Status List Token in CWT format).
        public static let statusList: Int64 = 65533
        /// ttl (draft-ietf-oauth-status-list, Status List Token in CWT format).
        public static let ttl: Int64 = 65534

        static let names: [Int64: String] = [1: "iss", 2: "sub", 3: "aud", 4: "exp", 5: "nbf", 6: "iat", 7: "cti", 8: "cnf"]

        /// The map key credential-number-claim names: a registered claim name (`sub` is 2), an integer
        /// label written as digits (`-65537`), or a text key as is.
        static func key(for name: String) -> CBORValue {
            if let label = names.first(where: { $0.value.bytesEqual(name) })?.key { return .int(label) }
            if name.bytesEqual("jti") { return .int(cti) }
            if let label = Int64(name) { return .int(label) }
            return .text(name)
        }
    }

    /// COSE tags (RFC 9052 §2, RFC 8392 §6).
    static let sign1Tag: UInt64 = 18
    static let cwtTag: UInt64 = 61

    static func hasPrefix(_ payload: [UInt8]) -> Bool { payload.starts(with: prefixBytes) }

    static func parse(_ payload: [UInt8]) throws(Refusal) -> ParsedToken {
        guard hasPrefix(payload) else { throw Refusal(.malformed, "a CWT pass starts with \(prefix)") }
        guard payload.count <= JWS.maxTokenBytes else {
            throw Refusal(.malformed, "\(payload.count) bytes is longer than a pass may be (\(JWS.maxTokenBytes))")
        }
        let bytes: [UInt8]
        do throws(Base45.DecodeError) {
            bytes = try Base45.decode(payload[prefixBytes.count...], maxBytes: maxBytes)
        } catch {
            throw Refusal(.malformed, "after \(prefix): \(error)")
        }
        return try message(bytes, limits: .pass)
    }

    /// How far a COSE_Sign1 is read, and which tags may wrap it.
    struct Limits {
        /// The most bytes of the whole message (and of its claims).
        let maxBytes: Int
        let maxItems: Int
        /// Whether the CWT tag (61) may wrap the COSE_Sign1 tag: yes for passes; a status list token
        /// must not carry it (draft-ietf-oauth-status-list, "Status List Token in CWT Format").
        let allowsCWTTag: Bool

        static let pass = Limits(maxBytes: COSESign1.maxBytes, maxItems: 256, allowsCWTTag: true)
    }

    /// A tagged COSE_Sign1 (tag 18, within tag 61 when `limits` allows it) from its CBOR bytes: what the
    /// signature covers and what selects the key; nothing in the claims is read.
    static func message(_ bytes: [UInt8], limits: Limits, externalAAD: [UInt8] = []) throws(Refusal) -> ParsedToken {
        let item: CBORValue
        do throws(CBORError) {
            item = try CBORValue.decode(bytes, maxBytes: limits.maxBytes, maxDepth: 8, maxItems: limits.maxItems)
        } catch {
            throw Refusal(.malformed, "COSE_Sign1: \(error)")
        }
        var body = item
        if case .tagged(cwtTag, let inner) = body {
            guard limits.allowsCWTTag else {
                throw Refusal(.malformed, "the CWT tag (61) wraps it; a status list token is a COSE_Sign1 with tag 18 and no CWT tag")
            }
            body = inner
        }
        guard case .tagged(sign1Tag, let message) = body else {
            throw Refusal(.malformed, "not a COSE_Sign1 (CBOR tag 18)")
        }
        guard let parts = message.arrayValue, parts.count == 4 else {
            throw Refusal(.malformed, "a COSE_Sign1 is an array of 4 items")
        }
        guard let protectedBytes = parts[0].bytesValue else { throw Refusal(.malformed, "the protected header is not a byte string") }
        guard let unprotected = parts[1].mapValue else { throw Refusal(.malformed, "the unprotected header is not a map") }
        guard let claimsBytes = parts[2].bytesValue else {
            throw Refusal(.malformed, "the payload is not a byte string (a detached payload is not a pass)")
        }
        guard let signature = parts[3].bytesValue else { throw Refusal(.malformed, "the signature is not a byte string") }
        var protected = CBORMap()
        if !protectedBytes.isEmpty {
            do throws(CBORError) {
                guard let map = try CBORValue.decode(protectedBytes, maxBytes: maxBytes, maxDepth: 4, maxItems: 64).mapValue else {
                    throw CBORError(offset: 0, reason: "not a map")
                }
                protected = map
            } catch {
                throw Refusal(.malformed, "the protected header: \(error)")
            }
        }
        // RFC 9052 §3: a label must not appear in both buckets.
        for entry in protected.entries where unprotected[entry.key] != nil {
            throw Refusal(.malformed, "header label \(Self.describe(entry.key)) is in both the protected and the unprotected header")
        }
        guard unprotected[Label.alg] == nil else {
            throw Refusal(.malformed, "alg must be in the protected header, where the signature covers it")
        }
        guard let alg = protected[Label.alg] else { throw Refusal(.malformed, "the protected header has no alg (label 1)") }
        guard let algValue = alg.int64, let algorithm = SignatureAlgorithm(coseValue: algValue) else {
            throw Refusal(.algorithmNotAllowed, "COSE alg \(Self.describe(alg)) is not allowed (passes use -8 EdDSA, -19 Ed25519, -7 ES256 or -9 ESP256)")
        }
        if protected[Label.crit] != nil || unprotected[Label.crit] != nil {
            throw Refusal(.malformed, "the header lists critical parameters (crit, label 2); none is supported")
        }
        var keyID: String?
        var keyIDIsText = true
        if let kid = protected[Label.kid] ?? unprotected[Label.kid] {
            guard let raw = kid.bytesValue else { throw Refusal(.malformed, "kid (label 4) is not a byte string") }
            if let text = String(validating: raw, as: UTF8.self) {
                keyID = text
            } else {
                keyID = Hex.string(raw, lowercase: true)
                keyIDIsText = false
            }
        }
        var parsed = ParsedToken(format: .cwt, algorithmName: "COSE \(algValue)", algorithm: algorithm, keyID: keyID,
                                 keyIDIsText: keyIDIsText, signingInput: sigStructure(protected: protectedBytes, payload: claimsBytes, externalAAD: externalAAD),
                                 signature: signature, payload: claimsBytes)
        let typ = protected[Label.typ] ?? unprotected[Label.typ]
        parsed.type = typ?.textValue
        parsed.typeIsProtected = protected[Label.typ] != nil
        if let typ, parsed.type == nil, let n = typ.int64 { parsed.typeContentFormat = n }
        return parsed
    }

    /// Sig_structure (RFC 9052 §4.4): ["Signature1", body_protected, external_aad (empty), payload].
    static func sigStructure(protected: [UInt8], payload: [UInt8], externalAAD: [UInt8] = []) -> [UInt8] {
        CBORValue.array([.text("Signature1"), .bytes(protected), .bytes(externalAAD), .bytes(payload)]).encoded
    }

    static func describe(_ value: CBORValue) -> String {
        if let n = value.int64 { return String(n) }
        if let t = value.textValue { return JSONText.string(t) }
        return "(not an integer)"
    }

    /// The claims of a verified token: a CBOR map keyed by the RFC 8392 labels.
    static func claims(_ payload: [UInt8], numberClaim: String) throws(Refusal) -> PassClaims {
        let map: CBORMap
        do throws(CBORError) {
            guard let parsed = try CBORValue.decode(payload, maxBytes: maxBytes, maxDepth: 8, maxItems: 256).mapValue else {
                throw CBORError(offset: 0, reason: "the claims are not a map")
            }
            map = parsed
        } catch {
            throw Refusal(.malformed, "the CWT claims: \(error)")
        }
        var claims = PassClaims(json: json(map))
        claims.issuer = try text(map, Claim.iss, "iss")
        if let aud = map[Claim.aud] {
            if let one = aud.textValue {
                claims.audience = [one]
            } else if let many = aud.arrayValue, many.allSatisfy({ $0.textValue != nil }) {
                claims.audience = many.compactMap(\.textValue)
            } else {
                throw Refusal(.malformed, "aud (3) must be a text string or an array of them")
            }
        }
        claims.expiresAt = try date(map, Claim.exp, "exp")
        claims.notBefore = try date(map, Claim.nbf, "nbf")
        claims.issuedAt = try date(map, Claim.iat, "iat")
        if let cti = map[Claim.cti] {
            guard let raw = cti.bytesValue else { throw Refusal(.malformed, "cti (7) must be a byte string") }
            claims.tokenID = raw
            claims.tokenIDText = Hex.string(raw, lowercase: true)
        }
        // A status list token (its status_list claim, 65533) is never a pass, whatever its typ says.
        if map[Claim.statusList] != nil {
            throw Refusal(.malformed, "the claims hold a status list (65533): a status list token is not a pass")
        }
        if let status = map[Claim.status] {
            claims.status = try statusReference(status)
        }
        claims.group = try PassClaims.checkedGroup(map["grp"]?.textValue, present: map["grp"] != nil)
        if let value = map[Claim.key(for: numberClaim)] {
            if let t = value.textValue {
                claims.number = t
            } else if let n = value.int64 {
                claims.number = String(n)
            } else {
                throw Refusal(.malformed, "the number claim \(JSONText.string(numberClaim)) must be a text string or an integer")
            }
        }
        return claims
    }

    /// The status claim (65535): a map whose text key `status_list`, when present, maps `idx` (an
    /// unsigned integer) and `uri` (text). Other status mechanisms are left alone (nil).
    static func statusReference(_ status: CBORValue) throws(Refusal) -> StatusReference? {
        guard let map = status.mapValue else { throw Refusal(.malformed, "status (65535) must be a map") }
        guard let list = map["status_list"] else { return nil }
        guard let entry = list.mapValue else { throw Refusal(.malformed, "status (65535) status_list must be a map") }
        guard case .unsigned(let idx)? = entry["idx"], idx <= UInt64(StatusReference.maxIndex) else {
            throw Refusal(.malformed, "status_list idx must be an unsigned integer up to \(StatusReference.maxIndex)")
        }
        guard let uri = entry["uri"]?.textValue, !uri.isEmpty, uri.utf8.count <= StatusReference.maxURIBytes else {
            throw Refusal(.malformed, "status_list uri must be a text string of 1 to \(StatusReference.maxURIBytes) bytes")
        }
        return StatusReference(index: Int(idx), uri: uri)
    }

    private static func text(_ map: CBORMap, _ label: Int64, _ name: String) throws(Refusal) -> String? {
        guard let value = map[label] else { return nil }
        guard let t = value.textValue else { throw Refusal(.malformed, "\(name) (\(label)) must be a text string") }
        return t
    }

    /// A NumericDate (RFC 8392 §2): an integer or a float, without tag 1.
    private static func date(_ map: CBORMap, _ label: Int64, _ name: String) throws(Refusal) -> Double? {
        guard let value = map[label] else { return nil }
        switch value {
        case .unsigned, .negative:
            if let n = value.int64 { return Double(n) }
        case .float(let d) where d.isFinite:
            return d
        default:
            break
        }
        throw Refusal(.malformed, "\(name) (\(label)) must be a number of seconds since 1970 (NumericDate)")
    }

    /// The claims as JSON: registered labels by name, byte strings in hex.
    ///
    /// CBOR keys that are distinct can still share a JSON name (the label 1 and the text "iss", the
    /// integer 5000 and the text "5000"), and a JSON object must not repeat a name, so a later
    /// key whose name is taken gets "~2", "~3"... appended until it is unique.
    ///
    /// Names are kept apart here by Unicode equivalence (`Set<String>`), more strictly than the map's keys
    /// (by bytes): "cafe\u{301}" after "caf\u{e9}" becomes "cafe\u{301}~2", so that a reader of the JSON
    /// that normalises names does not see one name twice. Only what is shown changes; claims are read from the map.
    /// `numeric`: integer labels as numbers, not claim names (cnf's COSE_Key, whose labels are not claims).
    static func json(_ map: CBORMap, numeric: Bool = false) -> String {
        var used = Set<String>()
        return JSONText.object(map.entries.map { entry in
            let base = numeric ? (entry.key.int64.map { String($0) } ?? jsonName(entry.key)) : jsonName(entry.key)
            var key = base
            var n = 2
            while used.contains(key) {
                key = base + "~" + String(n)
                n += 1
            }
            used.insert(key)
            let inCnf = numeric || entry.key.int64 == Claim.cnf
            if inCnf, case .map(let inner) = entry.value { return (key, json(inner, numeric: true)) }
            return (key, json(entry.value))
        })
    }

    /// A map key's JSON name: a registered label by name, any other integer in decimal (also beyond
    /// Int64), text as it is. The decoder admits no other key type; "?" stands for one all the same.
    static func jsonName(_ key: CBORValue) -> String {
        if let n = key.int64 { return Claim.names[n] ?? String(n) }
        if let t = key.textValue { return t }
        switch key {
        case .unsigned, .negative: return json(key)
        default: return "?"
        }
    }

    static func json(_ value: CBORValue) -> String {
        switch value {
        case .unsigned(let n): return String(n)
        case .negative(let n): return n < UInt64.max ? "-" + String(n + 1) : "-18446744073709551616"
        case .bytes(let b): return JSONText.string(Hex.string(b, lowercase: true))
        case .text(let t): return JSONText.string(t)
        case .array(let a): return "[" + a.map { json($0) }.joined(separator: ",") + "]"
        case .map(let m): return json(m)
        case .tagged(let tag, let v): return JSONText.object([("tag", String(tag)), ("value", json(v))])
        case .bool(let b): return b ? "true" : "false"
        case .null, .undefined: return "null"
        case .float(let d):
            // JSONText.number scales by 1000 before rounding, which overflows to "inf" above ~1.8e305.
            guard d.isFinite else { return "null" }
            return abs(d) < 1e15 ? JSONText.number(d, decimals: 3) : String(d)
        }
    }
}
