import Core

/// What the user chose for the ALSA beep (the `[beep]` section).
public struct BeepSettings: Equatable, Sendable {
    public var enabled: Bool = false
    public init() {}
}
