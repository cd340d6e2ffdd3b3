import Core
import Wiegand
import Settings

/// `wiegand`: WiegandEncoder (mapping + format) for settings picked from the input that pass
/// `WiegandSettings.validate()`, on an arbitrary payload (and credential number). Invariants: a frame
/// exactly when an independent parse of the payload says the number is valid and fits (or low-bits is
/// on); the frame has the format's length, its parity bits hold (checked from the format tables
/// below, not through the encoder), and its fields carry the number; a refusal is one short line.
enum WiegandFuzz {
    static let formats: [WiegandFormat] = WiegandFormat.named + [.raw(bits: 1), .raw(bits: 7), .raw(bits: 32), .raw(bits: 63), .raw(bits: 64)]

    /// (length, facility first..last or nil, card first..last, parity rules) written from the
    /// definitions again, for checking.
    static func layout(_ f: WiegandFormat) -> (facility: ClosedRange<Int>?, card: ClosedRange<Int>, parity: [(Int, Bool, [Int])]) {
        // (position, odd?, covered)
        switch f {
        case .h10301: return (2...9, 10...25, [(1, false, Array(2...13)), (26, true, Array(14...25))])
        case .n10002: return (2...17, 18...33, [(1, false, Array(2...17)), (34, true, Array(18...33))])
        case .h10304: return (2...17, 18...36, [(1, false, Array(2...19)), (37, true, Array(19...36))])
        case .h10302: return (nil, 2...36, [(1, false, Array(2...19)), (37, true, Array(19...36))])
        case .corporate1000:
            let even = (0..<11).flatMap { [3 + 3 * $0, 4 + 3 * $0] }, odd = (0..<11).flatMap { [2 + 3 * $0, 3 + 3 * $0] }
            return (3...14, 15...34, [(2, false, even), (35, true, odd), (1, true, Array(2...35))])
        case .raw(let n): return (nil, 1...n, [])
        }
    }

    @Sendable static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var settings = WiegandSettings()
        settings.format = input.pick(formats)
        let a = Int(input.byte()) % 24 + 1, len = Int(input.byte()) % 21
        settings.map = input.pick([.decimal, .hex, .credential, .digits(from: a, to: a + max(0, len - 1))])
        let fa = Int(input.byte()) % 24 + 1, flen = Int(input.byte()) % 6
        var fixed: UInt64 = 0
        for _ in 0..<3 { fixed = fixed << 8 | UInt64(input.byte()) }
        settings.facility = input.pick([WiegandFacility.none, .fixed(fixed % 5000), .digits(from: fa, to: fa + flen)])
        settings.overRange = input.flag() ? .lowBits : .refuse
        let credentialText = input.field(maxLength: 24)
        let payload = input.rest()
        guard (try? settings.validate()) != nil else { return }
        let credential = input.flag() || settings.map == .credential
            ? CredentialInfo(format: "jwt", number: String(decoding: credentialText, as: UTF8.self), keyID: "k", tokenID: nil, expiresAt: 0)
            : nil
        check(WiegandEncoder(settings: settings), payload: payload, credential: credential)
    }

    /// The number an independent reading of `text` gives, or nil when it is no number for the map.
    static func number(_ text: [UInt8], hex: Bool) -> UInt64? {
        guard !text.isEmpty, text.count <= (hex ? 16 : 20) else { return nil }
        let digits = hex ? Array("0123456789abcdefABCDEF".utf8) : Array("0123456789".utf8)
        guard text.allSatisfy(digits.contains) else { return nil }
        return UInt64(String(decoding: text, as: UTF8.self), radix: hex ? 16 : 10)
    }

    static func check(_ encoder: WiegandEncoder, payload: [UInt8], credential: CredentialInfo?) {
        let format = encoder.format
        let describe = "format \(format.name) map \(encoder.map) facility \(encoder.facility) \(encoder.overRange.rawValue), payload \(payload.prefix(40)), credential \(credential?.number ?? "-")"
        // What the frame should carry, independently.
        var expected: UInt64?
        switch encoder.map {
        case .decimal: expected = number(payload, hex: false)
        case .hex: expected = number(payload, hex: true)
        case .credential: expected = credential.flatMap { number(Array($0.number.utf8), hex: false) }
        case .digits(let a, let b): expected = payload.count >= b ? number(Array(payload[(a - 1)..<b]), hex: false) : nil
        }
        var facility: UInt64?
        switch encoder.facility {
        case .none: facility = nil
        case .fixed(let f): facility = f
        case .digits(let a, let b):
            guard payload.count >= b, let f = number(Array(payload[(a - 1)..<b]), hex: false) else { expected = nil; break }
            facility = f
        }
        let lowBits = encoder.overRange == .lowBits
        var fits = expected != nil
        if let n = expected {
            if format.facilityBits == 0 { fits = n <= format.maxCard }
            else if let f = facility { fits = f <= format.maxFacility && n <= format.maxCard }
            else { fits = n <= format.maxData }
        }
        switch encoder.frame(payload: payload, credential: credential) {
        case .failure(let refusal):
            require(!refusal.reason.isEmpty && refusal.reason.count <= 300 && !refusal.reason.contains("\n"),
                    "refusal not one short line: \(refusal.reason) \(describe)")
            require(expected == nil || (!fits && !lowBits), "a valid, fitting number was refused (\(refusal.reason)): \(describe)")
        case .success(let frame):
            require(expected != nil && (fits || lowBits), "a frame for a payload that is no fitting number: \(frame.summary) \(describe)")
            require(frame.bits.count == format.bitCount, "frame has \(frame.bits.count) bits, format \(format.bitCount): \(describe)")
            require(frame.truncated == !fits, "truncated \(frame.truncated) but fits \(fits): \(describe)")
            let (fRange, cRange, parity) = layout(format)
            func field(_ r: ClosedRange<Int>) -> UInt64 { r.reduce(UInt64(0)) { $0 << 1 | (frame.bits.bit($1) ? 1 : 0) } }
            for (position, odd, covered) in parity {
                let ones = covered.filter { frame.bits.bit($0) }.count + (frame.bits.bit(position) ? 1 : 0)
                require(ones % 2 == (odd ? 1 : 0), "parity bit \(position) wrong in \(frame.bits): \(describe)")
            }
            let card = field(cRange), fac = fRange.map(field)
            require(card == frame.card && fac == frame.facility, "fields \(fac.map(String.init) ?? "-")/\(card) differ from the frame's \(frame.summary): \(describe)")
            guard let n = expected else { return }
            if format.facilityBits == 0 {
                require(card == (n & format.maxCard), "card \(card) is not the number \(n): \(describe)")
            } else if let f = facility {
                require(card == (n & format.maxCard) && fac == (f & format.maxFacility), "\(frame.summary) is not \(f)/\(n): \(describe)")
            } else {
                let data = n & format.maxData
                require(fac == data >> UInt64(format.cardBits) && card == data & format.maxCard, "\(frame.summary) is not \(n): \(describe)")
            }
        }
    }
}
