import XCTest
import CQREncode
import Core
import Platform
@testable import Decoding
import Settings
@testable import StillImages

/// Still-image decoding: the second passes, QR text conversion, Code 39 full ASCII, EAN add-ons and
/// the zxing-cpp decoder, through the real zbar and zxing-cpp.
final class DecodingTests: XCTestCase {
    /// A QR code rendered with libqrencode: `scale` pixels per module, a 4-module quiet zone, dark
    /// modules 0 and light 255 (or the reverse when `inverted`).
    func renderQR(_ text: String, scale: Int, inverted: Bool = false) throws -> (width: Int, luma: [UInt8]) {
        let code = try XCTUnwrap(QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1), "qrencode failed")
        defer { QRcode_free(code) }
        let modules = Int(code.pointee.width)
        let size = (modules + 8) * scale
        let dark: UInt8 = inverted ? 255 : 0, light: UInt8 = inverted ? 0 : 255
        var luma = [UInt8](repeating: light, count: size * size)
        for my in 0..<modules {
            for mx in 0..<modules where code.pointee.data[my * modules + mx] & 1 == 1 {
                for y in 0..<scale {
                    for x in 0..<scale { luma[((my + 4) * scale + y) * size + (mx + 4) * scale + x] = dark }
                }
            }
        }
        return (size, luma)
    }

    func testInvertedQRIsReadByImageDecoder() throws {
        let (size, luma) = try renderQR("dark mode ticket 42", scale: 4, inverted: true)
        let decoder = try ImageDecoder(settings: imageDecoderDefaults())
        let symbols = decoder.decode(width: size, height: size, luma: luma)
        XCTAssertEqual(symbols.map(\.data), [Array("dark mode ticket 42".utf8)])
        XCTAssertEqual(symbols.first?.symbology, .qr)
    }

    func testHugeCodeIsReadAndBoundsAreInOriginalPixels() throws {
        // 40 px per module: the code fills a 1000+ px photo.
        let (size, luma) = try renderQR("HUGE", scale: 40)
        XCTAssertGreaterThan(size, 1000)
        let decoder = try ImageDecoder(settings: imageDecoderDefaults())
        let symbols = decoder.decode(width: size, height: size, luma: luma)
        XCTAssertEqual(symbols.map(\.data), [Array("HUGE".utf8)])
        // The downscale pass maps its bounds back: the box lies inside the image and covers most of it.
        let pass = ImagePass(.zbar, .downscale(2))
        let viaPyramid = decoder.run(pass, on: GrayImage(width: size, height: size, pixels: luma))
        XCTAssertEqual(viaPyramid.map(\.data), [Array("HUGE".utf8)])
        if let b = viaPyramid.first?.bounds {
            XCTAssertGreaterThanOrEqual(b.x, 0)
            XCTAssertLessThanOrEqual(b.x + b.w, size + 2)
            XCTAssertGreaterThan(b.w, size / 2)
        }
    }

    func testTinyCroppedCodeWithoutQuietZoneIsRead() throws {
        // 2 px per module, cropped to the symbol (no quiet zone).
        let (size, luma) = try renderQR("tiny", scale: 2)
        let crop = 8, inner = size - 2 * crop
        var cropped: [UInt8] = []
        for y in crop..<(size - crop) { cropped += luma[(y * size + crop)..<(y * size + size - crop)] }
        let decoder = try ImageDecoder(settings: imageDecoderDefaults())
        XCTAssertEqual(decoder.decode(width: inner, height: inner, luma: cropped).map(\.data), [Array("tiny".utf8)])
    }

    func testShiftJISPayloadBecomesUTF8() {
        let text = QRText()
        // "Google モバイル" in Shift_JIS.
        let sjis: [UInt8] = Array("Google ".utf8) + [0x83, 0x82, 0x83, 0x6F, 0x83, 0x43, 0x83, 0x8B]
        XCTAssertEqual(String(decoding: text.utf8(sjis), as: UTF8.self), "Google モバイル")
        // Half-width katakana (single bytes 0xA1-0xDF) are Shift_JIS too.
        XCTAssertEqual(String(decoding: text.utf8([0xC3, 0xDE]), as: UTF8.self), "ﾃﾞ")
        // Backslash stays a backslash (CP932), not YEN SIGN.
        XCTAssertEqual(text.utf8([0x83, 0x82, 0x5C]), Array("モ\\".utf8))
    }

    func testUTF8IsKeptAndLatin1IsTheFallback() {
        let text = QRText()
        XCTAssertEqual(text.utf8(Array("Grüße 測試".utf8)), Array("Grüße 測試".utf8))
        // "café" in ISO-8859-1: 0xE9 at the end is a truncated Shift_JIS lead byte, so Latin-1.
        XCTAssertEqual(String(decoding: text.utf8([0x63, 0x61, 0x66, 0xE9]), as: UTF8.self), "café")
    }

    func testRawQRBytesAreKeptWhenConversionIsOff() throws {
        var settings = DecoderSettings()
        settings.qrTextAsUTF8 = false
        let decoder = try ZbarDecoder(settings: settings)
        let (size, luma) = try renderQR("plain", scale: 4)
        XCTAssertEqual(decoder.decode(width: size, height: size, luma: luma).map(\.data), [Array("plain".utf8)])
    }

    func testCode39FullASCII() {
        XCTAssertEqual(SymbolNormaliser.code39FullASCII(Array("A+A-1234".utf8)), Array("Aa-1234".utf8))
        XCTAssertEqual(SymbolNormaliser.code39FullASCII(Array("E+X+T+E+N+D+E+D /A%J/J/C".utf8)), Array("Extended !?*#".utf8))
        XCTAssertEqual(SymbolNormaliser.code39FullASCII(Array("$M$J".utf8)), [0x0D, 0x0A])
        // An invalid pair: plain Code 39, left alone by the normaliser.
        XCTAssertNil(SymbolNormaliser.code39FullASCII(Array("10% OFF".utf8)))
        var settings = DecoderSettings()
        settings.symbologies = [.code39]
        settings.code39FullASCII = true
        let plain = DecodedSymbol(symbology: .code39, data: Array("10% OFF".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        XCTAssertEqual(SymbolNormaliser.normalise(plain, settings: settings)?.data, Array("10% OFF".utf8))
    }

    func testUPCEAsGTIN13() {
        var settings = DecoderSettings()
        settings.symbologies = [.upce]
        settings.upceAsGTIN13 = true
        let e = DecodedSymbol(symbology: .upce, data: Array("04252614".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        XCTAssertEqual(SymbolNormaliser.normalise(e, settings: settings)?.data, Array("0042100005264".utf8))
    }

    func testAddOnJoinsTheSymbolToItsLeftOnly() {
        let main = DecodedSymbol(symbology: .ean13, data: Array("9780735200449".utf8), bounds: Rect(x: 70, y: 30, w: 381, h: 279))
        let upce = DecodedSymbol(symbology: .upce, data: Array("0042100005264".utf8), bounds: Rect(x: 900, y: 30, w: 100, h: 100))
        var symbols = [main, upce]
        EANAddOn.attach([(Array("51299".utf8), Rect(x: 666, y: 74, w: 1, h: 255)),
                         (Array("01".utf8), Rect(x: 1050, y: 40, w: 2, h: 60))], to: &symbols)
        XCTAssertEqual(symbols.map(\.data), [Array("978073520044951299".utf8), Array("0042100005264".utf8)])
    }

    func testZXingDecoderReadsThroughTheSeam() throws {
        let (size, luma) = try renderQR("zxing seam", scale: 3)
        let decoder: Decoder = ZXingDecoder(settings: DecoderSettings(), thorough: false)
        let frame = Frame(width: size, height: size, sequence: 0, captureTime: MonotonicInstant(nanoseconds: 0), luma: luma)
        XCTAssertEqual(decoder.decode(frame).map(\.data), [Array("zxing seam".utf8)])
    }
}
