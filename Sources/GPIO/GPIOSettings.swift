import Core

/// What the user chose for LEDs and buzzer (the `[gpio]` section). nil chip: no GPIO.
public struct GPIOSettings: Equatable, Sendable {
    public var chip: String? = nil
    public init() {}
}
