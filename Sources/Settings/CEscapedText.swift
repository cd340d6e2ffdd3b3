import Platform
import Core

/// Prefix and suffix bytes written as text with C escapes (decoded by Core's `CEscapes`): `\r`, `\n`, `\t`, `\xNN` (two hex digits),
/// `\\`. Everything else stands for its own UTF-8 bytes.
public enum CEscapedText {
    public static let allowedText = #"\r \n \t \xNN \\"#

    static let letters = CEscapes.letters("rnt\\xX")

    /// Parses `text` with Core's `CEscapes`; the error says what is allowed.
    public static func parse(_ text: String) throws(CEscapeError) -> [UInt8] {
        do throws(CEscapes.Failure) {
            return try CEscapes.decode(text, allowed: letters)
        } catch {
            switch error {
            case .loneBackslash:
                throw CEscapeError("'\(text)' ends in a lone backslash (escapes: \(allowedText))")
            case .badHex:
                throw CEscapeError("'\(text)' has \\x without two hex digits (escapes: \(allowedText))")
            case .unknown(let e):
                throw CEscapeError("'\(text)' has the unknown escape \\\(escapeLetter(e)) (escapes: \(allowedText))")
            }
        }
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

    private static func escapeLetter(_ b: UInt8) -> String {
        (0x21..<0x7F).contains(b) ? String(Unicode.Scalar(b)) : "x" + String(decoding: Hex.encode([b]), as: UTF8.self)
    }
}

public struct CEscapeError: Error, CustomStringConvertible, Sendable {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
