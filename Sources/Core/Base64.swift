/// Base64 (RFC 4648): the standard alphabet with padding, for payloads in JSON that are not UTF-8, and
/// the URL-safe alphabet without padding (§5), as JWS and JWK use it.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard alphabet, padded with `=`.
    public static func encode(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: standard, pad: true) }

    /// URL-safe alphabet, no padding ("base64url" of RFC 7515).
    public static func urlEncode(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: url, pad: false) }

    /// Strict standard base64: padding required, no whitespace, unused bits zero; nil otherwise.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var body = chars[...]
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") { body = body.dropLast(); padding += 1 }
        guard (body.count + padding) % 4 == 0 else { return nil }
        return decode(Array(body), alphabet: standard)
    }

    /// Strict base64url without padding: nil for padding, other characters, or non-zero unused bits.
    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8), alphabet: url)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            if pad { out += [UInt8(ascii: "="), UInt8(ascii: "=")] }
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded text in `alphabet`; a final group of 1 character, or unused bits that are not
    /// zero, make the text invalid (so each byte string has exactly one encoding).
    private static func decode(_ chars: [UInt8], alphabet: [UInt8]) -> [UInt8]? {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = table[Int(c)]
            guard v >= 0 else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return out
    }
}
