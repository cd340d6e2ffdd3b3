import Core
import Platform

/// What the daemon tells the fleet about itself: the provider closure the MQTT output calls for the
/// retained `<prefix>/state` (on change, and every `mqtt-state-interval-s`). The daemon fills it from its
/// own counters at integration; the closure runs on the MQTT session thread and must not block.
public struct MQTTState: Sendable, Equatable {
    public var status: DaemonStatus
    public var version: String
    public var uptimeSeconds: Double
    /// The camera and each output or device (the MQTT output adds its own link and spool).
    public var components: [ComponentHealth]
    public var counters: MQTTCounters
    /// The last read's wall-clock time, nanoseconds since the epoch.
    public var lastReadWallNanoseconds: Int64?

    public init(status: DaemonStatus, version: String, uptimeSeconds: Double, components: [ComponentHealth] = [],
                counters: MQTTCounters = MQTTCounters(), lastReadWallNanoseconds: Int64? = nil) {
        self.status = status
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.components = components
        self.counters = counters
        self.lastReadWallNanoseconds = lastReadWallNanoseconds
    }

    /// What counts as a change worth publishing at once: the status and each component's state and
    /// last error (not counters or uptime, which go out with the interval).
    public var changeKey: String {
        ([status.rawValue] + components.map { "\($0.name)=\($0.state.rawValue):\($0.lastError ?? "")" }).joined(separator: "|")
    }
}

public struct MQTTCounters: Sendable, Equatable {
    public var framesCaptured: UInt64
    public var framesDecoded: UInt64
    public var framesDropped: UInt64
    /// Reads reported, and how many of them were rejected by the policies.
    public var reads: UInt64
    public var rejected: UInt64

    public init(framesCaptured: UInt64 = 0, framesDecoded: UInt64 = 0, framesDropped: UInt64 = 0, reads: UInt64 = 0, rejected: UInt64 = 0) {
        self.framesCaptured = framesCaptured
        self.framesDecoded = framesDecoded
        self.framesDropped = framesDropped
        self.reads = reads
        self.rejected = rejected
    }
}

/// The MQTT output's own link and spool, as `state`, health, `scangate status` and metrics show it.
public struct MQTTLinkStatus: Sendable, Equatable {
    public var connected: Bool
    /// "connected to broker h:1883 as k1" or "not connected: <error>; next attempt in 8 s".
    public var detail: String
    public var lastError: String?
    public var lastErrorAt: Int64?
    public var spool: SpoolDepth
    /// Events the broker acknowledged since start.
    public var acknowledged: UInt64
    /// Events dropped before they reached the spool (the in-memory queue in front of it was full).
    public var queueDropped: UInt64
    /// While not connected: the seconds until the next attempt (the backoff); nil while connected.
    public var retryInSeconds: Int?
    /// Events dropped because the spool's file system had no room for them (a full disk).
    public var noSpaceDropped: UInt64 = 0

    public var dropped: UInt64 { spool.dropped + queueDropped + noSpaceDropped }
}

enum MQTTJSON {
    static func component(_ c: ComponentHealth) -> String {
        JSONText.object([
            ("name", JSONText.string(c.name)),
            ("state", JSONText.string(c.state.rawValue)),
            ("detail", JSONText.string(c.detail)),
            ("last_error", c.lastError.map(JSONText.string) ?? "null"),
            ("last_error_time", c.lastErrorAt.map { JSONText.string(WallClock.rfc3339(nanoseconds: $0)) } ?? "null"),
            ("sent", String(c.sent)),
            ("errors", String(c.errors)),
        ])
    }

    /// The retained state document.
    static func state(_ s: MQTTState, kiosk: String, link: MQTTLinkStatus, wallTimeNanoseconds: Int64) -> String {
        JSONText.object([
            ("kiosk", JSONText.string(kiosk)),
            ("time", JSONText.string(WallClock.rfc3339(nanoseconds: wallTimeNanoseconds))),
            ("status", JSONText.string(s.status.rawValue)),
            ("version", JSONText.string(s.version)),
            ("uptime_s", JSONText.number(s.uptimeSeconds, decimals: 1)),
            ("components", "[" + s.components.map(component).joined(separator: ",") + "]"),
            ("counters", JSONText.object([
                ("frames_captured", String(s.counters.framesCaptured)),
                ("frames_decoded", String(s.counters.framesDecoded)),
                ("frames_dropped", String(s.counters.framesDropped)),
                ("reads", String(s.counters.reads)),
                ("rejected", String(s.counters.rejected)),
            ])),
            ("last_read", s.lastReadWallNanoseconds.map { JSONText.string(WallClock.rfc3339(nanoseconds: $0)) } ?? "null"),
            ("mqtt", JSONText.object([
                ("connected", link.connected ? "true" : "false"),
                ("spool_events", String(link.spool.records)),
                ("spool_bytes", String(link.spool.bytes)),
                ("spool_dropped_full", String(link.spool.droppedFull)),
                ("spool_dropped_expired", String(link.spool.droppedExpired)),
                ("spool_dropped_damaged", String(link.spool.droppedDamaged)),
                ("spool_dropped_refused", String(link.spool.droppedRefused)),
                ("spool_dropped_no_space", String(link.noSpaceDropped)),
                ("queue_dropped", String(link.queueDropped)),
                ("acknowledged", String(link.acknowledged)),
            ])),
        ])
    }
}
