import XCTest
import Core
import GPIO
import Platform

/// Pattern timing and preemption, exactly, with a fake clock (no sleeps) and a recording line driver.
final class GPIOPatternPlayerTests: XCTestCase {
    typealias C = RecordingLines.Change
    var clock: FakeClock!
    var lines: RecordingLines!
    var player: PatternPlayer!
    var patterns = FeedbackPatterns(settings: GPIOSettings())

    override func setUp() {
        clock = FakeClock()
        lines = RecordingLines(clock: clock)
        player = PatternPlayer(driver: lines, clock: clock)
    }

    /// Moves the fake clock to `ms`, stopping at every deadline on the way (what the feedback thread does).
    func run(until ms: Int) {
        let target = MonotonicInstant(nanoseconds: FakeClock.origin + UInt64(ms) * 1_000_000)
        while let d = player.nextDeadline, d <= target {
            clock.set(d)
            player.tick()
        }
        clock.set(target)
        player.tick()
    }

    func testGoodReadIsGreen800msAndOne100msBuzz() {
        player.play(patterns.goodRead, on: .event)
        run(until: 5000)
        XCTAssertEqual(lines.changes, [C(0, .green, true), C(0, .buzzer, true), C(100, .buzzer, false),
                                       C(800, .green, false)])
        XCTAssertFalse(player.isPlaying(.event))
        XCTAssertNil(player.nextDeadline)
    }

    func testRejectedIsRedDoubleBlinkWithTwoShortBuzzes() {
        player.play(patterns.forEvent(verdict: .rejected(reason: "control character")), on: .event)
        run(until: 5000)
        XCTAssertEqual(lines.changes, [
            C(0, .red, true), C(0, .buzzer, true), C(60, .buzzer, false), C(150, .red, false),
            C(300, .red, true), C(300, .buzzer, true), C(360, .buzzer, false), C(450, .red, false),
        ])
    }

    func testRejectedPreemptsGoodRead() {
        player.play(patterns.goodRead, on: .event)
        run(until: 300)
        player.play(patterns.rejected, on: .event)
        run(until: 5000)
        XCTAssertEqual(lines.changes, [
            C(0, .green, true), C(0, .buzzer, true), C(100, .buzzer, false),
            // preemption at 300: green goes off at once, red double blink starts
            C(300, .red, true), C(300, .green, false), C(300, .buzzer, true),
            C(360, .buzzer, false), C(450, .red, false),
            C(600, .red, true), C(600, .buzzer, true), C(660, .buzzer, false), C(750, .red, false),
        ].sorted { ($0.ms, $0.role) < ($1.ms, $1.role) })
        // The preempted green-off at 800 never happens.
        XCTAssertFalse(lines.changes.contains(C(800, .green, false)))
    }

    func testGoodReadDuringGoodReadKeepsGreenLitAndRestartsItsTime() {
        player.play(patterns.goodRead, on: .event)
        run(until: 50)
        player.play(patterns.goodRead, on: .event)   // buzzer still on: stays on, no glitch
        run(until: 500)
        player.play(patterns.goodRead, on: .event)   // buzzer off: buzzes again
        run(until: 5000)
        XCTAssertEqual(lines.changes, [
            C(0, .green, true), C(0, .buzzer, true),
            C(150, .buzzer, false),
            C(500, .buzzer, true), C(600, .buzzer, false),
            C(1300, .green, false),
        ])
    }

    func testGoodReadPreemptsRejectedMidBlink() {
        player.play(patterns.rejected, on: .event)
        run(until: 320)   // red on (second blink), buzzer on
        player.play(patterns.goodRead, on: .event)
        run(until: 5000)
        XCTAssertEqual(Array(lines.changes.suffix(4)), [
            C(320, .green, true), C(320, .red, false), C(420, .buzzer, false), C(1120, .green, false),
        ])
        XCTAssertFalse(player.level(.red) || player.level(.green) || player.level(.buzzer))
    }

    func testHeartbeatWhileScanningRepeatsEvery2s() {
        player.play(patterns.forStatus(.scanning), on: .status)
        run(until: 6050)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true), C(100, .status, false), C(2000, .status, true), C(2100, .status, false),
            C(4000, .status, true), C(4100, .status, false), C(6000, .status, true),
        ])
        XCTAssertEqual(player.nextDeadline?.nanoseconds, FakeClock.origin + 6100 * 1_000_000)
    }

    func testCameraLostBlinksFastThenPausedTurnsStatusOff() {
        player.play(patterns.forStatus(.scanning), on: .status)
        run(until: 1000)
        player.play(patterns.forStatus(.cameraLost), on: .status)
        run(until: 1600)
        player.play(patterns.forStatus(.paused), on: .status)
        run(until: 10000)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true), C(100, .status, false),
            C(1000, .status, true), C(1125, .status, false), C(1250, .status, true), C(1375, .status, false),
            C(1500, .status, true), C(1600, .status, false),
        ])
        XCTAssertFalse(player.isPlaying(.status))
    }

    func testStatusAndReadFeedbackDoNotPreemptEachOther() {
        player.play(patterns.forStatus(.scanning), on: .status)
        run(until: 50)
        player.play(patterns.goodRead, on: .event)
        run(until: 2050)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true),
            C(50, .green, true), C(50, .buzzer, true),
            C(100, .status, false), C(150, .buzzer, false), C(850, .green, false),
            C(2000, .status, true),
        ])
    }

    func testLateTickStillAppliesEveryStepInOrder() {
        player.play(patterns.rejected, on: .event)
        clock.set(ms: 1000)   // the thread woke up late: everything is due at once
        player.tick()
        XCTAssertEqual(lines.changes.map(\.role), [.red, .buzzer, .buzzer, .red, .red, .buzzer, .buzzer, .red])
        XCTAssertEqual(lines.changes.map(\.active), [true, true, false, false, true, true, false, false])
        XCTAssertFalse(player.isPlaying(.event))
    }

    func testStopAllDrivesEveryLineInactive() {
        player.play(patterns.forStatus(.scanning), on: .status)
        player.play(patterns.goodRead, on: .event)
        run(until: 50)
        player.stopAll()
        XCTAssertEqual(Array(lines.changes.suffix(3)), [C(50, .green, false), C(50, .status, false),
                                                        C(50, .buzzer, false)].sorted { $0.role < $1.role })
        XCTAssertNil(player.nextDeadline)
        for role in GPIORole.allCases { XCTAssertFalse(player.level(role)) }
    }

    func testPatternsAreDataBuiltFromSettings() {
        var s = GPIOSettings()
        s.goodLedMs = 500
        s.goodBuzzMs = 0
        s.errorBlinks = 3
        s.errorBlinkMs = 100
        s.errorBuzzMs = 250   // capped at the blink length
        s.heartbeatMs = 50
        s.heartbeatPeriodMs = 1000
        s.cameraLostBlinkMs = 200
        let p = FeedbackPatterns(settings: s)
        XCTAssertEqual(p.goodRead.steps, [FeedbackStep(at: 0, .green, true), FeedbackStep(at: 500, .green, false)])
        XCTAssertNil(p.goodRead.periodMs)
        XCTAssertEqual(p.rejected.steps.filter { $0.role == .red }.map(\.atMs), [0, 100, 200, 300, 400, 500])
        XCTAssertEqual(p.rejected.steps.filter { $0.role == .buzzer }.map(\.atMs), [0, 100, 200, 300, 400, 500])
        XCTAssertEqual(p.scanning.steps, [FeedbackStep(at: 0, .status, true), FeedbackStep(at: 50, .status, false)])
        XCTAssertEqual(p.scanning.periodMs, 1000)
        XCTAssertEqual(p.cameraLost.periodMs, 400)
        XCTAssertEqual(p.forStatus(.paused), .off)

        s.errorBlinks = 0
        XCTAssertTrue(FeedbackPatterns(settings: s).rejected.steps.isEmpty)
    }

    func testCustomPatternWithUnsortedStepsAndATailIsPlayedInTimeOrderAndEndsInactive() {
        // A pattern that forgets to switch the buzzer off still leaves it inactive when it ends.
        let custom = FeedbackPattern(name: "custom", steps: [
            FeedbackStep(at: 40, .green, false), FeedbackStep(at: 0, .green, true), FeedbackStep(at: 10, .buzzer, true),
        ])
        player.play(custom, on: .event)
        run(until: 100)
        XCTAssertEqual(lines.changes, [C(0, .green, true), C(10, .buzzer, true), C(40, .green, false),
                                       C(40, .buzzer, false)])
    }
}
