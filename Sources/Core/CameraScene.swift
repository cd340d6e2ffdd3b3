/// What the scene watch (`camera-tamper`) says about the camera, for the outputs that report tamper (OSDP)
/// and for `scangate status`: one per daemon, written by the capture thread's watch, read by anyone.

/// Why the camera counts as tampered with.
public enum CameraTamper: String, Equatable, Sendable {
    /// The view has been dark or uniform for camera-tamper-after-s: the lens is covered or taped over.
    case covered
    /// The scene has differed wholesale from the one learned at start for camera-tamper-after-s: the
    /// camera was turned away or knocked.
    case turnedAway = "turned-away"

    /// For a status line: "COVERED", "TURNED AWAY".
    public var shout: String { self == .covered ? "COVERED" : "TURNED AWAY" }
}

public final class CameraSceneSignal: Sendable {
    private struct State {
        var watching = false
        var tamper: CameraTamper?
    }
    private let state = PosixMutex(State())

    public init() {}

    /// Whether a watch runs (camera-tamper on); a daemon without one reports no camera alarm at all.
    public var watching: Bool { state.withLock { $0.watching } }
    /// The tamper in force (nil: the scene is as it should be, or no watch runs).
    public var tamper: CameraTamper? { state.withLock { $0.tamper } }

    /// A watch starts (or stops): the tamper is cleared either way, a new watch learns its scene afresh.
    public func setWatching(_ on: Bool) { state.withLock { $0 = State(watching: on, tamper: nil) } }

    public func set(_ tamper: CameraTamper?) { state.withLock { $0.tamper = tamper } }
}
