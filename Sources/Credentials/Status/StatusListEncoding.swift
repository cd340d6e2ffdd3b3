import Platform

/// How a status list file holds its token, told from the file's bytes (each file on its own):
/// - its first byte is 0x80 or more (a CBOR tag, array or map; tag 18 is 0xD2): a CWT as raw binary, the
///   form the draft serves over HTTP (`application/statuslist+cwt`), read as it is (no byte trimmed);
/// - text made only of hex digits and white space (no `.`): a CWT in hex, the form of the draft's own
///   examples; the white space (line breaks included) is dropped;
/// - any other text: a JWT (JWS compact serialization), surrounding white space dropped.
public enum StatusListEncoding: Equatable, Sendable {
    case jwt([UInt8])
    /// The COSE_Sign1's CBOR bytes; `hex` when they were written as hex text.
    case cwt([UInt8], hex: Bool)

    public static func detect(_ bytes: [UInt8]) throws(StatusListError) -> StatusListEncoding {
        if let first = bytes.first, first >= 0x80 { return .cwt(bytes, hex: false) }
        var text = bytes[...]
        while let last = text.last, isSpace(last) { text.removeLast() }
        while let first = text.first, isSpace(first) { text.removeFirst() }
        guard !text.isEmpty, text.allSatisfy({ Hex.value($0) != nil || isSpace($0) }) else { return .jwt(Array(text)) }
        let digits = text.filter { !isSpace($0) }
        guard let decoded = Hex.decode(String(decoding: digits, as: UTF8.self)) else {
            throw StatusListError("the file is hex text of \(digits.count) digits, an odd number; a statuslist+cwt in hex has two digits a byte")
        }
        return .cwt(decoded, hex: true)
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D || byte == 0x20 || byte == 0x09 }
}
