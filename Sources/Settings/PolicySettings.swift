import Core

/// What a kiosk does with a Token Status List past its `exp` (policy-stale).
public enum PolicyStale: String, CaseIterable, Sendable {
    /// A pass checked against a stale list, or against a list the kiosk does not hold, is refused as
    /// `policy-stale` (the default: a kiosk cut off from its site stops letting people in).
    case deny
    /// A stale list still decides: its VALID entries are accepted, the rest refused as `revoked`. A pass
    /// whose list the kiosk does not hold is refused as `policy-stale`.
    case allowKnown = "allow-known"
    /// As allow-known, and a pass whose list the kiosk does not hold is accepted too (logged).
    case allow
}

/// The `[policy]` options: the signed site policy document and its keys, how a stale policy or status
/// list is handled, and where the rollback guard (the highest `ver`, the newest `iat` per status-list uri) is kept. Defaults written once here.
public struct PolicySettings: SettingsSection {
    /// policy-stale = deny | allow-known | allow.
    public var stale: PolicyStale = .deny
    /// policy-state-file: an absolute path; the newest status-list iat per uri, across restarts.
    public var stateFile: String = "/var/lib/scangate/policy-state"
    /// policy-file: the signed site policy document (a JWS `scangate-policy+jwt` or a COSE_Sign1); nil: none.
    public var file: String? = nil
    /// policy-keys: the keys the policy document is verified with; nil: credential-keys.
    public var keys: String? = nil

    public init() {}

    public static func parseStale(_ text: String) throws(UsageError) -> PolicyStale {
        guard let value = PolicyStale(rawValue: text.trimmedOfSpaces.lowercased()) else {
            throw UsageError("--policy-stale: '\(text)' is not one of deny, allow-known, allow")
        }
        return value
    }

    /// Checks the options; each error names the option and what is allowed.
    public func validate() throws(UsageError) {
        guard stateFile.hasPrefix("/"), stateFile.count > 1, !stateFile.hasSuffix("/") else {
            throw UsageError("--policy-state-file: '\(stateFile)' must be an absolute path to a file (default /var/lib/scangate/policy-state)")
        }
        if let file, file.isEmpty {
            throw UsageError("--policy-file is empty; leave it unset to apply no site policy")
        }
        if let keys, keys.isEmpty {
            throw UsageError("--policy-keys is empty; leave it unset to verify the policy with credential-keys")
        }
    }
}

extension RunSettings {
    public var policy: PolicySettings {
        get { self[PolicySettings.self] }
        set { self[PolicySettings.self] = newValue }
    }
}
