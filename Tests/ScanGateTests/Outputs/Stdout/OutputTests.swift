import XCTest
import Core
import Stdout
import Platform
import FoundationEssentials
import Settings

final class OutputTests: XCTestCase {
    func event(_ data: [UInt8], verdict: Verdict = .accepted) -> ReadEvent {
        ReadEvent(seq: 7, wallTimeNanoseconds: 1_764_511_283_456_000_000,
                  symbol: DecodedSymbol(symbology: .qr, data: data, bounds: Rect(x: 10, y: 20, w: 30, h: 40)),
                  frame: 12, dequeuedAt: MonotonicInstant(nanoseconds: 1_000_000),
                  emittedAt: MonotonicInstant(nanoseconds: 4_250_000), verdict: verdict)
    }

    func parse(_ line: String) throws -> [String: Any] {
        let obj = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try XCTUnwrap(obj as? [String: Any])
    }

    func testJSONLineHasEveryField() throws {
        let line = EventLine.json(event(Array("HELLO".utf8)))
        let o = try parse(line)
        XCTAssertEqual(o["seq"] as? Int, 7)
        XCTAssertEqual(o["time"] as? String, "2025-11-30T14:01:23.456Z")
        XCTAssertEqual(o["symbology"] as? String, "QR-Code")
        XCTAssertEqual(o["data"] as? String, "HELLO")
        XCTAssertEqual(o["frame"] as? Int, 12)
        XCTAssertEqual(o["latency_ms"] as? Double, 3.25)
        XCTAssertEqual(o["bounds"] as? [String: Int], ["x": 10, "y": 20, "w": 30, "h": 40])
        XCTAssertNil(o["data_base64"])
        // Added for zxing-cpp: its name of the symbology, the four corners (a box's for zbar), GS1.
        XCTAssertEqual(o["format"] as? String, "QRCode")
        XCTAssertEqual(o["corners"] as? [[Int]], [[10, 20], [39, 20], [39, 59], [10, 59]])
        XCTAssertEqual(o["gs1"] as? Bool, false)
        XCTAssertNil(o["eci"])
        XCTAssertNil(o["charset"])
    }

    func testJSONLineShowsCornersECIAndGS1() throws {
        let corners = [Point(x: 100, y: 50), Point(x: 160, y: 58), Point(x: 152, y: 118), Point(x: 92, y: 110)]
        let symbol = DecodedSymbol(symbology: .datamatrix, data: Array("0109501101530003".utf8), corners: corners,
                                   content: SymbolContent(gs1: true, eci: 26))
        let e = ReadEvent(seq: 1, wallTimeNanoseconds: 0, symbol: symbol, frame: 3, dequeuedAt: MonotonicInstant(nanoseconds: 0),
                          emittedAt: MonotonicInstant(nanoseconds: 0))
        let o = try parse(EventLine.json(e))
        XCTAssertEqual(o["symbology"] as? String, "DataMatrix")
        XCTAssertEqual(o["format"] as? String, "DataMatrix")
        XCTAssertEqual(o["corners"] as? [[Int]], [[100, 50], [160, 58], [152, 118], [92, 110]])
        XCTAssertEqual(o["bounds"] as? [String: Int], ["x": 92, "y": 50, "w": 69, "h": 69])
        XCTAssertEqual(o["gs1"] as? Bool, true)
        XCTAssertEqual(o["eci"] as? Int, 26)
        XCTAssertEqual(o["charset"] as? String, "UTF-8")
    }

    func testHostileTextStaysOneParseableLine() throws {
        let hostile = "\r\n{\"seq\":99}\n\u{1B}[2J\u{0}\u{2028}\"\\\u{7F}"
        let line = EventLine.json(event(Array(hostile.utf8)))
        XCTAssertFalse(line.contains("\n"))
        XCTAssertFalse(line.contains("\r"))
        XCTAssertFalse(line.utf8.contains(0x1B))
        let o = try parse(line)
        XCTAssertEqual(o["data"] as? String, hostile, "the payload survives exactly")
        XCTAssertEqual(o["seq"] as? Int, 7)
    }

    func testInvalidUTF8GoesToBase64() throws {
        let bytes: [UInt8] = [0xFF, 0x00, 0xC3, 0x28, 0x41]
        let o = try parse(EventLine.json(event(bytes)))
        XCTAssertNil(o["data"])
        let b64 = try XCTUnwrap(o["data_base64"] as? String)
        XCTAssertEqual(Data(base64Encoded: b64).map(Array.init), bytes)
    }

    func testBase64MatchesRFC4648Vectors() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors { XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded) }
    }

    func testRejectedEventCarriesReason() throws {
        let o = try parse(EventLine.json(event(Array("X".utf8), verdict: .rejected(reason: "too long"))))
        XCTAssertEqual(o["rejected"] as? String, "too long")
        XCTAssertNil(EventLine.text(event(Array("X".utf8), verdict: .rejected(reason: "too long"))))
    }

    func testTextLineIsZbarcamFormatAndOneLine() {
        XCTAssertEqual(EventLine.text(event(Array("HELLO".utf8))), "QR-Code:HELLO")
        XCTAssertEqual(EventLine.text(event(Array("A\r\nB\u{1B}".utf8))), "QR-Code:A\\x0D\\x0AB\\x1B")
    }

    func testStdoutWritesWholeLinesToItsDescriptor() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        var settings = OutputSettings()
        settings.format = .json
        let sink = StdoutOutput(settings: settings, logger: Logger(level: .error), fd: FileDescriptor(rawValue: fds[1]))
        sink.report(event(Array("one".utf8)))
        sink.report(event(Array("two\nthree".utf8)))
        sink.close(deadline: .now().adding(milliseconds: 2000))
        close(fds[1])
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &buf, buf.count)
            if n <= 0 { break }
            bytes += buf[0..<n]
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(try parse(String(lines[1]))["data"] as? String, "two\nthree")
    }
}

final class LoggerEscapingTests: XCTestCase {
    /// A payload is escaped once (control bytes as \xNN, a backslash doubled), and the log line keeps
    /// that as it is; a control byte that reaches log() unescaped is still escaped there.
    func testPayloadEscapedOnceAndControlsNeverReachTheLog() {
        let lines = PosixMutex<[String]>([])
        let logger = Logger(level: .info) { line in lines.withLock { $0.append(line) } }
        let payload = Logger.escape(bytes: Array("A\r\n\u{1B}[2J\\B".utf8))
        XCTAssertEqual(payload, "A\\x0D\\x0A\\x1B[2J\\\\B")
        logger.info("read \(payload)")
        logger.info("raw \u{1B}[31mred\u{7}")
        XCTAssertEqual(lines.withLock { $0 }, ["<6>read A\\x0D\\x0A\\x1B[2J\\\\B", "<6>raw \\x1B[31mred\\x07"])
    }
}
