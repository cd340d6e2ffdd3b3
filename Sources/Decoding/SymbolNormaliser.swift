import Core
import Settings

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
            // 13 digits not starting with 0 are an EAN-13, whatever the reader called them: dropping
            // the first digit would report a different (and invalid) UPC-A.
            if s.symbology == .upca, !isUPC { s.symbology = .ean13 }
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
            if settings.upceAsGTIN13 { s.data = [UInt8(ascii: "0")] + expanded }
        case .code39:
            if settings.code39FullASCII, let full = code39FullASCII(s.data) { s.data = full }
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

    /// Code 39 full ASCII: `$A`…`$Z` control characters, `%A`…`%Z` punctuation, `/A`…`/Z` symbols,
    /// `+A`…`+Z` lower case. nil when the payload has an invalid pair (then it is plain Code 39).
    public static func code39FullASCII(_ data: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var i = 0
        while i < data.count {
            let c = data[i]
            guard c == UInt8(ascii: "$") || c == UInt8(ascii: "%") || c == UInt8(ascii: "/") || c == UInt8(ascii: "+")
            else { out.append(c); i += 1; continue }
            guard i + 1 < data.count else { return nil }
            let n = data[i + 1]
            let letter = Int(n) - Int(UInt8(ascii: "A"))
            switch c {
            case UInt8(ascii: "$"):
                guard (0..<26).contains(letter) else { return nil }
                out.append(UInt8(1 + letter))
            case UInt8(ascii: "+"):
                guard (0..<26).contains(letter) else { return nil }
                out.append(UInt8(ascii: "a") + UInt8(letter))
            case UInt8(ascii: "/"):
                if (0..<15).contains(letter) {
                    out.append(UInt8(ascii: "!") + UInt8(letter))          // /A…/O: ! " # $ % & ' ( ) * + , - . /
                } else if n == UInt8(ascii: "Z") {
                    out.append(UInt8(ascii: ":"))
                } else {
                    return nil
                }
            default:  // %
                let table: [UInt8] = [0x1B, 0x1C, 0x1D, 0x1E, 0x1F,                 // %A…%E
                                      0x3B, 0x3C, 0x3D, 0x3E, 0x3F,                 // %F…%J  ; < = > ?
                                      0x5B, 0x5C, 0x5D, 0x5E, 0x5F,                 // %K…%O  [ \ ] ^ _
                                      0x7B, 0x7C, 0x7D, 0x7E, 0x7F,                 // %P…%T  { | } ~ DEL
                                      0x00, 0x40, 0x60, 0x7F, 0x7F, 0x7F]           // %U NUL %V @ %W ` %X-%Z DEL
                guard (0..<26).contains(letter) else { return nil }
                out.append(table[letter])
            }
            i += 2
        }
        return out
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
