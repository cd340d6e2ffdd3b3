import Core
import Images
import Platform
@testable import Simulator
import XCTest
import Settings

final class SimulatorCameraTests: XCTestCase {
    private func writeScenario(_ text: String) throws -> String {
        let path = try TestFiles.temporaryDirectory() + "/s.scenario"
        try FileBytes.write(Array(text.utf8), to: path)
        return path
    }

    private func settings(fast: Bool = true, loop: Bool = false, width: Int = 320, height: Int = 240, fps: Double = 15) -> CaptureSettings {
        var s = CaptureSettings()
        s.fast = fast
        s.loop = loop
        s.width = width
        s.height = height
        s.fps = fps
        return s
    }

    private func variance(_ frame: Frame, _ box: (x: Int, y: Int, w: Int, h: Int)) -> Double {
        var sum = 0.0, sumSquares = 0.0
        for y in box.y..<(box.y + box.h) {
            for x in box.x..<(box.x + box.w) {
                let v = Double(frame.luma[y * frame.width + x])
                sum += v
                sumSquares += v * v
            }
        }
        let n = Double(box.w * box.h)
        return sumSquares / n - (sum / n) * (sum / n)
    }

    func testCodesAreInViewOnlyInTheirFrameRanges() throws {
        let path = try writeScenario("""
            size 320x240
            fps 10
            frames 30
            code qr "FIRST" frames 5-9 at 10,10 module 3
            code ean13 "400638133393" frames 15-24 at 150,100 module 1 height 40
            """)
        let camera = try SimulatedCamera(spec: path, settings: settings())
        let renderer = try ScenarioRenderer(scenario: camera.scenario)
        let boxes = [renderer.box(ofCode: 0), renderer.box(ofCode: 1)]
        try camera.open()
        var frames: [Frame] = []
        while let frame = try camera.nextFrame() { frames.append(frame) }
        XCTAssertEqual(frames.count, 30)
        for (n, frame) in frames.enumerated() {
            XCTAssertEqual(frame.sequence, UInt64(n))
            XCTAssertEqual(frame.width, 320)
            XCTAssertEqual(frame.height, 240)
            XCTAssertEqual(frame.captureTime, Frame.mediaTime(sequence: UInt64(n), fps: 10))
            XCTAssertEqual(variance(frame, boxes[0]) > 1000, (5...9).contains(n), "QR in frame \(n)")
            XCTAssertEqual(variance(frame, boxes[1]) > 1000, (15...24).contains(n), "EAN in frame \(n)")
        }
        XCTAssertEqual(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: frames[7].luma)).map(\.data),
                       [Array("FIRST".utf8)])
        XCTAssertEqual(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: frames[20].luma)).map(\.data),
                       [Array("4006381333931".utf8)])
        XCTAssertEqual(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: frames[12].luma)), [])
    }

    func testEffectsRenderReproduciblyAndStayReadable() throws {
        let text = """
            size 320x240
            noise 4
            seed 3
            code qr "EFFECTS" frames 0-2 module 4 rotate 20 noise 6 contrast 0.6
            code qr "DARK MODE" frames 3-4 module 4 invert
            """
        let a = try SimulatedCamera(spec: try writeScenario(text), settings: settings())
        let b = try SimulatedCamera(spec: try writeScenario(text), settings: settings())
        try a.open()
        try b.open()
        var framesA: [Frame] = []
        for _ in 0..<5 {
            let fa = try XCTUnwrap(a.nextFrame()), fb = try XCTUnwrap(b.nextFrame())
            XCTAssertEqual(fa.luma, fb.luma, "frame \(fa.sequence) renders the same every time")
            framesA.append(fa)
        }
        XCTAssertNotEqual(framesA[0].luma, framesA[1].luma, "noise differs between frames")
        XCTAssertEqual(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: framesA[1].luma)).map(\.data),
                       [Array("EFFECTS".utf8)])
        XCTAssertEqual(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: framesA[3].luma), testInverted: true)
            .map(\.data), [Array("DARK MODE".utf8)])
    }

    func testFastRunsUnpacedAndPacedFollowsTheFrameRate() throws {
        // 300 frames at 1 fps would take 5 minutes paced; --fast must not wait.
        let path = try writeScenario("size 64x64\nfps 1\nframes 300\n")
        let fast = try SimulatedCamera(spec: path, settings: settings(fast: true))
        XCTAssertFalse(fast.isLive)
        try fast.open()
        let start = MonotonicInstant.now()
        var count = 0
        while try fast.nextFrame() != nil { count += 1 }
        XCTAssertEqual(count, 300)
        XCTAssertLessThan(MonotonicInstant.now().milliseconds(since: start), 60_000)

        // Paced: 4 frames at 20 fps span at least 3 frame intervals (150 ms); only a lower bound is asserted.
        let pacedPath = try writeScenario("size 64x64\nfps 20\nframes 4\n")
        let paced = try SimulatedCamera(spec: pacedPath, settings: settings(fast: false))
        XCTAssertTrue(paced.isLive)
        try paced.open()
        let first = try XCTUnwrap(paced.nextFrame())
        var last = first
        while let f = try paced.nextFrame() { last = f }
        XCTAssertEqual(last.sequence, 3)
        XCTAssertGreaterThanOrEqual(last.dequeuedAt.milliseconds(since: first.dequeuedAt), 140)
    }

    func testLoopKeepsCountingFramesAndRepeatsThePicture() throws {
        let path = try writeScenario("size 64x64\nframes 3\nnoise 5\n")
        let camera = try SimulatedCamera(spec: path, settings: settings(loop: true))
        try camera.open()
        let frames = try (0..<7).map { _ in try XCTUnwrap(camera.nextFrame()) }
        XCTAssertEqual(frames.map(\.sequence), Array(0...6))
        XCTAssertEqual(frames[4].luma, frames[1].luma)
        XCTAssertEqual(frames[6].captureTime, Frame.mediaTime(sequence: 6, fps: 15))
    }

    func testPayloadShorthandAppearsAndLeavesForever() throws {
        let camera = try SimulatedCamera(spec: "HELLO-SCANGATE", settings: settings(width: 320, height: 240, fps: 5))
        XCTAssertEqual(camera.name, "sim:HELLO-SCANGATE")
        XCTAssertEqual(camera.width, 320)
        try camera.open()
        var seen: [Bool] = []
        for _ in 0..<(camera.frameCount * 2 + 1) {
            let frame = try XCTUnwrap(camera.nextFrame(), "never ends")
            seen.append(!(try simulatorDecode(LumaImage(width: 320, height: 240, pixels: frame.luma))).isEmpty)
        }
        // 5 fps: 10 frames in view, 10 out of view, again and again.
        XCTAssertEqual(seen, Array(repeating: true, count: 10) + Array(repeating: false, count: 10)
                       + Array(repeating: true, count: 10) + Array(repeating: false, count: 10) + [true])
    }

    func testScenarioSizeWinsOverSettingsAndBadSpecsAreUsageErrors() throws {
        let path = try writeScenario("size 100x80\nfps 7\nframes 2\n")
        let camera = try SimulatedCamera(spec: path, settings: settings(width: 640, height: 480, fps: 30))
        try camera.open()
        let frame = try XCTUnwrap(camera.nextFrame())
        XCTAssertEqual(frame.width, 100)
        XCTAssertEqual(frame.height, 80)
        XCTAssertEqual(camera.fps, 7)

        XCTAssertThrowsError(try SimulatedCamera(spec: "/nonexistent/x.scenario", settings: settings())) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot read /nonexistent/x.scenario: No such file"), "\(error)")
        }
        XCTAssertThrowsError(try SimulatedCamera(spec: "", settings: settings())) { error in
            XCTAssertTrue("\(error)".contains("sim: needs a payload"), "\(error)")
        }
        let bad = try writeScenario("size 100x80\ncode qr \"A\" frames x\n")
        XCTAssertThrowsError(try SimulatedCamera(spec: bad, settings: settings())) { error in
            XCTAssertTrue(error is UsageError)
            XCTAssertTrue("\(error)".hasPrefix("\(bad):2: frames 'x'"), "\(error)")
        }
    }
}
