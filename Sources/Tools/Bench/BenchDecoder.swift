import Core
import Decoding
import Settings
import StillImages

/// One decoder the live-path bench scores, passed in as a value: a name and what it reads in a frame
/// (the payload bytes of each code found). Confined to the bench's thread, as a decoder is to the
/// decode queue.
public struct BenchDecoder {
    public let name: String
    public let read: (Frame) -> [[UInt8]]

    public init(name: String, read: @escaping (Frame) -> [[UInt8]]) {
        self.name = name
        self.read = read
    }

    /// Any decoder behind the seam `run` uses (`Decoding.Decoder`).
    public static func seam(_ name: String, _ decoder: any Decoder) -> BenchDecoder {
        BenchDecoder(name: name) { frame in decoder.decode(frame).map(\.data) }
    }

    /// zxing-cpp 1.4 (Debian) through decode-image's CZXingShim, every format it has.
    public static func zxing(_ name: String, tryHarder: Bool) -> BenchDecoder {
        let reader = ZXingReader(tryHarder: tryHarder)
        return BenchDecoder(name: name) { frame in
            reader.read(width: frame.width, height: frame.height, luma: frame.luma).map(\.bytes)
        }
    }

    /// zbar as `run` configures it for QR, EAN-13 and Code 128 (binary QR payloads, density 1), without the
    /// change gate: every frame gets a full pass. The first column, and the CPU ratios' denominator.
    public static func zbar() throws(UsageError) -> BenchDecoder {
        var settings = DecoderSettings()
        settings.symbologies = [.qr, .ean13, .code128]
        settings.idleRescanFrames = 0
        return .seam("zbar 0.23", try ZbarDecoder(settings: settings))
    }

    /// The columns of the live-path row, zbar first. The live zxing decoder joins them as one more line:
    /// `.seam("zxing live", try ZXingLiveDecoder(settings: ...))`.
    public static func standard() throws(UsageError) -> [BenchDecoder] {
        [
            try zbar(),
            zxing("zxing-cpp 1.4", tryHarder: false),
            zxing("zxing-cpp 1.4 tryHarder", tryHarder: true),
        ]
    }
}
