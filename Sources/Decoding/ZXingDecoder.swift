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
    /// The symbology of each ZXing::BarcodeFormat bit zxing may report.
    private let symbologies: [UInt32: Symbology]
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
        symbologies = ZXingDecoder.symbologiesByFormat()
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
            guard let symbology = symbologies[r.format] else { continue }
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

    /// The ZXing::BarcodeFormat bit of each symbology, by zxing-cpp's own name for it (ISBNs are read as
    /// EAN-13; 0: zxing has no such format).
    static func format(_ s: Symbology) -> UInt32 {
        switch s {
        case .isbn10, .isbn13: return zxshim_format(Symbology.ean13.zxingName)
        default: return zxshim_format(s.zxingName)
        }
    }

    /// The symbology each ZXing::BarcodeFormat bit stands for (ISBNs come back as EAN-13).
    static func symbologiesByFormat() -> [UInt32: Symbology] {
        var map: [UInt32: Symbology] = [:]
        for s in Symbology.allCases where s != .isbn10 && s != .isbn13 {
            let bit = format(s)
            if bit != 0 { map[bit] = s }
        }
        return map
    }
}
