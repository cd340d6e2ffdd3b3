import Core

public enum OutputFormat: String, CaseIterable, Sendable {
    /// One JSON object per line.
    case json
    /// zbarcam-compatible `QR-Code:payload` lines.
    case text
    case none
}

/// What the user chose for stdout (the `[output]` section).
public struct OutputSettings: SettingsSection {
    public var format: OutputFormat = .json
    public init() {}
}

extension RunSettings {
    public var output: OutputSettings {
        get { self[OutputSettings.self] }
        set { self[OutputSettings.self] = newValue }
    }
}
