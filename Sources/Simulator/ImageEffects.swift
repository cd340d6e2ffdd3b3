#if canImport(Glibc)
import Glibc
#endif
import Images

/// The scenario's image effects: box blur, contrast, inversion and rotation.
public enum ImageEffects {
    /// Separable box blur with window 2r+1, edges clamped.
    public static func boxBlur(_ image: LumaImage, radius: Int) -> LumaImage {
        guard radius > 0, image.width > 0, image.height > 0 else { return image }
        let w = image.width, h = image.height
        var horizontal = [UInt8](repeating: 0, count: w * h)
        var out = [UInt8](repeating: 0, count: w * h)
        let window = 2 * radius + 1
        image.pixels.withUnsafeBufferPointer { src in
            for y in 0..<h {
                let row = y * w
                var sum = 0
                for k in -radius...radius { sum += Int(src[row + min(max(k, 0), w - 1)]) }
                for x in 0..<w {
                    horizontal[row + x] = UInt8((sum + window / 2) / window)
                    sum += Int(src[row + min(x + radius + 1, w - 1)]) - Int(src[row + max(x - radius, 0)])
                }
            }
        }
        for x in 0..<w {
            var sum = 0
            for k in -radius...radius { sum += Int(horizontal[min(max(k, 0), h - 1) * w + x]) }
            for y in 0..<h {
                out[y * w + x] = UInt8((sum + window / 2) / window)
                sum += Int(horizontal[min(y + radius + 1, h - 1) * w + x]) - Int(horizontal[max(y - radius, 0) * w + x])
            }
        }
        return LumaImage(width: w, height: h, pixels: out)
    }

    /// Scales the distance from mid-gray by `factor` (0 < factor ≤ 1 lowers contrast).
    public static func contrast(_ pixels: inout [UInt8], factor: Double) {
        guard factor != 1 else { return }
        let table: [UInt8] = (0..<256).map { v in
            UInt8(max(0, min(255, (128 + (Double(v) - 128) * factor).rounded())))
        }
        for i in pixels.indices { pixels[i] = table[Int(pixels[i])] }
    }

    public static func invert(_ pixels: inout [UInt8]) {
        for i in pixels.indices { pixels[i] = 255 - pixels[i] }
    }

    /// The size of `rotate`'s result for a width x height image, without rotating anything.
    public static func rotatedSize(width: Int, height: Int, degrees: Double) -> (width: Int, height: Int) {
        let turns = degrees.truncatingRemainder(dividingBy: 360)
        guard turns != 0 else { return (width, height) }
        let radians = turns * Double.pi / 180
        let c = cos(radians), s = sin(radians)
        let w = Double(width), h = Double(height)
        return (Int((abs(w * c) + abs(h * s)).rounded(.up)), Int((abs(w * s) + abs(h * c)).rounded(.up)))
    }

    /// Rotates by `degrees` (counter-clockwise) about the centre, bilinear; the result is the bounding box
    /// of the rotated image, with `fill` where no source pixel lands.
    public static func rotate(_ image: LumaImage, degrees: Double, fill: UInt8) -> LumaImage {
        let turns = degrees.truncatingRemainder(dividingBy: 360)
        guard turns != 0 else { return image }
        let radians = turns * Double.pi / 180
        let c = cos(radians), s = sin(radians)
        let w = Double(image.width), h = Double(image.height)
        let (outW, outH) = rotatedSize(width: image.width, height: image.height, degrees: degrees)
        let cx = w / 2, cy = h / 2, ocx = Double(outW) / 2, ocy = Double(outH) / 2
        var out = [UInt8](repeating: fill, count: outW * outH)
        image.pixels.withUnsafeBufferPointer { src in
            for oy in 0..<outH {
                for ox in 0..<outW {
                    // Inverse mapping: output pixel centre → source coordinates.
                    let dx = Double(ox) + 0.5 - ocx, dy = Double(oy) + 0.5 - ocy
                    let sx = c * dx - s * dy + cx - 0.5
                    let sy = s * dx + c * dy + cy - 0.5
                    guard sx > -1, sy > -1, sx < w, sy < h else { continue }
                    let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
                    let fx = sx - Double(x0), fy = sy - Double(y0)
                    func at(_ x: Int, _ y: Int) -> Double {
                        (x < 0 || y < 0 || x >= image.width || y >= image.height) ? Double(fill)
                            : Double(src[y * image.width + x])
                    }
                    let top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
                    let bottom = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
                    out[oy * outW + ox] = UInt8(max(0, min(255, (top * (1 - fy) + bottom * fy).rounded())))
                }
            }
        }
        return LumaImage(width: outW, height: outH, pixels: out)
    }
}
