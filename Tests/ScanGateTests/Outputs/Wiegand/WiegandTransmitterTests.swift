#if canImport(Glibc)
import Glibc
#endif
import Core
import Feedback
import GPIO
import MemoryGPIO
import Platform
import XCTest
import Wiegand
import Settings

/// The transmitter through the fake gpiod: what the wire carries (bit order, idle levels before and
/// after, never both lines low, whole frames one after another), closing mid-frame, lines that are busy,
/// missing or vanish. No timing assertions: the timing is measured in the bench and in HIL.
final class WiegandTransmitterTests: XCTestCase {
    static let d0 = 12, d1 = 13

    func settings(_ edit: (inout WiegandSettings) -> Void = { _ in }) -> WiegandSettings {
        var s = WiegandSettings()
        s.chip = MemoryGpiod.wiegandLabel
        s.d0 = .name("GPIO12")
        s.d1 = .name("GPIO13")
        s.facility = .fixed(90)
        s.pulseUs = 20
        s.intervalUs = 200
        s.frameGapMs = 50
        edit(&s)
        return s
    }

    func runtime(_ edit: (inout WiegandRuntime) -> Void = { _ in }) -> WiegandRuntime {
        var r = WiegandRuntime()
        r.realtime = false
        r.retryMs = 50
        r.stallLimitMs = 60_000   // only the stall tests (which inject the stall) use the real limit
        edit(&r)
        return r
    }

    func read(_ payload: String, credential: CredentialInfo? = nil) -> ReadEvent {
        let symbol = DecodedSymbol(symbology: .qr, data: Array(payload.utf8), bounds: Rect(x: 0, y: 0, w: 1, h: 1))
        return ReadEvent(seq: 1, wallTimeNanoseconds: 0, symbol: symbol, frame: 1, dequeuedAt: .now(), emittedAt: .now(),
                         credential: credential)
    }

    func testOneFrameBitOrderAndIdleBeforeAndAfter() throws {
        let chip = MemoryGpiod.wiegand()
        let out = try WiegandOutput(settings: settings(), logger: Logger(level: .error), feedback: nil, calls: chip,
                                    runtime: runtime())
        chip.countFrames(of: out)
        // Requested together, both idle (high), consumer scangate.
        XCTAssertEqual(chip.log.first, .requestOutputs(offsets: [Self.d0, Self.d1], physical: [1, 1], consumer: "scangate"))
        XCTAssertEqual(out.offer(read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        XCTAssertEqual(chip.frames(), ["00101101000000001010001000"], "bit 1 first, D0 low = 0, D1 low = 1")
        XCTAssertEqual(chip.wireSets.count, 52, "one set to start each pulse and one to end it")
        XCTAssertFalse(chip.wireSets.contains { $0.physical == [0, 0] }, "D0 and D1 low together")
        XCTAssertEqual(chip.wireSets.last?.physical, [1, 1])
        out.close(deadline: .now().adding(milliseconds: 2000))
        let log = chip.log
        XCTAssertEqual(Array(log.suffix(3)), [.set(offsets: [Self.d0, Self.d1], physical: [1, 1]),
                                              .releaseOutputs(offsets: [Self.d0, Self.d1]), .closeChip])
        XCTAssertNil(chip.consumer(Self.d0))
        XCTAssertEqual(chip.openHandles, 0)
        XCTAssertEqual(out.health.sent, 1)
    }

    func testActiveHighInvertsTheLevels() throws {
        let chip = MemoryGpiod.wiegand()
        let out = try WiegandOutput(settings: settings { $0.activeHigh = true }, logger: Logger(level: .error),
                                    feedback: nil, calls: chip, runtime: runtime())
        chip.countFrames(of: out)
        XCTAssertEqual(chip.log.first, .requestOutputs(offsets: [Self.d0, Self.d1], physical: [0, 0], consumer: "scangate"))
        XCTAssertEqual(out.offer(read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        out.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(chip.frames(activeHigh: true), ["00101101000000001010001000"])
        XCTAssertFalse(chip.wireSets.contains { $0.physical == [1, 1] })
        XCTAssertEqual(chip.wireSets.last?.physical, [0, 0], "left idle (low) for an inverting board")
    }

    func testTwoQueuedFramesAreSentWholeOneAfterTheOther() throws {
        let chip = MemoryGpiod.wiegand()
        let s = settings { $0.format = .h10304; $0.facility = .fixed(1); $0.frameGapMs = 300 }
        let out = try WiegandOutput(settings: s, logger: Logger(level: .error), feedback: nil, calls: chip, runtime: runtime())
        chip.countFrames(of: out)
        XCTAssertEqual(out.offer(read("516907")), .taken)
        XCTAssertEqual(out.offer(read("12345")), .taken, "queued while the first is on the wire")
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 10000))
        out.close(deadline: .now().adding(milliseconds: 2000))
        let a = try XCTUnwrap(WiegandFormat.h10304.encode(facility: 1, card: 516907)).description
        let b = try XCTUnwrap(WiegandFormat.h10304.encode(facility: 1, card: 12345)).description
        XCTAssertEqual(chip.frames(), [a, b])
        // The gap: from the last set of frame 1 to the first pulse of frame 2 (a lower bound the
        // transmitter guarantees, not a timing measurement).
        let sets = chip.wireSets
        let endOfFirst = sets[2 * 37 - 1].ns, startOfSecond = sets[2 * 37].ns
        XCTAssertGreaterThanOrEqual(Double(startOfSecond - endOfFirst) / 1e6, 300)
        XCTAssertEqual(out.health.sent, 2)
    }

    func testCloseMidFrameStopsAtABitBoundaryIdleAndNeverResumes() throws {
        let chip = MemoryGpiod.wiegand()
        // 64 bits 20 ms apart: 1.26 s on the wire; a second frame waits behind it.
        let s = settings { $0.format = .raw(bits: 64); $0.facility = .none; $0.intervalUs = 20000 }
        let logs = LogCapture()
        let out = try WiegandOutput(settings: s, logger: logs.logger, feedback: nil, calls: chip, runtime: runtime())
        XCTAssertEqual(out.offer(read("18446744073709551615")), .taken)
        XCTAssertEqual(out.offer(read("1")), .taken)
        XCTAssertTrue(waitUntil { chip.setCount >= 6 }, "three pulses on the wire")
        out.close(deadline: .now())
        let sets = chip.wireSets
        let pulses = sets.filter { $0.physical != [1, 1] }.count
        XCTAssertGreaterThanOrEqual(pulses, 3)
        XCTAssertLessThan(pulses, 64, "the frame was cut, not finished")
        // Every pulse ended (cut at a bit boundary), then close drove both lines idle once more.
        XCTAssertEqual(sets.count, 2 * pulses + 1)
        XCTAssertEqual(sets.suffix(2).map(\.physical), [[1, 1], [1, 1]])
        XCTAssertEqual(Array(chip.log.suffix(2)), [.releaseOutputs(offsets: [Self.d0, Self.d1]), .closeChip])
        XCTAssertTrue(logs.contains("cut after \(pulses) of 64 bits at close; the rest is dropped, never resumed"), "\(logs.all)")
        sleepThread(milliseconds: 100)
        XCTAssertEqual(chip.wireSets.count, sets.count, "nothing is sent after close")
        XCTAssertEqual(out.offer(read("1")), .refused(reason: "the Wiegand output is closing"))
        XCTAssertEqual(out.health.sent, 0)
        XCTAssertGreaterThanOrEqual(out.health.errors, 2, "the cut frame and the one behind it")
    }

    /// The stop deadline while a normal close is still draining (as at shutdown): forceInactive, from
    /// another thread, cuts the frame at a bit boundary; when it returns D0/D1 are idle and released.
    func testForceInactiveCutsTheFrameEvenWhileACloseIsDraining() throws {
        let chip = MemoryGpiod.wiegand()
        let s = settings { $0.format = .raw(bits: 64); $0.facility = .none; $0.intervalUs = 20000 }
        let logs = LogCapture()
        let out = try WiegandOutput(settings: s, logger: logs.logger, feedback: nil, calls: chip, runtime: runtime())
        XCTAssertEqual(out.offer(read("18446744073709551615")), .taken)
        XCTAssertTrue(waitUntil { chip.setCount >= 6 }, "three pulses on the wire")
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            out.close(deadline: .now().adding(milliseconds: 10_000))   // would let the whole frame finish
            closed.signal()
        }
        // The close is under way once the output refuses new reads as closing.
        XCTAssertTrue(waitUntil { out.offer(self.read("1")) == .refused(reason: "the Wiegand output is closing") })
        (out as LineHolder).forceInactive()
        XCTAssertEqual(Array(chip.log.suffix(2)), [.releaseOutputs(offsets: [Self.d0, Self.d1]), .closeChip],
                       "released by the time forceInactive returns")
        let sets = chip.wireSets
        let pulses = sets.filter { $0.physical != [1, 1] }.count
        XCTAssertLessThan(pulses, 64, "the frame was cut, not finished")
        XCTAssertEqual(sets.last?.physical, [1, 1], "left idle")
        XCTAssertTrue(logs.contains("cut after \(pulses) of 64 bits"), "\(logs.all)")
        XCTAssertEqual(closed.wait(timeout: .now() + 10), .success, "the draining close returns too")
        XCTAssertEqual(out.offer(read("1")), .refused(reason: "the Wiegand output is closing"))
    }

    func testRefusedReadsSendNothing() throws {
        let chip = MemoryGpiod.wiegand()
        let out = try WiegandOutput(settings: settings(), logger: Logger(level: .error), feedback: nil, calls: chip,
                                    runtime: runtime())
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        for payload in ["65536", String(repeating: "7", count: 10_000), "12x", "", "99999999999999999999"] {
            guard case .refused(let reason) = out.offer(read(payload)) else { return XCTFail("\(payload.prefix(20)) was taken") }
            XCTAssertFalse(reason.isEmpty)
        }
        XCTAssertEqual(out.offer(read("65536")), .refused(reason:
            "card number 65536 is out of range for wiegand-format 26 (H10301): 0-65535 (wiegand-over-range = refuse)"))
        sleepThread(milliseconds: 20)
        XCTAssertEqual(chip.setCount, 0, "nothing half-sent")
        XCTAssertEqual(out.health.errors, 6)
        XCTAssertEqual(out.health.state, .ok)
    }

    func testQueueFullIsRefused() throws {
        let chip = MemoryGpiod.wiegand()
        let out = try WiegandOutput(settings: settings { $0.intervalUs = 20000 }, logger: Logger(level: .error),
                                    feedback: nil, calls: chip, runtime: runtime { $0.queueCapacity = 2 })
        defer { out.close(deadline: .now()) }
        XCTAssertEqual(out.offer(read("1")), .taken)
        XCTAssertEqual(out.offer(read("2")), .taken)
        XCTAssertEqual(out.offer(read("3")), .refused(reason: "Wiegand queue full (2 frames waiting)"))
    }

    func testABusyLineIsLoggedWithTheFixAndRetried() throws {
        let chip = MemoryGpiod.wiegand()
        chip.hold(Self.d1, by: "gpioset")
        let logs = LogCapture()
        let out = try WiegandOutput(settings: settings(), logger: logs.logger, feedback: nil, calls: chip, runtime: runtime())
        chip.countFrames(of: out)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        let busy = "Wiegand D0/D1 lines GPIO12, GPIO13 on scangate-sim (gpiochip0) (--wiegand-d0, --wiegand-d1) are busy: GPIO13 held by 'gpioset'; stop that program (gpioinfo scangate-sim shows who holds each line) or choose another line"
        XCTAssertTrue(logs.contains(busy), "\(logs.all)")
        XCTAssertTrue(logs.contains("retrying every 50 ms"))
        XCTAssertEqual(out.offer(read("324")), .refused(reason: "Wiegand lines not available: \(busy)"))
        XCTAssertEqual(out.health.state, .down)
        chip.free(Self.d1)
        XCTAssertTrue(waitUntil { out.offer(read("324")) == .taken }, "taken once the line is free")
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        XCTAssertEqual(chip.frames(), ["00101101000000001010001000"])
        XCTAssertTrue(logs.contains("(available again)"))
        XCTAssertEqual(out.health.state, .ok)
    }

    func testAMissingLineOrChipSaysWhatThereIs() throws {
        let chip = MemoryGpiod.wiegand()
        let logs = LogCapture()
        let out = try WiegandOutput(settings: settings { $0.d1 = .name("GPIO99") }, logger: logs.logger, feedback: nil,
                                    calls: chip, runtime: runtime())
        out.close(deadline: .now())
        XCTAssertTrue(logs.contains("no such line GPIO99 on scangate-sim (gpiochip0) (--wiegand-d1): lines are GPIO0, GPIO1,"), "\(logs.all)")
        let logs2 = LogCapture()
        let out2 = try WiegandOutput(settings: settings { $0.chip = "pinctrl-rp1" }, logger: logs2.logger, feedback: nil,
                                     calls: chip, runtime: runtime())
        out2.close(deadline: .now())
        XCTAssertTrue(logs2.contains("no GPIO chip with label 'pinctrl-rp1'"), "\(logs2.all)")
        XCTAssertTrue(logs2.contains("chips here: gpiochip0 [scangate-sim] (32 lines)"), "\(logs2.all)")
        XCTAssertEqual(chip.openHandles, 0, "every failed attempt closed its chip handle")
    }

    func testALineThatFailsMidFrameDropsTheFrameAndTheChipIsReopened() throws {
        let chip = MemoryGpiod.wiegand()
        let logs = LogCapture()
        let out = try WiegandOutput(settings: settings { $0.frameGapMs = 300 }, logger: logs.logger, feedback: nil,
                                    calls: chip, runtime: runtime())
        chip.countFrames(of: out)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        chip.failSets(after: 10, with: .noDevice)
        XCTAssertEqual(out.offer(read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        XCTAssertTrue(logs.contains("a line failed after 5 of 26 bits: No such device (ENODEV); the frame is dropped, never resumed"),
                      "\(logs.all)")
        XCTAssertTrue(logs.contains("Wiegand: lost the lines"))
        chip.state.withLock { $0.failSetsAfter = nil }
        XCTAssertTrue(waitUntil { out.offer(read("1")) == .taken }, "the lines come back after the retry")
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        let frames = chip.frames()
        XCTAssertEqual(frames.first, "00101", "the cut frame: 5 bits, never resumed")
        let sets = chip.wireSets
        XCTAssertGreaterThanOrEqual(Double(sets[10].ns - sets[9].ns) / 1e6, 300, "a frame gap after the cut frame too")
        XCTAssertEqual(frames.last, WiegandFormat.h10301.encode(facility: 90, card: 1)?.description)
        XCTAssertEqual(frames.count, 2)
    }

    func testAStallLongerThanAPanelWaitsEndsTheFrame() throws {
        let chip = MemoryGpiod.wiegand()
        let logs = LogCapture()
        let out = try WiegandOutput(settings: settings { $0.frameGapMs = 300 }, logger: logs.logger, feedback: nil,
                                    calls: chip, runtime: runtime { $0.stallLimitMs = nil })
        chip.countFrames(of: out)
        defer { out.close(deadline: .now().adding(milliseconds: 1000)) }
        // The set that starts bit 4 hangs 30 ms: bit 5 would start 30 ms after bit 4 (a panel has ended
        // the frame by then), so it is not sent.
        chip.delaySet(after: 6, milliseconds: 30)
        XCTAssertEqual(out.offer(read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        XCTAssertEqual(chip.frames(), ["0010"])
        XCTAssertTrue(logs.contains("after 4 of 26 bits (longer than a panel waits between bits); the rest is not sent"), "\(logs.all)")
        XCTAssertEqual(out.health.sent, 0)
        XCTAssertEqual(chip.wireSets.last?.physical, [1, 1])
    }

    func testRealtimeSetUpIsReportedOnce() throws {
        let chip = MemoryGpiod.wiegand()
        let logs = LogCapture()
        let out = try WiegandOutput(settings: settings(), logger: logs.logger, feedback: nil, calls: chip,
                                    runtime: runtime { $0.realtime = true })
        chip.countFrames(of: out)
        XCTAssertEqual(out.offer(read("324")), .taken)
        XCTAssertTrue(out.waitUntilSent(timeoutMs: 5000))
        out.close(deadline: .now().adding(milliseconds: 1000))
        let lines = logs.all.filter { $0.contains("transmitter runs with") }
        XCTAssertEqual(lines.count, 1, "\(logs.all)")
        // Either granted or refused, it says which and runs anyway.
        let line = try XCTUnwrap(lines.first)
        XCTAssertTrue(line.contains("SCHED_FIFO priority") || line.contains("no real-time scheduling"), line)
        XCTAssertTrue(line.contains("memory locked") || line.contains("memory not locked"), line)
        // glibc takes both allocator settings: the decoder's freed buffers stay in the process. Under
        // AddressSanitizer its own allocator stands in for glibc's and refuses mallopt: the line says so.
        if dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil {
            XCTAssertTrue(line.contains("freed memory not kept (glibc refused mallopt)"), line)
        } else {
            XCTAssertTrue(line.contains("freed memory kept (no heap trimming, blocks up to 32 MiB from the heap)"), line)
        }
        XCTAssertTrue(out.health.detail.contains(line.components(separatedBy: "transmitter runs with ").last?
            .components(separatedBy: "; pulses").first ?? "?"), out.health.detail)
        XCTAssertEqual(chip.frames(), ["00101101000000001010001000"])
    }
}
