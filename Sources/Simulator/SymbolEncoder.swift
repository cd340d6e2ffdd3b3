import Core

/// The symbologies the simulator and `make-code` can draw, and their quiet zones.
public enum SymbolEncoder {
    public static let supported: [Symbology] = [.qr, .microqr, .datamatrix, .aztec, .pdf417, .ean13, .ean8, .upca,
                                                .upce, .code128, .code39, .code93, .i25, .codabar]
    /// zxing-cpp's names (older ones such as `qr` and `ean13` are accepted too).
    public static var supportedNames: String { supported.map(\.zxingName).joined(separator: ", ") }

    public static func encode(_ symbology: Symbology, payload: [UInt8],
                              ecc: QREncoder.ErrorCorrection = .M, segmented: Bool = false) throws(SymbolError) -> ModuleBitmap {
        switch symbology {
        case .qr: return try QREncoder.encode(payload, ecc: ecc, segmented: segmented)
        case .microqr: return try QREncoder.encodeMicro(payload, ecc: ecc)
        case .datamatrix, .aztec, .pdf417, .code93, .i25, .codabar: return try ZXingWriter.encode(symbology, payload: payload)
        case .ean13: return try EANEncoder.ean13(payload)
        case .ean8: return try EANEncoder.ean8(payload)
        case .upca: return try EANEncoder.upcA(payload)
        case .upce: return try EANEncoder.upcE(payload)
        case .code128: return try Code128Encoder.encode(payload)
        case .code39: return try Code39Encoder.encode(payload)
        default: throw SymbolError("cannot draw \(symbology.rawValue) (drawable: \(supportedNames))")
        }
    }

    /// Quiet zone in modules: 4 for QR, 2 for Micro QR, DataMatrix, Aztec and PDF417 (their standards
    /// ask 2, 1, 0 and 2), at least 10 (EAN-13 needs 11 on the left) for 1D codes.
    public static func defaultQuietZone(for symbology: Symbology) -> Int {
        switch symbology {
        case .qr: return 4
        case .microqr, .datamatrix, .aztec, .pdf417: return 2
        default: return 12
        }
    }
}
