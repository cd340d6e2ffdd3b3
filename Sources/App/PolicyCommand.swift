import Config
import Core
import Credentials
import Platform
import Settings

/// `scangate policy verify FILE | show`: the site policy (policy-file) and the status lists
/// (credential-status-list) as the daemon would take them, checked before a file is put in place or to see
/// what is in force. Both only read: the rollback
/// guard (policy-state-file) and the kept copies beside it are never written here (`StatusListSet.read`,
/// not `load`).
enum PolicyCommand {
    static let help = """
        Usage: scangate policy verify FILE [--config FILE] [--credential-keys PATH] [--credential-algorithms LIST]
                                           [--credential-status-list-keys PATH] [--policy-keys PATH]
                                           [--policy-state-file PATH] [--policy-stale MODE] [--json]
               scangate policy show [--config FILE] [--credential-keys PATH] [--credential-algorithms LIST]
                                    [--credential-status-list PATH] [--policy-file PATH] [--policy-keys PATH]
                                    [--policy-state-file PATH] [--policy-stale MODE] [--json]

        verify   checks FILE, a site policy (scangate-policy+jwt, or a COSE_Sign1 of typ application/scangate-policy+cwt)
                 or a status list token (statuslist+jwt, or statuslist+cwt in binary or hex), as the daemon would at its next start.
                 A site policy: the signature with policy-keys (default credential-keys), its claims and its time
                 zone, and whether its ver is lower than the highest this kiosk used (then it is refused as a
                 rollback). Prints ver, iat, exp, tz, the door, the groups, holidays, the deny list's size and
                 anti-passback. A status list:
                 the signature with credential-keys and credential-algorithms, then its claims; and, when
                 policy-state-file exists, whether its iat is older than the newest this kiosk accepted for
                 its uri (then it is refused as rolled back). Prints the uri, the entries and their bits, the
                 kid, iat, exp, ttl and the token's fingerprint (never the token). A list past its exp is
                 still used; policy-stale says what its passes meet.
        show     what the daemon would have in force now: the site policy of policy-file or its kept copy
                 (STATE.policy), and each list of credential-status-list or the copy
                 kept beside policy-state-file (STATE.lists/), with its entries, iat, exp, age and whether it
                 expired; the files refused and why; and the rollback guard's newest iat per uri.
        The settings are the daemon's, with the same names: --config FILE reads its [credential] and
        [policy] sections, and flags override it. Nothing is written: not the state file, not the kept copies.
        --json prints one JSON object instead of the lines.
        Exit: 0 the list would be used (show: always, once the config is good), 1 verify: FILE is refused
        (one line on stderr: the file and why), 2 bad flag, value, file or config (one line on stderr).
        """

    static func run(_ arguments: [String]) -> Int32 {
        CommandArguments.dispatch(arguments, command: "policy", help: help, [("verify", verify), ("show", show)])
    }

    /// The settings, keys and --json of one policy command; nil when --help was asked.
    struct Context {
        let credential: CredentialSettings
        let policy: PolicySettings
        let keys: CredentialKeySet
        /// The rollback guard as policy-state-file holds it now (empty when there is no file yet).
        let held: PolicyState
        let json: Bool
        let positionals: [String]
        let now: Int64
    }

    static func context(_ arguments: [String], positionals: Bool) throws(UsageError) -> Context? {
        let parsed = try CommandLineParser.parse(arguments, table: OptionTable.credential + OptionTable.policy,
                                                 local: [.init("json")], positionals: positionals, command: "policy")
        if parsed.help { return nil }
        let settings = try Configuration.resolve(configPath: parsed.configPath, flagAssignments: parsed.assignments)
        var credential = settings.credential
        // The lists are checked whether or not this kiosk checks passes: the keys and algorithms are what count.
        if credential.format == .off { credential.format = .any }
        guard let path = credential.keys, !path.isEmpty else {
            throw UsageError("policy needs --credential-keys PATH or --config FILE with credential-keys (the JWKS, PEM file or KID.pem directory that signs the status lists)")
        }
        try credential.validate()
        try settings.policy.validate()
        let keys: CredentialKeySet
        do throws(KeyFileError) {
            keys = try CredentialKeySet.load(path: path)
        } catch {
            throw UsageError("credential-keys " + error.description)
        }
        let held: PolicyState
        do throws(StatusListError) {
            held = try PolicyState.load(path: settings.policy.stateFile)
        } catch {
            throw UsageError(error.message)
        }
        return Context(credential: credential, policy: settings.policy, keys: keys, held: held, json: parsed.localValue("json") == "true",
                       positionals: parsed.positionals, now: WallClock.nowNanoseconds() / 1_000_000_000)
    }

    // MARK: - verify

    static func verify(_ arguments: [String]) -> Int32 {
        do throws(UsageError) {
            guard let context = try context(arguments, positionals: true) else { print(help); return 0 }
            guard context.positionals.count == 1, let file = context.positionals.first else {
                throw UsageError(context.positionals.isEmpty ? "policy verify needs a FILE (a statuslist+jwt or statuslist+cwt token)"
                                 : "policy verify takes one FILE, not \(context.positionals.count)")
            }
            let bytes: [UInt8]
            do throws(BoundedFileError) {
                bytes = try StatusListSet.readTokenFile(file)
            } catch {
                throw UsageError("policy verify \(error.path): \(error.reasonText) (give a statuslist+jwt or statuslist+cwt file)")
            }
            if SitePolicyToken.claimsToBePolicy(bytes) {
                return try verifyPolicy(file, bytes, context)
            }
            let statePath = context.policy.stateFile
            let held = context.held
            let out = FileDescriptor(rawValue: 1)
            let listKeys = try CredentialPolicy.statusListKeys(context.credential, credentialKeys: context.keys)
            let token: StatusListToken
            do throws(StatusListError) {
                token = try StatusListToken.verify(bytes, keys: listKeys, algorithms: context.credential.algorithms)
            } catch {
                let fingerprint = TokenFingerprint.describe(bytes)
                if context.json {
                    _ = out.writeAll(Array((JSONText.object([
                        ("file", JSONText.string(file)), ("verdict", JSONText.string("refused")),
                        ("reason", JSONText.string(error.message)), ("fingerprint", JSONText.string(fingerprint)),
                    ]) + "\n").utf8))
                }
                Logger.writeToStderr("scangate: policy verify: " + Logger.escapeControls("\(file) (\(fingerprint)): refused: \(error.message)"))
                return ExitCode.nothingFound.rawValue
            }
            let rolledBack = StatusListSet.rolledBack(token, held: held, statePath: statePath)
            let guardIssuedAt = held.issuedAt(uri: token.uri)
            if context.json {
                var fields = [("file", JSONText.string(file)), ("verdict", JSONText.string(rolledBack == nil ? "accepted" : "refused")),
                              ("reason", rolledBack.map { JSONText.string($0) } ?? "null")]
                fields += listFields(token, now: context.now)
                fields += [("state_file", JSONText.string(statePath)), ("guard_iat", guardIssuedAt.map { String($0) } ?? "null"),
                           ("policy_stale", JSONText.string(context.policy.stale.rawValue))]
                _ = out.writeAll(Array((JSONText.object(fields) + "\n").utf8))
            } else {
                var lines = ["\(Logger.escapeControls(file)): " + (rolledBack == nil ? "would be used" : "refused (rolled back)")]
                lines += describe(token, now: context.now, stale: context.policy.stale)
                let guardLine: String
                if let guardIssuedAt {
                    let relation = token.issuedAt > guardIssuedAt ? "this list is newer: the daemon would record its iat"
                        : token.issuedAt == guardIssuedAt ? "this list has the same iat" : "this list is older: refused"
                    guardLine = "held iat \(CredentialVerifier.time(Double(guardIssuedAt))) for this uri; \(relation)"
                } else {
                    guardLine = (held.entries.isEmpty ? "nothing held yet (a first start)" : "no iat held for this uri")
                        + "; the daemon would record this one"
                }
                lines.append("  rollback guard \(statePath): " + guardLine)
                _ = out.writeAll(Array((lines.joined(separator: "\n") + "\n").utf8))
            }
            if let rolledBack {
                Logger.writeToStderr("scangate: policy verify: " + Logger.escapeControls("\(file) (\(token.fingerprint)): refused: \(rolledBack)"))
                return ExitCode.nothingFound.rawValue
            }
            return ExitCode.success.rawValue
        } catch {
            return usageError(error.message)
        }
    }

    /// `policy verify` of a site policy document.
    static func verifyPolicy(_ file: String, _ bytes: [UInt8], _ context: Context) throws(UsageError) -> Int32 {
        let out = FileDescriptor(rawValue: 1)
        let keys = try CredentialPolicy.policyKeys(context.policy, credentialKeys: context.keys)
        let statePath = context.policy.stateFile
        var refusal: String?
        var token: SitePolicyToken?
        do throws(SitePolicyError) {
            let verified = try SitePolicyToken.verify(bytes, keys: keys, algorithms: context.credential.algorithms)
            token = verified
            do throws(ZoneRulesError) {
                _ = try ZoneRules.load(name: verified.policy.timeZone)
            } catch {
                throw SitePolicyError("tz: \(error.message)")
            }
            let p = verified.policy
            if context.held.isRollback(version: p.version, issuedAt: p.issuedAt), let h = context.held.policy {
                refusal = "ver \(p.version) (iat \(p.issuedAt)) is older than ver \(h.version) (iat \(h.issuedAt)) already used here: refused as a rollback"
            }
        } catch {
            refusal = error.message
        }
        let fingerprint = token?.fingerprint ?? TokenFingerprint.describe(bytes)
        if context.json {
            var fields = [("file", JSONText.string(file)), ("kind", JSONText.string("site-policy")),
                          ("verdict", JSONText.string(refusal == nil ? "accepted" : "refused")),
                          ("reason", refusal.map { JSONText.string($0) } ?? "null")]
            if let token { fields += policyFields(token, now: context.now) }
            fields += [("fingerprint", JSONText.string(fingerprint)), ("state_file", JSONText.string(statePath)),
                       ("guard_ver", context.held.policy.map { String($0.version) } ?? "null")]
            _ = out.writeAll(Array((JSONText.object(fields) + "\n").utf8))
        } else if let token {
            var lines = ["\(Logger.escapeControls(file)): site policy, " + (refusal == nil ? "would be used" : "refused")]
            lines += describe(token, now: context.now, stale: context.policy.stale)
            lines.append("  rollback guard \(statePath): " + (context.held.policy.map { "highest ver used here \($0.version)" } ?? "no ver held yet (a first start)"))
            _ = out.writeAll(Array((lines.joined(separator: "\n") + "\n").utf8))
        }
        if let refusal {
            Logger.writeToStderr("scangate: policy verify: " + Logger.escapeControls("\(file) (\(fingerprint)): refused: \(refusal)"))
            return ExitCode.nothingFound.rawValue
        }
        return ExitCode.success.rawValue
    }

    /// The lines that describe a verified site policy, indented, for a person (never a denied number).
    static func describe(_ token: SitePolicyToken, now: Int64, stale: PolicyStale) -> [String] {
        let p = token.policy
        var lines = [
            "  ver \(p.version)",
            "  form " + (token.format == .cwt ? "COSE_Sign1 (application/scangate-policy+cwt)" : "JWS (scangate-policy+jwt)"),
            "  kid \(Logger.escape(token.keyID))",
            "  iat \(CredentialVerifier.time(Double(p.issuedAt))) (\(p.issuedAt), \(now - p.issuedAt) s ago)",
            "  exp \(CredentialVerifier.time(Double(p.expiresAt))) (\(p.expiresAt), "
                + (now >= p.expiresAt ? "EXPIRED \(now - p.expiresAt) s ago; " + (stale == .deny ? "passes are refused as policy-stale"
                    : "it still decides") + " (policy-stale = \(stale.rawValue)))" : "in \(p.expiresAt - now) s)"),
            "  tz \(JSONText.asciiString(p.timeZone))",
            "  door \(p.door.id.map { JSONText.asciiString($0) } ?? "(no id)"), role \(p.door.role.rawValue)",
            "  anti-passback \(p.antipassback.mode.rawValue)" + (p.antipassback.mode == .off ? "" : ", timeout \(p.antipassback.timeoutSeconds) s"),
        ]
        for name in p.groupNames {
            let windows = p.groups[Array(name.utf8)] ?? []
            let text = windows.map { w in
                SitePolicy.dayNames.indices.filter { w.days.contains($0) }.map { SitePolicy.dayNames[$0] }.joined(separator: ",")
                    + " " + clock(w.from) + "-" + clock(w.to)
            }
            lines.append("  group \(JSONText.asciiString(name)): " + (text.isEmpty ? "never" : text.joined(separator: "; ")))
        }
        lines.append("  holidays \(p.holidays.count), denied numbers \(p.deny.count)")
        lines.append("  fingerprint \(token.fingerprint)")
        return lines
    }

    static func clock(_ minutes: Int) -> String {
        let h = minutes / 60, m = minutes % 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }

    /// The JSON members that describe a verified site policy (counts, never the denied numbers).
    static func policyFields(_ token: SitePolicyToken, now: Int64) -> [(String, String)] {
        let p = token.policy
        return [("ver", String(p.version)), ("format", JSONText.string(token.format.rawValue)), ("kid", JSONText.string(token.keyID)),
                ("iat", String(p.issuedAt)), ("exp", String(p.expiresAt)), ("age_s", String(now - p.issuedAt)),
                ("expired", now >= p.expiresAt ? "true" : "false"), ("tz", JSONText.string(p.timeZone)),
                ("door", JSONText.object([("id", p.door.id.map { JSONText.string($0) } ?? "null"), ("role", JSONText.string(p.door.role.rawValue))])),
                ("groups", String(p.groups.count)), ("windows", String(p.groups.values.reduce(0) { $0 + $1.count })),
                ("holidays", String(p.holidays.count)), ("deny", String(p.deny.count)),
                ("antipassback", JSONText.string(p.antipassback.mode.rawValue))]
    }

    /// The lines that describe a verified list, indented, for a person.
    static func describe(_ token: StatusListToken, now: Int64, stale: PolicyStale) -> [String] {
        var lines = [
            "  uri \(JSONText.asciiString(token.uri))",
            "  form " + (token.format == .cwt ? "statuslist+cwt (COSE_Sign1)" : "statuslist+jwt (JWS)"),
            "  entries \(token.list.count) of \(token.list.bits) bit\(token.list.bits == 1 ? "" : "s")",
            "  kid \(Logger.escape(token.keyID))",
            "  iat \(CredentialVerifier.time(Double(token.issuedAt))) (\(token.issuedAt), \(now - token.issuedAt) s ago)",
            "  exp \(CredentialVerifier.time(Double(token.expiresAt))) (\(token.expiresAt), "
                + (now >= token.expiresAt ? "EXPIRED \(now - token.expiresAt) s ago; " + (stale == .deny ? "its passes are refused as policy-stale"
                    : "it still decides") + " (policy-stale = \(stale.rawValue)))" : "in \(token.expiresAt - now) s)"),
        ]
        if let ttl = token.ttl { lines.append("  ttl \(ttl) s") }
        lines.append("  fingerprint \(token.fingerprint)")
        return lines
    }

    /// The JSON members that describe a verified list.
    static func listFields(_ token: StatusListToken, now: Int64) -> [(String, String)] {
        [("uri", JSONText.string(token.uri)), ("format", JSONText.string(token.format.rawValue)), ("entries", String(token.list.count)), ("bits", String(token.list.bits)),
         ("kid", JSONText.string(token.keyID)), ("iat", String(token.issuedAt)), ("exp", String(token.expiresAt)),
         ("ttl", token.ttl.map { String($0) } ?? "null"), ("age_s", String(now - token.issuedAt)),
         ("expired", now >= token.expiresAt ? "true" : "false"), ("fingerprint", JSONText.string(token.fingerprint))]
    }

    // MARK: - show

    static func show(_ arguments: [String]) -> Int32 {
        do throws(UsageError) {
            guard let context = try context(arguments, positionals: false) else { print(help); return 0 }
            guard context.credential.statusList != nil || context.policy.file != nil else {
                throw UsageError("policy show needs --policy-file PATH or --credential-status-list PATH, or --config FILE with either")
            }
            let statePath = context.policy.stateFile
            let held = context.held
            let now = context.now
            let out = FileDescriptor(rawValue: 1)
            var policyJSON = "null"
            var policyLines: [String] = []
            if let file = context.policy.file {
                let inForce = try SitePolicyInForce.read(path: file, keys: try CredentialPolicy.policyKeys(context.policy, credentialKeys: context.keys),
                                                         algorithms: context.credential.algorithms, statePath: statePath).inForce
                var fields: [(String, String)] = [("path", JSONText.string(file))]
                switch inForce.origin {
                case .file(let f): fields.append(("source", JSONText.string("file"))); policyLines.append("site policy from \(f):")
                case .kept(let f): fields.append(("source", JSONText.string("kept"))); policyLines.append("site policy from the kept copy \(f) (\(file) could not be used):")
                case .none: fields.append(("source", "null")); policyLines.append("site policy: none in force (\(file) could not be used, and no copy is kept)")
                }
                if let token = inForce.token {
                    fields += policyFields(token, now: now)
                    policyLines += describe(token, now: now, stale: context.policy.stale)
                }
                fields.append(("refused", inForce.refused.map { JSONText.string($0) } ?? "null"))
                if let refused = inForce.refused { policyLines.append("  refused: \(Logger.escape(refused))") }
                fields.append(("guard_ver", held.policy.map { String($0.version) } ?? "null"))
                policyLines.append("  rollback guard: " + (held.policy.map { "highest ver used \($0.version)" } ?? "no ver held yet"))
                policyJSON = JSONText.object(fields)
            }
            guard let path = context.credential.statusList else {
                if context.json {
                    _ = out.writeAll(Array((JSONText.object([("state_file", JSONText.string(statePath)), ("now", String(now)),
                                                             ("policy_stale", JSONText.string(context.policy.stale.rawValue)),
                                                             ("site_policy", policyJSON)]) + "\n").utf8))
                } else {
                    _ = out.writeAll(Array((policyLines.joined(separator: "\n") + "\n").utf8))
                }
                return ExitCode.success.rawValue
            }
            let set = try StatusListSet.read(path: path, keys: try CredentialPolicy.statusListKeys(context.credential, credentialKeys: context.keys),
                                             algorithms: context.credential.algorithms, statePath: statePath).set
            if context.json {
                let lists = zip(set.lists, set.origins).map { token, origin in
                    var fields = listFields(token, now: now)
                    switch origin {
                    case .file(let file): fields += [("source", JSONText.string("file")), ("path", JSONText.string(file))]
                    case .kept(let file): fields += [("source", JSONText.string("kept")), ("path", JSONText.string(file))]
                    }
                    return JSONText.object(fields)
                }
                let guardEntries = set.state.entries.map { entry in
                    JSONText.object([("uri", JSONText.string(entry.uri)), ("iat", held.issuedAt(uri: entry.uri).map { String($0) } ?? "null"),
                                     ("next_start_iat", String(entry.issuedAt))])
                }
                let object = JSONText.object([
                    ("status_list", JSONText.string(path)), ("state_file", JSONText.string(statePath)),
                    ("policy_stale", JSONText.string(context.policy.stale.rawValue)), ("now", String(now)),
                    ("lists", "[" + lists.joined(separator: ",") + "]"),
                    ("refused", "[" + set.refused.map { JSONText.string($0) }.joined(separator: ",") + "]"),
                    ("guard", "[" + guardEntries.joined(separator: ",") + "]"),
                    ("site_policy", policyJSON),
                ])
                _ = out.writeAll(Array((object + "\n").utf8))
                return ExitCode.success.rawValue
            }
            var lines = policyLines
            lines += ["status lists from \(path) (policy-stale = \(context.policy.stale.rawValue)); rollback guard \(statePath)",
                      "in force: \(set.lists.count)"]
            for (token, origin) in zip(set.lists, set.origins) {
                switch origin {
                case .file(let file): lines.append("  from \(file):")
                case .kept(let file): lines.append("  from the kept copy \(file) (no file gave a list for its uri that could be used):")
                }
                lines += describe(token, now: now, stale: context.policy.stale).map { "  " + $0 }
            }
            lines.append("refused: \(set.refused.count)")
            lines += set.refused.map { "  " + Logger.escape($0) }
            lines.append("rollback guard: \(set.state.entries.count) uri\(set.state.entries.count == 1 ? "" : "s")")
            for entry in set.state.entries {
                let was = held.issuedAt(uri: entry.uri)
                let note = was == entry.issuedAt ? "" : was.map { " (held \(CredentialVerifier.time(Double($0))); the next start records the newer)" }
                    ?? " (not held yet; the next start records it)"
                lines.append("  \(JSONText.asciiString(entry.uri)): iat \(CredentialVerifier.time(Double(entry.issuedAt)))" + note)
            }
            _ = out.writeAll(Array((lines.joined(separator: "\n") + "\n").utf8))
            return ExitCode.success.rawValue
        } catch {
            return usageError(error.message)
        }
    }
}
