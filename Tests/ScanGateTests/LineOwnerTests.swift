import Catalog
import Config
import Core
import GPIO
import MemoryGPIO
import Settings
import XCTest

/// The catalogue-wide check that every GPIO line configured anywhere has one owner, as check-config, run
/// and doctor make it (`Catalog.check`): every pair of claimants, names resolved on the chip when it opens.
final class LineOwnerTests: XCTestCase {
    func settings(_ flags: [String]) throws -> RunSettings {
        try Configuration.resolve(configPath: nil, flagAssignments: flags.map { flag in
            let parts = flag.split(separator: "=", maxSplits: 1).map(String.init)
            guard let option = OptionTable.find(parts[0]) else { throw UsageError("no option \(parts[0])") }
            return (option, parts.count > 1 ? parts[1] : "true")
        })
    }

    /// The refusal, or nil when the settings pass.
    func refusal(_ flags: [String], gpiod: (any GpiodCalls)? = nil) throws -> String? {
        let s = try settings(flags)
        do {
            try Catalog.check(s, gpiod: gpiod)
            return nil
        } catch {
            return (error as? UsageError)?.message ?? "\(error)"
        }
    }

    let wiegand = ["gpio-chip=gpiochip0", "wiegand-d0=GPIO5", "wiegand-d1=GPIO6"]

    func testWiegandAgainstTheRelayTheLEDsAndItself() throws {
        // Wiegand D0 on the relay's line: refused whichever is read first (before, only the relay checked).
        XCTAssertEqual(try refusal(wiegand + ["door-relay=GPIO5"]),
                       "[door-relay] door-relay: line GPIO5 on gpiochip0 is also claimed by [wiegand] wiegand-d0; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(wiegand + ["wiegand-led-input=GPIO20", "door-relay=GPIO20"]),
                       "[door-relay] door-relay: line GPIO20 on gpiochip0 is also claimed by [wiegand] wiegand-led-input; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(wiegand + ["wiegand-beeper-input=GPIO21", "buzzer=GPIO21"]),
                       "[gpio] buzzer: line GPIO21 on gpiochip0 is also claimed by [wiegand] wiegand-beeper-input; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(wiegand + ["status-led=GPIO6"]),
                       "[gpio] status-led: line GPIO6 on gpiochip0 is also claimed by [wiegand] wiegand-d1; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(["gpio-chip=gpiochip0", "wiegand-d0=GPIO5", "wiegand-d1=GPIO5"]),
                       "[wiegand] wiegand-d1: line GPIO5 on gpiochip0 is also claimed by [wiegand] wiegand-d0; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(wiegand + ["wiegand-led-input=GPIO7", "wiegand-beeper-input=GPIO7"]),
                       "[wiegand] wiegand-beeper-input: line GPIO7 on gpiochip0 is also claimed by [wiegand] wiegand-led-input; each GPIO line needs one owner")
        XCTAssertEqual(try refusal(wiegand + ["wiegand-beeper-input=GPIO6"]),
                       "[wiegand] wiegand-beeper-input: line GPIO6 on gpiochip0 is also claimed by [wiegand] wiegand-d1; each GPIO line needs one owner")
        XCTAssertNil(try refusal(wiegand + ["wiegand-led-input=GPIO7", "wiegand-beeper-input=GPIO8", "door-relay=GPIO9",
                                            "led-green=GPIO10", "led-red=GPIO11", "status-led=GPIO12", "buzzer=GPIO13"]))
    }

    func testTheSameOffsetOnAnotherChipIsAnotherLine() throws {
        XCTAssertNil(try refusal(wiegand + ["door-relay=GPIO5", "door-relay-chip=gpiochip1"]))
        XCTAssertNil(try refusal(wiegand + ["wiegand-chip=gpiochip1", "led-green=GPIO5"]))
    }

    func testANameAndAnOffsetOfOneLineAreResolvedOnTheChip() throws {
        let chip = MemoryGpiod.pi5()
        let flags = ["gpio-chip=pinctrl-rp1", "led-green=GPIO17", "door-relay=17"]
        XCTAssertNil(try refusal(flags), "as written, GPIO17 and 17 differ")
        XCTAssertEqual(try refusal(flags, gpiod: chip),
                       "[gpio] led-green: line GPIO17 on pinctrl-rp1 is also claimed by [door-relay] door-relay (as 17 on pinctrl-rp1); each GPIO line needs one owner")
        XCTAssertEqual(chip.openChipHandles, 0, "the chip is closed again")
        XCTAssertTrue(chip.requests.isEmpty, "nothing is requested")
    }

    func testOneChipNamedTwoWaysIsResolved() throws {
        let chip = MemoryGpiod.pi5()
        let flags = ["gpio-chip=pinctrl-rp1", "led-red=GPIO22", "wiegand-chip=gpiochip0", "wiegand-d0=GPIO22", "wiegand-d1=GPIO23"]
        XCTAssertNil(try refusal(flags), "as written, two chips")
        XCTAssertEqual(try refusal(flags, gpiod: chip),
                       "[gpio] led-red: line GPIO22 on pinctrl-rp1 is also claimed by [wiegand] wiegand-d0 (as GPIO22 on gpiochip0); each GPIO line needs one owner")
        XCTAssertNil(try refusal(["gpio-chip=pinctrl-rp1", "led-red=GPIO22", "wiegand-chip=rp1-aux", "wiegand-d0=0", "wiegand-d1=1"],
                                 gpiod: chip))
    }

    func testAChipThatCannotBeOpenedIsComparedAsWritten() throws {
        let chip = MemoryGpiod.pi5()
        XCTAssertEqual(try refusal(["gpio-chip=no-such-chip", "led-red=GPIO22", "door-relay=GPIO22"], gpiod: chip),
                       "[gpio] led-red: line GPIO22 on no-such-chip is also claimed by [door-relay] door-relay; each GPIO line needs one owner")
    }
}
