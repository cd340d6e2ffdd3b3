import XCTest
import Core
import Feedback
import GPIO
import Platform
import Settings

/// Feedback timing and preemption on the GPIO lines, exactly, with a fake clock (no sleeps) and a
/// recording line driver: the local grant and deny patterns, the status LED, and controller commands.
final class GPIOFeedbackTimelineTests: XCTestCase {
    typealias C = RecordingLines.Change
    var clock: FakeClock!
    var lines: RecordingLines!
    var player: FeedbackTimelinePlayer!
    var commands = GPIOFeedbackCommands(settings: GPIOSettings())

    override func setUp() {
        clock = FakeClock()
        lines = RecordingLines(clock: clock)
        player = FeedbackTimelinePlayer(driver: lines, clock: clock)
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
        player.apply(commands.grant)
        run(until: 5000)
        XCTAssertEqual(lines.changes, [C(0, .green, true), C(0, .buzzer, true), C(100, .buzzer, false),
                                       C(800, .green, false)])
        XCTAssertFalse(player.isPlaying)
        XCTAssertNil(player.nextDeadline)
    }

    func testRejectedIsRedDoubleBlinkWithTwoShortBuzzes() {
        player.apply(commands.command(for: .deny))
        run(until: 5000)
        XCTAssertEqual(lines.changes, [
            C(0, .red, true), C(0, .buzzer, true), C(60, .buzzer, false), C(150, .red, false),
            C(300, .red, true), C(300, .buzzer, true), C(360, .buzzer, false), C(450, .red, false),
        ])
    }

    func testRejectedPreemptsGoodRead() {
        player.apply(commands.grant)
        run(until: 300)
        player.apply(commands.deny)
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
        player.apply(commands.grant)
        run(until: 50)
        player.apply(commands.grant)   // buzzer still on: stays on, no glitch
        run(until: 500)
        player.apply(commands.grant)   // buzzer off: buzzes again
        run(until: 5000)
        XCTAssertEqual(lines.changes, [
            C(0, .green, true), C(0, .buzzer, true),
            C(150, .buzzer, false),
            C(500, .buzzer, true), C(600, .buzzer, false),
            C(1300, .green, false),
        ])
    }

    func testGoodReadPreemptsRejectedMidBlink() {
        player.apply(commands.deny)
        run(until: 320)   // red on (second blink), buzzer on
        player.apply(commands.grant)
        run(until: 5000)
        XCTAssertEqual(Array(lines.changes.suffix(4)), [
            C(320, .green, true), C(320, .red, false), C(420, .buzzer, false), C(1120, .green, false),
        ])
        XCTAssertFalse(player.level(.red) || player.level(.green) || player.level(.buzzer))
    }

    func testHeartbeatWhileScanningRepeatsEvery2s() {
        player.setStatus(commands.status(.scanning))
        run(until: 6050)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true), C(100, .status, false), C(2000, .status, true), C(2100, .status, false),
            C(4000, .status, true), C(4100, .status, false), C(6000, .status, true),
        ])
        XCTAssertEqual(player.nextDeadline?.nanoseconds, FakeClock.origin + 6100 * 1_000_000)
    }

    func testCameraLostBlinksFastThenPausedTurnsStatusOff() {
        player.setStatus(commands.status(.scanning))
        run(until: 1000)
        player.setStatus(commands.status(.cameraLost))
        run(until: 1600)
        player.setStatus(commands.status(.paused))
        run(until: 10000)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true), C(100, .status, false),
            C(1000, .status, true), C(1125, .status, false), C(1250, .status, true), C(1375, .status, false),
            C(1500, .status, true), C(1600, .status, false),
        ])
        XCTAssertNil(player.nextDeadline, "paused: the status LED is off and nothing is due")
    }

    func testStatusAndReadFeedbackDoNotPreemptEachOther() {
        player.setStatus(commands.status(.scanning))
        run(until: 50)
        player.apply(commands.grant)
        run(until: 2050)
        XCTAssertEqual(lines.changes, [
            C(0, .status, true),
            C(50, .green, true), C(50, .buzzer, true),
            C(100, .status, false), C(150, .buzzer, false), C(850, .green, false),
            C(2000, .status, true),
        ])
    }

    func testLateTickStillAppliesEveryStepInOrder() {
        player.apply(commands.deny)
        clock.set(ms: 1000)   // the thread woke up late: everything is due at once
        player.tick()
        XCTAssertEqual(lines.changes.map(\.role), [.red, .buzzer, .buzzer, .red, .red, .buzzer, .buzzer, .red])
        XCTAssertEqual(lines.changes.map(\.active), [true, true, false, false, true, true, false, false])
        XCTAssertFalse(player.isPlaying)
    }

    func testStopAllDrivesEveryLineInactive() {
        player.setStatus(commands.status(.scanning))
        player.apply(commands.grant)
        run(until: 50)
        player.stopAll()
        XCTAssertEqual(Array(lines.changes.suffix(3)), [C(50, .green, false), C(50, .status, false),
                                                        C(50, .buzzer, false)].sorted { $0.role < $1.role })
        XCTAssertNil(player.nextDeadline)
        for role in GPIORole.allCases { XCTAssertFalse(player.level(role)) }
    }

    func testCommandsAreBuiltFromSettings() {
        var s = GPIOSettings()
        s.goodLedMs = 500
        s.goodBuzzMs = 0
        s.errorBlinks = 3
        s.errorBlinkMs = 100
        s.errorBuzzMs = 250   // capped at the blink length
        s.heartbeatMs = 50
        s.heartbeatPeriodMs = 1000
        s.cameraLostBlinkMs = 200
        s.controllerOfflineBlinkMs = 400
        let c = GPIOFeedbackCommands(settings: s)
        XCTAssertEqual(c.grant, FeedbackCommand(
            led: LEDCommand(temporary: .show(LEDBlink(onColor: .green, onMs: 500, offMs: 0), for: .milliseconds(500))),
            tone: .silence))
        XCTAssertEqual(c.deny, FeedbackCommand(
            led: LEDCommand(temporary: .show(LEDBlink(onColor: .red, onMs: 100, offMs: 100), for: .cycles(3))),
            tone: ToneCommand(onMs: 100, offMs: 100, duration: .cycles(3))))
        XCTAssertEqual(c.scanning, StatusBlink(onMs: 50, offMs: 950))
        XCTAssertEqual(c.cameraLost, StatusBlink(onMs: 200, offMs: 200))
        XCTAssertEqual(c.status(.controllerOffline), StatusBlink(onMs: 400, offMs: 400))
        XCTAssertEqual(c.status(.paused), .off)
        XCTAssertEqual(c.readCue.tone, ToneCommand(onMs: 40, offMs: 0, duration: .cycles(1)))
        XCTAssertNil(c.readCue.led, "the read cue leaves the LED to the controller")

        s.errorBlinks = 0
        XCTAssertEqual(GPIOFeedbackCommands(settings: s).deny, FeedbackCommand(led: LEDCommand(temporary: .cancel), tone: .silence))
    }

    /// An OSDP-style LED command: the permanent state red, a temporary green/off blink shown over it for
    /// two cycles, then red again; amber lights both lines.
    func testControllerLEDCommandTemporaryOverPermanentAndAmberIsBoth() {
        player.apply(FeedbackCommand(led: LEDCommand(permanent: .steady(.red))))
        run(until: 100)
        player.apply(FeedbackCommand(led: LEDCommand(temporary: .show(LEDBlink(onColor: .green, offColor: .off, onMs: 200, offMs: 100),
                                                                           for: .cycles(2)))))
        run(until: 1000)
        player.apply(FeedbackCommand(led: LEDCommand(permanent: .steady(.amber))))
        run(until: 1100)
        XCTAssertEqual(lines.changes, [
            C(0, .red, true),
            C(100, .green, true), C(100, .red, false), C(300, .green, false),
            C(400, .green, true), C(600, .green, false),
            C(700, .red, true),
            C(1000, .green, true),
        ])
        XCTAssertTrue(player.level(.green) && player.level(.red), "amber: both lit")
        XCTAssertNil(player.nextDeadline, "steady: nothing more is due")
    }

    /// A tone held until replaced (the Wiegand beeper input held low, OSDP BUZ with count 0), then
    /// stopped by silence; a permanent blink keeps its own phase under a temporary state.
    func testToneUntilReplacedThenSilenceAndPermanentBlinkKeepsItsPhase() {
        player.apply(FeedbackCommand(tone: ToneCommand(onMs: 100, offMs: 0, duration: .untilReplaced)))
        run(until: 5000)
        XCTAssertEqual(lines.changes, [C(0, .buzzer, true)], "held on, no end")
        player.apply(FeedbackCommand(tone: .silence))
        XCTAssertEqual(lines.changes.last, C(5000, .buzzer, false))
        player.apply(FeedbackCommand(led: LEDCommand(permanent: LEDBlink(onColor: .red, onMs: 500, offMs: 500))))
        run(until: 5200)
        player.apply(FeedbackCommand(led: LEDCommand(temporary: .show(.steady(.green), for: .milliseconds(1000)))))
        run(until: 6900)
        XCTAssertEqual(Array(lines.changes.dropFirst(2)), [
            C(5000, .red, true),
            C(5200, .green, true), C(5200, .red, false),
            // The temporary state ends at 6200, inside the permanent blink's "on" half (6000-6500).
            C(6200, .green, false), C(6200, .red, true), C(6500, .red, false),
        ])
    }
}
