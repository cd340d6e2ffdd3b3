import Core
import Settings

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
