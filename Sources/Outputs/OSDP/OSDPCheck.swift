/// The two check characters a frame may end with (control byte bit 2 chooses).
public enum OSDPCheck {
    /// CRC-16/AUG-CCITT: polynomial 0x1021, initial value 0x1D0F, not reflected, no final XOR.
    /// Check value: "123456789" → 0xE5CC. Sent little-endian.
    public static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0x1D0F
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The 8-bit checksum: the two's complement of the byte sum, so that all bytes plus it sum to 0.
    public static func checksum<C: Collection>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        var sum: UInt8 = 0
        for byte in bytes { sum &+= byte }
        return 0 &- sum
    }

    /// The check field for `bytes`: two CRC bytes (LSB first) or one checksum byte.
    public static func field<C: Collection>(_ bytes: C, crc: Bool) -> [UInt8] where C.Element == UInt8 {
        if crc {
            let value = crc16(bytes)
            return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
        return [checksum(bytes)]
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var value = UInt16(index) << 8
        for _ in 0..<8 {
            value = value & 0x8000 != 0 ? (value << 1) ^ 0x1021 : value << 1
        }
        return value
    }
}
