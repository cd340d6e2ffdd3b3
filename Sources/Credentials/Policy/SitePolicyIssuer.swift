import Core

/// Issues a site policy (JWS, `typ: scangate-policy+jwt`) as a site's own tooling would: for the bench and
/// the tests. `SitePolicyToken.verify` is what the kiosk runs.
public enum SitePolicyIssuer {
    /// `claims` is the document's JSON object, written as given.
    public static func jwt(claims: String, keyID: String, key: PrivateKey) throws(CryptoError) -> String {
        let header = JSONText.object([("alg", JSONText.string(key.algorithm.joseName)), ("kid", JSONText.string(keyID)),
                                      ("typ", JSONText.string(SitePolicyToken.type))])
        let input = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(Array(claims.utf8))
        return input + "." + Base64.urlEncode(try key.sign(Array(input.utf8)))
    }
}
