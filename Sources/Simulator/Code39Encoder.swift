/// Code 39 (ISO/IEC 16388): 0-9, A-Z, space and - . $ / + %, framed by `*`, no check character.
/// Wide elements are 3 modules, narrow 1, with a one-module gap between characters.
public enum Code39Encoder {
    /// Nine elements per character (bar, space, bar, …); "1" marks a wide element.
    static let table: [Character: String] = [
        "0": "000110100", "1": "100100001", "2": "001100001", "3": "101100000", "4": "000110001",
        "5": "100110000", "6": "001110000", "7": "000100101", "8": "100100100", "9": "001100100",
        "A": "100001001", "B": "001001001", "C": "101001000", "D": "000011001", "E": "100011000",
        "F": "001011000", "G": "000001101", "H": "100001100", "I": "001001100", "J": "000011100",
        "K": "100000011", "L": "001000011", "M": "101000010", "N": "000010011", "O": "100010010",
        "P": "001010010", "Q": "000000111", "R": "100000110", "S": "001000110", "T": "000010110",
        "U": "110000001", "V": "011000001", "W": "111000000", "X": "010010001", "Y": "110010000",
        "Z": "011010000", "-": "010000101", ".": "110000100", " ": "011000100", "$": "010101000",
        "/": "010100010", "+": "010001010", "%": "000101010", "*": "010010100",
    ]

    public static func encode(_ payload: [UInt8]) throws(SymbolError) -> ModuleBitmap {
        guard !payload.isEmpty else { throw SymbolError("Code 39 payload is empty") }
        let text = String(decoding: payload, as: UTF8.self)
        guard payload.allSatisfy({ $0 < 128 }), text.allSatisfy({ $0 != "*" && table[$0] != nil }) else {
            throw SymbolError("Code 39 carries 0-9, A-Z, space and - . $ / + % only")
        }
        var widths: [Int] = []
        for (n, c) in ("*" + text + "*").enumerated() {
            if n > 0 { widths.append(1) } // inter-character gap (a space)
            widths += table[c]!.map { $0 == "1" ? 3 : 1 }
        }
        return ModuleBitmap(bars: ModuleBitmap.bars(fromWidths: widths))
    }
}
