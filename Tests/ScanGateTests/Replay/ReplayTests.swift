@testable import App
import Core
import Images
import Platform
@testable import Replay
import Simulator
import XCTest
import Settings

final class ReplayTests: XCTestCase {
    private let scenarioText = """
        size 160x120
        fps 12
        frames 12
        noise 3
        code qr "REPLAY ME" frames 2-6 module 2
        code code128 "C128" frames 8-10 module 1 height 30
        """

    private func settings(fast: Bool = true, loop: Bool = false, fps: Double = 15) -> CaptureSettings {
        var s = CaptureSettings()
        s.fast = fast
        s.loop = loop
        s.fps = fps
        return s
    }

    private func scenarioFrames(_ path: String) throws -> [Frame] {
        let camera = try SimulatedCamera(spec: path, settings: settings())
        try camera.open()
        var frames: [Frame] = []
        while let f = try camera.nextFrame() { frames.append(f) }
        return frames
    }

    private func replayFrames(_ path: String, settings: CaptureSettings? = nil) throws -> [Frame] {
        let source = try ReplaySource(path: path, settings: settings ?? self.settings())
        try source.open()
        defer { source.close() }
        var frames: [Frame] = []
        while let f = try source.nextFrame() { frames.append(f) }
        return frames
    }

    func testRenderedScenarioReplaysWithIdenticalLumaInEveryFormat() throws {
        let dir = try TestFiles.temporaryDirectory()
        let scenario = dir + "/a.scenario"
        try FileBytes.write(Array(scenarioText.utf8), to: scenario)
        let expected = try scenarioFrames(scenario)
        XCTAssertEqual(expected.count, 12)
        for (out, format) in [("/mono.y4m", "y4m"), ("/c420.y4m", "y4m-420"), ("/pgm", "pgm"), ("/png", "png")] {
            XCTAssertEqual(RenderCommand.run([scenario, "--out", dir + out, "--format", format]), 0, format)
            // A folder replay takes its rate from --fps; a Y4M file from its header.
            let frames = try replayFrames(dir + out, settings: settings(fps: 12))
            XCTAssertEqual(frames.count, expected.count, format)
            for (a, b) in zip(frames, expected) {
                XCTAssertEqual(a.sequence, b.sequence)
                XCTAssertEqual(a.captureTime, b.captureTime, format)
                XCTAssertEqual(a.width, 160)
                XCTAssertEqual(a.luma, b.luma, "\(format) frame \(a.sequence)")
            }
        }
        let source = try ReplaySource(path: dir + "/mono.y4m", settings: settings(fps: 30))
        XCTAssertEqual(source.fps, 12, "the Y4M header's rate wins over --fps")
        XCTAssertEqual(source.name, "replay:" + dir + "/mono.y4m")
    }

    func testLoopRestartsAndKeepsCountingAndFastIsNotLive() throws {
        let dir = try TestFiles.temporaryDirectory()
        let writer = try Y4MWriter(path: dir + "/a.y4m", width: 16, height: 16, fps: 15)
        for n in 0..<3 { try writer.write(luma: [UInt8](repeating: UInt8(n * 10), count: 256)) }
        writer.close()
        let source = try ReplaySource(path: dir + "/a.y4m", settings: settings(loop: true))
        XCTAssertFalse(source.isLive)
        try source.open()
        let frames = try (0..<7).map { _ in try XCTUnwrap(source.nextFrame()) }
        XCTAssertEqual(frames.map(\.sequence), Array(0...6))
        XCTAssertEqual(frames.map { $0.luma[0] }, [0, 10, 20, 0, 10, 20, 0])
        XCTAssertTrue(try ReplaySource(path: dir + "/a.y4m", settings: settings(fast: false)).isLive)
    }

    func testTruncatedY4MThrowsAUsageErrorFromNextFrame() throws {
        let dir = try TestFiles.temporaryDirectory()
        let writer = try Y4MWriter(path: dir + "/a.y4m", width: 16, height: 16, fps: 15)
        for _ in 0..<3 { try writer.write(luma: [UInt8](repeating: 7, count: 256)) }
        writer.close()
        let bytes = try FileBytes.read(path: dir + "/a.y4m")
        try FileBytes.write(Array(bytes.dropLast(100)), to: dir + "/cut.y4m")
        let source = try ReplaySource(path: dir + "/cut.y4m", settings: settings())
        try source.open()
        XCTAssertNotNil(try source.nextFrame())
        XCTAssertNotNil(try source.nextFrame())
        XCTAssertThrowsError(try source.nextFrame()) { error in
            XCTAssertTrue(error is UsageError)
            XCTAssertEqual("\(error)", "cannot read \(dir)/cut.y4m: frame 2 is truncated (156 of 256 luma bytes)")
        }
    }

    func testFolderFramesPlayInNaturalOrderAndMustShareOneSize() throws {
        let dir = try TestFiles.temporaryDirectory()
        for n in [10, 2, 1] {
            try ImageFile.write(LumaImage(width: 8, height: 4, fill: UInt8(n)), to: "\(dir)/f\(n).pgm", format: .pgm)
        }
        try FileBytes.write(Array("not a frame".utf8), to: dir + "/notes.txt")
        XCTAssertEqual(try replayFrames(dir).map { $0.luma[0] }, [1, 2, 10])
        try ImageFile.write(LumaImage(width: 9, height: 4, fill: 0), to: "\(dir)/f11.png", format: .png)
        let source = try ReplaySource(path: dir, settings: settings())
        try source.open()
        for _ in 0..<3 { XCTAssertNotNil(try source.nextFrame()) }
        XCTAssertThrowsError(try source.nextFrame()) { error in
            XCTAssertEqual("\(error)", "cannot replay \(dir)/f11.png: it is 9x4 but the replay's frames are 8x4 (all frames must have one size)")
        }
        XCTAssertTrue(FrameDirectory.naturalOrder("frame2.png", "frame10.png"))
        XCTAssertTrue(FrameDirectory.naturalOrder("a-002.pgm", "a-10.pgm"))
        XCTAssertFalse(FrameDirectory.naturalOrder("b1", "a2"))
    }

    func testBadPathsAreClearUsageErrors() throws {
        let dir = try TestFiles.temporaryDirectory()
        XCTAssertThrowsError(try ReplaySource(path: dir + "/missing.y4m", settings: settings())) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot read \(dir)/missing.y4m: No such file"), "\(error)")
        }
        XCTAssertThrowsError(try ReplaySource(path: dir, settings: settings())) { error in
            XCTAssertEqual("\(error)", "replay folder \(dir) holds no frames (want .pgm, .png or .jpg files)")
        }
        try FileBytes.write(Array("hello".utf8), to: dir + "/x.y4m")
        XCTAssertThrowsError(try ReplaySource(path: dir + "/x.y4m", settings: settings())) { error in
            XCTAssertTrue(error is UsageError)
            XCTAssertTrue("\(error)".contains("x.y4m"), "\(error)")
        }
    }

    func testRenderCommandRejectsBadInputWithExitTwo() throws {
        let dir = try TestFiles.temporaryDirectory()
        XCTAssertEqual(RenderCommand.run([]), 2)
        XCTAssertEqual(RenderCommand.run(["--help"]), 0)
        XCTAssertEqual(RenderCommand.run([dir + "/missing.scenario", "--out", dir + "/o.y4m"]), 2)
        XCTAssertEqual(RenderCommand.run(["sim:HI", "--out", dir + "/o.y4m", "--format", "gif"]), 2)
        XCTAssertEqual(RenderCommand.run(["sim:HI", "--bogus"]), 2)
        XCTAssertEqual(RenderCommand.run(["sim:HI"]), 2)
        XCTAssertEqual(RenderCommand.run(["sim:HI", "--out", "/nonexistent/dir/o.y4m"]), 2)
        XCTAssertEqual(RenderCommand.run(["sim:HI", "--out", dir + "/hi.y4m", "--fps", "2", "--width", "200", "--height", "200"]), 0)
        let reader = try Y4MReader(path: dir + "/hi.y4m")
        XCTAssertEqual(reader.header.width, 200)
        XCTAssertEqual(reader.header.fps, 2)
    }
}
