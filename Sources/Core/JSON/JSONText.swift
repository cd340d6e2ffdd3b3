/// Minimal JSON writing for event lines (RFC 8259). Strings escape `"`, `\`, every control character,
/// DEL and U+2028/U+2029, so a payload can never end a line or break the object.
public enum JSONText {
    public static func string(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let v = scalar.value
                if v < 0x20 || v == 0x7F || v == 0x2028 || v == 0x2029 || (0x80...0x9F).contains(v) {
                    let hex = String(v, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
        return out
    }

    /// As `string`, with every character outside ASCII escaped too (`"front-door-\u212a"`): for messages
    /// about text compared byte for byte, where "K" and U+212A KELVIN SIGN, or a composed "é" and a
    /// decomposed one, must not look alike. Still valid JSON for the same text.
    public static func asciiString(_ text: String) -> String {
        var out = ""
        for scalar in string(text).unicodeScalars {
            if scalar.isASCII {
                out.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out
    }

    /// A number with at most `decimals` decimals, no exponent.
    public static func number(_ value: Double, decimals: Int = 3) -> String {
        guard value.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if rounded == rounded.rounded() && abs(rounded) < 1e15 { return String(Int64(rounded)) }
        return String(rounded)
    }

    /// An object from ordered (key, already-encoded value) pairs.
    public static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
