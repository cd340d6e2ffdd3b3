import Core

/// The pass formats credential-format enables.
public enum CredentialFormat: String, CaseIterable, Sendable {
    /// JWS compact serialization (RFC 7515) of JWT claims (RFC 7519).
    case jwt
    /// COSE_Sign1 (RFC 9052) of CWT claims (RFC 8392), base45 (RFC 9285) behind `SG1:`.
    case cwt
}

/// The signature algorithms a pass may use. Anything else (none, HS*, RS*, PS*) is refused before any
/// key is looked at.
public enum SignatureAlgorithm: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Ed25519 (RFC 8032): JOSE `EdDSA` (RFC 8037) and `Ed25519` (RFC 9864); COSE -8 and -19.
    case ed25519
    /// ECDSA on P-256 with SHA-256: JOSE `ES256` (RFC 7518); COSE -7 and -9 (ESP256).
    case es256

    /// How credential-algorithms spells it.
    public var description: String { rawValue }

    /// The name a JWS header carries when this program issues a pass.
    public var joseName: String { self == .ed25519 ? "EdDSA" : "ES256" }

    /// The COSE algorithm this program writes when it issues a pass.
    public var coseValue: Int64 { self == .ed25519 ? -8 : -7 }

    /// A JWS `alg` value: EdDSA and Ed25519 mean Ed25519, ES256 means ECDSA P-256. Case-sensitive and
    /// byte for byte (RFC 7515 §4.1.1), not by Unicode equivalence as a `switch` on strings would compare.
    public init?(joseName: String) {
        if joseName.bytesEqual("EdDSA") || joseName.bytesEqual("Ed25519") {
            self = .ed25519
        } else if joseName.bytesEqual("ES256") {
            self = .es256
        } else {
            return nil
        }
    }

    /// A COSE `alg` value (RFC 9053, RFC 9864): -8 EdDSA and -19 Ed25519; -7 ES256 and -9 ESP256.
    public init?(coseValue: Int64) {
        switch coseValue {
        case -8, -19: self = .ed25519
        case -7, -9: self = .es256
        default: return nil
        }
    }

    /// credential-algorithms: `ed25519` (also `eddsa`) or `es256`, either case.
    public init?(settingName: String) {
        switch settingName.lowercased() {
        case "ed25519", "eddsa": self = .ed25519
        case "es256": self = .es256
        default: return nil
        }
    }

    /// "an Ed25519 key", "a P-256 key": for errors.
    public var keyDescription: String { self == .ed25519 ? "an Ed25519 key" : "a P-256 key" }
}

/// Which passes are accepted (credential-format).
public enum CredentialFormatSetting: String, CaseIterable, Sendable {
    /// Payloads are not passes (the default): today's behaviour.
    case off
    case jwt
    case cwt
    /// Either: a payload that starts with `SG1:` is read as a CWT, anything else as a JWT.
    case any

    public var formats: [CredentialFormat] {
        switch self {
        case .off: return []
        case .jwt: return [.jwt]
        case .cwt: return [.cwt]
        case .any: return [.jwt, .cwt]
        }
    }
}

/// What door outputs send for an accepted pass (credential-output).
public enum CredentialOutput: String, CaseIterable, Sendable {
    /// The credential number (credential-number-claim), never the token: the default.
    case number
    /// The whole token, for a controller that verifies it again.
    case token
}

/// credential-holder-binding: whether a pass may name its holder's key (`cnf`, RFC 7800) and must then
/// come inside a fresh presentation signed by that key (SD-JWT with Key Binding).
public enum HolderBinding: String, CaseIterable, Sendable {
    /// Presentations are not read; a pass that names a holder key is refused (holder-binding-required):
    /// it was issued to be shown only with its holder's signature.
    case off
    /// A pass with `cnf` is accepted only in a fresh presentation by its holder; a pass without is a
    /// bearer pass, as before.
    case accept
    /// Every pass must come in a fresh presentation by the holder key its `cnf` names.
    case require
}

/// The `[credential]` options: a plain value, defaults written once here; `validate()` names the option
/// and the allowed values in each error. The verifier, keys and replay store are `CredentialPolicy`'s.
public struct CredentialSettings: SettingsSection {
    /// credential-format = off | jwt | cwt | any.
    public var format: CredentialFormatSetting = .off
    /// credential-keys: a JWKS file, a PEM public key file (kid = its name without .pem), or a directory
    /// of KID.pem files. Required when format is not off.
    public var keys: String? = nil
    /// credential-algorithms: a comma-separated subset of ed25519, es256.
    public var algorithms: [SignatureAlgorithm] = [.ed25519, .es256]
    /// credential-leeway-s: seconds of clock difference allowed around exp and nbf, 0-3600.
    public var leewaySeconds: Int = 30
    /// credential-audience: when set, aud must name it; when not set, a pass with aud is refused (RFC 7519 §4.1.3).
    public var audience: String? = nil
    /// credential-issuer: when set, iss must equal it.
    public var issuer: String? = nil
    /// credential-max-lifetime-s: 0 (no limit), or the most seconds from the start of validity (nbf, else
    /// iat, else the time of the read) to exp, 1-315360000 (ten years).
    public var maxLifetimeSeconds: Int = 0
    /// credential-number-claim: the claim that becomes the credential number (CWT: a registered name
    /// such as sub, an integer label, or a text key).
    public var numberClaim: String = "sub"
    /// credential-one-time: consume each pass's jti (CWT: cti) at its first accepted read.
    public var oneTime: Bool = false
    /// credential-replay-store: the file one-time use records consumed passes in (absolute path).
    public var replayStore: String = "/var/lib/scangate/credential-replay"
    /// credential-require-synced-clock: refuse every pass until the kernel reports the clock synchronised.
    public var requireSyncedClock: Bool = true
    /// credential-output = number | token.
    public var output: CredentialOutput = .number
    /// credential-status-list: a Token Status List file (statuslist+jwt, or statuslist+cwt in binary or hex) or a directory of them; nil: the
    /// status claims of passes are not checked.
    public var statusList: String? = nil
    /// credential-holder-binding = off | accept | require.
    public var holderBinding: HolderBinding = .off
    /// credential-presentation-window-s: how far a presentation's iat may lie from this kiosk's clock, 5-300.
    public var presentationWindowSeconds: Int = 30
    /// credential-status-list-keys: the keys the status lists are verified with; nil: credential-keys.
    public var statusListKeys: String? = nil

    public init() {}

    public static let leewayRange = 0...3600
    public static let maxLifetimeRange = 0...315_360_000
    public static let presentationWindowRange = 5...300

    /// Checks the combination of options; each error names the option and what is allowed.
    public func validate() throws(UsageError) {
        guard format != .off else { return }
        guard let keys, !keys.isEmpty else {
            throw UsageError("--credential-keys must be set when --credential-format is \(format.rawValue) (a JWKS file, a PEM public key file, or a directory of KID.pem files)")
        }
        guard !algorithms.isEmpty else {
            throw UsageError("--credential-algorithms is empty (allowed: \(SignatureAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard Self.leewayRange.contains(leewaySeconds) else {
            throw UsageError("--credential-leeway-s: \(leewaySeconds) is not a whole number from 0 to 3600")
        }
        guard Self.maxLifetimeRange.contains(maxLifetimeSeconds) else {
            throw UsageError("--credential-max-lifetime-s: \(maxLifetimeSeconds) is not a whole number from 0 (no limit) to 315360000")
        }
        guard !numberClaim.isEmpty, numberClaim.utf8.count <= 64 else {
            throw UsageError("--credential-number-claim must be a claim name of 1 to 64 characters (default sub)")
        }
        if let audience, audience.isEmpty {
            throw UsageError("--credential-audience is empty; leave it unset to accept only passes without aud")
        }
        if let issuer, issuer.isEmpty {
            throw UsageError("--credential-issuer is empty; leave it unset to accept any iss")
        }
        if let statusList, statusList.isEmpty {
            throw UsageError("--credential-status-list is empty; leave it unset to check no status lists")
        }
        guard Self.presentationWindowRange.contains(presentationWindowSeconds) else {
            throw UsageError("--credential-presentation-window-s: \(presentationWindowSeconds) is not a whole number from 5 to 300")
        }
        if holderBinding != .off {
            guard audience != nil else {
                throw UsageError("--credential-holder-binding \(holderBinding.rawValue) needs --credential-audience: a presentation names the door it is for (its aud)")
            }
        }
        if oneTime || holderBinding != .off {
            guard replayStore.hasPrefix("/"), replayStore.count > 1, !replayStore.hasSuffix("/") else {
                throw UsageError("--credential-replay-store: '\(replayStore)' must be an absolute path to a file (default /var/lib/scangate/credential-replay)")
            }
        }
    }

    /// credential-algorithms from its text: "ed25519, es256".
    public static func parseAlgorithms(_ text: String) throws(UsageError) -> [SignatureAlgorithm] {
        var out: [SignatureAlgorithm] = []
        for item in text.split(separator: ",") {
            let name = String(item).trimmedOfSpaces
            guard !name.isEmpty else { continue }
            guard let algorithm = SignatureAlgorithm(settingName: name) else {
                throw UsageError("--credential-algorithms: '\(name)' is not one of ed25519, es256 (none and HS* are never accepted)")
            }
            if !out.contains(algorithm) { out.append(algorithm) }
        }
        guard !out.isEmpty else { throw UsageError("--credential-algorithms is empty (allowed: ed25519, es256)") }
        return out
    }

    public static func parseFormat(_ text: String) throws(UsageError) -> CredentialFormatSetting {
        guard let value = CredentialFormatSetting(rawValue: text.trimmedOfSpaces.lowercased()) else {
            throw UsageError("--credential-format: '\(text)' is not one of off, jwt, cwt, any")
        }
        return value
    }

    public static func parseHolderBinding(_ text: String) throws(UsageError) -> HolderBinding {
        guard let value = HolderBinding(rawValue: text.trimmedOfSpaces.lowercased()) else {
            throw UsageError("--credential-holder-binding: '\(text)' is not one of off, accept, require")
        }
        return value
    }

    public static func parseOutput(_ text: String) throws(UsageError) -> CredentialOutput {
        guard let value = CredentialOutput(rawValue: text.trimmedOfSpaces.lowercased()) else {
            throw UsageError("--credential-output: '\(text)' is not one of number, token")
        }
        return value
    }

    /// "jwt, keys /etc/scangate/keys.jwks, ed25519+es256, leeway 30 s, one-time": for logs.
    public var summary: String {
        guard format != .off else { return "off" }
        var parts = [format.rawValue, "keys \(keys ?? "-")", algorithms.map(\.rawValue).joined(separator: "+"),
                     "leeway \(leewaySeconds) s"]
        if let audience { parts.append("aud \(audience)") }
        if let issuer { parts.append("iss \(issuer)") }
        if maxLifetimeSeconds > 0 { parts.append("max lifetime \(maxLifetimeSeconds) s") }
        if numberClaim != "sub" { parts.append("number from \(numberClaim)") }
        if oneTime { parts.append("one-time (\(replayStore))") }
        if !requireSyncedClock { parts.append("clock not checked") }
        if output == .token { parts.append("outputs get the token") }
        if let statusList { parts.append("status lists \(statusList)") }
        if holderBinding != .off { parts.append("holder binding \(holderBinding.rawValue) (window \(presentationWindowSeconds) s, \(replayStore))") }
        return parts.joined(separator: ", ")
    }
}

extension String {
    public var trimmedOfSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}

extension RunSettings {
    public var credential: CredentialSettings {
        get { self[CredentialSettings.self] }
        set { self[CredentialSettings.self] = newValue }
    }
}
