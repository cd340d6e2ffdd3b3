import Core
import Images
@testable import Simulator
import XCTest

final class SimulatorScenarioTests: XCTestCase {
    private let defaults = ScenarioParser.Defaults(width: 640, height: 480, fps: 15)

    private func parse(_ text: String) throws -> Scenario {
        try ScenarioParser.parse(text: text, name: "t.scenario", defaults: defaults)
    }

    func testAFullScenarioParses() throws {
        let s = try parse("""
            # two codes
            size 320x240
            fps 10   # comment after a value
            frames 100
            background 200
            seed 9
            noise 3
            blur 1
            contrast 0.8
            loop

            code qr "A\\x00B\\r\\n\\"#" frames 10-50 at 20,30 module 3 ecc H rotate 15 noise 10 blur 1 contrast 0.5 invert
            code ean13 "400638133393" frames 60- module 2 height 50 quiet 11
            code code128 "X" frames 99
            """)
        XCTAssertEqual(s.width, 320)
        XCTAssertEqual(s.height, 240)
        XCTAssertEqual(s.fps, 10)
        XCTAssertEqual(s.frameCount, 100)
        XCTAssertTrue(s.loops)
        XCTAssertEqual(s.background, 200)
        XCTAssertEqual(s.seed, 9)
        XCTAssertEqual(s.noise, 3)
        XCTAssertEqual(s.blur, 1)
        XCTAssertEqual(s.contrast, 0.8)
        XCTAssertEqual(s.codes.count, 3)
        let qr = s.codes[0]
        XCTAssertEqual(qr.payload, [0x41, 0, 0x42, 13, 10, 0x22, 0x23])
        XCTAssertEqual(qr.frames, 10...50)
        XCTAssertEqual(qr.position?.x, 20)
        XCTAssertEqual(qr.position?.y, 30)
        XCTAssertEqual(qr.moduleSize, 3)
        XCTAssertEqual(qr.ecc, .H)
        XCTAssertEqual(qr.rotation, 15)
        XCTAssertEqual(qr.noise, 10)
        XCTAssertEqual(qr.blur, 1)
        XCTAssertEqual(qr.contrast, 0.5)
        XCTAssertTrue(qr.inverted)
        XCTAssertEqual(qr.line, 12)
        XCTAssertEqual(s.codes[1].frames, 60...99)
        XCTAssertNil(s.codes[1].position)
        XCTAssertEqual(s.codes[1].barHeight, 50)
        XCTAssertEqual(s.codes[1].quietZone, 11)
        XCTAssertEqual(s.codes[2].frames, 99...99)
    }

    func testDefaultsComeFromTheSettingsAndFramesFromTheLastCode() throws {
        let s = try parse("code qr \"HI\" frames 5-20\n")
        XCTAssertEqual(s.width, 640)
        XCTAssertEqual(s.height, 480)
        XCTAssertEqual(s.fps, 15)
        XCTAssertEqual(s.frameCount, 21)
        XCTAssertFalse(s.loops)
        XCTAssertEqual(s.codes[0].moduleSize, 4)
    }

    func testEveryErrorNamesFileAndLineAndWhatIsAllowed() {
        let cases: [(String, String)] = [
            ("bogus 1", "t.scenario:1: unknown keyword 'bogus' (allowed: size, fps"),
            ("\nsize 640", "t.scenario:2: size '640' is not WIDTHxHEIGHT"),
            ("size 8x8", "t.scenario:1: size '8x8' is not WIDTHxHEIGHT with each 16-4096"),
            ("fps", "t.scenario:1: fps needs a number in 0.5-240"),
            ("fps 0", "t.scenario:1: fps '0' is not a number in 0.5-240"),
            ("frames x", "t.scenario:1: frames 'x' is not a whole number"),
            ("background 300", "t.scenario:1: background '300' is not a whole number in 0-255"),
            ("contrast 2", "t.scenario:1: contrast '2' is not a number in 0.05-1"),
            ("loop now", "t.scenario:1: unexpected 'now' after loop"),
            ("code", "t.scenario:1: code needs a symbology"),
            ("code maxicode \"X\" frames 1", "t.scenario:1: unknown symbology 'maxicode' (allowed: QRCode, MicroQRCode, DataMatrix, Aztec, PDF417, EAN13"),
            ("code databar \"X\" frames 1", "t.scenario:1: unknown symbology 'databar' (allowed: QRCode,"),
            ("code ITF \"123\" frames 1", "t.scenario:1: zxing cannot encode this ITF payload of 3 bytes: The length of the input should be even"),
            ("code qr HELLO frames 1", "t.scenario:1: code qr needs a payload in double quotes"),
            ("code qr \"HELLO frames 1", "t.scenario:1: a quoted payload has no closing \""),
            ("code qr \"\\q\" frames 1", "t.scenario:1: payload: unknown escape \\q"),
            ("code qr \"A\" \"B\" frames 1", "t.scenario:1: unexpected \"B\""),
            ("code qr \"A\"", "t.scenario:1: code qr needs `frames A-B`"),
            ("code qr \"A\" frames 9-3", "t.scenario:1: frames '9-3' is not A-B"),
            ("code qr \"A\" frames 1 at 5", "t.scenario:1: at '5' is not X,Y"),
            ("code qr \"A\" frames 1 module 0", "t.scenario:1: module '0' is not a whole number in 1-64"),
            ("code qr \"A\" frames 1 ecc X", "t.scenario:1: ecc 'X' is not one of L, M, Q, H"),
            ("code qr \"A\" frames 1 shiny", "t.scenario:1: unknown code option 'shiny' (allowed: frames, at"),
            ("code qr \"A\" frames 3-", "t.scenario:1: `frames A-` (until the end) needs a `frames N` line"),
            ("frames 10\ncode qr \"A\" frames 5-12", "t.scenario:2: frames ...-12 goes past the last frame 9"),
            ("frames 10\ncode qr \"A\" frames 12-", "t.scenario:2: frames 12- starts after the last frame"),
            ("code ean13 \"123\" frames 1", "t.scenario:1: EAN-13 needs 12 or 13 digits"),
            ("code qr \"A\" frames 1 module 40", "t.scenario:1: the code is 1160x1160 pixels and does not fit"),
            ("code qr \"A\" frames 1 at 600,400", "t.scenario:1: the code at 600,400 is 116x116 pixels and goes past"),
            ("# nothing", "t.scenario: the scenario has no `code` lines"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try parse(text), text) { error in
                let message = (error as? UsageError)?.message ?? "\(error)"
                XCTAssertTrue(message.hasPrefix(expected), "\(text) → \(message)")
                XCTAssertFalse(message.contains("\n"))
            }
        }
    }

    func testAppearingShorthandOutlastsTheHoldOff() {
        for fps in [0.5, 1, 5, 15, 30, 60] {
            let s = Scenario.appearing(payload: Array("HI".utf8), width: 640, height: 480, fps: fps)
            XCTAssertTrue(s.loops)
            let shown = s.codes[0].frames.count
            let hidden = s.frameCount - shown
            XCTAssertEqual(Double(shown) / fps, 2, accuracy: 1, "fps \(fps)")
            // From the last frame with the code to the next one: more than the 1500 ms hold-off.
            XCTAssertGreaterThan(Double(hidden + 1) / fps, 1.5, "fps \(fps)")
        }
    }
}
