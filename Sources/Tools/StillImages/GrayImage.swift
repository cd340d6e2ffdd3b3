import Core

/// An 8-bit gray image the extra decoding passes work on, with how its pixel coordinates map back to
/// the original image's (so the bounds of a symbol found in a transformed image are reported in the
/// caller's pixels).
struct GrayImage {
    let width: Int
    let height: Int
    var pixels: [UInt8]
    /// original = ((x - offsetX) * scale, (y - offsetY) * scale).
    var scale: Double = 1
    var offsetX: Int = 0
    var offsetY: Int = 0
    /// Set after a rotation: bounds are then reported as the whole original image.
    var original: (width: Int, height: Int)? = nil
    /// Set on a flattened label (`LabelUnwarp`): this image's pixels map through the patch into the
    /// image it was flattened from, whose own mapping is `scale` and the offsets.
    var warp: LabelPatch? = nil

    init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A rectangle found in this image, in the original image's pixels.
    func mapBack(_ r: Rect) -> Rect {
        if let original { return Rect(x: 0, y: 0, w: original.width, h: original.height) }
        let r = warp?.mapBack(r) ?? r
        let x = Double(r.x - offsetX), y = Double(r.y - offsetY), w = Double(r.w), h = Double(r.h)
        return Rect(x: Int((x * scale).rounded()), y: Int((y * scale).rounded()),
                    w: max(1, Int((w * scale).rounded())), h: max(1, Int((h * scale).rounded())))
    }
}

/// The image transforms the second passes use. Each returns a new image; none allocates per pixel.
enum GrayTransforms {
    /// Box-filtered downscale by an integer factor (huge codes filling a photo).
    static func downscale(_ image: GrayImage, by factor: Int) -> GrayImage {
        let w = image.width / factor, h = image.height / factor
        guard factor > 1, w > 0, h > 0 else { return image }
        var out = [UInt8](repeating: 0, count: w * h)
        let area = factor * factor
        image.pixels.withUnsafeBufferPointer { p in
            for y in 0..<h {
                for x in 0..<w {
                    var sum = 0
                    for dy in 0..<factor {
                        let row = (y * factor + dy) * image.width + x * factor
                        for dx in 0..<factor { sum += Int(p[row + dx]) }
                    }
                    out[y * w + x] = UInt8(sum / area)
                }
            }
        }
        var result = GrayImage(width: w, height: h, pixels: out)
        result.scale = image.scale * Double(factor)
        result.offsetX = image.offsetX / factor
        result.offsetY = image.offsetY / factor
        result.original = image.original
        return result
    }

    /// Bilinear upscale by an integer factor (tiny codes: modules of one or two pixels).
    static func upscale(_ image: GrayImage, by factor: Int) -> GrayImage {
        guard factor > 1, image.width > 0, image.height > 0 else { return image }
        let w = image.width * factor, h = image.height * factor
        var out = [UInt8](repeating: 0, count: w * h)
        let sw = image.width, sh = image.height
        let f = Double(factor)
        // Source coordinate and weight (of 256) for each output column and row.
        func taps(_ n: Int, _ limit: Int) -> [(Int, Int, Int)] {
            (0..<n).map { i in
                let s = max(0, (Double(i) + 0.5) / f - 0.5)
                let i0 = min(Int(s), limit - 1)
                return (i0, min(i0 + 1, limit - 1), Int(((s - Double(i0)) * 256).rounded()))
            }
        }
        let xs = taps(w, sw), ys = taps(h, sh)
        image.pixels.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<h {
                    let (y0, y1, fy) = ys[y]
                    for x in 0..<w {
                        let (x0, x1, fx) = xs[x]
                        let top = Int(p[y0 * sw + x0]) * (256 - fx) + Int(p[y0 * sw + x1]) * fx
                        let bottom = Int(p[y1 * sw + x0]) * (256 - fx) + Int(p[y1 * sw + x1]) * fx
                        o[y * w + x] = UInt8((top * (256 - fy) + bottom * fy + 32768) >> 16)
                    }
                }
            }
        }
        var result = GrayImage(width: w, height: h, pixels: out)
        result.scale = image.scale / f
        result.offsetX = image.offsetX * factor
        result.offsetY = image.offsetY * factor
        result.original = image.original
        return result
    }

    /// Adds a border of `margin` pixels in the image's own light level (the quiet zone a tightly
    /// cropped code lacks).
    static func pad(_ image: GrayImage, margin: Int) -> GrayImage {
        let fill = lightLevel(image)
        let w = image.width + 2 * margin, h = image.height + 2 * margin
        var out = [UInt8](repeating: fill, count: w * h)
        image.pixels.withUnsafeBufferPointer { p in
            for y in 0..<image.height {
                let dst = (y + margin) * w + margin
                for x in 0..<image.width { out[dst + x] = p[y * image.width + x] }
            }
        }
        var result = GrayImage(width: w, height: h, pixels: out)
        result.scale = image.scale
        result.offsetX = image.offsetX + margin
        result.offsetY = image.offsetY + margin
        result.original = image.original
        return result
    }

    /// Histogram stretch: the 1st percentile becomes black and the 99th white (low-contrast photos).
    static func stretchContrast(_ image: GrayImage) -> GrayImage {
        var histogram = [Int](repeating: 0, count: 256)
        for v in image.pixels { histogram[Int(v)] += 1 }
        let cut = image.pixels.count / 100
        var low = 0, acc = 0
        while low < 255 { acc += histogram[low]; if acc > cut { break }; low += 1 }
        var high = 255
        acc = 0
        while high > 0 { acc += histogram[high]; if acc > cut { break }; high -= 1 }
        var result = image
        guard high > low else { return result }
        var table = [UInt8](repeating: 0, count: 256)
        for v in 0..<256 { table[v] = UInt8(max(0, min(255, (v - low) * 255 / (high - low)))) }
        for i in 0..<result.pixels.count { result.pixels[i] = table[Int(result.pixels[i])] }
        return result
    }

    /// Adaptive threshold: a pixel is black when darker than the mean of its (2r+1)² neighbourhood
    /// minus `bias` (uneven light, glare, shadows across a code).
    static func adaptiveThreshold(_ image: GrayImage, radius: Int, bias: Int = 4) -> GrayImage {
        let w = image.width, h = image.height
        guard w > 0, h > 0 else { return image }
        // Integral image, (w+1)×(h+1).
        var integral = [Int](repeating: 0, count: (w + 1) * (h + 1))
        image.pixels.withUnsafeBufferPointer { p in
            integral.withUnsafeMutableBufferPointer { ii in
                for y in 0..<h {
                    var rowSum = 0
                    for x in 0..<w {
                        rowSum += Int(p[y * w + x])
                        ii[(y + 1) * (w + 1) + x + 1] = ii[y * (w + 1) + x + 1] + rowSum
                    }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: w * h)
        integral.withUnsafeBufferPointer { ii in
            image.pixels.withUnsafeBufferPointer { p in
                out.withUnsafeMutableBufferPointer { o in
                    let stride = w + 1
                    for y in 0..<h {
                        let y0 = max(0, y - radius), y1 = min(h, y + radius + 1)
                        for x in 0..<w {
                            let x0 = max(0, x - radius), x1 = min(w, x + radius + 1)
                            let sum = ii[y1 * stride + x1] - ii[y0 * stride + x1] - ii[y1 * stride + x0] + ii[y0 * stride + x0]
                            let count = (y1 - y0) * (x1 - x0)
                            o[y * w + x] = Int(p[y * w + x]) * count < sum - bias * count ? 0 : 255
                        }
                    }
                }
            }
        }
        var result = image
        result.pixels = out
        return result
    }

    /// 3x3 unsharp mask (amount 1): blurred module edges steepened.
    static func sharpen(_ image: GrayImage) -> GrayImage {
        let w = image.width, h = image.height
        guard w > 2, h > 2 else { return image }
        var result = image
        image.pixels.withUnsafeBufferPointer { p in
            for y in 1..<(h - 1) {
                for x in 1..<(w - 1) {
                    let i = y * w + x
                    let v = 5 * Int(p[i]) - Int(p[i - 1]) - Int(p[i + 1]) - Int(p[i - w]) - Int(p[i + w])
                    result.pixels[i] = UInt8(max(0, min(255, v)))
                }
            }
        }
        return result
    }

    /// The image's light (background) level: its 90th percentile, approximately.
    static func lightLevel(_ image: GrayImage) -> UInt8 {
        guard !image.pixels.isEmpty else { return 255 }
        var histogram = [Int](repeating: 0, count: 256)
        let step = max(1, image.pixels.count / 4096)
        var n = 0
        var i = 0
        while i < image.pixels.count { histogram[Int(image.pixels[i])] += 1; n += 1; i += step }
        var acc = 0
        for v in stride(from: 255, through: 0, by: -1) {
            acc += histogram[v]
            if acc * 10 >= n { return UInt8(v) }
        }
        return 255
    }
}
