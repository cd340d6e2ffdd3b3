/// Prefix and suffix bytes written as text with C escapes: `\r`, `\n`, `\t`, `\xNN` (two hex digits),
/// `\\`. Everything else stands for its own UTF-8 bytes.
public enum CEscapedText {
    public static let allowedText = #"\r \n \t \xNN \\"#

    /// Parses `text`; the error says what is allowed.
    public static func parse(_ text: String) throws(CEscapeError) -> [UInt8] {
        let input = Array(text.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < input.count {
            let byte = input[i]
            guard byte == UInt8(ascii: "\\") else { out.append(byte); i += 1; continue }
            guard i + 1 < input.count else {
                throw CEscapeError("'\(text)' ends in a lone backslash (escapes: \(allowedText))")
            }
            switch input[i + 1] {
            case UInt8(ascii: "r"): out.append(0x0D); i += 2
            case UInt8(ascii: "n"): out.append(0x0A); i += 2
            case UInt8(ascii: "t"): out.append(0x09); i += 2
            case UInt8(ascii: "\\"): out.append(0x5C); i += 2
            case UInt8(ascii: "x"), UInt8(ascii: "X"):
                guard i + 3 < input.count, let hi = hexValue(input[i + 2]), let lo = hexValue(input[i + 3]) else {
                    throw CEscapeError("'\(text)' has \\x without two hex digits (escapes: \(allowedText))")
                }
                out.append(hi << 4 | lo)
                i += 4
            default:
                let shown = escapeLetter(input[i + 1])
                throw CEscapeError("'\(text)' has the unknown escape \\\(shown) (escapes: \(allowedText))")
            }
        }
        return out
    }

    /// The text form of `bytes` that `parse` reads back: printable ASCII as is, `\\`, `\r`, `\n`, `\t`,
    /// everything else `\xNN`.
    public static func render(_ bytes: [UInt8]) -> String {
        var out = ""
        for b in bytes {
            switch b {
            case 0x0D: out += "\\r"
            case 0x0A: out += "\\n"
            case 0x09: out += "\\t"
            case 0x5C: out += "\\\\"
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(b))
            default: out += "\\x" + String(decoding: Hex.encode([b]), as: UTF8.self)
            }
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func escapeLetter(_ b: UInt8) -> String {
        (0x21..<0x7F).contains(b) ? String(Unicode.Scalar(b)) : "x" + String(decoding: Hex.encode([b]), as: UTF8.self)
    }
}

public struct CEscapeError: Error, CustomStringConvertible, Sendable {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
