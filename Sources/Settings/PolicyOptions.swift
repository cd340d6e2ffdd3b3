import Core

extension ConfigSection {
    public static let policy = ConfigSection("policy")
}

extension OptionTable {
    /// `[policy]`: the site's decisions beside the pass itself: the signed site policy (deny list, hours,
    /// holidays), stale policies and status lists, and the rollback guard's state file.
    public static let policy: [OptionSpec] = [
        OptionSpec("policy-file", .policy, .value(placeholder: "PATH"), default: "",
                   help: "the signed site policy (JWS typ scangate-policy+jwt, or COSE_Sign1): deny list, hours per group, holidays; a lower ver than one used before is refused",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.policy.file = t.isEmpty ? nil : t
                   },
                   show: { $0.policy.file ?? "" }),
        OptionSpec("policy-keys", .policy, .value(placeholder: "PATH"), default: "",
                   help: "the keys the site policy is verified with (as credential-keys: JWKS, PEM or a directory); unset: credential-keys",
                   apply: { s, v in
                       let t = v.trimmingSpaces
                       s.policy.keys = t.isEmpty ? nil : t
                   },
                   show: { $0.policy.keys ?? "" }),
        OptionSpec("policy-stale", .policy, .value(placeholder: "MODE"), default: "deny",
                   help: "a site policy or status list past its exp: deny (refuse as policy-stale), allow-known (it still decides), allow (also accept passes whose list or policy is not held)",
                   apply: { s, v in
                       do {
                           s.policy.stale = try PolicySettings.parseStale(v)
                       } catch {
                           throw OptionValueError("'\(v)' is not one of deny, allow-known, allow")
                       }
                   },
                   show: { $0.policy.stale.rawValue }),
        OptionSpec("policy-state-file", .policy, .value(placeholder: "PATH"), default: "/var/lib/scangate/policy-state",
                   help: "where the highest policy ver and the newest status-list iat per uri are kept, so that an older one is refused after a restart (rollback)",
                   apply: { s, v in s.policy.stateFile = v.trimmingSpaces },
                   show: { $0.policy.stateFile }),
    ]
}
