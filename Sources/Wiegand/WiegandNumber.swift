import Core

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

/// One frame ready for the transmitter, and what it carries (for logs, doctor and tests).
public struct WiegandFrame: Equatable, Sendable {
    public let bits: WiegandBits
    public let format: WiegandFormat
    /// nil for a format without a facility field.
    public let facility: UInt64?
    public let card: UInt64
    /// True when `wiegand-over-range = low-bits` cut the number (or the facility) to fit.
    public let truncated: Bool

    /// "facility 90, card 324 (26 bits 00101101000000001010001000)".
    public var summary: String {
        let what = facility.map { "\(format.facilityName) \($0), card \(card)" } ?? "card \(card)"
        return "\(what)\(truncated ? " (low bits kept)" : "") as \(bits.count) bits \(bits)"
    }
}

/// Turns reads into frames: the mapping (`wiegand-map`, `wiegand-facility`), the range rule
/// (`wiegand-over-range`) and the format. Pure and cheap: runs once per read on the decode queue. Every
/// refusal is one line saying what was wrong and what is allowed, and never echoes more than 20
/// characters of the payload.
public struct WiegandEncoder: Sendable {
    public let format: WiegandFormat
    public let map: WiegandMap
    public let facility: WiegandFacility
    public let overRange: WiegandOverRange

    public init(format: WiegandFormat, map: WiegandMap, facility: WiegandFacility = .none,
                overRange: WiegandOverRange = .refuse) {
        self.format = format
        self.map = map
        self.facility = facility
        self.overRange = overRange
    }

    public init(settings: WiegandSettings) {
        self.init(format: settings.format, map: settings.map, facility: settings.facility, overRange: settings.overRange)
    }

    /// The frame for a read: its `doorData`, or its verified credential's number.
    public func frame(for event: ReadEvent) -> Result<WiegandFrame, WiegandRefusal> {
        frame(payload: event.doorData, credential: event.credential)
    }

    public func frame(payload: [UInt8], credential: CredentialInfo?) -> Result<WiegandFrame, WiegandRefusal> {
        let number: UInt64
        switch map {
        case .decimal:
            switch Self.decimal(payload[...], what: "the payload", mode: "wiegand-map decimal") {
            case .success(let n): number = n
            case .failure(let e): return .failure(e)
            }
        case .hex:
            switch Self.hex(payload) {
            case .success(let n): number = n
            case .failure(let e): return .failure(e)
            }
        case .digits(let a, let b):
            switch Self.digits(payload, from: a, to: b, option: "wiegand-map digits:\(a)-\(b)") {
            case .success(let n): number = n
            case .failure(let e): return .failure(e)
            }
        case .credential:
            guard let credential else {
                return .failure(WiegandRefusal("no verified credential in this read: wiegand-map credential sends only the number of a signed pass (credential-format)"))
            }
            switch Self.decimal(Array(credential.number.utf8)[...], what: "the credential number",
                                mode: "wiegand-map credential") {
            case .success(let n): number = n
            case .failure(let e): return .failure(e)
            }
        }

        var facilityValue: UInt64?
        switch facility {
        case .none: facilityValue = nil
        case .fixed(let f): facilityValue = f
        case .digits(let a, let b):
            switch Self.digits(payload, from: a, to: b, option: "wiegand-facility digits:\(a)-\(b)") {
            case .success(let f): facilityValue = f
            case .failure(let e): return .failure(e)
            }
        }
        return frame(number: number, facility: facilityValue)
    }

    /// The frame for a number already taken from the read (and a facility code, when the settings give
    /// one), with the range rule applied.
    public func frame(number: UInt64, facility given: UInt64?) -> Result<WiegandFrame, WiegandRefusal> {
        var truncated = false
        let rule = "wiegand-over-range = \(overRange.rawValue)"
        func fit(_ value: UInt64, max: UInt64, what: String) -> Result<UInt64, WiegandRefusal> {
            if value <= max { return .success(value) }
            if overRange == .lowBits {
                truncated = true
                return .success(value & max)
            }
            return .failure(WiegandRefusal("\(what) \(value) is out of range for wiegand-format \(format): 0-\(max) (\(rule))"))
        }

        let facilityField: UInt64?, card: UInt64
        if format.facilityBits == 0 {
            switch fit(number, max: format.maxCard, what: "number") {
            case .success(let c): card = c
            case .failure(let e): return .failure(e)
            }
            facilityField = nil
        } else if let given {
            switch fit(given, max: format.maxFacility, what: format.facilityName) {
            case .success(let f): facilityField = f
            case .failure(let e): return .failure(e)
            }
            switch fit(number, max: format.maxCard, what: "card number") {
            case .success(let c): card = c
            case .failure(let e): return .failure(e)
            }
        } else {
            // No facility given: the number is the whole data field, facility in the high bits.
            let data: UInt64
            switch fit(number, max: format.maxData,
                       what: "number (\(format.facilityName) and card number together, no wiegand-facility)") {
            case .success(let d): data = d
            case .failure(let e): return .failure(e)
            }
            facilityField = data >> UInt64(format.cardBits)
            card = data & format.maxCard
        }
        guard let bits = format.encode(facility: facilityField ?? 0, card: card) else {
            return .failure(WiegandRefusal("cannot encode \(format.facilityName) \(facilityField ?? 0), card \(card) as wiegand-format \(format)"))
        }
        return .success(WiegandFrame(bits: bits, format: format, facility: facilityField, card: card, truncated: truncated))
    }

    // MARK: numbers from bytes

    /// " 'A'" for a printable ASCII byte, " 0x1B" otherwise: how a refusal names a bad character.
    static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    static func decimal(_ digits: ArraySlice<UInt8>, what: String, mode: String) -> Result<UInt64, WiegandRefusal> {
        guard !digits.isEmpty else { return .failure(WiegandRefusal("\(what) is empty; \(mode) needs digits 0-9")) }
        guard digits.count <= WiegandMap.maxDecimalDigits else {
            return .failure(WiegandRefusal("\(what) has \(digits.count) characters; \(mode) takes a number of at most \(WiegandMap.maxDecimalDigits) digits"))
        }
        var n: UInt64 = 0
        for (i, b) in digits.enumerated() {
            guard b >= 0x30 && b <= 0x39 else {
                return .failure(WiegandRefusal("\(what) is not a decimal number: character \(i + 1) is \(describe(b)); \(mode) takes only digits 0-9"))
            }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(b - 0x30))
            guard !o1 && !o2 else {
                return .failure(WiegandRefusal("\(what) \(String(decoding: digits, as: UTF8.self)) is larger than the largest 64-bit number (18446744073709551615)"))
            }
            n = s
        }
        return .success(n)
    }

    static func hex(_ payload: [UInt8]) -> Result<UInt64, WiegandRefusal> {
        guard !payload.isEmpty else { return .failure(WiegandRefusal("the payload is empty; wiegand-map hex needs hex digits 0-9, a-f")) }
        guard payload.count <= WiegandMap.maxHexDigits else {
            return .failure(WiegandRefusal("the payload has \(payload.count) characters; wiegand-map hex takes a number of at most \(WiegandMap.maxHexDigits) hex digits"))
        }
        var n: UInt64 = 0
        for (i, b) in payload.enumerated() {
            let v: UInt8
            switch b {
            case 0x30...0x39: v = b - 0x30
            case 0x41...0x46: v = b - 0x41 + 10
            case 0x61...0x66: v = b - 0x61 + 10
            default:
                return .failure(WiegandRefusal("the payload is not a hex number: character \(i + 1) is \(describe(b)); wiegand-map hex takes only 0-9, a-f, A-F (no 0x)"))
            }
            n = n << 4 | UInt64(v)   // at most 16 digits: never overflows
        }
        return .success(n)
    }

    static func digits(_ payload: [UInt8], from a: Int, to b: Int, option: String) -> Result<UInt64, WiegandRefusal> {
        guard payload.count >= b else {
            return .failure(WiegandRefusal("the payload has \(payload.count) characters; \(option) takes characters \(a) to \(b)"))
        }
        let slice = payload[(a - 1)..<b]
        if let i = slice.firstIndex(where: { $0 < 0x30 || $0 > 0x39 }) {
            return .failure(WiegandRefusal("character \(i + 1) of the payload is \(describe(payload[i])), not a digit 0-9 (\(option))"))
        }
        return decimal(slice, what: "characters \(a)-\(b) of the payload", mode: option)
    }
}

/// Why Wiegand cannot carry a read: one line for the log and the JSON line's `refused` object.
public struct WiegandRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
