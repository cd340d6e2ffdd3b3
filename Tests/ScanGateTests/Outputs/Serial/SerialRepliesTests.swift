#if canImport(Glibc)
import Glibc
#endif
import XCTest
import Core
import Platform
@testable import Serial
import Settings

/// The controller answers on the serial line (`serial-reply-grant` / `serial-reply-deny`): the bytes are
/// written on the far end of a real pseudo-terminal, as a door controller would send them.
final class SerialRepliesTests: XCTestCase {
    private func output(_ pty: PseudoTerminal, log: LogCapture, feedback: RecordingFeedback,
                        replyTimeoutMs: Int = 3000, clock: SerialFakeClock? = nil) -> SerialOutput {
        var s = SerialSettings()
        s.path = pty.name
        s.replyGrant = Array("OK".utf8)
        s.replyDeny = Array("NO".utf8)
        s.replyTimeoutMs = replyTimeoutMs
        guard let clock else { return SerialOutput(settings: s, logger: log.logger, feedback: feedback) }
        return SerialOutput(settings: s, logger: log.logger, feedback: feedback, clock: { clock.now() })
    }

    private func send(_ pty: PseudoTerminal, _ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { Glibc.write(pty.controller, $0.baseAddress, $0.count) }
        XCTAssertEqual(n, bytes.count)
    }

    /// Sends a code and waits until its frame is on the line (the reply answers that code).
    private func sendCode(_ output: SerialOutput, _ pty: PseudoTerminal, _ seq: UInt64, _ text: String) {
        XCTAssertEqual(output.offer(serialEvent(seq, text)), .taken)
        let frame = Array((text + "\r\n").utf8)
        XCTAssertEqual(pty.read(count: frame.count), frame)
    }

    func testGrantAndDenyRepliesPlayTheirPatternsOncePerCode() throws {
        let pty = try PseudoTerminal()
        let log = LogCapture(repeatInterval: 0), feedback = RecordingFeedback()
        let out = output(pty, log: log, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(log.wait(for: "reading the controller's replies"), "\(log.all)")

        sendCode(out, pty, 1, "CARD-1")
        send(pty, Array("OK\r\n".utf8))
        XCTAssertTrue(feedback.wait(for: 1), "\(log.all)")
        XCTAssertEqual(feedback.requests, [.grant])
        XCTAssertEqual(feedback.origins, ["serial"])

        sendCode(out, pty, 2, "CARD-2")
        // A reply may arrive in pieces, with or without CR.
        send(pty, Array("N".utf8))
        send(pty, Array("O\n".utf8))
        XCTAssertTrue(feedback.wait(for: 2), "\(log.all)")
        XCTAssertEqual(feedback.requests, [.grant, .deny])

        // A second answer to the same code: that code is no longer outstanding.
        send(pty, Array("OK\r\n".utf8))
        XCTAssertTrue(log.wait(for: "reply 'OK' from \(pty.name) with no code outstanding"), "\(log.all)")
        XCTAssertEqual(feedback.requests, [.grant, .deny], "not played twice")
    }

    func testUnknownLongAndUnpromptedRepliesAreLoggedAndIgnored() throws {
        let pty = try PseudoTerminal()
        let log = LogCapture(repeatInterval: 0), feedback = RecordingFeedback()
        let out = output(pty, log: log, feedback: feedback)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(log.wait(for: "reading the controller's replies"), "\(log.all)")

        // Before any code was sent.
        send(pty, Array("OK\r\n".utf8))
        XCTAssertTrue(log.wait(for: "with no code outstanding"), "\(log.all)")

        sendCode(out, pty, 1, "CARD-1")
        // Neither line, with a control byte that must not reach the log raw.
        send(pty, Array("MAYBE\u{1B}[2J\r\n".utf8))
        XCTAssertTrue(log.wait(for: "reply 'MAYBE\\x1B[2J' from \(pty.name) is neither serial-reply-grant nor serial-reply-deny; ignored"),
                      "\(log.all)")
        // Over the line limit (with a grant hidden at its end): ignored up to its end of line.
        send(pty, [UInt8](repeating: 0x41, count: 300) + Array("OK\n".utf8))
        XCTAssertTrue(log.wait(for: "is longer than 256 bytes; ignored up to its end of line"), "\(log.all)")
        // The code is still outstanding: a proper reply after all that still counts.
        send(pty, Array("OK\n".utf8))
        XCTAssertTrue(feedback.wait(for: 1), "\(log.all)")
        XCTAssertEqual(feedback.requests, [.grant])
        XCTAssertFalse(log.all.joined().unicodeScalars.contains { $0.value == 0x1B }, "no raw ESC in the log")
    }

    func testAReplyAfterTheReplyTimeoutDoesNotCount() throws {
        let pty = try PseudoTerminal()
        let log = LogCapture(repeatInterval: 0), feedback = RecordingFeedback(), clock = SerialFakeClock()
        let out = output(pty, log: log, feedback: feedback, replyTimeoutMs: 500, clock: clock)
        defer { out.close(deadline: .now().adding(milliseconds: 2000)) }
        XCTAssertTrue(log.wait(for: "reading the controller's replies"), "\(log.all)")
        var event = serialEvent(1, "CARD-1", emittedAt: clock.now())
        XCTAssertEqual(out.offer(event), .taken)
        XCTAssertEqual(pty.read(count: 8), Array("CARD-1\r\n".utf8))
        // The reply window starts when the writer has finished with the frame (it logs that), not when the
        // far end has read it: wait for that before moving the clock.
        XCTAssertTrue(log.wait(for: "seq 1 sent"), "\(log.all)")
        clock.advance(milliseconds: 501)
        send(pty, Array("OK\n".utf8))
        XCTAssertTrue(log.wait(for: "reply 'OK' from \(pty.name) with no code outstanding (none sent in the last 500 ms); ignored"),
                      "\(log.all)")
        XCTAssertEqual(feedback.requests, [], "a late answer plays nothing")
        // In time, it counts.
        event = serialEvent(2, "CARD-2", emittedAt: clock.now())
        XCTAssertEqual(out.offer(event), .taken)
        XCTAssertEqual(pty.read(count: 8), Array("CARD-2\r\n".utf8))
        XCTAssertTrue(log.wait(for: "seq 2 sent"), "\(log.all)")
        clock.advance(milliseconds: 499)
        send(pty, Array("NO\n".utf8))
        XCTAssertTrue(feedback.wait(for: 1), "\(log.all)")
        XCTAssertEqual(feedback.requests, [.deny])
    }
}
