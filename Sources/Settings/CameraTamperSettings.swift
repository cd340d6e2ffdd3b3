import Core

/// `camera-tamper*` in the `[camera]` section: whether the daemon watches the scene for a camera that is
/// covered or turned away, and how long a change must last before it counts. Values only; the watch
/// itself (`SceneWatch`) lives on the capture thread.
public struct CameraTamperSettings: SettingsSection {
    /// `camera-tamper`: off by default (a flat wall in view reads as covered).
    public var enabled = false
    /// `camera-tamper-after-s`: the scene must stay dark, uniform or changed this long (2-600 s).
    public var afterSeconds: Int = 10
    /// `camera-tamper-dark-level`: a mean luma below this (0-255) is dark (1-128).
    public var darkLevel: Int = 24

    public static let afterRange = 2...600
    public static let darkRange = 1...128

    public init() {}
}

extension RunSettings {
    public var cameraTamper: CameraTamperSettings {
        get { self[CameraTamperSettings.self] }
        set { self[CameraTamperSettings.self] = newValue }
    }
}
