import Core

/// What the user chose for decoding (the `[decoder]` section).
public struct DecoderSettings: Equatable, Sendable {
    public var symbologies: Set<Symbology> = [.qr]
    /// zbar x/y density: scan every Nth line (1 = every line).
    public var density: Int = 1
    /// Also look for light-on-dark codes (phone screens in dark mode).
    public var testInverted: Bool = false
    /// Report UPC-A as 13-digit EAN-13 (with the leading 0) instead of 12-digit UPC-A.
    public var upcaAsEAN13: Bool = false
    /// Idle gating: a frame that did not change meaningfully is not decoded again, but a full decode is
    /// forced every this many frames. 0 turns gating off (every frame is decoded).
    public var idleRescanFrames: Int = 30
    /// Grey-level change of a 16×16 block's mean or edge energy that counts as a change.
    public var changeThreshold: Int = 6
    public init() {}
}
