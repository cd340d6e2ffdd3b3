import Core

extension ConfigSection {
    public static let credential = ConfigSection("credential")
}

extension OptionTable {
    /// `[credential]`: signed, time-limited passes verified offline at the kiosk.
    public static let credential: [OptionSpec] = [
        OptionSpec("credential-format", .credential, .value(placeholder: "FORMAT"), default: "off",
                   help: "signed passes: off (payloads are plain codes), jwt (JWS compact), cwt (COSE_Sign1 CWT, base45 behind SG1:), any",
                   apply: { s, v in s.credential.format = try wrap { () throws(UsageError) in try CredentialSettings.parseFormat(v) } },
                   show: { $0.credential.format.rawValue }),
        OptionSpec("credential-keys", .credential, .value(placeholder: "PATH"), default: "",
                   help: "the issuers' public keys: a JWKS file, a PEM public key file (kid = its name without .pem), or a directory of KID.pem files; not writable by others",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.credential.keys = t.isEmpty ? nil : t
                   },
                   show: { $0.credential.keys ?? "" }),
        OptionSpec("credential-algorithms", .credential, .value(placeholder: "LIST"), default: "ed25519,es256",
                   help: "signature algorithms accepted, comma-separated: ed25519 (JOSE EdDSA/Ed25519), es256; none and HS* are never accepted",
                   apply: { s, v in s.credential.algorithms = try wrap { () throws(UsageError) in try CredentialSettings.parseAlgorithms(v) } },
                   show: { $0.credential.algorithms.map(\.rawValue).joined(separator: ",") }),
        OptionSpec("credential-leeway-s", .credential, .value(placeholder: "S"), default: "30",
                   help: "seconds of clock difference allowed around exp and nbf, 0-3600",
                   apply: { s, v in s.credential.leewaySeconds = try ParseValue.int(v, in: CredentialSettings.leewayRange) },
                   show: { String($0.credential.leewaySeconds) }),
        OptionSpec("credential-audience", .credential, .value(placeholder: "TEXT"), default: "",
                   help: "a pass's aud must name this; unset: passes with an aud are refused",
                   apply: { s, v in s.credential.audience = v.trimmingSpaces.isEmpty ? nil : v.trimmingSpaces },
                   show: { $0.credential.audience ?? "" }),
        OptionSpec("credential-issuer", .credential, .value(placeholder: "TEXT"), default: "",
                   help: "a pass's iss must equal this; unset: any issuer whose key is in credential-keys",
                   apply: { s, v in s.credential.issuer = v.trimmingSpaces.isEmpty ? nil : v.trimmingSpaces },
                   show: { $0.credential.issuer ?? "" }),
        OptionSpec("credential-max-lifetime-s", .credential, .value(placeholder: "S"), default: "0",
                   help: "refuse passes valid for longer than this (from nbf, else iat, to exp); 0: no limit",
                   apply: { s, v in s.credential.maxLifetimeSeconds = try ParseValue.int(v, in: CredentialSettings.maxLifetimeRange) },
                   show: { String($0.credential.maxLifetimeSeconds) }),
        OptionSpec("credential-number-claim", .credential, .value(placeholder: "CLAIM"), default: "sub",
                   help: "the claim that becomes the credential number the door outputs send",
                   apply: { s, v in s.credential.numberClaim = v.trimmingSpaces },
                   show: { $0.credential.numberClaim }),
        OptionSpec("credential-one-time", .credential, .flag, default: "false",
                   help: "a pass is accepted once on this kiosk: its jti (CWT: cti) is consumed, durably, at the first accepted read",
                   apply: { s, v in s.credential.oneTime = try ParseValue.bool(v) },
                   show: { String($0.credential.oneTime) }),
        OptionSpec("credential-replay-store", .credential, .value(placeholder: "PATH"), default: "/var/lib/scangate/credential-replay",
                   help: "where one-time use records consumed passes, and holder binding the presentations seen (survives a restart and a power cut)",
                   apply: { s, v in s.credential.replayStore = v.trimmingSpaces },
                   show: { $0.credential.replayStore }),
        OptionSpec("credential-holder-binding", .credential, .value(placeholder: "MODE"), default: "off",
                   help: "passes bound to a phone's key (cnf): off (a pass with cnf is refused), accept (a pass with cnf only in a fresh presentation signed by its holder, SD-JWT key binding or SG2:; others as bearer passes), require (every pass in such a presentation); needs credential-audience, the door a presentation names",
                   apply: { s, v in s.credential.holderBinding = try wrap { () throws(UsageError) in try CredentialSettings.parseHolderBinding(v) } },
                   show: { $0.credential.holderBinding.rawValue }),
        OptionSpec("credential-presentation-window-s", .credential, .value(placeholder: "S"), default: "30",
                   help: "a presentation is valid while its iat is within this many seconds of the kiosk's clock, and is accepted once, 5-300",
                   apply: { s, v in s.credential.presentationWindowSeconds = try ParseValue.int(v, in: CredentialSettings.presentationWindowRange) },
                   show: { String($0.credential.presentationWindowSeconds) }),
        OptionSpec("credential-require-synced-clock", .credential, .flag, default: "true",
                   help: "refuse every pass until the kernel reports the clock synchronised (a Pi before the Pi 5 has no battery clock)",
                   apply: { s, v in s.credential.requireSyncedClock = try ParseValue.bool(v) },
                   show: { String($0.credential.requireSyncedClock) }),
        OptionSpec("credential-status-list", .credential, .value(placeholder: "PATH"), default: "",
                   help: "Token Status Lists (statuslist+jwt or statuslist+cwt, signed by a key in credential-status-list-keys, default credential-keys): a file or a directory of them; a pass whose status is not VALID is refused as revoked",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.credential.statusList = t.isEmpty ? nil : t
                   },
                   show: { $0.credential.statusList ?? "" }),
        OptionSpec("credential-status-list-keys", .credential, .value(placeholder: "PATH"), default: "",
                   help: "the keys the status lists are verified with, when their issuer's are not the passes' (as credential-keys: JWKS, PEM or a directory); unset: credential-keys",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.credential.statusListKeys = t.isEmpty ? nil : t
                   },
                   show: { $0.credential.statusListKeys ?? "" }),
        OptionSpec("credential-output", .credential, .value(placeholder: "WHAT"), default: "number",
                   help: "what door outputs receive for an accepted pass: number (credential-number-claim) or token",
                   apply: { s, v in s.credential.output = try wrap { () throws(UsageError) in try CredentialSettings.parseOutput(v) } },
                   show: { $0.credential.output.rawValue }),
    ]

    /// The settings' parsers name the option themselves ("--credential-format: ..."); the option table
    /// adds the option's name, so only the part after it is kept.
    private static func wrap<T>(_ parse: () throws(UsageError) -> T) throws -> T {
        do {
            return try parse()
        } catch {
            let message = error.message
            if message.hasPrefix("--"), let colon = message.firstIndex(of: ":") {
                throw OptionValueError(String(message[message.index(after: colon)...]).trimmingSpaces)
            }
            throw OptionValueError(message)
        }
    }
}
