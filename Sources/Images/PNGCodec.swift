import CPNG
import Core

/// PNG through libpng's simplified API (no setjmp in Swift): any colour type and bit depth in,
/// 8-bit gray out (alpha composited on white); 8-bit gray or RGB PNG out.
public enum PNGCodec {
    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    public static func sniff(_ bytes: [UInt8]) -> Bool { bytes.starts(with: signature) }

    public static func decode(_ bytes: [UInt8], name: String) throws(UsageError) -> LumaImage {
        guard sniff(bytes) else { throw UsageError("cannot read \(name): not a PNG file") }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        let began = bytes.withUnsafeBytes { raw in
            png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count)
        }
        guard began != 0 else { throw UsageError("cannot read \(name): \(message(of: &image))") }
        let width = Int(image.width), height = Int(image.height)
        guard ImageLimits.allows(width: width, height: height) else {
            throw ImageLimits.sizeError(name, "PNG", width, height)
        }
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        var pixels = [UInt8](repeating: 255, count: width * height)
        var white = png_color(red: 255, green: 255, blue: 255)
        // libpng reads from the memory it was given at begin_read: keep `bytes` alive until finish_read returns.
        let finished = withExtendedLifetime(bytes) {
            pixels.withUnsafeMutableBytes { out in
                png_image_finish_read(&image, &white, out.baseAddress, png_int_32(width), nil)
            }
        }
        guard finished != 0 else { throw UsageError("cannot read \(name): \(message(of: &image))") }
        return LumaImage(width: width, height: height, pixels: pixels)
    }

    /// Any PNG as 8-bit RGB (alpha composited on white): width × height × 3 bytes, row by row.
    public static func decodeRGB(_ bytes: [UInt8], name: String) throws(UsageError) -> (width: Int, height: Int, pixels: [UInt8]) {
        guard sniff(bytes) else { throw UsageError("cannot read \(name): not a PNG file") }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        let began = bytes.withUnsafeBytes { raw in
            png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count)
        }
        guard began != 0 else { throw UsageError("cannot read \(name): \(message(of: &image))") }
        let width = Int(image.width), height = Int(image.height)
        guard ImageLimits.allows(width: width, height: height) else {
            throw ImageLimits.sizeError(name, "PNG", width, height)
        }
        image.format = png_uint_32(PNG_FORMAT_FLAG_COLOR)   // PNG_FORMAT_RGB (a macro of a macro: not imported)
        var pixels = [UInt8](repeating: 255, count: width * height * 3)
        var white = png_color(red: 255, green: 255, blue: 255)
        let finished = withExtendedLifetime(bytes) {
            pixels.withUnsafeMutableBytes { out in
                png_image_finish_read(&image, &white, out.baseAddress, png_int_32(width * 3), nil)
            }
        }
        guard finished != 0 else { throw UsageError("cannot read \(name): \(message(of: &image))") }
        return (width, height, pixels)
    }

    /// An 8-bit grayscale PNG file's bytes.
    public static func encode(_ luma: LumaImage) throws(UsageError) -> [UInt8] {
        try encode(width: luma.width, height: luma.height, channels: 1, pixels: luma.pixels)
    }

    /// An 8-bit RGB PNG file's bytes: `pixels` holds width × height × 3 bytes, R G B, row by row.
    public static func encodeRGB(width: Int, height: Int, pixels: [UInt8]) throws(UsageError) -> [UInt8] {
        try encode(width: width, height: height, channels: 3, pixels: pixels)
    }

    private static func encode(width: Int, height: Int, channels: Int, pixels: [UInt8]) throws(UsageError) -> [UInt8] {
        guard width > 0, height > 0, pixels.count == width * height * channels, width <= Int(Int32.max) / channels,
              height <= Int(Int32.max) else {
            throw UsageError("cannot encode PNG: \(width)x\(height) with \(pixels.count) bytes of pixels")
        }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        let stride = png_int_32(width * channels)
        image.format = channels == 3 ? png_uint_32(PNG_FORMAT_FLAG_COLOR) : png_uint_32(PNG_FORMAT_GRAY)
        defer { png_image_free(&image) }
        var size: png_alloc_size_t = 0
        let sized = pixels.withUnsafeBytes { raw in
            png_image_write_to_memory(&image, nil, &size, 0, raw.baseAddress, stride, nil)
        }
        guard sized != 0, size > 0 else { throw UsageError("cannot encode PNG: \(message(of: &image))") }
        var out = [UInt8](repeating: 0, count: Int(size))
        let written = out.withUnsafeMutableBytes { dst in
            pixels.withUnsafeBytes { raw in
                png_image_write_to_memory(&image, dst.baseAddress, &size, 0, raw.baseAddress, stride, nil)
            }
        }
        guard written != 0 else { throw UsageError("cannot encode PNG: \(message(of: &image))") }
        return Array(out.prefix(Int(size)))
    }

    private static func message(of image: inout png_image) -> String {
        let text = withUnsafeBytes(of: &image.message) { raw -> String in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
        return text.isEmpty ? "invalid PNG data" : "invalid PNG data (\(text))"
    }
}
