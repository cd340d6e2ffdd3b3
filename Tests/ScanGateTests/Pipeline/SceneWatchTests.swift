import Core
import Platform
@testable import Pipeline
@testable import Simulator
import XCTest

/// camera-tamper (issue 24): the scene watch on simulated scenes. Time is the frames' capture time, so
/// these run as fast as the frames render; each case names what a person at a kiosk would see.
final class SceneWatchTests: XCTestCase {
    private struct Run {
        /// (frame, tamper) at each change of the signal.
        var changes: [(frame: Int, tamper: CameraTamper?)] = []
        var lines: [String] = []
        var watch: SceneWatch
    }

    /// Plays `scenario` (fps 10) through a watch that reports after `after` s; records each change.
    private func play(_ text: String, after: Int = 3, darkLevel: Int = 24) throws -> Run {
        let scenario = try ScenarioParser.parse(text: text, name: "t.scenario",
                                                defaults: ScenarioParser.Defaults(width: 320, height: 240, fps: 10))
        let renderer = try ScenarioRenderer(scenario: scenario)
        let lines = PosixMutex<[String]>([])
        let signal = CameraSceneSignal()
        let watch = SceneWatch(afterSeconds: after, darkLevel: darkLevel, signal: signal,
                               logger: Logger(level: .debug, sink: { line in lines.withLock { $0.append(line) } }))
        XCTAssertTrue(signal.watching)
        var run = Run(watch: watch)
        var current: CameraTamper?
        for i in 0..<scenario.frameCount {
            let frame = Frame(width: scenario.width, height: scenario.height, sequence: UInt64(i),
                              captureTime: Frame.mediaTime(sequence: UInt64(i), fps: scenario.fps), luma: renderer.render(frame: i))
            watch.observe(frame)
            if signal.tamper != current {
                current = signal.tamper
                run.changes.append((i, current))
            }
        }
        run.lines = lines.withLock { $0 }
        return run
    }

    private func summary(_ run: Run) -> String { run.changes.map { "\($0.frame):\($0.tamper?.rawValue ?? "clear")" }.joined(separator: " ") }

    func testACoveredLensIsReportedAfterTheHoldAndClearsWhenUncovered() throws {
        let run = try play("""
            size 320x240
            fps 10
            frames 200
            backdrop 7
            noise 2
            cover frames 50-119
            """)
        // Covered from frame 50 (5.0 s): reported once 3 s have passed (the first look at or after 8.0 s),
        // cleared 2 s after the lens is free again (frame 120, 12.0 s).
        XCTAssertEqual(run.changes.count, 2, summary(run))
        XCTAssertEqual(run.changes.first?.tamper, .covered, summary(run))
        XCTAssertTrue((80...82).contains(run.changes.first?.frame ?? 0), summary(run))
        XCTAssertNil(run.changes.last?.tamper, summary(run))
        XCTAssertTrue((140...142).contains(run.changes.last?.frame ?? 0), summary(run))
        XCTAssertTrue(run.lines.contains { $0.contains("camera tamper: the camera is covered") && $0.contains("mean luma 8") }, "\(run.lines)")
        XCTAssertTrue(run.lines.contains { $0.contains("camera tamper cleared") }, "\(run.lines)")
    }

    func testACameraTurnedAwayIsReportedAndClearsWhenTurnedBack() throws {
        let run = try play("""
            size 320x240
            fps 10
            frames 200
            backdrop 7
            noise 2
            turn frames 60-129
            """)
        XCTAssertEqual(run.changes.map(\.tamper), [.turnedAway, nil], summary(run))
        XCTAssertTrue((90...92).contains(run.changes.first?.frame ?? 0), summary(run))
        XCTAssertTrue((150...152).contains(run.changes.last?.frame ?? 0), summary(run))
        let similarity = try XCTUnwrap(run.watch.last?.similarity)
        XCTAssertGreaterThan(similarity, 0.95, "the scene is back")
    }

    func testCodesShownAndShortCoversAreNotTamper() throws {
        // Codes held up for 2 s each, and a hand over the lens for 2 s: all shorter than the 3 s hold.
        let run = try play("""
            size 320x240
            fps 10
            frames 300
            backdrop 11
            noise 2
            code qr "PASS-1" frames 40-59 module 4
            code qr "PASS-2" frames 100-119 module 6
            cover frames 160-179
            turn frames 220-239
            """)
        XCTAssertEqual(run.changes.count, 0, summary(run))
    }

    func testALightingChangeIsNotATurn() throws {
        // The same room at 60% contrast (the lights dimmed): the pattern is the same.
        let bright = try ScenarioRenderer(scenario: ScenarioParser.parse(text: "size 320x240\nfps 10\nframes 1\nbackdrop 5\n", name: "a",
                                                                         defaults: .init(width: 320, height: 240, fps: 10)))
        let dim = try ScenarioRenderer(scenario: ScenarioParser.parse(text: "size 320x240\nfps 10\nframes 1\nbackdrop 5\ncontrast 0.6\n", name: "b",
                                                                      defaults: .init(width: 320, height: 240, fps: 10)))
        let signal = CameraSceneSignal()
        let watch = SceneWatch(afterSeconds: 2, darkLevel: 24, signal: signal, logger: Logger(level: .error, sink: { _ in }))
        for i in 0..<200 {
            let luma = i < 50 ? bright.render(frame: 0) : dim.render(frame: 0)
            watch.observe(Frame(width: 320, height: 240, sequence: UInt64(i), captureTime: Frame.mediaTime(sequence: UInt64(i), fps: 10), luma: luma))
            XCTAssertNil(signal.tamper, "frame \(i): \(String(describing: watch.last))")
        }
        XCTAssertGreaterThan(watch.last?.similarity ?? 0, 0.95)
    }

    func testAFlatViewReadsAsCoveredAndTheDarkLevelIsTheSites() throws {
        // A flat grey wall is uniform: covered (the docs say camera-tamper needs a scene with some texture).
        let flat = try play("size 320x240\nfps 10\nframes 60\n", after: 2)
        XCTAssertEqual(flat.changes.map(\.tamper), [.covered], summary(flat))
        // A dim room (mean about 50) is covered only for a site that sets the dark level above it.
        let dim = "size 320x240\nfps 10\nframes 60\nbackground 50\nbackdrop 3\n"
        XCTAssertEqual(try play(dim, after: 2).changes.count, 0)
        XCTAssertEqual(try play(dim, after: 2, darkLevel: 64).changes.map(\.tamper), [.covered])
    }

    func testASourceClockThatGoesBackRestartsTheTiming() throws {
        // A replay that starts over: capture time runs 0-4.9 s, then 0-4.9 s again, the lens covered
        // throughout. Covered is reported 3 s after the start and is not undone or delayed by the jump back.
        let frame = Frame(width: 64, height: 48, sequence: 0, captureTime: MonotonicInstant(nanoseconds: 0),
                          luma: [UInt8](repeating: 5, count: 64 * 48))
        let signal = CameraSceneSignal()
        let watch = SceneWatch(afterSeconds: 3, darkLevel: 24, signal: signal, logger: Logger(level: .error, sink: { _ in }))
        var raisedAt: [Int] = []
        for pass in 0..<2 {
            for i in 0..<50 {
                watch.observe(Frame(width: 64, height: 48, sequence: UInt64(pass * 50 + i),
                                    captureTime: Frame.mediaTime(sequence: UInt64(i), fps: 10), luma: frame.luma))
                if signal.tamper != nil && raisedAt.isEmpty { raisedAt.append(pass * 50 + i) }
            }
        }
        XCTAssertEqual(raisedAt, [30])
        XCTAssertEqual(signal.tamper, .covered, "still covered after the jump back")
    }

    func testANewWatchStartsClear() {
        let signal = CameraSceneSignal()
        signal.setWatching(true)
        signal.set(.covered)
        _ = SceneWatch(afterSeconds: 2, darkLevel: 24, signal: signal, logger: Logger(level: .error, sink: { _ in }))
        XCTAssertNil(signal.tamper, "a reload learns the scene afresh")
        XCTAssertTrue(signal.watching)
        signal.setWatching(false)
        XCTAssertFalse(signal.watching)
    }

    func testScenarioCoverAndTurnLines() throws {
        let defaults = ScenarioParser.Defaults(width: 320, height: 240, fps: 10)
        let s = try ScenarioParser.parse(text: "frames 50\nbackdrop 2\ncover frames 5-9\nturn frames 20\n", name: "t", defaults: defaults)
        XCTAssertEqual(s.events, [.init(kind: .cover, frames: 5...9), .init(kind: .turn, frames: 20...20)])
        XCTAssertEqual(s.backdrop, 2)
        XCTAssertEqual(s.event(inFrame: 7), .cover)
        XCTAssertNil(s.event(inFrame: 10))
        for (text, message) in [("frames 50\ncover frames 40-60\n", "t:2: cover frames ...-60 goes past the last frame 49"),
                                ("frames 50\nturn 3-4\n", "t:2: turn takes `frames A-B`"),
                                ("frames 50\ncover frames 4-\n", "t:2: cover frames A- is not allowed here; give A-B")] {
            XCTAssertThrowsError(try ScenarioParser.parse(text: text, name: "t", defaults: defaults)) { error in
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
        }
        // Covered frames show no code: nothing to read, and the renderer says so.
        let r = try ScenarioRenderer(scenario: ScenarioParser.parse(text: "frames 10\ncode qr \"X\" frames 0-9\ncover frames 3-4\n", name: "t", defaults: defaults))
        XCTAssertEqual(r.visibleCodes(inFrame: 2), [0])
        XCTAssertEqual(r.visibleCodes(inFrame: 3), [])
        XCTAssertEqual(Set(r.render(frame: 3)), [8])
    }
}
