#if canImport(Glibc)
import Glibc
#endif
import Components
import Core
import Platform
import Settings

extension DoctorPart {
    public static let credential = DoctorPart("credential")
}

/// `scangate doctor`'s rows for signed passes (credential-format on): the keys loaded as `run` loads them,
/// with their kids; whether the clock counts as synchronised by the rule `run` applies; and, with
/// credential-one-time, whether the service user can keep the replay store where it is configured.
/// Nothing is created or written: doctor often runs as root, and a store or lock file created by root
/// would be refused to the service later.
public enum CredentialDoctor {
    /// The filesystem facts the store row needs, so tests can give any (the real ones by default).
    public struct Filesystem: Sendable {
        public var status: @Sendable (String) -> Glibc.stat?
        /// The service user's uid and gid, nil when there is no such user.
        public var serviceUser: @Sendable () -> (uid: uid_t, gid: gid_t)?
        /// The uid doctor runs as.
        public var euid: @Sendable () -> uid_t

        public init(status: @escaping @Sendable (String) -> Glibc.stat? = Self.systemStat,
                    serviceUser: @escaping @Sendable () -> (uid: uid_t, gid: gid_t)? = Self.systemServiceUser,
                    euid: @escaping @Sendable () -> uid_t = { geteuid() }) {
            self.status = status
            self.serviceUser = serviceUser
            self.euid = euid
        }

        public static let systemStat: @Sendable (String) -> Glibc.stat? = { path in
            var info = Glibc.stat()
            return lstat(path, &info) == 0 ? info : nil
        }

        public static let systemServiceUser: @Sendable () -> (uid: uid_t, gid: gid_t)? = {
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var buffer = [CChar](repeating: 0, count: 4096)
            guard getpwnam_r(DoctorFixes.serviceUser, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
            return (entry.pw_uid, entry.pw_gid)
        }
    }

    public static func rows(_ settings: CredentialSettings, policy: PolicySettings = PolicySettings(),
                            clock: ClockSyncCheck = ClockSync.kernel(), filesystem: Filesystem = Filesystem(),
                            now: Int64 = WallClock.nowNanoseconds() / 1_000_000_000) -> [DoctorRow] {
        guard settings.format != .off else { return [] }
        return [keysRow(settings), clockRow(settings, clock())] + (settings.oneTime ? [storeRow(settings.replayStore, filesystem)] : [])
            + (settings.statusList != nil ? [statusListRow(settings, policy, now: now)] : [])
            + (policy.file != nil ? [sitePolicyRow(settings, policy, now: now)] : [])
    }

    /// credential-keys as `run` loads them; the keys row says why when they cannot be.
    static func credentialKeys(_ settings: CredentialSettings) -> Result<CredentialKeySet, KeyFileError> {
        Result { () throws(KeyFileError) in try CredentialKeySet.load(path: settings.keys ?? "") }
    }

    /// The site policy as `run` would hold it (read, nothing recorded): its ver, age and expiry, and where
    /// it comes from. Fails when none is held or (policy-stale = deny) it expired; warns on a kept copy.
    static func sitePolicyRow(_ settings: CredentialSettings, _ policy: PolicySettings, now: Int64) -> DoctorRow {
        let check = "site policy"
        let path = policy.file ?? ""
        let inForce: SitePolicyInForce
        do throws(UsageError) {
            guard case .success(let keys) = credentialKeys(settings) else {
                return .fail(.credential, check, "cannot check it without credential-keys", fix: "fix credential-keys first (its row above)")
            }
            inForce = try SitePolicyInForce.read(path: path, keys: try CredentialPolicy.policyKeys(policy, credentialKeys: keys),
                                                 algorithms: settings.algorithms, statePath: policy.stateFile).inForce
        } catch {
            return .fail(.credential, check, error.message, fix: "fix policy-keys and policy-state-file")
        }
        let fix = "deliver the site's current signed policy to \(path) (a lower ver than one used before is refused as a rollback)"
        guard let p = inForce.policy else {
            let what = "none in force: " + (inForce.refused.map { Logger.escape($0) } ?? "\(path) could not be read")
            return policy.stale == .allow ? .warn(.credential, check, what + "; passes are accepted without one (policy-stale = allow)", fix: fix)
                                          : .fail(.credential, check, what + "; every pass is refused as policy-stale", fix: fix)
        }
        var detail = "ver \(p.version) issued \(now - p.issuedAt) s ago, " + (now >= p.expiresAt ? "EXPIRED \(now - p.expiresAt) s ago" : "expires in \(p.expiresAt - now) s")
            + "; \(p.groups.count) groups, \(p.holidays.count) holidays, \(p.deny.count) denied numbers, tz \(JSONText.asciiString(p.timeZone))"
        if case .kept(let kept) = inForce.origin {
            detail += "; the kept copy \(kept) is in force because \(inForce.refused.map { Logger.escape($0) } ?? "the file could not be used")"
            return .warn(.credential, check, detail, fix: fix)
        }
        if now >= p.expiresAt {
            return policy.stale == .deny ? .fail(.credential, check, detail + "; every pass is refused as policy-stale", fix: fix)
                                         : .warn(.credential, check, detail + "; the expired policy still decides", fix: fix)
        }
        return .pass(.credential, check, "\(detail), from \(path)")
    }

    /// The status lists as `run` would hold them (read, nothing recorded): each uri with its entries, age
    /// and expiry. Fails when a file is refused, or (policy-stale = deny) when a list is past its exp.
    static func statusListRow(_ settings: CredentialSettings, _ policy: PolicySettings, now: Int64) -> DoctorRow {
        let check = "credential status lists"
        let path = settings.statusList ?? ""
        let set: StatusListSet
        do throws(UsageError) {
            guard case .success(let keys) = credentialKeys(settings) else {
                return .fail(.credential, check, "cannot check them without credential-keys", fix: "fix credential-keys first (its row above)")
            }
            set = try StatusListSet.read(path: path, keys: try CredentialPolicy.statusListKeys(settings, credentialKeys: keys),
                                         algorithms: settings.algorithms, statePath: policy.stateFile).set
        } catch {
            return .fail(.credential, check, error.message, fix: "give credential-status-list a statuslist+jwt or statuslist+cwt file, or a folder of them")
        }
        let lists = set.lists.map { t in
            "\(JSONText.asciiString(t.uri)): \(t.list.count) entries, issued \(now - t.issuedAt) s ago, "
                + (now >= t.expiresAt ? "EXPIRED \(now - t.expiresAt) s ago" : "expires in \(t.expiresAt - now) s")
        }
        let detail = "\(set.lists.count) from \(path)" + (lists.isEmpty ? "" : ": " + lists.joined(separator: "; "))
            + "; policy-stale = \(policy.stale.rawValue)"
        if !set.refused.isEmpty {
            return .fail(.credential, check, detail + "; refused: " + set.refused.map { Logger.escape($0) }.joined(separator: "; "),
                         fix: "deliver the site's current signed lists (an older iat than one used before is refused as a rollback)")
        }
        if !set.kept.isEmpty {
            return .warn(.credential, check, detail + "; " + set.kept.map { Logger.escape($0) }.joined(separator: "; "),
                         fix: "deliver the site's current signed lists to credential-status-list")
        }
        if set.lists.contains(where: { now >= $0.expiresAt }) {
            let fix = "deliver a fresh list from the site's issuer"
            return policy.stale == .deny ? .fail(.credential, check, detail + "; passes on an expired list are refused as policy-stale", fix: fix)
                                         : .warn(.credential, check, detail + "; an expired list still decides", fix: fix)
        }
        return .pass(.credential, check, detail)
    }

    static func keysRow(_ settings: CredentialSettings) -> DoctorRow {
        let path = settings.keys ?? ""
        do throws(KeyFileError) {
            let keys = try CredentialKeySet.load(path: path)
            let allowed = keys.keys.filter { settings.algorithms.contains($0.algorithm) }
            let list = keys.keys.map { "\(Logger.escape($0.keyID)) (\($0.algorithm))" }.joined(separator: ", ")
            var detail = "\(keys.keys.count) key\(keys.keys.count == 1 ? "" : "s") from \(path): \(list)"
            if !keys.ignored.isEmpty { detail += "; ignored: " + keys.ignored.joined(separator: "; ") }
            guard !allowed.isEmpty else {
                return .fail(.credential, "credential keys", detail + "; none uses an algorithm in credential-algorithms ("
                             + settings.algorithms.map(\.rawValue).joined(separator: ", ") + ")",
                             fix: "add the issuer's public key for an allowed algorithm, or widen credential-algorithms")
            }
            return .pass(.credential, "credential keys", detail)
        } catch {
            return .fail(.credential, "credential keys", "credential-keys \(error)",
                         fix: "give credential-keys the issuers' public JWKS or PEM (scangate credential keygen writes one), mode 0644 or 0600, "
                            + "owned by root or \(DoctorFixes.serviceUser); as root, doctor refuses a file of the service user: run it as that user "
                            + "(sudo -u \(DoctorFixes.serviceUser) scangate doctor ...)")
        }
    }

    static func clockRow(_ settings: CredentialSettings, _ status: ClockSyncStatus) -> DoctorRow {
        guard settings.requireSyncedClock else {
            return .pass(.credential, "credential clock", "not required (credential-require-synced-clock = no); the kernel says: "
                         + (status.synchronised ? "synchronised, " : "not synchronised, ") + status.detail)
        }
        if status.synchronised { return .pass(.credential, "credential clock", "synchronised: \(status.detail)") }
        return .fail(.credential, "credential clock", "not synchronised, so every pass is refused as 'clock not synchronised': \(status.detail)",
                     fix: "let NTP set the clock (timedatectl set-ntp true; timedatectl timesync-status) and check the network; "
                        + "a Raspberry Pi before the Pi 5 has no battery clock: add an RTC module (hardware.md)")
    }

    static func storeRow(_ path: String, _ fs: Filesystem) -> DoctorRow {
        let check = "credential replay store"
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dir = directory.isEmpty ? "/" : directory
        let euid = fs.euid()
        // Whose access counts: the service user's when doctor runs as root, doctor's own user otherwise.
        let user: (uid: uid_t, gid: gid_t)
        if euid == 0 {
            guard let u = fs.serviceUser() else {
                return .fail(.credential, check, "there is no user \(DoctorFixes.serviceUser) to keep \(path)",
                             fix: "install the Debian package (it creates the user), or run doctor as the user scangate runs as")
            }
            user = u
        } else {
            user = (euid, getegid())
        }
        let who = euid == 0 ? "user \(DoctorFixes.serviceUser) (uid \(user.uid))" : "uid \(user.uid), the user doctor runs as"
        guard let info = fs.status(dir) else {
            if dir == "/var/lib/scangate" {
                return .pass(.credential, check, "\(dir) does not exist yet; systemd creates it for \(DoctorFixes.serviceUser) when the service starts (StateDirectory=scangate), and \(path) at the first one-time pass")
            }
            return .fail(.credential, check, "the directory \(dir) of \(path) does not exist",
                         fix: "sudo install -d -o \(DoctorFixes.serviceUser) -g \(DoctorFixes.serviceUser) -m 0700 \(dir) (the unit's own is /var/lib/scangate)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return .fail(.credential, check, "\(dir) is not a directory", fix: "point credential-replay-store into a directory of the service user")
        }
        guard writable(info, by: user) else {
            return .fail(.credential, check, "\(dir) (owner uid \(info.st_uid), mode 0\(String(info.st_mode & 0o7777, radix: 8))) is not writable by \(who)",
                         fix: "sudo chown \(DoctorFixes.serviceUser): \(dir) && sudo chmod 0700 \(dir) (never create the store as root)")
        }
        var detail = "\(dir) is writable by \(who)"
        for file in [path, path + ".lock"] {
            guard let f = fs.status(file) else { continue }
            guard f.st_mode & S_IFMT == S_IFREG else {
                return .fail(.credential, check, "\(file) is not a regular file", fix: "move it aside: the store is a plain file")
            }
            guard f.st_uid == user.uid else {
                return .fail(.credential, check, "\(file) is owned by uid \(f.st_uid), not by \(who); the service will refuse it",
                             fix: "sudo chown \(DoctorFixes.serviceUser): \(file) (it was probably created by a run as root)")
            }
            guard f.st_mode & 0o022 == 0 else {
                return .fail(.credential, check, "\(file) has mode 0\(String(f.st_mode & 0o7777, radix: 8)): group or others can write it",
                             fix: "chmod 600 \(file)")
            }
            if file == path {
                detail += "; \(path) holds \(Int(f.st_size) / ReplayStore.recordSize) records"
                    + (Int(f.st_size) % ReplayStore.recordSize == 0 ? "" : " and a torn last one (cut off at the next start)")
            }
        }
        if fs.status(path) == nil { detail += "; \(path) is created at the first one-time pass" }
        return .pass(.credential, check, detail)
    }

    private static func writable(_ info: Glibc.stat, by user: (uid: uid_t, gid: gid_t)) -> Bool {
        let mode = info.st_mode
        if info.st_uid == user.uid { return mode & 0o300 == 0o300 }
        if info.st_gid == user.gid { return mode & 0o030 == 0o030 }
        return mode & 0o003 == 0o003
    }
}
