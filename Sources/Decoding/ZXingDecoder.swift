import CZXingShim
import Core
import Settings

/// The zxing-cpp implementation of the decoder seam (Debian libzxing-dev 1.4, through the CZXingShim C
/// face): `run`'s decoder by default (`decoder = zxing`), and decode-image's second engine.
///
/// zxing-cpp 1.4 has no built-in inversion: with `invertRetry`, a frame in which nothing was found is
/// inverted and read again (light-on-dark codes: phones in dark mode). Frames that hold a code pay for
/// one read; empty frames for two (docs/decoding.md has the measured cost).
public final class ZXingDecoder: Decoder {
    public let settings: DecoderSettings
    private let reader: ZXingReader
    private let invertRetry: Bool
    /// The inverted copy of the last frame read twice, kept so the retry allocates nothing per frame.
    private var inverted: [UInt8] = []
    /// Reads that zxing failed (it threw, or memory ran out): found nothing, counted here.
    public private(set) var failedReads = 0
    /// True when the last `decode` found its symbols in the inverted frame.
    public private(set) var lastFoundInverted = false

    /// How zxing turns gray into black and white.
    public enum Binarizer: Sendable { case localAverage, globalHistogram, fixed }

    /// `thorough`: zxing's tryHarder + tryRotate + tryDownscale (still images; several times slower).
    /// `pure`: the image is one unrotated rendered code (no photo). `invertRetry` defaults to the
    /// settings' (`invert-retry`).
    public init(settings: DecoderSettings, thorough: Bool = false, binarizer: Binarizer = .localAverage,
                pure: Bool = false, invertRetry: Bool? = nil) {
        self.settings = settings
        let formats = settings.symbologies.reduce(UInt32(0)) { $0 | ZXingDecoder.format($1) }
        var flags: UInt32 = 0
        if settings.qrTextAsUTF8 { flags |= UInt32(ZXSHIM_TEXT) }
        if thorough { flags |= UInt32(ZXSHIM_TRY_HARDER | ZXSHIM_TRY_ROTATE | ZXSHIM_TRY_DOWNSCALE) }
        switch binarizer {
        case .localAverage: break
        case .globalHistogram: flags |= UInt32(ZXSHIM_BINARIZER_GLOBAL)
        case .fixed: flags |= UInt32(ZXSHIM_BINARIZER_FIXED)
        }
        if pure { flags |= UInt32(ZXSHIM_PURE) }
        reader = ZXingReader(formats: formats, flags: flags)
        self.invertRetry = invertRetry ?? settings.invertRetry
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        decode(width: frame.width, height: frame.height, luma: frame.luma)
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        lastFoundInverted = false
        guard width > 0, height > 0, luma.count == width * height else { return [] }
        let found = luma.withUnsafeBufferPointer { read(width: width, height: height, luma: $0) }
        guard found.isEmpty, invertRetry else { return found }
        if inverted.count != luma.count { inverted = [UInt8](repeating: 0, count: luma.count) }
        inverted.withUnsafeMutableBufferPointer { out in
            luma.withUnsafeBufferPointer { source in
                for i in 0..<source.count { out[i] = 255 &- source[i] }
            }
        }
        let again = inverted.withUnsafeBufferPointer { read(width: width, height: height, luma: $0) }
        lastFoundInverted = !again.isEmpty
        return again
    }

    /// One read, its symbols normalised (check digits, UPC forms) and each code once.
    private func read(width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> [DecodedSymbol] {
        let raw: [ZXingReader.Found]
        do {
            raw = try reader.read(width: width, height: height, luma: luma)
        } catch {
            failedReads += 1
            return []
        }
        var found: [DecodedSymbol] = []
        for r in raw {
            guard let symbology = ZXingDecoder.symbology(r.format) else { continue }
            var data = r.bytes
            if settings.qrTextAsUTF8, symbology == .qr || symbology == .microqr, let text = r.text { data = text }
            let content = SymbolContent(gs1: r.contentType == ZXingReader.contentGS1, eci: r.eci)
            guard let symbol = SymbolNormaliser.normalise(
                DecodedSymbol(symbology: symbology, data: data, corners: r.corners, content: content), settings: settings)
            else { continue }
            if !found.contains(where: { $0.key == symbol.key }) { found.append(symbol) }
        }
        return found
    }

    /// ZXing::BarcodeFormat bits (zxing-cpp 1.4's BarcodeFormat.h).
    static func format(_ s: Symbology) -> UInt32 {
        switch s {
        case .aztec: return 1 << 0
        case .codabar: return 1 << 1
        case .code39: return 1 << 2
        case .code93: return 1 << 3
        case .code128: return 1 << 4
        case .databar: return 1 << 5
        case .databarExp: return 1 << 6
        case .datamatrix: return 1 << 7
        case .ean8: return 1 << 8
        case .ean13, .isbn13, .isbn10: return 1 << 9
        case .i25: return 1 << 10
        case .pdf417: return 1 << 12
        case .qr: return 1 << 13
        case .upca: return 1 << 14
        case .upce: return 1 << 15
        case .microqr: return 1 << 16
        }
    }

    static func symbology(_ format: UInt32) -> Symbology? {
        switch format {
        case 1 << 0: return .aztec
        case 1 << 1: return .codabar
        case 1 << 2: return .code39
        case 1 << 3: return .code93
        case 1 << 4: return .code128
        case 1 << 5: return .databar
        case 1 << 6: return .databarExp
        case 1 << 7: return .datamatrix
        case 1 << 8: return .ean8
        case 1 << 9: return .ean13
        case 1 << 10: return .i25
        case 1 << 12: return .pdf417
        case 1 << 13: return .qr
        case 1 << 14: return .upca
        case 1 << 15: return .upce
        case 1 << 16: return .microqr
        default: return nil
        }
    }
}
