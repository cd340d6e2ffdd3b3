import Core

/// Where the 8-bit luma of one V4L2 pixel format sits in a buffer, and how to copy it out.
/// Packed 4:2:2 formats carry Y in every other byte; GREY and the 4:2:0 formats (NV12, YU12, YV12)
/// start with a plain Y plane. Rows are `bytesPerLine` apart (drivers may pad them).
public enum LumaLayout: Equatable, Sendable {
    /// Y at `offset` within every `step` bytes of a row: GREY (1, 0), YUYV (2, 0), UYVY (2, 1).
    case packed(step: Int, offset: Int)
    /// A JPEG picture, decoded to gray.
    case jpeg

    /// The formats ScanGate reads, best first: no conversion at all, then Y taken from packed or planar
    /// YUV, then MJPEG (a decode per frame).
    public static let preference: [FourCC] = [.grey, .yuyv, .uyvy, .nv12, .yu12, .yv12, .mjpg, .jpeg]

    public init?(_ format: FourCC) {
        switch format {
        case .grey, .nv12, .yu12, .yv12: self = .packed(step: 1, offset: 0)
        case .yuyv: self = .packed(step: 2, offset: 0)
        case .uyvy: self = .packed(step: 2, offset: 1)
        case .mjpg, .jpeg: self = .jpeg
        default: return nil
        }
    }

    /// The bytes one row of luma occupies at least (for packed layouts).
    public func minimumBytesPerLine(width: Int) -> Int {
        switch self {
        case .packed(let step, _): return width * step
        case .jpeg: return 0
        }
    }

    /// The bytes a buffer must hold for the luma of a `width` x `height` frame with rows `bytesPerLine` apart.
    public func requiredBytes(width: Int, height: Int, bytesPerLine: Int) -> Int {
        switch self {
        case .packed(let step, _): return height == 0 ? 0 : bytesPerLine * (height - 1) + width * step
        case .jpeg: return 1
        }
    }

    /// Copies the luma of a packed layout out of `buffer` into width*height bytes, honouring the stride.
    /// Nil when the buffer is too short for the frame.
    public func extract(from buffer: UnsafeRawBufferPointer, width: Int, height: Int, bytesPerLine: Int) -> [UInt8]? {
        guard case .packed(let step, let offset) = self,
              width > 0, height > 0, bytesPerLine >= width * step,
              buffer.count >= requiredBytes(width: width, height: height, bytesPerLine: bytesPerLine),
              let source = buffer.baseAddress
        else { return nil }
        return [UInt8](unsafeUninitializedCapacity: width * height) { out, initialized in
            guard let target = out.baseAddress else { initialized = 0; return }
            for row in 0..<height {
                let src = source + row * bytesPerLine
                let dst = target + row * width
                if step == 1 {
                    UnsafeMutableRawPointer(dst).copyMemory(from: src, byteCount: width)
                } else {
                    for x in 0..<width { dst[x] = src.load(fromByteOffset: offset + x * step, as: UInt8.self) }
                }
            }
            initialized = width * height
        }
    }
}
