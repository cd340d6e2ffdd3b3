import Core
import Glibc

/// A part of a frame that may hold a code: a cluster of 8x8-pixel blocks with much more edge energy
/// than the frame's typical block (a code's modules give many strong edges; sensor noise, gradients and
/// smooth texture give few). Box in pixels, `x1`/`y1` exclusive.
struct CodeRegion: Equatable, Sendable {
    var x0: Int, y0: Int, x1: Int, y1: Int
    /// The blocks' summed edge energy (mean |difference| per pixel, summed over the blocks).
    var energy: Int
    /// The summed horizontal and vertical |differences|: about equal for a 2D code, horizontal far
    /// above vertical for the vertical bars of a 1D code.
    var gx: Int, gy: Int

    var width: Int { x1 - x0 }
    var height: Int { y1 - y0 }
    /// Vertical bars (or text): the horizontal differences at least 1.5 times the vertical ones.
    var isBarLike: Bool { gx * 10 >= gy * 15 }
}

/// Finds the regions of a frame worth a second look (docs/decoding.md, "Regions"). About a third of a
/// millisecond on a 640x480 frame; no state between frames.
struct RegionFinder {
    static let block = 8
    /// Regions returned at most, the most energetic first.
    var maxRegions = 3
    /// Fewer blocks than this is a speck, not a code (6 blocks: about 24x24 pixels at the least).
    var minBlocks = 6

    /// The busy regions (any mix of edges), the square ones (only blocks whose horizontal and vertical
    /// energies are within 1.7x of each other: 2D codes, not bars or lines of text) and the faint ones
    /// (blocks busy, but not enough to be in a busy region) and the bars (busy blocks with twice the
    /// horizontal differences as vertical), each the most energetic `maxRegions` first.
    func find(width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>)
        -> (busy: [CodeRegion], square: [CodeRegion], faint: [CodeRegion], bars: [CodeRegion]) {
        let b = RegionFinder.block
        let bw = width / b, bh = height / b
        guard bw >= 3, bh >= 3, luma.count >= width * height else { return ([], [], [], []) }
        var gx = [Int32](repeating: 0, count: bw * bh)
        var gy = [Int32](repeating: 0, count: bw * bh)
        gx.withUnsafeMutableBufferPointer { gx in
            gy.withUnsafeMutableBufferPointer { gy in
                for y in 0..<(bh * b - (bh * b == height ? 1 : 0)) {
                    let row = y * width
                    let blockRow = (y / b) * bw
                    for bx in 0..<bw {
                        var sx: Int32 = 0, sy: Int32 = 0
                        let end = min(bx * b + b, width - 1)
                        var x = bx * b
                        while x < end {
                            let p = Int32(luma[row + x])
                            sx &+= abs(Int32(luma[row + x + 1]) &- p)
                            sy &+= abs(Int32(luma[row + width + x]) &- p)
                            x += 1
                        }
                        gx[blockRow + bx] &+= sx
                        gy[blockRow + bx] &+= sy
                    }
                }
            }
        }
        var (energy, median) = RegionFinder.energies(gx: gx, gy: gy)
        // Heavy sensor noise (the typical block's mean |difference| 15 levels or more: low light) hides a
        // code's edges among the noise's: measured again on the frame at half size (2x2 pixels summed),
        // where the noise is halved and the modules' edges stay.
        if median >= 15 {
            RegionFinder.halfSizeDifferences(width: width, height: height, bw: bw, bh: bh, luma: luma, gx: &gx, gy: &gy)
            (energy, median) = RegionFinder.energies(gx: gx, gy: gy)
        }
        // 2.5x the typical block and at least 6 grey levels above it: a low-contrast code (modules 30
        // levels apart) clears it, heavy sensor noise alone does not.
        let threshold = max(median * 5 / 2, median + 6)
        let busy = components(bw: bw, bh: bh, energy: energy, gx: gx, gy: gy) { energy[$0] >= threshold }
        let square = components(bw: bw, bh: bh, energy: energy, gx: gx, gy: gy) {
            energy[$0] >= threshold && gx[$0] * 10 <= gy[$0] * 17 && gy[$0] * 10 <= gx[$0] * 17
        }
        // Faint: 1.8x the typical block and 4 levels above it, but under the busy threshold: a dim code
        // beside a bright label, which the label's region would swallow and its stretch would miss.
        let weak = max(median * 9 / 5, median + 4)
        let faint = components(bw: bw, bh: bh, energy: energy, gx: gx, gy: gy) {
            energy[$0] >= weak && energy[$0] < threshold
        }
        // Bars: busy blocks whose horizontal differences are twice the vertical ones (a 1D code's bars), apart
        // from a label of text or a 2D code beside them that the busy region would hold too.
        let bars = components(bw: bw, bh: bh, energy: energy, gx: gx, gy: gy) {
            energy[$0] >= threshold && gx[$0] >= gy[$0] * 2
        }
        return (busy, square, faint, bars)
    }

    /// Each block's mean |difference| per pixel, and the median of them (at least 1).
    private static func energies(gx: [Int32], gy: [Int32]) -> ([Int], Int) {
        let n = gx.count
        let b = RegionFinder.block
        var energy = [Int](repeating: 0, count: n)
        var histogram = [Int](repeating: 0, count: 1024)
        for i in 0..<n {
            let e = Int(gx[i] + gy[i]) / (b * b)
            energy[i] = e
            histogram[min(e, 1023)] += 1
        }
        var median = 0, seen = 0
        while median < 1023, seen + histogram[median] <= n / 2 { seen += histogram[median]; median += 1 }
        return (energy, max(1, median))
    }

    /// The blocks' |differences| measured on the frame at half size, each pixel the sum of 2x2: 16
    /// differences of 4-pixel sums per 8x8 block, the same scale as 64 differences of single pixels.
    private static func halfSizeDifferences(width: Int, height: Int, bw: Int, bh: Int, luma: UnsafeBufferPointer<UInt8>,
                                            gx: inout [Int32], gy: inout [Int32]) {
        let hw = width / 2, hh = height / 2
        guard hw >= 2, hh >= 2 else { return }
        var half = [Int32](repeating: 0, count: hw * hh)
        for y in 0..<hh {
            let top = 2 * y * width, bottom = top + width
            for x in 0..<hw {
                half[y * hw + x] = Int32(luma[top + 2 * x]) + Int32(luma[top + 2 * x + 1]) + Int32(luma[bottom + 2 * x])
                    + Int32(luma[bottom + 2 * x + 1])
            }
        }
        for i in 0..<gx.count { gx[i] = 0; gy[i] = 0 }
        let quarter = RegionFinder.block / 2
        for y in 0..<(hh - 1) where y / quarter < bh {
            let row = y * hw
            for x in 0..<(hw - 1) where x / quarter < bw {
                let k = (y / quarter) * bw + x / quarter
                let p = half[row + x]
                gx[k] &+= abs(half[row + x + 1] &- p)
                gy[k] &+= abs(half[row + hw + x] &- p)
            }
        }
    }

    /// Clusters of the blocks `keep` accepts, a block joining its neighbours up to two blocks away
    /// (|dx| + |dy| <= 2, so a code whose modules leave a quiet block still makes one region).
    private func components(bw: Int, bh: Int, energy: [Int], gx: [Int32], gy: [Int32],
                            keep: (Int) -> Bool) -> [CodeRegion] {
        let b = RegionFinder.block
        var label = [Bool](repeating: false, count: bw * bh)
        var stack: [Int] = []
        var regions: [CodeRegion] = []
        for start in 0..<(bw * bh) where !label[start] && keep(start) {
            label[start] = true
            stack.append(start)
            var r = CodeRegion(x0: start % bw, y0: start / bw, x1: start % bw, y1: start / bw, energy: 0, gx: 0, gy: 0)
            var count = 0
            while let j = stack.popLast() {
                count += 1
                let x = j % bw, y = j / bw
                r.x0 = min(r.x0, x); r.x1 = max(r.x1, x); r.y0 = min(r.y0, y); r.y1 = max(r.y1, y)
                r.energy += energy[j]; r.gx += Int(gx[j]); r.gy += Int(gy[j])
                for dy in -2...2 {
                    for dx in -2...2 where abs(dx) + abs(dy) <= 2 {
                        let xx = x + dx, yy = y + dy
                        guard xx >= 0, yy >= 0, xx < bw, yy < bh else { continue }
                        let k = yy * bw + xx
                        if !label[k], keep(k) { label[k] = true; stack.append(k) }
                    }
                }
            }
            guard count >= minBlocks else { continue }
            r.x0 *= b; r.y0 *= b; r.x1 = r.x1 * b + b; r.y1 = r.y1 * b + b
            regions.append(r)
        }
        regions.sort { $0.energy > $1.energy }
        return Array(regions.prefix(maxRegions))
    }
}

/// A gray image cut from a frame for a second read, with the way back to frame pixels: a crop, or a
/// crop rotated and enlarged.
struct RegionImage {
    var width: Int
    var height: Int
    var pixels: [UInt8]
    /// Frame position of this image's (0, 0), its x and y axes (frame pixels per image pixel).
    private var originX: Double, originY: Double
    private var axisX: (Double, Double), axisY: (Double, Double)

    /// The image point `p` in frame pixels.
    func framePoint(_ p: Point) -> Point {
        let x = originX + Double(p.x) * axisX.0 + Double(p.y) * axisY.0
        let y = originY + Double(p.x) * axisX.1 + Double(p.y) * axisY.1
        return Point(x: Int(x.rounded()), y: Int(y.rounded()))
    }

    /// The frame's pixels in `region` widened by `marginX`/`marginY` percent of its size on each side
    /// (16 pixels at least), clipped to the frame. Nil when nothing is left.
    static func crop(_ region: CodeRegion, marginX: Int, marginY: Int, width: Int, height: Int,
                     luma: UnsafeBufferPointer<UInt8>) -> RegionImage? {
        let mx = max(16, region.width * marginX / 100), my = max(16, region.height * marginY / 100)
        let x0 = max(0, region.x0 - mx), x1 = min(width, region.x1 + mx)
        let y0 = max(0, region.y0 - my), y1 = min(height, region.y1 + my)
        guard x1 - x0 >= 8, y1 - y0 >= 8, luma.count >= width * height else { return nil }
        let w = x1 - x0, h = y1 - y0
        var pixels = [UInt8](repeating: 0, count: w * h)
        pixels.withUnsafeMutableBufferPointer { out in
            for y in 0..<h {
                let from = (y0 + y) * width + x0
                for x in 0..<w { out[y * w + x] = luma[from + x] }
            }
        }
        return RegionImage(width: w, height: h, pixels: pixels, originX: Double(x0), originY: Double(y0),
                           axisX: (1, 0), axisY: (0, 1))
    }

    /// The whole frame at half size, each 2x2 pixels averaged (in low light the sensor's noise is halved,
    /// and a QR code's modules are still 2 pixels or more). Nil for a frame under 16x16.
    static func halfSize(width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> RegionImage? {
        let w = width / 2, h = height / 2
        guard w >= 8, h >= 8, luma.count >= width * height else { return nil }
        var pixels = [UInt8](repeating: 0, count: w * h)
        pixels.withUnsafeMutableBufferPointer { out in
            for y in 0..<h {
                let top = 2 * y * width, bottom = top + width
                for x in 0..<w {
                    let sum = Int(luma[top + 2 * x]) + Int(luma[top + 2 * x + 1]) + Int(luma[bottom + 2 * x])
                        + Int(luma[bottom + 2 * x + 1])
                    out[y * w + x] = UInt8((sum + 2) / 4)
                }
            }
        }
        return RegionImage(width: w, height: h, pixels: pixels, originX: 0.5, originY: 0.5, axisX: (2, 0), axisY: (0, 2))
    }

    /// A square around (`cx`, `cy`) of `side` frame pixels, turned by the code's own angle (found from
    /// the edges inside `region`) so that its edges run along the image's axes, and enlarged `scale`
    /// times (bilinear). Outside the frame is mid-grey. zxing-cpp 1.4's Aztec detector starts from the
    /// image centre and follows the bull's eye along the diagonals: centred, upright and at 8-10 pixels
    /// a module it finds codes it misses in the frame.
    static func warp(_ region: CodeRegion, centreX cx: Double, centreY cy: Double, side: Int, scale: Double,
                     width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> RegionImage? {
        guard side >= 8, scale > 0, width >= 2, height >= 2, luma.count >= width * height else { return nil }
        let angle = codeAngle(region, width: width, height: height, luma: luma)
        let c = cos(angle), s = sin(angle)
        let size = Int(Double(side) * scale)
        guard size >= 8 else { return nil }
        let half = Double(size) / 2
        var pixels = [UInt8](repeating: 128, count: size * size)
        pixels.withUnsafeMutableBufferPointer { out in
            for v in 0..<size {
                let dy = (Double(v) - half) / scale
                for u in 0..<size {
                    let dx = (Double(u) - half) / scale
                    let fx = cx + c * dx - s * dy, fy = cy + s * dx + c * dy
                    let ix = Int(fx.rounded(.down)), iy = Int(fy.rounded(.down))
                    guard ix >= 0, iy >= 0, ix < width - 1, iy < height - 1 else { continue }
                    let ax = fx - Double(ix), ay = fy - Double(iy)
                    let i = iy * width + ix
                    let top = Double(luma[i]) * (1 - ax) + Double(luma[i + 1]) * ax
                    let bottom = Double(luma[i + width]) * (1 - ax) + Double(luma[i + width + 1]) * ax
                    out[v * size + u] = UInt8(min(255, max(0, top * (1 - ay) + bottom * ay + 0.5)))
                }
            }
        }
        // Image (u, v) is frame (cx, cy) + R(angle) * ((u, v) - half) / scale.
        return RegionImage(width: size, height: size, pixels: pixels,
                           originX: cx - (c * half - s * half) / scale, originY: cy - (s * half + c * half) / scale,
                           axisX: (c / scale, s / scale), axisY: (-s / scale, c / scale))
    }

    /// The angle (-45°..45°) of a square code's edges in `region`: the mean of the gradients' directions
    /// taken four times over (so that edges 90° apart agree), each weighted by its strength.
    static func codeAngle(_ region: CodeRegion, width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>) -> Double {
        var sumC = 0.0, sumS = 0.0
        let x0 = max(1, region.x0), x1 = min(width - 1, region.x1)
        let y0 = max(1, region.y0), y1 = min(height - 1, region.y1)
        guard x0 < x1, y0 < y1 else { return 0 }
        for y in y0..<y1 {
            for x in x0..<x1 {
                let i = y * width + x
                let gx = Double(Int(luma[i + 1]) - Int(luma[i - 1]))
                let gy = Double(Int(luma[i + width]) - Int(luma[i - width]))
                let m = gx * gx + gy * gy
                guard m >= 100 else { continue }
                let a = gx * gx - gy * gy, b = 2 * gx * gy
                sumC += (a * a - b * b) / m
                sumS += 2 * a * b / m
            }
        }
        return atan2(sumS, sumC) / 4
    }

    /// Stretches the grey levels so that the darkest and lightest 1% reach 0 and 255, when they span
    /// between 8 and 140 levels (a faded or dim code; wider spans are left alone: glare would set them).
    mutating func stretchLowContrast() {
        var histogram = [Int](repeating: 0, count: 256)
        for v in pixels { histogram[Int(v)] += 1 }
        let cut = pixels.count / 100
        var lo = 0, acc = 0
        while lo < 255 { acc += histogram[lo]; if acc > cut { break }; lo += 1 }
        var hi = 255
        acc = 0
        while hi > 0 { acc += histogram[hi]; if acc > cut { break }; hi -= 1 }
        let span = hi - lo
        guard span >= 8, span <= 140 else { return }
        var table = [UInt8](repeating: 0, count: 256)
        for v in 0..<256 { table[v] = UInt8(min(255, max(0, (v - lo) * 255 / span))) }
        for i in 0..<pixels.count { pixels[i] = table[Int(pixels[i])] }
    }

    /// The image enlarged `factor` times (bilinear), its points still mapped to the same frame pixels.
    /// zxing-cpp 1.4 misses some codes at 3 pixels a module that it reads at 6 (a glare spot across a
    /// finder pattern, sensor noise on a stretched crop). Itself when under 2x2 or `factor` < 2.
    func enlarged(_ factor: Int) -> RegionImage {
        guard factor >= 2, width >= 2, height >= 2 else { return self }
        let w = width * factor, h = height * factor
        let f = Double(factor)
        var out = [UInt8](repeating: 0, count: w * h)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for v in 0..<h {
                    let fy = min(Double(height - 1), max(0, (Double(v) + 0.5) / f - 0.5))
                    let iy = min(height - 2, Int(fy)), ay = fy - Double(iy)
                    for u in 0..<w {
                        let fx = min(Double(width - 1), max(0, (Double(u) + 0.5) / f - 0.5))
                        let ix = min(width - 2, Int(fx)), ax = fx - Double(ix)
                        let i = iy * width + ix
                        let top = Double(src[i]) * (1 - ax) + Double(src[i + 1]) * ax
                        let bottom = Double(src[i + width]) * (1 - ax) + Double(src[i + width + 1]) * ax
                        dst[v * w + u] = UInt8(min(255, max(0, top * (1 - ay) + bottom * ay + 0.5)))
                    }
                }
            }
        }
        // Image (u, v) is the original's ((u + 0.5) / f - 0.5, (v + 0.5) / f - 0.5).
        let shift = 0.5 / f - 0.5
        return RegionImage(width: w, height: h, pixels: out,
                           originX: originX + shift * (axisX.0 + axisY.0), originY: originY + shift * (axisX.1 + axisY.1),
                           axisX: (axisX.0 / f, axisX.1 / f), axisY: (axisY.0 / f, axisY.1 / f))
    }

    /// The mean grey level of this image inside `region` (frame pixels; a crop's image axes are the
    /// frame's) and around it. A phone in dark mode: light modules inside, a dark screen around.
    func means(inside region: CodeRegion) -> (inside: Int, around: Int) {
        let x0 = max(0, region.x0 - Int(originX)), x1 = min(width, region.x1 - Int(originX))
        let y0 = max(0, region.y0 - Int(originY)), y1 = min(height, region.y1 - Int(originY))
        var inSum = 0, inCount = 0, outSum = 0, outCount = 0
        for y in 0..<height {
            let inRow = y >= y0 && y < y1
            for x in 0..<width {
                let v = Int(pixels[y * width + x])
                if inRow, x >= x0, x < x1 { inSum += v; inCount += 1 } else { outSum += v; outCount += 1 }
            }
        }
        return (inCount > 0 ? inSum / inCount : 0, outCount > 0 ? outSum / outCount : 0)
    }

    /// Light for dark: a phone in dark mode.
    mutating func invert() {
        for i in 0..<pixels.count { pixels[i] = 255 &- pixels[i] }
    }
}

/// An Aztec bull's eye in a region: along a row and down a column, seven runs of about equal width
/// (light, dark, light, dark centre, light, dark, light) between two dark ones.
struct BullsEye: Equatable {
    var x: Double, y: Double
    /// Pixels per module along the row and column.
    var module: Double

    /// The mean of the places found on at least two rows of `region`; nil when fewer.
    /// `midway`: dark is below halfway between the darkest and lightest 5% (a code turned upright and
    /// enlarged, with a light label and a grey surround); otherwise below the region's mean.
    static func find(in region: CodeRegion, width: Int, height: Int, luma: UnsafeBufferPointer<UInt8>,
                     midway: Bool = false) -> BullsEye? {
        let x0 = max(0, region.x0), x1 = min(width, region.x1), y0 = max(0, region.y0), y1 = min(height, region.y1)
        guard x1 - x0 >= 9, y1 - y0 >= 9, luma.count >= width * height else { return nil }
        var sum = 0, n = 0
        var histogram = [Int](repeating: 0, count: 256)
        for y in stride(from: y0, to: y1, by: 2) {
            for x in stride(from: x0, to: x1, by: 2) {
                let v = Int(luma[y * width + x])
                sum += v; n += 1; histogram[v] += 1
            }
        }
        var threshold = sum / max(1, n)
        if midway {
            let cut = n / 20
            var lo = 0, acc = 0
            while lo < 255 { acc += histogram[lo]; if acc > cut { break }; lo += 1 }
            var hi = 255
            acc = 0
            while hi > 0 { acc += histogram[hi]; if acc > cut { break }; hi -= 1 }
            threshold = (lo + hi + 1) / 2
        }
        var found = 0
        var sx = 0.0, sy = 0.0, sm = 0.0
        for y in y0..<y1 {
            let row = runs(count: x1 - x0, threshold: threshold) { Int(luma[y * width + x0 + $0]) }
            for k in candidates(row) {
                guard let m = evenRuns(row, k) else { continue }
                let cx = x0 + row.starts[k + 4] + row.widths[k + 4] / 2
                let top = max(0, y - Int(m * 7)), bottom = min(height, y + Int(m * 7))
                guard bottom - top >= 9 else { continue }
                let column = runs(count: bottom - top, threshold: threshold) { Int(luma[(top + $0) * width + cx]) }
                for j in candidates(column) {
                    let cy = top + column.starts[j + 4] + column.widths[j + 4] / 2
                    guard Double(abs(cy - y)) <= m, let m2 = evenRuns(column, j), m2 <= m * 1.5, m <= m2 * 1.5 else { continue }
                    found += 1
                    sx += Double(cx); sy += Double(cy); sm += (m + m2) / 2
                    break
                }
            }
        }
        guard found >= 2 else { return nil }
        return BullsEye(x: sx / Double(found), y: sy / Double(found), module: sm / Double(found))
    }

    private struct Runs { var widths: [Int] = []; var starts: [Int] = []; var dark: [Bool] = [] }

    /// Runs of dark (< threshold) and light pixels along a line of `count` pixels.
    private static func runs(count: Int, threshold: Int, pixel: (Int) -> Int) -> Runs {
        var r = Runs()
        guard count > 0 else { return r }
        var dark = pixel(0) < threshold
        var start = 0
        for i in 1...count {
            let v = i < count ? pixel(i) < threshold : !dark
            if v != dark {
                r.widths.append(i - start); r.starts.append(start); r.dark.append(dark)
                start = i; dark = v
            }
        }
        return r
    }

    /// Where nine runs start with a dark one.
    private static func candidates(_ r: Runs) -> [Int] {
        guard r.widths.count >= 9 else { return [] }
        return (0...(r.widths.count - 9)).filter { r.dark[$0] }
    }

    /// The mean width of the seven inner runs from `k + 1`, when each is within 0.5-1.6 of it, it is at
    /// least 1.5 pixels and the outer two are at least half of it.
    private static func evenRuns(_ r: Runs, _ k: Int) -> Double? {
        var m = 0.0
        for i in 1...7 { m += Double(r.widths[k + i]) }
        m /= 7
        guard m >= 1.5 else { return nil }
        for i in 1...7 {
            let w = Double(r.widths[k + i])
            if w < m * 0.5 || w > m * 1.6 { return nil }
        }
        guard Double(r.widths[k]) >= m * 0.5, Double(r.widths[k + 8]) >= m * 0.5 else { return nil }
        return m
    }
}
