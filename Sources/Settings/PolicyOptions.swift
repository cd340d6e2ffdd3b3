import Core

extension ConfigSection {
    public static let policy = ConfigSection("policy")
}

extension OptionTable {
    /// `[policy]`: the site's decisions beside the pass itself (this build: stale status lists and the
    /// rollback guard's state file).
    public static let policy: [OptionSpec] = [
        OptionSpec("policy-stale", .policy, .value(placeholder: "MODE"), default: "deny",
                   help: "a status list past its exp: deny (refuse its passes as policy-stale), allow-known (it still decides), allow (also accept passes whose list is not held)",
                   apply: { s, v in
                       do {
                           s.policy.stale = try PolicySettings.parseStale(v)
                       } catch {
                           throw OptionValueError("'\(v)' is not one of deny, allow-known, allow")
                       }
                   },
                   show: { $0.policy.stale.rawValue }),
        OptionSpec("policy-state-file", .policy, .value(placeholder: "PATH"), default: "/var/lib/scangate/policy-state",
                   help: "where the newest status-list iat per uri is kept, so that an older list is refused after a restart (rollback)",
                   apply: { s, v in s.policy.stateFile = v.trimmingSpaces },
                   show: { $0.policy.stateFile }),
    ]
}
