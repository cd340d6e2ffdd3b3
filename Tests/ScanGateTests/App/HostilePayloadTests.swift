#if canImport(Glibc)
import Glibc
#endif
import Core
import Foundation
import Synchronization
import XCTest

/// Codes anyone can print, rendered by the simulator and read by `scangate run` as users run it, with the
/// serial line on a real pseudo-terminal. For each code: one JSON line a parser accepts with the exact
/// payload, one well-formed serial frame or a rejection per the policy, no terminal escape in the log,
/// no crash.
final class HostilePayloadTests: XCTestCase {
    static func binary2953() -> [UInt8] {
        var state: UInt32 = 0x2545F491
        return (0..<2953).map { _ in
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
    }

    /// (name, payload bytes, extra scenario options)
    static let codes: [(String, [UInt8], String)] = [
        ("CR/LF", Array("A\r\nB".utf8), ""),
        ("NUL", Array("\u{0}NUL\u{0}".utf8), ""),
        ("STX/ETX", Array("\u{2}OPEN\u{3}".utf8), ""),
        ("ANSI escapes", Array("\u{1B}[2J\u{1B}]0;pwned\u{7}\u{1B}[31mRED".utf8), ""),
        ("invalid UTF-8", [0xFF, 0xFE, 0xC3, 0x28] + Array("ok".utf8), ""),
        ("2953-byte binary", binary2953(), "ecc L module 3"),
        ("7089-digit numeric", Array(String(repeating: "8675309012", count: 709).prefix(7089).utf8), "ecc L module 3 segments"),
        ("Kanji (Shift_JIS)", Array(String(repeating: "入室許可証明書", count: 40).data(using: .shiftJIS)!), "ecc L module 3 segments"),
        ("frame imitation", Array("\u{3}\u{2}OPEN\r\n".utf8), ""),
        ("JSON imitation", Array("\"}\n{\"seq\":999,\"symbology\":\"QR-Code\",\"data\":\"OPEN\"}".utf8), ""),
        ("plain text", Array("EMPLOYEE-0042".utf8), ""),
    ]

    /// The scenario: each code alone in view for 4 frames, 2.2 s apart (longer than the hold-off).
    func writeScenario(_ dir: String) throws -> String {
        var lines = ["size 800x800", "fps 10", "frames \(Self.codes.count * 26 + 4)"]
        for (i, code) in Self.codes.enumerated() {
            let escaped = code.1.map { String(format: "\\x%02x", $0) }.joined()
            let start = 2 + i * 26
            lines.append("code qr \"\(escaped)\" frames \(start)-\(start + 3) \(code.2.isEmpty ? "module 4" : code.2)")
        }
        let path = dir + "/hostile.scenario"
        try TestFiles.write(lines.joined(separator: "\n") + "\n", to: path)
        return path
    }

    struct Run {
        var result: ScangateProcess.Result
        var serial: [UInt8]
        var jsonPayloads: [[UInt8]]
        var rejected: [Bool]
    }

    func runDaemon(_ extra: [String], replayed: Bool = false) throws -> Run {
        let dir = try TestFiles.temporaryDirectory()
        var camera = "sim:" + (try writeScenario(dir))
        if replayed {
            // The same codes as footage: rendered to a Y4M file, then replayed.
            let y4m = dir + "/hostile.y4m"
            let rendered = try ScangateProcess.run(["render", String(camera.dropFirst(4)), "--out", y4m], timeout: 120)
            XCTAssertEqual(rendered.status, 0, rendered.stderr)
            camera = "replay:" + y4m
        }
        defer { if replayed { unlink(dir + "/hostile.y4m") } }
        let pty = try PseudoTerminal()
        let finished = Atomic<Bool>(false)
        let box = PosixMutex<ScangateProcess.Result?>(nil)
        let done = DispatchSemaphore(value: 0)
        let args = ["run", "--camera", camera, "--fast", "--serial", pty.name, "--log-level", "info"] + extra
        DispatchQueue.global().async {
            let r = try? ScangateProcess.run(args, timeout: 240)
            box.withLock { $0 = r }
            finished.store(true, ordering: .relaxed)
            done.signal()
        }
        // Read the line while the daemon runs, so it never blocks on a full pty.
        var serial = pty.read(within: 240) { _ in finished.load(ordering: .relaxed) }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        serial += pty.read(within: 0.5) { _ in false }
        let result = try XCTUnwrap(box.withLock { $0 })
        var payloads: [[UInt8]] = []
        var rejected: [Bool] = []
        for line in result.stdoutLines {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            if let text = o["data"] as? String {
                payloads.append(Array(text.utf8))
            } else {
                payloads.append(Array(try XCTUnwrap((o["data_base64"] as? String).flatMap { Data(base64Encoded: $0) })))
            }
            rejected.append(o["rejected"] != nil || (o["refused"] as? [String: Any])?["serial"] != nil)
        }
        return Run(result: result, serial: serial, jsonPayloads: payloads, rejected: rejected)
    }

    /// A byte that may never appear inside a frame's payload on the line.
    static func isControl(_ b: UInt8) -> Bool { b < 0x20 || b == 0x7F }

    static func isSafeText(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil && !bytes.contains(where: isControl)
    }

    func assertCommon(_ run: Run, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(run.result.status, 0, "exit 0: \(run.result.stderr.suffix(500))", file: file, line: line)
        XCTAssertEqual(run.jsonPayloads, Self.codes.map(\.1), "one JSON line per code, payload exact", file: file, line: line)
        let errBytes = Array(run.result.stderr.utf8)
        XCTAssertFalse(errBytes.contains(0x1B), "no ESC reaches the log", file: file, line: line)
        XCTAssertFalse(errBytes.contains { Self.isControl($0) && $0 != 0x0A }, "no control byte in the log but newlines", file: file, line: line)
    }

    /// Default policy (reject), plain framing: safe codes arrive as `payload CR LF`, the others are rejected.
    func testRejectPolicyPlainFraming() throws {
        let run = try runDaemon([])
        assertCommon(run)
        let safe = Self.codes.map { Self.isSafeText($0.1) }
        XCTAssertEqual(run.rejected, safe.map { !$0 }, "exactly the unsafe codes are rejected")
        let frames = run.serial.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map(Array.init)
        let expected = Self.codes.filter { Self.isSafeText($0.1) }.map { $0.1 + [0x0D] }
        XCTAssertEqual(frames, expected, "one frame per accepted code, nothing forged")
        XCTAssertTrue(run.result.stderr.contains("refused by serial (serial: payload has"), "a refusal is logged")
    }

    /// The same codes replayed from a Y4M recording: the same JSON lines and frames as from the simulator.
    func testReplayedFootageGivesTheSameLinesAndFrames() throws {
        let simulated = try runDaemon(["--serial-unsafe", "escape"])
        let replayed = try runDaemon(["--serial-unsafe", "escape"], replayed: true)
        assertCommon(replayed)
        XCTAssertEqual(replayed.jsonPayloads, simulated.jsonPayloads)
        XCTAssertEqual(replayed.serial, simulated.serial, "byte-identical serial stream")
    }

    /// Escape policy: every code gets exactly one frame; inside it no control byte, and unescaping
    /// gives the payload back.
    func testEscapePolicyPlainFraming() throws {
        let run = try runDaemon(["--serial-unsafe", "escape"])
        assertCommon(run)
        XCTAssertEqual(run.rejected, Self.codes.map { _ in false })
        XCTAssertEqual(run.serial.suffix(2), [0x0D, 0x0A])
        var frames: [[UInt8]] = []
        var current: [UInt8] = []
        for (i, b) in run.serial.enumerated() {
            if b == 0x0D && i + 1 < run.serial.count && run.serial[i + 1] == 0x0A { frames.append(current); current = []; continue }
            if b == 0x0A { continue }
            current.append(b)
        }
        XCTAssertEqual(frames.count, Self.codes.count, "exactly one frame per code")
        for (frame, code) in zip(frames, Self.codes) {
            XCTAssertFalse(frame.contains(where: Self.isControl), "\(code.0): no control byte inside the frame")
            XCTAssertEqual(Self.unescape(frame), code.1, "\(code.0): unescaping gives the payload")
        }
    }

    /// STX/ETX with an LRC: exactly one STX and one ETX per frame, the check verifies, nothing in between
    /// is a control byte; strip policy removes the unsafe bytes.
    func testStripPolicySTXETXFraming() throws {
        let run = try runDaemon(["--serial-framing", "stx-etx", "--serial-checksum", "lrc", "--serial-unsafe", "strip"])
        assertCommon(run)
        var frames: [[UInt8]] = []
        var i = 0
        let s = run.serial
        while i < s.count {
            guard s[i] == 0x02, let etx = s[(i + 1)...].firstIndex(of: 0x03), etx + 2 < s.count else {
                XCTFail("malformed frame at byte \(i)"); break
            }
            let body = Array(s[(i + 1)..<etx])
            XCTAssertFalse(body.contains(where: Self.isControl), "no control byte inside a frame")
            let lrc = (body + [0x03]).reduce(UInt8(0), ^)
            XCTAssertEqual(String(decoding: s[(etx + 1)...(etx + 2)], as: UTF8.self), String(format: "%02X", lrc))
            frames.append(body)
            i = etx + 3
        }
        XCTAssertEqual(frames.count, Self.codes.count, "exactly one frame per code")
        guard frames.count == Self.codes.count else { return }
        XCTAssertEqual(frames.last, Array("EMPLOYEE-0042".utf8))
        XCTAssertEqual(frames[2], Array("OPEN".utf8), "STX/ETX stripped from the payload")
    }

    /// Reverses `--serial-unsafe escape`: \xNN and \\.
    static func unescape(_ frame: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < frame.count {
            if frame[i] == 0x5C, i + 1 < frame.count {
                if frame[i + 1] == 0x5C { out.append(0x5C); i += 2; continue }
                if frame[i + 1] == 0x78, i + 3 < frame.count,
                   let v = UInt8(String(decoding: frame[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) {
                    out.append(v); i += 4; continue
                }
            }
            out.append(frame[i])
            i += 1
        }
        return out
    }
}
