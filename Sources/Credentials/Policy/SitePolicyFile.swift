import Components
import Core
import Platform
import Settings

/// The site policy in force (policy-file), built at start and at each reload.
///
/// The file is verified with policy-keys, and refused when its `ver` is lower than the highest this kiosk
/// has accepted (or the same ver issued earlier): that ver is kept in policy-state-file across restarts,
/// recorded before the document is used. The last verified document is kept beside the state file
/// (`STATE.policy`) and stays in force when the file is missing or refused; whether an expired one still
/// decides is policy-stale's.
public struct SitePolicyInForce: Sendable {
    /// nil: no usable document (the file is missing or refused, and nothing is kept).
    public let token: SitePolicyToken?
    /// The zone rules for the document's tz (UTC when there is no document).
    public let zone: ZoneRules
    public let origin: Origin
    /// Why the file was not used (never the token), when it was not.
    public let refused: String?

    public enum Origin: Equatable, Sendable {
        case file(String)
        case kept(String)
        case none
    }

    public var policy: SitePolicy? { token?.policy }

    public static let limit = FileSizeLimit(bytes: SitePolicyToken.maxTokenBytes, kind: "site policy files")

    public static func keptPath(_ statePath: String) -> String { statePath + ".policy" }

    /// Reads, verifies and records: what `scangate run` does at start and at each reload. The new ver is
    /// written to the state file, and the document kept, before it is used.
    public static func load(path: String?, keys: CredentialKeySet, algorithms: [SignatureAlgorithm],
                            statePath: String, zoneDirectory: String = ZoneRules.defaultDirectory) throws(UsageError) -> SitePolicyInForce {
        let read = try read(path: path, keys: keys, algorithms: algorithms, statePath: statePath, zoneDirectory: zoneDirectory)
        if let state = read.newState {
            do throws(StatusListError) {
                try state.save(path: statePath)
            } catch {
                throw UsageError(error.message + " (the rollback guard must be recorded before a policy is used)")
            }
        }
        if let bytes = read.toKeep {
            do throws(AtomicFile.Failure) {
                try AtomicFile.replace(keptPath(statePath), with: bytes, mode: 0o600)
            } catch {
                throw UsageError("policy-state-file \(statePath): cannot keep the site policy in \(keptPath(statePath)): \(error)")
            }
        }
        return read.inForce
    }

    /// What `load` does without writing anything (check-config, doctor, `policy verify`).
    public static func read(path: String?, keys: CredentialKeySet, algorithms: [SignatureAlgorithm], statePath: String,
                            zoneDirectory: String = ZoneRules.defaultDirectory) throws(UsageError)
        -> (inForce: SitePolicyInForce, newState: PolicyState?, toKeep: [UInt8]?) {
        var state: PolicyState
        do throws(StatusListError) {
            state = try PolicyState.load(path: statePath)
        } catch {
            throw UsageError(error.message)
        }
        var refused: String?
        if let path {
            switch candidate(path: path, keys: keys, algorithms: algorithms, state: state, zoneDirectory: zoneDirectory) {
            case .success(let (token, zone, bytes)):
                let changed = state.recordPolicy(version: token.policy.version, issuedAt: token.policy.issuedAt)
                return (SitePolicyInForce(token: token, zone: zone, origin: .file(path), refused: nil), changed ? state : nil, bytes)
            case .failure(let error):
                refused = "policy-file \(path): \(error.message)"
            }
        }
        let kept = keptPath(statePath)
        if case .success(let (token, zone, _)) = candidate(path: kept, keys: keys, algorithms: algorithms, state: state, zoneDirectory: zoneDirectory) {
            return (SitePolicyInForce(token: token, zone: zone, origin: .kept(kept), refused: refused), nil, nil)
        }
        return (SitePolicyInForce(token: nil, zone: .utc, origin: .none, refused: refused), nil, nil)
    }

    /// A document received over MQTT (mqtt-policy): verified as policy-file is, refused when it is a
    /// rollback; when newer than the one held, its ver is recorded in the state file and it is kept
    /// beside it (STATE.policy) before this returns `.installed`, and the daemon reloads to use it. The
    /// caller serialises this with `load` (both write the state file).
    public static func deliver(_ bytes: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm], statePath: String,
                               zoneDirectory: String = ZoneRules.defaultDirectory) -> SiteLink.PolicyOutcome {
        var state: PolicyState
        do throws(StatusListError) {
            state = try PolicyState.load(path: statePath)
        } catch {
            return .refused(error.message)
        }
        let token: SitePolicyToken
        switch candidate(bytes: bytes, keys: keys, algorithms: algorithms, state: state, zoneDirectory: zoneDirectory) {
        case .success(let (t, _, _)): token = t
        case .failure(let error): return .refused(error.message)
        }
        let p = token.policy
        let what = "ver \(p.version) (iat \(p.issuedAt)) for door \(Logger.escape(p.door.id ?? "(none)"))"
        if let held = state.policy, held.version == p.version, held.issuedAt == p.issuedAt,
           let kept = try? BoundedFile.readAll(path: keptPath(statePath), limit: limit), kept == bytes {
            return .unchanged(what + " is in force already")
        }
        if state.recordPolicy(version: p.version, issuedAt: p.issuedAt) {
            do throws(StatusListError) {
                try state.save(path: statePath)
            } catch {
                return .refused(error.message + " (the rollback guard must be recorded before a policy is used)")
            }
        }
        do throws(AtomicFile.Failure) {
            try AtomicFile.replace(keptPath(statePath), with: bytes, mode: 0o600)
        } catch {
            return .refused("policy-state-file \(statePath): cannot keep the site policy in \(keptPath(statePath)): \(error)")
        }
        return .installed(what + " verified and kept in \(keptPath(statePath)); reloading to use it")
    }

    /// One file, verified, not a rollback of `state`, with its zone loaded.
    static func candidate(path: String, keys: CredentialKeySet, algorithms: [SignatureAlgorithm], state: PolicyState,
                          zoneDirectory: String) -> Result<(SitePolicyToken, ZoneRules, [UInt8]), SitePolicyError> {
        let bytes: [UInt8]
        do throws(BoundedFileError) {
            bytes = try BoundedFile.readAll(path: path, limit: limit)
        } catch {
            return .failure(SitePolicyError(error.reasonText))
        }
        return candidate(bytes: bytes, keys: keys, algorithms: algorithms, state: state, zoneDirectory: zoneDirectory)
    }

    /// One document, verified, not a rollback of `state`, with its zone loaded.
    static func candidate(bytes: [UInt8], keys: CredentialKeySet, algorithms: [SignatureAlgorithm], state: PolicyState,
                          zoneDirectory: String) -> Result<(SitePolicyToken, ZoneRules, [UInt8]), SitePolicyError> {
        guard bytes.count <= SitePolicyToken.maxTokenBytes else {
            return .failure(SitePolicyError("larger than \(SitePolicyToken.maxTokenBytes) bytes"))
        }
        do throws(SitePolicyError) {
            let token = try SitePolicyToken.verify(bytes, keys: keys, algorithms: algorithms)
            let policy = token.policy
            if state.isRollback(version: policy.version, issuedAt: policy.issuedAt), let held = state.policy {
                throw SitePolicyError("ver \(policy.version) (iat \(policy.issuedAt)) is older than ver \(held.version) (iat \(held.issuedAt)) already used here: refused as a rollback")
            }
            let zone: ZoneRules
            do throws(ZoneRulesError) {
                zone = try ZoneRules.load(name: policy.timeZone, directory: zoneDirectory)
            } catch {
                throw SitePolicyError("tz: \(error.message)")
            }
            return .success((token, zone, bytes))
        } catch {
            return .failure(error)
        }
    }

    /// One line for the log: what is in force and from where.
    public var summary: String {
        guard let token else { return "no site policy in force" }
        let from: String
        switch origin {
        case .file(let p): from = p
        case .kept(let p): from = "the kept copy \(p)"
        case .none: from = "?"
        }
        return "site policy \(token.policy.summary), kid \(JSONText.asciiString(token.keyID)), exp \(CredentialVerifier.time(Double(token.policy.expiresAt))), from \(from)"
    }

    /// What the policy says of a verified pass at `now`: nil to go on, or the refusal. `stale` decides
    /// what an expired document, or none, does. A note to log comes back with an accepted read when the
    /// document in force is stale or missing and policy-stale lets it through.
    public func check(_ pass: VerifiedPass, now: Int64, stale: PolicyStale) -> Result<String?, Refusal> {
        guard let token else {
            if stale == .allow { return .success("no site policy is held (policy-stale = allow): the pass is not checked against one") }
            return .failure(Refusal(.policyStale, "policy-file is set and no verified site policy is held\(refused.map { " (\($0))" } ?? "")"))
        }
        let policy = token.policy
        var note: String?
        if now >= policy.expiresAt {
            if stale == .deny {
                return .failure(Refusal(.policyStale, "the site policy ver \(policy.version) expired at \(CredentialVerifier.time(Double(policy.expiresAt))) (policy-stale = deny)"))
            }
            note = "the site policy ver \(policy.version) expired at \(CredentialVerifier.time(Double(policy.expiresAt))); it still decides (policy-stale = \(stale.rawValue))"
        }
        if policy.deny.contains(Array(pass.number.utf8)) {
            return .failure(Refusal(.revoked, "number \(Logger.escape(pass.number)) is on the deny list of site policy ver \(policy.version)"))
        }
        if let refusal = SiteSchedule.check(group: pass.group, policy: policy, zone: zone, now: now) {
            return .failure(refusal)
        }
        return .success(note)
    }
}

/// Hours: the windows of the pass's group, in the site's zone, and the holidays.
public enum SiteSchedule {
    /// nil when the pass may pass now. A pass without grp follows `default`; without a `default` group it
    /// is not restricted by hours. A grp the policy does not have is refused (fail closed).
    public static func check(group: String?, policy: SitePolicy, zone: ZoneRules, now: Int64) -> Refusal? {
        let name = group ?? "default"
        guard let windows = policy.groups[Array(name.utf8)] else {
            if group == nil { return nil }
            return Refusal(.outsideSchedule, "group \(JSONText.asciiString(name)) is not in site policy ver \(policy.version)")
        }
        let local = zone.localTime(at: now)
        let shown = "\(pad(local.year, 4))-\(pad(local.month, 2))-\(pad(local.day, 2)) \(pad(local.minuteOfDay / 60, 2)):\(pad(local.minuteOfDay % 60, 2)) \(local.abbreviation)"
        if policy.holidays.contains(CivilDate.days(year: local.year, month: local.month, day: local.day)) {
            return Refusal(.outsideSchedule, "\(shown) is a holiday in site policy ver \(policy.version); group \(JSONText.asciiString(name)) has no hours on holidays")
        }
        if windows.contains(where: { $0.contains(weekday: local.weekday, minute: local.minuteOfDay) }) { return nil }
        return Refusal(.outsideSchedule, "\(SitePolicy.dayNames[local.weekday]) \(shown) is outside the hours of group \(JSONText.asciiString(name)) (site policy ver \(policy.version))")
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
