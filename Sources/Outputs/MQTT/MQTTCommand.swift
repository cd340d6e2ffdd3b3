import Core
import Platform
import Settings

/// The commands a kiosk takes on `<prefix>/cmd/<name>` (with `mqtt-commands = yes`).
///
/// Payload: one JSON object (at most 4096 bytes, UTF-8, no duplicate members, nothing else), parsed with
/// Core's strict `JSONValue`. Every command has
///   - `"id"`: a string of 1-64 characters from `A-Z a-z 0-9 . _ : -`; a repeated id is not acted on twice
///     (`CommandReplayGuard`, kept on disk by `CommandIDStore`);
///   - `"expires"`: an integer, Unix time in seconds (UTC); a command that arrives at or after it is refused,
///     and so is one that expires more than `maxLifetimeSeconds` (3600) ahead.
/// and, per command:
///   - `pause`, `resume`, `reload`: nothing else.
///   - `feedback`: either `"play": "grant" | "deny" | "read-cue"`, or an explicit command of
///     `"led"` (an object below, or `"cancel"`), `"led_permanent"` and `"tone"` (an object, or `"off"`):
///       led:           `{"color": C, "off_color": C, "on_ms": 0-60000, "off_ms": 0-60000, "cycles": 1-1000 | "ms": 1-600000}`
///                      C is `off`, `red`, `green` or `amber`; `off_ms` 0 (the default) is a steady light;
///                      neither `cycles` nor `ms` lasts until the next command replaces it.
///       led_permanent: `{"color": C, "off_color": C, "on_ms": ..., "off_ms": ...}` (no duration)
///       tone:          `{"on_ms": 1-10000, "off_ms": 0-10000, "cycles": 1-1000 | "ms": 1-600000}`
///   - `beep`: `"on_ms"` (1-2000, default 150), `"off_ms"` (0-2000, default 100), `"count"` (1-20, default 1).
/// Any other member is refused. The result goes to `<prefix>/cmd/<name>/result` (see `MQTTCommandResult`).
public struct MQTTCommand: Equatable, Sendable {
    public enum Name: String, CaseIterable, Sendable {
        case pause, resume, reload, feedback, beep
    }

    public enum Action: Equatable, Sendable {
        /// For the daemon (MQTTCommandHandler).
        case daemon(MQTTDaemonCommand)
        /// For the FeedbackSink.
        case feedback(FeedbackRequest)
    }

    public let id: String
    public let name: Name
    /// Unix time, seconds.
    public let expires: Int64
    public let action: Action
}

/// What the daemon does for a command.
public enum MQTTDaemonCommand: String, Sendable, Equatable {
    case pause, resume, reload
}

/// Why a command was not acted on; `id` when the payload had a readable one.
public struct MQTTCommandRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let id: String?
    public let reason: String
    public var description: String { reason }
}

public enum MQTTCommandParser {
    public static let maxPayload = 4096
    public static let maxLifetimeSeconds: Int64 = 3600
    public static let maxIDLength = 64

    /// Parses and checks one command that arrived on `<prefix>/cmd/<name>` at `nowSeconds` (Unix time).
    public static func parse(name: String, payload: [UInt8], nowSeconds: Int64) -> Result<MQTTCommand, MQTTCommandRefusal> {
        // Names, member names and values are compared byte for byte, never by Unicode equivalence.
        guard let command = MQTTCommand.Name(exactRawValue: name) else {
            return .failure(MQTTCommandRefusal(id: nil, reason: "unknown command '\(Logger.escape(name))' "
                + "(commands: \(MQTTCommand.Name.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        guard payload.count <= maxPayload else {
            return .failure(MQTTCommandRefusal(id: nil, reason: "the payload is longer than \(maxPayload) bytes"))
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(payload, maxBytes: maxPayload, maxDepth: 3)
        } catch {
            return .failure(MQTTCommandRefusal(id: nil, reason: "not a JSON command: \(error)"))
        }
        guard let object = value.objectValue else {
            return .failure(MQTTCommandRefusal(id: nil, reason: "a command is a JSON object with \"id\" and \"expires\""))
        }
        var reader = Reader(object: object)
        do throws(MQTTCommandRefusal) {
            return .success(try parse(command, &reader, nowSeconds: nowSeconds))
        } catch {
            return .failure(MQTTCommandRefusal(id: reader.id, reason: error.reason))
        }
    }

    private static func parse(_ name: MQTTCommand.Name, _ r: inout Reader, nowSeconds: Int64) throws(MQTTCommandRefusal) -> MQTTCommand {
        let id = try r.commandID()
        r.id = id
        let expires = try r.integer("expires", required: true, range: 0...Int64(Int32.max) * 4) ?? 0
        if expires <= nowSeconds {
            throw r.refuse("expired at \(WallClock.rfc3339(nanoseconds: expires * 1_000_000_000)); "
                           + "it is now \(WallClock.rfc3339(nanoseconds: nowSeconds * 1_000_000_000))")
        }
        if expires > nowSeconds + maxLifetimeSeconds {
            throw r.refuse("\"expires\" is more than \(maxLifetimeSeconds) s ahead "
                           + "(\(WallClock.rfc3339(nanoseconds: expires * 1_000_000_000))); a command is valid for at most that long")
        }
        let action: MQTTCommand.Action
        switch name {
        case .pause: action = .daemon(.pause)
        case .resume: action = .daemon(.resume)
        case .reload: action = .daemon(.reload)
        case .feedback: action = .feedback(try feedback(&r))
        case .beep:
            let on = try r.integer("on_ms", range: 1...2000) ?? 150
            let off = try r.integer("off_ms", range: 0...2000) ?? 100
            let count = try r.integer("count", range: 1...20) ?? 1
            action = .feedback(.command(FeedbackCommand(tone: ToneCommand(onMs: Int(on), offMs: Int(off), duration: .cycles(Int(count))))))
        }
        try r.rejectUnknown()
        return MQTTCommand(id: id, name: name, expires: expires, action: action)
    }

    private static func feedback(_ r: inout Reader) throws(MQTTCommandRefusal) -> FeedbackRequest {
        let hasExplicit = r.has("led") || r.has("led_permanent") || r.has("tone")
        if let play = try r.string("play") {
            guard !hasExplicit else { throw r.refuse("give either \"play\" or \"led\"/\"led_permanent\"/\"tone\", not both") }
            if play.bytesEqual("grant") { return .grant }
            if play.bytesEqual("deny") { return .deny }
            if play.bytesEqual("read-cue") { return .readCue }
            throw r.refuse("\"play\" is grant, deny or read-cue, not \(JSONText.string(play))")
        }
        guard hasExplicit else {
            throw r.refuse("feedback needs \"play\" (grant, deny, read-cue) or \"led\", \"led_permanent\", \"tone\"")
        }
        var led: LEDCommand?
        if r.has("led") || r.has("led_permanent") {
            var command = LEDCommand()
            if let value = r.take("led") {
                if value == .string("cancel") {
                    command.temporary = .cancel
                } else {
                    var sub = try r.object(value, "led")
                    let blink = try ledBlink(&sub, "led")
                    command.temporary = .show(blink, for: try duration(&sub, "led"))
                    try sub.rejectUnknown()
                }
            }
            if let value = r.take("led_permanent") {
                var sub = try r.object(value, "led_permanent")
                command.permanent = try ledBlink(&sub, "led_permanent")
                try sub.rejectUnknown()
            }
            led = command
        }
        var tone: ToneCommand?
        if let value = r.take("tone") {
            if value == .string("off") {
                tone = .silence
            } else {
                var sub = try r.object(value, "tone")
                let on = try sub.integer("on_ms", required: true, range: 1...10_000) ?? 1
                let off = try sub.integer("off_ms", range: 0...10_000) ?? 0
                tone = ToneCommand(onMs: Int(on), offMs: Int(off), duration: try duration(&sub, "tone"))
                try sub.rejectUnknown()
            }
        }
        return .command(FeedbackCommand(led: led, tone: tone))
    }

    private static func ledBlink(_ r: inout Reader, _ context: String) throws(MQTTCommandRefusal) -> LEDBlink {
        let color = try colour(&r, "color", required: true, context) ?? .off
        let offColor = try colour(&r, "off_color", required: false, context) ?? .off
        let off = try r.integer("off_ms", range: 0...60_000) ?? 0
        let on = try r.integer("on_ms", required: off > 0, range: off > 0 ? 1...60_000 : 0...60_000) ?? 0
        if off == 0 { return .steady(color) }
        return LEDBlink(onColor: color, offColor: offColor, onMs: Int(on), offMs: Int(off))
    }

    private static func colour(_ r: inout Reader, _ key: String, required: Bool, _ context: String) throws(MQTTCommandRefusal) -> LEDColor? {
        guard let text = try r.string(key, required: required) else { return nil }
        guard let c = LEDColor(exactRawValue: text) else {
            throw r.refuse("\(context).\(key) is off, red, green or amber, not \(JSONText.string(text))")
        }
        return c
    }

    private static func duration(_ r: inout Reader, _ context: String) throws(MQTTCommandRefusal) -> FeedbackDuration {
        let cycles = try r.integer("cycles", range: 1...1000)
        let ms = try r.integer("ms", range: 1...600_000)
        switch (cycles, ms) {
        case (.some, .some): throw r.refuse("\(context): give \"cycles\" or \"ms\", not both")
        case (.some(let c), nil): return .cycles(Int(c))
        case (nil, .some(let m)): return .milliseconds(Int(m))
        case (nil, nil): return .untilReplaced
        }
    }

    /// Takes members from an object and checks their types and ranges; whatever is left is refused.
    struct Reader {
        var members: [(key: String, value: JSONValue)]
        var context: String
        var id: String?

        init(object: JSONObject, context: String = "") {
            members = object.members
            self.context = context
        }

        func refuse(_ reason: String) -> MQTTCommandRefusal { MQTTCommandRefusal(id: id, reason: reason) }

        func has(_ key: String) -> Bool { members.contains { $0.key.bytesEqual(key) } }

        mutating func take(_ key: String) -> JSONValue? {
            guard let i = members.firstIndex(where: { $0.key.bytesEqual(key) }) else { return nil }
            return members.remove(at: i).value
        }

        func name(_ key: String) -> String { context.isEmpty ? key : context + "." + key }

        mutating func commandID() throws(MQTTCommandRefusal) -> String {
            guard let value = take("id") else { throw refuse("the command has no \"id\"") }
            guard let id = value.stringValue else { throw refuse("\"id\" must be a string") }
            guard (1...MQTTCommandParser.maxIDLength).contains(id.utf8.count),
                  id.utf8.allSatisfy({ MQTTSettings.isIDByte($0) || $0 == UInt8(ascii: ":") }) else {
                throw refuse("\"id\" must be 1-\(MQTTCommandParser.maxIDLength) characters of A-Z a-z 0-9 . _ : -")
            }
            return id
        }

        mutating func string(_ key: String, required: Bool = false) throws(MQTTCommandRefusal) -> String? {
            guard let value = take(key) else {
                if required { throw refuse("\(name(key)) is missing") }
                return nil
            }
            guard let s = value.stringValue else { throw refuse("\(name(key)) must be a string") }
            return s
        }

        mutating func integer(_ key: String, required: Bool = false, range: ClosedRange<Int64>) throws(MQTTCommandRefusal) -> Int64? {
            guard let value = take(key) else {
                if required { throw refuse("\(name(key)) is missing") }
                return nil
            }
            guard let n = value.numberValue?.int64 else { throw refuse("\(name(key)) must be a whole number") }
            guard range.contains(n) else {
                throw refuse("\(name(key)) is \(n); allowed \(range.lowerBound)-\(range.upperBound)")
            }
            return n
        }

        func object(_ value: JSONValue, _ key: String) throws(MQTTCommandRefusal) -> Reader {
            guard let o = value.objectValue else { throw refuse("\(name(key)) must be an object") }
            var r = Reader(object: o, context: name(key))
            r.id = id
            return r
        }

        func rejectUnknown() throws(MQTTCommandRefusal) {
            if let extra = members.first {
                throw refuse("unknown member \(JSONText.string(name(extra.key)))")
            }
        }
    }
}

/// What a command's result message says.
public struct MQTTCommandResult: Equatable, Sendable {
    public enum Outcome: Equatable, Sendable {
        case ok(String)
        case refused(String)
        case failed(String)
    }

    public var id: String?
    public var command: String
    public var outcome: Outcome

    public init(id: String?, command: String, outcome: Outcome) {
        self.id = id
        self.command = command
        self.outcome = outcome
    }

    /// `{"id":"c1","command":"pause","result":"ok"|"refused"|"failed","detail":"...","kiosk":"k1","time":"..."}`;
    /// `"id":null` when the command had no readable id.
    public func json(kiosk: String, wallTimeNanoseconds: Int64) -> String {
        let (result, detail): (String, String)
        switch outcome {
        case .ok(let d): (result, detail) = ("ok", d)
        case .refused(let d): (result, detail) = ("refused", d)
        case .failed(let d): (result, detail) = ("failed", d)
        }
        return JSONText.object([
            ("id", id.map(JSONText.string) ?? "null"),
            ("command", JSONText.string(command)),
            ("result", JSONText.string(result)),
            ("detail", JSONText.string(detail)),
            ("kiosk", JSONText.string(kiosk)),
            ("time", JSONText.string(WallClock.rfc3339(nanoseconds: wallTimeNanoseconds))),
        ])
    }
}

/// The daemon's side of `pause`, `resume` and `reload` (the daemon implements it at integration).
public protocol MQTTCommandHandler: AnyObject, Sendable {
    /// Called on the MQTT session thread. Returns quickly: hands the work to the daemon's own thread and
    /// says what it did (`.done("paused")`) or why not (`.failed("already paused")`).
    func perform(_ command: MQTTDaemonCommand) -> MQTTCommandOutcome
}

public enum MQTTCommandOutcome: Equatable, Sendable {
    case done(String)
    case failed(String)
}
