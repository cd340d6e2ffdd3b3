import Core

/// The stream header of a YUV4MPEG2 file: `YUV4MPEG2 W640 H480 F15:1 Ip A1:1 Cmono`.
public struct Y4MHeader: Equatable, Sendable {
    /// The sample layouts ScanGate reads; only the 8-bit luma plane is used, chroma bytes are skipped.
    public enum Chroma: String, Sendable, CaseIterable {
        case mono, c420jpeg = "420jpeg", c420paldv = "420paldv", c420mpeg2 = "420mpeg2", c420 = "420",
             c411 = "411", c422 = "422", c444 = "444", c444alpha = "444alpha"

        /// Bytes of one frame after the luma plane.
        public func chromaBytes(width: Int, height: Int) -> Int {
            let halfW = (width + 1) / 2, halfH = (height + 1) / 2
            switch self {
            case .mono: return 0
            case .c420jpeg, .c420paldv, .c420mpeg2, .c420: return 2 * halfW * halfH
            case .c411: return 2 * ((width + 3) / 4) * height
            case .c422: return 2 * halfW * height
            case .c444: return 2 * width * height
            case .c444alpha: return 3 * width * height
            }
        }
    }

    public var width: Int
    public var height: Int
    /// Frame rate from `F num:den`, nil when absent (or 0:0, "unknown").
    public var fps: Double?
    public var chroma: Chroma

    public init(width: Int, height: Int, fps: Double?, chroma: Chroma) {
        self.width = width
        self.height = height
        self.fps = fps
        self.chroma = chroma
    }

    /// Parses the header line without its `\n`. `name` is used in error messages.
    public static func parse(line: [UInt8], name: String) throws(UsageError) -> Y4MHeader {
        let text = String(decoding: line, as: UTF8.self)
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.first == "YUV4MPEG2" else { throw UsageError("cannot read \(name): not a YUV4MPEG2 (.y4m) file") }
        var width: Int?, height: Int?, fps: Double?
        var chroma = Chroma.c420jpeg
        for field in fields.dropFirst() {
            let tag = field.first!
            let value = String(field.dropFirst())
            switch tag {
            case "W": width = Int(value)
            case "H": height = Int(value)
            case "F":
                let parts = value.split(separator: ":")
                // Whole numbers, as the format defines them: a num:den in floating point could make
                // the rate 0 or infinite (F1:1e400).
                guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]) else {
                    throw UsageError("cannot read \(name): bad Y4M frame rate 'F\(value)' (want F num:den, whole numbers)")
                }
                if n > 0 && d > 0 { fps = Double(n) / Double(d) }
            case "C":
                guard let c = Chroma(rawValue: value) else {
                    let allowed = Chroma.allCases.map(\.rawValue).joined(separator: ", ")
                    throw UsageError("cannot read \(name): Y4M colour space 'C\(value)' is not supported (allowed: \(allowed); 8-bit only)")
                }
                chroma = c
            default: break // I (interlacing), A (aspect), X (comments) do not matter for luma.
            }
        }
        guard let w = width, let h = height, w > 0, h > 0, w <= 16384, h <= 16384 else {
            throw UsageError("cannot read \(name): Y4M header needs a positive W and H")
        }
        guard w * h <= ImageLimits.maximumPixels else {
            throw UsageError("cannot read \(name): Y4M frame size \(w)x\(h) is not supported "
                             + "(frames are limited to \(ImageLimits.maximumPixels) pixels, e.g. 8192x8192)")
        }
        return Y4MHeader(width: w, height: h, fps: fps, chroma: chroma)
    }

    /// The header line including its `\n`.
    public func encoded() -> [UInt8] {
        var line = "YUV4MPEG2 W\(width) H\(height)"
        if let fps {
            let (n, d) = Y4MHeader.rational(fps)
            line += " F\(n):\(d)"
        }
        line += " Ip A1:1 C\(chroma.rawValue)\n"
        return Array(line.utf8)
    }

    /// A frame rate as num:den: 15 → 15:1, 29.97 → 30000:1001.
    static func rational(_ fps: Double) -> (Int, Int) {
        for d in [1, 1001, 1000, 100000] {
            let n = fps * Double(d)
            if abs(n - n.rounded()) < 1e-6 * Double(d) { return (Int(n.rounded()), d) }
        }
        return (Int((fps * 1_000_000).rounded()), 1_000_000)
    }
}
