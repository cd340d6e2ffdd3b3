import GPIO
import MemoryGPIO
import Platform
import Settings
import XCTest

/// `LineRequest` over the one gpiod fake: the request owns its lines from request to release.
final class LineRequestTests: XCTestCase {
    func output(_ lines: [LineRequest.Line], initial: [Int32], activeLow: Bool = false) -> LineRequest.Config {
        LineRequest.Config(purpose: "test", lines: lines, direction: .output(initial: initial), activeLow: activeLow)
    }

    func testOutputsAreRequestedSetTogetherAndLeftInactiveOnRelease() throws {
        let chip = MemoryGpiod.pi5()
        let request = try LineRequest.request(chip: "pinctrl-rp1", calls: chip,
                                              output([.init(.name("GPIO5"), flag: "--a"), .init(.offset(6), flag: "--b")],
                                                     initial: [0, 1], activeLow: true)).get()
        XCTAssertEqual(request.title, "GPIO5, GPIO6 (offset 6) of pinctrl-rp1 (gpiochip0)")
        XCTAssertEqual(chip.requests, [.init(chip: "gpiochip0", offset: 5, consumer: "scangate", activeLow: true, initialValue: 0),
                                       .init(chip: "gpiochip0", offset: 6, consumer: "scangate", activeLow: true, initialValue: 1)])
        XCTAssertEqual([chip.physical(offset: 5), chip.physical(offset: 6)], [1, 0], "active-low: inactive is high")
        XCTAssertNoThrow(try request.setValues([1, 0]).get())
        XCTAssertEqual(chip.changes.last?.offsets, [5, 6], "one set for both lines")
        XCTAssertEqual(chip.changes.last?.physical, [0, 1])
        XCTAssertEqual(try request.getValue(0).get(), 1)
        XCTAssertNil(request.release())
        XCTAssertEqual(chip.changes.last?.values, [0, 0], "driven inactive before release")
        XCTAssertNil(chip.consumer(offset: 5))
        XCTAssertEqual(chip.openChipHandles, 1, "the request still holds its chip until it goes")
        guard case .failure(let e) = request.setValue(1) else { return XCTFail("set after release") }
        XCTAssertEqual(e, .noDevice)
    }

    func testDeinitReleasesTheLinesAndClosesTheChip() throws {
        let chip = MemoryGpiod.pi5()
        do {
            let request = try LineRequest.request(chip: "gpiochip0", calls: chip, output([.init(.offset(17), flag: "--x")], initial: [1])).get()
            XCTAssertEqual(chip.consumer(offset: 17), "scangate")
            _ = request
        }
        XCTAssertNil(chip.consumer(offset: 17))
        XCTAssertEqual(chip.physical(offset: 17), 0)
        XCTAssertEqual(chip.openChipHandles, 0)
    }

    func testTwoRequestsShareOneChipThatClosesWithTheLast() throws {
        let chip = MemoryGpiod.pi5()
        var open: GPIOChip? = try GPIOChip.open("pinctrl-rp1", calls: chip).get()
        var a: LineRequest? = try open?.request(output([.init(.offset(1), flag: "--a")], initial: [0])).get()
        let b: LineRequest? = try open?.request(output([.init(.offset(2), flag: "--b")], initial: [0])).get()
        open = nil
        a = nil
        XCTAssertEqual(chip.openChipHandles, 1)
        XCTAssertEqual(chip.consumer(offset: 2), "scangate")
        XCTAssertNil(a)
        _ = b
    }

    func testBusyNamesChipLineAndHolder() throws {
        let chip = MemoryGpiod.pi5()
        chip.hold(offset: 26, consumer: "gpioset")
        let result = LineRequest.request(chip: "pinctrl-rp1", calls: chip,
                                         LineRequest.Config(purpose: "door relay", lines: [.init(.name("GPIO26"), flag: "--door-relay")],
                                                            direction: .output(initial: [0])))
        guard case .failure(let error) = result else { return XCTFail("requested a held line") }
        XCTAssertEqual(error.kind, .lineBusy)
        XCTAssertEqual(error.message,
                       "door relay line GPIO26 on pinctrl-rp1 (gpiochip0) (--door-relay) is busy: held by 'gpioset'; stop that program (gpioinfo pinctrl-rp1 shows who holds each line) or choose another line")
        XCTAssertEqual(chip.consumer(offset: 26), "gpioset", "the holder keeps it")
        XCTAssertEqual(chip.openChipHandles, 0, "the chip is closed again")
    }

    func testTheSameLineTwiceInOneRequestIsRefused() throws {
        let chip = MemoryGpiod.pi5()
        let result = LineRequest.request(chip: "gpiochip0", calls: chip,
                                         output([.init(.name("GPIO5"), flag: "--a"), .init(.offset(5), flag: "--b")], initial: [0, 0]))
        guard case .failure(let error) = result else { return XCTFail("one line requested twice") }
        XCTAssertEqual(error.kind, .lineConflict)
        XCTAssertTrue(chip.requests.isEmpty)
    }

    func testEdgeEventsAreWaitedForAndRead() throws {
        let chip = MemoryGpiod.pi5()
        let open = try GPIOChip.open("gpiochip0", calls: chip).get()
        let input = LineRequest.Config(purpose: "input", lines: [.init(.offset(7), flag: "--in")], direction: .bothEdges, activeLow: true)
        let a = try open.request(input).get()
        var second = input
        second.lines = [.init(.offset(8), flag: "--in2")]
        let b = try open.request(second).get()
        XCTAssertEqual(try LineRequest.waitEdgeEvents([a, b], timeoutNanoseconds: 0).get(), [])
        chip.drive(offset: 8, physical: 1)
        XCTAssertEqual(try LineRequest.waitEdgeEvents([a, b], timeoutNanoseconds: 1_000_000_000).get(), [1])
        XCTAssertEqual(try b.readEdgeEvent().get().edge, .falling, "active-low: high is inactive")
        XCTAssertEqual(try b.getValue().get(), 0)
        XCTAssertEqual(try b.waitEdgeEvents(timeoutNanoseconds: 0).get(), false)
        b.release()
        XCTAssertNil(chip.consumer(offset: 8))
        XCTAssertEqual(chip.consumer(offset: 7), "scangate")
    }

    func testAVanishedChipFailsWithENODEV() throws {
        let chip = MemoryGpiod.pi5()
        let request = try LineRequest.request(chip: "gpiochip0", calls: chip, output([.init(.offset(3), flag: "--x")], initial: [0])).get()
        chip.setPresent(chip: "gpiochip0", false)
        guard case .failure(let e) = request.setValue(1) else { return XCTFail("set on a vanished chip") }
        XCTAssertTrue(e.meansDeviceGone)
    }
}
