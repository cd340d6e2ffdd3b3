import Core

public enum OutputFormat: String, CaseIterable, Sendable {
    /// One JSON object per line.
    case json
    /// zbarcam-compatible `QR-Code:payload` lines.
    case text
    case none
}

/// What the user chose for stdout (the `[output]` section).
public struct OutputSettings: Equatable, Sendable {
    public var format: OutputFormat = .json
    public init() {}
}
