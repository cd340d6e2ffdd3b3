import Core
import Decoding
import Settings

/// Decoding of still images (decode-image, the accuracy bench). One zbar pass over the image as it
/// is; only when that finds nothing, further passes, in the order `passes` lists them, until one
/// finds something. Each pass is an engine (zbar, or zxing-cpp with a binarizer) over a transformed
/// copy (rescaled, padded, contrast-stretched, thresholded, inverted). The order and the set were
/// chosen by measurement on the real-photo corpus: see docs/accuracy.md.
public final class ImageDecoder {
    private let zbar: ZbarDecoder
    private let zxing: ZXingDecoder
    private let zxingGlobal: ZXingDecoder
    /// zbar for QR only, when QR is wanted: the flattened-label pass looks for 2D codes on a sticker
    /// (and so does not run zbar's DataBar decoder, which prints assertion warnings on such images).
    private let zbarQR: ZbarDecoder?
    private let settings: DecoderSettings
    /// The pass that found the symbols of the last `decode` call (nil: nothing found).
    public private(set) var lastPass: String?

    public init(settings: DecoderSettings) throws(UsageError) {
        self.settings = settings
        zbar = try ZbarDecoder(settings: settings)
        zxing = ZXingDecoder(settings: settings, thorough: true, invertRetry: false, globalRetry: false)
        zxingGlobal = ZXingDecoder(settings: settings, thorough: true, binarizer: .globalHistogram, invertRetry: false,
                                   globalRetry: false)
        var qrOnly = settings
        qrOnly.symbologies = settings.symbologies.intersection([.qr])
        zbarQR = qrOnly.symbologies.isEmpty ? nil : try ZbarDecoder(settings: qrOnly)
    }

    /// The passes tried for an image of this size, in order. Every pass here read at least one
    /// corpus image that all earlier passes missed (docs/accuracy.md lists what each gained); passes
    /// that gained nothing (45° rotation, sharpening alone, other threshold radii, nearest-neighbour
    /// upscaling, zxing over every transform) were dropped.
    static func passes(width: Int, height: Int) -> [ImagePass] {
        let longest = max(width, height)
        var passes = [ImagePass(.zbar, .none)]
        if longest >= 400 { passes.append(ImagePass(.zbar, .downscale(2))) }
        if longest >= 1600 { passes.append(ImagePass(.zbar, .downscale(4))) }
        if longest <= 1000 { passes.append(ImagePass(.zbar, .padUpscale(2))) }
        if longest <= 400 { passes.append(ImagePass(.zbar, .padUpscale(3))) }
        passes.append(ImagePass(.zbar, .stretch))
        passes.append(ImagePass(.zbar, .threshold))
        passes.append(ImagePass(.zbar, .then(.sharpen, .threshold)))
        passes.append(ImagePass(.zxing, .none))
        if longest <= 1000 { passes.append(ImagePass(.zxing, .padUpscale(2))) }
        passes.append(ImagePass(.zxingGlobal, .none))
        passes.append(ImagePass(.zbarQR, .labelUnwarp))
        return passes
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        lastPass = nil
        guard width > 0, height > 0, luma.count == width * height else { return [] }
        let original = GrayImage(width: width, height: height, pixels: luma)
        for pass in ImageDecoder.passes(width: width, height: height) {
            let found = run(pass, on: original)
            if !found.isEmpty {
                lastPass = pass.name
                return found
            }
        }
        return []
    }

    /// One pass: transform, scan, map bounds back to the original image.
    func run(_ pass: ImagePass, on original: GrayImage) -> [DecodedSymbol] {
        if pass.engine == .zbarQR && zbarQR == nil { return [] }
        guard let image = pass.transform.apply(to: original) else { return [] }
        let found: [DecodedSymbol]
        switch pass.engine {
        case .zbar: found = zbar.decode(width: image.width, height: image.height, luma: image.pixels)
        case .zxing: found = zxing.decode(width: image.width, height: image.height, luma: image.pixels)
        case .zxingGlobal: found = zxingGlobal.decode(width: image.width, height: image.height, luma: image.pixels)
        case .zbarQR: found = zbarQR?.decode(width: image.width, height: image.height, luma: image.pixels) ?? []
        }
        return found.map {
            var s = $0
            s.bounds = image.mapBack(s.bounds)
            s.corners = s.bounds.corners
            return s
        }
    }
}

/// One way of looking at an image again: which decoder, over which copy of the image.
struct ImagePass: Equatable {
    enum Engine: String { case zbar, zxing, zxingGlobal = "zxing-global", zbarQR = "zbar-qr" }
    var engine: Engine
    var transform: ImageTransform
    init(_ engine: Engine, _ transform: ImageTransform) { self.engine = engine; self.transform = transform }
    var name: String { transform == .none ? engine.rawValue : engine.rawValue + "+" + transform.name }
}

/// A copy of the image for a further pass.
enum ImageTransform: Equatable {
    case none
    case downscale(Int)
    case padUpscale(Int)
    case stretch
    case threshold
    case sharpen
    case labelUnwarp
    indirect case then(ImageTransform, ImageTransform)

    var name: String {
        switch self {
        case .none: return "original"
        case .downscale(let f): return "downscale-\(f)x"
        case .padUpscale(let f): return "pad-upscale-\(f)x"
        case .stretch: return "contrast-stretch"
        case .threshold: return "adaptive-threshold"
        case .sharpen: return "sharpen"
        case .labelUnwarp: return "label-unwarp"
        case .then(let a, let b): return a.name + "+" + b.name
        }
    }

    /// The transformed copy, or nil when the transform does not apply to this image (no label to
    /// flatten): the pass is then skipped.
    func apply(to image: GrayImage) -> GrayImage? {
        switch self {
        case .none: return image
        case .downscale(let f): return GrayTransforms.downscale(image, by: f)
        case .padUpscale(let f):
            return GrayTransforms.upscale(GrayTransforms.pad(image, margin: max(8, min(image.width, image.height) / 8)), by: f)
        case .stretch: return GrayTransforms.stretchContrast(image)
        case .threshold:
            return GrayTransforms.adaptiveThreshold(image, radius: max(7, min(image.width, image.height) / 16))
        case .sharpen: return GrayTransforms.sharpen(image)
        case .labelUnwarp: return LabelUnwarp.apply(image)
        case .then(let a, let b): return a.apply(to: image).flatMap { b.apply(to: $0) }
        }
    }
}
