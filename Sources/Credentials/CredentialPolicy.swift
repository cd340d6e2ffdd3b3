import Components
import Core
import Platform
import Settings

/// The signed-pass check as a ReadPolicy (credential-format): a read whose payload is a valid pass
/// stays accepted, with `credential` set and `doorData` the credential number (or the token, with
/// credential-output = token); anything else is `.rejected(reason:)` with a RefusalReason's text.
///
/// Runs on the decode queue, once per reported read. It owns the replay store (one-time use), whose
/// consume is durable before `judge` returns an accepted read. Nothing here logs a whole token:
/// `TokenFingerprint` gives its first characters and a hash.
public final class CredentialPolicy: ReadPolicy, Sendable {
    public let settings: CredentialSettings
    private let state: PosixMutex<State>
    private let store: ReplayStore?
    /// Anti-passback at this door (the site policy's mode and door role), with its store; nil: off.
    public let passback: PassbackRule?
    /// credential-status-list, loaded at start (nil: status claims are not checked).
    public let statusLists: StatusListSet?
    /// policy-file, loaded at start (nil: no site policy is applied).
    public let sitePolicy: SitePolicyInForce?
    private let stale: PolicyStale
    /// The site's link over MQTT: this kiosk's uses go out through it (nil: not shared).
    private let site: SiteLink?
    private let clock: ClockSyncCheck
    private let now: @Sendable () -> Int64
    private let logger: Logger

    private struct State {
        var verifier: CredentialVerifier
        /// The clock's state at the last read (nil: not looked at yet), so a change is logged once.
        var clockSynchronised: Bool?
    }

    /// - Parameters:
    ///   - store: required when settings.oneTime (open it with `ReplayStore(path:)`).
    ///   - statusLists: the Token Status Lists a pass's status claim is checked against (nil: not checked).
    ///   - passback: anti-passback, with its store (open it with `PassbackStore(path:...)`); nil: off.
    ///   - stale: policy-stale, for a list past its exp or not held.
    ///   - clock: consulted at each read when settings.requireSyncedClock.
    ///   - now: wall-clock seconds since the epoch.
    public init(settings: CredentialSettings, keys: CredentialKeySet, store: ReplayStore?,
                statusLists: StatusListSet? = nil, sitePolicy: SitePolicyInForce? = nil, passback: PassbackRule? = nil,
                stale: PolicyStale = .deny, site: SiteLink? = nil, clock: @escaping ClockSyncCheck = ClockSync.kernel(),
                now: @escaping @Sendable () -> Int64 = { WallClock.nowNanoseconds() / 1_000_000_000 },
                logger: Logger) {
        self.settings = settings
        self.state = PosixMutex(State(verifier: CredentialVerifier(settings: settings, keys: keys), clockSynchronised: nil))
        self.store = store
        self.statusLists = statusLists
        self.sitePolicy = sitePolicy
        self.passback = passback
        self.stale = stale
        self.site = site
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    /// What `scangate run` does at start: validates the settings, loads credential-keys and the status
    /// lists (recording their iat in policy-state-file) and, for one-time use, opens the replay store; when
    /// the site policy asks for anti-passback at a door of role in or out, opens STATE.passback.
    /// Each error names the option or file.
    ///   - site: the site's link over MQTT (anti-passback uses in and out); nil: none.
    ///   - mqttPolicy: site policy documents arrive over MQTT (mqtt-policy): the one kept beside the state
    ///     file is in force even without policy-file.
    public static func make(settings: CredentialSettings, policy: PolicySettings = PolicySettings(), logger: Logger,
                            site link: SiteLink? = nil, mqttPolicy: Bool = false,
                            clock: @escaping ClockSyncCheck = ClockSync.kernel()) throws(UsageError) -> CredentialPolicy {
        try settings.validate()
        try policy.validate()
        let keys: CredentialKeySet
        do throws(KeyFileError) {
            keys = try CredentialKeySet.load(path: settings.keys ?? "")
        } catch {
            throw UsageError("credential-keys " + error.description)
        }
        var statusLists: StatusListSet?
        if let path = settings.statusList {
            let loaded = try StatusListSet.load(path: path, keys: try statusListKeys(settings, credentialKeys: keys),
                                                algorithms: settings.algorithms, statePath: policy.stateFile)
            logger.info("credentials: \(loaded.summary); policy-stale = \(policy.stale.rawValue), rollback guard \(policy.stateFile)")
            for line in loaded.refused { logger.error("credential-status-list refused: \(Logger.escape(line))") }
            for line in loaded.kept { logger.warning("credential-status-list: \(Logger.escape(line))") }
            statusLists = loaded
        }
        var sitePolicy: SitePolicyInForce?
        if policy.file != nil || mqttPolicy {
            let loaded = try SitePolicyInForce.load(path: policy.file, keys: try policyKeys(policy, credentialKeys: keys),
                                                    algorithms: settings.algorithms, statePath: policy.stateFile)
            if let refused = loaded.refused { logger.error("site policy refused: \(Logger.escape(refused))") }
            if loaded.token == nil {
                logger.warning("credentials: no site policy in force; passes are \(policy.stale == .allow ? "accepted without one (policy-stale = allow)" : "refused as policy-stale")")
            } else {
                logger.info("credentials: \(loaded.summary)")
            }
            sitePolicy = loaded
        }
        var store: ReplayStore?
        if settings.oneTime || settings.holderBinding != .off {
            do throws(ReplayStoreError) {
                store = try ReplayStore(path: settings.replayStore)
            } catch {
                throw UsageError(error.description)
            }
        }
        var passback: PassbackRule?
        if let site = sitePolicy?.policy {
            let wanted = PassbackRule.wanted(site)
            if let off = wanted.off { logger.notice("credentials: \(off)") }
            if let direction = wanted.direction {
                let path = PassbackStore.path(stateFile: policy.stateFile)
                do throws(PassbackStoreError) {
                    let opened = try PassbackStore(path: path, timeoutSeconds: site.antipassback.timeoutSeconds,
                                                   now: WallClock.nowNanoseconds() / 1_000_000_000)
                    passback = PassbackRule(mode: site.antipassback.mode, direction: direction, store: opened)
                } catch {
                    throw UsageError(error.description)
                }
                if let link, let store = passback?.store {
                    link.takeUses { use in receive(use, into: store, logger: logger) }
                }
                let timeout = site.antipassback.timeoutSeconds
                logger.info("credentials: anti-passback \(site.antipassback.mode.rawValue) at door role \(site.door.role.rawValue), "
                            + (timeout == 0 ? "no timeout" : "timeout \(timeout) s") + "; \(path) holds \(passback?.store.count ?? 0) numbers")
            }
        }
        if passback == nil { link?.takeUses(nil) }
        let policy = CredentialPolicy(settings: settings, keys: keys, store: store, statusLists: statusLists, sitePolicy: sitePolicy,
                                      passback: passback, stale: policy.stale, site: link,
                                      clock: settings.requireSyncedClock ? clock : ClockSync.fixed(true), logger: logger)
        logger.info("credentials: \(settings.summary); \(keys.summary)")
        for note in keys.ignored { logger.notice("credential-keys: \(note)") }
        if let store { logger.info("credentials: replay store \(store.path) holds \(store.entryCount) passes") }
        return policy
    }

    /// How far ahead of this kiosk's clock another kiosk's use may be stamped: beyond it, it is ignored
    /// (a use in the future counts until its time comes, so one stamped far ahead would bar a pass).
    public static let passbackFutureLeewaySeconds: Int64 = 300

    /// Another kiosk's use, from the site over MQTT: recorded in this kiosk's store when it is newer than
    /// the last use held for that number and still counts (younger than the timeout). Returns whether it
    /// was recorded.
    static func receive(_ use: SiteLink.PassbackUse, into store: PassbackStore,
                        now: Int64 = WallClock.nowNanoseconds() / 1_000_000_000, logger: Logger) -> Bool {
        guard use.at <= now + passbackFutureLeewaySeconds else {
            logger.warning("credentials: anti-passback use from kiosk \(Logger.escape(use.kiosk)) is stamped \(use.at - now) s ahead of this clock; ignored",
                           rateLimitKey: "passback-future")
            return false
        }
        if store.timeoutSeconds > 0 && now - use.at >= store.timeoutSeconds { return false }
        if let last = store.lastUse(use.number), last.at >= use.at { return false }
        switch store.record(use.number, use.entry ? .entry : .exit, at: use.at) {
        case .success: return true
        case .failure(let error):
            logger.error("credentials: \(error); another kiosk's use is not recorded", rateLimitKey: "passback-remote")
            return false
        }
    }

    /// A site policy document received over MQTT, checked with the keys these settings name (policy-keys,
    /// else credential-keys) and recorded in their policy-state-file (see `SitePolicyInForce.deliver`).
    public static func deliverSitePolicy(_ bytes: [UInt8], settings: CredentialSettings, policy: PolicySettings,
                                         zoneDirectory: String = ZoneRules.defaultDirectory) -> SiteLink.PolicyOutcome {
        let keys: CredentialKeySet
        do throws(UsageError) {
            let credentialKeys: CredentialKeySet
            do throws(KeyFileError) {
                credentialKeys = try CredentialKeySet.load(path: settings.keys ?? "")
            } catch {
                throw UsageError("credential-keys " + error.description)
            }
            keys = try policyKeys(policy, credentialKeys: credentialKeys)
        } catch {
            return .refused(error.message)
        }
        return SitePolicyInForce.deliver(bytes, keys: keys, algorithms: settings.algorithms, statePath: policy.stateFile,
                                         zoneDirectory: zoneDirectory)
    }

    /// credential-status-list-keys when set (an error names it), else the credential keys.
    public static func statusListKeys(_ settings: CredentialSettings, credentialKeys: CredentialKeySet) throws(UsageError) -> CredentialKeySet {
        guard let path = settings.statusListKeys else { return credentialKeys }
        do throws(KeyFileError) {
            return try CredentialKeySet.load(path: path)
        } catch {
            throw UsageError("credential-status-list-keys " + error.description)
        }
    }

    /// policy-keys when set (an error names it), else the credential keys.
    public static func policyKeys(_ policy: PolicySettings, credentialKeys: CredentialKeySet) throws(UsageError) -> CredentialKeySet {
        guard let path = policy.keys else { return credentialKeys }
        do throws(KeyFileError) {
            return try CredentialKeySet.load(path: path)
        } catch {
            throw UsageError("policy-keys " + error.description)
        }
    }

    /// SIGHUP: verifies with `keys` from the next read on. The daemon loads them
    /// (`CredentialKeySet.load`) and keeps the old set when that fails.
    public func replaceKeys(_ keys: CredentialKeySet) {
        state.withLock { $0.verifier = CredentialVerifier(settings: settings, keys: keys) }
        logger.info("credentials: reloaded \(keys.summary)")
    }

    /// SIGHUP: reloads credential-keys from its path; on failure keeps the keys in use and returns the
    /// error (for the daemon to log).
    @discardableResult
    public func reloadKeys() -> KeyFileError? {
        do throws(KeyFileError) {
            replaceKeys(try CredentialKeySet.load(path: settings.keys ?? ""))
            return nil
        } catch {
            logger.error("credentials: reload failed, keeping the keys in use: credential-keys \(error)")
            return error
        }
    }

    public var keys: CredentialKeySet { state.withLock { $0.verifier.keys } }

    /// Judges the payload as a pass. Whatever the verdict, what comes after the policies sees the
    /// payload's fingerprint (`TokenFingerprint`) as the read's data, never the token: the report outputs
    /// (the JSON line on stdout, which systemd puts in the journal; the journal line; MQTT and its spool
    /// on disk) would otherwise carry a bearer secret - a pass refused as `wrong-audience` or `clock not
    /// synchronised` is still good at another door or a minute later. Door outputs get `doorData`: the
    /// number, or with credential-output = token the token itself.
    public func judge(_ event: inout ReadEvent) {
        guard event.verdict.isAccepted, !event.payloadConcealed else { return }
        let payload = event.symbol.data
        var verdict = Verdict.accepted
        var credential: CredentialInfo?
        var doorData: [UInt8] = []
        switch evaluate(payload) {
        case .success(let pass):
            credential = pass.info
            doorData = settings.output == .number ? Array(pass.number.utf8) : payload
        case .failure(let refusal):
            verdict = .rejected(reason: refusal.reason.rawValue)
        }
        event = Self.concealed(event, verdict: verdict, credential: credential, doorData: doorData)
    }

    /// A read that another policy refused before this one saw it (a payload filter) is still a possible
    /// pass: what the outputs, the journal and MQTT get is its fingerprint, as for a pass judged here.
    public func conceal(_ event: inout ReadEvent) {
        guard !event.payloadConcealed else { return }
        event = Self.concealed(event, verdict: event.verdict, credential: nil, doorData: [])
    }

    static func concealed(_ event: ReadEvent, verdict: Verdict, credential: CredentialInfo?, doorData: [UInt8]) -> ReadEvent {
        let shown = DecodedSymbol(symbology: event.symbol.symbology, data: Array(TokenFingerprint.describe(event.symbol.data).utf8),
                                  bounds: event.symbol.bounds)
        var out = ReadEvent(seq: event.seq, wallTimeNanoseconds: event.wallTimeNanoseconds, symbol: shown, frame: event.frame,
                            dequeuedAt: event.dequeuedAt, emittedAt: event.emittedAt, verdict: verdict, credential: credential,
                            doorData: doorData, outputs: event.outputs)
        out.payloadConcealed = true
        return out
    }

    /// The whole check for one payload: the clock, the pass, its status, the site policy, anti-passback's
    /// look-up, one-time use, then anti-passback's record (only for a read accepted so far; under hard a
    /// record that fails refuses the read, though a one-time pass is consumed by then). Logs the outcome
    /// (the clock refusal only when the clock's state changes).
    public func evaluate(_ payload: [UInt8]) -> Result<VerifiedPass, Refusal> {
        if settings.requireSyncedClock {
            let status = clock()
            let changed = state.withLock { s -> Bool in
                defer { s.clockSynchronised = status.synchronised }
                return s.clockSynchronised != status.synchronised
            }
            if !status.synchronised {
                if changed {
                    logger.warning("credentials: every pass is refused as 'clock not synchronised' until the clock is synchronised (\(status.detail))")
                }
                return .failure(Refusal(.clockNotSynchronised, status.detail))
            }
            if changed {
                logger.notice("credentials: clock synchronised (\(status.detail)); passes are checked")
            }
        }
        let verifier = state.withLock { $0.verifier }
        let time = now()
        var result = verifier.verify(payload, now: time)
        // The status before one-time use: a revoked pass is not consumed.
        if case .success(let pass) = result, let reference = pass.status, let statusLists {
            switch statusLists.check(reference, now: time, stale: stale) {
            case .success(let note):
                if let note { logger.warning("credentials: \(Logger.escape(note))") }
            case .failure(let refusal):
                result = .failure(refusal)
            }
        }
        // The site policy (deny list, hours) before one-time use too: a pass refused here is not consumed.
        if case .success(let pass) = result, let sitePolicy {
            switch sitePolicy.check(pass, now: time, stale: stale) {
            case .success(let note):
                if let note { logger.warning("credentials: \(Logger.escape(note))") }
            case .failure(let refusal):
                result = .failure(refusal)
            }
        }
        // Anti-passback's look-up before one-time use (a passback refused is not consumed); its record
        // after, once the read is accepted.
        var soft: PassbackStore.Use?
        if case .success(let pass) = result, let passback, let use = passback.passback(Array(pass.number.utf8), now: time) {
            if passback.mode == .hard {
                let (age, overflow) = time.subtractingReportingOverflow(use.at)
                result = .failure(Refusal(.passback, "number \(Logger.escape(pass.number)) \(use.direction.verb) at \(CredentialVerifier.time(Double(use.at)))"
                                          + (overflow ? "" : " (\(age) s ago)") + " and has not " + (use.direction == .entry ? "exited" : "entered") + " since"
                                          + (passback.store.timeoutSeconds == 0 ? "" : " (timeout \(passback.store.timeoutSeconds) s)")))
            } else {
                soft = use
            }
        }
        // The presentation before the pass: a presentation shown again is refused without using the pass.
        if case .success(let pass) = result, let presentation = pass.presentation {
            result = consume(presentation, of: pass, now: time)
        }
        if case .success(let pass) = result, settings.oneTime {
            result = consume(pass, now: time)
        }
        if case .success(var pass) = result, let passback {
            switch passback.store.record(Array(pass.number.utf8), passback.direction, at: time) {
            case .success:
                break
            case .failure(let error):
                if passback.mode == .hard {
                    result = .failure(Refusal(.replayStoreFailed, "\(error); the pass is refused (anti-passback hard fails closed)"))
                } else {
                    logger.error("credentials: \(error); the pass is accepted (anti-passback soft) without its use recorded")
                }
            }
            if case .success = result, let site {
                site.share(SiteLink.PassbackUse(door: sitePolicy?.policy?.door.id ?? "", number: Array(pass.number.utf8),
                                                entry: passback.direction == .entry, at: time,
                                                keepSeconds: passback.store.timeoutSeconds))
                if site.view == .offline {
                    pass.passbackOffline = true
                    result = .success(pass)
                }
            }
            if let soft, case .success = result {
                pass.passback = true
                result = .success(pass)
                logger.notice("credentials: passback (soft): number \(Logger.escape(pass.number)) \(soft.direction.verb) at \(CredentialVerifier.time(Double(soft.at)))")
            }
        }
        switch result {
        case .success(let pass):
            logger.info("credential accepted: \(pass.format.rawValue) number \(Logger.escape(pass.number)) kid \(Logger.escape(pass.keyID))"
                        + (pass.tokenID.map { " jti \(Logger.escape($0))" } ?? "") + " exp \(CredentialVerifier.time(pass.expiresAt))"
                        + (pass.status.map { " status idx \($0.index) of \(JSONText.asciiString($0.uri))" } ?? ""))
        case .failure(let refusal):
            let line = "credential refused: \(refusal.reason.rawValue) (\(TokenFingerprint.describe(payload))): \(Logger.escape(refusal.detail))"
            if refusal.reason == .replayStoreFailed { logger.error(line) } else { logger.notice(line) }
        }
        return result
    }

    /// credential-holder-binding: each presentation is accepted once, recorded in the replay store (its
    /// key is the SHA-256 of the key-binding JWT, apart from every pass's) until its window has passed.
    private func consume(_ presentation: PresentationID, of pass: VerifiedPass, now time: Int64) -> Result<VerifiedPass, Refusal> {
        guard let store else {
            return .failure(Refusal(.replayStoreFailed, "credential-holder-binding is on but no replay store is open"))
        }
        let key: ReplayKey
        do throws(CryptoError) {
            key = try ReplayKey.make(presentation: presentation.digest)
        } catch {
            return .failure(Refusal(.replayStoreFailed, "cannot hash the presentation: \(error)"))
        }
        switch store.consume(key, holdUntil: presentation.holdUntil, now: time) {
        case .fresh: return .success(pass)
        case .replayed: return .failure(Refusal(.presentationReplayed, "this presentation of number \(Logger.escape(pass.number)) was already accepted on this kiosk"))
        case .failed(let why): return .failure(Refusal(.replayStoreFailed, "\(store.path): \(why); the presentation is refused (fail closed)"))
        }
    }

    private func consume(_ pass: VerifiedPass, now time: Int64) -> Result<VerifiedPass, Refusal> {
        guard let id = pass.tokenIDBytes else {
            return .failure(Refusal(.malformed, "the pass has no \(pass.format == .jwt ? "jti" : "cti (7)"); credential-one-time needs one to use it once"))
        }
        guard let store else {
            return .failure(Refusal(.replayStoreFailed, "credential-one-time is on but no replay store is open"))
        }
        let key: ReplayKey
        do throws(CryptoError) {
            key = try ReplayKey.make(format: pass.format, issuer: pass.issuer, tokenID: id)
        } catch {
            return .failure(Refusal(.replayStoreFailed, "cannot hash the jti: \(error)"))
        }
        // Held past exp by the largest leeway any consumer of the file may apply, not this one's: a gate
        // with leeway 0 and a daemon with leeway 30 share one store.
        switch store.consume(key, holdUntil: ReplayStore.holdUntil(expiresAt: pass.expiresAtSeconds), now: time) {
        case .fresh: return .success(pass)
        case .replayed: return .failure(Refusal(.replayed, "jti \(pass.tokenID ?? "") was already used on this kiosk"))
        case .failed(let why): return .failure(Refusal(.replayStoreFailed, "\(store.path): \(why); the pass is refused (fail closed)"))
        }
    }
}

/// How logs name a token without giving it away (an unused pass is a bearer secret): its first 8
/// characters, its length and the first 8 hex digits of its SHA-256.
public enum TokenFingerprint {
    public static func describe(_ payload: [UInt8]) -> String {
        let head = Logger.escape(bytes: Array(payload.prefix(8)))
        let hash = (try? CryptoDigest.sha256(payload)).map { Hex.string($0.prefix(4), lowercase: true) } ?? "?"
        return "\(head)... \(payload.count) bytes, sha256 \(hash)"
    }
}

/// The `"credential":{...}` member of the JSON event line.
public enum CredentialJSON {
    /// `{"format":"jwt","number":"12345","kid":"site-2025","jti":"a1b2"|null,"exp":1764590000}`, and
    /// `"passback":true` only when anti-passback (soft) reported the read, and `"passback_view":"offline"`
    /// only when anti-passback is shared over MQTT and the broker was away (this kiosk's own view decided).
    public static func object(_ info: CredentialInfo) -> String {
        var members = [
            ("format", JSONText.string(info.format)),
            ("number", JSONText.string(info.number)),
            ("kid", JSONText.string(info.keyID)),
            ("jti", info.tokenID.map { JSONText.string($0) } ?? "null"),
            ("exp", String(info.expiresAt)),
        ]
        if info.passback { members.append(("passback", "true")) }
        if info.passbackOffline { members.append(("passback_view", "\"offline\"")) }
        return JSONText.object(members)
    }
}
