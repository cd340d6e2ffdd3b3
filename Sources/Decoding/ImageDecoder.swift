import Core

/// Decoding of still images (decode-image, the accuracy bench). One zbar pass over the image as it
/// is; only when that finds nothing, further passes over transformed copies, cheapest first, until
/// one finds something:
///   1. half size (and quarter size for very large photos): huge codes whose modules are wider than
///      zbar's scan windows;
///   2. a white border and 2x/3x upscaling of small images: tightly cropped codes without a quiet
///      zone, modules of one or two pixels;
///   3. contrast stretch (1st..99th percentile to black..white);
///   4. adaptive threshold (local mean): uneven light, glare, shadows;
///   5. 45° rotation, when 1D symbologies are enabled: bars at an angle.
/// Measured on the real-photo corpus: see docs/accuracy.md.
public final class ImageDecoder {
    private let zbar: ZbarDecoder
    private let settings: DecoderSettings
    /// The pass that found the symbols of the last `decode` call (nil: nothing found).
    public private(set) var lastPass: String?

    public init(settings: DecoderSettings) throws(UsageError) {
        self.settings = settings
        zbar = try ZbarDecoder(settings: settings)
    }

    /// The passes tried for an image of this size, in order.
    static func passes(width: Int, height: Int, wants1D: Bool) -> [ImagePass] {
        let longest = max(width, height)
        var passes: [ImagePass] = [.original]
        if longest >= 400 { passes.append(.downscale(2)) }
        if longest >= 1600 { passes.append(.downscale(4)) }
        if longest <= 1000 { passes.append(.padUpscale(2)) }
        if longest <= 400 { passes.append(.padUpscale(3)) }
        passes.append(.stretch)
        passes.append(.threshold)
        if wants1D { passes.append(.rotate45) }
        return passes
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        lastPass = nil
        guard width > 0, height > 0, luma.count == width * height else { return [] }
        let wants1D = settings.symbologies.contains { !$0.is2D }
        let original = GrayImage(width: width, height: height, pixels: luma)
        for pass in ImageDecoder.passes(width: width, height: height, wants1D: wants1D) {
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
        let image = pass.apply(to: original)
        return zbar.decode(width: image.width, height: image.height, luma: image.pixels).map {
            var s = $0
            s.bounds = image.mapBack(s.bounds)
            return s
        }
    }
}

/// One way of looking at an image again.
enum ImagePass: Equatable {
    case original
    case downscale(Int)
    case padUpscale(Int)
    case stretch
    case threshold
    case rotate45

    var name: String {
        switch self {
        case .original: return "original"
        case .downscale(let f): return "downscale-\(f)x"
        case .padUpscale(let f): return "pad-upscale-\(f)x"
        case .stretch: return "contrast-stretch"
        case .threshold: return "adaptive-threshold"
        case .rotate45: return "rotate-45"
        }
    }

    func apply(to image: GrayImage) -> GrayImage {
        switch self {
        case .original: return image
        case .downscale(let f): return GrayTransforms.downscale(image, by: f)
        case .padUpscale(let f):
            return GrayTransforms.upscale(GrayTransforms.pad(image, margin: max(8, min(image.width, image.height) / 8)), by: f)
        case .stretch: return GrayTransforms.stretchContrast(image)
        case .threshold:
            return GrayTransforms.adaptiveThreshold(image, radius: max(7, min(image.width, image.height) / 16))
        case .rotate45: return GrayTransforms.rotate45(image)
        }
    }
}
