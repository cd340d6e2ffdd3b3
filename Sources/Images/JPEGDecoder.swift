import CTurboJPEG
import Core

/// JPEG through libturbojpeg, decoded straight to 8-bit gray (TJPF_GRAY: only the luma is computed).
public enum JPEGDecoder {
    public static func sniff(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF
    }

    /// Decodes `bytes`; a fatal error or a warning (e.g. a truncated file) is an error naming `name`.
    public static func decode(_ bytes: [UInt8], name: String) throws(UsageError) -> LumaImage {
        guard sniff(bytes) else { throw UsageError("cannot read \(name): not a JPEG file") }
        guard let handle = tjInitDecompress() else {
            throw UsageError("cannot read \(name): libturbojpeg could not start a decompressor")
        }
        defer { _ = tjDestroy(handle) }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let headerResult = bytes.withUnsafeBufferPointer { buffer in
            tjDecompressHeader3(handle, buffer.baseAddress, UInt(buffer.count), &width, &height, &subsampling, &colorspace)
        }
        guard headerResult == 0 else { throw UsageError("cannot read \(name): \(errorText(handle))") }
        guard ImageLimits.allows(width: Int(width), height: Int(height)) else {
            throw ImageLimits.sizeError(name, "JPEG", Int(width), Int(height))
        }
        var pixels = [UInt8](repeating: 0, count: Int(width) * Int(height))
        let result = bytes.withUnsafeBufferPointer { src in
            pixels.withUnsafeMutableBufferPointer { dst in
                tjDecompress2(handle, src.baseAddress, UInt(src.count), dst.baseAddress, width, width, height,
                              Int32(TJPF_GRAY.rawValue), 0)
            }
        }
        guard result == 0 else { throw UsageError("cannot read \(name): \(errorText(handle))") }
        return LumaImage(width: Int(width), height: Int(height), pixels: pixels)
    }

    private static func errorText(_ handle: tjhandle) -> String {
        guard let text = tjGetErrorStr2(handle) else { return "invalid JPEG data" }
        return "invalid JPEG data (\(String(cString: text)))"
    }
}
