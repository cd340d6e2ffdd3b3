import Core
import Platform

/// What a kiosk shares with its site over the broker, between the MQTT output and the credential policy:
/// site policy documents coming in (`<prefix>/policy`, `<site>/policy`) and anti-passback uses going out
/// and coming in (`<site>/passback`). The daemon makes one for its whole life; the MQTT output and each
/// credential policy built at start or at a reload hold it.
///
/// Nothing here touches the network or a file: the MQTT session calls in on its own thread, the
/// credential policy on the decode queue, and each side's hook does its own work.
public final class SiteLink: Sendable {
    /// One accepted use at a door of role in or out, as it travels between kiosks.
    public struct PassbackUse: Equatable, Sendable {
        /// The kiosk that accepted it (its MQTT client id; filled in when published).
        public var kiosk: String
        /// The site policy's door id there.
        public var door: String
        /// The credential number (UTF-8 bytes, compared byte for byte).
        public var number: [UInt8]
        /// true: it moved its holder in; false: out.
        public var entry: Bool
        /// Seconds since the epoch, on that kiosk's clock.
        public var at: Int64
        /// How long the use counts (the policy's anti-passback timeout; 0: until the next use): the
        /// broker keeps the retained message that long. Not in the message.
        public var keepSeconds: Int64

        public init(kiosk: String = "", door: String, number: [UInt8], entry: Bool, at: Int64, keepSeconds: Int64 = 0) {
            self.kiosk = kiosk
            self.keepSeconds = keepSeconds
            self.door = door
            self.number = number
            self.entry = entry
            self.at = at
        }
    }

    /// The answer to a site policy document received over MQTT, sent back on `<prefix>/policy/result`.
    public enum PolicyOutcome: Equatable, Sendable {
        /// Verified, newer than the one held: recorded and kept, the daemon reloads. The text says which.
        case installed(String)
        /// The document in force already (the retained message comes again at every connection).
        case unchanged(String)
        /// Not used: the text says why; the document in force stays.
        case refused(String)
    }

    /// How this kiosk sees other kiosks' uses right now.
    public enum PassbackView: String, Sendable {
        /// No MQTT output shares uses (mqtt-site-topic unset): this kiosk's own uses only, by design.
        case local
        /// Shared, and the broker is connected: other kiosks' uses arrive as they happen.
        case shared
        /// Shared, but the broker is not connected: decisions rest on this kiosk's view (its own uses and
        /// the ones received before the link went down).
        case offline
    }

    /// Own uses held while the broker is away, at most; beyond it the oldest go (counted, logged).
    public static let outboxLimit = 10_000

    private struct State {
        var outbox: [PassbackUse] = []
        var outboxDropped: UInt64 = 0
        var sharing = false
        var owner: ObjectIdentifier?
        var connected = false
        var wake: (@Sendable () -> Void)?
        var receiver: (@Sendable (PassbackUse) -> Bool)?
        var policy: (@Sendable ([UInt8], String) -> PolicyOutcome)?
        var sent: UInt64 = 0
        var received: UInt64 = 0
        var applied: UInt64 = 0
    }
    private let state = PosixMutex(State())

    public init() {}

    // MARK: - The MQTT output's side

    /// An MQTT output shares uses from now on (mqtt-site-topic set); `wake` wakes its session thread.
    /// A reload that rebuilds the output attaches the new one before the old one detaches.
    public func brokerAttached(owner: ObjectIdentifier, wake: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.owner = owner
            s.sharing = true
            s.connected = false
            s.wake = wake
        }
    }

    /// The MQTT output `owner` is gone; nothing changes when another one has attached since.
    public func brokerDetached(owner: ObjectIdentifier) {
        state.withLock { s in
            guard s.owner == owner else { return }
            s.owner = nil
            s.sharing = false
            s.connected = false
            s.wake = nil
        }
    }

    public func setConnected(_ connected: Bool) {
        state.withLock { $0.connected = connected }
    }

    /// Up to `max` own uses waiting to be published, oldest first; they stay until `published(_:)`.
    public func pendingUses(max: Int) -> [PassbackUse] {
        state.withLock { Array($0.outbox.prefix(max)) }
    }

    /// The first `count` pending uses were handed to the broker.
    public func published(_ count: Int) {
        state.withLock { s in
            let n = min(count, s.outbox.count)
            s.outbox.removeFirst(n)
            s.sent += UInt64(n)
        }
    }

    /// Uses the broker did not acknowledge before the connection ended: sent again first.
    public func requeue(_ uses: [PassbackUse]) {
        guard !uses.isEmpty else { return }
        state.withLock { s in
            s.outbox.insert(contentsOf: uses, at: 0)
            s.sent -= min(s.sent, UInt64(uses.count))
            Self.bound(&s)
        }
    }

    /// Another kiosk's use, parsed from `<site>/passback`: handed to the anti-passback store in force.
    /// Returns whether it changed what this kiosk knows (false: older than what is held, or no store).
    @discardableResult
    public func receive(_ use: PassbackUse) -> Bool {
        let receiver = state.withLock { s -> (@Sendable (PassbackUse) -> Bool)? in
            s.received += 1
            return s.receiver
        }
        guard let receiver, receiver(use) else { return false }
        state.withLock { $0.applied += 1 }
        return true
    }

    /// A site policy document from `topic`; nil when the daemon takes none (mqtt-policy off).
    public func deliverPolicy(_ bytes: [UInt8], from topic: String) -> PolicyOutcome? {
        let handler = state.withLock { $0.policy }
        return handler?(bytes, topic)
    }

    // MARK: - The daemon's and the credential policy's side

    /// Who verifies and installs a site policy document received over MQTT (the daemon).
    public func takePolicies(_ handler: (@Sendable ([UInt8], String) -> PolicyOutcome)?) {
        state.withLock { $0.policy = handler }
    }

    /// Where other kiosks' uses go (the anti-passback store in force); nil: nowhere (anti-passback off).
    public func takeUses(_ receiver: (@Sendable (PassbackUse) -> Bool)?) {
        state.withLock { $0.receiver = receiver }
    }

    /// This kiosk accepted a use: it is published to the site when an MQTT output shares uses.
    public func share(_ use: PassbackUse) {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard s.sharing else { return nil }
            s.outbox.append(use)
            Self.bound(&s)
            return s.wake
        }
        wake?()
    }

    public var view: PassbackView {
        state.withLock { s in !s.sharing ? .local : (s.connected ? .shared : .offline) }
    }

    /// Counters for status and metrics.
    public var counts: (sent: UInt64, received: UInt64, applied: UInt64, waiting: Int, dropped: UInt64) {
        state.withLock { ($0.sent, $0.received, $0.applied, $0.outbox.count, $0.outboxDropped) }
    }

    private static func bound(_ s: inout State) {
        let over = s.outbox.count - outboxLimit
        guard over > 0 else { return }
        s.outbox.removeFirst(over)
        s.outboxDropped += UInt64(over)
    }

    // MARK: - The message on `<site>/passback`

    /// `{"v":1,"kiosk":"k1","door":"lobby-in","number":"1001","dir":"in","at":1764590000}`.
    public static func message(_ use: PassbackUse) -> String {
        "{\"v\":1,\"kiosk\":" + JSONText.string(use.kiosk) + ",\"door\":" + JSONText.string(use.door)
            + ",\"number\":" + JSONText.string(String(decoding: use.number, as: UTF8.self))
            + ",\"dir\":\"" + (use.entry ? "in" : "out") + "\",\"at\":" + String(use.at) + "}"
    }

    /// The most bytes a passback message may have (a number is at most 1024 bytes).
    public static let maxMessageBytes = 4096

    /// Parses a message from `<site>/passback`; the error says what is wrong (for a log line).
    public static func parse(_ bytes: [UInt8]) -> Result<PassbackUse, MessageError> {
        guard bytes.count <= maxMessageBytes else { return .failure(MessageError("longer than \(maxMessageBytes) bytes")) }
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(bytes, maxBytes: maxMessageBytes, maxDepth: 4)
        } catch {
            return .failure(MessageError("not JSON: \(error)"))
        }
        guard let o = value.objectValue else { return .failure(MessageError("not a JSON object")) }
        guard o["v"]?.numberValue?.int64 == 1 else { return .failure(MessageError("\"v\" must be 1")) }
        guard let kiosk = o["kiosk"]?.stringValue, !kiosk.isEmpty, kiosk.utf8.count <= 64 else {
            return .failure(MessageError("\"kiosk\" must be a client id of 1 to 64 bytes"))
        }
        guard let door = o["door"]?.stringValue, door.utf8.count <= 256 else {
            return .failure(MessageError("\"door\" must be a string of at most 256 bytes"))
        }
        guard let number = o["number"]?.stringValue, !number.isEmpty, number.utf8.count <= 1024 else {
            return .failure(MessageError("\"number\" must be a string of 1 to 1024 bytes"))
        }
        let entry: Bool
        switch o["dir"]?.stringValue {
        case "in": entry = true
        case "out": entry = false
        default: return .failure(MessageError("\"dir\" must be \"in\" or \"out\""))
        }
        guard let at = o["at"]?.numberValue?.int64, at > 0 else { return .failure(MessageError("\"at\" must be seconds since the epoch")) }
        return .success(PassbackUse(kiosk: kiosk, door: door, number: Array(number.utf8), entry: entry, at: at))
    }

    public struct MessageError: Error, Sendable {
        public let text: String
        init(_ text: String) { self.text = text }
    }
}
