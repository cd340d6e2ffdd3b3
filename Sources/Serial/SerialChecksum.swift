import Platform
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

    /// The ASCII hex digits sent after ETX for `covered` (empty for `.none`).
    public func field(for covered: [UInt8]) -> [UInt8] {
        switch self {
        case .none: return []
        case .lrc: return Hex.digits(UInt64(Checksums.lrc(covered)), count: 2)
        case .crc16: return Hex.digits(UInt64(Checksums.crc16CCITTFalse(covered)), count: 4)
        case .crc16Modbus: return Hex.digits(UInt64(Checksums.crc16Modbus(covered)), count: 4)
        }
    }
}

/// The checksum functions, on plain bytes.
public enum Checksums {
    /// XOR of all bytes.
    public static func lrc(_ bytes: [UInt8]) -> UInt8 {
        bytes.reduce(0, ^)
    }

    /// CRC-16/CCITT-FALSE (a.k.a. CRC-16/IBM-3740): poly 0x1021, init 0xFFFF, MSB first, no final XOR.
    public static func crc16CCITTFalse(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    /// CRC-16/MODBUS: poly 0xA001 (0x8005 reflected), init 0xFFFF, LSB first, no final XOR.
    public static func crc16Modbus(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0xFFFF
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1
            }
        }
        return crc
    }
}
