import Core
import Images
import Service
import Simulator

/// `status --snapshot`'s and `preview`'s drawings of a snapshot: the frame with the decoder's view, as an RGB picture
/// (for a PNG file) or as terminal art. No text is drawn into the picture (no font); the figures are
/// printed beside terminal art and are in `status --json`.
///
/// The picture is the frame (grey, untouched where nothing is drawn) with each code's corners joined by
/// a closed red outline, and below it a panel (`panelHeight` rows): the 16-bin histogram as green bars,
/// a yellow mark at the mean luma. Every colour drawn is not grey, so the frame's pixels can be told
/// from the overlay. The change gate compares whole frames (it has no region setting), so there is no
/// region to draw; `view.change_gate` says so.
struct SnapshotPicture {
    static let outline: (UInt8, UInt8, UInt8) = (255, 0, 0)
    static let panelBackground: (UInt8, UInt8, UInt8) = (24, 24, 56)
    static let bar: (UInt8, UInt8, UInt8) = (64, 200, 64)
    static let meanMark: (UInt8, UInt8, UInt8) = (255, 220, 0)
    static let panelHeight = 40

    let width: Int
    let height: Int
    /// width × height × 3 bytes.
    private(set) var pixels: [UInt8]

    /// The picture of `snapshot`: the frame, the outlines, the panel below.
    init(_ snapshot: StatusSnapshot) {
        let view = snapshot.view
        width = view.width
        height = view.height + Self.panelHeight
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in 0..<(view.width * view.height) {
            let v = snapshot.luma[i]
            pixels[i * 3] = v
            pixels[i * 3 + 1] = v
            pixels[i * 3 + 2] = v
        }
        let thickness = max(1, min(view.width, view.height) / 240)
        for code in view.codes {
            Self.closedOutline(code.corners) { x, y in
                fill(x: x, y: y, w: thickness, h: thickness, Self.outline, below: view.height)
            }
        }
        drawPanel(view.figures, top: view.height)
    }

    /// Calls `plot` for every pixel of the lines joining `corners` in order and the last to the first.
    static func closedOutline(_ corners: [Point], plot: (Int, Int) -> Void) {
        guard !corners.isEmpty else { return }
        for (i, a) in corners.enumerated() {
            let b = corners[(i + 1) % corners.count]
            line(from: a, to: b, plot: plot)
        }
    }

    /// Bresenham's line, both ends included.
    static func line(from a: Point, to b: Point, plot: (Int, Int) -> Void) {
        var x = a.x, y = a.y
        let dx = abs(b.x - a.x), dy = -abs(b.y - a.y)
        let sx = a.x < b.x ? 1 : -1, sy = a.y < b.y ? 1 : -1
        var error = dx + dy
        // Bounded by the longer side (the corners come from the daemon, never trusted to be small).
        for _ in 0...(max(dx, -dy)) {
            plot(x, y)
            if x == b.x && y == b.y { break }
            let e2 = 2 * error
            if e2 >= dy { error += dy; x += sx }
            if e2 <= dx { error += dx; y += sy }
        }
    }

    /// Fills a rectangle, clipped to the picture and to the rows above `below`.
    private mutating func fill(x: Int, y: Int, w: Int, h: Int, _ colour: (UInt8, UInt8, UInt8), below: Int? = nil) {
        let limit = below ?? height
        let x0 = max(0, x), x1 = min(width, x + w), y0 = max(0, y), y1 = min(limit, y + h)
        guard x0 < x1, y0 < y1 else { return }
        for yy in y0..<y1 {
            for xx in x0..<x1 {
                let i = (yy * width + xx) * 3
                pixels[i] = colour.0
                pixels[i + 1] = colour.1
                pixels[i + 2] = colour.2
            }
        }
    }

    /// The histogram as bars (scaled to the fullest bin) and the mean as a mark, in the rows from `top`.
    private mutating func drawPanel(_ figures: FrameFigures, top: Int) {
        fill(x: 0, y: top, w: width, h: Self.panelHeight, Self.panelBackground)
        let barWidth = max(1, min(12, (width - 8) / FrameFigures.bins))
        let barSpace = max(1, barWidth * 3 / 4)
        let tallest = max(1, figures.histogram.max() ?? 1)
        let room = Self.panelHeight - 8
        for (i, count) in figures.histogram.enumerated() {
            let h = Int((Double(count) / Double(tallest) * Double(room)).rounded(.up))
            fill(x: 4 + i * barWidth, y: top + 4 + room - h, w: barSpace, h: h, Self.bar)
        }
        let mean = max(0, min(255, figures.meanLuma))
        let markX = 4 + Int(mean / 256 * Double(barWidth * FrameFigures.bins))
        fill(x: markX, y: top + 2, w: 1, h: Self.panelHeight - 4, Self.meanMark)
    }

    func png() throws(UsageError) -> [UInt8] { try PNGCodec.encodeRGB(width: width, height: height, pixels: pixels) }

    /// The same picture as a JPEG (4:4:4, so the outline stays red): `scangate preview`'s stream.
    func jpeg() throws(UsageError) -> [UInt8] { try JPEGEncoder.encodeRGB(width: width, height: height, pixels: pixels) }

    // MARK: - Terminal

    /// Terminal art of the frame at most `columns` wide (each character: one pixel column, two rows),
    /// dark where the frame is darker than its mean; the outlines are drawn dark. Then the figures and
    /// each code (corners, symbology, the payload as the outputs showed it).
    static func terminal(_ snapshot: StatusSnapshot, columns: Int, ansiColours: Bool) -> [String] {
        let view = snapshot.view
        let scale = max(1, (view.width + columns - 1) / max(8, columns))
        let w = max(1, view.width / scale), h = max(1, view.height / scale)
        var small = [UInt8](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                var sum = 0
                for yy in (y * scale)..<(y * scale + scale) {
                    let row = yy * view.width
                    for xx in (x * scale)..<(x * scale + scale) { sum += Int(snapshot.luma[row + xx]) }
                }
                let v = sum / (scale * scale)
                small[y * w + x] = UInt8(v)
            }
        }
        // Dark below the middle of the 1st and 99th percentiles: the mean would follow a large background.
        var counts = [Int](repeating: 0, count: 256)
        for v in small { counts[Int(v)] += 1 }
        func percentile(_ p: Int) -> Int {
            var seen = 0
            for (level, n) in counts.enumerated() {
                seen += n
                if seen * 100 >= p * small.count { return level }
            }
            return 255
        }
        let (lo, hi) = (percentile(1), percentile(99))
        let threshold = hi > lo ? (lo + hi + 1) / 2 : 0
        var art = small.map { Int($0) < threshold ? UInt8(0) : UInt8(255) }
        for code in view.codes {
            closedOutline(code.corners.map { Point(x: $0.x / scale, y: $0.y / scale) }) { x, y in
                if x >= 0, x < w, y >= 0, y < h { art[y * w + x] = 0 }
            }
        }
        var lines = TerminalArt.lines(LumaImage(width: w, height: h, pixels: art), ansiColours: ansiColours)
        let rate = view.framesPerSecond.map { JSONText.number($0, decimals: 1) + " fps" } ?? "fps not yet known"
        lines.append("frame \(view.frame), \(view.width)x\(view.height), \(rate); mean luma \(JSONText.number(view.figures.meanLuma, decimals: 1)), "
                     + "sharpness \(JSONText.number(view.figures.sharpness, decimals: 0)) (Laplacian variance)")
        lines.append("histogram (0 to 255): " + histogramBars(view.figures.histogram))
        if view.codes.isEmpty {
            lines.append("codes: none in frame \(view.decodedFrame.map(String.init) ?? "-")")
        }
        for code in view.codes {
            let corners = code.corners.map { "\($0.x),\($0.y)" }.joined(separator: " ")
            lines.append("\(code.symbology) at \(corners): " + (code.payload.map { Logger.escapeControls($0) } ?? "(not reported while in view)"))
        }
        return lines
    }

    /// "▁▃█▅…": one block per bin, scaled to the fullest.
    static func histogramBars(_ histogram: [UInt64]) -> String {
        let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        let tallest = max(1, histogram.max() ?? 1)
        return String(histogram.map { count -> Character in
            count == 0 ? " " : blocks[min(7, Int(Double(count) / Double(tallest) * 7.999))]
        })
    }
}
