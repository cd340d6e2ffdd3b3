import Core

/// The symbologies the simulator and `make-code` can draw, and their quiet zones.
public enum SymbolEncoder {
    public static let supported: [Symbology] = [.qr, .ean13, .ean8, .upca, .upce, .code128, .code39]
    public static var supportedNames: String { supported.map(\.rawValue).joined(separator: ", ") }

    public static func encode(_ symbology: Symbology, payload: [UInt8],
                              ecc: QREncoder.ErrorCorrection = .M, segmented: Bool = false) throws(SymbolError) -> ModuleBitmap {
        switch symbology {
        case .qr: return try QREncoder.encode(payload, ecc: ecc, segmented: segmented)
        case .ean13: return try EANEncoder.ean13(payload)
        case .ean8: return try EANEncoder.ean8(payload)
        case .upca: return try EANEncoder.upcA(payload)
        case .upce: return try EANEncoder.upcE(payload)
        case .code128: return try Code128Encoder.encode(payload)
        case .code39: return try Code39Encoder.encode(payload)
        default: throw SymbolError("cannot draw \(symbology.rawValue) (drawable: \(supportedNames))")
        }
    }

    /// Standard quiet zone in modules: 4 for QR, at least 10 (EAN-13 needs 11 on the left) for 1D codes.
    public static func defaultQuietZone(for symbology: Symbology) -> Int { symbology == .qr ? 4 : 12 }
}
