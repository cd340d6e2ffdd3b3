#if canImport(Glibc)
import Glibc
#endif
import CQREncode
import Platform

/// QR codes through libqrencode, 8-bit mode (binary-safe), version chosen by the library.
public enum QREncoder {
    public enum ErrorCorrection: String, CaseIterable, Sendable {
        case L, M, Q, H

        var level: QRecLevel {
            switch self {
            case .L: return QR_ECLEVEL_L
            case .M: return QR_ECLEVEL_M
            case .Q: return QR_ECLEVEL_Q
            case .H: return QR_ECLEVEL_H
            }
        }

        public init?(name: String) { self.init(rawValue: name.uppercased()) }
    }

    /// - Parameter segmented: encode with libqrencode's mode optimisation (numeric, alphanumeric and
    ///   Kanji segments, the payload read as Shift_JIS) instead of one 8-bit segment: long digit strings
    ///   and Kanji text as phones print them. The payload must not contain NUL.
    public static func encode(_ payload: [UInt8], ecc: ErrorCorrection = .M,
                              segmented: Bool = false) throws(SymbolError) -> ModuleBitmap {
        guard !payload.isEmpty else { throw SymbolError("QR payload is empty") }
        if segmented && payload.contains(0) { throw SymbolError("a segmented QR payload cannot contain NUL (\\x00)") }
        errno = 0
        let code: UnsafeMutablePointer<QRcode>?
        if segmented {
            let cString = payload.map { CChar(bitPattern: $0) } + [0]
            code = cString.withUnsafeBufferPointer { QRcode_encodeString($0.baseAddress, 0, ecc.level, QR_MODE_KANJI, 1) }
        } else {
            code = payload.withUnsafeBufferPointer { buffer in
                QRcode_encodeData(Int32(buffer.count), buffer.baseAddress, 0, ecc.level)
            }
        }
        guard let code else {
            let e = Errno.current
            if e.rawValue == ERANGE {
                throw SymbolError("QR payload of \(payload.count) bytes is too large for ECC level \(ecc.rawValue) (at most 2953 bytes at L)")
            }
            throw SymbolError("libqrencode failed: \(e)")
        }
        defer { QRcode_free(code) }
        return try bitmap(code)
    }

    /// libqrencode's symbol as modules (bit 0 of each byte: dark).
    private static func bitmap(_ code: UnsafeMutablePointer<QRcode>) throws(SymbolError) -> ModuleBitmap {
        let width = Int(code.pointee.width)
        guard width > 0, let data = code.pointee.data else { throw SymbolError("libqrencode returned an empty symbol") }
        var dark = [Bool](repeating: false, count: width * width)
        for i in 0..<(width * width) { dark[i] = data[i] & 1 != 0 }
        return ModuleBitmap(width: width, height: width, dark: dark)
    }

    /// A Micro QR code (M1-M4, the smallest version that holds the payload at `ecc`), 8-bit mode. Micro
    /// QR has no level H, and Q only in M4.
    public static func encodeMicro(_ payload: [UInt8], ecc: ErrorCorrection = .M) throws(SymbolError) -> ModuleBitmap {
        guard !payload.isEmpty else { throw SymbolError("Micro QR payload is empty") }
        guard ecc != .H else { throw SymbolError("Micro QR has no ECC level H (L, M, or Q in M4)") }
        for version in Int32(1)...Int32(MQRSPEC_VERSION_MAX) {
            errno = 0
            let code = payload.withUnsafeBufferPointer { buffer in
                QRcode_encodeDataMQR(Int32(buffer.count), buffer.baseAddress, version, ecc.level)
            }
            guard let code else { continue }
            defer { QRcode_free(code) }
            return try bitmap(code)
        }
        throw SymbolError("Micro QR payload of \(payload.count) bytes does not fit M4 at ECC level \(ecc.rawValue) (at most 15 bytes at L)")
    }
}
