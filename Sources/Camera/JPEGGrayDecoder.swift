import CTurboJPEG

/// Decodes MJPEG frames straight to 8-bit gray with libturbojpeg (tjDecompress2, TJPF_GRAY): only the
/// luma is reconstructed, no RGB step. Owns one decompressor handle; used from the capture thread only.
final class JPEGGrayDecoder {
    enum Failure: Error, CustomStringConvertible {
        case handle(String)
        case header(String)
        case size(width: Int, height: Int)
        case decode(String)

        var description: String {
            switch self {
            case .handle(let m): return "cannot start the JPEG decoder: \(m)"
            case .header(let m): return "bad JPEG frame: \(m)"
            case .size(let w, let h): return "JPEG frame is \(w)x\(h), not the negotiated size"
            case .decode(let m): return "JPEG frame did not decode: \(m)"
            }
        }
    }

    private let handle: tjhandle

    init() throws(Failure) {
        guard let handle = tjInitDecompress() else {
            throw .handle(String(cString: tjGetErrorStr2(nil)))
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// The gray picture of a `width` x `height` JPEG; a frame of another size or a corrupt one throws.
    /// Warnings (a truncated last scan, say) still give the picture, as a camera's decoder would.
    func decode(_ jpeg: UnsafeRawBufferPointer, width: Int, height: Int) throws(Failure) -> [UInt8] {
        guard let base = jpeg.baseAddress, jpeg.count > 0, jpeg.count <= Int(UInt32.max) else {
            throw .header("empty buffer")
        }
        let source = base.assumingMemoryBound(to: UInt8.self)
        var w: Int32 = 0, h: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        if tjDecompressHeader3(handle, source, UInt(jpeg.count), &w, &h, &subsampling, &colorspace) != 0 {
            throw .header(message())
        }
        guard Int(w) == width, Int(h) == height else { throw .size(width: Int(w), height: Int(h)) }
        var gray = [UInt8](repeating: 0, count: width * height)
        let rc = gray.withUnsafeMutableBufferPointer { out in
            tjDecompress2(handle, source, UInt(jpeg.count), out.baseAddress, Int32(width), Int32(width),
                          Int32(height), TJPF_GRAY.rawValue, 0)
        }
        if rc != 0 && tjGetErrorCode(handle) != TJERR_WARNING.rawValue {
            throw .decode(message())
        }
        return gray
    }

    private func message() -> String {
        guard let text = tjGetErrorStr2(handle) else { return "unknown error" }
        return String(cString: text)
    }
}
