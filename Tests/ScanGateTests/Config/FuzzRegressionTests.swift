@testable import Config
import Platform
import Core
import Decoding
import Images
import Simulator
import XCTest
import Settings
import StillImages

/// Inputs the libFuzzer targets (Tests/Fuzz) found, fed to the same functions with the same invariant.
final class FuzzRegressionTests: XCTestCase {
    // MARK: config (fuzz target `config`)

    /// What check-config prints for an accepted file reads back as the same settings.
    private func assertCheckConfigRoundTrips(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        var settings = RunSettings()
        try ConfigFile.apply(ConfigFile.parse(text, name: "fuzz.conf"), from: "fuzz.conf", to: &settings)
        let rendered = ConfigFileRendering.effective(settings)
        var again = RunSettings()
        try ConfigFile.apply(ConfigFile.parse(rendered, name: "effective.conf"), from: "effective.conf", to: &again)
        XCTAssertEqual(again, settings, rendered, file: file, line: line)
    }

    /// Found by `config`: `camera-control = exf3m/,evms = 1500` was taken as one control named
    /// "exf3m/,evms"; check-config printed it comma-separated as two lines that do not read back.
    /// A control name with a comma is now refused, naming the key.
    /// Found by the y4m target: a frame rate num:den in floating point could come out as 0 or infinity
    /// (F1:1E400). Y4M rates are whole numbers; anything else is refused with the file's name.
    /// Found by `labelunwarp`: on a ragged outline the Coons blend (not a convex combination: its
    /// corner terms subtract) put an inner point of the flattened label at y = -1, outside the photo,
    /// and decode-image would have reported such bounds. Bounds mapped back are clamped to the photo.
    func testFlattenedLabelBoundsStayInsideThePhoto() throws {
        let root = TestFiles.repositoryRoot
        let path = root + "/Tests/Fuzz/corpus/labelunwarp/outline-extrapolates-outside"
        let input = try FileBytes.read(path: path)
        let width = 16 + Int(input[0]) % 49, height = 16 + Int(input[1]) % 49
        let rest = Array(input.dropFirst(2))
        let luma = (0..<(width * height)).map { rest[$0 % rest.count] }
        let label = try XCTUnwrap(LabelUnwarp.flatten(width: width, height: height, luma: luma))
        for y in 0..<label.height {
            for x in 0..<label.width {
                let back = label.mapBack(Rect(x: x, y: y, w: 1, h: 1))
                XCTAssertTrue(back.x >= 0 && back.y >= 0 && back.x + back.w <= width && back.y + back.h <= height,
                              "(\(x), \(y)) mapped back to \(back), outside the \(width)x\(height) photo")
            }
        }
    }

    func testY4MFrameRateMustBeWholeNumbers() {
        for rate in ["1:1E400", "1E400:1", "0.5:1", "30:1e-300"] {
            XCTAssertThrowsError(try Y4MHeader.parse(line: Array("YUV4MPEG2 W4 H4 F\(rate) Cmono".utf8), name: "clip.y4m"), rate) { error in
                XCTAssertTrue("\(error)".contains("clip.y4m") && "\(error)".contains("frame rate"), "\(error)")
            }
        }
        XCTAssertEqual(try Y4MHeader.parse(line: Array("YUV4MPEG2 W4 H4 F30000:1001 Cmono".utf8), name: "clip.y4m").fps ?? 0, 29.97, accuracy: 0.01)
    }

    func testCameraControlNameWithACommaIsRefused() throws {
        let text = "[camera]\ncamera = idth \u{1D} 640\nheight = 480\nfps = 15\ncamera-control = exf3m/,evms = 1500\n"
        var settings = RunSettings()
        do {
            try ConfigFile.apply(ConfigFile.parse(text, name: "fuzz.conf"), from: "fuzz.conf", to: &settings)
            XCTFail("a control name with a comma was accepted: \(settings.capture.controls)")
        } catch {
            XCTAssertTrue(error.message.hasPrefix("fuzz.conf:5: [camera] camera-control:"), error.message)
            XCTAssertTrue(error.message.contains("','"), error.message)
        }
        try assertCheckConfigRoundTrips("[camera]\ncamera-control = exposure_auto=1\ncamera-control = gain=3\n")
    }

    /// Found by `config`: `serial=<a value filling the line>` was accepted, but check-config wrote it as
    /// `serial = "<value>"`, longer than the 197 characters inih reads, so its output did not load. Since
    /// issue 27 a line of up to 4096 characters is read whole (the long-line path), so that input now
    /// loads and check-config's output of it reads back the same; a value whose written line would pass
    /// 4096 characters is refused on its line.
    func testValueTooLongToWriteBackIsRefused() throws {
        // fuzz-artifacts/config-crash-af05fe82038de8fcd34af1a569b3bd049b616177
        let crash: [UInt8] = [
            0x23, 0x20, 0x9C, 0x90, 0x6F, 0x72, 0x20, 0x63, 0x6F, 0x6E, 0x74, 0x72, 0x6F, 0x6C, 0x6C, 0x65, 0x72,
            0x0A, 0x5B, 0x73, 0x65, 0x72, 0x69, 0x61, 0x6C, 0x5D, 0x0A, 0x73, 0x65, 0x72, 0x69, 0x61, 0x6C, 0x20,
            0x3D, 0x6C, 0x20, 0x3D, 0x23, 0x20, 0x2F, 0x64, 0x65, 0x76, 0x2F, 0x74, 0x74, 0x6F, 0x5B, 0xFF, 0xFF,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x23, 0x20,
            0x2F, 0x64, 0x65, 0x76, 0x62, 0x65, 0x65, 0x70, 0x63, 0x68, 0x61, 0x6E, 0x67, 0x65, 0x2D, 0x74, 0x68,
            0x72, 0x65, 0x73, 0x68, 0x6F, 0x6C, 0x64, 0x2F, 0x74, 0x74, 0x6F, 0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x6F, 0x75, 0x75, 0x2F, 0x64, 0x20, 0x22, 0x0A,
        ]
        let text = String(decoding: crash, as: UTF8.self)
        try assertCheckConfigRoundTrips(text)
        let longest = String(repeating: "a", count: 4096 - "serial = ".count)
        try assertCheckConfigRoundTrips("[serial]\nserial=" + longest + "\n")
        do {
            _ = try ConfigFile.parse("[serial]\nserial=" + longest + "a\n", name: "fuzz.conf")
            XCTFail("a value check-config cannot write back on one line was accepted")
        } catch {
            XCTAssertTrue(error.message.hasPrefix("fuzz.conf:2: [serial] serial: value is too long"), error.message)
        }
    }

    /// Found by `config`: `serial-suffix =` (explicitly no suffix) was written back by check-config as
    /// `#serial-suffix =` (not set), which reads back as the default "auto". An empty value is now written
    /// uncommented when the option's default is not empty.
    func testExplicitlyEmptyValueIsWrittenBack() throws {
        let text = "#\n[serial]\nserial = /dev/ttyUSB[output]\u{FFFD}j\r*o[ouu/dev/tty\nserial-suffix = \n"
        try assertCheckConfigRoundTrips(text)
        var settings = RunSettings()
        try ConfigFile.apply(ConfigFile.parse(text, name: "fuzz.conf"), from: "fuzz.conf", to: &settings)
        XCTAssertEqual(settings.serial.suffix, [])
        XCTAssertTrue(ConfigFileRendering.effective(settings).contains("\nserial-suffix =\n"))
    }

    /// Found by `config`: `serial = "\rA "` was written back unquoted as `serial = \rA`, and inih stripped
    /// the leading CR, so it read back as `A`. A value with any blank that inih strips at an end (CR, VT,
    /// FF, not only space and tab) is now written in quotes.
    func testValueWithACarriageReturnAtItsEndIsQuoted() throws {
        let hex = "2320645b2374726f6c6c65720a5b73657269616c5d0a73657269616c203d20220dffffffe2eae2e2e2e2e2e2e2e2e2e2e2e2e2d720220a"
        let bytes = try XCTUnwrap(Hex.decode(hex))
        try assertCheckConfigRoundTrips(String(decoding: bytes, as: UTF8.self))
        XCTAssertEqual(ConfigValue.quoteIfNeeded("\rA"), "\"\rA\"")
        XCTAssertEqual(ConfigValue.quoteIfNeeded("A\u{0B}"), "\"A\u{0B}\"")
        XCTAssertEqual(ConfigValue.quoteIfNeeded("A B"), "A B")
    }

    // MARK: normaliser (fuzz target `normaliser`)

    /// Found by `normaliser`: a 13-digit code reported as UPC-A but not starting with 0 lost its first
    /// digit ("4008131333932" came out as UPC-A "008131333932", a different code with a bad check digit).
    /// It is an EAN-13: reported as such when EAN-13 is enabled, dropped otherwise.
    func testThirteenDigitUPCANotStartingWithZeroIsNotTruncated() {
        let symbol = DecodedSymbol(symbology: .upca, data: Array("4008131333932".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        var settings = DecoderSettings()
        settings.symbologies = [.qr, .i25, .codabar, .databar, .databarExp, .isbn10, .isbn13]
        let out = SymbolNormaliser.normalise(symbol, settings: settings)
        XCTAssertNotEqual(out?.data, Array("008131333932".utf8))
        if let out {
            XCTAssertEqual(out.data.count, 13)
            XCTAssertTrue(SymbolNormaliser.gtinCheckDigitValid(out.data))
        }
        settings.symbologies = [.upca, .ean13]
        let asEAN = SymbolNormaliser.normalise(symbol, settings: settings)
        XCTAssertEqual(asEAN?.symbology, .ean13)
        XCTAssertEqual(asEAN.map { String(decoding: $0.data, as: UTF8.self) }, "4008131333932")
        // A real UPC-A in 13-digit form still comes out as 12 digits.
        let upc = DecodedSymbol(symbology: .upca, data: Array("0036000291452".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        XCTAssertEqual(SymbolNormaliser.normalise(upc, settings: settings).map { String(decoding: $0.data, as: UTF8.self) },
                       "036000291452")
    }

    // MARK: scenario (fuzz target `inputfiles`)

    /// Found by `inputfiles`: a scenario with CRLF line ends was one long line: split as Characters,
    /// "\r\n" is one grapheme that is not "\n". The error for line 1 then quoted the next lines, control
    /// characters and all ("unexpected '\nframes' after size"). Lines are split on scalars now.
    func testScenarioWithCRLFLineEndsParsesLineByLine() throws {
        let defaults = ScenarioParser.Defaults(width: 640, height: 480, fps: 15)
        let scenario = try ScenarioParser.parse(text: "size 160x120\r\nframes 4\r\ncode qr \"X\" frames 0-3\r\n",
                                                name: "crlf.scenario", defaults: defaults)
        XCTAssertEqual(scenario.width, 160)
        XCTAssertEqual(scenario.frameCount, 4)
        XCTAssertEqual(scenario.codes.map(\.payload), [Array("X".utf8)])
        // The scenario libFuzzer saved: blank CR-only first line, an unknown keyword on line 2.
        let found = "\r\r\r\r\r\n\r\u{10}\rm"
        XCTAssertThrowsError(try ScenarioParser.parse(text: found, name: "fuzz.scenario", defaults: defaults)) {
            XCTAssertEqual("\($0)", "fuzz.scenario:2: unknown keyword '\u{10}' (allowed: size, fps, frames, loop, background, backdrop, noise, blur, contrast, seed, code, cover, turn)")
        }
    }
}
