#if canImport(Glibc)
import Glibc
#endif
import Platform
import XCTest
@testable import Core
@testable import Serial
import SerialLine
import Settings

/// A clock the test moves; the fake serial calls move it while they "wait".
final class SerialFakeClock: Sendable {
    private let nanoseconds = PosixMutex<UInt64>(10_000_000_000_000)
    func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: nanoseconds.withLock { $0 }) }
    func advance(milliseconds: Double) { nanoseconds.withLock { $0 += UInt64(milliseconds * 1e6) } }
}

/// The serial calls, faked: a port that can be missing, stuck (no room; each poll lets its timeout pass
/// on the fake clock) or failing, and that records what was written.
final class FakeSerialSystem: SerialSystemCalls {
    struct State {
        /// Errors for the next opens, in order; then opens succeed (unless `openAlwaysFails`).
        var openFailures: [Errno] = []
        var openAlwaysFails: Errno?
        /// Errors for the next writes, in order.
        var writeFailures: [Errno] = []
        /// Errors for the next TIOCOUTQ calls (the wait for transmission), in order.
        var outputQueueFailures: [Errno] = []
        /// No room: writes return EAGAIN and polls time out.
        var stuck = false
        var written: [UInt8] = []
        var attributes: termios?
        var opens = 0
        var closes = 0
        var discards = 0
        var rs485 = 0
        var open: Set<Int32> = []
        var nextFd: Int32 = 100
    }

    let state = PosixMutex(State())
    let clock: SerialFakeClock?

    init(clock: SerialFakeClock? = nil) { self.clock = clock }

    func update(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }
    var written: [UInt8] { state.withLock { $0.written } }
    var lastAttributes: termios? { state.withLock { $0.attributes } }
    var closedCount: Int { state.withLock { $0.closes } }

    func open(_ path: String, flags: Int32) -> Result<Int32, Errno> {
        state.withLock { s in
            s.opens += 1
            if !s.openFailures.isEmpty { return .failure(s.openFailures.removeFirst()) }
            if let e = s.openAlwaysFails { return .failure(e) }
            s.nextFd += 1
            s.open.insert(s.nextFd)
            return .success(s.nextFd)
        }
    }

    func getAttributes(_ fd: Int32) -> Result<termios, Errno> {
        .success(state.withLock { $0.attributes } ?? termios())
    }

    func setAttributes(_ fd: Int32, _ attributes: termios) -> Result<Void, Errno> {
        state.withLock { $0.attributes = attributes }
        return .success(())
    }

    func enableRS485(_ fd: Int32) -> Result<Void, Errno> {
        state.withLock { $0.rs485 += 1 }
        return .success(())
    }

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        state.withLock { s in
            if !s.writeFailures.isEmpty { return .failure(s.writeFailures.removeFirst()) }
            if s.stuck { return .failure(.wouldBlock) }
            s.written += bytes
            return .success(bytes.count)
        }
    }

    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        if state.withLock({ $0.stuck }) {
            // The wait passes on the fake clock, or (without one) in real time like a real poll.
            if let clock { clock.advance(milliseconds: Double(timeoutMilliseconds)) }
            else { sleepThread(milliseconds: Double(timeoutMilliseconds)) }
            return .success(0)
        }
        return .success(events)
    }

    func outputQueueLength(_ fd: Int32) -> Result<Int, Errno> {
        state.withLock { s in
            s.outputQueueFailures.isEmpty ? .success(0) : .failure(s.outputQueueFailures.removeFirst())
        }
    }

    func discardOutput(_ fd: Int32) -> Result<Void, Errno> {
        state.withLock { $0.discards += 1 }
        return .success(())
    }

    func close(_ fd: Int32) -> Result<Void, Errno> {
        state.withLock { s in
            s.closes += 1
            s.open.remove(fd)
        }
        return .success(())
    }
}

/// Faults through the fake serial calls: stuck writes, TTL expiry, a port that vanishes and returns.
final class SerialOutputFaultTests: XCTestCase {
    private func makeSink(_ fake: FakeSerialSystem, _ clock: SerialFakeClock, _ log: LogCapture,
                          _ change: (inout SerialSettings) -> Void = { _ in }) -> SerialOutput {
        var s = SerialSettings()
        s.path = "/dev/ttyFAKE0"
        change(&s)
        return SerialOutput(settings: s, logger: log.logger, system: fake, clock: { clock.now() },
                          tuning: SerialOutputTuning(initialBackoffMilliseconds: 10, maximumBackoffMilliseconds: 40))
    }

    /// Polls (with a deadline) until the fake has seen `bytes`.
    private func waitForWritten(_ fake: FakeSerialSystem, _ bytes: [UInt8], within seconds: Double = 10) -> [UInt8] {
        waitUntil(seconds) { fake.written.count >= bytes.count }
        return fake.written
    }

    func testStuckWriteIsAbandonedAtTheWriteTimeoutAndOutputDiscarded() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log) { $0.writeTimeoutMs = 300 }
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        let discardsAfterOpen = fake.state.withLock { $0.discards }
        fake.update { $0.stuck = true }
        _ = sink.offer(serialEvent(1, "DOOR", emittedAt: clock.now()))
        XCTAssertTrue(log.wait(for: "seq 1 (QR-Code 'DOOR') abandoned: /dev/ttyFAKE0 did not take the frame within --serial-write-timeout-ms 300 (0 of 6 bytes written, unsent output discarded)"),
                      "\(log.all)")
        XCTAssertEqual(fake.state.withLock { $0.discards }, discardsAfterOpen + 1)
        XCTAssertEqual(fake.written, [])
        // Room again: the next code goes out whole.
        fake.update { $0.stuck = false }
        _ = sink.offer(serialEvent(2, "NEXT", emittedAt: clock.now()))
        XCTAssertEqual(waitForWritten(fake, Array("NEXT\r\n".utf8)), Array("NEXT\r\n".utf8))
    }

    /// A write blocked until the event's TTL runs out is abandoned then (not at the longer write timeout),
    /// and the code queued behind it, now older than the TTL, is dropped: nothing is sent late.
    func testCodesStuckPastTheirTTLAreNeverSent() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log) { $0.writeTimeoutMs = 10_000; $0.ttlMs = 1000 }
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        fake.update { $0.stuck = true }
        // Both emitted at the same moment (the fake clock moves while the sink waits).
        let emitted = clock.now()
        _ = sink.offer(serialEvent(1, "FIRST", emittedAt: emitted))
        _ = sink.offer(serialEvent(2, "SECOND", emittedAt: emitted))
        XCTAssertTrue(log.wait(for: "seq 1 (QR-Code 'FIRST') abandoned: /dev/ttyFAKE0 did not take the frame within its TTL (--serial-ttl-ms 1000)"),
                      "\(log.all)")
        XCTAssertTrue(log.wait(for: "seq 2 (QR-Code 'SECOND') dropped: 1000 ms old (--serial-ttl-ms 1000), never sent late"),
                      "\(log.all)")
        fake.update { $0.stuck = false }
        _ = sink.offer(serialEvent(3, "THIRD", emittedAt: clock.now()))
        XCTAssertEqual(waitForWritten(fake, Array("THIRD\r\n".utf8)), Array("THIRD\r\n".utf8))
    }

    func testPortMissingAtStartThenAppears() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        fake.update { $0.openFailures = [.noDevice, .noDevice, .noSuchFile] }
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(log.contains("serial: open /dev/ttyFAKE0: No such device (ENODEV); retrying, codes are not sent meanwhile"), "\(log.all)")
        _ = sink.offer(serialEvent(1, "WAITED", emittedAt: clock.now()))
        XCTAssertEqual(waitForWritten(fake, Array("WAITED\r\n".utf8)), Array("WAITED\r\n".utf8))
        XCTAssertTrue(log.wait(for: "serial: /dev/ttyFAKE0 9600 8N1 plain open"), "\(log.all)")
        XCTAssertEqual(fake.state.withLock { $0.opens }, 4)
    }

    /// ENODEV / EIO while writing: the port is closed and reopened; the code is sent once, after reopening.
    func testPortVanishingMidWriteIsReopenedAndTheCodeSentOnce() {
        for error in [Errno.noDevice, .ioError] {
            let clock = SerialFakeClock()
            let fake = FakeSerialSystem(clock: clock)
            let log = LogCapture(repeatInterval: 0)
            let sink = makeSink(fake, clock, log)
            _ = sink.offer(serialEvent(1, "A", emittedAt: clock.now()))
            XCTAssertEqual(waitForWritten(fake, Array("A\r\n".utf8)), Array("A\r\n".utf8))
            fake.update { $0.writeFailures = [error]; $0.openFailures = [.noSuchFile, .noDevice] }
            _ = sink.offer(serialEvent(2, "B", emittedAt: clock.now()))
            XCTAssertEqual(waitForWritten(fake, Array("A\r\nB\r\n".utf8)), Array("A\r\nB\r\n".utf8), "\(error)")
            XCTAssertTrue(log.contains("serial: /dev/ttyFAKE0 lost: \(error); reopening"), "\(log.all)")
            XCTAssertTrue(log.wait(for: "serial: /dev/ttyFAKE0 is back"), "\(log.all)")
            sink.close(deadline: .now().adding(milliseconds: 2000))
            let s = fake.state.withLock { $0 }
            XCTAssertEqual(s.opens, 4, "\(error)")  // first open, two failures, the reopen
            XCTAssertEqual(s.closes, 2, "\(error)")
            XCTAssertTrue(s.open.isEmpty, "every descriptor closed")
        }
    }

    /// Lost after the frame was handed to the driver whole (it may be on the wire): not sent again.
    func testFrameWrittenWholeBeforeTheLossIsNotSentTwice() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        fake.update { $0.outputQueueFailures = [.ioError] }
        _ = sink.offer(serialEvent(1, "ONCE", emittedAt: clock.now()))
        _ = sink.offer(serialEvent(2, "NEXT", emittedAt: clock.now()))
        XCTAssertEqual(waitForWritten(fake, Array("ONCE\r\nNEXT\r\n".utf8)), Array("ONCE\r\nNEXT\r\n".utf8))
        XCTAssertTrue(log.contains("serial: /dev/ttyFAKE0 lost: Input/output error (EIO); seq 1 (QR-Code 'ONCE') was written but may not have been transmitted; reopening"),
                      "\(log.all)")
        XCTAssertEqual(fake.state.withLock { $0.opens }, 2)
    }

    /// Codes handled during an outage wait only while within their TTL.
    func testCodesDuringAnOutageExpireAtTheirTTL() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        fake.update { $0.openAlwaysFails = .noDevice }
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        _ = sink.offer(serialEvent(1, "OLD", emittedAt: clock.now()))
        clock.advance(milliseconds: 5001)
        XCTAssertTrue(log.wait(for: "seq 1 (QR-Code 'OLD') dropped: 5001 ms old (--serial-ttl-ms 5000), never sent late"),
                      "\(log.all)")
        _ = sink.offer(serialEvent(2, "NEW", emittedAt: clock.now()))
        fake.update { $0.openAlwaysFails = nil }
        XCTAssertEqual(waitForWritten(fake, Array("NEW\r\n".utf8)), Array("NEW\r\n".utf8))
    }

    /// A frame longer than the line can carry within the write timeout: the log says why.
    func testAbandonedLongFrameNamesItsWireTime() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log) { $0.writeTimeoutMs = 100; $0.baud = SerialBaudRate(1200)! }
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        fake.update { $0.stuck = true }
        _ = sink.offer(serialEvent(1, String(repeating: "7", count: 118), emittedAt: clock.now()))
        XCTAssertTrue(log.wait(for: "(0 of 120 bytes written, unsent output discarded; the frame alone takes 1000 ms at 1200 baud)"),
                      "\(log.all)")
    }

    func testRS485IsEnabledWhenAsked() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let sink = makeSink(fake, clock, LogCapture(repeatInterval: 0)) { $0.rs485 = true }
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(fake.state.withLock { $0.rs485 }, 1)
    }

    func testOtherWriteErrorDropsTheCodeAndReopens() {
        let clock = SerialFakeClock()
        let fake = FakeSerialSystem(clock: clock)
        let log = LogCapture(repeatInterval: 0)
        let sink = makeSink(fake, clock, log)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        fake.update { $0.writeFailures = [.invalidArgument] }
        _ = sink.offer(serialEvent(1, "BAD", emittedAt: clock.now()))
        _ = sink.offer(serialEvent(2, "GOOD", emittedAt: clock.now()))
        XCTAssertEqual(waitForWritten(fake, Array("GOOD\r\n".utf8)), Array("GOOD\r\n".utf8))
        XCTAssertTrue(log.contains("serial: write to /dev/ttyFAKE0 failed: Invalid argument (EINVAL); seq 1 (QR-Code 'BAD') dropped"),
                      "\(log.all)")
    }

    /// close() with a write that would block for long: bounded by the drain time, then the port is closed.
    func testCloseIsBoundedWhileAWriteIsStuck() {
        let fake = FakeSerialSystem()  // real time passes in the sink; the fake poll returns at once
        let log = LogCapture(repeatInterval: 0)
        var s = SerialSettings()
        s.path = "/dev/ttyFAKE0"
        s.writeTimeoutMs = 60_000
        s.ttlMs = 600_000
        let sink = SerialOutput(settings: s, logger: log.logger, system: fake,
                              tuning: SerialOutputTuning(drainMilliseconds: 100))
        fake.update { $0.stuck = true }
        _ = sink.offer(serialEvent(1, "STUCK"))
        _ = sink.offer(serialEvent(2, "BEHIND"))
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertTrue(log.contains("seq 1 (QR-Code 'STUCK') abandoned"), "\(log.all)")
        XCTAssertTrue(log.contains("seq 2 (QR-Code 'BEHIND') dropped: shutdown drain time is over"), "\(log.all)")
        XCTAssertTrue(fake.state.withLock { $0.open.isEmpty })
    }
}
