import Core

/// Check digits and UPC forms, applied to every decoded symbol.
public enum SymbolNormaliser {
    /// nil when a check digit is wrong (a misread) or the symbology is not wanted.
    public static func normalise(_ symbol: DecodedSymbol, settings: DecoderSettings) -> DecodedSymbol? {
        var s = symbol
        switch s.symbology {
        case .ean13, .upca, .isbn13:
            guard s.data.count == 13 || (s.symbology == .upca && s.data.count == 12) else { return nil }
            if s.data.count == 12 { s.data.insert(UInt8(ascii: "0"), at: 0) }
            guard gtinCheckDigitValid(s.data) else { return nil }
            let isUPC = s.data.first == UInt8(ascii: "0")
            if s.symbology == .ean13, isUPC, settings.symbologies.contains(.upca) {
                s.symbology = .upca
            }
            if s.symbology == .upca {
                if settings.upcaAsEAN13 { s.symbology = .ean13 } else { s.data.removeFirst() }
            }
            if s.symbology == .ean13, !settings.symbologies.contains(.ean13), !settings.upcaAsEAN13,
               !settings.symbologies.contains(.isbn13) {
                return nil
            }
        case .ean8:
            guard s.data.count == 8, gtinCheckDigitValid(s.data) else { return nil }
        case .upce:
            guard s.data.count == 8, let expanded = expandUPCE(s.data), gtinCheckDigitValid([UInt8(ascii: "0")] + expanded)
            else { return nil }
        default:
            break
        }
        return s
    }

    /// GS1 mod-10 check over ASCII digits (last digit is the check digit).
    public static func gtinCheckDigitValid(_ digits: [UInt8]) -> Bool {
        guard digits.count >= 2, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return false }
        let values = digits.map { Int($0) - 48 }
        let body = values.dropLast()
        var sum = 0
        for (i, d) in body.reversed().enumerated() { sum += i % 2 == 0 ? d * 3 : d }
        return (10 - sum % 10) % 10 == values.last
    }

    /// UPC-E (8 digits: number system, 6 digits, check) to the 12-digit UPC-A it stands for.
    public static func expandUPCE(_ e: [UInt8]) -> [UInt8]? {
        guard e.count == 8, e.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let d = e.map { Character(Unicode.Scalar($0)) }
        let ns = d[0], x = Array(d[1...6]), check = d[7]
        var body: [Character]
        switch x[5] {
        case "0", "1", "2": body = [x[0], x[1], x[5], "0", "0", "0", "0", x[2], x[3], x[4]]
        case "3": body = [x[0], x[1], x[2], "0", "0", "0", "0", "0", x[3], x[4]]
        case "4": body = [x[0], x[1], x[2], x[3], "0", "0", "0", "0", "0", x[4]]
        default: body = [x[0], x[1], x[2], x[3], x[4], "0", "0", "0", "0", x[5]]
        }
        return Array(String([ns] + body + [check]).utf8)
    }
}
