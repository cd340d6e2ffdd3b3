import CZXingShim
import Core
import Settings

/// The zxing-cpp implementation of the decoder seam (Debian libzxing-dev 1.4, through the CZXingShim C
/// face): `run`'s decoder by default (`decoder = zxing`), and decode-image's second engine.
///
/// A frame is read up to three times, each only when the reads before found nothing:
/// 1. with zxing's local-average binarizer (its default);
/// 2. with its global-histogram binarizer (`globalRetry`): low-contrast codes, which the local binarizer
///    takes for flat areas; on a scene with no code it gives up almost at once (no two histogram peaks);
/// 3. inverted (`invertRetry`): zxing-cpp 1.4 has no try-invert, so light-on-dark codes (phones in dark
///    mode) are read from an inverted copy.
/// Frames that hold a code pay for one read; empty frames for all three (docs/decoding.md has the cost).
public final class ZXingDecoder: Decoder {
    public let settings: DecoderSettings
    private let reader: ZXingReader
    /// The same read with the global-histogram binarizer; nil when `globalRetry` is off.
    private let globalReader: ZXingReader?
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
    /// settings' (`invert-retry`); `globalRetry` (the global-histogram read after a local-average one
    /// that found nothing) is the live path's, off for decode-image, which orders its own passes.
    public init(settings: DecoderSettings, thorough: Bool = false, binarizer: Binarizer = .localAverage,
                pure: Bool = false, invertRetry: Bool? = nil, globalRetry: Bool = true) {
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
        globalReader = globalRetry && binarizer == .localAverage
            ? ZXingReader(formats: formats, flags: flags | UInt32(ZXSHIM_BINARIZER_GLOBAL)) : nil
        symbologies = ZXingDecoder.symbologiesByFormat()
        self.invertRetry = invertRetry ?? settings.invertRetry
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        decode(width: frame.width, height: frame.height, luma: frame.luma)
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        lastFoundInverted = false
        guard width > 0, height > 0, luma.count == width * height else { return [] }
        let found = luma.withUnsafeBufferPointer { read(reader, width: width, height: height, luma: $0) }
        guard found.isEmpty else { return found }
        if let globalReader {
            let global = luma.withUnsafeBufferPointer { read(globalReader, width: width, height: height, luma: $0) }
            guard global.isEmpty else { return global }
        }
        guard invertRetry else { return [] }
        if inverted.count != luma.count { inverted = [UInt8](repeating: 0, count: luma.count) }
        inverted.withUnsafeMutableBufferPointer { out in
            luma.withUnsafeBufferPointer { source in
                for i in 0..<source.count { out[i] = 255 &- source[i] }
            }
        }
        let again = inverted.withUnsafeBufferPointer { read(reader, width: width, height: height, luma: $0) }
        lastFoundInverted = !again.isEmpty
        return again
    }

    /// One read, its symbols normalised (check digits, UPC forms) and each code once.
    private func read(_ reader: ZXingReader, width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> [DecodedSymbol] {
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
