import CZXingShim
import Core
import Decoding
import Settings

/// The zxing-cpp implementation of the decoder seam (Debian libzxing-dev, through the CZXingShim C
/// face). decode-image uses it as a pass after zbar's; `run` keeps zbar (see docs/accuracy.md).
public final class ZXingDecoder: Decoder {
    public let settings: DecoderSettings
    private let formats: UInt32
    private let flags: UInt32

    /// How zxing turns gray into black and white.
    public enum Binarizer: Sendable { case localAverage, globalHistogram, fixed }

    /// `thorough`: zxing's tryHarder + tryRotate + tryDownscale (still images; several times slower).
    /// `pure`: the image is one unrotated rendered code (no photo).
    public init(settings: DecoderSettings, thorough: Bool = true, binarizer: Binarizer = .localAverage,
                pure: Bool = false) {
        self.settings = settings
        formats = settings.symbologies.reduce(0) { $0 | ZXingDecoder.format($1) }
        var flags: UInt32 = 0
        if !settings.qrTextAsUTF8 { flags |= UInt32(ZXSHIM_RAW_BYTES) }
        if thorough { flags |= UInt32(ZXSHIM_TRY_HARDER | ZXSHIM_TRY_ROTATE | ZXSHIM_TRY_DOWNSCALE) }
        switch binarizer {
        case .localAverage: break
        case .globalHistogram: flags |= UInt32(ZXSHIM_BINARIZER_GLOBAL)
        case .fixed: flags |= UInt32(ZXSHIM_BINARIZER_FIXED)
        }
        if pure { flags |= UInt32(ZXSHIM_PURE) }
        self.flags = flags
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        decode(width: frame.width, height: frame.height, luma: frame.luma)
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        guard width > 0, height > 0, luma.count >= width * height, formats != 0 else { return [] }
        var raw: UnsafeMutablePointer<zxshim_symbol>?
        let count = luma.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return zxshim_read(base, Int32(width), Int32(height), formats, flags, &raw)
        }
        guard count > 0, let raw else { return [] }
        defer { zxshim_free(raw, count) }
        var found: [DecodedSymbol] = []
        for i in 0..<Int(count) {
            let s = raw[i]
            guard let symbology = ZXingDecoder.symbology(s.format) else { continue }
            var bytes = [UInt8](repeating: 0, count: s.length)
            if s.length > 0, let data = s.data {
                for j in 0..<s.length { bytes[j] = data[j] }
            }
            let bounds = Rect(x: Int(s.x), y: Int(s.y), w: Int(s.w), h: Int(s.h))
            guard let symbol = SymbolNormaliser.normalise(DecodedSymbol(symbology: symbology, data: bytes, bounds: bounds),
                                                          settings: settings)
            else { continue }
            if !found.contains(where: { $0.key == symbol.key }) { found.append(symbol) }
        }
        return found
    }

    /// ZXing::BarcodeFormat bits.
    static func format(_ s: Symbology) -> UInt32 {
        switch s {
        case .qr: return 1 << 13
        case .ean13, .isbn13, .isbn10: return 1 << 9
        case .ean8: return 1 << 8
        case .upca: return 1 << 14
        case .upce: return 1 << 15
        case .code128: return 1 << 4
        case .code39: return 1 << 2
        case .code93: return 1 << 3
        case .i25: return 1 << 10
        case .codabar: return 1 << 1
        case .databar: return 1 << 5
        case .databarExp: return 1 << 6
        }
    }

    static func symbology(_ format: UInt32) -> Symbology? {
        switch format {
        case 1 << 13: return .qr
        case 1 << 9: return .ean13
        case 1 << 8: return .ean8
        case 1 << 14: return .upca
        case 1 << 15: return .upce
        case 1 << 4: return .code128
        case 1 << 2: return .code39
        case 1 << 3: return .code93
        case 1 << 10: return .i25
        case 1 << 1: return .codabar
        case 1 << 5: return .databar
        case 1 << 6: return .databarExp
        default: return nil
        }
    }
}
