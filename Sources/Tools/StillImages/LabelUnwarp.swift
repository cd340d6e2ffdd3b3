import Core

/// Flattening of a light label seen against a darker background: a printed sticker on a shirt or a
/// bag, a tag on a curved surface. The cloth's waves bend the label's outline and the code inside it
/// alike, so neither zbar's homography nor zxing's can follow the code's grid. Mapping the label's
/// four outline curves onto a rectangle (a Coons patch: the bilinear blend of the four boundary
/// curves) straightens the code by the same amount its outline is straightened.
///
/// Only images with such a label are touched: the largest light region (Otsu threshold, 4-connected)
/// must lie wholly inside the image, cover at least 5% of it and have four distinct corners.
public enum LabelUnwarp {
    /// Output pixels per input pixel along the label's outline: measured on the corpus, zbar reads
    /// the flattened stickers at 2 and misses half of them at 1 (docs/accuracy.md).
    static let defaultScale = 2.0
    /// Longest side of the flattened copy, whatever the label's size.
    public static let maxSide = 1600

    /// The flattened label of a luma image, or nil when it has none (the public face of `apply`, for
    /// the fuzz target and tools).
    public static func flatten(width: Int, height: Int, luma: [UInt8]) -> FlattenedLabel? {
        guard width > 0, height > 0, luma.count == width * height else { return nil }
        return apply(GrayImage(width: width, height: height, pixels: luma)).map(FlattenedLabel.init)
    }

    /// The flattened label, or nil when the image has no light label lying wholly inside it.
    static func apply(_ image: GrayImage, scale: Double = defaultScale) -> GrayImage? {
        guard let patch = outline(image, scale: scale) else { return nil }
        let fill = GrayTransforms.lightLevel(image)
        let w = patch.width, h = patch.height
        var out = [UInt8](repeating: fill, count: w * h)
        image.pixels.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<h {
                    for x in 0..<w {
                        let s = patch.point(x: Double(x), y: Double(y))
                        if let v = bilinear(p, width: image.width, height: image.height, x: s.x, y: s.y) { o[y * w + x] = v }
                    }
                }
            }
        }
        var result = GrayImage(width: w, height: h, pixels: out)
        result.warp = patch
        result.scale = image.scale
        result.offsetX = image.offsetX
        result.offsetY = image.offsetY
        result.original = image.original
        return result
    }

    /// Longest side of the copy the outline is searched in: larger photos are box-filtered down first,
    /// which bounds the flood fill's time and memory (a byte and an index per pixel).
    static let searchSide = 1200

    /// The label's outline in `image`'s pixels, searched in a copy of at most `searchSide` pixels.
    static func outline(_ image: GrayImage, scale: Double = defaultScale) -> LabelPatch? {
        let longest = max(image.width, image.height)
        guard longest > searchSide else { return findLabel(image, scale: scale) }
        let factor = (longest + searchSide - 1) / searchSide
        return findLabel(GrayTransforms.downscale(image, by: factor), scale: scale * Double(factor))?
            .scaled(by: Double(factor), toWidth: image.width, height: image.height)
    }

    /// The label's outline as a patch, or nil when there is no usable label.
    static func findLabel(_ image: GrayImage, scale: Double = defaultScale) -> LabelPatch? {
        let w = image.width, h = image.height
        guard w >= 16, h >= 16, image.pixels.count == w * h else { return nil }
        let threshold = otsuThreshold(image.pixels)
        guard let region = largestLightRegion(image, threshold: threshold), region.area * 20 >= w * h else { return nil }
        let mask = region.mask
        let box = region.box
        // Corners: the region's extreme points along the two diagonals.
        var tl = (x: 0, y: 0), tr = tl, bl = tl, br = tl
        var minSum = Int.max, maxSum = Int.min, minDiff = Int.max, maxDiff = Int.min
        for y in box.y0...box.y1 {
            for x in box.x0...box.x1 where mask[y * w + x] != 0 {
                if x + y < minSum { minSum = x + y; tl = (x, y) }
                if x + y > maxSum { maxSum = x + y; br = (x, y) }
                if x - y > maxDiff { maxDiff = x - y; tr = (x, y) }
                if x - y < minDiff { minDiff = x - y; bl = (x, y) }
            }
        }
        guard tl.x < tr.x, bl.x < br.x, tl.y < bl.y, tr.y < br.y else { return nil }
        // The four outline curves, each from corner to corner.
        // The first region pixel from index `start`, moving by `step` for at most `count` pixels.
        func firstInRegion(_ start: Int, step: Int, count: Int) -> PlanePoint? {
            var i = start
            for _ in 0..<count {
                if mask[i] != 0 { return PlanePoint(x: Double(i % w), y: Double(i / w)) }
                i += step
            }
            return nil
        }
        let rows = box.y1 - box.y0 + 1, columns = box.x1 - box.x0 + 1
        func column(_ x: Int, fromTop: Bool) -> PlanePoint? {
            fromTop ? firstInRegion(box.y0 * w + x, step: w, count: rows) : firstInRegion(box.y1 * w + x, step: -w, count: rows)
        }
        func row(_ y: Int, fromLeft: Bool) -> PlanePoint? {
            fromLeft ? firstInRegion(y * w + box.x0, step: 1, count: columns) : firstInRegion(y * w + box.x1, step: -1, count: columns)
        }
        let top = (tl.x...tr.x).compactMap { column($0, fromTop: true) }
        let bottom = (bl.x...br.x).compactMap { column($0, fromTop: false) }
        let left = (tl.y...bl.y).compactMap { row($0, fromLeft: true) }
        let right = (tr.y...br.y).compactMap { row($0, fromLeft: false) }
        guard top.count >= 2, bottom.count >= 2, left.count >= 2, right.count >= 2 else { return nil }
        var outW = (PlanePoint.length(top) + PlanePoint.length(bottom)) / 2 * scale
        var outH = (PlanePoint.length(left) + PlanePoint.length(right)) / 2 * scale
        let longest = max(outW, outH)
        if longest > Double(maxSide) { outW *= Double(maxSide) / longest; outH *= Double(maxSide) / longest }
        let width = Int(outW.rounded()), height = Int(outH.rounded())
        guard width >= 16, height >= 16 else { return nil }
        return LabelPatch(top: PlanePoint.resample(top, count: width), bottom: PlanePoint.resample(bottom, count: width),
                          left: PlanePoint.resample(left, count: height), right: PlanePoint.resample(right, count: height),
                          sourceWidth: w, sourceHeight: h)
    }

    /// Otsu's threshold: the gray level that best splits the histogram into two classes.
    static func otsuThreshold(_ pixels: [UInt8]) -> Int {
        var histogram = [Int](repeating: 0, count: 256)
        for v in pixels { histogram[Int(v)] += 1 }
        let total = Double(pixels.count)
        let sumAll = histogram.enumerated().reduce(0.0) { $0 + Double($1.offset * $1.element) }
        var best = 0, bestVariance = -1.0
        var weightBelow = 0.0, sumBelow = 0.0
        for t in 0..<256 {
            weightBelow += Double(histogram[t])
            sumBelow += Double(t * histogram[t])
            let weightAbove = total - weightBelow
            guard weightBelow > 0, weightAbove > 0 else { continue }
            let meanBelow = sumBelow / weightBelow, meanAbove = (sumAll - sumBelow) / weightAbove
            let variance = weightBelow * weightAbove * (meanBelow - meanAbove) * (meanBelow - meanAbove)
            if variance > bestVariance { bestVariance = variance; best = t }
        }
        return best
    }

    struct Region {
        var mask: [UInt8]
        var area: Int
        var box: (x0: Int, y0: Int, x1: Int, y1: Int)
    }

    /// The largest 4-connected region brighter than `threshold` that does not touch the image's edge.
    static func largestLightRegion(_ image: GrayImage, threshold: Int) -> Region? {
        let w = image.width, h = image.height
        var visited = [UInt8](repeating: 0, count: w * h)
        var best: (seed: Int, area: Int)? = nil
        var stack: [Int] = []
        image.pixels.withUnsafeBufferPointer { p in
            for start in 0..<(w * h) where visited[start] == 0 && Int(p[start]) > threshold {
                var area = 0
                var touchesEdge = false
                visited[start] = 1
                stack.append(start)
                while let i = stack.popLast() {
                    area += 1
                    let x = i % w, y = i / w
                    if x == 0 || y == 0 || x == w - 1 || y == h - 1 { touchesEdge = true }
                    if x > 0 && visited[i - 1] == 0 && Int(p[i - 1]) > threshold { visited[i - 1] = 1; stack.append(i - 1) }
                    if x < w - 1 && visited[i + 1] == 0 && Int(p[i + 1]) > threshold { visited[i + 1] = 1; stack.append(i + 1) }
                    if y > 0 && visited[i - w] == 0 && Int(p[i - w]) > threshold { visited[i - w] = 1; stack.append(i - w) }
                    if y < h - 1 && visited[i + w] == 0 && Int(p[i + w]) > threshold { visited[i + w] = 1; stack.append(i + w) }
                }
                if !touchesEdge, area > (best?.area ?? 0) { best = (start, area) }
            }
        }
        guard let best else { return nil }
        // Flood the winner again into its own mask, with its bounding box.
        var mask = [UInt8](repeating: 0, count: w * h)
        var box = (x0: w, y0: h, x1: 0, y1: 0)
        image.pixels.withUnsafeBufferPointer { p in
            mask[best.seed] = 1
            stack.append(best.seed)
            while let i = stack.popLast() {
                let x = i % w, y = i / w
                box = (min(box.x0, x), min(box.y0, y), max(box.x1, x), max(box.y1, y))
                if x > 0 && mask[i - 1] == 0 && Int(p[i - 1]) > threshold { mask[i - 1] = 1; stack.append(i - 1) }
                if x < w - 1 && mask[i + 1] == 0 && Int(p[i + 1]) > threshold { mask[i + 1] = 1; stack.append(i + 1) }
                if y > 0 && mask[i - w] == 0 && Int(p[i - w]) > threshold { mask[i - w] = 1; stack.append(i - w) }
                if y < h - 1 && mask[i + w] == 0 && Int(p[i + w]) > threshold { mask[i + w] = 1; stack.append(i + w) }
            }
        }
        return Region(mask: mask, area: best.area, box: box)
    }

    /// Bilinear sample at (x, y) in pixel-centre coordinates; nil outside the image.
    static func bilinear(_ p: UnsafeBufferPointer<UInt8>, width: Int, height: Int, x: Double, y: Double) -> UInt8? {
        guard x >= 0, y >= 0, x <= Double(width - 1), y <= Double(height - 1) else { return nil }
        let x0 = Int(x), y0 = Int(y)
        let x1 = min(x0 + 1, width - 1), y1 = min(y0 + 1, height - 1)
        let fx = x - Double(x0), fy = y - Double(y0)
        let top = Double(p[y0 * width + x0]) * (1 - fx) + Double(p[y0 * width + x1]) * fx
        let bottom = Double(p[y1 * width + x0]) * (1 - fx) + Double(p[y1 * width + x1]) * fx
        return UInt8(max(0, min(255, (top * (1 - fy) + bottom * fy).rounded())))
    }
}

struct PlanePoint: Equatable {
    var x: Double
    var y: Double

    static func length(_ points: [PlanePoint]) -> Double {
        zip(points, points.dropFirst()).reduce(0) { $0 + distance($1.0, $1.1) }
    }

    static func distance(_ a: PlanePoint, _ b: PlanePoint) -> Double {
        ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot()
    }

    /// `count` points spaced evenly along the polyline, first and last kept.
    static func resample(_ points: [PlanePoint], count: Int) -> [PlanePoint] {
        guard count >= 2, points.count >= 2 else { return points }
        var along = [0.0]
        for (a, b) in zip(points, points.dropFirst()) { along.append(along[along.count - 1] + distance(a, b)) }
        let total = along[along.count - 1]
        var out: [PlanePoint] = []
        out.reserveCapacity(count)
        var segment = 0
        for k in 0..<count {
            let target = total * Double(k) / Double(count - 1)
            while segment < points.count - 2 && along[segment + 1] < target { segment += 1 }
            let span = along[segment + 1] - along[segment]
            let t = span > 0 ? min(1, max(0, (target - along[segment]) / span)) : 0
            let a = points[segment], b = points[segment + 1]
            out.append(PlanePoint(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t))
        }
        return out
    }
}

/// A Coons patch over four outline curves: `top` and `bottom` run left to right with `width` points,
/// `left` and `right` top to bottom with `height` points, and they meet at the four corners.
struct LabelPatch {
    let top: [PlanePoint]
    let bottom: [PlanePoint]
    let left: [PlanePoint]
    let right: [PlanePoint]
    /// The size of the image the outline was found in. The blend is not a convex combination (its
    /// corner terms subtract), so with a ragged outline a point can fall outside that image: bounds
    /// mapped back are clamped to it.
    let sourceWidth: Int
    let sourceHeight: Int
    var width: Int { top.count }
    var height: Int { left.count }

    /// The bounding box in the source image of rectangle `r` of the flattened label: its corners and
    /// edge midpoints through the patch, clamped to the source image.
    func mapBack(_ r: Rect) -> Rect {
        let xs = [r.x, r.x + r.w / 2, r.x + r.w], ys = [r.y, r.y + r.h / 2, r.y + r.h]
        let points = xs.flatMap { x in ys.map { y in point(x: Double(x), y: Double(y)) } }
        let maxX = Double(max(0, sourceWidth - 1)), maxY = Double(max(0, sourceHeight - 1))
        func clamp(_ v: Double, _ limit: Double) -> Double { min(max(v.rounded(), 0), limit) }
        let x0 = clamp(points.map(\.x).min() ?? 0, maxX), x1 = clamp(points.map(\.x).max() ?? 0, maxX)
        let y0 = clamp(points.map(\.y).min() ?? 0, maxY), y1 = clamp(points.map(\.y).max() ?? 0, maxY)
        return Rect(x: Int(x0), y: Int(y0), w: max(1, Int(x1 - x0)), h: max(1, Int(y1 - y0)))
    }

    /// The same outline in the `width` x `height` image it was found `factor` times smaller in (a
    /// box-filtered downscale, whose pixel (x, y) covers (x·f ... x·f + f - 1)).
    func scaled(by factor: Double, toWidth width: Int, height: Int) -> LabelPatch {
        func up(_ points: [PlanePoint]) -> [PlanePoint] {
            points.map { PlanePoint(x: $0.x * factor + (factor - 1) / 2, y: $0.y * factor + (factor - 1) / 2) }
        }
        return LabelPatch(top: up(top), bottom: up(bottom), left: up(left), right: up(right),
                          sourceWidth: width, sourceHeight: height)
    }

    /// The source-image point that output pixel (x, y) shows (clamped to the patch).
    func point(x: Double, y: Double) -> PlanePoint {
        let xi = min(max(Int(x.rounded()), 0), width - 1), yi = min(max(Int(y.rounded()), 0), height - 1)
        let u = width > 1 ? Double(xi) / Double(width - 1) : 0
        let v = height > 1 ? Double(yi) / Double(height - 1) : 0
        let t = top[xi], b = bottom[xi], l = left[yi], r = right[yi]
        let c00 = top[0], c10 = top[width - 1], c01 = bottom[0], c11 = bottom[width - 1]
        let w00 = (1 - u) * (1 - v), w10 = u * (1 - v), w01 = (1 - u) * v, w11 = u * v
        return PlanePoint(
            x: (1 - v) * t.x + v * b.x + (1 - u) * l.x + u * r.x - (w00 * c00.x + w10 * c10.x + w01 * c01.x + w11 * c11.x),
            y: (1 - v) * t.y + v * b.y + (1 - u) * l.y + u * r.y - (w00 * c00.y + w10 * c10.y + w01 * c01.y + w11 * c11.y))
    }
}

/// A flattened label: its pixels, and how a rectangle in them maps back to the photo's pixels.
public struct FlattenedLabel {
    let image: GrayImage
    public var width: Int { image.width }
    public var height: Int { image.height }
    public var luma: [UInt8] { image.pixels }
    /// The bounding box, in the photo's pixels, of rectangle `r` of the flattened label.
    public func mapBack(_ r: Rect) -> Rect { image.mapBack(r) }
}
