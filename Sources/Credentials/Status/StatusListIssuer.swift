import Core

/// Issues a status list token (JWT, `typ: statuslist+jwt`) as an issuer's service would: for the bench and
/// the tests. The site's issuers are their own; `StatusListToken.verify` is what the kiosk runs.
public enum StatusListIssuer {
    /// `statuses` holds one value per entry (each fitting `bits`: 1, 2, 4 or 8), packed as the draft
    /// says: entry 0 in the least significant bits of byte 0.
    public static func jwt(uri: String, bits: Int, statuses: [UInt8], issuedAt: Int64, expiresAt: Int64, ttl: Int64? = nil,
                           keyID: String, key: PrivateKey) throws(CryptoError) -> String {
        guard [1, 2, 4, 8].contains(bits) else { throw CryptoError("status list", uri, "bits must be 1, 2, 4 or 8, not \(bits)") }
        let perByte = 8 / bits
        var packed = [UInt8](repeating: 0, count: (statuses.count + perByte - 1) / perByte)
        for (i, s) in statuses.enumerated() where s != 0 {
            guard Int(s) < 1 << bits else { throw CryptoError("status list", uri, "entry \(i) is \(s), more than \(bits) bits hold") }
            packed[i / perByte] |= s << UInt8((i % perByte) * bits)
        }
        let compressed: [UInt8]
        do throws(ZlibError) { compressed = try ZlibDeflate.compress(packed) } catch { throw CryptoError("status list", uri, "\(error)") }
        let header = JSONText.object([("alg", JSONText.string(key.algorithm.joseName)), ("kid", JSONText.string(keyID)),
                                      ("typ", JSONText.string("statuslist+jwt"))])
        var claims: [(String, String)] = [("sub", JSONText.string(uri)), ("iat", String(issuedAt)), ("exp", String(expiresAt))]
        if let ttl { claims.append(("ttl", String(ttl))) }
        claims.append(("status_list", JSONText.object([("bits", String(bits)), ("lst", JSONText.string(Base64.urlEncode(compressed)))])))
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(JSONText.object(claims).utf8))
        return input + "." + Base64.urlEncode(try key.sign(Array(input.utf8)))
    }
}
