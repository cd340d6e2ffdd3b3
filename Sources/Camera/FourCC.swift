/// A V4L2 pixel format code: four ASCII characters, little-endian, as v4l2_fourcc() builds them.
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// "YUYV" → v4l2_fourcc('Y','U','Y','V'); nil unless exactly four ASCII characters.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    /// The four characters, with unprintable bytes as '?' ("BA81", "Y16 ").
    public var description: String {
        var s = ""
        for shift in stride(from: 0, to: 32, by: 8) {
            let byte = UInt8(truncatingIfNeeded: rawValue >> UInt32(shift))
            s.unicodeScalars.append(byte >= 0x20 && byte < 0x7F ? Unicode.Scalar(byte) : "?")
        }
        return s
    }

    public static let grey = FourCC(rawValue: 0x5945_5247)  // 'GREY'
    public static let yuyv = FourCC(rawValue: 0x5659_5559)  // 'YUYV'
    public static let uyvy = FourCC(rawValue: 0x5956_5955)  // 'UYVY'
    public static let nv12 = FourCC(rawValue: 0x3231_564E)  // 'NV12'
    public static let yu12 = FourCC(rawValue: 0x3231_5559)  // 'YU12' (V4L2_PIX_FMT_YUV420)
    public static let yv12 = FourCC(rawValue: 0x3231_5659)  // 'YV12' (V4L2_PIX_FMT_YVU420)
    public static let rgb3 = FourCC(rawValue: 0x3342_4752)  // 'RGB3' (V4L2_PIX_FMT_RGB24: R, G, B bytes)
    public static let bgr3 = FourCC(rawValue: 0x3352_4742)  // 'BGR3' (V4L2_PIX_FMT_BGR24: B, G, R bytes)
    public static let mjpg = FourCC(rawValue: 0x4750_4A4D)  // 'MJPG'
    public static let jpeg = FourCC(rawValue: 0x4745_504A)  // 'JPEG' (some UVC cameras)
}
