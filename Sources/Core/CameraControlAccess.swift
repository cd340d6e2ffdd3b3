import Platform

/// One camera control as the running daemon reports it on the status socket (`controls`, `control`):
/// `{"key":"brightness","name":"Brightness","type":"int","min":0,"max":255,"step":1,"default":128,"value":128}`.
/// `value` is nil when the driver would not say.
public struct CameraControlReading: Sendable, Equatable {
    public var key: String
    public var name: String
    public var type: String
    public var minimum: Int
    public var maximum: Int
    public var step: Int
    public var defaultValue: Int
    public var value: Int?

    public init(key: String, name: String, type: String, minimum: Int, maximum: Int, step: Int, defaultValue: Int, value: Int?) {
        self.key = key
        self.name = name
        self.type = type
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.value = value
    }

    public var json: String {
        JSONText.object([
            ("key", JSONText.string(key)), ("name", JSONText.string(name)), ("type", JSONText.string(type)),
            ("min", String(minimum)), ("max", String(maximum)), ("step", String(step)),
            ("default", String(defaultValue)), ("value", value.map { String($0) } ?? "null"),
        ])
    }

    /// "min 0 max 255 step 1 default 128 current 128", as list-cameras and doctor write it.
    public var rangeText: String {
        "min \(minimum) max \(maximum) step \(step) default \(defaultValue) current \(value.map { String($0) } ?? "unreadable")"
    }
}

/// The controls of the camera a running source holds open, for requests from other threads (the status
/// socket's). Implementations serialise every call with the capture thread's own use of the device.
/// Errors are `UsageError`s whose message names the control and what is allowed, or the device's failure.
public protocol LiveCameraControls: AnyObject, Sendable {
    /// The integer, boolean and menu controls the open camera offers, with their current values.
    func readings() throws(UsageError) -> [CameraControlReading]
    /// Sets `name` (as v4l2-ctl names it, or the driver's name) to `value` and reads it back.
    func set(name: String, value: Int) throws(UsageError) -> CameraControlReading
}

/// The daemon's current source's controls (nil for a simulated or replayed source), swapped when a
/// reload builds a new source; read by the status socket's thread.
public final class CameraControlsSlot: Sendable {
    private struct Held: Sendable {
        var source: String
        var controls: (any LiveCameraControls)?
    }
    private let held = PosixMutex(Held(source: "", controls: nil))

    public init() {}

    public func hold(source: String, controls: (any LiveCameraControls)?) {
        held.withLock { $0 = Held(source: source, controls: controls) }
    }

    /// The source's name and its controls.
    public var current: (source: String, controls: (any LiveCameraControls)?) {
        let h = held.withLock { $0 }
        return (h.source, h.controls)
    }
}

/// Control names as v4l2-ctl writes them: lower case; every run of other characters becomes one '_'
/// between words ("Exposure Time, Absolute" → "exposure_time_absolute").
public enum CameraControlName {
    public static func normalise(_ name: String) -> String {
        var out = ""
        var pendingUnderscore = false
        for scalar in name.unicodeScalars {
            let isWordCharacter = scalar.isASCII && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                                                     || ("0"..."9").contains(scalar))
            if isWordCharacter {
                if pendingUnderscore { out += "_" }
                pendingUnderscore = false
                out += String(scalar).lowercased()
            } else if !out.isEmpty {
                pendingUnderscore = true
            }
        }
        return out
    }
}
