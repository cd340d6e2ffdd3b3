import Platform

/// The topics of one kiosk, all under its prefix (`scangate/<client-id>` by default).
public struct MQTTTopics: Equatable, Sendable {
    public let prefix: String
    /// mqtt-site-topic (nil: unset).
    public let site: String?

    public init(prefix: String, site: String? = nil) {
        self.prefix = prefix
        self.site = site
    }

    /// Retained: this kiosk's signed site policy (mqtt-policy).
    public var policy: String { prefix + "/policy" }
    /// The answer to each policy document received (not retained).
    public var policyResult: String { prefix + "/policy/result" }
    /// Retained: the site's signed site policy (mqtt-policy with mqtt-site-topic).
    public var sitePolicy: String? { site.map { $0 + "/policy" } }
    /// The subscription to the site's anti-passback uses (mqtt-site-topic): `<site>/passback/+`.
    public var passback: String? { site.map { $0 + "/passback/+" } }
    /// Where the last use of one credential number is kept, retained: `<site>/passback/<number in hex>`
    /// (hex, so that a number with '/', '+' or '#' still names one topic level).
    public func passback(number: [UInt8]) -> String? {
        site.map { $0 + "/passback/" + Hex.string(number, lowercase: true) }
    }

    /// The number a topic `<site>/passback/<hex>` names, or nil for any other topic.
    public func passbackNumber(ofTopic topic: String) -> [UInt8]? {
        guard let site else { return nil }
        let head = Array((site + "/passback/").utf8)
        let bytes = Array(topic.utf8)
        guard bytes.starts(with: head) else { return nil }
        let level = bytes[head.count...]
        guard !level.isEmpty, level.count % 2 == 0, level.count <= 2 * 1024 else { return nil }
        var number: [UInt8] = []
        var i = level.startIndex
        while i < level.endIndex {
            guard let hi = Self.nibble(level[i]), let lo = Self.nibble(level[i + 1]) else { return nil }
            number.append(hi << 4 | lo)
            i += 2
        }
        return number
    }

    private static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// Retained `online` / `offline` (the last will, and on a clean exit).
    public var status: String { prefix + "/status" }
    /// One QoS 1 message per read.
    public var event: String { prefix + "/event" }
    /// Retained JSON: status, health, counters, spool depth.
    public var state: String { prefix + "/state" }
    /// The subscription for commands: `<prefix>/cmd/+` (one level, so results are not received back).
    public var commandFilter: String { prefix + "/cmd/+" }
    public func command(_ name: String) -> String { prefix + "/cmd/" + name }
    public func commandResult(_ name: String) -> String { prefix + "/cmd/" + name + "/result" }

    /// The command name of a topic `<prefix>/cmd/<name>`, or nil for any other topic. Compared byte for
    /// byte, as the broker matches topics (MQTT 5 §4.7.3), not by Unicode equivalence as `hasPrefix` does.
    public func commandName(ofTopic topic: String) -> String? {
        let head = Array((prefix + "/cmd/").utf8)
        let bytes = Array(topic.utf8)
        guard bytes.starts(with: head) else { return nil }
        let name = bytes[head.count...]
        guard !name.isEmpty, !name.contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: name, as: UTF8.self)
    }
}
