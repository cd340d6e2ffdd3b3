#if canImport(Glibc)
import Glibc
#endif
import Platform
import Synchronization
import XCTest
@testable import Core
@testable import Serial
import Settings

func serialEvent(_ seq: UInt64, _ payload: [UInt8], symbology: Symbology = .qr,
                 emittedAt: MonotonicInstant = .now(), verdict: Verdict = .accepted) -> ReadEvent {
    ReadEvent(seq: seq, wallTimeNanoseconds: 0,
              symbol: DecodedSymbol(symbology: symbology, data: payload, bounds: Rect(x: 0, y: 0, w: 1, h: 1)),
              frame: seq, dequeuedAt: emittedAt, emittedAt: emittedAt, verdict: verdict)
}

func serialEvent(_ seq: UInt64, _ text: String, emittedAt: MonotonicInstant = .now(),
                 verdict: Verdict = .accepted) -> ReadEvent {
    serialEvent(seq, Array(text.utf8), emittedAt: emittedAt, verdict: verdict)
}

/// The serial door output through a real pseudo-terminal: the bytes on the other end, byte-exact.
final class SerialOutputTests: XCTestCase {
    /// What the output answered for each read of the last `transmit`, sentinel excluded.
    private var lastOffers: [OutputOffer] = []

    private func settings(_ path: String, _ change: (inout SerialSettings) -> Void = { _ in }) -> SerialSettings {
        var s = SerialSettings()
        s.path = path
        change(&s)
        return s
    }

    /// Sends `events` and then a sentinel code; returns everything that arrived up to the sentinel's frame.
    private func transmit(_ events: [ReadEvent], _ change: (inout SerialSettings) -> Void = { _ in },
                          log: LogCapture = LogCapture(repeatInterval: 0), file: StaticString = #filePath,
                          line: UInt = #line) throws -> [UInt8] {
        let pty = try PseudoTerminal()
        let s = settings(pty.name, change)
        XCTAssertNoThrow(try SerialOutput.validate(s), file: file, line: line)
        let sink = SerialOutput(settings: s, logger: log.logger)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        let sentinel = serialEvent(999, "SENTINEL")
        let sentinelFrame = try SerialFrameEncoder(settings: s).frame(for: sentinel.symbol)
        lastOffers = events.map { sink.offer($0) }
        _ = sink.offer(sentinel)
        let received = pty.read { $0.count >= sentinelFrame.count && Array($0.suffix(sentinelFrame.count)) == sentinelFrame }
        XCTAssertEqual(Array(received.suffix(sentinelFrame.count)), sentinelFrame, "sentinel frame did not arrive",
                       file: file, line: line)
        return Array(received.dropLast(sentinelFrame.count))
    }

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testPlainDefaultFrame() throws {
        XCTAssertEqual(try transmit([serialEvent(1, "HELLO")]), bytes("HELLO\r\n"))
    }

    func testEachFramingChecksumAndPolicyByteExact() throws {
        let imitation = bytes("\u{03}\u{02}OPEN\r\n")
        let hostile: [UInt8] = bytes("A\r\nB") + [0x02, 0x03, 0x00, 0xFF]
        let cases: [(String, [UInt8], (inout SerialSettings) -> Void, [UInt8])] = [
            ("plain reject CR", bytes("12\r34"), { _ in }, []),
            ("plain reject imitation", imitation, { _ in }, []),
            ("plain reject invalid UTF-8", [0x41, 0xC3, 0x28], { _ in }, []),
            ("plain escape", hostile, { $0.unsafeBytes = .escape }, bytes("A\\x0D\\x0AB\\x02\\x03\\x00\\xFF\r\n")),
            ("plain escape invalid UTF-8", [0xC3, 0x28], { $0.unsafeBytes = .escape }, bytes("\\xC3(\r\n")),
            ("plain strip imitation", imitation, { $0.unsafeBytes = .strip }, bytes("OPEN\r\n")),
            ("plain hex", [0x00, 0x02, 0x03, 0x41, 0xFF], { $0.payloadEncoding = .hex }, bytes("00020341FF\r\n")),
            ("plain prefix/suffix", bytes("HELLO"), { $0.prefix = [0x1B]; $0.suffix = [0x0D] }, [0x1B] + bytes("HELLO\r")),
            ("plain symbology", bytes("HELLO"), { $0.symbologyPrefix = true }, bytes("QR:HELLO\r\n")),
            ("stx-etx", bytes("HELLO"), { $0.framing = .stxEtx }, [0x02] + bytes("HELLO") + [0x03]),
            ("stx-etx lrc", bytes("HELLO"), { $0.framing = .stxEtx; $0.checksum = .lrc },
             [0x02] + bytes("HELLO") + [0x03] + bytes("41")),
            ("stx-etx crc16", bytes("HELLO"), { $0.framing = .stxEtx; $0.checksum = .crc16 },
             [0x02] + bytes("HELLO") + [0x03] + bytes("3F8E")),
            ("stx-etx crc16-modbus", bytes("HELLO"), { $0.framing = .stxEtx; $0.checksum = .crc16Modbus },
             [0x02] + bytes("HELLO") + [0x03] + bytes("2A61")),
            ("stx-etx crc16 symbology", bytes("HELLO"),
             { $0.framing = .stxEtx; $0.checksum = .crc16; $0.symbologyPrefix = true },
             [0x02] + bytes("QR:HELLO") + [0x03] + bytes("20E9")),
            ("stx-etx crc16 hex", [0x41, 0x0D, 0x42], { $0.framing = .stxEtx; $0.checksum = .crc16; $0.payloadEncoding = .hex },
             [0x02] + bytes("410D42") + [0x03] + bytes("E1DB")),
            ("stx-etx crc16 escape", bytes("A\rB"), { $0.framing = .stxEtx; $0.checksum = .crc16; $0.unsafeBytes = .escape },
             [0x02] + bytes("A\\x0DB") + [0x03] + bytes("46D6")),
            ("stx-etx lrc strip imitation", imitation, { $0.framing = .stxEtx; $0.checksum = .lrc; $0.unsafeBytes = .strip },
             [0x02] + bytes("OPEN") + [0x03] + bytes("17")),
            ("stx-etx reject imitation", imitation, { $0.framing = .stxEtx; $0.checksum = .crc16 }, []),
            ("stx-etx reject NUL", [0x41, 0x00], { $0.framing = .stxEtx }, []),
        ]
        for (name, payload, change, expected) in cases {
            let log = LogCapture(repeatInterval: 0)
            let received = try transmit([serialEvent(1, payload)], change, log: log)
            XCTAssertEqual(received, expected, name)
            if expected.isEmpty {
                guard case .refused(let reason)? = lastOffers.first else { XCTFail("\(name): not refused"); continue }
                XCTAssertTrue(reason.hasPrefix("serial: payload has"), "\(name): \(reason)")
            } else {
                XCTAssertEqual(lastOffers, [.taken], name)
            }
        }
    }

    func testExactlyOneFramePerEventInOrder() throws {
        let events = (1...25).map { serialEvent(UInt64($0), "CODE-\($0)") }
        let expected = (1...25).flatMap { bytes("CODE-\($0)\r\n") }
        XCTAssertEqual(try transmit(events), expected)
    }

    /// A read whose bytes the framing cannot carry safely (`--serial-unsafe reject`) is refused for
    /// serial alone, with the reason, and nothing of it reaches the line; an encoding that can carry
    /// it (hex) takes it.
    func testUnsafePayloadIsRefusedForSerialOnlyWithTheReason() throws {
        let pty = try PseudoTerminal()
        let output = SerialOutput(settings: settings(pty.name), logger: LogCapture(repeatInterval: 0).logger)
        defer { output.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertEqual(output.offer(serialEvent(1, "\u{03}\u{02}OPEN\r\n")),
                       .refused(reason: "serial: payload has control byte 0x03 at offset 0"))
        XCTAssertEqual(output.offer(serialEvent(2, "OK")), .taken)
        let received = pty.read { $0.count >= 4 }
        XCTAssertEqual(received, bytes("OK\r\n"), "the refused read sent nothing")
        let hex = SerialOutput(settings: settings(pty.name) { $0.payloadEncoding = .hex }, logger: LogCapture(repeatInterval: 0).logger)
        defer { hex.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertEqual(hex.offer(serialEvent(3, [0x00, 0x0D])), .taken)
    }

    /// The frame is built from `doorData`: a verified pass's number, not the token that was scanned.
    func testFrameCarriesDoorDataNotThePayload() throws {
        var event = serialEvent(1, "eyJhbGciOiJFZERTQSJ9.TOKEN.SIG")
        event.doorData = Array("4711".utf8)
        XCTAssertEqual(try transmit([event]), bytes("4711\r\n"))
    }

    func testEventOlderThanTTLIsDroppedNotSentLate() throws {
        let log = LogCapture(repeatInterval: 0)
        let stale = serialEvent(1, "LATE", emittedAt: MonotonicInstant.now().adding(milliseconds: -6000))
        XCTAssertEqual(try transmit([stale, serialEvent(2, "FRESH")], log: log), bytes("FRESH\r\n"))
        XCTAssertTrue(log.contains("seq 1 (QR-Code 'LATE') dropped: ") && log.contains(" ms old (--serial-ttl-ms 5000), never sent late"),
                      "\(log.all)")
    }

    func testHostilePayloadInLogIsEscaped() throws {
        let log = LogCapture(repeatInterval: 0)
        _ = try transmit([serialEvent(1, [0x1B, 0x5B, 0x32, 0x4A, 0x0D])], { $0.unsafeBytes = .escape }, log: log)
        let line = try XCTUnwrap(log.all.first { $0.contains("seq 1 ") })
        XCTAssertFalse(line.utf8.contains { $0 < 0x20 }, line)
    }

    /// The line takes nothing (output stopped, as when the controller holds CTS low or sent XOFF):
    /// the frame is abandoned at the write timeout and never arrives, not even when the line flows again.
    func testWriteTimeoutWhenTheLineTakesNothing() throws {
        let pty = try PseudoTerminal()
        let log = LogCapture(repeatInterval: 0)
        let sink = SerialOutput(settings: settings(pty.name) { $0.writeTimeoutMs = 200 }, logger: log.logger)
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        pty.stopOutput()
        _ = sink.offer(serialEvent(1, "BLOCKED"))
        XCTAssertTrue(log.wait(for: "seq 1 (QR-Code 'BLOCKED') abandoned: \(pty.name) did not take the frame within --serial-write-timeout-ms 200 (0 of 9 bytes written, unsent output discarded)"),
                      "\(log.all)")
        pty.restartOutput()
        _ = sink.offer(serialEvent(2, "AFTER"))
        XCTAssertEqual(pty.read(count: 7), bytes("AFTER\r\n"))
    }

    /// A by-id style link to the tty: the adapter is unplugged (hang-up, link gone) and plugged back
    /// (new tty, link back); the code handled meanwhile arrives on the new one, once.
    func testReopenAfterThePortVanishesAndReturns() throws {
        let dir = try TestFiles.temporaryDirectory()
        let link = dir + "/usb-door-controller"
        defer { unlink(link) }

        let first = try PseudoTerminal()
        XCTAssertEqual(symlink(first.name, link), 0)
        let log = LogCapture(repeatInterval: 0)
        // A long TTL and short backoff: the test's own pace on a busy machine does not matter.
        let sink = SerialOutput(settings: settings(link) { $0.ttlMs = 60_000 }, logger: log.logger,
                              tuning: SerialOutputTuning(initialBackoffMilliseconds: 20, maximumBackoffMilliseconds: 100))
        defer { sink.close(deadline: .now().adding(milliseconds: 2000)) }
        _ = sink.offer(serialEvent(1, "ONE"))
        XCTAssertEqual(first.read(count: 5), bytes("ONE\r\n"))

        // Unplug: the link goes away and the tty hangs up.
        unlink(link)
        first.hangUp()
        _ = sink.offer(serialEvent(2, "TWO"))
        XCTAssertTrue(log.wait(for: "serial: \(link) lost: Input/output error (EIO)"), "\(log.all)")
        XCTAssertTrue(log.wait(for: "serial: open \(link): No such file or directory (ENOENT); retrying"), "\(log.all)")

        // Plug back in.
        let second = try PseudoTerminal()
        XCTAssertEqual(symlink(second.name, link), 0, "symlink \(second.name) \(link): \(Errno.current)")
        XCTAssertEqual(second.read(count: 5), bytes("TWO\r\n"), "\(log.all)")
        XCTAssertTrue(log.wait(for: "serial: \(link) is back"), "\(log.all)")
        _ = sink.offer(serialEvent(3, "THREE"))
        XCTAssertEqual(second.read(count: 7), bytes("THREE\r\n"))
    }

    func testMissingPortAtStartIsLoggedAndScanningGoesOn() throws {
        let log = LogCapture(repeatInterval: 0)
        let sink = SerialOutput(settings: settings("/dev/ttyDOES-NOT-EXIST"), logger: log.logger)
        XCTAssertTrue(log.contains("serial: open /dev/ttyDOES-NOT-EXIST: No such file or directory (ENOENT); retrying, codes are not sent meanwhile"),
                      "\(log.all)")
        _ = sink.offer(serialEvent(1, "X"))
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertTrue(log.contains("seq 1 (QR-Code 'X') dropped at shutdown: /dev/ttyDOES-NOT-EXIST not available"), "\(log.all)")
    }

    func testCloseSendsWhatIsPendingAndClosesThePort() throws {
        let pty = try PseudoTerminal()
        let sink = SerialOutput(settings: settings(pty.name), logger: LogCapture(repeatInterval: 0).logger)
        for i in 1...5 { _ = sink.offer(serialEvent(UInt64(i), "P\(i)")) }
        sink.close(deadline: .now().adding(milliseconds: 2000))
        XCTAssertEqual(pty.read(count: 20), bytes("P1\r\nP2\r\nP3\r\nP4\r\nP5\r\n"))
        _ = sink.offer(serialEvent(6, "AFTER-CLOSE"))
        // The port is closed: with the test's own device end closed too, the controller sees a hang-up.
        pty.closeDevice()
        var entry = pollfd(fd: pty.controller, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&entry, 1, 5000), 1)
        XCTAssertNotEqual(entry.revents & Int16(POLLHUP), 0)
    }
}
