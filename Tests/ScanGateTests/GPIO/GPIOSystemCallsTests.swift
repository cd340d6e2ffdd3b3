#if canImport(Glibc)
import Glibc
#endif
import XCTest
import Core
import Feedback
import GPIO
import Platform
import Settings

/// The real libgpiod calls, for what this machine can show without GPIO hardware (its kernel has no
/// GPIO support): missing chips, a device that is not a chip, and a sink that keeps going without its
/// chip. Lines on a real driver (gpio-sim) are checked by the hardware-in-the-loop suite.
final class GPIOSystemCallsTests: XCTestCase {
    let calls = SystemGpiodCalls()

    func testChipPathsAreTheGpiochipNodesInNumberOrder() {
        let paths = calls.chipPaths()
        for p in paths {
            XCTAssertTrue(p.hasPrefix("/dev/gpiochip"), p)
            XCTAssertEqual(access(p, F_OK), 0, p)
        }
        let numbers = paths.compactMap { Int($0.dropFirst("/dev/gpiochip".count)) }
        XCTAssertEqual(numbers, numbers.sorted())
        XCTAssertEqual(GPIOLookup.listChips(calls).count, paths.count)
    }

    func testUnknownLabelAndNameAndPathAreNotFound() {
        for text in ["scangate-test-no-such-label", "gpiochip999", "/dev/gpiochip999"] {
            guard case .failure(let error) = GPIOLookup.openChip(text, calls: calls) else {
                return XCTFail("\(text) opened")
            }
            XCTAssertEqual(error.kind, .chipNotFound, error.message)
            XCTAssertEqual(error.errno, .noSuchFile)
            XCTAssertTrue(error.message.contains("'\(text)'"), error.message)
            XCTAssertTrue(error.message.contains(GPIOLookup.availableChipsText(calls)), error.message)
        }
    }

    func testADeviceThatIsNotAChipSaysSo() {
        guard case .failure(let error) = GPIOLookup.openChip("/dev/null", calls: calls) else {
            return XCTFail("/dev/null opened as a GPIO chip")
        }
        XCTAssertEqual(error.kind, .chipUnavailable)
        XCTAssertTrue(error.message.hasPrefix("cannot open GPIO chip '/dev/null' (--gpio-chip): "), error.message)
        XCTAssertTrue(error.message.contains("it is not a GPIO chip"), error.message)
    }

    func testSinkWithAMissingChipLogsAndKeepsGoing() throws {
        var s = GPIOSettings()
        s.chip = "scangate-test-no-such-label"
        s.lines = [.green: .name("GPIO17")]
        s.goodLedMs = 10
        let log = LogCapture()
        let sink = try XCTUnwrap(GPIOFeedback.make(settings: s, logger: log.logger))
        XCTAssertEqual(log.all.count, 1)
        XCTAssertTrue(log.all[0].hasPrefix("<3>GPIO: no GPIO chip with label 'scangate-test-no-such-label'"), log.all[0])
        sink.statusChanged(.scanning)
        sink.play(.grant)
        XCTAssertTrue(sink.waitUntilIdle(deadline: .now().adding(milliseconds: 5000)))
        sink.close(deadline: .now().adding(milliseconds: 1000))
    }
}
