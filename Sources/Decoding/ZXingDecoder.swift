import CZXingShim
import Core
import Settings

/// The zxing-cpp implementation of the decoder seam (Debian libzxing-dev 1.4, through the CZXingShim C
/// face): `run`'s decoder by default (`decoder = zxing`), and decode-image's second engine.
///
/// On the live path a frame is read once whole; only when that finds nothing, in this order, each only
/// while nothing is found (docs/decoding.md has what each costs):
/// 1. the regions with many strong edges (`RegionFinder`, at most three): the bars and the bar-like
///    regions read by zbar for the 1D formats; each region cropped (its grey levels stretched when
///    faded) and read for the 2D formats, again with the global-histogram binarizer, and inverted
///    (`invertRetry`: dark mode; a small region on a dark surround again at twice the size); a region
///    with an Aztec bull's eye is turned upright, enlarged and read for Aztec (again over the code alone
///    when the region reaches well beyond it);
/// 2. the whole frame at half size (each 2x2 pixels averaged: sensor noise halved) for QR and Micro QR;
/// 3. the faint regions (at most two, up to 200 px: a dim code beside a bright label) cropped, stretched
///    and read for QR, Micro QR and DataMatrix with either binarizer, and the small square ones again at
///    twice the size;
/// 4. the square regions (2D codes, at most two; of one longer than 200 px, the square at its busier
///    end): cropped, stretched and read for QR, Micro QR and DataMatrix (a dim code touching a bright
///    label), then turned upright and enlarged 2.5x for Aztec and DataMatrix, as zxing-cpp 1.4 looks for
///    both only from the image centre, and read again around an Aztec bull's eye found there.
/// Without `regions` (`globalRetry` off, decode-image, the bench's library column) it is the whole frame,
/// then the global binarizer (`globalRetry`), then the inverted frame (`invertRetry`). With them, the
/// global binarizer reads crops only: on the whole frame it read nothing more on the live-path frames
/// than the crops did (two codes fewer, each category still at least the best of zbar, zxing-cpp 1.4 and
/// 3.1.1), for 1.2 ms more on every empty frame.
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
    /// Reads zxing-cpp abandoned at one of its assertions (Debian's 1.4.0 is built with them on; its
    /// Micro QR detector can fail `intersect`'s on some frames, fixed upstream after 1.4.0). The shim
    /// turns the abort into a failed read; the first one turns Micro QR off for this decoder, and the
    /// read is made again without it. Counted here, and told to `onAssertion` (the daemon logs it).
    public private(set) var assertions = 0
    /// ZXing::BarcodeFormat bits no longer asked for after an assertion (Micro QR).
    public private(set) var disabledFormats: UInt32 = 0
    /// Called once per assertion with what zxing said and what was turned off.
    public var onAssertion: (@Sendable (String) -> Void)?
    /// True when the last `decode` found its symbols in the inverted frame.
    public private(set) var lastFoundInverted = false
    /// The second look at the frame's busy regions; nil without `regions`.
    private let regionReaders: RegionReaders?

    /// The readers of the region passes, each for the formats enabled among those it is for.
    private struct RegionReaders {
        /// Every enabled 2D format, local-average binarizer.
        var matrix: ZXingReader
        /// QR, Micro QR and DataMatrix: global-histogram binarizer, and local-average (the inverted crops,
        /// the faint regions).
        var global: ZXingReader
        var qrLike: ZXingReader
        /// QR and Micro QR on the frame at half size: heavy sensor noise averaged away.
        var halfSize: ZXingReader
        /// Aztec alone (bull's eye), and Aztec with DataMatrix (square regions).
        var aztec: ZXingReader
        var upright: ZXingReader
        /// zbar for the enabled 1D formats (it reads thin bars that zxing-cpp 1.4 misses); nil when none
        /// are enabled or zbar refused the configuration.
        var bars: ZbarDecoder?
    }

    /// How zxing turns gray into black and white.
    public enum Binarizer: Sendable { case localAverage, globalHistogram, fixed }

    /// `thorough`: zxing's tryHarder + tryRotate + tryDownscale (still images; several times slower).
    /// `pure`: the image is one unrotated rendered code (no photo). `invertRetry` defaults to the
    /// settings' (`invert-retry`); `globalRetry` (the global-histogram read after a local-average one
    /// that found nothing) is the live path's, off for decode-image, which orders its own passes.
    /// `regions` (the second look at busy regions, the live path's) is on unless thorough, pure, or
    /// `globalRetry` is off.
    public init(settings: DecoderSettings, thorough: Bool = false, binarizer: Binarizer = .localAverage,
                pure: Bool = false, invertRetry: Bool? = nil, globalRetry: Bool = true, regions: Bool? = nil) {
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
        let live = regions ?? (!thorough && !pure && globalRetry && binarizer == .localAverage)
        regionReaders = live ? ZXingDecoder.regionReaders(settings: settings, formats: formats, flags: flags) : nil
    }

    private static func regionReaders(settings: DecoderSettings, formats: UInt32, flags: UInt32) -> RegionReaders {
        let qrLike = formats & (format(.qr) | format(.microqr) | format(.datamatrix))
        let aztec = formats & format(.aztec)
        var bars: ZbarDecoder?
        var linear = settings
        linear.symbologies = settings.symbologies.filter { !$0.is2D }
        linear.engine = .zbar
        linear.density = 1
        linear.testInverted = false
        linear.eanAddOns = false
        if !linear.symbologies.isEmpty { bars = try? ZbarDecoder(settings: linear) }
        return RegionReaders(
            matrix: ZXingReader(formats: formats & Symbology.allCases.filter(\.is2D).reduce(UInt32(0)) { $0 | format($1) },
                                flags: flags),
            global: ZXingReader(formats: qrLike, flags: flags | UInt32(ZXSHIM_BINARIZER_GLOBAL)),
            qrLike: ZXingReader(formats: qrLike, flags: flags),
            halfSize: ZXingReader(formats: formats & (format(.qr) | format(.microqr)), flags: flags),
            aztec: ZXingReader(formats: aztec, flags: flags),
            upright: ZXingReader(formats: aztec | (formats & format(.datamatrix)), flags: flags),
            bars: bars)
    }

    public func decode(_ frame: Frame) -> [DecodedSymbol] {
        decode(width: frame.width, height: frame.height, luma: frame.luma)
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        lastFoundInverted = false
        guard width > 0, height > 0, luma.count == width * height else { return [] }
        let found = luma.withUnsafeBufferPointer { read(reader, width: width, height: height, luma: $0) }
        guard found.isEmpty else { return found }
        if let regionReaders {
            return luma.withUnsafeBufferPointer { lookAgain(regionReaders, width: width, height: height, luma: $0) }
        }
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

    /// The live path's reads after a whole-frame read that found nothing (the type's comment lists them).
    private func lookAgain(_ readers: RegionReaders, width: Int, height: Int,
                           luma: UnsafeBufferPointer<UInt8>) -> [DecodedSymbol] {
        let regions = RegionFinder().find(width: width, height: height, luma: luma)
        if let bars = readers.bars {
            for region in regions.bars + regions.busy.filter(\.isBarLike) {
                guard let crop = RegionImage.crop(region, marginX: 30, marginY: 10, width: width, height: height, luma: luma)
                else { continue }
                // A short code (UPC-E, EAN-8, ITF, Codabar, DataBar) over less than 60% of the bars is most
                // likely a piece of a longer one that zbar could not read whole (an EAN-13's right half
                // reads as a UPC-E): not reported.
                let whole = bars.decode(width: crop.width, height: crop.height, luma: crop.pixels).filter { symbol in
                    !ZXingDecoder.shortCodes.contains(symbol.symbology) || symbol.bounds.w * 10 >= region.width * 6
                }
                let found = whole.map { symbol in
                    var s = symbol
                    s.corners = symbol.corners.map(crop.framePoint)
                    s.bounds = Rect(enclosing: s.corners)
                    return s
                }
                if !found.isEmpty { return found }
            }
        }
        for region in regions.busy {
            guard var crop = RegionImage.crop(region, marginX: 20, marginY: 20, width: width, height: height, luma: luma)
            else { continue }
            crop.stretchLowContrast()
            var found = read(readers.matrix, crop)
            if found.isEmpty { found = read(readers.global, crop) }
            if found.isEmpty, invertRetry {
                let (inside, around) = crop.means(inside: region)
                crop.invert()
                found = read(readers.qrLike, crop)
                // A small code on a dark screen (light inside, dark around): read again at twice the size.
                if found.isEmpty, ZXingDecoder.looksDarkMode(region, inside: inside, around: around) {
                    found = read(readers.qrLike, crop.enlarged(2))
                }
                lastFoundInverted = !found.isEmpty
            }
            if found.isEmpty, readers.aztec.formats != 0,
               let eye = BullsEye.find(in: region, width: width, height: height, luma: luma) {
                let reach = max(max(eye.x - Double(region.x0), Double(region.x1) - eye.x),
                                max(eye.y - Double(region.y0), Double(region.y1) - eye.y))
                let side = Int(2 * reach * 1.3) + 16
                // About 10 pixels a module, at most 720 pixels a side.
                let scale = min(10 / eye.module, 720 / Double(side))
                if let upright = RegionImage.warp(region, centreX: eye.x, centreY: eye.y, side: side, scale: scale,
                                                  width: width, height: height, luma: luma) {
                    found = read(readers.aztec, upright)
                }
                // The region reaches well beyond a compact Aztec code (a label of text beside it, whose
                // edges also skew the angle): again around the eye only.
                if found.isEmpty, reach > eye.module * 20 {
                    found = readCompactAztec(readers, eye, width: width, height: height, luma: luma)
                }
            }
            if !found.isEmpty { return found }
        }
        if readers.halfSize.formats != 0, let half = RegionImage.halfSize(width: width, height: height, luma: luma) {
            let found = read(readers.halfSize, half)
            if !found.isEmpty { return found }
        }
        var faintReads = 0
        for region in regions.faint where region.width <= 200 && region.height <= 200 && faintReads < 2 {
            faintReads += 1
            guard var crop = RegionImage.crop(region, marginX: 20, marginY: 20, width: width, height: height, luma: luma)
            else { continue }
            crop.stretchLowContrast()
            var found = read(readers.qrLike, crop)
            if found.isEmpty { found = read(readers.global, crop) }
            // A small, squarish faint region (a dim QR or DataMatrix, its noise stretched with it): read
            // again at twice the size.
            let long = max(region.width, region.height), short = min(region.width, region.height)
            if found.isEmpty, long <= 128, long * 10 <= short * 14 { found = read(readers.qrLike, crop.enlarged(2)) }
            if !found.isEmpty { return found }
        }
        guard readers.upright.formats | readers.qrLike.formats != 0 else { return [] }
        var squares: [CodeRegion] = []
        for region in regions.square.prefix(2) {
            let short = min(region.width, region.height), long = max(region.width, region.height)
            if long <= 200 {
                squares.append(region)
            } else if short <= 200 {
                // Longer than 200 px: a code and what touches it (a label of text beside a DataMatrix).
                // The square at whichever end has more edges.
                var a = region, b = region
                if region.width > region.height { a.x1 = a.x0 + short; b.x0 = b.x1 - short } else { a.y1 = a.y0 + short; b.y0 = b.y1 - short }
                squares.append(ZXingDecoder.edgeSum(a, width: width, height: height, luma: luma)
                    >= ZXingDecoder.edgeSum(b, width: width, height: height, luma: luma) ? a : b)
            }
        }
        for region in squares {
            // A dim QR or DataMatrix on a label beside a bright one: its busy region holds both, and the
            // bright label keeps that crop from being stretched. Its square region is the code alone.
            if var crop = RegionImage.crop(region, marginX: 20, marginY: 20, width: width, height: height, luma: luma) {
                crop.stretchLowContrast()
                let found = read(readers.qrLike, crop)
                if !found.isEmpty { return found }
            }
            guard readers.upright.formats != 0 else { continue }
            let side = max(region.width, region.height) * 13 / 10 + 16
            guard let upright = RegionImage.warp(region, centreX: Double(region.x0 + region.x1) / 2,
                                                 centreY: Double(region.y0 + region.y1) / 2, side: side, scale: 2.5,
                                                 width: width, height: height, luma: luma) else { continue }
            var found = read(readers.upright, upright)
            // Turned upright, an Aztec code's bull's eye shows along the rows and columns even when it
            // did not in the frame (rotated 20-45°): read again centred on it. Looked for in the middle
            // half, where the eye of a code filling the region is.
            let middle = CodeRegion(x0: upright.width / 4, y0: upright.height / 4, x1: upright.width * 3 / 4,
                                    y1: upright.height * 3 / 4, energy: 0, gx: 0, gy: 0)
            if found.isEmpty, readers.aztec.formats != 0, let eye = upright.pixels.withUnsafeBufferPointer({
                BullsEye.find(in: middle, width: upright.width, height: upright.height, luma: $0, midway: true)
            }) {
                let centre = upright.framePoint(Point(x: Int(eye.x.rounded()), y: Int(eye.y.rounded())))
                found = readCompactAztec(readers, BullsEye(x: Double(centre.x), y: Double(centre.y), module: eye.module / 2.5),
                                         width: width, height: height, luma: luma)
            }
            if !found.isEmpty { return found }
        }
        return []
    }

    /// Aztec read around a bull's eye only: 16 modules each way (a compact code is at most 27 modules
    /// across), turned upright by the edges there and enlarged to about 10 pixels a module.
    private func readCompactAztec(_ readers: RegionReaders, _ eye: BullsEye, width: Int, height: Int,
                                  luma: UnsafeBufferPointer<UInt8>) -> [DecodedSymbol] {
        let reach = eye.module * 16
        let near = CodeRegion(x0: Int(eye.x - reach), y0: Int(eye.y - reach), x1: Int(eye.x + reach),
                              y1: Int(eye.y + reach), energy: 0, gx: 0, gy: 0)
        let side = Int(2 * reach)
        guard let upright = RegionImage.warp(near, centreX: eye.x, centreY: eye.y, side: side,
                                             scale: min(10 / eye.module, 720 / Double(max(1, side))),
                                             width: width, height: height, luma: luma) else { return [] }
        return read(readers.aztec, upright)
    }

    /// A region that looks like a phone in dark mode: at most 144 px (modules of a few pixels), its mean
    /// at least 32 levels above a dark surround (under 64). Texture and labels on the live-path frames'
    /// empty scenes have surrounds of 99-180.
    static func looksDarkMode(_ region: CodeRegion, inside: Int, around: Int) -> Bool {
        max(region.width, region.height) <= 144 && around < 64 && inside > around + 32
    }

    /// The summed |differences| across and down `box`, every second row.
    static func edgeSum(_ box: CodeRegion, width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> Int {
        var sum = 0
        let x1 = min(box.x1, width - 1), y1 = min(box.y1, height - 1)
        guard box.x0 >= 0, box.y0 >= 0, box.x0 < x1, box.y0 < y1 else { return 0 }
        for y in stride(from: box.y0, to: y1, by: 2) {
            let row = y * width
            for x in box.x0..<x1 {
                let p = Int(luma[row + x])
                sum += abs(Int(luma[row + x + 1]) - p) + abs(Int(luma[row + width + x]) - p)
            }
        }
        return sum
    }

    /// The 1D codes short enough to be found inside a longer one.
    static let shortCodes: Set<Symbology> = [.upce, .ean8, .i25, .codabar, .databar, .databarExp]

    /// One read of a region image, the symbols' corners put back in frame pixels.
    private func read(_ reader: ZXingReader, _ image: RegionImage) -> [DecodedSymbol] {
        guard reader.formats != 0 else { return [] }
        let found = image.pixels.withUnsafeBufferPointer { read(reader, width: image.width, height: image.height, luma: $0) }
        return found.map { symbol in
            var s = symbol
            s.corners = symbol.corners.map(image.framePoint)
            s.bounds = Rect(enclosing: s.corners)
            return s
        }
    }

    /// One read, its symbols normalised (check digits, UPC forms) and each code once.
    private func read(_ reader: ZXingReader, width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> [DecodedSymbol] {
        var raw: [ZXingReader.Found] = []
        var attempt = ZXingReader(formats: reader.formats & ~disabledFormats, flags: reader.flags)
        while true {
            do throws(ZXingReader.Failure) {
                raw = try attempt.read(width: width, height: height, luma: luma)
                break
            } catch {
                guard let assertion = error.assertion else {
                    failedReads += 1
                    return []
                }
                assertions += 1
                let microQR = ZXingDecoder.format(.microqr)
                let retry = attempt.formats & microQR != 0 && attempt.formats & ~microQR != 0
                if attempt.formats & microQR != 0 { disabledFormats |= microQR }
                onAssertion?("zxing-cpp: \(assertion)" + (attempt.formats & microQR != 0
                    ? "; Micro QR is off from now on (zxing-cpp 1.4's Micro QR detector; fixed upstream after 1.4.0), the frame is read again without it"
                    : "; that read found nothing"))
                guard retry else {
                    failedReads += 1
                    return []
                }
                attempt = ZXingReader(formats: attempt.formats & ~microQR, flags: attempt.flags)
            }
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
