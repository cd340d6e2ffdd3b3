import XCTest
import Core
import Debounce
import Decoding
import Pipeline
import Platform
import Simulator
import Settings

/// The real pipeline (simulated camera → handoff → zbar → debouncer → sink), no fakes for decoding.
final class EndToEndScenarioTests: XCTestCase {
    func events(_ scenario: String, symbologies: Set<Symbology> = [.qr], gate: Bool = true,
                debounce: DebounceSettings = DebounceSettings()) throws -> [ReadEvent] {
        let dir = try TestFiles.temporaryDirectory()
        let path = dir + "/test.scenario"
        try TestFiles.write(scenario, to: path)
        var capture = CaptureSettings()
        capture.fast = true
        let source = try SimulatedCamera(spec: path, settings: capture)
        var ds = DecoderSettings()
        ds.symbologies = symbologies
        if !gate { ds.idleRescanFrames = 0 }
        let sink = RecordingSink()
        let pipeline = Pipeline(source: source, decoder: try StreamDecoder.make(settings: ds),
                                debouncer: Debouncer(settings: debounce), dispatcher: ReadDispatcher(reports: [sink]), logger: Logger(level: .error))
        XCTAssertEqual(pipeline.run(), .finished)
        XCTAssertEqual(pipeline.droppedFrames, 0)
        return sink.events
    }

    func payloads(_ e: [ReadEvent]) -> [String] { e.map { String(decoding: $0.symbol.data, as: UTF8.self) } }

    func testCodesComeOutOnceEachInOrderWithFrameNumbers() throws {
        let e = try events("""
            fps 10
            frames 120
            code qr "FIRST" frames 5-30 at 40,40 module 4
            code qr "SECOND" frames 50-70 at 300,200 module 4
            code qr "THIRD" frames 90-110 module 5
            """)
        XCTAssertEqual(payloads(e), ["FIRST", "SECOND", "THIRD"])
        XCTAssertEqual(e.map(\.frame), [5, 50, 90])
        XCTAssertEqual(e.map(\.seq), [1, 2, 3])
        XCTAssertTrue(e.allSatisfy { $0.symbol.symbology == .qr })
    }

    func testCodeHeldFor300FramesIsReportedOnce() throws {
        let e = try events("""
            fps 15
            frames 320
            noise 4
            code qr "HOLD" frames 10-309 module 4
            """)
        XCTAssertEqual(payloads(e), ["HOLD"])
    }

    func testReturnAfterHoldOffReportsAgainButNotBefore() throws {
        // fps 10: out of view for 10 frames = 1.1 s (< 1.5 s hold-off), then for 25 frames = 2.6 s.
        let e = try events("""
            fps 10
            frames 100
            code qr "BACK" frames 0-19 module 4
            code qr "BACK" frames 30-49 module 4
            code qr "BACK" frames 75-99 module 4
            """)
        XCTAssertEqual(e.map(\.frame), [0, 75])
    }

    func testTwoCodesInViewAtOnceAreBothReported() throws {
        let e = try events("""
            fps 10
            frames 60
            code qr "LEFT" frames 10-59 at 20,100 module 4
            code qr "RIGHT" frames 10-59 at 360,100 module 4
            """)
        XCTAssertEqual(Set(payloads(e)), ["LEFT", "RIGHT"])
        XCTAssertEqual(e.map(\.frame), [10, 10])
    }

    func testOneDimensionalCodesFromTheSimulatorReadCorrectly() throws {
        let e = try events("""
            fps 10
            frames 60
            code ean13 "4006381333931" frames 0-9 module 3
            code upca "036000291452" frames 20-29 module 3
            code code128 "SCAN-128/ok" frames 40-49 module 3
            """, symbologies: [.ean13, .upca, .code128])
        XCTAssertEqual(payloads(e), ["4006381333931", "036000291452", "SCAN-128/ok"])
        XCTAssertEqual(e.map(\.symbol.symbology), [.ean13, .upca, .code128])
        XCTAssertEqual(e.map(\.frame), [1, 21, 41], "1D codes are confirmed on their second frame")
    }

    func testGatedAndUngatedDecodingGiveTheSameEvents() throws {
        let scenario = """
            fps 15
            frames 200
            noise 3
            code qr "G1" frames 20-80 at 50,50 module 3
            code qr "G2" frames 81-150 at 350,250 module 3
            code qr "G1" frames 180-199 at 50,50 module 3
            """
        let gated = try events(scenario)
        let ungated = try events(scenario, gate: false)
        XCTAssertEqual(gated.map(\.frame), ungated.map(\.frame))
        XCTAssertEqual(payloads(gated), payloads(ungated))
        XCTAssertEqual(gated.map(\.frame), [20, 81, 180], "each code is read in the first frame it is in view")
    }

    func testBinaryPayloadBytesArePreserved() throws {
        let e = try events("""
            fps 10
            frames 20
            code qr "\\x00\\xff\\x80binary\\x01" frames 2-15 module 4
            """)
        XCTAssertEqual(e.first?.symbol.data, [0x00, 0xFF, 0x80] + Array("binary".utf8) + [0x01])
    }
}
