/// The check value after ETX in STX/ETX framing.
///
/// Every checksum covers the bytes after STX up to and including ETX: the frame body exactly as sent
/// (symbology tag, escaped or hex payload) followed by the ETX byte 0x03. It is sent as upper-case
/// ASCII hex digits (2 for LRC, 4 for CRC-16, most significant digit first), so the check value itself
/// can never contain STX, ETX or any other control byte a receiver synchronises on.
public enum SerialChecksum: String, CaseIterable, Sendable {
    case none
    /// XOR of the covered bytes (the classic BCC); 2 hex digits.
    case lrc
    /// CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, not reflected, xorout 0 ("123456789" → 29B1); 4 hex digits.
    case crc16
    /// CRC-16/MODBUS: poly 0x8005 reflected (0xA001), init 0xFFFF, xorout 0 ("123456789" → 4B37);
    /// 4 hex digits of the value (not Modbus RTU's low-byte-first binary order).
    case crc16Modbus = "crc16-modbus"

    public static var allowedText: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
