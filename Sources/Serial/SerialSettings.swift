import Core

/// What the user chose for the door-controller serial line (the `[serial]` section). nil path: no serial.
public struct SerialSettings: Equatable, Sendable {
    public var path: String? = nil
    public init() {}
}
