#if canImport(Glibc)
import Glibc
#endif
import XCTest
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import Settings

/// The real line driver over a fake of the libgpiod calls: requests (consumer, active-low flag,
/// inactive at start), levels, retries of busy or missing lines and chips, and close.
final class GPIOOutputsTests: XCTestCase {
    func settings() -> GPIOSettings {
        var s = GPIOSettings()
        s.chip = "pinctrl-rp1"
        s.lines = [.green: .name("GPIO17"), .red: .name("GPIO27"), .status: .offset(22), .buzzer: .offset(18)]
        s.activeLow = [.buzzer, .red]
        s.retryMs = 5000
        return s
    }

    func testRequestsUseConsumerActiveLowFlagAndStartInactive() {
        let gpiod = MemoryGpiod.pi5()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: LogCapture().logger, clock: FakeClock())
        XCTAssertEqual(Set(gpiod.requests.map(\.offset)), [17, 27, 22, 18])
        for r in gpiod.requests {
            XCTAssertEqual(r.consumer, "scangate")
            XCTAssertEqual(r.initialValue, 0, "line \(r.offset) starts logically inactive")
            XCTAssertEqual(r.activeLow, r.offset == 18 || r.offset == 27, "active-low flag on line \(r.offset)")
        }
        // Physically: active-high lines low, active-low lines high (= inactive).
        XCTAssertEqual(gpiod.physical(offset: 17), 0)
        XCTAssertEqual(gpiod.physical(offset: 22), 0)
        XCTAssertEqual(gpiod.physical(offset: 18), 1)
        XCTAssertEqual(gpiod.physical(offset: 27), 1)
        XCTAssertNil(outputs.service(at: .now()), "nothing to retry")
        outputs.close()
    }

    func testActiveLowIsLeftToTheKernelFlagTheDriverSetsLogicalValues() {
        let gpiod = MemoryGpiod.pi5()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: LogCapture().logger, clock: FakeClock())
        outputs.set(.buzzer, active: true)
        outputs.set(.green, active: true)
        XCTAssertEqual(gpiod.sets.map(\.offset), [18, 17])
        XCTAssertEqual(gpiod.sets.map(\.value), [1, 1], "logical 1 = active for both")
        XCTAssertEqual(gpiod.physical(offset: 18), 0, "active-low buzzer pulled low")
        XCTAssertEqual(gpiod.physical(offset: 17), 1)
        outputs.set(.buzzer, active: false)
        XCTAssertEqual(gpiod.physical(offset: 18), 1)
        outputs.close()
    }

    func testCloseDrivesEveryLineInactiveReleasesAndClosesTheChip() {
        let gpiod = MemoryGpiod.pi5()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: LogCapture().logger, clock: FakeClock())
        for role in GPIORole.allCases { outputs.set(role, active: true) }
        outputs.close()
        XCTAssertEqual(gpiod.physical(offset: 17), 0)
        XCTAssertEqual(gpiod.physical(offset: 22), 0)
        XCTAssertEqual(gpiod.physical(offset: 18), 1)
        XCTAssertEqual(gpiod.physical(offset: 27), 1)
        for offset in [17, 18, 22, 27] { XCTAssertNil(gpiod.consumer(offset: offset), "line \(offset) released") }
        XCTAssertEqual(gpiod.openChipHandles, 0, "chip closed")
        let setsAfterClose = gpiod.sets.count
        outputs.set(.green, active: true)
        outputs.close()
        XCTAssertEqual(gpiod.sets.count, setsAfterClose, "nothing is driven after close")
    }

    func testBusyLineIsRetriedAndPicksUpTheCurrentLevel() {
        let gpiod = MemoryGpiod.pi5()
        gpiod.hold(chip: "gpiochip0", offset: 17, consumer: "gpioset")
        let clock = FakeClock()
        let log = LogCapture()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: log.logger, clock: clock)
        XCTAssertEqual(outputs.openRoles, [.red, .status, .buzzer])
        XCTAssertEqual(outputs.service(at: clock.now())?.nanoseconds, FakeClock.origin + 5000 * 1_000_000)
        outputs.set(.green, active: true)   // wanted while the line is busy

        clock.set(ms: 4999)
        _ = outputs.service(at: clock.now())
        XCTAssertEqual(gpiod.opens.count, 1, "not retried before 5 s")
        clock.set(ms: 5000)
        _ = outputs.service(at: clock.now())   // still busy: logged again only after the rate limit
        XCTAssertEqual(log.all.filter { $0.contains("is busy") }.count, 1)

        gpiod.free(chip: "gpiochip0", offset: 17)
        clock.set(ms: 10000)
        XCTAssertNil(outputs.service(at: clock.now()), "nothing left to retry")
        XCTAssertEqual(outputs.openRoles, Set(GPIORole.allCases))
        XCTAssertEqual(gpiod.requests.last?.offset, 17)
        XCTAssertEqual(gpiod.requests.last?.initialValue, 1, "requested at the level the pattern wants now")
        XCTAssertEqual(gpiod.physical(offset: 17), 1)
        XCTAssertTrue(log.all.contains { $0.contains("green LED on line GPIO17 of pinctrl-rp1 (gpiochip0) (available again)") },
                      log.all.joined(separator: "\n"))
        outputs.close()
    }

    func testMissingChipIsRetriedUntilItAppears() {
        let gpiod = MemoryGpiod.pi5()
        gpiod.setPresent(chip: "gpiochip0", false)
        let clock = FakeClock()
        let log = LogCapture()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: log.logger, clock: clock)
        XCTAssertTrue(outputs.openRoles.isEmpty)
        XCTAssertEqual(outputs.problems[.green]?.kind, .chipNotFound)
        XCTAssertTrue(log.all.first?.hasPrefix("<3>GPIO: no GPIO chip with label 'pinctrl-rp1'") ?? false, "\(log.all)")
        XCTAssertTrue(log.all.first?.hasSuffix("scanning goes on without LEDs and buzzer, retrying every 5 s") ?? false)
        outputs.set(.status, active: true)   // no chip: nothing to drive, nothing crashes
        gpiod.setPresent(chip: "gpiochip0", true)
        clock.set(ms: 5000)
        XCTAssertNil(outputs.service(at: clock.now()))
        XCTAssertEqual(outputs.openRoles, Set(GPIORole.allCases))
        XCTAssertEqual(gpiod.physical(offset: 22), 1, "status LED at the wanted level once open")
        XCTAssertTrue(log.all.contains("<5>GPIO: chip pinctrl-rp1 (gpiochip0) is available again"), "\(log.all)")
        outputs.close()
    }

    func testChipThatVanishesIsClosedAndReopened() {
        let gpiod = MemoryGpiod.pi5()
        let clock = FakeClock()
        let log = LogCapture()
        let outputs = GPIOOutputs(settings: settings(), calls: gpiod, logger: log.logger, clock: clock)
        gpiod.setPresent(chip: "gpiochip0", false)
        clock.set(ms: 100)
        outputs.set(.green, active: true)   // ENODEV
        XCTAssertTrue(outputs.openRoles.isEmpty)
        XCTAssertEqual(gpiod.openChipHandles, 0, "the dead chip handle is closed")
        XCTAssertTrue(log.all.contains { $0.contains("No such device (ENODEV); chip closed, reopening every 5 s") },
                      log.all.joined(separator: "\n"))
        gpiod.setPresent(chip: "gpiochip0", true)
        clock.set(ms: 5100)
        XCTAssertNil(outputs.service(at: clock.now()))
        XCTAssertEqual(outputs.openRoles, Set(GPIORole.allCases))
        XCTAssertEqual(gpiod.physical(offset: 17), 1, "green comes back at the wanted level")
        outputs.close()
    }
}
