/// EAN-13, EAN-8, UPC-A and UPC-E bars from the GS1 General Specifications tables.
/// Payloads are digits without the check digit (it is computed) or with it (it is verified).
public enum EANEncoder {
    /// Left-hand odd parity (set A / "L") patterns, 7 modules each.
    static let lCodes: [[Bool]] = ["0001101", "0011001", "0010011", "0111101", "0100011",
                                   "0110001", "0101111", "0111011", "0110111", "0001011"].map(bits)
    /// Right-hand (set C / "R"): the complement of L.
    static let rCodes: [[Bool]] = lCodes.map { $0.map { !$0 } }
    /// Left-hand even parity (set B / "G"): R reversed.
    static let gCodes: [[Bool]] = rCodes.map { Array($0.reversed()) }
    /// EAN-13: the parity of the six left digits (L = odd, G = even) encodes the first digit.
    static let ean13Parity = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG",
                              "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL"]
    /// UPC-E, number system 0: the parity of the six digits encodes the check digit (O = odd/L, E = even/G).
    static let upcEParity = ["EEEOOO", "EEOEOO", "EEOOEO", "EEOOOE", "EOEEOO",
                             "EOOEEO", "EOOOEE", "EOEOEO", "EOEOOE", "EOOEOE"]

    private static func bits(_ s: String) -> [Bool] { s.map { $0 == "1" } }

    /// GS1 check digit: weights 3, 1, 3, … from the rightmost data digit.
    public static func checkDigit(_ digits: [Int]) -> Int {
        var sum = 0
        for (i, d) in digits.reversed().enumerated() { sum += d * (i % 2 == 0 ? 3 : 1) }
        return (10 - sum % 10) % 10
    }

    /// Digits of `payload` with the check digit appended or verified; `dataCount` digits without it.
    static func digitsWithCheck(_ payload: [UInt8], dataCount: Int, name: String) throws(SymbolError) -> [Int] {
        guard payload.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), payload.count == dataCount || payload.count == dataCount + 1 else {
            throw SymbolError("\(name) needs \(dataCount) or \(dataCount + 1) digits (the last one is the check digit)")
        }
        var digits = payload.map { Int($0 - 0x30) }
        let check = checkDigit(Array(digits.prefix(dataCount)))
        if digits.count == dataCount + 1 {
            guard digits[dataCount] == check else {
                throw SymbolError("\(name) check digit is wrong: \(String(decoding: payload, as: UTF8.self)) should end in \(check)")
            }
        } else {
            digits.append(check)
        }
        return digits
    }

    private static let guardBars = bits("101")
    private static let centreBars = bits("01010")

    public static func ean13(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        ModuleBitmap(bars: ean13Bars(try digitsWithCheck(payload, dataCount: 12, name: "EAN-13")))
    }

    /// UPC-A: 11 or 12 digits, drawn as EAN-13 with a leading 0.
    public static func upcA(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        ModuleBitmap(bars: ean13Bars([0] + (try digitsWithCheck(payload, dataCount: 11, name: "UPC-A"))))
    }

    static func ean13Bars(_ digits: [Int]) -> [Bool] {
        let parity = Array(ean13Parity[digits[0]])
        var bars = guardBars
        for i in 1...6 { bars += parity[i - 1] == "L" ? lCodes[digits[i]] : gCodes[digits[i]] }
        bars += centreBars
        for i in 7...12 { bars += rCodes[digits[i]] }
        return bars + guardBars
    }

    public static func ean8(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        let digits = try digitsWithCheck(payload, dataCount: 7, name: "EAN-8")
        var bars = guardBars
        for i in 0..<4 { bars += lCodes[digits[i]] }
        bars += centreBars
        for i in 4..<8 { bars += rCodes[digits[i]] }
        return ModuleBitmap(bars: bars + guardBars)
    }

    /// UPC-E: 6 digits (number system 0), or number system (0 or 1) + 6 digits, optionally + check digit.
    public static func upcE(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        guard payload.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), (6...8).contains(payload.count) else {
            throw SymbolError("UPC-E needs 6 digits, or the number system 0/1 + 6 digits, optionally + the check digit")
        }
        var digits = payload.map { Int($0 - 0x30) }
        if digits.count == 6 { digits.insert(0, at: 0) }
        guard digits[0] == 0 || digits[0] == 1 else { throw SymbolError("UPC-E number system must be 0 or 1") }
        let six = Array(digits[1...6])
        let check = checkDigit(expandUPCE(numberSystem: digits[0], six))
        if digits.count == 8, digits[7] != check {
            throw SymbolError("UPC-E check digit is wrong: it should be \(check)")
        }
        var parity = Array(upcEParity[check])
        if digits[0] == 1 { parity = parity.map { $0 == "E" ? "O" : "E" } }
        var bars = guardBars
        for i in 0..<6 { bars += parity[i] == "O" ? lCodes[six[i]] : gCodes[six[i]] }
        return ModuleBitmap(bars: bars + bits("010101"))
    }

    /// The 11 UPC-A data digits a UPC-E code stands for (zero suppression rules).
    static func expandUPCE(numberSystem: Int, _ d: [Int]) -> [Int] {
        let body: [Int]
        switch d[5] {
        case 0, 1, 2: body = [d[0], d[1], d[5], 0, 0, 0, 0, d[2], d[3], d[4]]
        case 3: body = [d[0], d[1], d[2], 0, 0, 0, 0, 0, d[3], d[4]]
        case 4: body = [d[0], d[1], d[2], d[3], 0, 0, 0, 0, 0, d[4]]
        default: body = [d[0], d[1], d[2], d[3], d[4], 0, 0, 0, 0, d[5]]
        }
        return [numberSystem] + body
    }
}
