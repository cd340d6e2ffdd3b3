/// An 8-bit grayscale image, row-major, stride == width: what every reader returns and every writer takes.
public struct LumaImage: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0 && pixels.count == width * height, "pixels must be width*height")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A uniform image.
    public init(width: Int, height: Int, fill: UInt8) {
        self.init(width: width, height: height, pixels: [UInt8](repeating: fill, count: width * height))
    }
}
