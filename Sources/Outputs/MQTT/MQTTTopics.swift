/// The topics of one kiosk, all under its prefix (`scangate/<client-id>` by default).
public struct MQTTTopics: Equatable, Sendable {
    public let prefix: String

    public init(prefix: String) { self.prefix = prefix }

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
