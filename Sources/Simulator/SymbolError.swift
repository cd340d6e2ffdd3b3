/// A payload that a symbology cannot carry, or an encoder failure: "EAN-13 needs 12 or 13 digits".
public struct SymbolError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
