import CZXingShim
import Core
@testable import Decoding
import Images
import Platform
import Settings
import Simulator
import XCTest

/// The live zxing-cpp decoder through the decoder seam, on codes zint drew (an independent encoder):
/// every format, bytes exact, the corners, ECI and GS1, and the inverted retry.
final class ZXingDecoderTests: XCTestCase {
    func decoder(_ symbologies: Set<Symbology> = Set(Symbology.allCases), invertRetry: Bool = true) -> ZXingDecoder {
        var settings = DecoderSettings()
        settings.symbologies = symbologies
        settings.invertRetry = invertRetry
        return ZXingDecoder(settings: settings)
    }

    func decode(_ image: LumaImage, with decoder: Decoder) -> [DecodedSymbol] {
        decoder.decode(Frame(width: image.width, height: image.height, sequence: 0,
                             captureTime: MonotonicInstant(nanoseconds: 0), luma: image.pixels))
    }

    /// Debian's zxing-cpp 1.4.0 asserts (`intersect` in RegressionLine.h, from Micro QR detection) on
    /// this frame, found by the zxing fuzz target: the process must not abort. The read is abandoned,
    /// counted and told, Micro QR is turned off and the frame read again; the next read asks no Micro QR.
    func testAZXingAssertionIsAFailedReadAndTurnsMicroQROff() throws {
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: TestFiles.repositoryRoot + "/Tests/Fuzz/corpus/zxing/assert-microqr-intersect"))
        let input = [UInt8](bytes)
        // As the fuzz target builds its frame: width, height, a choice byte (0: every format, invert retry), pixels.
        let width = 8 + Int(input[0]) % 128, height = 8 + Int(input[1]) % 128
        let rest = Array(input.dropFirst(3))
        let luma = (0..<(width * height)).map { rest[$0 % rest.count] }
        var settings = DecoderSettings()
        settings.symbologies = Set(Symbology.allCases)
        settings.invertRetry = true
        let decoder = ZXingDecoder(settings: settings)
        let told = PosixMutex<[String]>([])
        decoder.onAssertion = { line in told.withLock { $0.append(line) } }
        _ = decoder.decode(width: width, height: height, luma: luma)
        XCTAssertEqual(decoder.assertions, 1)
        XCTAssertEqual(decoder.disabledFormats, ZXingDecoder.format(.microqr))
        let lines = told.withLock { $0 }
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines.first?.contains("RegressionLine.h") == true && lines.first?.contains("Micro QR is off from now on") == true, "\(lines)")
        _ = decoder.decode(width: width, height: height, luma: luma)
        XCTAssertEqual(decoder.assertions, 1, "Micro QR is no longer asked for")
        // Still reads QR codes after it.
        let after = ZintCodes.frame(try ZintCodes.render(.qr, "AFTER", scale: 2))
        XCTAssertEqual(decode(after, with: decoder).map { String(decoding: $0.data, as: UTF8.self) }, ["AFTER"])
    }

    func testEveryFormatIsReadThroughTheSeam() throws {
        let cases: [(Symbology, String, String)] = [
            (.qr, "QR via zint", "QR via zint"),
            (.microqr, "MICRO12345", "MICRO12345"),
            (.datamatrix, "DataMatrix ticket 7", "DataMatrix ticket 7"),
            (.aztec, "Aztec boarding pass", "Aztec boarding pass"),
            (.pdf417, "PDF417 licence", "PDF417 licence"),
            (.ean13, "400638133393", "4006381333931"),
            (.ean8, "9638507", "96385074"),
            (.upca, "03600029145", "036000291452"),
            (.upce, "0425261", "04252614"),
            (.code128, "C128-abc", "C128-abc"),
            (.code39, "CODE39", "CODE39"),
            (.code93, "CODE93", "CODE93"),
            (.i25, "12345670", "12345670"),
            (.codabar, "A40156B", "40156"),
        ]
        let all = decoder()
        for (symbology, input, expected) in cases {
            let image = ZintCodes.frame(try ZintCodes.render(symbology, input, scale: symbology.is2D ? 2 : 1))
            let found = decode(image, with: all)
            XCTAssertEqual(found.map(\.symbology), [symbology], "\(symbology)")
            XCTAssertEqual(found.map { String(decoding: $0.data, as: UTF8.self) }, [expected], "\(symbology)")
        }
    }

    func testBinaryPayloadsAreByteExact() throws {
        let bytes: [UInt8] = [0x00, 0xFF, 0x41, 0x80, 0x0A, 0xE9, 0x1B, 0xC3, 0x28]
        let escaped = bytes.map { String(format: "\\x%02X", $0) }.joined()
        for symbology in [Symbology.datamatrix, .aztec, .pdf417, .qr] {
            let image = ZintCodes.frame(try ZintCodes.render(symbology, escaped, options: ["--binary", "--esc"]))
            XCTAssertEqual(decode(image, with: decoder()).map(\.data), [bytes], "\(symbology)")
        }
    }

    func testCornersAreTheCodesOwn() throws {
        let code = try ZintCodes.render(.datamatrix, "CORNERS")
        let (x, y) = ZintCodes.centre(code)
        let image = ZintCodes.frame(code)
        let symbol = try XCTUnwrap(decode(image, with: decoder([.datamatrix])).first)
        XCTAssertEqual(symbol.corners.count, 4)
        // zint draws DataMatrix without a quiet zone: the corners are the drawn box's, within a module.
        let expected = [Point(x: x, y: y), Point(x: x + code.width, y: y), Point(x: x + code.width, y: y + code.height),
                        Point(x: x, y: y + code.height)]
        for (p, e) in zip(symbol.corners, expected) {
            XCTAssertLessThanOrEqual(abs(p.x - e.x) + abs(p.y - e.y), 8, "\(symbol.corners) vs \(expected)")
        }
        XCTAssertEqual(symbol.bounds, Rect(enclosing: symbol.corners))
        XCTAssertGreaterThan(symbol.bounds.w, code.width / 2)
    }

    func testECIAndGS1AreReported() throws {
        let utf8 = ZintCodes.frame(try ZintCodes.render(.qr, "Grüße €", options: ["--eci=26"]))
        let q = try XCTUnwrap(decode(utf8, with: decoder([.qr])).first)
        XCTAssertEqual(q.data, Array("Grüße €".utf8))
        XCTAssertEqual(q.content, SymbolContent(gs1: false, eci: 26))
        XCTAssertEqual(q.content.charset, "UTF-8")

        let cyrillic = ZintCodes.frame(try ZintCodes.render(.datamatrix, "Привет", options: ["--eci=7"]))
        let d = try XCTUnwrap(decode(cyrillic, with: decoder([.datamatrix])).first)
        XCTAssertEqual(d.data, [0xBF, 0xE0, 0xD8, 0xD2, 0xD5, 0xE2], "ISO-8859-5 bytes as encoded")
        XCTAssertEqual(d.content.charset, "ISO-8859-5")

        let gs1 = ZintCodes.frame(try ZintCodes.render(.datamatrix, "[01]09501101530003[17]140704[10]AB-123",
                                                       options: ["--gs1"]))
        let g = try XCTUnwrap(decode(gs1, with: decoder([.datamatrix])).first)
        XCTAssertTrue(g.content.gs1)
        XCTAssertNil(g.content.eci)
        XCTAssertEqual(String(decoding: g.data, as: UTF8.self), "01095011015300031714070410AB-123")
    }

    func testInvertedCodesAreReadOnTheRetryOnly() throws {
        let code = try ZintCodes.render(.qr, "dark mode")
        let dark = ZintCodes.frame(code, inverted: true)
        let retrying = decoder([.qr])
        XCTAssertEqual(decode(dark, with: retrying).map(\.data), [Array("dark mode".utf8)])
        XCTAssertTrue(retrying.lastFoundInverted)
        XCTAssertTrue(decode(dark, with: decoder([.qr], invertRetry: false)).isEmpty)
        // A code the first read finds is not looked for again.
        XCTAssertEqual(decode(ZintCodes.frame(code), with: retrying).map(\.data), [Array("dark mode".utf8)])
        XCTAssertFalse(retrying.lastFoundInverted)
        XCTAssertEqual(retrying.failedReads, 0)
    }

    /// A QR code 32 grey levels from light to dark (a dim phone screen): the local binarizer takes it for
    /// a flat area; the live path's later reads (its region's crop, stretched) find it, and without them
    /// (`globalRetry` off: the library's read, then the inverted frame) nothing does.
    func testLowContrastCodesAreReadOnTheGlobalRetry() throws {
        // The simulator's contrast 0.15: modules 128 +- 16 on the scene's 160, with sensor noise.
        let scenario = try ScenarioParser.parse(text: "frames 40\nnoise 3\ncode qr \"dim screen 0042\" frames 38 module 4 contrast 0.15 at 100,250\n",
                                                name: "dim", defaults: .init(width: 640, height: 480, fps: 10))
        let pixels = try ScenarioRenderer(scenario: scenario).render(frame: 38)
        let frame = LumaImage(width: 640, height: 480, pixels: pixels)
        var settings = DecoderSettings()
        settings.invertRetry = false
        XCTAssertEqual(decode(frame, with: ZXingDecoder(settings: settings)).map(\.data), [Array("dim screen 0042".utf8)])
        XCTAssertTrue(decode(frame, with: ZXingDecoder(settings: settings, globalRetry: false)).isEmpty,
                      "the local binarizer alone does not read it")
    }

    /// Hostile input at the C boundary: noise of odd sizes (1x1, one row, one column), a NULL image, and
    /// writer payloads too long for the symbol: nothing crashes, every failure is a return code.
    func testNoiseOddSizesAndRefusedPayloadsStayAtTheBoundary() throws {
        var state: UInt32 = 0x9E3779B9
        func next() -> UInt8 {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
        let d = decoder()
        for (w, h) in [(1, 1), (1, 480), (640, 1), (3, 2), (17, 31), (320, 240), (641, 479)] {
            let luma = (0..<(w * h)).map { _ in next() }
            XCTAssertTrue(d.decode(width: w, height: h, luma: luma).isEmpty, "\(w)x\(h)")
        }
        XCTAssertEqual(d.failedReads, 0)
        var out: UnsafeMutablePointer<zxshim_symbol>?
        XCTAssertEqual(zxshim_read(nil, 10, 10, 1 << 13, 0, &out), -1)
        XCTAssertNil(out)
        XCTAssertEqual(zxshim_format("DataMatrix"), 1 << 7)
        XCTAssertEqual(zxshim_format("no such format"), 0)
        XCTAssertEqual(zxshim_format(nil), 0)
        XCTAssertThrowsError(try ZXingWriter.encode(.datamatrix, payload: [UInt8](repeating: 0x41, count: 10_000))) { error in
            XCTAssertTrue("\(error)".hasPrefix("zxing cannot encode this DataMatrix payload of 10000 bytes: "), "\(error)")
        }
        XCTAssertThrowsError(try ZXingWriter.encode(.qr, payload: [0x41]))
        XCTAssertThrowsError(try ZXingWriter.encode(.aztec, payload: []))
    }

    /// zxing-cpp 1.4's Aztec detector indexes past this 9x8 image and throws (found by the zxing fuzz
    /// target): the read is made again without Aztec, so the frame is read, not failed; a codabar payload
    /// zxing's writer refuses is named on one line, its characters escaped.
    func testAnImageZXingsAztecDetectorThrowsOnIsStillRead() throws {
        let pattern: [UInt8] = [0x00, 0x00, 0x00, 0x06, 0xe4, 0x00, 0x01, 0x00, 0x00, 0x00, 0xff, 0xe7, 0xe7, 0xe7, 0xe7]
        let luma = (0..<(9 * 8)).map { pattern[$0 % pattern.count] }
        let inverted = luma.map { 255 - $0 }
        var out: UnsafeMutablePointer<zxshim_symbol>?
        XCTAssertEqual(inverted.withUnsafeBufferPointer { zxshim_read($0.baseAddress, 9, 8, 1 << 0, 0, &out) }, -1,
                       "Aztec alone throws on it in zxing-cpp 1.4: nothing else to read")
        for (image, invert) in [(luma, true), (inverted, false), (inverted, true)] {
            let d = decoder(invertRetry: invert)
            XCTAssertTrue(d.decode(width: 9, height: 8, luma: image).isEmpty)
            XCTAssertEqual(d.failedReads, 0, "invert-retry \(invert)")
        }
        XCTAssertThrowsError(try ZXingWriter.encode(.codabar, payload: Array("\n\u{1}".utf8))) { error in
            XCTAssertFalse("\(error)".contains("\n"), "\(error)")
        }
    }

    /// One frame of a scenario (the simulator: its own encoders, sensor noise, blur, rotation).
    func simulated(_ text: String, frame: Int = 1) throws -> LumaImage {
        let scenario = try ScenarioParser.parse(text: text, name: "regions", defaults: .init(width: 640, height: 480, fps: 10))
        return LumaImage(width: 640, height: 480, pixels: try ScenarioRenderer(scenario: scenario).render(frame: frame))
    }

    /// Issue 20: zxing-cpp 1.4 looks for DataMatrix and Aztec from the image centre only, so a code held
    /// near a corner of the frame, turned, is not found by the library alone. The second look at the
    /// frame's busy regions reads it, and its corners are where the code is in the frame.
    func testOffCentreDataMatrixAndAztecAreReadInTheirRegion() throws {
        var alone = DecoderSettings()
        alone.symbologies = Set(Symbology.allCases)
        for (format, payload, x, y) in [("DataMatrix", "DM-OFF-0001", 40, 50), ("Aztec", "AZ-OFF-0002", 470, 300)] {
            let frame = try simulated("frames 3\nnoise 3\ncode \(format) \"\(payload)\" frames 0-2 at \(x),\(y) module 4 rotate 20 blur 1\n")
            let found = decode(frame, with: decoder())
            XCTAssertEqual(found.map { String(decoding: $0.data, as: UTF8.self) }, [payload], format)
            XCTAssertTrue(decode(frame, with: ZXingDecoder(settings: alone, regions: false)).isEmpty,
                          "\(format): the library alone does not find it")
            let bounds = try XCTUnwrap(found.first?.bounds)
            XCTAssertTrue(abs(bounds.x - x) < 40 && abs(bounds.y - y) < 40 && bounds.w > 40 && bounds.w < 200,
                          "\(format) bounds \(bounds)")
        }
    }

    /// An EAN-13 at 2 pixels a module, slightly turned, low in the frame (zxing-cpp 1.4 scans a few rows
    /// near the middle, and misses it): its bar-like region is read by zbar, and the code's box is in frame
    /// pixels.
    func testThinBarsAreReadInTheirRegion() throws {
        let frame = try simulated("frames 3\nnoise 3\ncode EAN13 \"400638133393\" frames 0-2 at 360,330 module 2 rotate 3\n")
        var alone = DecoderSettings()
        alone.symbologies = Set(Symbology.allCases)
        XCTAssertTrue(decode(frame, with: ZXingDecoder(settings: alone, regions: false)).isEmpty, "the library alone")
        let found = decode(frame, with: decoder())
        XCTAssertEqual(found.map { String(decoding: $0.data, as: UTF8.self) }, ["4006381333931"])
        let bounds = try XCTUnwrap(found.first?.bounds)
        XCTAssertTrue(bounds.x >= 340 && bounds.x < 480 && bounds.y >= 300 && bounds.y < 460, "\(bounds)")
    }

    /// A dim QR code (modules about 30 grey levels apart) below a bright label of text: too faint for a busy
    /// region, and the label's bright peak spoils the global binarizer's threshold; the code's own faint
    /// region, stretched, is read.
    func testADimCodeBesideABrightLabelIsRead() throws {
        var frame = try simulated("frames 3\nnoise 3\ncode qr \"dim beside a label\" frames 0-2 module 4 contrast 0.12 at 240,200\n")
        var state: UInt32 = 0x1234567
        func next() -> Int {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return Int(state % 1000)
        }
        for y in 40..<170 { for x in 150..<430 { frame.pixels[y * 640 + x] = UInt8(215 + next() % 5) } }
        for row in 0..<7 {
            var x = 160
            while x < 420 {
                let length = 10 + next() % 30
                for dy in 0..<6 { for dx in 0..<min(length, 420 - x) { frame.pixels[(50 + row * 15 + dy) * 640 + x + dx] = 50 } }
                x += length + 6
            }
        }
        var settings = DecoderSettings()
        settings.symbologies = Set(Symbology.allCases)
        XCTAssertEqual(decode(frame, with: ZXingDecoder(settings: settings)).map { String(decoding: $0.data, as: UTF8.self) },
                       ["dim beside a label"])
    }

    /// Issue 20: the live-path bench frames (Tests/LiveFrames/generate.py: segno and zint codes, placed
    /// and degraded as a camera sees them) that the region passes missed, kept as PNG: a dim QR touching
    /// a bright label of text (two), a small QR in dark mode under a glare spot, a DataMatrix whose square
    /// region runs on into a label (over 200 px), and an Aztec turned 25° beside a label. Each is read, at
    /// the code's place in the frame (its centre within 20 px), and zxing-cpp 1.4 alone reads none of them.
    func testHardLiveFramesAreReadWhereTheCodeIs() throws {
        let cases: [(file: String, payload: String, centreX: Int, centreY: Int)] = [
            ("seed20-qr-lowcontrast-012", "SG-QR-LOWCONTRAST-0012-QDTMKKYC", 368, 251),
            ("seed22-qr-lowcontrast-027", "SG-QR-LOWCONTRAST-0027-CR982B7R", 322, 244),
            ("seed20-qr-inverted-017", "SG-QR-INVERTED-0017-LQTT6FUR", 292, 206),
            ("seed20-datamatrix-offcentre-026", "DM-0026-PT9P9F9D", 519, 117),
            ("seed21-aztec-offcentre-025", "AZ-0025-EUM6LSZT", 495, 92),
        ]
        var alone = DecoderSettings()
        alone.symbologies = Set(Symbology.allCases)
        let d = decoder()
        for c in cases {
            let image = try ImageFile.read(path: TestFiles.repositoryRoot + "/Tests/ScanGateTests/Fixtures/live-frames/\(c.file).png")
            let found = decode(image, with: d)
            XCTAssertEqual(found.map { String(decoding: $0.data, as: UTF8.self) }, [c.payload], c.file)
            XCTAssertTrue(decode(image, with: ZXingDecoder(settings: alone, regions: false)).isEmpty, "\(c.file): the library alone")
            let bounds = try XCTUnwrap(found.first?.bounds, c.file)
            XCTAssertLessThan(abs(bounds.x + bounds.w / 2 - c.centreX), 20, "\(c.file): \(bounds)")
            XCTAssertLessThan(abs(bounds.y + bounds.h / 2 - c.centreY), 20, "\(c.file): \(bounds)")
        }
        XCTAssertEqual(d.failedReads, 0)
    }

    /// An enlarged image maps its points back to the same frame pixels, and the dark-mode test takes a
    /// small light region on a dark surround only.
    func testEnlargedImagesMapBackAndDarkModeIsSmallLightOnDark() throws {
        var pixels = [UInt8](repeating: 0, count: 640 * 480)
        for i in 0..<pixels.count { pixels[i] = UInt8(i % 251) }
        let region = CodeRegion(x0: 100, y0: 60, x1: 180, y1: 140, energy: 0, gx: 0, gy: 0)
        let crop = try XCTUnwrap(pixels.withUnsafeBufferPointer {
            RegionImage.crop(region, marginX: 20, marginY: 20, width: 640, height: 480, luma: $0)
        })
        let big = crop.enlarged(2)
        XCTAssertEqual(big.width, crop.width * 2)
        XCTAssertEqual(big.height, crop.height * 2)
        for (x, y) in [(0, 0), (10, 30), (crop.width - 1, crop.height - 1)] {
            let here = crop.framePoint(Point(x: x, y: y))
            let there = big.framePoint(Point(x: 2 * x, y: 2 * y))
            XCTAssertLessThanOrEqual(abs(here.x - there.x) + abs(here.y - there.y), 1, "(\(x), \(y))")
        }
        XCTAssertTrue(ZXingDecoder.looksDarkMode(region, inside: 110, around: 30))
        XCTAssertFalse(ZXingDecoder.looksDarkMode(region, inside: 110, around: 90), "a grey surround")
        XCTAssertFalse(ZXingDecoder.looksDarkMode(region, inside: 50, around: 30), "dim inside")
        let large = CodeRegion(x0: 0, y0: 0, x1: 300, y1: 300, energy: 0, gx: 0, gy: 0)
        XCTAssertFalse(ZXingDecoder.looksDarkMode(large, inside: 110, around: 30), "over 144 px")
    }

    /// Scenes with no code (noise, a gradient, a patch of text-like dashes, a grid) read nothing, however
    /// much of them the region passes look at again.
    func testEmptyScenesReadNothing() throws {
        var state: UInt32 = 0x2545F491
        func next() -> Int {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return Int(state % 1000)
        }
        var pixels = [UInt8](repeating: 0, count: 640 * 480)
        for y in 0..<480 {
            for x in 0..<640 { pixels[y * 640 + x] = UInt8(90 + x / 8 + next() % 7) }
        }
        // Dashes of text on a light label, and a grid of lines.
        for y in 100..<260 { for x in 80..<300 { pixels[y * 640 + x] = UInt8(200 + next() % 5) } }
        for row in 0..<10 {
            var x = 90
            while x < 280 {
                let length = 8 + next() % 30
                for dy in 0..<6 { for dx in 0..<min(length, 290 - x) { pixels[(110 + row * 15 + dy) * 640 + x + dx] = 40 } }
                x += length + 6
            }
        }
        for y in 300..<440 { for x in 380..<600 where x % 12 < 2 || y % 12 < 2 { pixels[y * 640 + x] = 30 } }
        let scene = LumaImage(width: 640, height: 480, pixels: pixels)
        let d = decoder()
        XCTAssertTrue(decode(scene, with: d).isEmpty)
        XCTAssertTrue(decode(try simulated("frames 3\nnoise 6\n"), with: d).isEmpty)
        XCTAssertEqual(d.failedReads, 0)
    }

    func testFramesThatAreNotWidthTimesHeightFindNothing() {
        let d = decoder()
        XCTAssertTrue(d.decode(width: 10, height: 10, luma: [UInt8](repeating: 0, count: 99)).isEmpty)
        XCTAssertTrue(d.decode(width: 0, height: 10, luma: []).isEmpty)
    }
}
