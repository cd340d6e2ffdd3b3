/// How a code is put on the line.
///
/// - `plain`:   PREFIX BODY SUFFIX (suffix defaults to CR LF).
/// - `stx-etx`: PREFIX 0x02 BODY 0x03 [CHECKSUM] SUFFIX (prefix and suffix default to nothing).
///
/// BODY is `[TAG:]PAYLOAD`: TAG is the symbology's CLI name in upper case (`QR:`, `EAN13:`, `CODE128:`)
/// when `--serial-symbology-prefix` is on; PAYLOAD is the code's bytes after the unsafe-byte policy
/// (text) or two upper-case hex digits per byte (hex).
public enum SerialFraming: String, CaseIterable, Sendable {
    case plain
    case stxEtx = "stx-etx"

    public static var allowedText: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The suffix used when none is configured.
    public var defaultSuffix: [UInt8] {
        switch self {
        case .plain: return [0x0D, 0x0A]
        case .stxEtx: return []
        }
    }
}

/// How the payload bytes are written in the frame body.
public enum SerialPayloadEncoding: String, CaseIterable, Sendable {
    /// The bytes as decoded, after the unsafe-byte policy.
    case text
    /// Two upper-case hex digits per byte ("A\r" → "410D"): every payload is safe as it is.
    case hex

    public static var allowedText: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

enum ControlByte {
    static let stx: UInt8 = 0x02
    static let etx: UInt8 = 0x03
}
