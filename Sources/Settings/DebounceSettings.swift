import Core

/// What the user chose for duplicate suppression (the `[debounce]` section).
public struct DebounceSettings: SettingsSection {
    /// A code is reported again only after it has been out of view this long.
    public var holdOffMs: Double = 1500
    /// Frames in a row a 2D code must be seen before it is reported.
    public var confirmations2D: Int = 1
    /// Frames in a row a 1D code must be seen before it is reported (guards against misreads).
    public var confirmations1D: Int = 2
    public init() {}

    public func confirmations(for symbology: Symbology) -> Int {
        symbology.is2D ? confirmations2D : confirmations1D
    }
}

extension RunSettings {
    public var debounce: DebounceSettings {
        get { self[DebounceSettings.self] }
        set { self[DebounceSettings.self] = newValue }
    }
}
