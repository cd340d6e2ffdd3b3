import XCTest
@testable import Core
@testable import Serial
import Settings

/// The frame bytes for each framing, checksum, payload encoding and unsafe-byte policy (pure).
final class SerialFramingTests: XCTestCase {
    private func symbol(_ bytes: [UInt8], _ symbology: Symbology = .qr) -> DecodedSymbol {
        DecodedSymbol(symbology: symbology, data: bytes, bounds: Rect(x: 0, y: 0, w: 10, h: 10))
    }

    private func settings(_ change: (inout SerialSettings) -> Void = { _ in }) -> SerialSettings {
        var s = SerialSettings()
        s.path = "/dev/null"
        change(&s)
        return s
    }

    private func frame(_ payload: [UInt8], _ change: (inout SerialSettings) -> Void = { _ in }) throws -> [UInt8] {
        try SerialFrameEncoder(settings: settings(change)).frame(for: symbol(payload))
    }

    private func rejection(_ payload: [UInt8], _ change: (inout SerialSettings) -> Void = { _ in }) -> String? {
        do {
            _ = try SerialFrameEncoder(settings: settings(change)).frame(for: symbol(payload))
            return nil
        } catch {
            return error.reason
        }
    }

    // MARK: Checksums: known vectors

    func testCRC16CCITTFalseCheckValue() {
        XCTAssertEqual(Checksums.crc16CCITTFalse(Array("123456789".utf8)), 0x29B1)
        XCTAssertEqual(Checksums.crc16CCITTFalse([]), 0xFFFF)
    }

    func testCRC16ModbusCheckValue() {
        XCTAssertEqual(Checksums.crc16Modbus(Array("123456789".utf8)), 0x4B37)
        XCTAssertEqual(Checksums.crc16Modbus([]), 0xFFFF)
    }

    func testLRCIsXorOfAllBytes() {
        XCTAssertEqual(Checksums.lrc(Array("123456789".utf8)), 0x31)
        XCTAssertEqual(Checksums.lrc([0xFF, 0x0F]), 0xF0)
        XCTAssertEqual(Checksums.lrc([]), 0)
    }

    func testChecksumFieldsAreUpperCaseHexDigits() {
        let covered = Array("HELLO\u{03}".utf8)
        XCTAssertEqual(SerialChecksum.lrc.field(for: covered), Array("41".utf8))
        XCTAssertEqual(SerialChecksum.crc16.field(for: covered), Array("3F8E".utf8))
        XCTAssertEqual(SerialChecksum.crc16Modbus.field(for: covered), Array("2A61".utf8))
        XCTAssertEqual(SerialChecksum.none.field(for: covered), [])
    }

    // MARK: Plain framing

    func testPlainDefaultIsPayloadThenCRLF() throws {
        XCTAssertEqual(try frame(Array("HELLO".utf8)), Array("HELLO\r\n".utf8))
    }

    func testPlainWithPrefixAndEscapedSuffix() throws {
        let bytes = try frame(Array("4006381333931".utf8)) {
            $0.prefix = try! CEscapedText.parse("\\x1B")
            $0.suffix = try! CEscapedText.parse("\\r")
        }
        XCTAssertEqual(bytes, [0x1B] + Array("4006381333931".utf8) + [0x0D])
    }

    func testSymbologyPrefixIsUpperCaseCLINameAndColon() throws {
        XCTAssertEqual(try frame(Array("HELLO".utf8)) { $0.symbologyPrefix = true }, Array("QR:HELLO\r\n".utf8))
        let ean = try SerialFrameEncoder(settings: settings { $0.symbologyPrefix = true })
            .frame(for: symbol(Array("4006381333931".utf8), .ean13))
        XCTAssertEqual(ean, Array("EAN13:4006381333931\r\n".utf8))
    }

    func testHexPayloadMakesEveryByteSafe() throws {
        let hostile: [UInt8] = [0x41, 0x0D, 0x0A, 0x02, 0x03, 0x00, 0xFF]
        XCTAssertEqual(try frame(hostile) { $0.payloadEncoding = .hex }, Array("410D0A020300FF\r\n".utf8))
    }

    // MARK: STX/ETX framing

    func testStxEtxWithoutChecksum() throws {
        XCTAssertEqual(try frame(Array("HELLO".utf8)) { $0.framing = .stxEtx }, [0x02] + Array("HELLO".utf8) + [0x03])
    }

    func testStxEtxChecksumsCoverBodyAndETX() throws {
        let expected: [(SerialChecksum, String)] = [(.lrc, "41"), (.crc16, "3F8E"), (.crc16Modbus, "2A61")]
        for (checksum, digits) in expected {
            let bytes = try frame(Array("HELLO".utf8)) { $0.framing = .stxEtx; $0.checksum = checksum }
            XCTAssertEqual(bytes, [0x02] + Array("HELLO".utf8) + [0x03] + Array(digits.utf8), "\(checksum)")
        }
    }

    func testStxEtxChecksumIncludesSymbologyTag() throws {
        let bytes = try frame(Array("HELLO".utf8)) { $0.framing = .stxEtx; $0.checksum = .crc16; $0.symbologyPrefix = true }
        XCTAssertEqual(bytes, [0x02] + Array("QR:HELLO".utf8) + [0x03] + Array("20E9".utf8))
    }

    func testStxEtxWithPrefixAndSuffixAroundTheEnvelope() throws {
        let bytes = try frame(Array("HELLO".utf8)) {
            $0.framing = .stxEtx; $0.checksum = .lrc; $0.suffix = [0x0D, 0x0A]; $0.prefix = [0x1B]
        }
        XCTAssertEqual(bytes, [0x1B, 0x02] + Array("HELLO".utf8) + [0x03] + Array("41\r\n".utf8))
    }

    func testStxEtxHexPayloadChecksum() throws {
        let bytes = try frame([0x41, 0x0D, 0x42]) { $0.framing = .stxEtx; $0.checksum = .crc16; $0.payloadEncoding = .hex }
        XCTAssertEqual(bytes, [0x02] + Array("410D42".utf8) + [0x03] + Array("E1DB".utf8))
    }

    // MARK: Unsafe bytes

    /// Payloads that would forge or break a frame: each is rejected by default, with a reason naming the byte.
    func testRejectIsTheDefaultAndNamesTheByte() {
        XCTAssertEqual(SerialSettings().unsafeBytes, .reject)
        XCTAssertEqual(rejection(Array("12\r34".utf8)), "payload has control byte 0x0D at offset 2")
        XCTAssertEqual(rejection(Array("12\n".utf8)), "payload has control byte 0x0A at offset 2")
        XCTAssertEqual(rejection([0x41, 0x00]), "payload has control byte 0x00 at offset 1")
        XCTAssertEqual(rejection([0x02, 0x41]), "payload has control byte 0x02 at offset 0")
        XCTAssertEqual(rejection([0x41, 0x03]), "payload has control byte 0x03 at offset 1")
        XCTAssertEqual(rejection([0x1B, 0x5B, 0x32, 0x4A]), "payload has control byte 0x1B at offset 0")
        XCTAssertEqual(rejection([0x41, 0x7F]), "payload has control byte 0x7F at offset 1")
        XCTAssertEqual(rejection([0x41, 0xFF, 0x42]), "payload has invalid UTF-8 0xFF at offset 1")
        XCTAssertEqual(rejection([0xC3]), "payload has invalid UTF-8 0xC3 at offset 0")
        XCTAssertEqual(rejection([0xED, 0xA0, 0x80]), "payload has invalid UTF-8 0xED at offset 0")  // surrogate
        XCTAssertEqual(rejection([0xC0, 0xAF]), "payload has invalid UTF-8 0xC0 at offset 0")  // overlong
        XCTAssertEqual(rejection(Array("\u{03}\u{02}OPEN\r\n".utf8)), "payload has control byte 0x03 at offset 0")
        XCTAssertEqual(rejection([]), "empty payload")
    }

    func testValidUTF8AndBackslashAreSafeUnderReject() throws {
        XCTAssertEqual(try frame(Array("Grüße \\ 日本".utf8)), Array("Grüße \\ 日本\r\n".utf8))
    }

    func testPrintablePrefixAndSuffixBytesAreUnsafeInPayload() {
        XCTAssertEqual(rejection(Array("A#B".utf8)) { $0.suffix = Array("#".utf8) },
                       "payload has byte of the frame's prefix/suffix 0x23 at offset 1")
        XCTAssertEqual(rejection(Array("<A".utf8)) { $0.prefix = Array("<".utf8) },
                       "payload has byte of the frame's prefix/suffix 0x3C at offset 0")
    }

    func testSevenBitLineRejectsHighBytes() {
        // On a 7-bit line 0x82 would arrive as 0x02 (STX).
        XCTAssertEqual(rejection(Array("ü".utf8)) { $0.format = SerialLineFormat("7E1")! },
                       "payload has byte that does not fit the line's data bits 0xC3 at offset 0")
    }

    func testEscapeWritesHexEscapesAndDoublesBackslash() throws {
        let payload: [UInt8] = Array("A\r\nB".utf8) + [0x02, 0x03, 0x00, 0x5C, 0xFF] + Array("é".utf8)
        let bytes = try frame(payload) { $0.unsafeBytes = .escape }
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "A\\x0D\\x0AB\\x02\\x03\\x00\\\\\\xFFé\r\n")
    }

    func testEscapeInStxEtxChecksumCoversEscapedBody() throws {
        let bytes = try frame(Array("A\rB".utf8)) { $0.unsafeBytes = .escape; $0.framing = .stxEtx; $0.checksum = .crc16 }
        XCTAssertEqual(bytes, [0x02] + Array("A\\x0DB".utf8) + [0x03] + Array("46D6".utf8))
        let lrc = try frame(Array("A\rB".utf8)) { $0.unsafeBytes = .escape; $0.framing = .stxEtx; $0.checksum = .lrc }
        XCTAssertEqual(lrc, [0x02] + Array("A\\x0DB".utf8) + [0x03] + Array("50".utf8))
    }

    func testStripRemovesUnsafeBytesAndWholeSequences() throws {
        let payload: [UInt8] = Array("\u{03}\u{02}OPEN\r\n".utf8) + [0xFF, 0x00] + Array("!".utf8)
        XCTAssertEqual(try frame(payload) { $0.unsafeBytes = .strip }, Array("OPEN!\r\n".utf8))
        XCTAssertEqual(try frame(Array("aü".utf8)) { $0.unsafeBytes = .strip; $0.format = SerialLineFormat("7N1")! },
                       Array("a\r\n".utf8))
        XCTAssertEqual(rejection([0x0D, 0x0A]) { $0.unsafeBytes = .strip }, "nothing left after stripping unsafe bytes")
    }

    /// A payload imitating a frame never yields a second frame boundary, under every policy.
    func testFrameImitationNeverForgesABoundary() throws {
        let imitation = Array("\u{03}\u{02}OPEN\r\n".utf8)
        for policy in UnsafeBytePolicy.allCases {
            for framing in SerialFraming.allCases {
                let s = settings { $0.unsafeBytes = policy; $0.framing = framing }
                guard let bytes = try? SerialFrameEncoder(settings: s).frame(for: symbol(imitation)) else {
                    XCTAssertEqual(policy, .reject)
                    continue
                }
                let controls = bytes.filter { $0 < 0x20 }
                XCTAssertEqual(controls, framing == .plain ? [0x0D, 0x0A] : [0x02, 0x03], "\(policy) \(framing)")
            }
        }
    }

    // MARK: Line format, rates, escapes

    func testLineFormats() {
        for text in ["8N1", "7E1", "8E1", "8O1", "7O1", "7N1", "8N2", "5N1", "6E2", "7e1"] {
            XCTAssertNotNil(SerialLineFormat(text), text)
        }
        for text in ["9N1", "4N1", "8X1", "8N3", "8N", "8N1x", ""] {
            XCTAssertNil(SerialLineFormat(text), text)
        }
        let f = SerialLineFormat("7O2")!
        XCTAssertEqual([f.dataBits, f.stopBits], [7, 2])
        XCTAssertEqual(f.parity, .odd)
        XCTAssertEqual(f.description, "7O2")
    }

    func testStandardRatesOnly() {
        for rate in [1200, 2400, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600] {
            XCTAssertEqual(SerialBaudRate(rate)?.bitsPerSecond, rate)
        }
        for rate in [0, 300, 1000, 9601, 250000, 1_000_000] { XCTAssertNil(SerialBaudRate(rate), "\(rate)") }
    }

    func testCEscapesRoundTrip() throws {
        XCTAssertEqual(try CEscapedText.parse(#"\r\n"#), [0x0D, 0x0A])
        XCTAssertEqual(try CEscapedText.parse(#"ID\t\x02\\"#), Array("ID".utf8) + [0x09, 0x02, 0x5C])
        XCTAssertEqual(try CEscapedText.parse("é"), Array("é".utf8))
        XCTAssertEqual(CEscapedText.render([0x0D, 0x0A, 0x02, 0x5C, 0x41]), #"\r\n\x02\\A"#)
        for bad in [#"\q"#, #"\x4"#, #"\xZZ"#, "\\"] {
            XCTAssertThrowsError(try CEscapedText.parse(bad), bad) { error in
                XCTAssertTrue("\(error)".contains(#"\r \n \t \xNN \\"#), "\(error)")
            }
        }
    }
}
