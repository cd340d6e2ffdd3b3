/// How a read becomes the number Wiegand sends (`wiegand-map`).
public enum WiegandMap: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The payload is a decimal number (digits 0-9 only, at most 20; leading zeros are allowed).
    case decimal
    /// The payload is a hexadecimal number (0-9, a-f, A-F only, at most 16 digits; no 0x prefix).
    case hex
    /// Characters `from` to `to` (1-based, inclusive) of the payload, all digits 0-9.
    case digits(from: Int, to: Int)
    /// The number a verified signed pass carries (`event.credential?.number`), a decimal number.
    case credential

    /// The most digits a number may have: 20 decimal digits or 16 hex digits hold any 64-bit number.
    public static let maxDecimalDigits = 20
    public static let maxHexDigits = 16
    /// The highest position `digits:A-B` may name.
    public static let maxPosition = 4096
    public static let allowedText = "decimal, hex, digits:A-B (1 <= A <= B <= 4096, at most 20 digits) or credential"

    public var description: String {
        switch self {
        case .decimal: return "decimal"
        case .hex: return "hex"
        case .digits(let a, let b): return "digits:\(a)-\(b)"
        case .credential: return "credential"
        }
    }

    public static func parse(_ text: String) -> WiegandMap? {
        switch text.lowercased() {
        case "decimal": return .decimal
        case "hex": return .hex
        case "credential": return .credential
        default:
            guard let (a, b) = parseRange(text, prefix: "digits:") else { return nil }
            return .digits(from: a, to: b)
        }
    }

    /// "digits:3-8" → (3, 8), checked against the limits above.
    static func parseRange(_ text: String, prefix: String) -> (Int, Int)? {
        let t = text.lowercased()
        guard t.hasPrefix(prefix) else { return nil }
        let parts = t.dropFirst(prefix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.count <= 5 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let a = Int(parts[0]), let b = Int(parts[1]),
              a >= 1, a <= b, b <= maxPosition, b - a + 1 <= maxDecimalDigits else { return nil }
        return (a, b)
    }
}

/// Where the facility (company) code comes from (`wiegand-facility`), for formats that have one.
public enum WiegandFacility: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Not set: the number fills the facility and card fields together (facility in the high bits).
    case none
    /// This facility code for every read; the number is the card number alone.
    case fixed(UInt64)
    /// Characters `from` to `to` of the payload (with `wiegand-map = digits:A-B`); the number is the card number.
    case digits(from: Int, to: Int)

    public static let allowedText = "a number that fits the format's facility field, or digits:A-B (with wiegand-map digits:C-D)"

    public var description: String {
        switch self {
        case .none: return "none"
        case .fixed(let n): return String(n)
        case .digits(let a, let b): return "digits:\(a)-\(b)"
        }
    }

    public static func parse(_ text: String) -> WiegandFacility? {
        if text.isEmpty || text.lowercased() == "none" { return WiegandFacility.none }
        if let (a, b) = WiegandMap.parseRange(text, prefix: "digits:") { return .digits(from: a, to: b) }
        guard text.count <= WiegandMap.maxDecimalDigits, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let n = UInt64(text) else { return nil }
        return .fixed(n)
    }
}

/// What to do with a number wider than the format (`wiegand-over-range`).
public enum WiegandOverRange: String, CaseIterable, Equatable, Sendable {
    /// Refused for Wiegand (the read still goes to the other outputs).
    case refuse
    /// The low bits are sent, as some readers do.
    case lowBits = "low-bits"

    public static let allowedText = "refuse or low-bits"
}
