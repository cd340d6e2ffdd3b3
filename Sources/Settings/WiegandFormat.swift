/// A Wiegand frame's bits, bit 1 (sent first) in the most significant of the low `count` bits. At most
/// 64 bits, held in one word, so a queued frame costs no heap allocation on the transmitter thread.
public struct WiegandBits: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let value: UInt64
    public let count: Int

    /// nil when `count` is not 1...64 or `value` has bits above `count`.
    public init?(value: UInt64, count: Int) {
        guard (1...64).contains(count), count == 64 || value >> UInt64(count) == 0 else { return nil }
        self.value = value
        self.count = count
    }

    /// From "0101..." (bit 1 first); nil for other characters or a length outside 1...64.
    public init?(_ text: String) {
        var v: UInt64 = 0, n = 0
        for c in text.utf8 {
            guard c == UInt8(ascii: "0") || c == UInt8(ascii: "1"), n < 64 else { return nil }
            v = v << 1 | UInt64(c - UInt8(ascii: "0"))
            n += 1
        }
        self.init(value: v, count: n)
    }

    /// Bit `position` (1 = sent first).
    public func bit(_ position: Int) -> Bool {
        precondition((1...count).contains(position), "Wiegand bit position \(position) outside 1...\(count)")
        return (value >> UInt64(count - position)) & 1 == 1
    }

    /// "00101101000000001010001000": bit 1 first.
    public var description: String {
        String((1...count).map { bit($0) ? "1" : "0" })
    }
}

/// The frame layouts ScanGate sends (`wiegand-format`). Bit positions count from 1, the first bit sent.
public enum WiegandFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// `26`, HID H10301: even parity over 2-13, facility 8 bits (2-9), card 16 bits (10-25), odd parity over 14-25.
    case h10301
    /// `34`, HID N10002: even parity over 2-17, facility 16 bits (2-17), card 16 bits (18-33), odd parity over 18-33.
    case n10002
    /// `35`, HID Corporate 1000: company 12 bits (3-14), card 20 bits (15-34); bit 2 even parity over
    /// 3,4,6,7,...,33,34; bit 35 odd parity over 2,3,5,6,...,32,33; bit 1 odd parity over 2-35.
    case corporate1000
    /// `37`, HID H10304: even parity over 2-19, facility 16 bits (2-17), card 19 bits (18-36), odd parity over 19-36.
    case h10304
    /// `37-h10302`, HID H10302: even parity over 2-19, card 35 bits (2-36), odd parity over 19-36.
    case h10302
    /// `raw:N`: the number as N bits (1-64), most significant first, no parity.
    case raw(bits: Int)

    /// The bit counts `raw:N` takes: a frame is held in one 64-bit word.
    public static let rawBitRange = 1...64
    /// What `wiegand-format` accepts, for error messages.
    public static let allowedText = "26, 34, 35, 37, 37-h10302 or raw:N (N 1-64)"
    public static let named: [WiegandFormat] = [.h10301, .n10002, .corporate1000, .h10304, .h10302]

    /// Parses a `wiegand-format` value; nil for anything else.
    public static func parse(_ text: String) -> WiegandFormat? {
        let t = text.lowercased()
        if let f = named.first(where: { $0.name == t }) { return f }
        switch t {
        case "h10301": return .h10301
        case "n10002": return .n10002
        case "h10304": return .h10304
        case "h10302": return .h10302
        case "corporate-1000", "c1000", "c1k35s": return .corporate1000
        default: break
        }
        guard t.hasPrefix("raw:") else { return nil }
        let digits = t.dropFirst(4)
        guard !digits.isEmpty, digits.count <= 2, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let n = Int(digits), rawBitRange.contains(n) else { return nil }
        return .raw(bits: n)
    }

    /// The option value: "26", "37-h10302", "raw:40".
    public var name: String {
        switch self {
        case .h10301: return "26"
        case .n10002: return "34"
        case .corporate1000: return "35"
        case .h10304: return "37"
        case .h10302: return "37-h10302"
        case .raw(let n): return "raw:\(n)"
        }
    }

    /// "26 (H10301)": how logs and refusals name it.
    public var description: String {
        switch self {
        case .h10301: return "26 (H10301)"
        case .n10002: return "34 (N10002)"
        case .corporate1000: return "35 (Corporate 1000)"
        case .h10304: return "37 (H10304)"
        case .h10302: return "37-h10302 (H10302)"
        case .raw(let n): return "raw:\(n) (\(n) bits, no parity)"
        }
    }

    public var bitCount: Int {
        switch self {
        case .h10301: return 26
        case .n10002: return 34
        case .corporate1000: return 35
        case .h10304, .h10302: return 37
        case .raw(let n): return n
        }
    }

    /// Bits of the facility (company) code; 0 when the format has none.
    public var facilityBits: Int {
        switch self {
        case .h10301: return 8
        case .n10002, .h10304: return 16
        case .corporate1000: return 12
        case .h10302, .raw: return 0
        }
    }

    /// Bits of the card number.
    public var cardBits: Int {
        switch self {
        case .h10301, .n10002: return 16
        case .corporate1000: return 20
        case .h10304: return 19
        case .h10302: return 35
        case .raw(let n): return n
        }
    }

    /// Facility and card together: the number's width when the payload carries both.
    public var dataBits: Int { facilityBits + cardBits }

    /// "company code" for Corporate 1000, else "facility code".
    public var facilityName: String { self == .corporate1000 ? "company code" : "facility code" }

    /// The largest value of a field `bits` wide.
    public static func maxValue(bits: Int) -> UInt64 { bits >= 64 ? .max : (UInt64(1) << UInt64(bits)) - 1 }

    public var maxFacility: UInt64 { facilityBits == 0 ? 0 : Self.maxValue(bits: facilityBits) }
    public var maxCard: UInt64 { Self.maxValue(bits: cardBits) }
    public var maxData: UInt64 { Self.maxValue(bits: dataBits) }
}
