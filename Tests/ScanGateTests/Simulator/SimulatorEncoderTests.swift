import Core
import Decoding
import Images
@testable import Simulator
import XCTest
import Settings
import StillImages

/// Decodes an image through the real zbar decoder.
func simulatorDecode(_ image: LumaImage, symbologies: Set<Symbology> = Set(Symbology.allCases),
                     testInverted: Bool = true) throws -> [DecodedSymbol] {
    var settings = DecoderSettings()
    settings.symbologies = symbologies
    settings.testInverted = testInverted
    settings.idleRescanFrames = 0
    return try ImageDecoder(settings: settings).decode(width: image.width, height: image.height, luma: image.pixels)
}

final class SimulatorEncoderTests: XCTestCase {
    private func bits(_ s: String) -> [Bool] { s.map { $0 == "1" } }

    func testEAN13BarsFollowTheSpecTables() throws {
        // 4006381333931: first digit 4 → left parity LGLLGG.
        let code = try EANEncoder.ean13(Array("4006381333931".utf8))
        XCTAssertEqual(code.width, 95)
        let expected = "101" + "0001101" + "0100111" + "0101111" + "0111101" + "0001001" + "0110011"
            + "01010" + "1000010" + "1000010" + "1000010" + "1110100" + "1000010" + "1100110" + "101"
        XCTAssertEqual(code.dark, bits(expected))
        // The check digit is computed when left out, and verified when given.
        XCTAssertEqual(try EANEncoder.ean13(Array("400638133393".utf8)), code)
        XCTAssertThrowsError(try EANEncoder.ean13(Array("4006381333932".utf8))) { error in
            XCTAssertEqual("\(error)", "EAN-13 check digit is wrong: 4006381333932 should end in 1")
        }
        XCTAssertThrowsError(try EANEncoder.ean13(Array("40063A1333931".utf8)))
    }

    func testUPCAIsEAN13WithALeadingZero() throws {
        XCTAssertEqual(try EANEncoder.upcA(Array("036000291452".utf8)), try EANEncoder.ean13(Array("0036000291452".utf8)))
        XCTAssertEqual(EANEncoder.checkDigit([0, 3, 6, 0, 0, 0, 2, 9, 1, 4, 5]), 2)
    }

    func testUPCEExpansionAndParity() throws {
        // 0 425261 4: UPC-A 04252600006 + check 4 (GS1 zero-suppression rule for last digit 1).
        XCTAssertEqual(EANEncoder.expandUPCE(numberSystem: 0, [4, 2, 5, 2, 6, 1]), [0, 4, 2, 1, 0, 0, 0, 0, 5, 2, 6])
        let code = try EANEncoder.upcE(Array("01234565".utf8))
        XCTAssertEqual(code.width, 51)
        XCTAssertThrowsError(try EANEncoder.upcE(Array("01234566".utf8)))
    }

    func testCode128ChecksumsAndCodeSets() throws {
        // Start C, 12 34 56 78, checksum (105 + 12 + 2*34 + 3*56 + 4*78) % 103 = 47, stop.
        XCTAssertEqual(try Code128Encoder.symbolValues(Array("12345678".utf8)), [105, 12, 34, 56, 78, 47, 106])
        // Start B "PJJ123C": (104 + 48 + 2*42 + 3*42 + 4*17 + 5*18 + 6*19 + 7*35) % 103 = 55.
        XCTAssertEqual(try Code128Encoder.symbolValues(Array("PJJ123C".utf8)), [104, 48, 42, 42, 17, 18, 19, 35, 55, 106])
        // A control character starts in code set A; a long digit run switches to C.
        let values = try Code128Encoder.symbolValues([0x09] + Array("AB123456".utf8))
        XCTAssertEqual(Array(values.prefix(5)), [103, 73, 33, 34, 99])
        XCTAssertEqual(Array(values[5...7]), [12, 34, 56])
        for pattern in Code128Encoder.patterns.dropLast() { XCTAssertEqual(pattern.reduce(0) { $0 + Int(String($1))! }, 11) }
        XCTAssertThrowsError(try Code128Encoder.encode([0xC3, 0xA9]))
    }

    func testEveryDrawableSymbologyDecodesThroughZbar() throws {
        let cases: [(Symbology, String, String)] = [
            (.qr, "HELLO-SCANGATE", "HELLO-SCANGATE"),
            (.ean13, "400638133393", "4006381333931"),
            (.ean8, "9638507", "96385074"),
            (.upca, "03600029145", "036000291452"),
            (.upce, "0123456", "01234565"),
            (.code128, "Hello 128 world 0123456789", "Hello 128 world 0123456789"),
            (.code128, "TAB\there", "TAB\there"),
            (.code39, "CODE-39 $/+%", "CODE-39 $/+%"),
        ]
        for (symbology, payload, expected) in cases {
            let bitmap = try SymbolEncoder.encode(symbology, payload: Array(payload.utf8))
            let image = SymbolImage.render(bitmap, moduleSize: 3, barHeight: 90,
                                           quietZone: SymbolEncoder.defaultQuietZone(for: symbology))
            let found = try simulatorDecode(image, symbologies: [symbology])
            XCTAssertEqual(found.map(\.symbology), [symbology], "\(symbology) \(payload)")
            XCTAssertEqual(found.first.map { String(decoding: $0.data, as: UTF8.self) }, expected, "\(symbology)")
        }
    }

    func testBinaryQRPayloadDecodesByteExact() throws {
        let payload: [UInt8] = Array(0...255) + [0, 13, 10, 2, 3, 0xFF]
        for ecc in QREncoder.ErrorCorrection.allCases {
            let image = SymbolImage.render(try QREncoder.encode(payload, ecc: ecc), moduleSize: 3, barHeight: 0, quietZone: 4)
            XCTAssertEqual(try simulatorDecode(image, symbologies: [.qr]).map(\.data), [payload], "ECC \(ecc)")
        }
        XCTAssertThrowsError(try QREncoder.encode([UInt8](repeating: 7, count: 3000), ecc: .L)) { error in
            XCTAssertTrue("\(error)".contains("too large"), "\(error)")
        }
        XCTAssertThrowsError(try QREncoder.encode([]))
    }

    func testCEscapes() throws {
        XCTAssertEqual(try PayloadEscapes.decode(#"a\x00\r\n\\\"\t\e\xfFz"#), [0x61, 0, 13, 10, 0x5C, 0x22, 9, 0x1B, 0xFF, 0x7A])
        XCTAssertEqual(try PayloadEscapes.decode("é"), [0xC3, 0xA9])
        XCTAssertThrowsError(try PayloadEscapes.decode(#"\q"#)) { XCTAssertTrue("\($0)".contains("unknown escape \\q")) }
        XCTAssertThrowsError(try PayloadEscapes.decode(#"\x4"#))
        XCTAssertThrowsError(try PayloadEscapes.decode("ab\\"))
    }

    func testEffectsKeepTheCodeReadable() throws {
        let bitmap = try QREncoder.encode(Array("ROTATED".utf8))
        let image = SymbolImage.render(bitmap, moduleSize: 4, barHeight: 0, quietZone: 4)
        let rotated = ImageEffects.rotate(image, degrees: 30, fill: 255)
        XCTAssertGreaterThan(rotated.width, image.width)
        XCTAssertEqual(try simulatorDecode(rotated, symbologies: [.qr]).map(\.data), [Array("ROTATED".utf8)])
        // zbar reads a 3-pixel box blur from 5 pixels per module up.
        let blurred = ImageEffects.boxBlur(SymbolImage.render(bitmap, moduleSize: 6, barHeight: 0, quietZone: 4), radius: 1)
        XCTAssertEqual(try simulatorDecode(blurred, symbologies: [.qr]).map(\.data), [Array("ROTATED".utf8)])
        XCTAssertEqual(ImageEffects.rotate(image, degrees: 360, fill: 0), image)
        let edge = LumaImage(width: 6, height: 1, pixels: [0, 0, 0, 255, 255, 255])
        XCTAssertEqual(ImageEffects.boxBlur(edge, radius: 1).pixels, [0, 0, 85, 170, 255, 255])
        var pixels: [UInt8] = [0, 128, 255]
        ImageEffects.contrast(&pixels, factor: 0.5)
        XCTAssertEqual(pixels, [64, 128, 192])
    }

    func testTerminalArtUsesHalfBlocks() {
        let image = LumaImage(width: 3, height: 3, pixels: [0, 255, 0,
                                                            0, 0, 255,
                                                            255, 0, 255])
        XCTAssertEqual(TerminalArt.lines(image, ansiColours: false), ["█▄▀", " ▀ "])
        XCTAssertEqual(TerminalArt.lines(image, ansiColours: true).first, "\u{1B}[30;107m█▄▀\u{1B}[0m")
    }
}
