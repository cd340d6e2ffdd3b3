import Catalog
import Components
import Config
import Core
@testable import Credentials
@testable import DoorRelay
import Feedback
import GPIO
import MemoryGPIO
import Pipeline
import Platform
import Policies
import Settings
import XCTest

/// The door relay on the libgpiod fake (MemoryGpiod models requests, active-low and the physical level on
/// the pin): idle at start and after close, one pulse per accepted read, never one for a refused read,
/// inactive after close or forceInactive mid-pulse, a busy line refused and retried, validation, doctor.
final class DoorRelayTests: XCTestCase {
    let log = LogCapture()

    func settings(_ line: GPIOLineSpec = .name("GPIO26"), ms: Int = 100, activeLow: Bool = false) -> DoorRelaySettings {
        var s = DoorRelaySettings()
        s.line = line
        s.chip = "pinctrl-rp1"
        s.pulseMs = ms
        s.activeLow = activeLow
        return s
    }

    func relay(_ fake: MemoryGpiod, _ s: DoorRelaySettings, retryMs: Double = 5000) throws -> DoorRelayOutput {
        var runtime = DoorRelayRuntime()
        runtime.retryMs = retryMs
        return try DoorRelayOutput(settings: s, logger: log.logger, calls: fake, runtime: runtime)
    }

    func read(_ verdict: Verdict = .accepted, emittedAt: MonotonicInstant = .now()) -> ReadEvent {
        ReadEvent(seq: 1, wallTimeNanoseconds: WallClock.nowNanoseconds(),
                  symbol: DecodedSymbol(symbology: .qr, data: Array("4711".utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
                  frame: 1, dequeuedAt: emittedAt, emittedAt: emittedAt, verdict: verdict)
    }

    /// The levels the fake saw set on line `offset` (logical values), in order.
    func levels(_ fake: MemoryGpiod, _ offset: Int = 26) -> [Int32] {
        fake.sets.filter { $0.offset == offset }.map(\.value)
    }

    func testIdleAtStartOnePulsePerAcceptedReadIdleAfterClose() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings())
        XCTAssertEqual(fake.requests, [.init(chip: "gpiochip0", offset: 26, consumer: "scangate", activeLow: false, initialValue: 0)])
        XCTAssertEqual(fake.physical(offset: 26), 0, "requested inactive: the door stays shut at start")
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { fake.physical(offset: 26) == 1 }, "the relay was not energised")
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
        XCTAssertEqual(levels(fake), [1, 0], "one pulse")
        XCTAssertEqual(r.health.sent, 1)
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
        XCTAssertNil(fake.consumer(offset: 26), "released at close")
        XCTAssertEqual(fake.openChipHandles, 0, "chip closed")
        XCTAssertEqual(levels(fake).last, 0)
    }

    func testActiveLowIdlesHighAndPullsLow() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings(activeLow: true))
        XCTAssertEqual(fake.requests.first?.activeLow, true)
        XCTAssertEqual(fake.physical(offset: 26), 1, "active-low idles high")
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { fake.physical(offset: 26) == 0 }, "the relay was not pulled low")
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(fake.physical(offset: 26), 1)
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 1, "left high (inactive) at close")
    }

    func testAReadDuringAPulseExtendsItAndDoesNotPulseTwice() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings(ms: 400))
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { r.isActive })
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(levels(fake), [1, 0], "one longer pulse, not two")
        r.close(deadline: .now().adding(milliseconds: 1000))
    }

    func testRefusedReadNeverPulses() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings())
        XCTAssertEqual(r.offer(read(.rejected(reason: "expired"))), .refused(reason: "the read was rejected"))
        // A read that is already old (a decode queue held up) is not a reason to open the door late.
        let old = read(emittedAt: MonotonicInstant.now().adding(milliseconds: -2500))
        guard case .refused(let why) = r.offer(old) else { return XCTFail("an old read was taken") }
        XCTAssertTrue(why.contains("not opened late"), why)
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertFalse(levels(fake).contains(1), "the relay was energised: \(levels(fake))")
    }

    func testOnlyPassesThePoliciesAcceptedPulseTheRelay() throws {
        // The dispatcher as the daemon builds it: the credential policy, then the relay as a door output.
        let (key, publicKey) = try CredentialFixtures.keyPair(.ed25519, kid: "site")
        var credential = CredentialFixtures.settings(.cwt)
        credential.requireSyncedClock = false
        let policy = CredentialPolicy(settings: credential, keys: CredentialKeySet(keys: [publicKey], source: "test"), store: nil,
                                      clock: ClockSync.fixed(true), logger: log.logger)
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings())
        let dispatcher = ReadDispatcher(policies: [policy], doors: [r])
        func event(_ payload: String) -> ReadEvent { CredentialFixtures.event(Array(payload.utf8)) }
        let now = CredentialFixtures.now
        let expired = try PassIssuer.issue(PassRequest(format: .cwt, number: "1", lifetimeSeconds: 60, keyID: "site", now: now - 3600), key: key)
        let foreign = try PassIssuer.issue(PassRequest(format: .cwt, number: "2", lifetimeSeconds: 60, keyID: "site", now: now),
                                           key: try PrivateKey.generate(.ed25519))
        for refused in [expired, foreign, "HELLO"] {
            let out = dispatcher.dispatch(event(refused))
            XCTAssertFalse(out.verdict.isAccepted)
            XCTAssertTrue(out.outputs.isEmpty, "a refused read was offered to a door output")
        }
        XCTAssertFalse(levels(fake).contains(1), "the relay was energised for a refused pass")
        let valid = try PassIssuer.issue(PassRequest(format: .cwt, number: "4711", lifetimeSeconds: 60, keyID: "site", now: now), key: key)
        let out = dispatcher.dispatch(event(valid))
        XCTAssertEqual(out.outputs, [OutputVerdict(output: "door-relay", offer: .taken)])
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(levels(fake), [1, 0], "one pulse for the accepted pass")
        r.close(deadline: .now().adding(milliseconds: 1000))
    }

    func testCloseMidPulseShutsTheDoorAndReleases() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings(ms: 60_000))
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { fake.physical(offset: 26) == 1 })
        r.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
        XCTAssertNil(fake.consumer(offset: 26))
        XCTAssertEqual(levels(fake), [1, 0])
        XCTAssertEqual(r.offer(read()), .refused(reason: "the door relay is closing"))
    }

    func testForceInactiveFromAnotherThreadMidPulse() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings(ms: 60_000, activeLow: true))
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { fake.physical(offset: 26) == 0 })
        let done = DispatchSemaphore(value: 0)
        let thread = try PosixThread(name: "test-force") { r.forceInactive(); done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success)
        thread.join()
        XCTAssertEqual(fake.physical(offset: 26), 1, "forceInactive left the active-low relay energised")
        // It stays inactive: a later read does not energise it again.
        _ = r.offer(read())
        XCTAssertFalse(waitUntil(0.3) { fake.physical(offset: 26) == 0 })
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 1)
        XCTAssertNil(fake.consumer(offset: 26))
    }

    func testBusyLineIsRefusedAndRetried() throws {
        let fake = MemoryGpiod.pi5()
        fake.hold(chip: "gpiochip0", offset: 26, consumer: "gpioset")
        let r = try relay(fake, settings(), retryMs: 50)
        guard case .refused(let why) = r.offer(read()) else { return XCTFail("taken without a line") }
        XCTAssertTrue(why.contains("busy") && why.contains("gpioset") && why.contains("--door-relay"), why)
        XCTAssertEqual(r.health.state, .down)
        XCTAssertTrue(log.all.contains { $0.contains("door relay:") && $0.contains("busy") }, "\(log.all)")
        fake.free(chip: "gpiochip0", offset: 26)
        XCTAssertTrue(waitUntil { r.health.state == .ok }, "the line was not retried")
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(r.waitUntilIdle(timeoutMs: 5000))
        XCTAssertEqual(levels(fake), [1, 0])
        r.close(deadline: .now().adding(milliseconds: 1000))
    }

    func testChipGoneMidPulseIsReportedAndReopened() throws {
        let fake = MemoryGpiod.pi5()
        let r = try relay(fake, settings(ms: 300), retryMs: 50)
        fake.setPresent(chip: "gpiochip0", false)
        XCTAssertEqual(r.offer(read()), .taken)
        XCTAssertTrue(waitUntil { r.health.state == .down }, "a failed set was not noticed")
        XCTAssertTrue(log.all.contains { $0.contains("cannot drive door relay line") }, "\(log.all)")
        fake.setPresent(chip: "gpiochip0", true)
        XCTAssertTrue(waitUntil { r.health.state == .ok })
        r.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(fake.physical(offset: 26), 0)
    }

    // MARK: settings, validation, registration, doctor

    func run(_ flags: [String]) throws -> RunSettings {
        try Configuration.resolve(configPath: nil, flagAssignments: flags.map { flag in
            let parts = flag.split(separator: "=", maxSplits: 1).map(String.init)
            return (OptionTable.find(parts[0])!, parts.count > 1 ? parts[1] : "true")
        })
    }

    func validationError(_ flags: [String]) -> String? {
        do {
            // The section's own checks and the catalogue's one owner per line, lines compared as written.
            try Catalog.check(try run(flags), gpiod: nil)
            return nil
        } catch {
            return (error as? UsageError)?.message ?? "\(error)"
        }
    }

    func testValidationNamesTheOptions() throws {
        XCTAssertNil(validationError(["gpio-chip=pinctrl-rp1", "door-relay=GPIO26"]))
        XCTAssertEqual(try run(["gpio-chip=pinctrl-rp1", "door-relay=GPIO26"]).effectiveDoorRelay.chip, "pinctrl-rp1",
                       "door-relay-chip defaults to gpio-chip")
        XCTAssertEqual(try run([]).doorRelay.pulseMs, 3000)
        let noChip = try XCTUnwrap(validationError(["door-relay=GPIO26"]))
        XCTAssertTrue(noChip.contains("--door-relay-chip") && noChip.contains("--gpio-chip"), noChip)
        let led = try XCTUnwrap(validationError(["gpio-chip=pinctrl-rp1", "led-green=GPIO26", "door-relay=GPIO26"]))
        XCTAssertEqual(led, "[gpio] led-green: line GPIO26 on pinctrl-rp1 is also claimed by [door-relay] door-relay; each GPIO line needs one owner")
        let buzzer = try XCTUnwrap(validationError(["gpio-chip=pinctrl-rp1", "buzzer=22", "door-relay=22"]))
        XCTAssertTrue(buzzer.contains("[gpio] buzzer"), buzzer)
        let wiegand = try XCTUnwrap(validationError(["gpio-chip=pinctrl-rp1", "wiegand-d0=GPIO5", "wiegand-d1=GPIO6", "door-relay=GPIO6"]))
        XCTAssertEqual(wiegand, "[door-relay] door-relay: line GPIO6 on pinctrl-rp1 is also claimed by [wiegand] wiegand-d1; each GPIO line needs one owner")
        // The same offset on another chip is another line.
        XCTAssertNil(validationError(["gpio-chip=pinctrl-rp1", "led-green=GPIO26", "door-relay=GPIO26", "door-relay-chip=rp1-aux"]))
        XCTAssertThrowsError(try run(["door-relay-ms=50"])) { error in
            XCTAssertTrue("\(error)".contains("door-relay-ms"), "\(error)")
        }
        XCTAssertThrowsError(try run(["door-relay=GPIO 26"]))
    }

    func testRegisteredInTheCatalogWithItsOptionsAndDoctorSwitch() throws {
        let component = try XCTUnwrap(Catalog.components().first { $0.name == "door-relay" })
        XCTAssertEqual(component.options.map(\.name), ["door-relay", "door-relay-chip", "door-relay-ms", "door-relay-active-low", "door-relay-driver"])
        XCTAssertEqual(component.doctorFlags.map(\.name), ["test-relay"])
        for option in component.options { XCTAssertNotNil(OptionTable.find(option.name)) }
        guard case .output(let factory) = component.role else { return XCTFail("not an output") }
        XCTAssertFalse(factory.isConfigured(try run([])))
        XCTAssertTrue(factory.isConfigured(try run(["gpio-chip=pinctrl-rp1", "door-relay=GPIO26"])))
        XCTAssertThrowsError(try Catalog.check(try run(["gpio-chip=pinctrl-rp1", "led-red=GPIO26", "door-relay=GPIO26"]), gpiod: nil))
    }

    func doctor(_ fake: MemoryGpiod, _ flags: [String], switches: Set<String> = []) throws -> [DoctorRow] {
        let component = try XCTUnwrap(Catalog.components(DeviceSeams(gpiod: fake)).first { $0.name == "door-relay" })
        var options = DoctorOptions()
        options.switches = switches
        return component.doctor(try run(flags), DoctorContext(options: options, logger: log.logger))
    }

    func testDoctorRequestsTheLineAndPulsesItOnceWithTestRelay() throws {
        let fake = MemoryGpiod.pi5()
        let flags = ["gpio-chip=pinctrl-rp1", "door-relay=GPIO26", "door-relay-ms=150", "door-relay-active-low"]
        let rows = try doctor(fake, flags)
        XCTAssertEqual(rows.map(\.result), [.pass], "\(rows)")
        XCTAssertTrue(rows[0].detail.contains("GPIO26") && rows[0].detail.contains("idle high"), rows[0].detail)
        XCTAssertTrue(rows[0].detail.contains("every code read opens the door"), "no signed passes, no filter: \(rows[0].detail)")
        let guarded = try doctor(fake, flags + ["credential-format=cwt", "credential-keys=/etc/scangate/keys.jwks"])
        XCTAssertFalse(guarded[0].detail.contains("opens the door"), guarded[0].detail)
        XCTAssertEqual(levels(fake), [0, 0], "doctor without --test-relay must not energise the relay")
        XCTAssertNil(fake.consumer(offset: 26))

        let pulsed = try doctor(fake, flags, switches: ["test-relay"])
        XCTAssertEqual(pulsed.map(\.check), ["door-relay line", "door-relay pulse"])
        XCTAssertEqual(pulsed.map(\.result), [.pass, .pass], "\(pulsed)")
        XCTAssertEqual(levels(fake), [0, 0, 1, 0, 0], "one pulse, then inactive at release")
        XCTAssertEqual(fake.physical(offset: 26), 1)
        XCTAssertNil(fake.consumer(offset: 26))

        fake.hold(chip: "gpiochip0", offset: 26, consumer: "gpioset")
        let busy = try doctor(fake, flags, switches: ["test-relay"])
        XCTAssertEqual(busy.map(\.result), [.fail])
        XCTAssertTrue(busy[0].detail.contains("busy") && busy[0].fix.contains("gpioinfo"), "\(busy)")
        XCTAssertEqual(try doctor(fake, ["gpio-chip=pinctrl-rp1"]), [], "no rows when no relay is configured")
    }
}
