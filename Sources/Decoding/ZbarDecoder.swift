import CZbar
import Core
import Settings

/// The zbar implementation of the decoder seam.
public final class ZbarDecoder: Decoder {
    public let settings: DecoderSettings
    private var scanner: ZbarScanner
    /// Present when QR payloads are converted to UTF-8 text (`qrTextAsUTF8`).
    private let qrText: QRText?

    public init(settings: DecoderSettings) throws(UsageError) {
        self.settings = settings
        qrText = settings.qrTextAsUTF8 ? QRText() : nil
        scanner = try ZbarDecoder.makeScanner(settings)
    }

    /// libzbar 0.23.92's image scanner keeps about 190 bytes for every QR code it decodes until it is
    /// destroyed (measured with a plain C loop: +1 MiB per 6000 decodes, flat when the scanner is made
    /// again every 1000). So the scanner is replaced after this many scans; making one costs microseconds.
    static let scansPerScanner = 1000
    private var scansSinceRenewal = 0

    /// A scanner configured from `settings`.
    static func makeScanner(_ settings: DecoderSettings) throws(UsageError) -> ZbarScanner {
        do {
            let scanner = try ZbarScanner()
            try scanner.set(ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
            var enabled = Set(settings.zbarSymbologies.compactMap(ZbarDecoder.zbarType))
            // zbar finds UPC-A/ISBN inside its EAN-13 decoder: the EAN-13 family needs it enabled.
            if settings.symbologies.contains(.upca) || settings.symbologies.contains(.isbn13)
                || settings.symbologies.contains(.isbn10) {
                enabled.insert(ZBAR_EAN13)
            }
            for type in enabled {
                try scanner.set(type, ZBAR_CFG_ENABLE, 1)
            }
            if settings.eanAddOns {
                try scanner.set(ZBAR_EAN2, ZBAR_CFG_ENABLE, 1)
                try scanner.set(ZBAR_EAN5, ZBAR_CFG_ENABLE, 1)
            }
            // Keep QR payload bytes exactly as encoded (no charset guessing).
            if settings.symbologies.contains(.qr) { try scanner.set(ZBAR_QRCODE, ZBAR_CFG_BINARY, 1) }
            try scanner.set(ZBAR_NONE, ZBAR_CFG_X_DENSITY, Int32(settings.density))
            try scanner.set(ZBAR_NONE, ZBAR_CFG_Y_DENSITY, Int32(settings.density))
            if settings.testInverted { try scanner.set(ZBAR_NONE, ZBAR_CFG_TEST_INVERTED, 1) }
            return scanner
        } catch {
            throw UsageError("cannot configure zbar: \(error)")
        }
    }

    /// Replaces the scanner every `scansPerScanner` scans (see there). The configuration was accepted
    /// once, so making it again cannot fail for a reason of the user's; should it fail anyway, the old
    /// scanner is kept.
    private func renewScannerIfDue() {
        scansSinceRenewal += 1
        guard scansSinceRenewal >= ZbarDecoder.scansPerScanner else { return }
        scansSinceRenewal = 0
        if let fresh = try? ZbarDecoder.makeScanner(settings) { scanner = fresh }
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        decode(width: frame.width, height: frame.height, luma: frame.luma)
    }

    /// Decodes one image (also used by decode-image).
    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        renewScannerIfDue()
        var found: [DecodedSymbol] = []
        var addOns: [(data: [UInt8], bounds: Rect)] = []
        luma.withUnsafeBufferPointer { buffer in
            _ = scanner.scan(width: width, height: height, luma: buffer) { type, bytes, bounds in
                if type == ZBAR_EAN2 || type == ZBAR_EAN5 {
                    addOns.append((bytes, bounds))
                    return
                }
                guard let symbology = ZbarDecoder.symbology(type),
                      var symbol = SymbolNormaliser.normalise(
                        DecodedSymbol(symbology: symbology, data: bytes, bounds: bounds), settings: settings)
                else { return }
                if symbology == .qr, let qrText { symbol.data = qrText.utf8(symbol.data) }
                if !found.contains(where: { $0.key == symbol.key }) { found.append(symbol) }
            }
        }
        if settings.eanAddOns, !addOns.isEmpty { EANAddOn.attach(addOns, to: &found) }
        return found
    }

    /// zbar's type for a symbology; nil for those zbar 0.23 does not read (Micro QR, DataMatrix, Aztec, PDF417).
    static func zbarType(_ s: Symbology) -> zbar_symbol_type_t? {
        switch s {
        case .qr: return ZBAR_QRCODE
        case .ean13: return ZBAR_EAN13
        case .ean8: return ZBAR_EAN8
        case .upca: return ZBAR_UPCA
        case .upce: return ZBAR_UPCE
        case .code128: return ZBAR_CODE128
        case .code39: return ZBAR_CODE39
        case .code93: return ZBAR_CODE93
        case .i25: return ZBAR_I25
        case .codabar: return ZBAR_CODABAR
        case .databar: return ZBAR_DATABAR
        case .databarExp: return ZBAR_DATABAR_EXP
        case .isbn10: return ZBAR_ISBN10
        case .isbn13: return ZBAR_ISBN13
        case .microqr, .datamatrix, .aztec, .pdf417: return nil
        }
    }

    static func symbology(_ t: zbar_symbol_type_t) -> Symbology? {
        switch t {
        case ZBAR_QRCODE: return .qr
        case ZBAR_EAN13: return .ean13
        case ZBAR_EAN8: return .ean8
        case ZBAR_UPCA: return .upca
        case ZBAR_UPCE: return .upce
        case ZBAR_CODE128: return .code128
        case ZBAR_CODE39: return .code39
        case ZBAR_CODE93: return .code93
        case ZBAR_I25: return .i25
        case ZBAR_CODABAR: return .codabar
        case ZBAR_DATABAR: return .databar
        case ZBAR_DATABAR_EXP: return .databarExp
        case ZBAR_ISBN10: return .isbn10
        case ZBAR_ISBN13: return .isbn13
        default: return nil
        }
    }
}
