/// Code 128 (ISO/IEC 15417) for bytes 0–127: code sets A (control characters), B (printable) and
/// C (digit pairs) chosen automatically, with the modulo-103 checksum.
public enum Code128Encoder {
    /// Bar/space widths of symbol values 0…105, then the stop pattern (106).
    static let patterns: [String] = [
        "212222", "222122", "222221", "121223", "121322", "131222", "122213", "122312", "132212", "221213",
        "221312", "231212", "112232", "122132", "122231", "113222", "123122", "123221", "223211", "221132",
        "221231", "213212", "223112", "312131", "311222", "321122", "321221", "312212", "322112", "322211",
        "212123", "212321", "232121", "111323", "131123", "131321", "112313", "132113", "132311", "211313",
        "231113", "231311", "112133", "112331", "132131", "113123", "113321", "133121", "313121", "211331",
        "231131", "213113", "213311", "213131", "311123", "311321", "331121", "312113", "312311", "332111",
        "314111", "221411", "431111", "111224", "111422", "121124", "121421", "141122", "141221", "112214",
        "112412", "122114", "122411", "142112", "142211", "241211", "221114", "413111", "241112", "134111",
        "111242", "121142", "121241", "114212", "124112", "124211", "411212", "421112", "421211", "212141",
        "214121", "412121", "111143", "111341", "131141", "114113", "114311", "411113", "411311", "113141",
        "114131", "311141", "411131", "211412", "211214", "211232", "2331112",
    ]

    enum CodeSet { case a, b, c }
    static let startA = 103, startB = 104, startC = 105, stop = 106
    static let switchToC = 99, switchToB = 100, switchToA = 101

    public static func encode(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        let values = try symbolValues(payload)
        var widths: [Int] = []
        for v in values { widths += patterns[v].map { Int(String($0))! } }
        return ModuleBitmap(bars: ModuleBitmap.bars(fromWidths: widths))
    }

    /// Start, data and switch values, checksum and stop.
    static func symbolValues(_ payload: [UInt8]) throws(SymbolError) -> [Int] {
        guard !payload.isEmpty else { throw SymbolError("Code 128 payload is empty") }
        guard payload.allSatisfy({ $0 < 128 }) else { throw SymbolError("Code 128 carries bytes 0-127 only (ASCII)") }
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        func digitRun(from i: Int) -> Int {
            var n = 0
            while i + n < payload.count && isDigit(payload[i + n]) { n += 1 }
            return n
        }
        /// A or B for the next non-digit-pair characters: A if a control character comes before a lower-case one.
        func textSet(from i: Int) -> CodeSet {
            for b in payload[i...] {
                if b < 32 { return .a }
                if b >= 96 { return .b }
            }
            return .b
        }

        var values: [Int] = []
        var set: CodeSet
        let leadingDigits = digitRun(from: 0)
        if leadingDigits >= 4 || (leadingDigits == payload.count && leadingDigits % 2 == 0) {
            set = .c
            values.append(startC)
        } else {
            set = textSet(from: 0)
            values.append(set == .a ? startA : startB)
        }
        var i = 0
        while i < payload.count {
            let run = digitRun(from: i)
            if set == .c {
                if run >= 2 {
                    values.append(Int(payload[i] - 0x30) * 10 + Int(payload[i + 1] - 0x30))
                    i += 2
                    continue
                }
                set = textSet(from: i)
                values.append(set == .a ? switchToA : switchToB)
                continue
            }
            // In A or B: switch to C for a run of 4+ digits (an odd run's first digit stays in A/B).
            if run >= 4 {
                if run % 2 == 1 {
                    values.append(value(of: payload[i], in: set))
                    i += 1
                }
                set = .c
                values.append(switchToC)
                continue
            }
            let b = payload[i]
            if set == .b && b < 32 {
                set = .a
                values.append(switchToA)
            } else if set == .a && b >= 96 {
                set = .b
                values.append(switchToB)
            }
            values.append(value(of: b, in: set))
            i += 1
        }
        var checksum = values[0]
        for (position, v) in values.enumerated().dropFirst() { checksum += position * v }
        values.append(checksum % 103)
        values.append(stop)
        return values
    }

    static func value(of byte: UInt8, in set: CodeSet) -> Int {
        let b = Int(byte)
        switch set {
        case .a: return b < 32 ? b + 64 : b - 32
        case .b: return b - 32
        case .c: preconditionFailure("digits in set C are encoded in pairs")
        }
    }
}
