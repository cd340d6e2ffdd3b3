/// C-style escapes in user text (scenario payloads, `make-code --escapes`): `\\ \" \' \n \r \t \0 \a \b
/// \e \f \v \xHH` (exactly two hex digits). Everything else stands for its own UTF-8 bytes.
public enum CEscapes {
    public struct DecodeError: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public static let allowed = #"\\ \" \' \n \r \t \0 \a \b \e \f \v \xHH"#

    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            guard b == UInt8(ascii: "\\") else { out.append(b); continue }
            guard i < bytes.count else { throw DecodeError(description: "a lone backslash ends the text (write \\\\ for a backslash)") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "'"): out.append(0x27)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "0"): out.append(0x00)
            case UInt8(ascii: "a"): out.append(0x07)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "e"): out.append(0x1B)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "x"):
                guard i + 1 < bytes.count, let hi = hexValue(bytes[i]), let lo = hexValue(bytes[i + 1]) else {
                    throw DecodeError(description: "\\x needs two hex digits (\\x00 to \\xFF)")
                }
                out.append(hi << 4 | lo)
                i += 2
            default:
                let shown = String(decoding: [e], as: UTF8.self)
                throw DecodeError(description: "unknown escape \\\(shown) (allowed: \(allowed))")
            }
        }
        return out
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }
}
