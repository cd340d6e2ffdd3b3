import Core

/// The status socket's camera-control requests, and their answers read back by `scangate status`.
///
/// - `controls` → `{"controls":[{"key":"brightness","name":"Brightness","type":"int","min":0,"max":255,
///   "step":1,"default":128,"value":128},…]}`
/// - `control NAME=VALUE` → `{"control":{"key":"brightness","value":200}}` (the value read back after setting)
/// - either → `{"error":"…"}`: the source has no controls (simulator, replay), the camera is being
///   reopened, or the control or value is not one the camera takes (named, with the allowed range).
///
/// Both run on the socket's thread; the ioctls are serialised with the camera's own use of its descriptor
/// by the camera (`CameraControlPanel`).
public enum CameraControlRequests {
    /// The answer line (no newline) for a camera-control request; nil when `request` is none.
    public static func answer(_ request: String, slot: CameraControlsSlot?) -> String? {
        let words = request.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard let verb = words.first, verb == "controls" || verb == "control" else { return nil }
        if verb == "controls", words.count > 1 { return error("'controls' takes nothing after it") }
        guard let slot else { return error("this daemon serves no camera controls") }
        let (source, held) = slot.current
        guard let controls = held else {
            return error("the source \(source.isEmpty ? "in use" : source) has no camera controls "
                         + "(a simulated or replayed source); only a V4L2 camera has them")
        }
        if verb == "controls" {
            do throws(UsageError) {
                return JSONText.object([("controls", "[" + (try controls.readings()).map(\.json).joined(separator: ",") + "]")])
            } catch {
                return self.error(error.message)
            }
        }
        guard words.count == 2 else { return error("'control' needs NAME=VALUE (an integer VALUE)") }
        let assignment = String(words[1])
        let parts = assignment.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
        guard parts.count == 2, !parts[0].isEmpty, let value = Int(parts[1]) else {
            return error("control \(assignment): give NAME=VALUE with an integer VALUE")
        }
        do throws(UsageError) {
            let reading = try controls.set(name: parts[0], value: value)
            return JSONText.object([("control", JSONText.object([
                ("key", JSONText.string(reading.key)), ("value", reading.value.map { String($0) } ?? "null"),
            ]))])
        } catch {
            return self.error(error.message)
        }
    }

    static func error(_ message: String) -> String { JSONText.object([("error", JSONText.string(message))]) }

    // MARK: - The client's side

    /// A `controls` answer read back; an `{"error": …}` is thrown as the daemon's message.
    public static func readings(answer: [UInt8]) throws(UsageError) -> [CameraControlReading] {
        let value = try parse(answer)
        guard let list = value["controls"]?.arrayValue else { throw UsageError("the daemon's answer has no \"controls\" list") }
        return try list.map { item throws(UsageError) -> CameraControlReading in
            let r = StatusJSONReader(item)
            let current: Int? = r.value["value"] == nil || r.value["value"] == .null ? nil : Int(clamping: try r.int("value"))
            return CameraControlReading(key: try r.string("key"), name: try r.string("name"), type: try r.string("type"),
                                        minimum: Int(clamping: try r.int("min")), maximum: Int(clamping: try r.int("max")),
                                        step: Int(clamping: try r.int("step")), defaultValue: Int(clamping: try r.int("default")),
                                        value: current)
        }
    }

    /// A `control` answer read back: the control's key and the value read back (nil: unreadable).
    public static func setting(answer: [UInt8]) throws(UsageError) -> (key: String, value: Int?) {
        let value = try parse(answer)
        guard let control = value["control"], control.objectValue != nil else { throw UsageError("the daemon's answer has no \"control\"") }
        let r = StatusJSONReader(control)
        let read: Int? = r.value["value"] == nil || r.value["value"] == .null ? nil : Int(clamping: try r.int("value"))
        return (try r.string("key"), read)
    }

    /// Parses the one line; throws `UsageError` with the daemon's own message for `{"error": …}`.
    private static func parse(_ answer: [UInt8]) throws(UsageError) -> JSONValue {
        let line = answer.last == 0x0A ? Array(answer.dropLast()) : answer
        let value: JSONValue
        do {
            value = try JSONValue.parse(line, maxBytes: 1 << 20, maxDepth: 8)
        } catch {
            throw UsageError("the daemon's answer is not valid JSON: \(error)")
        }
        if let message = value["error"]?.stringValue { throw UsageError(message) }
        return value
    }
}
