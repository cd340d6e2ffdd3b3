import Platform
import Settings

extension SerialChecksum {
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
