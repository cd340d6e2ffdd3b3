/// Why a pass is refused. `rawValue` is what the JSON line (`"rejected":"..."`), the log and
/// `scangate credential verify` print.
public enum RefusalReason: String, CaseIterable, Sendable {
    /// The signature does not verify with the key the token names (or, without a kid, with any key of its type).
    case badSignature = "bad-signature"
    /// The token's kid is not among credential-keys (or, without a kid, no key of its algorithm is).
    case unknownKey = "unknown-key"
    /// `alg` is not EdDSA/Ed25519/ES256 (COSE -8/-19/-7/-9), is outside credential-algorithms, or does
    /// not match the kind of key its kid names. `none` and HS* always land here.
    case algorithmNotAllowed = "algorithm-not-allowed"
    /// `now` is at or after exp + credential-leeway-s.
    case expired
    /// `now` + credential-leeway-s is before nbf.
    case notYetValid = "not-yet-valid"
    /// credential-audience is set and aud does not name it, or aud is present and credential-audience is not set.
    case wrongAudience = "wrong-audience"
    /// credential-issuer is set and iss is missing or different.
    case wrongIssuer = "wrong-issuer"
    /// exp minus the start of validity (nbf, else iat, else now) is more than credential-max-lifetime-s.
    case lifetimeTooLong = "lifetime-too-long"
    /// credential-one-time: this pass's jti (CWT: cti) was already accepted on this kiosk.
    case replayed
    /// credential-status-list: the pass's entry in its Token Status List is not 0 (VALID): 1 INVALID,
    /// 2 SUSPENDED or any other value; or its idx lies beyond the list. policy-file: the pass's number
    /// is on the policy's deny list.
    case revoked
    /// policy-file: the pass's group (its `grp` claim, else `default`) has no window of its schedule open
    /// at this moment in the site's time zone, today is one of the policy's holidays, or the pass names a
    /// group the policy does not have.
    case outsideSchedule = "outside-schedule"
    /// credential-status-list: the pass names a status list that is past its exp (policy-stale = deny)
    /// or that this kiosk does not hold (missing, refused, rolled back; policy-stale = deny or allow-known).
    /// policy-file: the site policy in force is past its exp (deny), or none is held (deny, allow-known).
    case policyStale = "policy-stale"
    /// policy-file, antipassback mode hard: the pass's last accepted use on this kiosk was in this door's
    /// direction (role in: it entered and has not exited; role out: it exited and has not entered) less
    /// than timeout_s ago (timeout_s 0: at any time). Doors of role both do not check.
    case passback
    /// credential-holder-binding: the presentation's iat is more than credential-presentation-window-s
    /// away from this kiosk's clock.
    case stalePresentation = "stale-presentation"
    /// credential-holder-binding: the presentation's aud is not credential-audience (made for another door).
    case wrongDoor = "wrong-door"
    /// credential-holder-binding: the key-binding JWT does not verify with the holder key the pass names
    /// (cnf), or it was made for another presentation (sd_hash).
    case badHolderSignature = "bad-holder-signature"
    /// The pass names a holder key but came without a key-binding JWT (a screenshot of the pass itself),
    /// or credential-holder-binding is require and the pass names no holder key.
    case holderBindingRequired = "holder-binding-required"
    /// credential-holder-binding: this presentation was already accepted on this kiosk.
    case presentationReplayed = "presentation-replayed"
    /// Not a pass of an enabled format, or one that breaks its format's rules (syntax, sizes, duplicate
    /// members, `crit`, a missing or mistyped claim, no jti while credential-one-time is on).
    case malformed
    /// credential-require-synced-clock: the kernel does not report the clock synchronised.
    case clockNotSynchronised = "clock not synchronised"
    /// credential-one-time: the replay store could not record the pass, so it is refused (fail closed).
    /// Anti-passback hard: the anti-passback store (STATE.passback) could not record the use (fail closed).
    /// Not in the list of reasons: a kiosk-side fault must not read as a fault of the pass.
    case replayStoreFailed = "replay store failed"
}

/// A refusal: the reason, and one line saying what exactly was wrong, for the log (never the token).
public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: RefusalReason
    public let detail: String

    public init(_ reason: RefusalReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
