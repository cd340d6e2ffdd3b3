import Core

/// Where the 8-bit luma of one V4L2 pixel format sits in a buffer, and how to copy it out.
/// Packed 4:2:2 formats carry Y in every other byte; GREY and the 4:2:0 formats (NV12, YU12, YV12)
/// start with a plain Y plane; 24-bit RGB (what some cameras and libcamera's V4L2 layer offer) is
/// weighted into luma. Rows are `bytesPerLine` apart (drivers may pad them).
public enum LumaLayout: Equatable, Sendable {
    /// Y at `offset` within every `step` bytes of a row: GREY (1, 0), YUYV (2, 0), UYVY (2, 1).
    case packed(step: Int, offset: Int)
    /// Three bytes per pixel, red at `red` and blue at `blue` (green between): RGB3 (0, 2), BGR3 (2, 0).
    /// Luma is ITU-R BT.601's (0.299 R + 0.587 G + 0.114 B), in 8-bit fixed point.
    case rgb(red: Int, blue: Int)
    /// A JPEG picture, decoded to gray.
    case jpeg

    /// The formats ScanGate reads, best first: no conversion at all, then Y taken from packed or planar
    /// YUV, then 24-bit RGB (a weighted sum per pixel), then MJPEG (a decode per frame).
    public static let preference: [FourCC] = [.grey, .yuyv, .uyvy, .nv12, .yu12, .yv12, .rgb3, .bgr3, .mjpg, .jpeg]

    public init?(_ format: FourCC) {
        switch format {
        case .grey, .nv12, .yu12, .yv12: self = .packed(step: 1, offset: 0)
        case .yuyv: self = .packed(step: 2, offset: 0)
        case .uyvy: self = .packed(step: 2, offset: 1)
        case .rgb3: self = .rgb(red: 0, blue: 2)
        case .bgr3: self = .rgb(red: 2, blue: 0)
        case .mjpg, .jpeg: self = .jpeg
        default: return nil
        }
    }

    /// The bytes one row of luma occupies at least (for packed layouts).
    public func minimumBytesPerLine(width: Int) -> Int {
        switch self {
        case .packed(let step, _): return width * step
        case .rgb: return width * 3
        case .jpeg: return 0
        }
    }

    /// The bytes a buffer must hold for the luma of a `width` x `height` frame with rows `bytesPerLine` apart.
    public func requiredBytes(width: Int, height: Int, bytesPerLine: Int) -> Int {
        switch self {
        case .packed(let step, _): return height == 0 ? 0 : bytesPerLine * (height - 1) + width * step
        case .rgb: return height == 0 ? 0 : bytesPerLine * (height - 1) + width * 3
        case .jpeg: return 1
        }
    }

    /// Copies the luma of a packed or RGB layout out of `buffer` into width*height bytes, honouring the
    /// stride. Nil when the buffer is too short for the frame (or the layout is JPEG).
    public func extract(from buffer: UnsafeRawBufferPointer, width: Int, height: Int, bytesPerLine: Int) -> [UInt8]? {
        guard self != .jpeg, width > 0, height > 0, bytesPerLine >= minimumBytesPerLine(width: width),
              buffer.count >= requiredBytes(width: width, height: height, bytesPerLine: bytesPerLine),
              let source = buffer.baseAddress
        else { return nil }
        return [UInt8](unsafeUninitializedCapacity: width * height) { out, initialized in
            guard let target = out.baseAddress else { initialized = 0; return }
            for row in 0..<height {
                let src = (source + row * bytesPerLine).assumingMemoryBound(to: UInt8.self)
                let dst = target + row * width
                switch self {
                case .packed(1, _):
                    dst.update(from: src, count: width)
                case .packed(let step, let offset):
                    for x in 0..<width { dst[x] = src[offset + x * step] }
                case .rgb(let red, let blue):
                    for x in 0..<width {
                        let p = src + 3 * x
                        let y = 77 * Int(p[red]) + 150 * Int(p[1]) + 29 * Int(p[blue]) + 128
                        dst[x] = UInt8(truncatingIfNeeded: y >> 8)
                    }
                case .jpeg:
                    break
                }
            }
            initialized = width * height
        }
    }
}
