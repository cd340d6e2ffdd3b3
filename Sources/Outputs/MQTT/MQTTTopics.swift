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

    /// The command name of a topic `<prefix>/cmd/<name>`, or nil for any other topic.
    public func commandName(ofTopic topic: String) -> String? {
        let head = prefix + "/cmd/"
        guard topic.hasPrefix(head) else { return nil }
        let name = String(topic.dropFirst(head.count))
        guard !name.isEmpty, !name.contains("/") else { return nil }
        return name
    }
}
