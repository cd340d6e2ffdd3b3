#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import XCTest
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Settings

/// The GPIO sink end to end on its own feedback thread (real clock), over a fake of the libgpiod
/// calls: levels and their order, never blocking the caller, busy lines, and lines inactive after close.
/// Exact timing is covered with the fake clock in GPIOPatternPlayerTests.
final class GPIOFeedbackTests: XCTestCase {
    func settings() -> GPIOSettings {
        var s = GPIOSettings()
        s.chip = "pinctrl-rp1"
        s.lines = [.green: .name("GPIO17"), .red: .name("GPIO27"), .status: .offset(22), .buzzer: .offset(18)]
        s.activeLow = [.buzzer]
        s.goodLedMs = 40
        s.goodBuzzMs = 10
        s.errorBlinkMs = 20
        s.errorBuzzMs = 10
        return s
    }

    func event(_ verdict: Verdict = .accepted) -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: 0,
                  symbol: DecodedSymbol(symbology: .qr, data: Array("HELLO".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                  frame: 0, dequeuedAt: .now(), emittedAt: .now(), verdict: verdict)
    }

    func values(_ gpiod: MemoryGpiod, offset: Int) -> [Int32] {
        gpiod.sets.filter { $0.offset == offset }.map(\.value)
    }

    func assertAllInactiveAndReleased(_ gpiod: MemoryGpiod, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(gpiod.physical(offset: 17), 0, "green", file: file, line: line)
        XCTAssertEqual(gpiod.physical(offset: 27), 0, "red", file: file, line: line)
        XCTAssertEqual(gpiod.physical(offset: 22), 0, "status", file: file, line: line)
        XCTAssertEqual(gpiod.physical(offset: 18), 1, "active-low buzzer is inactive when high", file: file, line: line)
        for offset in [17, 18, 22, 27] {
            XCTAssertNil(gpiod.consumer(offset: offset), "line \(offset) released", file: file, line: line)
        }
        XCTAssertEqual(gpiod.openChipHandles, 0, "chip closed", file: file, line: line)
    }

    func testNoChipMeansNoSinkAndLinesWithoutChipAreReported() {
        let log = LogCapture()
        XCTAssertNil(GPIOFeedback.make(settings: GPIOSettings(), logger: log.logger))
        XCTAssertTrue(log.all.isEmpty)
        var s = GPIOSettings()
        s.lines = [.green: .offset(17), .buzzer: .offset(18)]
        XCTAssertNil(GPIOFeedback.make(settings: s, logger: log.logger))
        XCTAssertEqual(log.all, ["<3>GPIO: --led-green, --buzzer given without --gpio-chip; LEDs and buzzer are off (name the chip by label, e.g. --gpio-chip pinctrl-rp1, by name or by path)"])
    }

    func testLinesAreInactiveAtStartUp() throws {
        let gpiod = MemoryGpiod.pi5()
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: settings(), logger: LogCapture().logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        XCTAssertEqual(gpiod.requests.count, 4, "lines are requested before make returns")
        XCTAssertTrue(gpiod.requests.allSatisfy { $0.initialValue == 0 })
        XCTAssertEqual(gpiod.physical(offset: 18), 1)
        XCTAssertEqual(gpiod.physical(offset: 17), 0)
        sink.close(deadline: .now().adding(milliseconds: 1000))
        assertAllInactiveAndReleased(gpiod)
    }

    func testGoodReadLightsGreenAndBuzzesOnceThenEverythingIsInactive() throws {
        let gpiod = MemoryGpiod.pi5()
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: settings(), logger: LogCapture().logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        sink.play(.grant)
        XCTAssertTrue(waitUntil { self.values(gpiod, offset: 17) == [1, 0] })
        XCTAssertTrue(sink.waitUntilIdle(deadline: .now().adding(milliseconds: 5000)))
        XCTAssertEqual(values(gpiod, offset: 17), [1, 0])
        XCTAssertEqual(values(gpiod, offset: 18), [1, 0], "one buzz (logical values: active-low is the kernel's job)")
        XCTAssertEqual(values(gpiod, offset: 27), [])
        sink.close(deadline: .now().adding(milliseconds: 1000))
        assertAllInactiveAndReleased(gpiod)
    }

    func testRejectedCodeGivesRedDoubleBlinkAndTwoBuzzes() throws {
        let gpiod = MemoryGpiod.pi5()
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: settings(), logger: LogCapture().logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        sink.play(.deny)
        XCTAssertTrue(waitUntil { self.values(gpiod, offset: 27) == [1, 0, 1, 0] })
        XCTAssertTrue(sink.waitUntilIdle(deadline: .now().adding(milliseconds: 5000)))
        XCTAssertEqual(values(gpiod, offset: 27), [1, 0, 1, 0])
        XCTAssertEqual(values(gpiod, offset: 18), [1, 0, 1, 0])
        XCTAssertEqual(values(gpiod, offset: 17), [])
        sink.close(deadline: .now().adding(milliseconds: 1000))
        assertAllInactiveAndReleased(gpiod)
    }

    func testStatusLEDFollowsTheDaemonStatus() throws {
        let gpiod = MemoryGpiod.pi5()
        var s = settings()
        s.heartbeatMs = 60000          // lit for the whole test: no race with the poll
        s.heartbeatPeriodMs = 120000
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: s, logger: LogCapture().logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        sink.statusChanged(.scanning)
        XCTAssertTrue(waitUntil { gpiod.physical(offset: 22) == 1 })
        sink.statusChanged(.paused)
        XCTAssertTrue(waitUntil { gpiod.physical(offset: 22) == 0 })
        sink.statusChanged(.cameraLost)
        XCTAssertTrue(waitUntil { self.values(gpiod, offset: 22).count >= 5 }, "fast blink")
        sink.close(deadline: .now().adding(milliseconds: 1000))
        assertAllInactiveAndReleased(gpiod)
    }

    func testCloseDuringAPatternStopsItAndDrivesEverythingInactive() throws {
        let gpiod = MemoryGpiod.pi5()
        var s = settings()
        s.goodLedMs = 60000
        s.goodBuzzMs = 60000
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: s, logger: LogCapture().logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        sink.statusChanged(.scanning)
        sink.play(.grant)
        XCTAssertTrue(waitUntil { gpiod.physical(offset: 17) == 1 && gpiod.physical(offset: 18) == 0 })
        sink.close(deadline: .now().adding(milliseconds: 1000))
        assertAllInactiveAndReleased(gpiod)
        let count = gpiod.sets.count
        sink.play(.grant)
        sink.statusChanged(.cameraLost)
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(gpiod.sets.count, count, "nothing is driven after close")
    }

    func testBusyLineIsReportedAndTheOtherLinesStillWork() throws {
        let gpiod = MemoryGpiod.pi5()
        gpiod.hold(chip: "gpiochip0", offset: 18, consumer: "other-daemon")
        let log = LogCapture()
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: settings(), logger: log.logger,
                                                   calls: gpiod, clock: SystemFeedbackClock()))
        XCTAssertTrue(log.all.contains { $0.hasPrefix("<3>GPIO: buzzer line GPIO18 (offset 18) on pinctrl-rp1 (gpiochip0) (--buzzer) is busy: held by 'other-daemon'") },
                      log.all.joined(separator: "\n"))
        sink.play(.grant)
        XCTAssertTrue(waitUntil { self.values(gpiod, offset: 17) == [1, 0] })
        XCTAssertEqual(values(gpiod, offset: 18), [], "the busy line is never touched")
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(gpiod.consumer(offset: 18), "other-daemon")
    }

    func testPlayAndStatusChangedNeverWaitForTheLines() {
        let clock = SystemFeedbackClock()
        let lines = RecordingLines(clock: clock, blocked: true)   // every line write hangs until opened
        let sink = GPIOFeedback(commands: GPIOFeedbackCommands(settings: settings()), clock: clock,
                                logger: LogCapture().logger, makeLines: { lines })
        sink.play(.grant)   // the feedback thread is now stuck in the first write
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for _ in 0..<100 {
                sink.play(.grant)
                sink.play(.deny)
                sink.statusChanged(.scanning)
                sink.statusChanged(.cameraLost)
            }
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success, "play() blocked on a stuck line")
        lines.gate.withLock { $0 = false }
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(lines.closeCount, 1)
        // Posted commands coalesce: the thread played a bounded number of them, not 400.
        XCTAssertLessThan(lines.changes.count, 100)
    }
}
