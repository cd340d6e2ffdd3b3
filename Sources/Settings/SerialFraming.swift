/// How a code is put on the line. The wire format, exactly:
///
/// - `plain`:   PREFIX BODY SUFFIX                      (SUFFIX defaults to CR LF)
/// - `stx-etx`: PREFIX 0x02 BODY 0x03 [CHECK] SUFFIX    (PREFIX and SUFFIX default to nothing)
///
/// BODY is `[TAG]PAYLOAD`:
/// - TAG, with `--serial-symbology-prefix`: the symbology's CLI name in upper case and a colon
///   (`QR:`, `EAN13:`, `CODE128:`, `DATABAR-EXP:`).
/// - PAYLOAD, `--serial-payload text`: the code's bytes after the unsafe-byte policy (see
///   `UnsafeBytePolicy`, default reject); `hex`: two upper-case hex digits per byte.
/// - CHECK (`--serial-checksum`, stx-etx only) covers every byte after STX up to and including ETX
///   (TAG, PAYLOAD as sent, 0x03) and is sent as upper-case ASCII hex: `lrc` = XOR, 2 digits;
///   `crc16` = CRC-16/CCITT-FALSE, 4 digits; `crc16-modbus` = CRC-16/MODBUS, 4 digits (value order).
///
/// Inside BODY no byte can end or start a frame: control bytes, DEL, the prefix/suffix bytes, bytes the
/// line's data bits cannot carry and invalid UTF-8 never appear raw, and the option check refuses a
/// prefix/suffix that shares bytes with what the encoder itself writes (hex digits, escapes, tags).
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
