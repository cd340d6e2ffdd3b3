import Core

/// Image files by content: PNG, JPEG or PGM, sniffed from the magic bytes (not the name).
public enum ImageFile {
    public enum Format: String, Sendable, CaseIterable {
        case png, jpeg, pgm
    }

    /// Reads any supported image file as 8-bit luma: a regular file of at most `FileSizeLimit.image`,
    /// at most `ImageLimits.maximumPixels`.
    public static func read(path: String) throws(UsageError) -> LumaImage {
        let bytes = try FileBytes.read(path: path, limit: .image)
        return try decode(bytes, name: path)
    }

    public static func decode(_ bytes: [UInt8], name: String) throws(UsageError) -> LumaImage {
        guard let format = sniff(bytes) else {
            if bytes.isEmpty { throw UsageError("cannot read \(name): the file is empty (want a PNG, JPEG or PGM file)") }
            throw UsageError("cannot read \(name): not a PNG, JPEG or PGM file")
        }
        switch format {
        case .png: return try PNGCodec.decode(bytes, name: name)
        case .jpeg: return try JPEGDecoder.decode(bytes, name: name)
        case .pgm: return try PGMCodec.decode(bytes, name: name)
        }
    }

    public static func sniff(_ bytes: [UInt8]) -> Format? {
        if PNGCodec.sniff(bytes) { return .png }
        if JPEGDecoder.sniff(bytes) { return .jpeg }
        if PGMCodec.sniff(bytes) { return .pgm }
        return nil
    }

    /// The writable format for a file name: .png or .pgm (nil otherwise).
    public static func writableFormat(forPath path: String) -> Format? {
        let lower = path.lowercased()
        if lower.hasSuffix(".png") { return .png }
        if lower.hasSuffix(".pgm") { return .pgm }
        return nil
    }

    /// Writes `image` as PNG or PGM (P5).
    public static func write(_ image: LumaImage, to path: String, format: Format) throws(UsageError) {
        switch format {
        case .png: try FileBytes.write(PNGCodec.encode(image), to: path)
        case .pgm: try FileBytes.write(PGMCodec.encode(image), to: path)
        case .jpeg: throw UsageError("cannot write \(path): JPEG output is not supported (use .png or .pgm)")
        }
    }
}
