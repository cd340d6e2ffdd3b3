/// Hexadecimal text, written once for every stage: serial checksums, key files, logs of binary data.
public enum Hex {
    /// The sixteen upper-case digits, as ASCII bytes.
    public static let upperDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
    static var upper: [UInt8] { upperDigits }
    static let lower: [UInt8] = Array("0123456789abcdef".utf8)

    /// `count` upper-case digits of `value`, most significant first.
    public static func digits(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).reversed().map { upper[Int((value >> (UInt64($0) * 4)) & 0xF)] }
    }

    /// Two upper-case digits per byte: [0x0D, 0xFF] → "0DFF" as ASCII bytes.
    public static func encode(_ bytes: some Sequence<UInt8>, lowercase: Bool = false) -> [UInt8] {
        let alphabet = lowercase ? lower : upper
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(alphabet[Int(b >> 4)])
            out.append(alphabet[Int(b & 0xF)])
        }
        return out
    }

    /// As `encode`, as a String: "0DFF".
    public static func string(_ bytes: some Sequence<UInt8>, lowercase: Bool = false) -> String {
        String(decoding: encode(bytes, lowercase: lowercase), as: UTF8.self)
    }

    /// Parses an even number of hex digits (either case); nil for anything else, including spaces.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// The value of one hex digit, or nil.
    public static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: return digit - 0x30
        case 0x41...0x46: return digit - 0x41 + 10
        case 0x61...0x66: return digit - 0x61 + 10
        default: return nil
        }
    }
}
