import Core

/// C-style escapes in scenario payloads and `make-code --escapes`: `\\ \" \' \n \r \t \0 \a \b \e \f \v
/// \xHH` (exactly two hex digits), decoded by Core's `CEscapes`.
public enum PayloadEscapes {
    public struct DecodeError: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public static let allowed = #"\\ \" \' \n \r \t \0 \a \b \e \f \v \xHH"#
    static let letters = CEscapes.letters("\\\"'nrt0abefvx")

    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        do throws(CEscapes.Failure) {
            return try CEscapes.decode(text, allowed: letters)
        } catch {
            switch error {
            case .loneBackslash:
                throw DecodeError(description: "a lone backslash ends the text (write \\\\ for a backslash)")
            case .badHex:
                throw DecodeError(description: "\\x needs two hex digits (\\x00 to \\xFF)")
            case .unknown(let e):
                throw DecodeError(description: "unknown escape \\\(String(decoding: [e], as: UTF8.self)) (allowed: \(allowed))")
            }
        }
    }
}
