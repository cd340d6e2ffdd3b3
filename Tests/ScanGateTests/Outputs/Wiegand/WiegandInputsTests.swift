import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import XCTest
import Wiegand
import Settings

/// The panel's LED and beeper inputs through fake edge events: the feedback commands they give,
/// debouncing, the active level, a line held at start, and release on close.
final class WiegandInputsTests: XCTestCase {
    static let led = 16, beeper = 26

    static let green = FeedbackRequest.command(FeedbackCommand(led: LEDCommand(temporary: .cancel, permanent: .steady(.green))))
    static let ledOff = FeedbackRequest.command(FeedbackCommand(led: LEDCommand(permanent: .steady(.off))))
    static let tone = FeedbackRequest.command(FeedbackCommand(tone: ToneCommand(onMs: 1000, offMs: 0, duration: .untilReplaced)))
    static let silence = FeedbackRequest.command(FeedbackCommand(tone: .silence))

    func make(_ chip: MemoryGpiod, feedback: RecordingFeedback, logs: LogCapture = LogCapture(),
              edit: (inout WiegandSettings) -> Void = { _ in }) throws -> WiegandOutput {
        var s = WiegandSettings()
        s.chip = MemoryGpiod.wiegandLabel
        s.d0 = .name("GPIO12")
        s.d1 = .name("GPIO13")
        s.ledInput = .name("GPIO16")
        s.beeperInput = .offset(Self.beeper)
        edit(&s)
        var r = WiegandRuntime()
        r.stallLimitMs = 60_000   // a loaded test machine must not cut the frame
        r.realtime = false
        r.retryMs = 50
        r.debounceMs = 10
        let out = try WiegandOutput(settings: s, logger: logs.logger, feedback: feedback, calls: chip, runtime: r)
        XCTAssertTrue(waitUntil { chip.consumer(Self.led) == "scangate" && chip.consumer(Self.beeper) == "scangate" },
                      "inputs requested")
        return out
    }

    func testLEDHeldIsPermanentGreenReleasedIsOff() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        let out = try make(chip, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        chip.drive(Self.led, physical: 0)            // the panel pulls it low
        XCTAssertTrue(waitUntil { feedback.requests == [Self.green] }, "\(feedback.requests)")
        chip.drive(Self.led, physical: 1)
        XCTAssertTrue(waitUntil { feedback.requests == [Self.green, Self.ledOff] }, "\(feedback.requests)")
        XCTAssertEqual(Set(feedback.origins), ["wiegand"])
    }

    func testBeeperHeldIsAToneUntilReplacedReleasedIsSilence() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        let out = try make(chip, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        chip.drive(Self.beeper, physical: 0)
        XCTAssertTrue(waitUntil { feedback.requests == [Self.tone] }, "\(feedback.requests)")
        chip.drive(Self.beeper, physical: 1)
        XCTAssertTrue(waitUntil { feedback.requests == [Self.tone, Self.silence] }, "\(feedback.requests)")
    }

    func testContactBounceGivesOneCommand() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        let out = try make(chip, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        // A relay closing: five quick bounces, settling low.
        for level: Int32 in [0, 1, 0, 1, 0, 1, 0] { chip.drive(Self.led, physical: level) }
        XCTAssertTrue(waitUntil { feedback.requests.count == 1 })
        // A glitch shorter than the debounce that comes back to idle: nothing.
        chip.drive(Self.beeper, physical: 0)
        chip.drive(Self.beeper, physical: 1)
        sleepThread(milliseconds: 60)   // the condition under test: several debounce times pass, then nothing happened
        XCTAssertEqual(feedback.requests, [Self.green])
    }

    func testAnInputAlreadyActiveAtStartIsPlayed() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        chip.drive(Self.led, physical: 0)
        let out = try make(chip, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        XCTAssertTrue(waitUntil { feedback.requests == [Self.green] }, "\(feedback.requests)")
    }

    func testActiveHighInputs() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        chip.drive(Self.led, physical: 0)
        chip.drive(Self.beeper, physical: 0)
        let out = try make(chip, feedback: feedback) { $0.inputActiveHigh = true }
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        sleepThread(milliseconds: 30)
        XCTAssertEqual(feedback.requests, [], "low is idle for active-high inputs")
        chip.drive(Self.beeper, physical: 1)
        XCTAssertTrue(waitUntil { feedback.requests == [Self.tone] }, "\(feedback.requests)")
    }

    func testCloseWhileHeldPlaysTheReleaseAndFreesTheLines() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback()
        let out = try make(chip, feedback: feedback)
        chip.drive(Self.led, physical: 0)
        chip.drive(Self.beeper, physical: 0)
        XCTAssertTrue(waitUntil { feedback.requests.count == 2 })
        out.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(Set(feedback.requests.suffix(2).map { "\($0)" }), Set([Self.ledOff, Self.silence].map { "\($0)" }))
        XCTAssertNil(chip.consumer(Self.led))
        XCTAssertNil(chip.consumer(Self.beeper))
        XCTAssertEqual(chip.openHandles, 0)
    }

    func testABusyInputIsLoggedAndRetriedWhileWiegandSends() throws {
        let chip = MemoryGpiod.wiegand(), feedback = RecordingFeedback(), logs = LogCapture()
        chip.hold(Self.beeper, by: "gpiomon")
        var s = WiegandSettings()
        s.chip = MemoryGpiod.wiegandLabel
        s.d0 = .name("GPIO12")
        s.d1 = .name("GPIO13")
        s.beeperInput = .offset(Self.beeper)
        s.facility = .fixed(90)
        var r = WiegandRuntime()
        r.stallLimitMs = 60_000   // a loaded test machine must not cut the frame
        r.realtime = false
        r.retryMs = 50
        let out = try WiegandOutput(settings: s, logger: logs.logger, feedback: feedback, calls: chip, runtime: r)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        XCTAssertTrue(waitUntil {
            logs.contains("the panel beeper input line GPIO26 (offset 26) on scangate-sim (gpiochip0) (--wiegand-beeper-input) is busy: held by 'gpiomon'; stop that program (gpioinfo scangate-sim shows who holds each line) or choose another line")
        }, "\(logs.all)")
        XCTAssertTrue(waitUntil { out.health.state == .degraded }, "\(out.health)")
        chip.free(Self.beeper)
        XCTAssertTrue(waitUntil { chip.consumer(Self.beeper) == "scangate" })
        XCTAssertTrue(waitUntil { out.health.state == .ok }, "\(out.health)")
        chip.drive(Self.beeper, physical: 0)
        XCTAssertTrue(waitUntil { feedback.requests == [Self.tone] })
    }
}
