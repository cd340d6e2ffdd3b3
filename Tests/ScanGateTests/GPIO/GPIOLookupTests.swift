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

/// Chip lookup by label, name and path, line lookup by name and offset, and the error texts, through a
/// fake of the libgpiod calls.
final class GPIOLookupTests: XCTestCase {
    func open(_ text: String, _ gpiod: MemoryGpiod = .pi5()) -> (Result<GpiodChipHandle, GPIOError>, MemoryGpiod) {
        (GPIOLookup.openChip(text, calls: gpiod), gpiod)
    }

    func testChipByLabelNameAndPath() throws {
        for (text, how) in [("pinctrl-rp1", "label:pinctrl-rp1"), ("gpiochip0", "name:gpiochip0"),
                            ("/dev/gpiochip0", "path:/dev/gpiochip0")] {
            let (result, gpiod) = open(text)
            let chip = try result.get()
            XCTAssertEqual(gpiod.chipLabel(chip), "pinctrl-rp1", text)
            XCTAssertEqual(gpiod.opens, [how], "\(text) is looked up by \(how) only")
        }
        let (second, gpiod) = open("rp1-aux")
        XCTAssertEqual(gpiod.chipName(try second.get()), "gpiochip1")
    }

    func testChipSpecNeverAssumesANumber() {
        XCTAssertEqual(GPIOLookup.ChipSpec("pinctrl-bcm2711"), .label("pinctrl-bcm2711"))
        XCTAssertEqual(GPIOLookup.ChipSpec("gpiochip4"), .name("gpiochip4"))
        XCTAssertEqual(GPIOLookup.ChipSpec("/dev/gpiochip4"), .path("/dev/gpiochip4"))
        XCTAssertEqual(GPIOLookup.ChipSpec("gpiochipX"), .label("gpiochipX"))
        // A bare number given by the user goes to libgpiod's lookup only when no chip has it as label.
        let (result, gpiod) = open("1")
        XCTAssertNotNil(try? result.get())
        XCTAssertEqual(gpiod.opens, ["label:1", "lookup:1"])
    }

    func testUnknownChipListsTheChipsWithLabels() {
        let (result, _) = open("pinctrl-bcm2711")
        guard case .failure(let error) = result else { return XCTFail("opened a chip that is not there") }
        XCTAssertEqual(error.kind, .chipNotFound)
        XCTAssertEqual(error.message,
            "no GPIO chip with label 'pinctrl-bcm2711' (--gpio-chip takes a label like pinctrl-rp1, a name like gpiochip0 or a path); chips here: gpiochip0 [pinctrl-rp1] (54 lines), gpiochip1 [rp1-aux] (4 lines)")
        let (byPath, _) = open("/dev/gpiochip7")
        guard case .failure(let e2) = byPath else { return XCTFail() }
        XCTAssertTrue(e2.message.hasPrefix("no GPIO chip with path '/dev/gpiochip7'"), e2.message)
    }

    func testNoChipsAtAllSaysSo() {
        let (result, _) = open("pinctrl-rp1", MemoryGpiod(chips: []))
        guard case .failure(let error) = result else { return XCTFail() }
        XCTAssertTrue(error.message.hasSuffix("this machine has no /dev/gpiochip* (no GPIO driver loaded)"), error.message)
    }

    func testPermissionDeniedSaysWhichGroup() {
        var chip = MemoryGpiod.pi5().state.withLock { $0.chips[0] }
        chip.openError = .permissionDenied
        let (result, _) = open("/dev/gpiochip0", MemoryGpiod(chips: [chip]))
        guard case .failure(let error) = result else { return XCTFail() }
        XCTAssertEqual(error.kind, .chipUnavailable)
        XCTAssertEqual(error.errno, .permissionDenied)
        XCTAssertTrue(error.message.contains("cannot open GPIO chip '/dev/gpiochip0' (--gpio-chip)"), error.message)
        XCTAssertTrue(error.message.hasSuffix("add the user to group gpio (see udev/)"), error.message)
        // The listing names the chip it could not open, with the reason.
        XCTAssertTrue(GPIOLookup.availableChipsText(MemoryGpiod(chips: [chip])).contains("gpiochip0 (cannot open:"))
    }

    func testLineByNameAndByOffset() throws {
        let gpiod = MemoryGpiod.pi5()
        let chip = try GPIOLookup.openChip("pinctrl-rp1", calls: gpiod).get()
        let byName = try GPIOLookup.findLine(.name("GPIO17"), on: chip, flag: "--led-green", calls: gpiod).get()
        let byOffset = try GPIOLookup.findLine(.offset(17), on: chip, flag: "--led-green", calls: gpiod).get()
        XCTAssertEqual(byName, byOffset)
        XCTAssertEqual(gpiod.lineName(byOffset), "GPIO17")
        XCTAssertEqual(GPIOLookup.lineTitle(.offset(17), line: byOffset, calls: gpiod), "GPIO17 (offset 17)")
    }

    func testUnknownLineNameListsTheLineNames() throws {
        let gpiod = MemoryGpiod.pi5()
        let chip = try GPIOLookup.openChip("pinctrl-rp1", calls: gpiod).get()
        guard case .failure(let error) = GPIOLookup.findLine(.name("GPIO99"), on: chip, flag: "--led-green", calls: gpiod)
        else { return XCTFail() }
        XCTAssertEqual(error.kind, .lineNotFound)
        let names = (0..<54).map { "GPIO\($0)" }.joined(separator: ", ")
        XCTAssertEqual(error.message,
                       "no such line GPIO99 on pinctrl-rp1 (gpiochip0) (--led-green): lines are \(names) (or give an offset 0-53)")
    }

    func testUnnamedLinesAndOffsetOutOfRange() throws {
        let gpiod = MemoryGpiod.pi5()
        let aux = try GPIOLookup.openChip("rp1-aux", calls: gpiod).get()
        guard case .failure(let e1) = GPIOLookup.findLine(.name("GPIO2"), on: aux, flag: "--buzzer", calls: gpiod)
        else { return XCTFail() }
        XCTAssertEqual(e1.message, "no such line GPIO2 on rp1-aux (gpiochip1) (--buzzer): its lines have no names; give an offset 0-3")
        guard case .failure(let e2) = GPIOLookup.findLine(.offset(4), on: aux, flag: "--buzzer", calls: gpiod)
        else { return XCTFail() }
        XCTAssertEqual(e2.message, "no line 4 on rp1-aux (gpiochip1) (--buzzer): it has 4 lines, offsets 0-3")
    }

    func testBusyLineNamesLineChipRoleAndHolder() throws {
        let gpiod = MemoryGpiod.pi5()
        gpiod.hold(chip: "gpiochip0", offset: 17, consumer: "gpioset")
        var settings = GPIOSettings()
        settings.chip = "pinctrl-rp1"
        settings.lines = [.green: .name("GPIO17"), .red: .offset(27)]
        let log = LogCapture()
        let outputs = GPIOOutputs(settings: settings, calls: gpiod, logger: log.logger, clock: FakeClock())
        XCTAssertEqual(outputs.openRoles, [.red], "the busy line does not stop the others")
        XCTAssertEqual(outputs.problems[.green]?.kind, .lineBusy)
        XCTAssertEqual(outputs.problems[.green]?.errno, .busy)
        XCTAssertEqual(outputs.problems[.green]?.message,
                       "green LED line GPIO17 on pinctrl-rp1 (gpiochip0) (--led-green) is busy: held by 'gpioset'; stop that program (gpioinfo pinctrl-rp1 shows who holds each line) or choose another line")
        XCTAssertTrue(log.all.contains(
            "<3>GPIO: green LED line GPIO17 on pinctrl-rp1 (gpiochip0) (--led-green) is busy: held by 'gpioset'; stop that program (gpioinfo pinctrl-rp1 shows who holds each line) or choose another line; scanning goes on without it, retrying every 5 s"),
            log.all.joined(separator: "\n"))
        XCTAssertEqual(gpiod.consumer(offset: 17), "gpioset", "the other consumer keeps its line")
        outputs.close()
    }

    func testTwoRolesOnOneLineIsAConflict() throws {
        var settings = GPIOSettings()
        settings.chip = "gpiochip0"
        settings.lines = [.green: .name("GPIO17"), .buzzer: .offset(17)]
        let gpiod = MemoryGpiod.pi5()
        let outputs = GPIOOutputs(settings: settings, calls: gpiod, logger: LogCapture().logger, clock: FakeClock())
        XCTAssertEqual(outputs.openRoles, [.green])
        XCTAssertEqual(outputs.problems[.buzzer]?.message,
                       "line GPIO17 (offset 17) on pinctrl-rp1 (gpiochip0) is given for both the green LED (--led-green) and the buzzer (--buzzer); each role needs its own line")
        XCTAssertEqual(gpiod.requests.count, 1, "one owner per line")
        outputs.close()
    }
}
