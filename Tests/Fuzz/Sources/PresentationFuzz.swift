import Core
import Credentials
import Settings

/// Holder-bound passes on hostile input: the SD-JWT presentation splitter, disclosures, the key-binding
/// JWT's claims, cnf keys, and the verifier under credential-holder-binding accept.
enum PresentationFuzz {
    /// The issuer keys of the seeds (Tests/Fuzz/corpus/sdjwt, made by `sdjwt_peer.py seeds`, kid sd-site, and
    /// `cwt_holder_peer.py seeds`, kid cwt-seed; their private keys were not kept): their passes verify, and
    /// their presentations are then refused for the holder part.
    static let issuerJWKS = #"{"keys": [{"crv": "Ed25519", "kid": "sd-site", "kty": "OKP", "x": "I2Kwx2sNaGU82jcztUkguVZXfKBERckiCv4l6zXfOaQ"}, {"kty": "OKP", "crv": "Ed25519", "kid": "cwt-seed", "x": "uDK3FFEEXpKAqDLlE3gTx6KPGGmZkVWwjiyGCVsTPjg"}]}"#

    static let keys: CredentialKeySet = {
        (try? CredentialKeySet.parseJWKS(Array(issuerJWKS.utf8), file: "sd-site.jwks")) ?? CredentialKeySet(keys: [], source: "none")
    }()

    /// The seeds were made for this time: their passes are valid, their presentations an hour old.
    static let now: Int64 = 1_800_000_000

    static let steps = ["the holder signature check", "a good holder signature (refused later: door or window)"]

    static func verifier() -> CredentialVerifier {
        var settings = CredentialSettings()
        settings.format = .any
        settings.keys = "fuzz"
        settings.audience = "north"
        settings.holderBinding = .accept
        return CredentialVerifier(settings: settings, keys: keys)
    }

    @Sendable static func reach(_ bytes: [UInt8]) -> Set<String> {
        run(bytes)
        switch verifier().verify(bytes, now: now) {
        case .success: return Set(steps)
        case .failure(let refusal):
            switch refusal.reason {
            case .badHolderSignature: return [steps[0]]
            case .wrongDoor, .stalePresentation: return Set(steps)
            default: return []
            }
        }
    }

    @Sendable static func run(_ bytes: [UInt8]) {
        require(keys.keys.map(\.keyID) == ["sd-site", "cwt-seed"], "the seeds' issuer keys load")
        switch TokenParser.presentation(bytes) {
        case .success(nil):
            require(!bytes.contains(UInt8(ascii: "~")), "only a payload without '~' is not a presentation")
        case .success(let p?):
            require(bytes.count <= 4096, "the size limit holds")
            require(!p.issuerJWT.isEmpty && !p.issuerJWT.contains(UInt8(ascii: "~")), "the issuer JWT is the part before the first '~'")
            require(p.disclosures.count <= 32 && p.disclosures.allSatisfy { !$0.isEmpty && !$0.contains(UInt8(ascii: "~")) },
                    "at most 32 disclosures, none empty")
            require(p.hashedPart.last == UInt8(ascii: "~") && Array(bytes.prefix(p.hashedPart.count)) == p.hashedPart,
                    "sd_hash covers a prefix ending in the last '~'")
            require(p.hashedPart.count + (p.keyBinding?.count ?? 0) == bytes.count, "the key-binding JWT is all after the last '~'")
            // The issuer JWT's claims with the disclosures applied, when its payload is JSON.
            if case .success(let header) = TokenParser.header(p.issuerJWT, format: .jwt),
               case .success(let text) = TokenParser.disclose(header.payload, disclosures: p.disclosures) {
                checkDisclosed(text)
            }
            if let kb = p.keyBinding, case .success(let header) = TokenParser.header(kb, format: .jwt) {
                if case .success(let claims) = TokenParser.keyBindingClaims(header.payload) {
                    require(!claims.nonce.isEmpty && claims.iat.isFinite, "a key-binding JWT has a nonce and a finite iat")
                }
            }
        case .failure(let refusal):
            require(refusal.reason == .malformed, "the splitter refuses only as malformed")
        }
        // The input as claims too: disclosures from the input's own '~' parts.
        let parts = bytes.split(separator: UInt8(ascii: "~"), omittingEmptySubsequences: false).map { Array($0) }
        if let first = parts.first, case .success(let text) = TokenParser.disclose(first, disclosures: Array(parts.dropFirst().prefix(32))) {
            checkDisclosed(text)
        }
        // The CWT form: SG2: + base45 of [pass, proof].
        switch TokenParser.cwtPresentation(bytes) {
        case .success(nil): require(!bytes.starts(with: Array("SG2:".utf8)), "an SG2: payload is read as a CWT presentation")
        case .success(let p?):
            require(bytes.starts(with: Array("SG2:".utf8)) && bytes.count <= 4096, "a CWT presentation starts with SG2: and fits")
            require(p.pass.count + p.proof.count <= 3072, "its parts fit the decoded limit")
        case .failure(let refusal): require(refusal.reason == .malformed, "the CWT presentation reader refuses only as malformed")
        }
        _ = TokenParser.holderKey(bytes)
        // No presentation verifies without a holder's private key (a seed's bearer pass, with no cnf, may
        // verify as one); every refusal is one line.
        switch verifier().verify(bytes, now: now) {
        case .success(let pass): require(pass.presentation == nil, "an input verified as a holder's presentation")
        case .failure(let refusal): require(!refusal.detail.contains("\n"), "a refusal is one line")
        }
    }

    /// Processed claims: JSON that parses, with no _sd or _sd_alg member and no {"...": x} element left.
    static func checkDisclosed(_ text: String) {
        guard case .success(let value) = Result(catching: { try JSONValue.parse(text) }) else {
            require(false, "disclosed claims do not parse back")
            return
        }
        func walk(_ v: JSONValue, top: Bool) {
            switch v {
            case .object(let o):
                require(o["_sd"] == nil, "an _sd member is left")
                if top { require(o["_sd_alg"] == nil, "_sd_alg is left") }
                for (_, member) in o.members { walk(member, top: false) }
            case .array(let items):
                for item in items {
                    if let o = item.objectValue, o.count == 1 { require(o["..."] == nil, "an array digest is left") }
                    walk(item, top: false)
                }
            default: break
            }
        }
        walk(value, top: true)
    }
}
