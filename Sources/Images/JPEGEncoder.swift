import CTurboJPEG
import Core

/// RGB pixels to JPEG through libturbojpeg (4:4:4, so a thin coloured line keeps its colour).
public enum JPEGEncoder {
    /// `pixels`: width × height × 3 bytes, row by row. Errors name libturbojpeg's reason.
    public static func encodeRGB(width: Int, height: Int, pixels: [UInt8], quality: Int32 = 85) throws(UsageError) -> [UInt8] {
        guard width > 0, height > 0, width <= Int(Int32.max) / 3, pixels.count == width * height * 3 else {
            throw UsageError("cannot encode a JPEG of \(width)x\(height) from \(pixels.count) bytes")
        }
        guard let handle = tjInitCompress() else { throw UsageError("libturbojpeg could not start a compressor") }
        defer { _ = tjDestroy(handle) }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let rc = pixels.withUnsafeBufferPointer { src in
            tjCompress2(handle, src.baseAddress, Int32(width), Int32(width * 3), Int32(height), Int32(TJPF_RGB.rawValue),
                        &output, &size, Int32(TJSAMP_444.rawValue), quality, 0)
        }
        defer { if let output { tjFree(output) } }
        guard rc == 0, let output else {
            let reason = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
            throw UsageError("cannot encode a JPEG of \(width)x\(height): \(reason)")
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
