import Core
@testable import DoorRelay
import GPIO
import MemoryGPIO
import Platform
import Settings
import XCTest

/// The door relay driven by a panel (`command`, from OSDP osdp_OUT) on the libgpiod fake: timed and
/// permanent states, how they combine with read pulses, door-relay-driver = panel, and inactive after
/// forceInactive and close whatever the panel asked. Timings are bounded generously, never exact.
final class DoorRelayOutputTests: XCTestCase {
    let log = LogCapture()

    func relay(_ fake: MemoryGpiod, ms: Int = 100, driver: DoorRelayDriver = .reads) throws -> DoorRelayOutput {
        var s = DoorRelaySettings()
        s.line = .name("GPIO26")
        s.chip = "pinctrl-rp1"
        s.pulseMs = ms
        s.driver = driver
        return try DoorRelayOutput(settings: s, logger: log.logger, calls: fake, runtime: DoorRelayRuntime())
    }

    func read() -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                  symbol: DecodedSymbol(symbology: .qr, data: Array("4711".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                  frame: 1, dequeuedAt: .now(), emittedAt: .now(), verdict: .accepted)
    }

    func levels(_ fake: MemoryGpiod) -> [Int32] { fake.sets.filter { $0.offset == 26 }.map(\.value) }

    func testATemporaryOnPulsesForAboutItsTimeThenTheLineIsInactive() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake)
        XCTAssertEqual(fake.physical(offset: 26), 0, "idle at start")
        let start = MonotonicInstant.now()
        XCTAssertEqual(r.command(.temporary(on: true, milliseconds: 300)), .taken)
        waitUntil(failure: "the relay was not energised") { fake.physical(offset: 26) == 1 }
        XCTAssertTrue(r.isActive)
        waitUntil(failure: "the timed state did not end") { fake.physical(offset: 26) == 0 }
        let took = MonotonicInstant.now().milliseconds(since: start)
        XCTAssertGreaterThanOrEqual(took, 290, "released early")
        XCTAssertLessThan(took, 3000)
        XCTAssertEqual(levels(fake), [1, 0])
        XCTAssertFalse(r.isActive)
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
    }

    func testPermanentOnStaysOnUntilOffAndTimedStatesReturnToIt() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake)
        XCTAssertEqual(r.command(.permanent(on: true, abortTimed: true)), .taken)
        waitUntil(failure: "permanent ON did not energise the relay") { fake.physical(offset: 26) == 1 }
        XCTAssertFalse(r.waitUntilIdle(timeoutMs: 300), "permanent ON holds")
        XCTAssertEqual(fake.physical(offset: 26), 1)
        // A temporary OFF, then back to the permanent ON.
        XCTAssertEqual(r.command(.temporary(on: false, milliseconds: 200)), .taken)
        waitUntil(failure: "the temporary OFF did not release it") { fake.physical(offset: 26) == 0 }
        waitUntil(failure: "the permanent ON did not come back") { fake.physical(offset: 26) == 1 }
        // Permanent OFF allowing a timed state: the temporary ON runs out first.
        XCTAssertEqual(r.command(.temporary(on: true, milliseconds: 300)), .taken)
        XCTAssertEqual(r.command(.permanent(on: false, abortTimed: false)), .taken)
        XCTAssertEqual(fake.physical(offset: 26), 1, "the timed state runs on")
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
        // Permanent OFF aborting a timed state: released at once.
        XCTAssertEqual(r.command(.temporary(on: true, milliseconds: 60_000)), .taken)
        waitUntil(failure: "not energised") { fake.physical(offset: 26) == 1 }
        XCTAssertEqual(r.command(.permanent(on: false, abortTimed: true)), .taken)
        waitUntil(2, failure: "permanent OFF did not abort the timed state") { fake.physical(offset: 26) == 0 }
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
    }

    func testWithDriverPanelReadsNoLongerPulseTheRelay() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, driver: .panel)
        guard case .refused(let reason) = r.offer(read()) else { return XCTFail("a read pulsed a panel-driven relay") }
        XCTAssertTrue(reason.contains("door-relay-driver = panel"), reason)
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 200))
        XCTAssertEqual(levels(fake), [], "never energised")
        XCTAssertEqual(r.command(.temporary(on: true, milliseconds: 100)), .taken)
        waitUntil(failure: "the panel could not drive it") { fake.physical(offset: 26) == 1 }
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        r.close(deadline: .now().adding(milliseconds: 1000))
    }

    func testWithDriverReadsAPanelOffDoesNotCutAReadPulseShort() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, ms: 400)
        XCTAssertEqual(r.offer(read()), .taken)
        waitUntil(failure: "the read did not pulse the relay") { fake.physical(offset: 26) == 1 }
        XCTAssertEqual(r.command(.permanent(on: false, abortTimed: true)), .taken)
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(levels(fake), [1, 0], "one pulse, released at its end")
        r.close(deadline: .now().adding(milliseconds: 1000))
    }

    func testForceInactiveAndCloseEndAPermanentOnForGood() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake)
        XCTAssertEqual(r.command(.permanent(on: true, abortTimed: true)), .taken)
        waitUntil(failure: "not energised") { fake.physical(offset: 26) == 1 }
        r.forceInactive()
        XCTAssertEqual(fake.physical(offset: 26), 0, "forced inactive")
        guard case .refused = r.command(.permanent(on: true, abortTimed: true)) else { return XCTFail("driven after forceInactive") }
        XCTAssertFalse(waitUntil(0.3) { fake.physical(offset: 26) == 1 }, "driven active again after forceInactive")
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 0)

        let fake2 = MemoryGpiod.pi5()
        let r2 = try relay(fake2)
        XCTAssertEqual(r2.command(.temporary(on: true, milliseconds: 60_000)), .taken)
        waitUntil(failure: "not energised") { fake2.physical(offset: 26) == 1 }
        r2.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake2.physical(offset: 26), 0, "close mid-command leaves it inactive")
        guard case .refused = r2.command(.permanent(on: true, abortTimed: true)) else { return XCTFail("driven after close") }
    }

    func testTheSlotReachesTheRelayAndForgetsItWhenGone() throws {
        let slot = PanelRelaySlot()
        guard case .refused(let reason) = slot.command(.permanent(on: true, abortTimed: true)) else { return XCTFail() }
        XCTAssertEqual(reason, "no door relay is configured")
        XCTAssertFalse(slot.isActive)
        let fake = MemoryGpiod.pi5()
        do {
            let r = try relay(fake)
            slot.attach(r)
            XCTAssertEqual(slot.command(.temporary(on: true, milliseconds: 200)), .taken)
            waitUntil(failure: "not energised through the slot") { slot.isActive }
            r.close(deadline: .now().adding(milliseconds: 1000))
        }
        XCTAssertEqual(fake.physical(offset: 26), 0)
        XCTAssertFalse(slot.isActive)
    }

    func testDriverPanelNeedsAnOSDPPanel() throws {
        var run = RunSettings()
        run.doorRelay.line = .name("GPIO26")
        run.doorRelay.chip = "pinctrl-rp1"
        run.doorRelay.driver = .panel
        XCTAssertThrowsError(try DoorRelayOutput.validate(run)) { error in
            XCTAssertTrue("\(error)".contains("door-relay-driver = panel needs an OSDP panel"), "\(error)")
        }
        run.doorRelay.driver = .reads
        XCTAssertNoThrow(try DoorRelayOutput.validate(run))
    }
}
