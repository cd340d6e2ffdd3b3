import Core
import Settings

/// A signed site policy document (policy-file), in one of two forms:
/// - JWS: header `typ: scangate-policy+jwt`, the claims as JSON (SitePolicy);
/// - COSE_Sign1 (tag 18, binary or hex text): protected typ (16) `application/scangate-policy+cwt`, the
///   claims as a CBOR map with the same text keys (iat and exp may also be the CWT labels 6 and 4).
/// Verified with policy-keys (default credential-keys) and an algorithm within credential-algorithms,
/// exactly as passes are; the claims are parsed only then.
public struct SitePolicyToken: Sendable {
    public let policy: SitePolicy
    public let keyID: String
    public let format: CredentialFormat
    /// TokenFingerprint of the file: its first characters, its length and a hash, for logs.
    public let fingerprint: String

    public static let maxTokenBytes = 1 << 20
    public static let type = "scangate-policy+jwt"
    public static let cwtType = "application/scangate-policy+cwt"

    /// Whether `text` is either form's typ (ASCII case-insensitive, with or without `application/`).
    public static func isPolicyType(_ text: String) -> Bool {
        isJWTType(text) || isCWTType(text)
    }

    static func isJWTType(_ text: String) -> Bool {
        let lower = asciiLowercased(text)
        return lower.bytesEqual(type) || lower.bytesEqual("application/" + type)
    }

    static func isCWTType(_ text: String) -> Bool { asciiLowercased(text).bytesEqual(cwtType) }

    private static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// Whether `bytes` say they are a site policy (the typ of either form), before any verification: for
    /// `scangate policy verify`, which takes a status list or a policy. Decides nothing else.
    public static func claimsToBePolicy(_ bytes: [UInt8]) -> Bool {
        guard bytes.count <= maxTokenBytes, let encoding = try? StatusListEncoding.detect(bytes) else { return false }
        switch encoding {
        case .jwt(let text):
            return (try? JWS.parse(text, maxTokenBytes: maxTokenBytes, maxPayloadBytes: maxTokenBytes))?.type.map(isJWTType) ?? false
        case .cwt(let cbor, _):
            let limits = COSESign1.Limits(maxBytes: maxTokenBytes, maxItems: 65_536, allowsCWTTag: false)
            return (try? COSESign1.message(cbor, limits: limits))?.type.map(isCWTType) ?? false
        }
    }

    public static func verify(_ bytes: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm]) throws(SitePolicyError) -> SitePolicyToken {
        guard bytes.count <= maxTokenBytes else {
            throw SitePolicyError("the document is \(bytes.count) bytes; at most \(maxTokenBytes)")
        }
        let encoding: StatusListEncoding
        do throws(StatusListError) {
            encoding = try StatusListEncoding.detect(bytes)
        } catch {
            throw SitePolicyError(error.message)
        }
        let parsed: ParsedToken
        let format: CredentialFormat
        switch encoding {
        case .jwt(let text):
            do throws(Refusal) {
                parsed = try JWS.parse(text, maxTokenBytes: maxTokenBytes, maxPayloadBytes: maxTokenBytes)
            } catch {
                throw SitePolicyError("not a JWS: \(error.detail)")
            }
            guard let typ = parsed.type, isJWTType(typ) else {
                throw SitePolicyError("the header's typ is \(parsed.type.map { JSONText.asciiString($0) } ?? "missing"); a site policy has typ \(type)")
            }
            format = .jwt
        case .cwt(let cbor, _):
            do throws(Refusal) {
                parsed = try COSESign1.message(cbor, limits: COSESign1.Limits(maxBytes: maxTokenBytes, maxItems: 65_536, allowsCWTTag: false))
            } catch {
                throw SitePolicyError("not a COSE_Sign1 site policy: \(error.detail)")
            }
            guard parsed.typeIsProtected, let typ = parsed.type, isCWTType(typ) else {
                throw SitePolicyError("typ (16) is \(parsed.type.map { JSONText.asciiString($0) } ?? "missing")\(parsed.typeIsProtected ? "" : " or unprotected"); a site policy has typ \(cwtType) in its protected header")
            }
            format = .cwt
        }
        let key: CredentialKey
        do throws(StatusListError) {
            key = try StatusListToken.verifySignature(parsed, keys: keys, algorithms: algorithms)
        } catch {
            throw SitePolicyError(error.message)
        }
        let policy: SitePolicy
        switch format {
        case .jwt: policy = try SitePolicy.parse(parsed.payload)
        case .cwt: policy = try SitePolicy.parse(try cwtClaimsAsJSON(parsed.payload))
        }
        return SitePolicyToken(policy: policy, keyID: key.keyID, format: format, fingerprint: TokenFingerprint.describe(bytes))
    }

    /// The CWT claims as the JSON the JWS form carries: text keys as they are, the labels 6 and 4 as iat
    /// and exp (COSESign1's JSON view). Any other label keeps its number and is not read.
    public static func cwtClaimsAsJSON(_ payload: [UInt8]) throws(SitePolicyError) -> [UInt8] {
        let decoded: CBORValue
        do throws(CBORError) {
            decoded = try CBORValue.decode(payload, maxBytes: maxTokenBytes, maxDepth: 8, maxItems: 65_536)
        } catch {
            throw SitePolicyError("the CWT claims: \(error)")
        }
        guard let map = decoded.mapValue else { throw SitePolicyError("the CWT claims are not a CBOR map") }
        return Array(COSESign1.json(map).utf8)
    }
}
