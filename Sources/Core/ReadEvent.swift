import Platform

/// A code the daemon reports: what every output receives.
public struct ReadEvent: Sendable {
    /// 1, 2, … per daemon run.
    public let seq: UInt64
    /// Wall-clock time of emission, nanoseconds since the epoch.
    public let wallTimeNanoseconds: Int64
    public let symbol: DecodedSymbol
    /// The frame the read came from.
    public let frame: UInt64
    /// When that frame was dequeued (this machine's monotonic clock) and when the event was emitted.
    public let dequeuedAt: MonotonicInstant
    public let emittedAt: MonotonicInstant
    /// The policies' verdict (payload filters, signed passes). A rejected read goes to no door output.
    public var verdict: Verdict
    /// The verified pass the payload carried (credential-format), when a credential policy accepted it.
    public var credential: CredentialInfo?
    /// What door outputs send: the payload's bytes, or the verified pass's number (credential-output = number).
    public var doorData: [UInt8]
    /// Each door output's verdict, in output order; empty until the door outputs were offered the read.
    public var outputs: [OutputVerdict]
    /// True once a policy replaced `symbol.data` with a fingerprint (a possible signed pass).
    public var payloadConcealed = false

    public init(seq: UInt64, wallTimeNanoseconds: Int64, symbol: DecodedSymbol, frame: UInt64,
                dequeuedAt: MonotonicInstant, emittedAt: MonotonicInstant, verdict: Verdict = .accepted,
                credential: CredentialInfo? = nil, doorData: [UInt8]? = nil, outputs: [OutputVerdict] = []) {
        self.seq = seq
        self.wallTimeNanoseconds = wallTimeNanoseconds
        self.symbol = symbol
        self.frame = frame
        self.dequeuedAt = dequeuedAt
        self.emittedAt = emittedAt
        self.verdict = verdict
        self.credential = credential
        self.doorData = doorData ?? symbol.data
        self.outputs = outputs
    }

    public var latencyMilliseconds: Double { emittedAt.milliseconds(since: dequeuedAt) }

    /// Age at `now`, for TTL checks.
    public func ageMilliseconds(at now: MonotonicInstant = .now()) -> Double { now.milliseconds(since: emittedAt) }

    public func with(verdict: Verdict) -> ReadEvent {
        var copy = self
        copy.verdict = verdict
        return copy
    }

    /// The door outputs that refused this read, with their reasons.
    public var refusals: [(output: String, reason: String)] {
        outputs.compactMap { v in
            if case .refused(let reason) = v.offer { return (v.output, reason) }
            return nil
        }
    }

    /// True when at least one door output took the read.
    public var reachedADoorOutput: Bool { outputs.contains { $0.offer.isTaken } }
}

public enum Verdict: Equatable, Sendable {
    case accepted
    /// Sent to no door output; error feedback; the reason is logged and put in JSON.
    case rejected(reason: String)

    public var isAccepted: Bool { self == .accepted }
}

/// A signed pass that a credential policy verified: what the JSON line, the log and the door outputs
/// may know of it. Never the token itself, which is a bearer secret until it expires.
public struct CredentialInfo: Equatable, Sendable {
    /// "jwt" or "cwt".
    public var format: String
    /// The claim named by credential-number-claim (default `sub`): the number a door output sends.
    public var number: String
    /// The key that verified the signature.
    public var keyID: String
    /// The pass's `jti`, when it has one.
    public var tokenID: String?
    /// `exp`, seconds since the epoch.
    public var expiresAt: Int64
    /// Anti-passback soft: the read was accepted although the pass's last use on this kiosk was in the
    /// same direction within the timeout (it entered and did not exit, or exited twice).
    public var passback: Bool
    /// Anti-passback is shared with the site's kiosks over MQTT, but the broker was not connected: the
    /// read was decided on this kiosk's own view (its uses and those received before the link went down).
    public var passbackOffline = false

    public init(format: String, number: String, keyID: String, tokenID: String?, expiresAt: Int64, passback: Bool = false) {
        self.format = format
        self.number = number
        self.keyID = keyID
        self.tokenID = tokenID
        self.expiresAt = expiresAt
        self.passback = passback
    }
}

/// What the daemon is doing, for the status LED, sd_notify STATUS= and logs.
public enum DaemonStatus: String, Sendable, Equatable, CaseIterable {
    case starting, scanning, cameraLost = "camera lost", paused, stopping
    /// Scanning, but a door controller that can tell (an OSDP panel) is not talking to the reader.
    case controllerOffline = "controller offline"
}
