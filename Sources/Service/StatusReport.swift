import Core
import Platform

/// What `scangate status` shows: one JSON document the status socket answers with. The daemon fills it
/// from its own counters and each component's health (through the provider closure it gives StatusSocket).
public struct StatusReport: Sendable, Equatable {
    public struct Frames: Sendable, Equatable {
        public var captured: UInt64
        public var decoded: UInt64
        public var dropped: UInt64
        public init(captured: UInt64 = 0, decoded: UInt64 = 0, dropped: UInt64 = 0) {
            self.captured = captured
            self.decoded = decoded
            self.dropped = dropped
        }
    }

    public struct Reads: Sendable, Equatable {
        public var reported: UInt64
        public var rejected: UInt64
        /// Wall-clock nanoseconds of the last read.
        public var lastAt: Int64?
        public init(reported: UInt64 = 0, rejected: UInt64 = 0, lastAt: Int64? = nil) {
            self.reported = reported
            self.rejected = rejected
            self.lastAt = lastAt
        }
    }

    /// A named count of things lost: "stdout events", "mqtt spool".
    public struct Drop: Sendable, Equatable {
        public var name: String
        public var count: UInt64
        public init(name: String, count: UInt64) {
            self.name = name
            self.count = count
        }
    }

    /// The controller link (OSDP panel polling, ...).
    public struct Link: Sendable, Equatable {
        public var name: String
        public var online: Bool
        public var detail: String
        public init(name: String, online: Bool, detail: String) {
            self.name = name
            self.online = online
            self.detail = detail
        }
    }

    public struct MQTT: Sendable, Equatable {
        public var connected: Bool
        public var detail: String
        public var spoolEvents: UInt64
        public var spoolBytes: Int
        public var dropped: UInt64
        /// Of `dropped`: the events the spool's file system had no room for (a full disk).
        public var droppedNoSpace: UInt64
        public init(connected: Bool, detail: String, spoolEvents: UInt64, spoolBytes: Int, dropped: UInt64, droppedNoSpace: UInt64 = 0) {
            self.connected = connected
            self.detail = detail
            self.spoolEvents = spoolEvents
            self.spoolBytes = spoolBytes
            self.dropped = dropped
            self.droppedNoSpace = droppedNoSpace
        }
    }

    /// A Token Status List in force (credential-status-list): what the daemon decides revocation with.
    public struct StatusList: Sendable, Equatable {
        public var uri: String
        public var entries: Int
        /// Its `iat` and `exp`, seconds since the epoch.
        public var issuedAt: Int64
        public var expiresAt: Int64
        /// True when it is the copy kept beside the state file (no file gave a usable list for its uri).
        public var kept: Bool
        public init(uri: String, entries: Int, issuedAt: Int64, expiresAt: Int64, kept: Bool) {
            self.uri = uri
            self.entries = entries
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
            self.kept = kept
        }
    }

    public var status: String
    public var version: String
    public var pid: Int32
    public var uptimeSeconds: Double
    public var frames: Frames
    public var reads: Reads
    public var drops: [Drop]
    /// The camera and every output and feedback device.
    public var devices: [ComponentHealth]
    public var controller: Link?
    public var mqtt: MQTT?
    /// Rejected reads by reason: a pass's refusal reason (`revoked`, `policy-stale`, `expired`, ...) or
    /// `payload-filter`. Only reasons that occurred.
    public var rejections: [Drop] = []
    /// The status lists in force; empty when credential-status-list is not set.
    public var statusLists: [StatusList] = []
    /// The site policy in force (policy-file); nil when none is set or none is held.
    public var sitePolicy: SitePolicy? = nil
    /// Anti-passback uses shared with the site over MQTT (mqtt-site-topic); nil when not shared.
    public var passbackSharing: PassbackSharing? = nil
    /// What the camera and the decoder see now (figures of the newest frame); nil before the first frame
    /// or from a daemon without it.
    public var view: View? = nil

    /// The site link for anti-passback: whether the broker is there, and the uses that went each way.
    public struct PassbackSharing: Sendable, Equatable {
        /// `shared` (the broker is connected) or `offline` (decisions rest on this kiosk's view).
        public var view: String
        /// This kiosk's uses handed to the broker, and other kiosks' uses received (and of those, the
        /// ones newer than what this kiosk held, recorded).
        public var sent: UInt64
        public var received: UInt64
        public var applied: UInt64
        /// Own uses held in memory until the broker is back; `dropped`: beyond the bound, lost.
        public var waiting: UInt64
        public var dropped: UInt64
        public init(view: String, sent: UInt64, received: UInt64, applied: UInt64, waiting: UInt64, dropped: UInt64) {
            self.view = view
            self.sent = sent
            self.received = received
            self.applied = applied
            self.waiting = waiting
            self.dropped = dropped
        }
    }

    /// The site policy the daemon decides with: its version, times and where it came from.
    public struct SitePolicy: Sendable, Equatable {
        public var version: Int64
        public var issuedAt: Int64
        public var expiresAt: Int64
        /// True when it is the copy kept beside the state file (policy-file was missing or refused).
        public var kept: Bool
        public init(version: Int64, issuedAt: Int64, expiresAt: Int64, kept: Bool) {
            self.version = version
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
            self.kept = kept
        }
    }

    public init(status: String, version: String, pid: Int32, uptimeSeconds: Double, frames: Frames = Frames(),
                reads: Reads = Reads(), drops: [Drop] = [], devices: [ComponentHealth] = [], controller: Link? = nil, mqtt: MQTT? = nil,
                rejections: [Drop] = [], statusLists: [StatusList] = []) {
        self.rejections = rejections
        self.statusLists = statusLists
        self.status = status
        self.version = version
        self.pid = pid
        self.uptimeSeconds = uptimeSeconds
        self.frames = frames
        self.reads = reads
        self.drops = drops
        self.devices = devices
        self.controller = controller
        self.mqtt = mqtt
    }

    // MARK: - JSON

    public var json: String {
        func time(_ t: Int64?) -> String { t.map { JSONText.string(WallClock.rfc3339(nanoseconds: $0)) } ?? "null" }
        let devices = self.devices.map { d in
            JSONText.object([
                ("name", JSONText.string(d.name)),
                ("state", JSONText.string(d.state.rawValue)),
                ("detail", JSONText.string(d.detail)),
                ("last_error", d.lastError.map(JSONText.string) ?? "null"),
                ("last_error_time", time(d.lastErrorAt)),
                ("sent", String(d.sent)),
                ("errors", String(d.errors)),
                ("alarms", JSONText.object(d.alarms.map { ($0.name, $0.active ? "true" : "false") })),
            ])
        }
        return JSONText.object([
            ("status", JSONText.string(status)),
            ("version", JSONText.string(version)),
            ("pid", String(pid)),
            ("uptime_s", JSONText.number(uptimeSeconds, decimals: 1)),
            ("frames", JSONText.object([("captured", String(frames.captured)), ("decoded", String(frames.decoded)),
                                        ("dropped", String(frames.dropped))])),
            ("reads", JSONText.object([("reported", String(reads.reported)), ("rejected", String(reads.rejected)),
                                       ("last", time(reads.lastAt)),
                                       ("rejected_by_reason", JSONText.object(rejections.map { ($0.name, String($0.count)) }))])),
            ("drops", JSONText.object(drops.map { ($0.name, String($0.count)) })),
            ("devices", "[" + devices.joined(separator: ",") + "]"),
            ("controller", controller.map { c in
                JSONText.object([("name", JSONText.string(c.name)), ("online", c.online ? "true" : "false"),
                                 ("detail", JSONText.string(c.detail))])
            } ?? "null"),
            ("mqtt", mqtt.map { m in
                JSONText.object([("connected", m.connected ? "true" : "false"), ("detail", JSONText.string(m.detail)),
                                 ("spool_events", String(m.spoolEvents)), ("spool_bytes", String(m.spoolBytes)),
                                 ("dropped", String(m.dropped)), ("dropped_no_space", String(m.droppedNoSpace))])
            } ?? "null"),
            ("status_lists", "[" + statusLists.map { l in
                JSONText.object([("uri", JSONText.string(l.uri)), ("entries", String(l.entries)), ("iat", String(l.issuedAt)),
                                 ("exp", String(l.expiresAt)), ("kept", l.kept ? "true" : "false")])
            }.joined(separator: ",") + "]"),
            ("site_policy", sitePolicy.map { p in
                JSONText.object([("ver", String(p.version)), ("iat", String(p.issuedAt)), ("exp", String(p.expiresAt)),
                                 ("kept", p.kept ? "true" : "false")])
            } ?? "null"),
            ("passback_sharing", passbackSharing.map { p in
                JSONText.object([("view", JSONText.string(p.view)), ("sent", String(p.sent)), ("received", String(p.received)),
                                 ("applied", String(p.applied)), ("waiting", String(p.waiting)), ("dropped", String(p.dropped))])
            } ?? "null"),
            ("view", view?.json ?? "null"),
        ])
    }

    /// Reads the document back (what `scangate status` does with the socket's answer).
    public init(json text: [UInt8]) throws(UsageError) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(text, maxBytes: 1 << 20, maxDepth: 8)
        } catch {
            throw UsageError("the daemon's status is not valid JSON: \(error)")
        }
        let r = StatusJSONReader(value)
        status = try r.string("status")
        version = try r.string("version")
        pid = Int32(truncatingIfNeeded: try r.int("pid"))
        uptimeSeconds = try r.double("uptime_s")
        let f = try r.object("frames")
        frames = Frames(captured: try f.uint("captured"), decoded: try f.uint("decoded"), dropped: try f.uint("dropped"))
        let rd = try r.object("reads")
        reads = Reads(reported: try rd.uint("reported"), rejected: try rd.uint("rejected"), lastAt: try rd.time("last"))
        // Absent from an older daemon's answer.
        if let byReason = try rd.optionalObject("rejected_by_reason") {
            rejections = try byReason.members.map { (key, value) throws(UsageError) in
                guard let n = value.numberValue?.int64, n >= 0 else { throw UsageError("the daemon's status: reads.rejected_by_reason.\(key) is not a count") }
                return Drop(name: key, count: UInt64(n))
            }
        }
        if let lists = r.value["status_lists"] {
            guard let items = lists.arrayValue else { throw UsageError("the daemon's status: \"status_lists\" is not an array") }
            statusLists = try items.map { v throws(UsageError) in
                let l = StatusJSONReader(v)
                return StatusList(uri: try l.string("uri"), entries: Int(clamping: try l.uint("entries")), issuedAt: try l.int("iat"),
                                  expiresAt: try l.int("exp"), kept: try l.bool("kept"))
            }
        }
        if let p = try r.optionalObject("site_policy") {
            sitePolicy = SitePolicy(version: try p.int("ver"), issuedAt: try p.int("iat"), expiresAt: try p.int("exp"), kept: try p.bool("kept"))
        }
        if let p = try r.optionalObject("passback_sharing") {
            passbackSharing = PassbackSharing(view: try p.string("view"), sent: try p.uint("sent"), received: try p.uint("received"),
                                              applied: try p.uint("applied"), waiting: try p.uint("waiting"), dropped: try p.uint("dropped"))
        }
        if let v = try r.optionalObject("view") { view = try View(v) }
        drops = try r.object("drops").members.map { (key, value) throws(UsageError) in
            guard let n = value.numberValue?.int64, n >= 0 else { throw UsageError("the daemon's status: drops.\(key) is not a count") }
            return Drop(name: key, count: UInt64(n))
        }
        devices = try r.array("devices").map { v throws(UsageError) in
            let d = StatusJSONReader(v)
            guard let state = ComponentHealth.State(rawValue: try d.string("state")) else {
                throw UsageError("the daemon's status: a device state is not ok, degraded or down")
            }
            return ComponentHealth(name: try d.string("name"), state: state, detail: try d.string("detail"),
                                   lastError: try d.optionalString("last_error"), lastErrorAt: try d.time("last_error_time"),
                                   sent: try d.uint("sent"), errors: try d.uint("errors"),
                                   alarms: try (d.optionalObject("alarms")?.members ?? []).map { m throws(UsageError) in
                                       guard let active = m.value.boolValue else {
                                           throw UsageError("the daemon's status: alarm \"\(m.key)\" is not true or false")
                                       }
                                       return HealthAlarm(m.key, active: active)
                                   })
        }
        if let c = try r.optionalObject("controller") {
            controller = Link(name: try c.string("name"), online: try c.bool("online"), detail: try c.string("detail"))
        }
        if let m = try r.optionalObject("mqtt") {
            mqtt = MQTT(connected: try m.bool("connected"), detail: try m.string("detail"), spoolEvents: try m.uint("spool_events"),
                        spoolBytes: Int(try m.uint("spool_bytes")), dropped: try m.uint("dropped"),
                        droppedNoSpace: m.value["dropped_no_space"] == nil ? 0 : try m.uint("dropped_no_space"))
        }
    }
}

/// Typed access to the status document's members, with errors that name the member.
struct StatusJSONReader {
    let value: JSONValue
    init(_ value: JSONValue) { self.value = value }

    var members: [(key: String, value: JSONValue)] { value.objectValue?.members ?? [] }

    private func member(_ key: String) throws(UsageError) -> JSONValue {
        guard let v = value[key] else { throw UsageError("the daemon's status has no \"\(key)\"") }
        return v
    }
    func string(_ key: String) throws(UsageError) -> String {
        guard let s = try member(key).stringValue else { throw UsageError("the daemon's status: \"\(key)\" is not a string") }
        return s
    }
    func optionalString(_ key: String) throws(UsageError) -> String? {
        let v = try member(key)
        if v == .null { return nil }
        guard let s = v.stringValue else { throw UsageError("the daemon's status: \"\(key)\" is not a string") }
        return s
    }
    func bool(_ key: String) throws(UsageError) -> Bool {
        guard let b = try member(key).boolValue else { throw UsageError("the daemon's status: \"\(key)\" is not true or false") }
        return b
    }
    func int(_ key: String) throws(UsageError) -> Int64 {
        guard let n = try member(key).numberValue?.int64 else { throw UsageError("the daemon's status: \"\(key)\" is not a whole number") }
        return n
    }
    func uint(_ key: String) throws(UsageError) -> UInt64 {
        let n = try int(key)
        guard n >= 0 else { throw UsageError("the daemon's status: \"\(key)\" is negative") }
        return UInt64(n)
    }
    func double(_ key: String) throws(UsageError) -> Double {
        guard let d = try member(key).numberValue?.double else { throw UsageError("the daemon's status: \"\(key)\" is not a number") }
        return d
    }
    /// An RFC 3339 time as written by WallClock.rfc3339, back to nanoseconds; nil for null.
    func time(_ key: String) throws(UsageError) -> Int64? {
        guard let text = try optionalString(key) else { return nil }
        guard let t = StatusJSONReader.parseRFC3339(text) else { throw UsageError("the daemon's status: \"\(key)\" is not a time") }
        return t
    }
    func object(_ key: String) throws(UsageError) -> StatusJSONReader {
        let v = try member(key)
        guard v.objectValue != nil else { throw UsageError("the daemon's status: \"\(key)\" is not an object") }
        return StatusJSONReader(v)
    }
    func optionalObject(_ key: String) throws(UsageError) -> StatusJSONReader? {
        guard let v = value[key], v != .null else { return nil }
        guard v.objectValue != nil else { throw UsageError("the daemon's status: \"\(key)\" is not an object") }
        return StatusJSONReader(v)
    }
    func array(_ key: String) throws(UsageError) -> [JSONValue] {
        guard let a = try member(key).arrayValue else { throw UsageError("the daemon's status: \"\(key)\" is not a list") }
        return a
    }

    /// "2026-11-30T14:01:23.456Z" (UTC, milliseconds) to nanoseconds since the epoch.
    static func parseRFC3339(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 24, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A, b[19] == 0x2E, b[23] == 0x5A else { return nil }
        func n(_ r: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in r { guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }; v = v * 10 + Int64(b[i] - 0x30) }
            return v
        }
        guard let y = n(0..<4), let mo = n(5..<7), let d = n(8..<10), let h = n(11..<13), let mi = n(14..<16),
              let s = n(17..<19), let ms = n(20..<23), (1...12).contains(mo), (1...31).contains(d) else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm).
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000 + ms) * 1_000_000
    }
}
