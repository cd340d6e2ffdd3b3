/// Base45 (RFC 9285): two bytes as three characters of the 45 that QR alphanumeric mode holds, so a
/// binary pass encodes in 5.5 bits per character instead of 8.
public enum Base45 {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)

    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 1) / 2 * 3)
        var i = 0
        while i + 1 < bytes.count {
            var n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            out.append(alphabet[n % 45]); n /= 45
            out.append(alphabet[n % 45]); n /= 45
            out.append(alphabet[n])
            i += 2
        }
        if i < bytes.count {
            let n = Int(bytes[i])
            out.append(alphabet[n % 45])
            out.append(alphabet[n / 45])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Why text is not Base45.
    public struct DecodeError: Error, Equatable, CustomStringConvertible, Sendable {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid base45 at character \(offset): \(reason)" }
    }

    /// Strict decoding: only the 45 characters (upper case; no lower case, no line breaks), a length that
    /// is not 1 more than a multiple of 3, and no group worth more than its bytes can hold (a triple
    /// over 65535 such as "GGW", a final pair over 255). Each byte string so has one encoding.
    public static func decode(_ text: some Collection<UInt8>, maxBytes: Int = 4096) throws(DecodeError) -> [UInt8] {
        let chars = Array(text)
        guard chars.count % 3 != 1 else {
            throw DecodeError(offset: chars.count, reason: "\(chars.count) characters; a length of 3n + 1 is not base45")
        }
        guard chars.count / 3 * 2 + (chars.count % 3 == 2 ? 1 : 0) <= maxBytes else {
            throw DecodeError(offset: 0, reason: "\(chars.count) characters decode to more than \(maxBytes) bytes")
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 3 * 2 + 1)
        var i = 0
        func value(_ at: Int) throws(DecodeError) -> Int {
            let v = values[Int(chars[at])]
            guard v >= 0 else { throw DecodeError(offset: at, reason: "character 0x\(String(chars[at], radix: 16)) is not in the base45 alphabet") }
            return Int(v)
        }
        while i + 2 < chars.count {
            let c = try value(i), d = try value(i + 1), e = try value(i + 2)
            let n = c + d * 45 + e * 2025
            guard n <= 0xFFFF else { throw DecodeError(offset: i, reason: "a group worth \(n) is more than two bytes hold") }
            out.append(UInt8(n >> 8))
            out.append(UInt8(n & 0xFF))
            i += 3
        }
        if chars.count - i == 2 {
            let c = try value(i), d = try value(i + 1)
            let n = c + d * 45
            guard n <= 0xFF else { throw DecodeError(offset: i, reason: "a final pair worth \(n) is more than one byte holds") }
            out.append(UInt8(n))
        }
        return out
    }

    public static func decode(_ text: String, maxBytes: Int = 4096) throws(DecodeError) -> [UInt8] {
        try decode(Array(text.utf8), maxBytes: maxBytes)
    }
}
