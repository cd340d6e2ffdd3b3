import Core

/// The largest image ScanGate decodes: 64 Mi pixels (8192x8192), 64 MB of 8-bit luma. A 50-megapixel
/// phone photo fits; a file that claims more (a 30 KB PNG can claim 30000x30000) is refused before any
/// pixel memory is allocated. Y4M frames have the same bound. Cameras are at most 4096x4096 (16 Mi pixels).
public enum ImageLimits {
    public static let maximumPixels = 1 << 26

    /// True when a width x height image may be decoded.
    public static func allows(width: Int, height: Int) -> Bool {
        width > 0 && height > 0 && width <= maximumPixels && height <= maximumPixels && width * height <= maximumPixels
    }

    /// "cannot read NAME: PNG size 30000x30000 is not supported (images are limited to 67108864 pixels, e.g. 8192x8192)".
    static func sizeError(_ name: String, _ format: String, _ width: Int, _ height: Int) -> UsageError {
        if width <= 0 || height <= 0 {
            return UsageError("cannot read \(name): \(format) size \(width)x\(height) is not supported (empty image)")
        }
        return UsageError("cannot read \(name): \(format) size \(width)x\(height) is not supported "
                          + "(images are limited to \(maximumPixels) pixels, e.g. 8192x8192)")
    }
}
