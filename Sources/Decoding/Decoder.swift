import Core

/// The decoder seam. A decoder is confined to the one decode queue: it is not Sendable.
public protocol Decoder: AnyObject {
    /// Every code in the frame, payload bytes exact, already normalised (check digits verified,
    /// UPC-A in its configured form).
    func decode(_ frame: Frame) -> [DecodedSymbol]
}
