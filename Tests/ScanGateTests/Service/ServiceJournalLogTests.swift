import Core
import Platform
import Service
import XCTest

/// Journal lines: one info line per code with sd-daemon priority prefixes, hostile payloads escaped.
final class ServiceJournalLogTests: XCTestCase {
    private func event(_ data: [UInt8], seq: UInt64 = 1, verdict: Verdict = .accepted) -> ReadEvent {
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        return ReadEvent(seq: seq, wallTimeNanoseconds: 0,
                         symbol: DecodedSymbol(symbology: .qr, data: data, bounds: Rect(x: 0, y: 0, w: 10, h: 10)),
                         frame: 42, dequeuedAt: t, emittedAt: t.adding(milliseconds: 18), verdict: verdict)
    }

    func testOneInfoLinePerCodeAndStatusLevels() {
        let lines = LogCapture()
        let sink = JournalLogSink(logger: Logger(level: .debug, sink: { lines.append($0) }))
        sink.report(event(Array("HELLO".utf8)))
        sink.report(event(Array("BAD".utf8), seq: 2, verdict: .rejected(reason: "control character")))
        sink.statusChanged(.cameraLost)
        sink.statusChanged(.paused)
        sink.statusChanged(.scanning)
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(lines.all, [
            "<6>read #1 QR-Code frame 42 latency 18 ms: HELLO",
            "<4>rejected #2 QR-Code frame 42 (control character): BAD",
            "<4>status: camera lost",
            "<5>status: paused",
            "<6>status: scanning",
        ])
    }

    func testHostilePayloadCannotForgeALogLine() {
        let lines = LogCapture()
        let sink = JournalLogSink(logger: Logger(level: .info, sink: { lines.append($0) }), maxPayload: 64)
        sink.report(event(Array("A\r\n<3>forged\u{1B}[2J\u{0}".utf8)))
        sink.report(event([0x41, 0x0A, 0xFF], seq: 2))
        sink.report(event([UInt8](repeating: 0x41, count: 100), seq: 3))
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(lines.all.count, 3)
        XCTAssertEqual(lines.all[0], "<6>read #1 QR-Code frame 42 latency 18 ms: A\\x0D\\x0A<3>forged\\x1B[2J\\x00")
        XCTAssertEqual(lines.all[1], "<6>read #2 QR-Code frame 42 latency 18 ms: hex:410AFF")
        XCTAssertFalse(lines.all.joined().unicodeScalars.contains { $0.value < 0x20 })
        XCTAssertTrue(lines.all[2].hasSuffix(String(repeating: "A", count: 64) + "... (100 bytes)"))
    }

    func testNothingIsFormattedBelowTheLevel() {
        let lines = LogCapture()
        let sink = JournalLogSink(logger: Logger(level: .warning, sink: { lines.append($0) }))
        sink.report(event(Array("HELLO".utf8)))
        sink.close(deadline: .now().adding(milliseconds: 1000))
        XCTAssertEqual(lines.all, [])
    }
}
