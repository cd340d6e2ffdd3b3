import Core

/// Decoding of still images (decode-image, the accuracy bench): one zbar pass, then further passes
/// only when the first found nothing.
public final class ImageDecoder {
    private let zbar: ZbarDecoder

    public init(settings: DecoderSettings) throws(UsageError) {
        zbar = try ZbarDecoder(settings: settings)
    }

    public func decode(width: Int, height: Int, luma: [UInt8]) -> [DecodedSymbol] {
        zbar.decode(width: width, height: height, luma: luma)
    }
}
