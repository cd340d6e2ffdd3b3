import Core
import Settings
/// The token parsers on their own, before any signature is checked: for the fuzz targets and for
/// diagnostics. Nothing here means a token is genuine.
public enum TokenParser {
    /// What a token's header says.
    public struct Header: Equatable, Sendable {
        public let format: CredentialFormat
        public let algorithm: SignatureAlgorithm
        public let keyID: String?
        /// The bytes the signature must cover (JWS: `header.payload`; COSE: the Sig_structure).
        public let signingInput: [UInt8]
        public let signature: [UInt8]
        /// The claims, still encoded.
        public let payload: [UInt8]
    }

    /// What a token's claims say (not yet checked against a kiosk's settings).
    public struct Claims: Equatable, Sendable {
        public let issuer: String?
        public let audience: [String]?
        public let expiresAt: Double?
        public let notBefore: Double?
        public let issuedAt: Double?
        public let tokenID: [UInt8]?
        public let number: String?
        public let json: String
    }

    public static func header(_ token: [UInt8], format: CredentialFormat) -> Result<Header, Refusal> {
        do throws(Refusal) {
            let parsed = format == .jwt ? try JWS.parse(token) : try COSESign1.parse(token)
            guard let algorithm = parsed.algorithm else { throw Refusal(.algorithmNotAllowed, parsed.algorithmName) }
            return .success(Header(format: parsed.format, algorithm: algorithm, keyID: parsed.keyID, signingInput: parsed.signingInput,
                                   signature: parsed.signature, payload: parsed.payload))
        } catch {
            return .failure(error)
        }
    }

    public static func claims(_ payload: [UInt8], format: CredentialFormat, numberClaim: String = "sub") -> Result<Claims, Refusal> {
        do throws(Refusal) {
            let c = format == .jwt ? try JWS.claims(payload, numberClaim: numberClaim) : try COSESign1.claims(payload, numberClaim: numberClaim)
            return .success(Claims(issuer: c.issuer, audience: c.audience, expiresAt: c.expiresAt, notBefore: c.notBefore,
                                   issuedAt: c.issuedAt, tokenID: c.tokenID, number: c.number, json: c.json))
        } catch {
            return .failure(error)
        }
    }

    /// An SD-JWT presentation split at `~` (nil: the payload has no `~`).
    public struct Presentation: Equatable, Sendable {
        public let issuerJWT: [UInt8]
        public let disclosures: [[UInt8]]
        public let keyBinding: [UInt8]?
        /// What the key-binding JWT's sd_hash covers: up to and including the last `~`.
        public let hashedPart: [UInt8]
    }

    public static func presentation(_ payload: [UInt8]) -> Result<Presentation?, Refusal> {
        do throws(Refusal) {
            guard let p = try SDJWTPresentation.split(payload) else { return .success(nil) }
            return .success(Presentation(issuerJWT: p.issuerJWT, disclosures: p.disclosures, keyBinding: p.keyBinding, hashedPart: p.hashedPart))
        } catch {
            return .failure(error)
        }
    }

    /// An SD-JWT's claims (JSON) with `disclosures` applied: the processed claims as JSON text.
    public static func disclose(_ claims: [UInt8], disclosures: [[UInt8]]) -> Result<String, Refusal> {
        do throws(Refusal) {
            let object = try CredentialVerifier.claimsObject(claims)
            return .success(JSONValue.object(try SelectiveDisclosure.apply(object, disclosures: disclosures)).text)
        } catch {
            return .failure(error)
        }
    }

    /// A key-binding JWT's claims (iat, aud, nonce, sd_hash) and a cnf claim's holder key type.
    public static func keyBindingClaims(_ payload: [UInt8]) -> Result<(iat: Double, aud: String, nonce: String, sdHash: String), Refusal> {
        do throws(Refusal) {
            let c = try KeyBindingClaims.parse(payload)
            return .success((c.issuedAt, c.audience, c.nonce, c.sdHash))
        } catch {
            return .failure(error)
        }
    }

    public static func holderKey(_ cnf: [UInt8]) -> Result<SignatureAlgorithm, Refusal> {
        do throws(Refusal) {
            let value: JSONValue
            do throws(JSONParseError) { value = try JSONValue.parse(cnf, maxBytes: 1024, maxDepth: 4) } catch {
                throw Refusal(.malformed, "cnf: \(error)")
            }
            return .success(try HolderKey.parse(value).algorithm)
        } catch {
            return .failure(error)
        }
    }

    /// A CWT presentation (`SG2:`): the pass's and the proof's bytes (nil: the payload is not one).
    public static func cwtPresentation(_ payload: [UInt8]) -> Result<(pass: [UInt8], proof: [UInt8])?, Refusal> {
        guard CWTPresentation.hasPrefix(payload) else { return .success(nil) }
        do throws(Refusal) {
            let p = try CWTPresentation.parse(payload)
            return .success((p.pass, p.proof))
        } catch {
            return .failure(error)
        }
    }
}
