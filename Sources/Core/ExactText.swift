/// Comparing text byte for byte, where a security decision depends on it.
///
/// Swift's `String` `==`, `hasPrefix`, `contains`, `switch` on literals and `Set<String>` /
/// `Dictionary<String, _>` all compare by Unicode canonical equivalence: "front-door-\u{212A}" (KELVIN
/// SIGN) equals "front-door-K", and the decomposed "cafe\u{301}" equals the composed "café". RFC 7519
/// §4.1 and RFC 7515 §4.1 compare claim values, header parameter names and `kid` as exact strings, and
/// so does everything else this program checks text from a pass, a key file, an MQTT command or a
/// broker against: the same UTF-8 bytes, or not equal. For ASCII text nothing changes (no other ASCII
/// string is canonically equivalent to an ASCII string, but a non-ASCII one may be: U+212A is "K",
/// U+037E is ";", U+1FEF is "`").
extension StringProtocol {
    /// The same UTF-8 bytes as `other` (not Unicode canonical equivalence, which `==` compares).
    public func bytesEqual(_ other: some StringProtocol) -> Bool {
        utf8.elementsEqual(other.utf8)
    }

    /// The UTF-8 bytes start with those of `prefix` (`hasPrefix` compares whole characters by equivalence).
    public func bytesStart(with prefix: some StringProtocol) -> Bool {
        utf8.starts(with: prefix.utf8)
    }
}

/// A `String` as a `Set` element or `Dictionary` key, equal and hashed by its UTF-8 bytes, so that
/// "K" and "\u{212A}" are two keys (as `String` keys they are one).
public struct UTF8Key: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) { self.text = text }

    public static func == (a: UTF8Key, b: UTF8Key) -> Bool { a.text.bytesEqual(b.text) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(text.utf8.count)
        for byte in text.utf8 { hasher.combine(byte) }
    }

    public var description: String { text }
}

extension RawRepresentable where Self: CaseIterable, RawValue == String {
    /// The case whose raw value has exactly these UTF-8 bytes (`init(rawValue:)` matches by equivalence).
    public init?(exactRawValue text: some StringProtocol) {
        guard let found = Self.allCases.first(where: { $0.rawValue.bytesEqual(text) }) else { return nil }
        self = found
    }
}
