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

    /// zxing-cpp 1.4 (Debian) through the live decoder, every format: `retries` off is the library's
    /// one pass as it comes; on is what `run` does with `symbologies = all` (a global-histogram read and
    /// an inverted read of a frame where the first pass found nothing).
    public static func zxing(_ name: String, retries: Bool) -> BenchDecoder {
        var settings = DecoderSettings()
        settings.engine = .zxing
        settings.symbologies = Set(Symbology.allCases)
        settings.idleRescanFrames = 0
        return .seam(name, ZXingDecoder(settings: settings, invertRetry: retries, globalRetry: retries))
    }

    /// zbar as `run` configures it for QR, EAN-13 and Code 128 (binary QR payloads, density 1), without the
    /// change gate: every frame gets a full pass. The first column, and the CPU ratios' denominator.
    public static func zbar() throws(UsageError) -> BenchDecoder {
        var settings = DecoderSettings()
        settings.symbologies = [.qr, .ean13, .code128]
        settings.idleRescanFrames = 0
        return .seam("zbar 0.23", try ZbarDecoder(settings: settings))
    }

    /// The columns of the live-path row, zbar first, then the library alone, then ScanGate's live path.
    public static func standard() throws(UsageError) -> [BenchDecoder] {
        [
            try zbar(),
            zxing("zxing-cpp 1.4", retries: false),
            zxing("scangate zxing", retries: true),
        ]
    }
}
