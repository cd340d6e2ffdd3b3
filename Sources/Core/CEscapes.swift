/// C-style escapes in user text, the one decoder for every place that takes them (scenario payloads,
/// `make-code --escapes`, the serial prefix and suffix). Each caller says which escape letters it
/// allows and words its own error; everything that is not an escape stands for its own UTF-8 bytes.
public enum CEscapes {
    /// What was wrong with an escape.
    public enum Failure: Error, Sendable, Equatable {
        /// The text ends in a backslash.
        case loneBackslash
        /// `\x` without two hex digits after it.
        case badHex
        /// An escape letter the caller does not allow (the byte after the backslash).
        case unknown(UInt8)
    }

    /// Every escape letter and the byte it stands for (`x` is handled apart: `\xHH`).
    static let letters: [UInt8: UInt8] = [
        UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "\""): 0x22, UInt8(ascii: "'"): 0x27, UInt8(ascii: "n"): 0x0A,
        UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09, UInt8(ascii: "0"): 0x00, UInt8(ascii: "a"): 0x07,
        UInt8(ascii: "b"): 0x08, UInt8(ascii: "e"): 0x1B, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "v"): 0x0B,
    ]

    /// Decodes `text`, accepting only the escape letters in `allowed` (`x` for `\xHH`; `X` for `\XHH`).
    public static func decode(_ text: String, allowed: Set<UInt8>) throws(Failure) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            guard b == UInt8(ascii: "\\") else { out.append(b); continue }
            guard i < bytes.count else { throw .loneBackslash }
            let e = bytes[i]
            i += 1
            guard allowed.contains(e) else { throw .unknown(e) }
            if e == UInt8(ascii: "x") || e == UInt8(ascii: "X") {
                guard i + 1 < bytes.count, let hi = hexValue(bytes[i]), let lo = hexValue(bytes[i + 1]) else { throw .badHex }
                out.append(hi << 4 | lo)
                i += 2
            } else if let value = letters[e] {
                out.append(value)
            } else {
                throw .unknown(e)
            }
        }
        return out
    }

    /// The letters as a set, for `decode(_:allowed:)`: `CEscapes.letters("rnt\\x")`.
    public static func letters(_ text: String) -> Set<UInt8> { Set(text.utf8) }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }
}
